"""Precision and runtime policy: what importing simkit changes, and what `configure` turns on.

At import, simkit changes one thing in the user's process, and only where the user has not
configured it (DESIGN.md, "Precision and what importing simkit may change"):

* float64 (``jax_enable_x64``): validation against SciPy needs it. Not applied when
  ``SIMKIT_ENABLE_X64=0`` or ``JAX_ENABLE_X64`` (any value) is set in the environment. JAX
  keeps no record of ``jax.config.update("jax_enable_x64", False)`` made before
  ``import simkit`` (the value equals JAX's default), so to keep float32 set one of those
  variables, make that call after importing simkit, or call ``simkit.configure(x64=False)``.
  It stays process-wide because no per-call switch composes: JAX's scoped
  ``jax.enable_x64(True)`` around a solve gives float64 inside, but ``jax.grad`` of a function
  using it returned a float32 gradient, and the first float32 operation outside rounds a
  float64 result back to float32 (jax 0.10.2), so results would lose their digits silently in
  the user's own transforms.

Nothing else changes at import: JAX's other options, ``XLA_FLAGS``, the device list and the
compilation cache stay as the user left them (tests/test_config.py checks it in a fresh
process). What simkit can choose for its own programs, it chooses per compiled program:

* XLA:CPU's code generator (`simkit._codegen`): kernel solves, diffrax solves of at most 64
  states and fits whose solves are either compile with XLA:CPU's classic fusion code
  generator (``compiler_options`` on simkit's own ``jax.jit``), the others, the ensembles and
  the stencils with XLA's default (its MLIR fusion emitters). Measured with jax 0.10.2 on 2
  cores: the classic generator compiles about half as long (a Rodas5P kernel 1.8 -> 1.0 s, a
  Tsit5 kernel 1.0 -> 0.73 s), small-system kernels run as fast or faster, but loops
  vectorised over many values run 5-25 % slower (a 10,000-member Lorenz ensemble, 2048^2 heat
  and 1024^2 Gray-Scott steps; benchmarks/code_generators.py).
* One kernel per small solve (`simkit._codegen.in_one_kernel_if_fits`): XLA:CPU runs a
  program as a sequence of thunks (a fusion, a copy, a loop), about 20 ns each inside a loop
  here. A kernel solve whose operations fit and whose inputs and outputs take at most
  `SMALL_LOOP_BYTES` (128 KiB) is marked, in its own program, to be compiled by XLA:CPU's
  single-kernel emitter (the frontend attribute ``xla_cpu_small_call``), setup and stepping
  loop together. Measured against XLA's defaults in fresh processes (one run each, a shared
  2-core machine): Lorenz with Tsit5 and 1,000 saves 22.7 -> 1.29 ms, Robertson with Rodas5P
  0.55 -> 0.25 ms, HIRES with Rodas5P 4.3 -> 1.4 ms, the same as XLA's process-wide threshold
  below (1.48, 0.27, 1.59 ms in the same runs) and the same results bit for bit; Lorenz again
  as medians of 3 processes (benchmarks/process_settings.py): 28 -> 4.0 ms.
  ``SIMKIT_SMALL_LOOPS=0`` (or ``configure(small_loops=False)``) turns it off.

The rest would change the whole process, so it is opt-in, through `configure` (one call,
before JAX starts where that matters) or an environment variable read at import:

* ``cpu_devices`` (``SIMKIT_CPU_DEVICES=N``): N XLA CPU devices (``True``: one per core, at
  most 32; ``jax_num_cpu_devices``). `simkit.ensemble` shards members over the local devices,
  and one XLA CPU device runs a solver loop on about one core; single solves use device 0.
  JAX's default is one CPU device. The gain needs idle cores: on the shared 2-core machine of
  the measurements here (the process got half a core) a 10,000-member Lorenz ensemble took
  326 ms on one device and 533 ms on two (medians of 5 processes,
  benchmarks/results/process_settings_devices.json).
* ``async_dispatch=False`` (``SIMKIT_CPU_ASYNC_DISPATCH=0``): single-device CPU programs run
  on the calling thread (``jax_cpu_enable_async_dispatch`` off). By default XLA:CPU hands each
  program to a worker thread and the caller waits for it; every simkit call waits anyway (it
  reads its result codes), and on a 2-core machine the hand-over cost about 0.14 ms a call
  back to back and 0.1-0.3 ms after a pause (benchmarks/experiments/cpu_dispatch_ab.py).
  Programs over several devices still run on a thread per device. Process-wide: the user's
  own single-device CPU programs run synchronously too, so a Python loop no longer overlaps
  its next dispatch with the running program. Left off (medians of 3 fresh processes, a
  shared 2-core machine, benchmarks/process_settings.py): a Robertson solve back to back
  0.66 ms against 0.36 ms; after a 2 ms pause 0.61 ms either way.
* ``small_loops=True`` or a number of bytes (``SIMKIT_SMALL_LOOPS=N``): XLA:CPU's small-loop
  threshold for every program (``--xla_backend_extra_options=
  xla_cpu_small_while_loop_byte_threshold=N`` added to ``XLA_FLAGS``; ``True``: 128 KiB;
  XLA's default is 1 KiB): a while loop whose body reads and writes fewer bytes (XLA's cost
  analysis) is compiled into one kernel. It reaches the loops that simkit's one-kernel solves
  do not: gradients (the derivative of a solve is the plain program), diffrax solves, the
  user's own loops. JAX's per-program ``compiler_options`` cannot carry it: XLA takes only
  strings, numbers, booleans and enums there, and refuses ``xla_backend_extra_options`` (a
  map: "'xla_cpu_small_while_loop_byte_threshold=131072' is not a valid message value",
  jaxlib 0.10.2). Loops over larger data (ensemble chunks, stencil fields of 128^2 and more)
  stay above 128 KiB; with no threshold at all (1e8 bytes) a 256^2 Gray-Scott rollout ran
  2.7x slower. A threshold already in ``XLA_FLAGS`` (the user's, or one inherited from a
  parent process that opted in) is the one in effect. Left off (as above): the gradient of
  a Lorenz loss under ``jax.jit`` 0.93 ms against 0.20 ms; a Robertson solve by diffrax's
  Kvaerno5 58 against 54 ms (within the machine's noise).
* ``compilation_cache=True`` or a folder (``SIMKIT_COMPILATION_CACHE=1``, in
  ``$SIMKIT_CACHE_DIR`` or ``~/.cache/simkit/jax``): JAX's persistent compilation cache, so a
  fresh process loads simkit's programs instead of compiling them. JAX has one cache per
  process: the user's own programs that pass JAX's thresholds are stored there too. Not
  applied where the user configured a cache (``jax_compilation_cache_dir``) or switched it
  off (``jax_enable_compilation_cache``). Left off (as above): a fresh process's first Lorenz
  solve, tracing and compiling, 3.4 s against 1.9 s from a filled cache.
* ``x64``: float64 on or off (``jax_enable_x64``), as above.
* ``row_blocks`` (``SIMKIT_ROW_BLOCKS=0``: off): large periodic 2-D float32 stencil runs on a
  TPU step in row blocks (`simkit.stencil.blocked`), on by default; a rollout reads it when it
  is prepared.

simkit's own processes opt in to all of these (`configure_own_process`): the ``simkit``
command, its validation report and the benchmarks, each leaving alone what the environment
sets. The test suite sets what it needs in tests/conftest.py.

Two compile settings for the whole process stay environment variables (developers' tools):

* ``SIMKIT_STRICT_FP=1``: no fused multiply-adds in XLA's CPU code (``--xla_cpu_max_isa=AVX``
  is added to ``XLA_FLAGS``). XLA contracts ``a*b + c*d`` into an FMA one way or the other
  depending on how the operands were produced, so one program and its domain-decomposed twin
  can differ by an ulp per operation (measured: 1e-16 after a Burgers step); without FMAs
  they agree bit for bit. Costs the AVX2/AVX-512 vector width (benchmarks/measurements.md).
* ``SIMKIT_FAST_COMPILE=1``: the classic generator for every program in the process, the
  user's own included (``--xla_cpu_use_fusion_emitters=false`` is added to ``XLA_FLAGS``,
  unless ``XLA_FLAGS`` already names that flag); ``SIMKIT_FAST_COMPILE=0``: XLA's default
  everywhere. ``SIMKIT_FAST_COMPILE=2`` (the test suite's setting, its conftest): the classic
  generator everywhere, LLVM's optimisation level 0 (``--xla_backend_optimization_level=0``)
  and no FMAs (``--xla_cpu_max_isa=AVX``, as ``SIMKIT_STRICT_FP``), each unless ``XLA_FLAGS``
  names it. XLA's backend compile takes about half as long (the suite: 654-680 -> 357-416 s
  of compiling), the programs run 2.5-5x slower (Lorenz with Tsit5 and 1,000 saves 2.4 -> 6.9
  ms, HIRES 1.9 -> 6.6 ms, a 2,000-member ensemble 97 -> 530 ms). The FMAs go because at
  level 0 LLVM contracts some multiply-adds and not others, so a program and its chunked or
  decomposed twin differed by an ulp; without FMAs they agree bit for bit.

Each takes effect when simkit is imported before JAX starts (its first computation, or
``jax.devices()``).

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


def _is_set(name: str) -> bool:
    return bool(os.environ.get(name, "").strip())


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
_SMALL_LOOPS_USE = "a whole number of bytes (0: XLA's default)"


def _xla_small_loop_bytes() -> int | None:
    """XLA:CPU's small-loop threshold in ``XLA_FLAGS`` (the user's, or inherited from a parent
    process that opted in); None where none is set there."""
    given = re.search(r"xla_cpu_small_while_loop_byte_threshold=(\d+)", os.environ.get("XLA_FLAGS", ""))
    return int(given.group(1)) if given else None


def _small_loops_from_environment() -> int | None:
    """simkit's one-kernel limit (`SMALL_LOOP_BYTES`); ``SIMKIT_SMALL_LOOPS=N`` also sets XLA's
    threshold for the whole process (the opt-in, see the docstring)."""
    value = _whole_number("SIMKIT_SMALL_LOOPS", SMALL_LOOP_BYTES_DEFAULT, 0, _SMALL_LOOPS_USE)
    in_flags = _xla_small_loop_bytes()
    if in_flags is not None:
        return in_flags  # the threshold in effect: simkit's one-kernel solves follow it
    if value and _is_set("SIMKIT_SMALL_LOOPS") and "xla_backend_extra_options" not in os.environ.get("XLA_FLAGS", ""):
        _set_xla_small_loops(value)  # (backend options the user set in XLA_FLAGS are left as they are)
    return value or None


def _set_xla_small_loops(value: int) -> None:
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_backend_extra_options" in flags:
        from .errors import InputError

        raise InputError(f"simkit.configure(small_loops=...): XLA_FLAGS sets xla_backend_extra_options already "
                         f"({flags!r}); add xla_cpu_small_while_loop_byte_threshold={value} to it, comma-separated")
    _add_xla_flag("xla_backend_extra_options", f"xla_cpu_small_while_loop_byte_threshold={value}")


# the most bytes (inputs and outputs) of a kernel solve compiled as one XLA:CPU kernel, in its
# own program (`simkit._codegen.in_one_kernel_if_fits`); None: never
SMALL_LOOP_BYTES: int | None = _small_loops_from_environment()

import jax  # noqa: E402  (the environment must be set before jax loads)

if ENABLE_X64:
    jax.config.update("jax_enable_x64", True)


def _jax_started() -> bool:
    """Whether JAX's backends are initialised (its first computation, or ``jax.devices()``)."""
    from jax._src import xla_bridge  # no public test of "JAX is running"

    running = getattr(xla_bridge, "backends_are_initialized", None)
    return True if running is None else bool(running())


def _user_configured_devices() -> bool:
    return ("xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")
            or jax.config.jax_num_cpu_devices != -1)


def _default_cache_dir() -> str:
    return os.environ.get("SIMKIT_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "simkit", "jax")


def _set_compilation_cache(path: str) -> str | None:
    """Use ``path`` as JAX's cache; None where the user configured a cache or switched it off."""
    if COMPILATION_CACHE_DIR is None and (jax.config.jax_compilation_cache_dir
                                          or not jax.config.jax_enable_compilation_cache):
        return None  # the user's cache, or the user's choice of none
    jax.config.update("jax_compilation_cache_dir", path)
    return path


# simkit's cache directory; None where simkit set none (the default, see the docstring)
COMPILATION_CACHE_DIR: str | None = None
if _flag("SIMKIT_COMPILATION_CACHE", "0"):
    COMPILATION_CACHE_DIR = _set_compilation_cache(_default_cache_dir())

# stencils in row blocks on a TPU (`simkit.stencil.blocked`; SIMKIT_ROW_BLOCKS=0 or `configure`: off)
ROW_BLOCKS: bool = _flag("SIMKIT_ROW_BLOCKS", "1")

# CPU devices simkit configured (SIMKIT_CPU_DEVICES or `configure`); None: JAX's or the user's
CPU_DEVICES: int | None = None
# whether simkit turned JAX's asynchronous CPU dispatch off (SIMKIT_CPU_ASYNC_DISPATCH=0 or `configure`)
CPU_SYNC_DISPATCH: bool = False
if _is_set("SIMKIT_CPU_DEVICES"):
    _count = _whole_number("SIMKIT_CPU_DEVICES", 1, 1, "a whole number of CPU devices, at least 1")
    if not _user_configured_devices() and not _jax_started():
        jax.config.update("jax_num_cpu_devices", _count)
        CPU_DEVICES = _count
if not _flag("SIMKIT_CPU_ASYNC_DISPATCH", "1") and not _jax_started():
    jax.config.update("jax_cpu_enable_async_dispatch", False)
    CPU_SYNC_DISPATCH = True


def _too_late(call: str, variable: str) -> None:
    from .errors import InputError

    raise InputError(f"simkit.configure({call}): JAX has already started (a computation ran, or "
                     f"jax.devices() was called), and this setting only takes effect before that. Call "
                     f"simkit.configure right after `import simkit`, or set {variable} in the environment")


def _check_type(name: str, value: Any, types: tuple, use: str) -> None:
    from .errors import InputTypeError

    if not isinstance(value, types):
        raise InputTypeError(f"simkit.configure({name}={value!r}): use {use}")


def configure(*, x64: bool | None = None, cpu_devices: int | bool | None = None,
              async_dispatch: bool | None = None, small_loops: int | bool | None = None,
              compilation_cache: bool | str | os.PathLike | None = None,
              row_blocks: bool | None = None) -> dict[str, Any]:
    """Opt in to the process-wide settings that make simkit faster; returns the settings in effect.

    ``import simkit`` changes only float64 in your process; everything here is your choice,
    for the whole process (your own JAX code included). Call it right after ``import simkit``:
    ``cpu_devices``, ``async_dispatch`` and ``small_loops`` take effect only before JAX starts
    (its first computation, or ``jax.devices()``), and raise `simkit.InputError` after that
    unless they ask for what is already in effect. ``None`` leaves a setting as it is. Each
    has an environment variable read at ``import simkit``. Measured on a shared 2-core machine
    (jax 0.10.2, benchmarks/ensemble.py and benchmarks/small_loops.py):

    Parameters
    ----------
    x64 : bool, optional
        float64 (``jax_enable_x64``; on at import unless ``SIMKIT_ENABLE_X64=0``). Arrays made
        before the change keep their dtype.
    cpu_devices : int or True, optional
        Simulated XLA CPU devices (``jax_num_cpu_devices``; ``SIMKIT_CPU_DEVICES``); ``True``:
        one per core, at most 32. `simkit.ensemble` shards members over them: without, an
        ensemble runs on one core.
    async_dispatch : bool, optional
        ``False``: single-device CPU programs run on the calling thread
        (``jax_cpu_enable_async_dispatch``; ``SIMKIT_CPU_ASYNC_DISPATCH=0``), saving the
        0.1-0.3 ms hand-over to a worker thread on every small solve.
    small_loops : int or bool, optional
        XLA:CPU's small-loop threshold in bytes for every program (``True``: 128 KiB;
        ``SIMKIT_SMALL_LOOPS=N``; added to ``XLA_FLAGS``): loops below it run as one kernel.
        simkit's small kernel solves run as one kernel without it; it speeds up their
        gradients, diffrax solves and your own small loops. ``False`` or 0: XLA's default
        everywhere, simkit's one-kernel solves included.
    compilation_cache : bool or path, optional
        JAX's persistent compilation cache (``True``: ``$SIMKIT_CACHE_DIR`` or
        ``~/.cache/simkit/jax``; ``SIMKIT_COMPILATION_CACHE=1``), so that a fresh process
        loads compiled programs, yours too when they pass JAX's thresholds. ``False`` turns
        off a cache simkit set. Any time; not applied over a cache you configured in JAX.
    row_blocks : bool, optional
        Large periodic 2-D float32 stencil runs step in row blocks on a TPU, several steps per
        pass over memory (`simkit.stencil.blocked`; on by default, ``SIMKIT_ROW_BLOCKS=0``
        turns them off): ``False`` keeps XLA's loop there, e.g. for a right-hand side that
        builds arrays from ``space.grid``'s shape. Any time; for rollouts prepared after it.

    Returns
    -------
    dict
        ``x64``, ``cpu_devices`` (``None``: JAX's choice), ``async_dispatch``,
        ``small_loops`` (XLA's threshold in bytes; ``None``: XLA's default),
        ``compilation_cache`` (the folder, or ``None``) and ``row_blocks``.

    Raises
    ------
    InputError
        A device, dispatch or small-loop setting after JAX started.
    InputTypeError
        A value of the wrong type.

    Examples
    --------
    >>> import simkit
    >>> settings = simkit.configure()  # nothing changed: the settings in effect
    >>> sorted(settings)
    ['async_dispatch', 'compilation_cache', 'cpu_devices', 'row_blocks', 'small_loops', 'x64']
    """
    global COMPILATION_CACHE_DIR, CPU_DEVICES, CPU_SYNC_DISPATCH, SMALL_LOOP_BYTES, ROW_BLOCKS
    from .errors import InputError

    if x64 is not None:
        _check_type("x64", x64, (bool,), "True or False")
    if cpu_devices is not None:
        _check_type("cpu_devices", cpu_devices, (bool, int), "a whole number of CPU devices, or True (one per core)")
        count = min(os.cpu_count() or 1, 32) if cpu_devices is True else int(cpu_devices)
        if cpu_devices is False or count < 1:
            raise InputError(f"simkit.configure(cpu_devices={cpu_devices!r}): use a whole number of CPU "
                             f"devices, at least 1, or True (one per core)")
    if async_dispatch is not None:
        _check_type("async_dispatch", async_dispatch, (bool,), "True (JAX's default) or False")
    if small_loops is not None:
        _check_type("small_loops", small_loops, (bool, int), "True, False or a whole number of bytes")
        threshold = SMALL_LOOP_BYTES_DEFAULT if small_loops is True else int(small_loops)
        if threshold < 0:
            raise InputError(f"simkit.configure(small_loops={small_loops!r}): use True, False or a whole "
                             f"number of bytes")
    if compilation_cache is not None:
        _check_type("compilation_cache", compilation_cache, (bool, str, os.PathLike), "True, False or a folder")
    if row_blocks is not None:
        _check_type("row_blocks", row_blocks, (bool,), "True (the default) or False")

    started = _jax_started()
    if cpu_devices is not None and jax.config.jax_num_cpu_devices != count:
        if started:
            _too_late(f"cpu_devices={cpu_devices!r}", f"SIMKIT_CPU_DEVICES={count}")
        jax.config.update("jax_num_cpu_devices", count)
        CPU_DEVICES = count
    if async_dispatch is not None and jax.config.read("jax_cpu_enable_async_dispatch") != async_dispatch:
        if started:
            _too_late(f"async_dispatch={async_dispatch!r}", f"SIMKIT_CPU_ASYNC_DISPATCH={int(async_dispatch)}")
        jax.config.update("jax_cpu_enable_async_dispatch", async_dispatch)
        CPU_SYNC_DISPATCH = not async_dispatch
    if small_loops is not None and _xla_small_loop_bytes() != (threshold or None):
        if started:
            _too_late(f"small_loops={small_loops!r}", f"SIMKIT_SMALL_LOOPS={threshold}")
        flags = os.environ.get("XLA_FLAGS", "")
        ours = re.search(r"\s*--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=\d+(?=\s|$)", flags)
        if ours:  # a threshold alone in the flag (simkit's form): replaced
            os.environ["XLA_FLAGS"] = (flags[:ours.start()] + flags[ours.end():]).strip()
        if threshold:
            _set_xla_small_loops(threshold)
        elif _xla_small_loop_bytes() is not None:
            raise InputError(f"simkit.configure(small_loops={small_loops!r}): XLA_FLAGS sets the threshold "
                             f"among other backend options ({flags!r}); remove it there")
    if small_loops is not None:
        SMALL_LOOP_BYTES = threshold or None
    if x64 is not None:
        jax.config.update("jax_enable_x64", x64)
    if row_blocks is not None:
        ROW_BLOCKS = row_blocks
    if compilation_cache is True:
        COMPILATION_CACHE_DIR = _set_compilation_cache(_default_cache_dir()) or COMPILATION_CACHE_DIR
    elif compilation_cache is False:
        if COMPILATION_CACHE_DIR is not None and jax.config.jax_compilation_cache_dir == COMPILATION_CACHE_DIR:
            jax.config.update("jax_compilation_cache_dir", None)
        COMPILATION_CACHE_DIR = None
    elif compilation_cache is not None:
        COMPILATION_CACHE_DIR = _set_compilation_cache(os.fspath(compilation_cache)) or COMPILATION_CACHE_DIR
    return settings()


def settings() -> dict[str, Any]:
    """The process-wide settings `configure` controls, as now in effect (`configure`'s return)."""
    devices = jax.config.jax_num_cpu_devices
    return dict(x64=bool(jax.config.jax_enable_x64), cpu_devices=None if devices == -1 else devices,
                async_dispatch=bool(jax.config.read("jax_cpu_enable_async_dispatch")), small_loops=_xla_small_loop_bytes(),
                compilation_cache=jax.config.jax_compilation_cache_dir or None, row_blocks=ROW_BLOCKS)


# what `configure_own_process` turns on: simkit's fastest settings on a CPU (see the docstring)
OWN_PROCESS = dict(cpu_devices=True, async_dispatch=False, small_loops=True, compilation_cache=True)
_VARIABLES = dict(cpu_devices="SIMKIT_CPU_DEVICES", async_dispatch="SIMKIT_CPU_ASYNC_DISPATCH",
                  small_loops="SIMKIT_SMALL_LOOPS", compilation_cache="SIMKIT_COMPILATION_CACHE")


def configure_own_process() -> dict[str, Any]:
    """`configure` with `OWN_PROCESS`, for simkit's own processes (the ``simkit`` command, the
    validation report, the benchmarks): each setting the environment leaves unset and the
    user has not configured in JAX (devices, a cache, backend options in ``XLA_FLAGS``), and
    only while it can still take effect (nothing is raised once JAX runs). Returns the
    settings in effect."""
    started = _jax_started()
    chosen = {}
    for name, value in OWN_PROCESS.items():
        if _is_set(_VARIABLES[name]):
            continue
        if name == "cpu_devices" and (started or _user_configured_devices()):
            continue
        if name == "async_dispatch" and started:
            continue
        if name == "small_loops" and (started or "xla_backend_extra_options" in os.environ.get("XLA_FLAGS", "")):
            continue
        chosen[name] = value
    return configure(**chosen)


def float_dtype():
    """The floating dtype simkit uses for states, times and parameters: the innermost
    `simkit.precision` block's, else float64 where JAX's float64 is on, else float32."""
    import jax.numpy as jnp

    from .placement import chosen_precision

    return chosen_precision() or (jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)


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
