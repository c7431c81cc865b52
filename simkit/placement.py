"""Where simkit's calls run, and in which precision, when JAX's default device is an accelerator.

Placement follows the work's shape:

* **One unbatched solve** (`simkit.solve`, `simkit.solve_ivp`) is
  a chain of thousands of tiny dependent steps: latency-bound. With an accelerator as JAX's
  default device it runs on the host's CPU by default, which answered it 17-54x sooner than a
  TPU (docs/accelerators.md gives the measurements).
* **A fit of few starts** (`simkit.fit`, `simkit.fitting.least_squares_bounded` and
  `minimize_bounded`, `simkit.petab`'s fits and profiles, `FitResult.profile` (a start per
  value), with fewer than `HOST_FIT_STARTS` starts and no ``devices=``) is a chain of such
  solves, and runs on the host's CPU too.
* **Batched work** (`simkit.ensemble`, the stencil steppers, a fit of `HOST_FIT_STARTS` starts
  or more, side by side on an accelerator) is
  throughput-bound and runs on JAX's default device, the accelerator where there is one.

`simkit.solve` takes ``device=``: ``None`` (the rule above), ``"host"`` (the first CPU device),
``"default"`` (JAX's default device) or a ``jax.Device``; `simkit.ensemble` takes ``devices=``;
other calls run on JAX's default device (``jax.default_device`` chooses it). Inputs the user already committed to a
device (``jax.device_put``) stay there, and under the user's own ``jax.jit``/``vmap``/``grad``
the user's program decides.

Precision: simkit computes in float64 on every backend by default (``jax_enable_x64``, set at
import: results compare with SciPy to its tolerances). On a TPU float64 is emulated, about an
order of magnitude slower than float32; simkit warns once when batched work runs there in
float64. Choose float32 for a call with ``with simkit.precision("float32"): ...``, or for the
process with ``SIMKIT_ENABLE_X64=0`` in the environment.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import warnings
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp

from .errors import InputError, InputTypeError
from .params import is_traced

__all__ = ["precision"]

_PRECISION: contextvars.ContextVar[Any] = contextvars.ContextVar("simkit_precision", default=None)
_NAMES = {"float32": jnp.float32, "float64": jnp.float64}


@contextlib.contextmanager
def precision(dtype: str | Any) -> Iterator[None]:
    """Compute simkit's calls inside this block in ``dtype`` (``"float32"`` or ``"float64"``).

    States, times, parameters and tolerances are cast to ``dtype`` when a call is prepared, so
    the compiled programs run in it; results come back in it. ``"float64"`` needs JAX's float64
    (on unless ``SIMKIT_ENABLE_X64=0``). Nested blocks: the innermost wins. Thread- and
    task-local (a context variable).

    Parameters
    ----------
    dtype : str or dtype
        ``"float32"`` or ``"float64"`` (or ``jnp.float32``/``jnp.float64``).

    Raises
    ------
    InputError
        Another dtype, or ``"float64"`` where JAX's float64 is off.

    Examples
    --------
    >>> import simkit
    >>> with simkit.precision("float32"):  # float32 tolerances: rtol above 100 x its epsilon
    ...     sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=3, rtol=1e-4, atol=1e-6)
    >>> sol.ys.dtype
    dtype('float32')
    """
    name = getattr(dtype, "__name__", None) or str(getattr(dtype, "name", dtype))
    if name not in _NAMES:
        raise InputError(f"simkit.precision({dtype!r}): use 'float32' or 'float64'")
    if name == "float64" and not jax.config.jax_enable_x64:
        raise InputError("simkit.precision('float64'): JAX's float64 is off in this process "
                         "(SIMKIT_ENABLE_X64=0 or JAX_ENABLE_X64 set); unset it to compute in float64")
    token = _PRECISION.set(_NAMES[name])
    try:
        yield
    finally:
        _PRECISION.reset(token)


def chosen_precision() -> Any:
    """The dtype of the innermost `precision` block, or None outside one."""
    return _PRECISION.get()


@functools.cache
def _host() -> Any:
    try:
        return jax.local_devices(backend="cpu")[0]
    except RuntimeError:  # JAX_PLATFORMS without cpu: no host device to move to
        return None


def resolve_device(device: Any, *, batched: bool, owner: str, inputs: Any = ()) -> Any:
    """The device a call runs on, or None where JAX's own placement applies (JAX's default
    device; the user's committed inputs; the user's own trace).

    ``device``: None (automatic: an unbatched call goes to the host's CPU when JAX's default
    device is an accelerator), ``"host"``, ``"default"`` or a ``jax.Device``."""
    if device is None:
        if batched or jax.default_backend() == "cpu" or is_traced(inputs):
            return None
        return _host()
    if isinstance(device, jax.Device):
        return device
    if device == "host":
        host = _host()
        if host is None:
            raise InputError(f"{owner}(device='host'): this process has no CPU device (JAX_PLATFORMS excludes it)")
        return host
    if device == "default":
        return None
    raise InputTypeError(f"{owner}(device={device!r}): use None (automatic), 'host', 'default' or a jax.Device, "
                         f"e.g. device=jax.devices()[0]")


HOST_FIT_STARTS = 32
"""Fits of fewer starts than this run on the host's CPU when JAX's default device is an
accelerator. A lynx-hare fit in float32 on a TPU v5e machine, the starts side by side on the
TPU against one after another on one CPU core: 1, 16 and 32 starts ran in 1.00, 2.61 and
3.99 s on the TPU against 0.02, 1.26 and 3.15 s on the CPU, 64 starts in 4.64 against 5.87 s;
the first call took 22-26 s on the TPU against 9-15 s on the CPU
(`benchmarks/results/accelerator_fit_starts.json`). Each start's steps are the dependent
single solves that a TPU answers 17-54x slower than a CPU core; side by side, many starts
share them."""


def starts_device(n_starts: int, devices: Any, inputs: Any = ()) -> Any:
    """The device a fit of ``n_starts`` starts runs on, or None where JAX's own placement
    applies: the host's CPU for fewer than `HOST_FIT_STARTS` starts when JAX's default device is
    an accelerator, unless ``devices`` (the fit's own ``devices=``) is given or ``inputs`` are
    traced."""
    if devices is not None:
        return None
    return resolve_device(None, batched=n_starts >= HOST_FIT_STARTS, owner="fit", inputs=inputs)


@contextlib.contextmanager
def fit_placed(n_starts: int, devices: Any = None, inputs: Any = ()) -> Iterator[None]:
    """Run the block where a fit of ``n_starts`` starts belongs (`starts_device`): every fit,
    optimiser and profile of simkit places its starts through this one rule."""
    with placed(starts_device(n_starts, devices, inputs)):
        yield


@contextlib.contextmanager
def placed(device: Any) -> Iterator[None]:
    """Run the block's computations on ``device`` (None: leave JAX's placement as it is)."""
    if device is None:
        yield
        return
    with jax.default_device(device):
        yield


_warned_emulated = False


def warn_if_emulated(platform: str, dtype: Any, owner: str) -> None:
    """Warn once per process when batched work runs float64 on a TPU (emulated there)."""
    global _warned_emulated
    if _warned_emulated or platform != "tpu" or jnp.dtype(dtype) != jnp.float64:
        return
    _warned_emulated = True
    warnings.warn(f"{owner}: float64 is emulated on a TPU and runs about 10x slower than float32 (a 2048^2 "
                  f"heat step 0.67 against 0.054 ms). For float32, wrap the call in "
                  f"`with simkit.precision('float32'):` or set SIMKIT_ENABLE_X64=0 before importing simkit. "
                  f"(Shown once per process.)", stacklevel=3)


def platform_of(device: Any) -> str:
    """The platform a call placed on ``device`` (None: JAX's default device) compiles for."""
    if device is not None:
        return device.platform
    default = jax.config.jax_default_device
    return getattr(default, "platform", None) or jax.default_backend()


def prepare_for_platform(solver: Any, platform: str, owner: str) -> None:
    """Prepare what a program for ``platform`` needs before it is compiled, or refuse what
    cannot compile there, naming ``owner`` (the calling function). On a TPU (JAX 0.10.2), a
    diffrax solver: ``diffeqsolve`` computes ``nextafter`` of t1 in the program, whose own
    lowering XLA's TPU compiler rejects (an ``and`` of s32 and u32 operands), so TPU programs of
    this process lower it in float arithmetic from here on
    (`simkit.kernels.platforms.lower_nextafter_by_arithmetic_on_tpu`); diffrax's implicit
    solvers are refused there (their LU is XLA's, which the TPU backend does not implement in
    float64; in float32 a Kvaerno5 solve failed there as well). simkit's own kernels need
    nothing (their factorisations take TPU forms, and `simkit.RadauIIA5` solves its complex
    Newton system in real arithmetic on a TPU, which has no complex128)."""
    from .kernels.platforms import lower_nextafter_by_arithmetic_on_tpu
    from .solvers import is_diffrax_solver

    if platform != "tpu" or not is_diffrax_solver(solver):
        return
    import diffrax

    if isinstance(solver, diffrax.AbstractImplicitSolver):
        raise InputError(f"{owner}: diffrax's implicit solver {type(solver).__name__} cannot run on a TPU (its "
                         f"LU is XLA's, which the TPU backend lacks in float64; in float32 it fails there too). "
                         f"Use simkit's stiff kernels there (simkit.Rodas5P(), simkit.BDF(), simkit.RadauIIA5()), "
                         f"or run it on the host (device='host')")
    lower_nextafter_by_arithmetic_on_tpu()
