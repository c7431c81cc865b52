"""The front door: one place that turns a call into a validated program and its arguments.

``prepare(model, t_span, y0=..., params=..., saveat=..., ...)`` returns a `SolvePlan`: a
static program (`DiffraxProgram` or `KernelProgram`, hashable: it selects the compiled
code) and `SolveArgs` (numbers, traced: new values never recompile). `simkit.solve` is
prepare -> engine -> finish; `simkit.ensemble` vmaps the engine over batched `SolveArgs`;
the stencil and parallel rollouts merge their parameters with `merge_params`, the one
function that merges and checks parameters.

Every check here runs before compilation and raises a `SimkitError` that is also the
built-in error a Python user expects (``ValueError``/``TypeError``/``KeyError``). Values
that are traced (inside a user's ``jit``/``grad``/``vmap``) cannot be checked on the host;
their failures travel out of the compiled program as result codes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _config
from ._traced_checks import (SAVE_TIME_SLACK, clip_save_times, floor_rtol, harmless_args, teaching_error,
                             traced_inputs_ok)
from .engines.programs import DiffraxProgram, KernelProgram
from .errors import InputError, InputTypeError, ParameterError, ShapeError
from .events import Event, as_events
from .kernels import BDF, AbstractKernel, AutoSwitch, RadauIIA5, Rodas4, Rodas5P, Tsit5
from .kernels.autodiff import declared_tangents
from .kernels.banded import check_pattern_size
from .kernels.solvers import default_stiff_kernel
from .model import ODEModel
from .params import _HOST, check_key, concrete, is_traced, merge_params  # noqa: F401 (re-exported)
from .save_times import SaveAt, as_saveat, save_grid
from .solvers import default_solver, diffrax_module, is_diffrax_solver

KERNEL_MAX_STATES = 64  # the fused kernels are the default up to this many states
DENSE_JACOBIAN_MAX_STATES = 2048  # complex stiff states (diffrax): dense Newton up to here, GMRES above


@functools.lru_cache(maxsize=None)
def _diffrax_default(stiff: bool, matrix_free: bool = False) -> Any:
    """diffrax's default solvers, built once (diffrax imported on first use)."""
    return default_solver(stiff, matrix_free)


def memory_budget() -> int:
    """Bytes a solve's preallocated output may take (``SIMKIT_MEMORY_BUDGET``, default 2 GiB)."""
    setting = os.environ.get("SIMKIT_MEMORY_BUDGET", "").strip()
    try:
        value = float(setting) if setting else 2.0 * 2**30
        if not value > 0 or value == float("inf"):
            raise ValueError
    except ValueError:
        raise InputError(f"environment variable SIMKIT_MEMORY_BUDGET={os.environ['SIMKIT_MEMORY_BUDGET']!r}: "
                         f"use a positive number of bytes (default 2 GiB: 2147483648)") from None
    return int(value)


def over_budget(need: float) -> bool:
    """Whether an allocation of ``need`` bytes exceeds `memory_budget`; below 64 MiB never (the
    environment is read only for big allocations, off a small solve's path)."""
    return need > 2**26 and need > memory_budget()


def check_jacobian_memory(solver: Any, n_states: int, dtype: Any) -> None:
    """Refuse, before compiling, a kernel whose dense ``n x n`` Jacobian and LU factors alone
    exceed the memory budget (``SIMKIT_MEMORY_BUDGET``): Rodas4/Rodas5P (Jacobian and LU),
    RadauIIA5 (Jacobian, a real and a complex LU) and BDF with a dense linear solver. Found by
    probing: RadauIIA5 on 20,000 states compiled, then failed in XLA asking for 25.6 GB, and
    Rodas5P on 20,000 states ran past 2 minutes on 3.2 GB Jacobians."""
    if isinstance(solver, (Rodas4, Rodas5P)):
        matrices = 2
    elif isinstance(solver, RadauIIA5):
        # the Jacobian, a real and a complex LU (twice), and as much again in XLA's buffers:
        # on 20,000 states it asked for 25.6 GB, 8 n^2 doubles
        matrices = 8
    elif isinstance(solver, BDF) and solver.method().linear_kind(n_states) == "dense":
        matrices = 2
    else:
        return
    need = matrices * n_states * n_states * np.dtype(dtype).itemsize
    if over_budget(need):
        hint = ("simkit.BDF() (matrix-free above 256 states, banded with jac_sparsity)"
                if not isinstance(solver, BDF) else "simkit.BDF() with linear_solver='auto' (matrix-free) "
                "or 'banded' with jac_sparsity")
        raise InputError(
            f"{solver!r} keeps a dense {n_states} x {n_states} Jacobian and its LU factors: at least "
            f"{need / 2**30:.3g} GiB, above the memory budget of {memory_budget() / 2**30:.3g} GiB "
            f"(SIMKIT_MEMORY_BUDGET): use {hint}, or raise the budget")


class SolveArgs(NamedTuple):
    """The traced (numeric) arguments of a compiled solve; one field per input number."""

    t0: Any
    t1: Any
    y0: Any  # (n_states,)
    params: dict[str, Any]
    save_ts: Any  # (n_save,) given save times, or (0,) for a count / steps
    rtol: Any
    atol: Any
    dt0: Any  # NaN: the engine's automatic first step; else signed like t1 - t0
    max_step: Any  # inf: no limit
    key: Any = None  # raw key bits of a stochastic model


@dataclasses.dataclass(frozen=True)
class SolvePlan:
    """What `prepare` returns: the static program, its traced arguments and names for the result."""

    program: DiffraxProgram | KernelProgram
    args: SolveArgs
    model: ODEModel
    solver: Any  # the solver object chosen (kernel or diffrax)
    solver_name: str
    saveat: SaveAt
    traced: bool = False  # some argument is a tracer (a user's jit, grad or vmap)
    inputs_ok: Any = None  # traced inputs' checks (`simkit._traced_checks`), None when none is traced

    @property
    def engine_args(self) -> SolveArgs:
        """`args` for the engine: where traced inputs fail their checks, harmless ones (the
        result is NaN with ``Status.INVALID_INPUT``, `simkit._solve.finish`)."""
        return self.args if self.inputs_ok is None else harmless_args(self.args, self.inputs_ok)


# -- small checks -------------------------------------------------------------------


def as_float(value: Any, dtype: Any) -> Any:
    """``value`` as an array of ``dtype``: NumPy for host values (no device round trip
    before the compiled call, ~0.2 us instead of ~30 us), jax for device/traced ones."""
    if isinstance(value, jax.Array):  # includes tracers
        return value if value.dtype == dtype else value.astype(dtype)
    return np.asarray(value, dtype=dtype)


def dtype_of(x: Any) -> Any:
    """The dtype of an array, a number, or a list of numbers/tracers."""
    if isinstance(x, (np.ndarray, np.generic, jax.Array)):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(bool)
    if isinstance(x, (int, float, complex)):
        return np.dtype(type(x)) if not isinstance(x, int) else np.dtype(np.int64)
    if isinstance(x, (list, tuple)):
        return jnp.asarray(x).dtype
    return jnp.result_type(x)


@functools.cache
def _eps(dtype: Any) -> float:
    return float(jnp.finfo(dtype).eps)


def rtol_floor(dtype: Any) -> float:
    """The smallest relative tolerance a solve in ``dtype`` takes: 100 machine epsilons (SciPy's
    rule; 2.2e-14 in float64, 1.2e-5 in float32)."""
    return 100 * _eps(dtype)


def check_number(name: str, value: Any, *, positive: bool = False, nonnegative: bool = False) -> None:
    """A real, finite scalar (host values only); `positive` / `nonnegative` as named."""
    arr = value  # a Python float, the common case, is tested as it is (NumPy costs microseconds)
    if type(value) is not float:
        if isinstance(value, (str, bytes)) or value is None:
            raise InputTypeError(f"{name} must be a number, got {value!r}")
        arr = concrete(value)
        if arr is None:
            return
        if arr.dtype.kind not in "fiu" or arr.ndim != 0:
            raise InputTypeError(f"{name} must be a real scalar, got {value!r}")
    if not np.isfinite(arr):
        raise InputError(f"{name} must be finite, got {arr}")
    if positive and not arr > 0:
        raise InputError(f"{name} must be positive, got {arr}")
    if nonnegative and not arr >= 0:
        raise InputError(f"{name} must be >= 0, got {arr}")


def check_atol(atol: Any, model: Any) -> None:
    """``atol``: a real, finite, non-negative scalar, or one per state (shape ``(n_states,)``,
    as SciPy's ``atol``); host values only, a traced one by its shape."""
    if type(atol) is float or np.ndim(atol) == 0:
        check_number("atol", atol, nonnegative=True)
        return
    n = model.n_states
    if np.shape(atol) != (n,):
        raise ShapeError(f"model {model.name!r}: atol must be a scalar or have shape ({n},), one per state, "
                         f"got shape {np.shape(atol)}")
    arr = concrete(atol)
    if arr is None:
        return
    if arr.dtype.kind not in "fiu":
        raise InputTypeError(f"atol must be real numbers, got dtype {arr.dtype}")
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"model {model.name!r}: atol must be finite and >= 0 for every state, got {arr[i]} for "
                         f"state {model.state_names[i]!r}")


def check_count(name: str, value: Any, *, minimum: int = 1) -> int:
    """An int (not a bool, not a float such as 2.5) of at least `minimum`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputTypeError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise InputError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def check_flag(name: str, value: Any, *, allow_none: bool = False) -> bool | None:
    """A bool (Python's or NumPy's), or None where ``allow_none``: a string such as
    ``"no"`` or a number would otherwise be read by its truth value."""
    if value is None and allow_none:
        return None
    if not isinstance(value, (bool, np.bool_)):
        allowed = "True, False or None" if allow_none else "True or False"
        raise InputTypeError(f"{name} must be {allowed}, got {value!r}")
    return bool(value)


def time_span(model: Any, t_span: Any, *, allow_infinite_end: bool = False) -> tuple[Any, Any]:
    """``(t0, t1)`` from ``t_span`` or the model's default; finite (``t1 = ±inf`` only with a
    terminal event), real, a pair."""
    if t_span is None:
        if model.t_span is None:
            raise InputError(f"model {model.name!r} has no default t_span: pass t_span=(t0, t1)")
        t_span = model.t_span
    try:
        pair = not isinstance(t_span, (str, bytes)) and len(t_span) == 2
    except TypeError:  # a scalar
        pair = False
    if not pair:
        raise InputError(f"t_span must be a pair (t0, t1), got {t_span!r}")
    t0, t1 = t_span
    if type(t0) is float and type(t1) is float and math.isfinite(t0) and math.isfinite(t1):
        return t0, t1  # the common case, without NumPy
    for name, value in (("t0", t0), ("t1", t1)):
        c = concrete(value)
        if c is not None and (c.dtype.kind not in "fiu" or c.ndim != 0):
            raise InputTypeError(f"t_span: {name} must be a real number, got {value!r}")
    c0, c1 = concrete(t0), concrete(t1)
    if c0 is not None and not np.isfinite(c0):
        raise InputError(f"t_span: t0 must be finite, got {c0}")
    if c1 is not None and not np.isfinite(c1) and not (allow_infinite_end and np.isinf(c1)):
        raise InputError(f"t_span: t1 must be finite (t1 = inf needs a terminal event), got {c1}")
    return t0, t1


def check_span_precision(t0: float, t1: float, dtype: Any) -> None:
    """Refuse a span that the working precision cannot hold: ends that round (in ``dtype``)
    to a span more than 1e-3 of itself away (in float32, (1e6, 1e6 + 1e-3) became an empty
    span, solved in 0 steps; (1e6, 1e6 + 0.1) one of 0.125)."""
    a, b = (float(np.asarray(t, dtype)) for t in (t0, t1))
    if abs(abs(b - a) - abs(t1 - t0)) > 1e-3 * abs(t1 - t0):
        name = jnp.dtype(dtype).name
        hint = " (float64: SIMKIT_ENABLE_X64=1)" if name == "float32" else ""
        raise InputError(f"t_span ({t0!r}, {t1!r}): in {name} its ends round to {a!r} and {b!r}, a span of "
                         f"{abs(b - a):.6g} instead of {abs(t1 - t0):.6g} (times near {max(abs(t0), abs(t1)):.3g} "
                         f"are resolved to {_eps(dtype) * max(abs(t0), abs(t1)):.2g}): measure time from t0, "
                         f"e.g. t_span (0, {t1 - t0:.6g}), or use a wider float{hint}")


def check_save_times(ts: Any, t0: Any, t1: Any) -> None:
    """Given save times: finite, inside ``[t0, t1]``, ordered from t0 towards t1 (host values)."""
    c, c0, c1 = concrete(ts), concrete(t0), concrete(t1)
    if c is None:
        return
    finite = np.isfinite(c)
    if not finite.all():
        raise InputError(f"saveat times must be finite; got {c[~finite][:5]}")
    if c0 is None or c1 is None:
        return
    lo, hi = min(c0, c1), max(c0, c1)
    slack = SAVE_TIME_SLACK * abs(hi - lo) if np.isfinite(hi - lo) else 0.0
    if c.min() < lo - slack or c.max() > hi + slack:  # (one pass each; the mask only to report)
        bad = (c < lo - slack) | (c > hi + slack)
        raise InputError(f"saveat times must lie in t_span [{c0}, {c1}]; got {c[bad][:5]} outside")
    backwards = c[1:] < c[:-1] if c1 >= c0 else c[1:] > c[:-1]
    if backwards.any():
        raise InputError("saveat times must be ordered from t0 towards t1")


@functools.lru_cache(maxsize=256)
def _rhs_signature(rhs: Callable, y_shape: tuple, y_dtype: Any, t_dtype: Any, param_struct: Any) -> tuple:
    """The shape and dtype of ``rhs(t, y, params)``, traced abstractly once per function and
    shapes: the rhs's (`check_rhs`) and each event function's (`check_events`)."""
    treedef, leaves = param_struct
    params = jax.tree_util.tree_unflatten(treedef, [jax.ShapeDtypeStruct(s, d) for s, d in leaves])
    out = jax.eval_shape(rhs, jax.ShapeDtypeStruct((), t_dtype), jax.ShapeDtypeStruct(y_shape, y_dtype), params)
    return out


def _param_struct(params: dict) -> tuple:
    """The hashable structure of ``params`` (tree and each leaf's shape and dtype), the key of
    `_rhs_signature`."""
    leaves, treedef = jax.tree_util.tree_flatten(params)
    return (treedef, tuple((v.shape, v.dtype) if isinstance(v, (np.ndarray, jax.Array)) else
                           (tuple(np.shape(v)), dtype_of(v)) for v in leaves))


def check_rhs(model: ODEModel, y0: Any, params: dict, dtype: Any) -> None:
    """The rhs output, traced once per (rhs, shapes): an array of y0's shape, not a
    broadcastable one, not a list; real unless the state is complex."""
    struct = _param_struct(params)
    y_dtype = dtype_of(y0)
    # (the rhs is hashable: `ODEModel` checks it, `simkit.params.check_function`)
    try:
        out = _rhs_signature(model.rhs, tuple(np.shape(y0)), y_dtype, dtype, struct)
    except TypeError as err:  # (JAX's tracer errors are TypeErrors): say what to write instead
        taught = teaching_error(err, model.rhs, f"model {model.name!r}")
        if taught is None:
            raise
        raise taught from err
    if not isinstance(out, jax.ShapeDtypeStruct):
        raise InputTypeError(
            f"model {model.name!r}: rhs must return one array of shape {tuple(np.shape(y0))}, got "
            f"{type(out).__name__} of {jax.tree_util.tree_structure(out).num_leaves} leaves "
            "(build it with jnp.stack([...]) or jnp.array([...]))")
    if out.shape != tuple(np.shape(y0)):
        raise ShapeError(f"model {model.name!r}: rhs returned shape {out.shape}, the state has shape "
                         f"{tuple(np.shape(y0))} (an output that only broadcasts to the state is refused)")
    if np.dtype(out.dtype).kind == "c" and np.dtype(y_dtype).kind != "c":
        raise InputTypeError(f"model {model.name!r}: rhs returned complex values for a real state; "
                             "give a complex y0 to integrate a complex system")
    out_dtype, state_dtype = np.dtype(out.dtype), np.dtype(y_dtype)
    if out_dtype.kind not in "fc" or np.finfo(out_dtype).bits < np.finfo(state_dtype).bits:
        # (found by probing: float32 values in a float64 run crashed the stiff kernels and
        # AutoSwitch with JAX's "cond branches must have equal output types", and the explicit
        # kernels rounded every derivative to float32, about 1e-7, whatever rtol asked)
        raise InputTypeError(
            f"model {model.name!r}: rhs returned {out_dtype.name} values for a {state_dtype.name} state: return "
            f"the state's dtype (a float32 or integer constant array in the rhs does this: build arrays with "
            "dtype=y.dtype, or jnp.asarray(...) of Python floats)")


def check_events(events: tuple[Event, ...], model: ODEModel, y0: Any, params: dict, dtype: Any) -> None:
    """Each event function returns one real scalar (traced once per function and shapes, as
    the rhs: an uncached trace cost 0.5 ms a call per event)."""
    struct = _param_struct(params)
    for i, ev in enumerate(events):
        try:  # (ev.fn is hashable: `Event` checks it)
            out = _rhs_signature(ev.fn, tuple(np.shape(y0)), dtype_of(y0), dtype, struct)
        except Exception as err:  # noqa: BLE001 - report which event failed to trace
            taught = teaching_error(err, ev.fn, f"model {model.name!r}", f"event {i}")
            if taught is not None:
                raise taught from err
            raise InputError(f"model {model.name!r}: event {i} ({getattr(ev.fn, '__name__', ev.fn)!r}) "
                             f"failed to evaluate at t0: {type(err).__name__}: {err}") from err
        if not isinstance(out, jax.ShapeDtypeStruct) or out.size != 1:
            raise ShapeError(f"model {model.name!r}: event {i} must return a scalar, got "
                             f"{getattr(out, 'shape', type(out).__name__)}")


def _resolved_bdf(solver: BDF, model: ODEModel, n_states: int) -> BDF:
    """A BDF with its pattern (given, or read from the rhs) and the model's preconditioner."""
    solver = solver.with_detected_pattern(model)
    if solver.jac_sparsity is not None:
        check_pattern_size(solver._band, n_states, repr(solver), model.name)
    return solver.with_model_preconditioner(model.preconditioner)


def choose_solver(model: ODEModel, solver: Any, n_states: int, complex_state: bool,
                  rtol: float | None = None) -> Any:
    """The one function that picks the method: the user's, else by stiffness, size and (for
    small stiff models) ``rtol`` when it is a number at prepare time
    (`simkit.kernels.solvers.default_stiff_kernel`)."""
    if model.diffusion is not None:
        if isinstance(solver, AbstractKernel):
            raise InputError(f"{solver!r} solves ODEs; for the stochastic model {model.name!r} "
                             "use a diffrax SDE solver (default diffrax.Euler())")
        dfx = diffrax_module()
        if solver is not None and not isinstance(solver, dfx.AbstractItoSolver):
            # an ODE solver or a Stratonovich one (Heun, Midpoint, EulerHeun, ...) converges to the
            # Stratonovich solution: GBM's E[log S] off by sigma^2 t / 2, with status success
            raise InputError(f"{type(solver).__name__}() does not converge to the solution of the Itô SDE that the "
                             f"stochastic model {model.name!r} is: use diffrax.Euler() (the default) or "
                             "diffrax.ItoMilstein()")
        return dfx.Euler() if solver is None else solver
    if solver is None:
        # (a stiff or unknown complex model goes to diffrax below, on (re, im), at any size: the
        # stiff kernels' Jacobian and LU are real, and the default crashed in jacfwd below 65 states)
        if n_states <= KERNEL_MAX_STATES and not (complex_state and model.stiff is not False):
            return AutoSwitch() if model.stiff is None else default_stiff_kernel(rtol) if model.stiff else Tsit5()
        if model.stiff is not False:  # stiff, or unknown (the safe side)
            if not complex_state:
                # the BDF kernel: one LU per step-size or order change, LAPACK above six states;
                # 3.6-6x faster than Kvaerno5 at 100-1600 states (benchmarks/bdf_size.py); above 256
                # states banded where the rhs's pattern is a narrow band, else matrix-free (100 with
                # the model's preconditioner; benchmarks/stiff_mol.py): resolved below
                return _resolved_bdf(BDF(), model, n_states)
            if n_states <= DENSE_JACOBIAN_MAX_STATES:
                return _diffrax_default(True)  # complex states: diffrax on (re, im)
            return _diffrax_default(True, matrix_free=True)
        return _diffrax_default(False)
    if isinstance(solver, type) and (issubclass(solver, AbstractKernel) or is_diffrax_solver(solver, cls=True)):
        raise InputTypeError(f"solver must be a solver object, e.g. {solver.__name__}(), not the class")
    if not (isinstance(solver, AbstractKernel) or is_diffrax_solver(solver)):
        raise InputTypeError(f"solver must be a simkit kernel (simkit.Tsit5(), simkit.Rodas4(), ...) or a "
                             f"diffrax solver object, got {solver!r}")
    if not isinstance(solver, AbstractKernel) and not isinstance(solver, diffrax_module().AbstractAdaptiveSolver):
        # diffrax's "Cannot use adaptive step sizes with a solver that does not provide error
        # estimates" named a setting that simkit.solve does not take
        raise InputError(f"{type(solver).__name__}() has no error estimate, and simkit.solve adapts its steps to "
                         "rtol/atol: use an adaptive method (simkit.Tsit5(), diffrax.Heun(), ...)")
    if isinstance(solver, BDF):
        solver = _resolved_bdf(solver, model, n_states)
    if complex_state and getattr(solver, "stiff", False):
        raise InputTypeError(f"{solver!r} does not support complex states (its Jacobian and LU are real); "
                             "use an explicit kernel (simkit.Tsit5(), simkit.DOP853()) or split the state "
                             "into real and imaginary parts")
    return solver


def solver_label(solver: Any) -> str:
    return repr(solver) if isinstance(solver, AbstractKernel) else f"diffrax.{type(solver).__name__}"


# -- the front door --------------------------------------------------------------------------


def as_ode(model: Any, y0: Any, owner: str) -> tuple[ODEModel, Any]:
    """``(model, y0)`` as an ODE: a PDEModel (duck-typed: the stencil package imports this
    module) as the method of lines on its flattened field (a field-shaped ``y0`` flattened),
    else the ODEModel itself; anything else an `InputTypeError` naming ``owner``."""
    if not isinstance(model, ODEModel) and callable(getattr(model, "to_ode", None)):
        if y0 is not None and np.shape(y0) == np.shape(model.u0):
            y0 = np.reshape(y0, -1)
        model = model.to_ode()
    if not isinstance(model, ODEModel):
        raise InputTypeError(f"{owner}expected an ODEModel or a PDEModel as the model, got {type(model).__name__}")
    return model, y0


# simkit's default relative tolerance (one object: a call that leaves it is raised to 100 machine
# epsilons without a warning where that is larger, in float32)
DEFAULT_RTOL: float = 1e-6


def prepare(
    model: Any,
    t_span: Sequence[float] | None = None,
    *,
    y0: Any = None,
    params: Mapping[str, Any] | None = None,
    saveat: Any = None,
    solver: Any = None,
    rtol: Any = DEFAULT_RTOL,
    atol: Any = 1e-9,
    max_steps: int = 100_000,
    max_step: Any = None,
    dt0: Any = None,
    events: Any = None,
    dense: bool = False,
    key: Any = None,
    batched: bool = False,
) -> SolvePlan:
    """Validate and normalise one solve's inputs (see the module docstring).

    With `batched` (used by `simkit.ensemble`), ``params`` values and ``y0`` may carry a
    leading member axis; shapes per member are the ensemble's to check."""
    model, y0 = as_ode(model, y0, "")
    dtype = _config.float_dtype()
    events_t = as_events(events)
    t0, t1 = time_span(model, t_span, allow_infinite_end=any(ev.terminal for ev in events_t))
    merged = merge_params(model.params, params, owner=f"model {model.name!r}", batched=batched)
    n_states = model.n_states
    y0 = model.y0 if y0 is None else y0
    if isinstance(y0, (str, bytes)) or (isinstance(y0, (list, tuple)) and not all(np.ndim(v) == 0 for v in y0)
                                         and not batched):
        raise InputTypeError(f"model {model.name!r}: y0 must be an array of shape ({n_states},), got {y0!r}")
    member_shape = np.shape(y0)[1:] if batched and np.ndim(y0) == 2 else np.shape(y0)
    if member_shape != (n_states,):
        extra = " (for a batch of initial states use simkit.ensemble or jax.vmap)" if np.ndim(y0) > 1 else ""
        names = list(model.state_names) if n_states <= 20 else "of the model"
        raise ShapeError(f"model {model.name!r}: y0 must have shape ({n_states},) for states {names}, "
                         f"got {np.shape(y0)}{extra}")
    y0_c = concrete(y0)
    if y0_c is not None:
        if y0_c.dtype.kind not in "fciub":
            raise InputTypeError(f"model {model.name!r}: y0 must be numeric, got dtype {y0_c.dtype}")
        if not np.isfinite(y0_c).all():
            raise ParameterError(f"model {model.name!r}: y0 is not finite: {y0_c}")
    complex_state = np.dtype(dtype_of(y0)).kind == "c"
    y_dtype = (jnp.complex128 if dtype == jnp.float64 else jnp.complex64) if complex_state else dtype
    check_number("rtol", rtol, nonnegative=True)
    check_atol(atol, model)
    c_rtol, c_atol = concrete(rtol), concrete(atol)
    atol_zero = c_atol is not None and bool((c_atol == 0).any())  # (for some state)
    if atol_zero and c_rtol is not None and c_rtol == 0:
        raise InputError("rtol and atol are both 0" + (" for the states " + str(
            [model.state_names[i] for i in np.flatnonzero(c_atol == 0)[:10]]) if np.ndim(c_atol) else "")
            + ": at least one tolerance must be positive")
    # a pure relative tolerance has no scale for a component at exactly 0: the first step was
    # NaN, every step rejected, and the failure blamed max_steps
    zero = (np.flatnonzero(((y0_c == 0) & (c_atol == 0)).reshape(-1, n_states).any(axis=0))
            if atol_zero and y0_c is not None else ())
    if len(zero):
        raise InputError(f"model {model.name!r}: atol = 0 (a pure relative tolerance) cannot be met by the states "
                         f"{[model.state_names[i] for i in zero[:10]]} that start at exactly 0: give atol > 0, "
                         "e.g. rtol times the size below which those states do not matter")
    eps, floor = _eps(dtype), rtol_floor(dtype)
    if c_rtol is not None and 0 < c_rtol < floor:
        if rtol is not DEFAULT_RTOL:  # (the default is raised in silence: float32's floor is 1.2e-5)
            warnings.warn(f"rtol = {float(c_rtol):g} is below 100 x the machine epsilon of {jnp.dtype(dtype).name} "
                          f"({eps:.3g}): raised to {floor:.3g}, as SciPy does", UserWarning, stacklevel=3)
        rtol = floor
    max_steps = check_count("max_steps", max_steps)
    sv = as_saveat(saveat, check_flag("dense", dense))
    span = None
    c0, c1 = concrete(t0), concrete(t1)
    if c0 is not None and c1 is not None:
        span = float(abs(c1 - c0))
    if sv.kind == "linspace" and span is not None and not math.isfinite(span):
        raise InputError("t1 = inf needs explicit save times (saveat=[...]) or saveat='steps'")
    if span is not None and 0 < span < 1e3 * eps * max(abs(float(c0)), abs(float(c1))):
        check_span_precision(float(c0), float(c1), dtype)
    if sv.kind == "ts":
        check_save_times(sv.ts, t0, t1)
    if max_step is not None and not (isinstance(max_step, float) and max_step == math.inf):  # inf: SciPy's "no limit"
        check_number("max_step", max_step, positive=True)
    if dt0 is not None:
        check_number("dt0", dt0)
        c = concrete(dt0)
        if c is not None and c == 0:
            raise InputError("dt0 must be non-zero")
        if c is not None and span is not None and abs(float(c)) > span > 0:
            raise InputError(f"dt0 = {float(c):g} is larger than the span |t1 - t0| = {span:g}")
    rows = max_steps + 1 if sv.steps else (sv.count or 0)
    need = rows * n_states * np.dtype(y_dtype).itemsize
    if over_budget(need):
        raise InputError(
            f"saving {rows} rows of {n_states} states needs {need / 2**30:.3g} GiB, above the memory budget "
            f"of {memory_budget() / 2**30:.3g} GiB (SIMKIT_MEMORY_BUDGET): "
            + ("lower max_steps or pass save times" if sv.steps else "save fewer times"))
    sde = model.diffusion is not None
    if sde and key is None:
        raise InputError(f"model {model.name!r} is stochastic: pass key=jax.random.key(...)")
    if not sde and key is not None:
        raise InputError(f"model {model.name!r} is deterministic: key is only for stochastic models")
    if sde:
        check_key(key, "solve()" if not batched else "ensemble()")
        if c0 is not None and c1 is not None and c1 < c0:
            raise InputError(f"model {model.name!r} is stochastic: it is integrated forwards in time only, "
                             f"got t1 = {float(c1):g} < t0 = {float(c0):g}")
    chosen = choose_solver(model, solver, n_states, complex_state,
                           rtol=float(c_rtol) if c_rtol is not None and np.ndim(c_rtol) == 0 else None)
    params_f = _floats(merged, dtype)
    if not batched:
        check_rhs(model, as_float(y0, y_dtype), params_f, dtype)
        if events_t:
            check_events(events_t, model, as_float(y0, y_dtype), params_f, dtype)
    check_jacobian_memory(chosen, n_states, y_dtype)
    if isinstance(chosen, AbstractKernel) and sv.dense:  # every accepted step's dense data is kept
        need = max_steps * (4 * n_states + 2) * np.dtype(y_dtype).itemsize
        if over_budget(need):
            raise InputError(f"dense output for up to max_steps = {max_steps} steps needs {need / 2**30:.3g} GiB, "
                             f"above the memory budget of {memory_budget() / 2**30:.3g} GiB "
                             "(SIMKIT_MEMORY_BUDGET): lower max_steps or pass save times")
    if isinstance(chosen, AbstractKernel):
        program: Any = KernelProgram(solver=chosen, rhs=model.rhs, events=events_t, max_steps=max_steps,
                                     save=sv.kind, n_save=sv.count or 0, dense=sv.dense,
                                     forward_tangents=declared_tangents())
    else:
        program = DiffraxProgram(rhs=model.rhs, solver=chosen,
                                 newton_rule=solver is None and model.stiff is not False,
                                 save=sv.kind, n_save=sv.count or 0, dense=sv.dense, events=events_t,
                                 max_steps=max_steps, diffusion=model.diffusion)
    save_ts = as_float(sv.ts, dtype) if sv.kind == "ts" else np.zeros((0,), dtype)
    if sv.kind == "linspace" and c0 is not None and c1 is not None:
        # the grid on the host, the one `solve_to_file` writes (`save_times.program_save_times`)
        save_ts = np.asarray(save_grid(as_float(t0, dtype), as_float(t1, dtype), sv.count), dtype)
    inputs_ok = traced_inputs_ok(t0=t0, t1=t1, save_kind=sv.kind, save_ts=save_ts, rtol=rtol, atol=atol,
                                 max_step=max_step, dt0=dt0, infinite_end=any(ev.terminal for ev in events_t),
                                 y0=None if batched else y0)
    if sv.kind == "ts":
        # times within `check_save_times`' rounding slack outside the span are its ends (a
        # time just past t1 was saved as inf by the kernels, and diffrax's own range check
        # made every saved time and state inf, with status SUCCESS); under jit too
        save_ts = clip_save_times(save_ts, t0, t1)
    direction = 1.0
    if c0 is not None and c1 is not None and c1 < c0:
        direction = -1.0
    if dt0 is None:
        dt0_arg = as_float(np.nan, dtype)
    elif concrete(dt0) is not None and (c0 is not None and c1 is not None):
        dt0_arg = as_float(direction * abs(float(concrete(dt0))), dtype)  # either sign means |dt0| forwards
    else:
        dt0_arg = jnp.abs(as_float(dt0, dtype)) * jnp.sign(as_float(t1, dtype) - as_float(t0, dtype))
    args = SolveArgs(
        t0=as_float(t0, dtype), t1=as_float(t1, dtype), y0=as_float(y0, y_dtype), params=params_f,
        save_ts=save_ts, rtol=floor_rtol(as_float(rtol, dtype), floor), atol=as_float(atol, dtype), dt0=dt0_arg,
        max_step=as_float(np.inf if max_step is None else max_step, dtype),
        key=_key_data(key) if sde else None,
    )
    return SolvePlan(program=program, args=args, model=model, solver=chosen, solver_name=solver_label(chosen),
                     saveat=sv, traced=is_traced(args), inputs_ok=inputs_ok)


def _floats(params: dict, dtype: Any) -> dict:
    if all(type(v) is float or isinstance(v, int) or (isinstance(v, (np.ndarray, np.generic))
                                                      and v.dtype.kind in "fiub") for v in params.values()):
        return {k: np.asarray(v, dtype) for k, v in params.items()}  # the common case, fast

    def one(v: Any) -> Any:
        kind = dtype_of(v)
        if jnp.issubdtype(kind, jnp.complexfloating):
            return as_float(v, jnp.complex128 if dtype == jnp.float64 else jnp.complex64)
        return as_float(v, dtype)

    return {k: jax.tree_util.tree_map(one, v) for k, v in params.items()}


def _key_data(key: Any) -> Any:
    """Raw key bits (uint32), so that a key is an ordinary traced array argument."""
    if jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return jnp.asarray(key, jnp.uint32)  # a raw key from jax.random.PRNGKey
