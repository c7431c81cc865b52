"""Precision and runtime policy, applied once when simkit is imported.

* float64 by default (``jax_enable_x64``): validation against SciPy needs it.
  Set ``SIMKIT_ENABLE_X64=0`` before importing simkit to keep JAX's float32 default.
* ``EQX_ON_ERROR=nan`` unless the user set it: equinox's runtime checks compile to host
  callbacks, which keep JAX's persistent compilation cache from storing a program.
  simkit does not rely on them: solvers return result codes that simkit turns into
  Python errors at top level (see ``simkit/_solve.py``). This only takes effect when
  simkit is imported before equinox/diffrax.
* One CPU device per core (``SIMKIT_CPU_DEVICES``, default the core count, at most 32)
  unless the user configured devices (``jax_num_cpu_devices`` or the XLA host-device flag)
  or JAX is already running: `simkit.ensemble` shards members over the local devices, and
  one XLA CPU device runs a solver loop on about one core. Single solves use device 0 and
  are not affected (measured).
* ``SIMKIT_STRICT_FP=1``: no fused multiply-adds in XLA's CPU code (``--xla_cpu_max_isa=AVX``
  is added to ``XLA_FLAGS``; effective when simkit is imported before JAX starts). XLA
  contracts ``a*b + c*d`` into an FMA one way or the other depending on how the operands
  were produced, so one program and its domain-decomposed twin can differ by an ulp per
  operation (measured: 1e-16 after a Burgers step); without FMAs they agree bit for bit.
  Costs the AVX2/AVX-512 vector width (see benchmarks/README.md).
* JAX's persistent compilation cache is switched on (directory
  ``$SIMKIT_CACHE_DIR`` or ``~/.cache/simkit/jax``) unless the user configured one or set
  ``SIMKIT_COMPILATION_CACHE=0``; programs that took 0.1 s or more to compile are stored.
"""

from __future__ import annotations

import os

_TRUE = ("1", "true", "yes", "on")


def _flag(name: str, default: str) -> bool:
    return os.environ.get(name, default).strip().lower() in _TRUE


ENABLE_X64: bool = _flag("SIMKIT_ENABLE_X64", "1")
STRICT_FP: bool = _flag("SIMKIT_STRICT_FP", "0")
os.environ.setdefault("EQX_ON_ERROR", "nan")
if STRICT_FP and "xla_cpu_max_isa" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_max_isa=AVX").strip()

import jax  # noqa: E402  (the environment must be set before jax/equinox load)

if ENABLE_X64:
    jax.config.update("jax_enable_x64", True)


def _enable_compilation_cache() -> str | None:
    if not _flag("SIMKIT_COMPILATION_CACHE", "1"):
        return None
    if jax.config.jax_compilation_cache_dir:
        return jax.config.jax_compilation_cache_dir
    path = os.environ.get("SIMKIT_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "simkit", "jax"
    )
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.1)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


COMPILATION_CACHE_DIR: str | None = _enable_compilation_cache()


def _configure_cpu_devices() -> int | None:
    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return None
    if jax.config.jax_num_cpu_devices != -1:  # the user chose
        return None
    wanted = os.environ.get("SIMKIT_CPU_DEVICES")
    count = int(wanted) if wanted else min(os.cpu_count() or 1, 32)
    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:  # JAX's backends are already initialised: leave them as they are
        return None
    return count


CPU_DEVICES: int | None = _configure_cpu_devices()


def float_dtype():
    """The floating dtype simkit uses for states, times and parameters."""
    import jax.numpy as jnp

    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
