"""Precision and runtime policy: what importing simkit changes, and what only simkit's calls do.

Importing simkit changes only what is listed here, and nothing the user configured; nothing
else about how the user's other JAX, equinox or diffrax code behaves (DESIGN.md, "Precision
and what importing simkit may change"). At import, each only where the user has not
configured it:

* float64 (``jax_enable_x64``): validation against SciPy needs it. Not applied when
  ``SIMKIT_ENABLE_X64=0`` or ``JAX_ENABLE_X64`` (any value) is set in the environment. JAX
  keeps no record of ``jax.config.update("jax_enable_x64", False)`` made before
  ``import simkit`` (the value equals JAX's default), so to keep float32 set one of those
  variables, or make that call after importing simkit.
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
* XLA:CPU's code generator. By default each of simkit's solve and fit programs chooses
  (`simkit._codegen`): kernel solves, diffrax solves of at most 64 states and fits whose
  solves are either compile with XLA:CPU's classic fusion code generator (per program, ``compiler_options``;
  nothing process-wide), the others, the ensembles and the stencils with XLA's default (its
  MLIR fusion emitters).
  ``SIMKIT_FAST_COMPILE=1``: the classic generator for every program in the process, the
  user's own included (``--xla_cpu_use_fusion_emitters=false`` is added to ``XLA_FLAGS``,
  unless ``XLA_FLAGS`` already names that flag; effective when simkit is imported before
  JAX starts); ``SIMKIT_FAST_COMPILE=0``: XLA's default everywhere. Measured with jax
  0.10.2 on 2 cores: the classic generator compiles about half as long (a Rodas5P kernel
  1.8 -> 1.0 s, a Tsit5 kernel 1.0 -> 0.73 s), small-system kernels run as fast or faster,
  but loops vectorised over many values run 5-25 % slower (a 10,000-member Lorenz
  ensemble, 2048^2 heat and 1024^2 Gray-Scott steps; benchmarks/code_generators.py).
  ``SIMKIT_FAST_COMPILE=2`` (the test suite's setting, its conftest): the classic generator
  everywhere, LLVM's optimisation level 0 (``--xla_backend_optimization_level=0``) and no
  FMAs (``--xla_cpu_max_isa=AVX``, as ``SIMKIT_STRICT_FP``), each unless ``XLA_FLAGS``
  names it. XLA's backend compile takes about half as long (the suite: 654-680 -> 357-416 s of
  compiling), the programs run 2.5-5x slower (Lorenz with Tsit5 and 1,000 saves 2.4 -> 6.9
  ms, HIRES 1.9 -> 6.6 ms, a 2,000-member ensemble 97 -> 530 ms). The FMAs go because at
  level 0 LLVM contracts some multiply-adds and not others, so a program and its chunked or
  decomposed twin differed by an ulp; without FMAs they agree bit for bit.
* XLA:CPU's small-loop threshold (``SIMKIT_SMALL_LOOPS``, default `SMALL_LOOP_BYTES_DEFAULT`
  = 128 KiB; ``0`` leaves XLA's default of 1 KiB): ``--xla_backend_extra_options=
  xla_cpu_small_while_loop_byte_threshold=...`` is added to ``XLA_FLAGS`` unless ``XLA_FLAGS``
  already sets ``xla_backend_extra_options``; effective when simkit is imported before JAX
  starts. XLA:CPU runs a program as a sequence of thunks (a fusion, a copy, a loop), about
  20 ns each inside a loop here; a while loop whose body reads and writes fewer bytes than
  the threshold (XLA's cost analysis) is compiled into one kernel instead. A small system's
  adaptive step is 30-200 thunks, so this makes single solves 1.3-4.9x faster (Lorenz with
  Tsit5 7.8 -> 1.8 ms, with DOP853 5.9 -> 1.2; Robertson with Rodas5P 0.81 -> 0.61, Radau
  IIA 1.29 -> 0.60, BDF 1.51 -> 0.78; HIRES, 8 states, with Rodas5P 9.5 -> 2.0; a Lorenz
  gradient 3.7x; benchmarks/small_loops.py) with the same results bit for bit (a
  reverse-mode gradient rounds differently in the last bits: 9e-16 relative), for a longer
  compile where a big step becomes one kernel (HIRES's first call 2.0 -> 2.7 s). Loops over
  larger data (ensemble chunks of 256 members, stencil fields of 128^2 and more) stay above
  the threshold, and a loop with a custom call (LAPACK's LU above
  `simkit.kernels.linalg.SMALL_SYSTEM` states) cannot be one kernel: they run as before.
  32 KiB was enough for 3 states, not for HIRES's 8; with no threshold at all (1e8 bytes) a
  256^2 Gray-Scott rollout ran 2.7x slower and a 128^2 heat rollout 1.14x slower (hence a
  threshold, not none). JAX's per-program ``compiler_options`` cannot carry this
  option (a map), so it is process-wide: the user's own small loops are compiled the same way.
* Single-device CPU programs run on the calling thread (``jax_cpu_enable_async_dispatch``
  off), unless ``SIMKIT_CPU_ASYNC_DISPATCH=1`` or JAX is already running. By default XLA:CPU
  hands each program to a worker thread and the caller waits for it; every simkit call waits
  anyway (it reads its result codes), and on a 2-core machine the hand-over cost about 0.14 ms
  a call back to back and 0.1-0.3 ms after a pause: a plain Robertson solve (0.06 ms of
  stepping) took 0.36-0.37 ms back to back and 0.63-0.71 after a pause, 0.22 and 0.41-0.54
  without it (benchmarks/experiments/cpu_dispatch_ab.py). Programs over several devices (the
  sharded ensembles, the decomposed stencils) still run on a thread per device (JAX's flag
  covers single-device programs only): 10,000 Lorenz members ran at 99 and 98 k solves/s
  with and without it (benchmarks/ensemble.py, one run each), a 1024^2 heat rollout on 2
  devices in 70-72 ms both ways (benchmarks/parallel.py). It is process-wide: the user's own
  single-device CPU programs run synchronously too, so a Python loop no longer overlaps its
  next dispatch with the running program (Python threads still run programs side by side).
  To keep JAX's default, set ``SIMKIT_CPU_ASYNC_DISPATCH=1``, or call
  ``jax.config.update("jax_cpu_enable_async_dispatch", True)`` after importing simkit and
  before the first computation.
* JAX's persistent compilation cache directory, ``$SIMKIT_CACHE_DIR`` or
  ``~/.cache/simkit/jax``, unless the user configured one (``jax_compilation_cache_dir``,
  ``JAX_COMPILATION_CACHE_DIR``), switched the cache off (``jax_enable_compilation_cache``)
  or set ``SIMKIT_COMPILATION_CACHE=0``. JAX has one cache per process: the user's own
  programs that pass JAX's thresholds are stored there too. JAX's thresholds
  (``jax_persistent_cache_min_compile_time_secs``, ``..._min_entry_size_bytes``) are not
  changed.

Inside simkit's own calls only: `simkit_call`, a context manager that simkit's compiled
entry points wrap around calling (tracing, compiling, running) their ``jax.jit`` programs:

* equinox's runtime checks (``equinox.error_if``; diffrax's ``diffeqsolve`` checks its
  inputs with them, whatever ``throw`` says) substitute NaN instead of raising. Compiled to
  raise, they are host callbacks, which keep JAX's persistent cache from storing the
  program; simkit checks inputs before compiling and carries numerical failure out as result
  codes. How equinox decides: it reads ``EQX_ON_ERROR`` once, when it is imported, into a
  module value; ``error_if`` reads that value when it is *traced* and bakes it into a jitted
  check that equinox caches without the value in the key. So simkit neither sets the
  variable nor swaps the value: on the first simkit call it routes equinox's traced checks
  through a pass-through that, only inside a simkit call in the same thread, asks for an
  explicit ``"nan"`` (a separate cache entry, never reused for the user's code). Not applied
  when the user set ``EQX_ON_ERROR`` or changed equinox's value: their choice holds in
  simkit's calls too (a program with host callbacks is then not cached). Code traced inside
  a simkit call (a model's rhs) gets simkit's policy.
* Programs that take 0.1 s or more to compile are stored (a thread-local threshold), when the
  cache in use is the one simkit set and the user has not set
  ``jax_persistent_cache_min_compile_time_secs`` (JAX's default is 1 s).

These scoped policies reach into private names (``equinox._errors.EQX_ON_ERROR`` and
``.branched_error_if_impl_jit``; ``jax._src.config.persistent_cache_min_compile_time_secs``),
against STYLE's rule, because neither library offers a scoped public switch. Where one is
missing (a newer release), `simkit_call` leaves that policy out and simkit stays correct;
only persistent caching of its programs is lost.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
from collections.abc import Callable
from typing import Any

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _flag(name: str, default: str) -> bool:
    """An on/off environment variable (unset or empty: ``default``); any other value is an
    error that names it, never silently off (``SIMKIT_ENABLE_X64=ture`` would otherwise
    mean float32)."""
    value = os.environ.get(name, "").strip().lower() or default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"environment variable {name}={os.environ[name]!r}: use 1 (or true, yes, on) "
                     f"or 0 (or false, no, off)")


def _whole_number(name: str, default: int, minimum: int, use: str) -> int:
    """A whole-number environment variable (unset or empty: ``default``); anything else that
    is not a whole number of at least ``minimum`` is an error naming it and saying ``use``."""
    setting = os.environ.get(name, "").strip()
    try:
        value = int(setting) if setting else default
        if value < minimum:
            raise ValueError
    except ValueError:
        raise ValueError(f"environment variable {name}={os.environ[name]!r}: use {use}") from None
    return value


# float64 unless the user opted out, for simkit or for JAX as a whole
ENABLE_X64: bool = _flag("SIMKIT_ENABLE_X64", "1") and "JAX_ENABLE_X64" not in os.environ
STRICT_FP: bool = _flag("SIMKIT_STRICT_FP", "0")
_USER_EQX_ON_ERROR: bool = "EQX_ON_ERROR" in os.environ  # equinox reads it once, at its import
_FAST_COMPILE_SETTING = os.environ.get("SIMKIT_FAST_COMPILE", "").strip().lower()
if _FAST_COMPILE_SETTING not in ("", "2", *_TRUE, *_FALSE):
    raise ValueError(f"environment variable SIMKIT_FAST_COMPILE={os.environ['SIMKIT_FAST_COMPILE']!r}: use 0, 1 "
                     f"or 2 (unset: each program chooses its code generator)")
# 0: XLA's defaults or the per-program choice; 1: the classic generator everywhere; 2: that,
# LLVM's optimisation level 0 and no FMAs (the test suite's setting)
FAST_COMPILE_LEVEL: int = 2 if _FAST_COMPILE_SETTING == "2" else int(_FAST_COMPILE_SETTING in _TRUE)
FAST_COMPILE: bool = FAST_COMPILE_LEVEL > 0
# XLA:CPU code generator: "auto" (unset: each program chooses, `simkit._codegen`), "classic"
# (every program: the XLA flag), "default" (XLA's default everywhere)
CODEGEN: str = "auto" if not _FAST_COMPILE_SETTING else ("classic" if FAST_COMPILE else "default")


def _add_xla_flag(name: str, value: str) -> None:
    """Append ``--name=value`` to ``XLA_FLAGS`` unless ``XLA_FLAGS`` already names the flag (the
    user's own setting wins; simkit adds each flag once)."""
    if name not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --{name}={value}").strip()


if STRICT_FP or FAST_COMPILE_LEVEL == 2:
    _add_xla_flag("xla_cpu_max_isa", "AVX")
if FAST_COMPILE:
    _add_xla_flag("xla_cpu_use_fusion_emitters", "false")
if FAST_COMPILE_LEVEL == 2:
    _add_xla_flag("xla_backend_optimization_level", "0")

SMALL_LOOP_BYTES_DEFAULT = 128 * 1024


def _small_loop_bytes() -> int | None:
    """Set XLA:CPU's small-while-loop threshold (see the docstring) and return it; None where
    XLA's default holds (``SIMKIT_SMALL_LOOPS=0``, or ``xla_backend_extra_options`` set without
    it). A threshold already in ``XLA_FLAGS`` is the one in effect: the user's own, or simkit's
    inherited from a parent process that imported simkit (read as None until session 33, which
    turned off what depends on it, `simkit._codegen.in_one_kernel_if_fits`, in every process
    that a simkit process started: its small solves ran 2-3x slower)."""
    value = _whole_number("SIMKIT_SMALL_LOOPS", SMALL_LOOP_BYTES_DEFAULT, 0,
                          "a whole number of bytes (0: XLA's default)")
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_backend_extra_options" in flags:
        given = re.search(r"xla_cpu_small_while_loop_byte_threshold=(\d+)", flags)
        return int(given.group(1)) if given else None
    if value == 0:
        return None
    _add_xla_flag("xla_backend_extra_options", f"xla_cpu_small_while_loop_byte_threshold={value}")
    return value


SMALL_LOOP_BYTES: int | None = _small_loop_bytes()

import jax  # noqa: E402  (the environment must be set before jax loads)

if ENABLE_X64:
    jax.config.update("jax_enable_x64", True)


def _enable_compilation_cache() -> str | None:
    """Set simkit's cache directory; None where the user configured the cache (or opted out)."""
    if not _flag("SIMKIT_COMPILATION_CACHE", "1"):
        return None
    if jax.config.jax_compilation_cache_dir or not jax.config.jax_enable_compilation_cache:
        return None  # the user's cache, or the user's choice of none
    path = os.environ.get("SIMKIT_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "simkit", "jax"
    )
    jax.config.update("jax_compilation_cache_dir", path)
    return path


# simkit's cache directory, or None where the user configured the cache (see the docstring)
COMPILATION_CACHE_DIR: str | None = _enable_compilation_cache()


def _configure_cpu_devices() -> int | None:
    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return None
    if jax.config.jax_num_cpu_devices != -1:  # the user chose
        return None
    count = _whole_number("SIMKIT_CPU_DEVICES", min(os.cpu_count() or 1, 32), 1,
                          "a whole number of CPU devices, at least 1")
    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:  # JAX's backends are already initialised: leave them as they are
        return None
    return count


CPU_DEVICES: int | None = _configure_cpu_devices()


def _configure_cpu_dispatch() -> bool:
    """Run single-device CPU programs on the calling thread (see the module docstring);
    False where the user opted out or JAX is already running (then it would not apply)."""
    if _flag("SIMKIT_CPU_ASYNC_DISPATCH", "0"):
        return False
    from jax._src import xla_bridge  # no public test of "JAX is running"

    running = getattr(xla_bridge, "backends_are_initialized", None)
    if running is None or running():
        return False
    jax.config.update("jax_cpu_enable_async_dispatch", False)
    return True


# whether simkit turned JAX's asynchronous CPU dispatch off (see the docstring)
CPU_SYNC_DISPATCH: bool = _configure_cpu_dispatch()


def float_dtype():
    """The floating dtype simkit uses for states, times and parameters."""
    import jax.numpy as jnp

    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


# -- simkit's policies inside its own calls ------------------------------------------------

_MIN_COMPILE_TIME_SECS = 0.1  # simkit's threshold for storing a program in its cache
_JAX_MIN_COMPILE_TIME_SECS = 1.0  # JAX's default for jax_persistent_cache_min_compile_time_secs
_eqx_lock = threading.Lock()
_eqx_routed: bool | None = None  # equinox's checks routed through `_checks` (None: not tried)
_local = threading.local()  # .depth: simkit calls in progress in this thread


def _route_equinox_checks() -> bool:
    """Route equinox's traced runtime checks through `_checks`, once, on the first simkit call.

    A pass-through except inside a simkit call in the same thread. Not done where the user
    set ``EQX_ON_ERROR`` (their choice holds everywhere) or this equinox lacks the name."""
    global _eqx_routed
    with _eqx_lock:
        if _eqx_routed is None:
            _eqx_routed = False
            if not _USER_EQX_ON_ERROR:
                import equinox._errors as module

                original = getattr(module, "branched_error_if_impl_jit", None)
                if callable(original) and isinstance(getattr(module, "EQX_ON_ERROR", None), str):
                    module.branched_error_if_impl_jit = _checks(module, original)
                    _eqx_routed = True
    return _eqx_routed


def _checks(module: Any, original: Any) -> Any:
    def branched_error_if_impl_jit(x, pred, index, msgs, *, on_error):
        # Inside a simkit call, equinox's default ("raise", unless the user changed it) becomes
        # an explicit "nan": a separate entry of equinox's own jit cache, so a check traced
        # for simkit is never reused for the user's code, nor the other way round.
        if on_error == "default" and getattr(_local, "depth", 0) and module.EQX_ON_ERROR == "raise":
            on_error = "nan"
        return original(x, pred, index, msgs, on_error=on_error)

    branched_error_if_impl_jit.__wrapped__ = original  # type: ignore[attr-defined]
    return branched_error_if_impl_jit


# whether the user set JAX's threshold in the environment: JAX reads the variable once, when it
# is imported, so it is read once here too (a later change reaches neither)
_USER_MIN_COMPILE_TIME: bool = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" in os.environ
_NULL_CONTEXT = contextlib.nullcontext()


@functools.cache
def _threshold_state() -> Any:
    """JAX's scoped switch for the threshold (a private name: None where this JAX lacks it)."""
    from jax._src import config as jax_config  # no public scoped switch (see the docstring)

    state = getattr(jax_config, "persistent_cache_min_compile_time_secs", None)
    return state if callable(state) else None


def _cache_threshold() -> contextlib.AbstractContextManager[Any]:
    """simkit's compile-time threshold, thread-locally, where the cache in use is simkit's
    and the user has not set a threshold; otherwise nothing."""
    config = jax.config
    if (
        COMPILATION_CACHE_DIR is None
        or _USER_MIN_COMPILE_TIME
        or config.jax_compilation_cache_dir != COMPILATION_CACHE_DIR
        or config.jax_persistent_cache_min_compile_time_secs != _JAX_MIN_COMPILE_TIME_SECS
    ):
        return _NULL_CONTEXT
    state = _threshold_state()
    return _NULL_CONTEXT if state is None else state(_MIN_COMPILE_TIME_SECS)


class simkit_call:  # noqa: N801 - used as a function: ``with simkit_call():`` and ``@simkit_call()``
    """simkit's error and cache policies for the duration of one of simkit's calls.

    simkit's compiled entry points wrap the call of their ``jax.jit`` program in it (tracing
    happens inside that call): equinox's runtime checks substitute NaN instead of compiling to
    host callbacks, and programs that compile in 0.1 s or more go to simkit's persistent
    cache, each unless the user configured otherwise (see the module docstring). Re-entrant
    and usable as a decorator. Outside it, the user's JAX and equinox code behaves as if
    simkit were not imported. (A class, not a ``contextlib.contextmanager``: it runs around
    every small solve, and a generator-based manager cost several microseconds a call.)
    """

    __slots__ = ("_threshold",)

    def __enter__(self) -> None:
        if _eqx_routed is None:
            _route_equinox_checks()
        _local.depth = getattr(_local, "depth", 0) + 1
        try:
            self._threshold = _cache_threshold()
            self._threshold.__enter__()
        except BaseException:
            _local.depth -= 1
            raise

    def __exit__(self, *exc: Any) -> None:
        try:
            self._threshold.__exit__(*exc)
        finally:
            _local.depth -= 1

    def __call__(self, fun: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fun)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with simkit_call():
                return fun(*args, **kwargs)

        return wrapped
