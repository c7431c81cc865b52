"""`solve_ivp`: SciPy's ``scipy.integrate.solve_ivp`` calling convention on simkit's engines.

A SciPy user's ``fun(t, y, *args)``, event functions with ``terminal``/``direction``
attributes, ``t_eval``, ``dense_output`` and SciPy's default tolerances go in; a result shaped
as SciPy's (``t``, ``y`` as ``(n, n_points)``, ``sol``, ``t_events``, ``y_events``,
``status``, ``message``, ``success``, ``nfev``, ``njev``, ``nlu``) comes out. Underneath it is
one `simkit.solve`: the function becomes an `ODEModel` whose parameters are the ``args``
(traced, so new values never recompile), and SciPy's method names become simkit's solvers
(`METHODS`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._solve import _failure_message, solve
from ._traced_checks import _takes_args
from .errors import InputError, InputTypeError
from .events import Event
from .kernels import BDF, DOP853, DOPRI5, AbstractKernel, AutoSwitch, RadauIIA5
from .model import ODEModel
from .params import is_traced
from .solution import Solution
from .solvers import diffrax_module, is_diffrax_solver, is_implicit
from .status import Status

__all__ = ["ODEResult", "DenseOutput", "solve_ivp", "METHODS"]


def _bosh3() -> Any:
    return diffrax_module().Bosh3()  # (diffrax imported on first use)


#: SciPy's method names and the simkit solver each runs on (a factory: the objects are built on use).
METHODS: dict[str, Callable[[], Any]] = {
    "RK45": DOPRI5,  # Dormand-Prince 5(4), SciPy's RK45 pair, simkit's fused kernel
    "RK23": _bosh3,  # Bogacki-Shampine 3(2), SciPy's RK23 pair, through diffrax
    "DOP853": DOP853,  # Hairer's DOP853, simkit's fused kernel
    "Radau": RadauIIA5,  # Radau IIA order 5 after RADAU5, simkit's fused kernel
    "BDF": BDF,  # variable-order BDF (orders 1-5), simkit's fused kernel
    "LSODA": AutoSwitch,  # automatic stiffness switching: Tsit5 <-> Rodas5P
}

_SUCCESS = "The solver successfully reached the end of the integration interval."  # SciPy's words
_EVENT = "A termination event occurred."
_TRACED = ("status is known only when the solve runs (the call is under jax.jit, jax.grad or jax.vmap): "
           "read .status (0: reached the end, 1: a terminal event, -1: failed) or .success")

# options of SciPy's solvers that have no effect here, with the reason (a warning, as SciPy warns)
_NO_EFFECT = {
    "jac": "simkit differentiates fun itself (jax.jacfwd): the Jacobian is exact",
    "lband": "simkit differentiates fun itself (jax.jacfwd); a banded BDF takes jac_sparsity",
    "uband": "simkit differentiates fun itself (jax.jacfwd); a banded BDF takes jac_sparsity",
    "min_step": "simkit's step control has no lower bound; a step that cannot move t ends the solve with status -1",
}


def _is_number_like(value: Any) -> bool:
    """A number or a numeric array (traced as a parameter); bools and other objects are static."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, float, complex, np.number, jax.Array)):
        return True
    return isinstance(value, np.ndarray) and value.dtype.kind in "iufc"


@dataclasses.dataclass(frozen=True)
class _WithArgs:
    """``fn(t, y, *args)`` as simkit's ``g(t, y, params)``: the numeric ``args`` are the
    parameters ``arg0, arg1, ...`` (traced); the others are held here, in ``static``, as
    ``(position, value)`` pairs. Equal for the same function, flags and static values, so a
    second call finds the compiled program again."""

    fn: Callable[..., Any]
    n_args: int
    static: tuple[tuple[int, Any], ...] = ()
    vectorized: bool = False
    output: bool = True  # the rhs (its list output stacked, its dtype the state's), not an event

    @property
    def __name__(self) -> str:  # (messages name the user's function)
        return getattr(self.fn, "__name__", type(self.fn).__name__)

    def __call__(self, t: Any, y: Any, params: dict[str, Any]) -> Any:
        fixed = dict(self.static)
        args = [fixed[i] if i in fixed else params[f"arg{i}"] for i in range(self.n_args)]
        if self.vectorized:  # SciPy's contract: y of shape (n, k) gives (n, k)
            return _as_array(self.fn(t, y[:, None], *args), y)[:, 0]
        out = self.fn(t, y, *args)
        return _as_array(out, y) if self.output else out


def _as_array(out: Any, y: Any) -> Any:
    """The rhs's output as an array of the state's dtype, as SciPy's ``np.asarray(fun(t, y),
    dtype=y.dtype)``: a list or tuple of scalars (SciPy's own examples) is stacked. A complex
    output for a real state is left for simkit's check to refuse."""
    out = jnp.asarray(out) if isinstance(out, (list, tuple)) else out
    if not hasattr(out, "dtype"):
        return out  # (not an array: simkit's rhs check names what it got)
    if jnp.iscomplexobj(out) and not jnp.iscomplexobj(y):
        return out
    if out.ndim == 0 and y.shape[:1] == (1,):  # a scalar for a one-state system: SciPy broadcasts it
        out = jnp.broadcast_to(out, y.shape)
    return out.astype(y.dtype) if out.dtype != y.dtype else out


@functools.partial(jax.tree_util.register_dataclass, data_fields=["solution"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class DenseOutput:
    """The continuous solution of `solve_ivp` (``dense_output=True``): SciPy's ``OdeSolution``.

    ``sol(t)`` is the state at time ``t``: shape ``(n,)`` for a scalar ``t``, ``(n, k)`` for
    ``k`` times (state first, as SciPy). The values come from the solver's own interpolant
    (`Solution.evaluate`). Unlike SciPy's, it does not extrapolate: a time outside
    ``[t_min, t_max]`` raises `InputError` (under a JAX transform, an error when the program
    runs).

    Attributes
    ----------
    solution : Solution
        The simkit solution holding the interpolant.

    Examples
    --------
    >>> import simkit
    >>> res = simkit.solve_ivp(lambda t, y: -0.5 * y, (0.0, 10.0), [2.0, 4.0], dense_output=True)
    >>> res.sol(1.0).shape, res.sol([1.0, 2.0, 3.0]).shape
    ((2,), (2, 3))
    """

    solution: Solution

    @property
    def t_min(self) -> Any:
        """The earliest time of the solved span (SciPy's ``OdeSolution.t_min``).

        Examples
        --------
        >>> import simkit
        >>> res = simkit.solve_ivp(lambda t, y: -y, (2.0, 0.0), [1.0], dense_output=True)  # backwards
        >>> float(res.sol.t_min), float(res.sol.t_max)
        (0.0, 2.0)
        """
        return jnp.minimum(self.solution.interpolation.t0, self.solution.t_final)

    @property
    def t_max(self) -> Any:
        """The latest time of the solved span (SciPy's ``OdeSolution.t_max``).

        Examples
        --------
        >>> import simkit
        >>> res = simkit.solve_ivp(lambda t, y: -y, (0.0, 3.0), [1.0], dense_output=True)
        >>> float(res.sol.t_max)
        3.0
        """
        return jnp.maximum(self.solution.interpolation.t0, self.solution.t_final)

    def __call__(self, t: Any) -> Any:
        """The state at ``t`` (model time unit): shape ``(n,)`` or ``(n,) + t.shape``."""
        out = jnp.moveaxis(self.solution.evaluate(t), -1, 0)
        return out if is_traced(t, out) else np.asarray(out)


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["t", "y", "sol", "t_events", "y_events", "status", "success", "nfev", "njev", "nlu", "solution"],
    meta_fields=["message"],
)
@dataclasses.dataclass(frozen=True)
class ODEResult:
    """What `solve_ivp` returns: SciPy's ``OdeResult`` fields (attribute or ``res["y"]``).

    Called outside a JAX transform, arrays are NumPy arrays, trimmed as SciPy trims them.
    Under ``jax.jit``, ``jax.grad`` or ``jax.vmap`` (where an input is traced) every field is a
    JAX array of a fixed shape (see `solve_ivp`, "Under JAX transforms"), and ``message``
    is a fixed text, since the status is not known until the program runs.

    Attributes
    ----------
    t : array, shape (n_points,)
        Time points (the model's time unit): ``t_eval``, or every accepted step's end.
    y : array, shape (n, n_points)
        The state at ``t``, one row per state component (SciPy's layout: the transpose of
        `Solution.ys`).
    sol : DenseOutput or None
        The continuous solution (``dense_output=True``), else None.
    t_events : list of array or None
        Per event, the times of its recorded crossings, shape ``(n_crossings,)``; None
        without events.
    y_events : list of array or None
        Per event, the states there, shape ``(n_crossings, n)``; None without events.
    status : int
        -1 the solver failed, 0 it reached the end of ``t_span``, 1 a terminal event stopped it.
    message : str
        The status in words (for a failure: where, after how many steps, and what to try).
    success : bool
        ``status >= 0``.
    nfev : int
        Evaluations of ``fun`` (the steps' stages and the first-step estimate; Jacobians come
        from ``jax.jacfwd`` and are not counted here).
    njev, nlu : int or None
        Jacobians formed and LU factorisations, where the method counts them (``BDF``); 0
        for explicit methods; None where the method does not count them (``Radau``,
        ``LSODA``).
    solution : Solution
        The same solve as a simkit `Solution` (``ts``, ``ys`` as ``(n_points, n)``, names,
        ``stats``, plotting, ``to_xarray``).

    Examples
    --------
    >>> import simkit
    >>> res = simkit.solve_ivp(lambda t, y: -0.5 * y, (0.0, 10.0), [2.0, 4.0, 8.0])
    >>> res.y.shape == (3, res.t.size), res.status, res.success
    (True, 0, True)
    """

    t: Any
    y: Any
    sol: DenseOutput | None
    t_events: list[Any] | None
    y_events: list[Any] | None
    status: Any
    message: str
    success: Any
    nfev: Any
    njev: Any
    nlu: Any
    solution: Solution

    def __getitem__(self, name: str) -> Any:
        """A field by name, as SciPy's result (a dict) allows: ``res["y"]``."""
        if name not in _FIELDS:
            raise KeyError(f"ODEResult has no field {name!r}; fields are {list(_FIELDS)}")
        return getattr(self, name)

    def keys(self) -> list[str]:
        """The field names (SciPy's result is a dict).

        Examples
        --------
        >>> import simkit
        >>> res = simkit.solve_ivp(lambda t, y: -y, (0.0, 1.0), [1.0])
        >>> res.keys()[:5], res["status"]
        (['message', 'success', 'status', 't', 'y'], 0)
        """
        return list(_FIELDS)

    def __repr__(self) -> str:
        return "\n".join(f"{name:>9}: {_short(getattr(self, name))}" for name in _FIELDS)


_FIELDS = ("message", "success", "status", "t", "y", "sol", "t_events", "y_events", "nfev", "njev", "nlu")


def _short(value: Any) -> str:
    if isinstance(value, (np.ndarray, jax.Array)) and np.size(value) > 6:
        return f"array of shape {np.shape(value)}"
    if isinstance(value, DenseOutput):
        return "DenseOutput (call it: sol(t))"
    return repr(value)


def _method(method: Any) -> Any:
    """The simkit solver for SciPy's ``method``: a name of `METHODS`, or a simkit kernel or
    diffrax solver object as it is."""
    if isinstance(method, str):
        if method not in METHODS:
            raise InputError(f"solve_ivp: method must be one of {list(METHODS)} (or a simkit solver object such as "
                             f"simkit.Tsit5()), got {method!r}")
        return METHODS[method]()
    if isinstance(method, AbstractKernel) or is_diffrax_solver(method):
        return method
    raise InputTypeError(f"solve_ivp: method must be one of {list(METHODS)} or a simkit solver object (e.g. "
                         f"simkit.Tsit5()); SciPy's OdeSolver classes do not run here, got {method!r}")


def _split_args(args: Any, owner: str) -> tuple[dict[str, Any], tuple[tuple[int, Any], ...], int]:
    """SciPy's ``args`` as traced parameters ``{"arg<i>": value}`` (numbers and numeric
    arrays) and static ``(i, value)`` pairs (bools and other hashable objects)."""
    if args is None:
        return {}, (), 0
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        # SciPy: "Supplied 'args' cannot be unpacked"; a single value needs a 1-tuple
        raise InputTypeError(f"{owner}: args must be a tuple of the extra arguments of fun, e.g. args=(1.5,) for "
                             f"one, got {args!r}")
    params, static = {}, []
    for i, value in enumerate(args):
        if _is_number_like(value) or (isinstance(value, (list, tuple)) and _is_number_like(np.asarray(value))):
            params[f"arg{i}"] = value if isinstance(value, jax.Array) else np.asarray(value)
        else:
            try:
                hash(value)
            except TypeError:
                raise InputTypeError(
                    f"{owner}: args[{i}] is a {type(value).__name__}, neither numbers (traced) nor hashable (held "
                    f"with the compiled program): pass numbers or arrays, or bind it in a function defined once, "
                    f"e.g. f = functools.partial(fun, obj)") from None
            static.append((i, value))
    return params, tuple(static), len(args)


def _placeholder(value: Any) -> np.ndarray:
    """A zero of ``value``'s shape and kind (real or complex): the model's default, overridden
    by the call's value (so a traced value never becomes part of the model)."""
    kind = np.complex128 if jnp.iscomplexobj(value) else np.float64
    return np.zeros(np.shape(value), kind)


def _events(events: Any, n_args: int, static: tuple, max_records: int | None) -> tuple[Event, ...] | None:
    """SciPy's ``events`` (a callable or a sequence; ``terminal``/``direction`` read as SciPy
    reads them: a missing ``terminal`` is False, ``direction`` by its sign) as simkit Events."""
    if events is None:
        return None
    if callable(events) or isinstance(events, Event):
        events = [events]
    if isinstance(events, (str, bytes)) or not isinstance(events, Sequence):
        raise InputTypeError(f"solve_ivp: events must be a callable event(t, y, *args) or a sequence of them, "
                             f"got {events!r}")
    out = []
    for i, ev in enumerate(events):
        if isinstance(ev, Event):  # its fn written SciPy's way, event(t, y, *args)
            fn, direction, terminal, records = ev.fn, ev.direction, ev.terminal, ev.max_records
        elif callable(ev):
            fn = ev
            terminal = getattr(ev, "terminal", False)
            terminal = 0 if terminal is None else terminal  # (SciPy: None is not terminal)
            raw = getattr(ev, "direction", 0)
            direction = int(np.sign(float(raw))) if raw is not None else 0
            records = None
        else:
            raise InputTypeError(f"solve_ivp: events[{i}] must be a callable event(t, y, *args), got {ev!r}")
        if _takes_args(fn, 2 + n_args) is False:
            raise InputTypeError(f"solve_ivp: event {i} ({getattr(fn, '__name__', fn)!r}) must take (t, y) and the "
                                 f"{n_args} args, as SciPy calls it: event(t, y, *args); e.g. "
                                 "`def hit_ground(t, y, *args): return y[0]`")
        records = max_records if max_records is not None else records
        extra = {} if records is None else {"max_records": records}
        out.append(Event(_WithArgs(fn, n_args, static, output=False), direction=direction, terminal=terminal, **extra))
    return tuple(out)


def solve_ivp(
    fun: Callable[..., Any],
    t_span: Sequence[float],
    y0: Any,
    method: str | Any = "RK45",
    t_eval: Any = None,
    dense_output: bool = False,
    events: Any = None,
    vectorized: bool = False,
    args: Sequence[Any] | None = None,
    rtol: float = 1e-3,
    atol: float | Any = 1e-6,
    max_step: float = math.inf,
    first_step: float | None = None,
    **options: Any,
) -> ODEResult:
    """Solve an initial value problem as ``scipy.integrate.solve_ivp`` does, on simkit's engines.

    Written for code that calls SciPy: the same arguments, defaults and result fields.
    The function and the events are traced by JAX, so they are written with ``jax.numpy``
    (``jnp.sin``, not ``np.sin``; ``jnp.where``, not a Python ``if`` on the state); nothing
    else changes. For new code, `simkit.solve` with an `ODEModel` gives named states and
    parameters; `docs/coming-from-scipy.md` maps one onto the other.

    Parameters
    ----------
    fun : callable
        ``fun(t, y, *args) -> dy/dt``: ``t`` a scalar (any time unit), ``y`` the state of
        shape ``(n,)``; returns an array of shape ``(n,)`` or a list/tuple of ``n`` scalars.
    t_span : (float, float)
        ``(t0, tf)``; ``tf < t0`` integrates backwards.
    y0 : array_like, shape (n,)
        Initial state (complex for a complex system: explicit methods only).
    method : str or solver object
        ``"RK45"`` (default; simkit's `DOPRI5` kernel, the same Dormand–Prince pair),
        ``"RK23"`` (Bogacki–Shampine 3(2), diffrax's ``Bosh3``), ``"DOP853"`` (`DOP853`),
        ``"Radau"`` (`RadauIIA5`), ``"BDF"`` (`BDF`), ``"LSODA"`` (`AutoSwitch`: detects
        stiffness and switches between Tsit5 and Rodas5P, as LSODA switches between Adams and
        BDF), or any simkit kernel or diffrax solver object.
    t_eval : array_like, shape (n_points,), optional
        Times at which to store the solution, inside ``t_span`` and ordered from ``t0``; by
        default every accepted step's end.
    dense_output : bool
        Return the continuous solution as ``sol`` (a `DenseOutput`).
    events : callable or list of callables, optional
        ``event(t, y, *args) -> float``; a zero crossing is an event. SciPy's attributes are
        read: ``event.terminal`` (True, or a count of crossings, stops the solve; default
        False) and ``event.direction`` (>0: upward crossings only, <0: downward only, 0:
        both). A `simkit.Event` whose function takes ``(t, y, *args)`` also works.
    args : tuple, optional
        Extra arguments of ``fun`` and the events. Numbers and numeric arrays are traced (new
        values do not recompile, and ``jax.grad`` reaches them); bools and other hashable
        objects are fixed in the compiled program.

    Other Parameters
    ----------------
    vectorized : bool
        ``fun`` takes ``y`` of shape ``(n, k)`` and returns ``(n, k)``: it is called with
        ``k = 1``.
    rtol, atol : float (atol: or array of shape (n,))
        Relative and absolute tolerances, SciPy's defaults 1e-3 and 1e-6.
    max_step : float
        The largest step (default: no limit).
    first_step : float, optional
        The first step's size (default: Hairer's estimate, as SciPy's).
    **options
        ``max_steps`` (simkit's step budget, default 100,000; a solve needing more ends with
        status -1), ``max_records`` (crossings kept per event, default 64; more end the solve
        with status -1), ``jac_sparsity`` (the Jacobian's sparsity pattern, for ``"BDF"``).
        SciPy's ``jac``, ``lband``, ``uband`` and ``min_step`` have no effect (a warning, as
        SciPy warns): the Jacobian comes from ``jax.jacfwd`` of ``fun``.

    Returns
    -------
    ODEResult
        ``t`` ``(n_points,)``, ``y`` ``(n, n_points)``, ``sol``, ``t_events``, ``y_events``,
        ``status`` (-1 failed, 0 reached ``tf``, 1 a terminal event), ``message``,
        ``success``, ``nfev``, ``njev``, ``nlu``, and ``solution`` (the simkit `Solution`).
        A failure is reported in ``status`` and ``message``, not raised, as in SciPy.

    Raises
    ------
    InputError, InputTypeError
        Bad arguments (``ValueError``/``TypeError`` subclasses), before compiling: an unknown
        method or option, ``args`` not a tuple, ``fun`` or an event not accepting
        ``(t, y, *args)``, ``fun`` written with a Python ``if`` or NumPy on the state (the
        message says what to write instead), ``t_eval`` outside ``t_span``.

    Under JAX transforms
    --------------------
    ``jax.jit``, ``jax.grad`` and ``jax.vmap`` reach ``y0``, ``t_span``, the numeric ``args``,
    ``t_eval``, ``rtol``, ``atol``, ``max_step`` and ``first_step``. There, shapes are fixed
    before the solve runs: ``t``/``y`` have ``len(t_eval)`` points (the points after a
    terminal event hold ``t = inf`` and the event's state), or, without ``t_eval``,
    ``max_steps + 1`` points (``inf`` past the last step): pass ``t_eval`` under a transform.
    ``t_events[i]``/``y_events[i]`` have ``max_records`` rows (``inf`` past the last
    crossing). ``status``, ``success``, ``nfev``, ``njev`` and ``nlu`` are arrays; ``message``
    is a fixed text. These need concrete values: ``method``, ``events``, ``dense_output``,
    ``vectorized``, the options, and ``t_eval``'s length.

    Differences from SciPy
    ----------------------
    An event exactly zero at ``t0`` does not fire there (SciPy's does, in the first step);
    ``sol(t)`` does not extrapolate outside the solved span; ``rtol`` is a scalar; arrays
    are computed in float64 (simkit's precision policy), whatever the input's dtype. ``fun``
    is compiled once per function: what it reads besides its arguments (a global array) is
    read then, and a later change in place is not seen; pass values that change in ``args``.

    Examples
    --------
    SciPy's exponential decay example, unchanged:

    >>> import simkit
    >>> def exponential_decay(t, y): return -0.5 * y
    >>> res = simkit.solve_ivp(exponential_decay, [0, 10], [2, 4, 8])
    >>> res.y[:, -1].round(4).tolist()
    [0.0135, 0.027, 0.054]

    Its Lotka–Volterra example, with ``args`` and dense output:

    >>> def lotkavolterra(t, z, a, b, c, d):
    ...     x, y = z
    ...     return [a*x - b*x*y, -c*y + d*x*y]
    >>> res = simkit.solve_ivp(lotkavolterra, [0, 15], [10, 5], args=(1.5, 1, 3, 1), dense_output=True)
    >>> res.sol([0.0, 15.0]).shape
    (2, 2)
    """
    owner = "solve_ivp"
    max_steps = options.pop("max_steps", 100_000)
    max_records = options.pop("max_records", None)
    jac_sparsity = options.pop("jac_sparsity", None)
    unused = sorted(set(options) - set(_NO_EFFECT))
    if unused:
        raise InputTypeError(f"{owner}: unknown options {unused}; it takes SciPy's arguments and the options "
                             f"max_steps, max_records, jac_sparsity (and ignores {sorted(_NO_EFFECT)})")
    for name in options:
        warnings.warn(f"{owner}: option {name!r} has no effect: {_NO_EFFECT[name]}", UserWarning, stacklevel=2)
    if not callable(fun):
        raise InputTypeError(f"{owner}: fun must be a callable fun(t, y, *args), got {fun!r:.80}")
    solver = _method(method)
    if jac_sparsity is not None:
        if not isinstance(solver, BDF):
            raise InputError(f"{owner}: jac_sparsity is used by method='BDF' only, got method={method!r}")
        solver = BDF(jac_sparsity=jac_sparsity)
    params, static, n_args = _split_args(args, owner)
    name = getattr(fun, "__name__", type(fun).__name__)
    if _takes_args(fun, 2 + n_args) is False:
        extra = f" and the {n_args} args" if n_args else ""
        raise InputTypeError(
            f"{owner}: fun ({name}) must take (t, y){extra}, as SciPy calls it: fun(t, y, *args); it does not"
            + ("" if n_args else " (its extra arguments need args=(...), e.g. args=(1.5, 1.0))")
            + ". E.g. `def fun(t, y, a): return -a * y` with args=(0.5,)")
    if isinstance(y0, (list, tuple)) and any(isinstance(v, jax.Array) for v in y0):
        y0 = jnp.stack([jnp.asarray(v) for v in y0])  # (a list holding traced values)
    model = ODEModel(rhs=_WithArgs(fun, n_args, static, vectorized=bool(vectorized)),
                     params={k: _placeholder(v) for k, v in params.items()}, y0=_placeholder(y0), name=name)
    saveat = "steps" if t_eval is None else (t_eval if isinstance(t_eval, jax.Array) else np.asarray(t_eval, float))
    sol = solve(model, tuple(t_span) if isinstance(t_span, list) else t_span, y0=y0, params=params, saveat=saveat,
                solver=solver, rtol=rtol, atol=atol, max_steps=max_steps, max_step=max_step, dt0=first_step,
                events=_events(events, n_args, static, max_records), dense=dense_output, throw=False)
    return _result(sol, model, solver, t_span, max_step, events is not None, dense_output)


def _result(sol: Solution, model: ODEModel, solver: Any, t_span: Any, max_step: Any, with_events: bool,
            dense: bool) -> ODEResult:
    """The SciPy-shaped result of a solve (`ODEResult`)."""
    stats = sol.stats
    explicit = not getattr(solver, "stiff", False) and not is_implicit(solver)
    counts = {name: (stats[key] if key in stats else (0 if explicit else None))
              for name, key in (("njev", "num_jacobians"), ("nlu", "num_lu_decompositions"))}
    nfev = stats.get("num_rhs")
    if is_traced(sol.status, sol.ts, sol.ys):
        status = jnp.where(sol.status > int(Status.EVENT), -1, sol.status)
        return ODEResult(
            t=sol.ts, y=jnp.swapaxes(sol.ys, -1, -2), sol=DenseOutput(sol) if dense else None,
            t_events=[sol.event_ts[..., i, :] for i in range(np.shape(sol.event_ts)[-2])] if with_events else None,
            y_events=[sol.event_ys[..., i, :, :] for i in range(np.shape(sol.event_ys)[-3])] if with_events else None,
            status=status, message=_TRACED, success=status >= 0, nfev=nfev, solution=sol, **counts)
    code = int(np.asarray(sol.status))
    ts, ys = np.asarray(sol.ts), np.asarray(sol.ys)
    reached = np.isfinite(ts)  # (after a failure, save times never reached are inf)
    if code <= int(Status.EVENT):
        message = _SUCCESS if code == Status.SUCCESS else _EVENT
    else:
        message = _failure_message(model, sol, t_span[0], t_span[1], solver, code, max_step=max_step)
    status = -1 if code > int(Status.EVENT) else code
    return ODEResult(
        t=ts[reached], y=ys[reached].T, sol=DenseOutput(sol) if dense else None,
        t_events=[np.asarray(t) for t in sol.t_events] if with_events else None,
        y_events=[np.asarray(y) for y in sol.y_events] if with_events else None,
        status=status, message=message, success=status >= 0,
        nfev=None if nfev is None else int(np.asarray(nfev)),
        solution=sol, **{k: None if v is None else int(np.asarray(v)) for k, v in counts.items()})

