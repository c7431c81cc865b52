"""``solve_ivp`` wrapper and the tolerance-normalised comparison."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._prepare import as_ode, check_save_times, time_span
from ..errors import InputError, ParameterError, ShapeError, SolveError
from ..save_times import as_saveat, save_grid
from ..model import ODEModel, Params

IMPLICIT = ("Radau", "BDF", "LSODA")
METHODS = ("RK23", "RK45", "DOP853") + IMPLICIT


@dataclasses.dataclass(frozen=True)
class ReferenceSolution:
    """SciPy's answer to `solve_ivp`, laid out as a simkit `Solution` (time first).

    ``ref["x"]`` is the column of state ``x``, as ``sol["x"]`` of a `Solution`.

    Attributes
    ----------
    ts : np.ndarray, shape (n_save,)
        Save times, in the model's time unit.
    ys : np.ndarray, shape (n_save, n_states)
        The state at ``ts``, one column per state (the transpose of SciPy's ``y``).
    state_names : tuple of str
        The model's state names, in column order.
    method : str
        The SciPy method that ran (``"DOP853"``, ``"Radau"``, ...).
    nfev, njev : int
        SciPy's counts of rhs and Jacobian evaluations.
    status : int
        SciPy's status: 0 (reached the end of ``t_span``); a failure raises instead.
    message : str
        SciPy's message.

    Examples
    --------
    >>> from simkit import models, reference
    >>> ref = reference.solve_ivp(models.get("lotka_volterra"), (0.0, 1.0), saveat=5)
    >>> ref.ys.shape, ref.state_names, ref["prey"].shape
    ((5, 2), ('prey', 'predator'), (5,))
    """

    ts: np.ndarray
    ys: np.ndarray
    state_names: tuple[str, ...]
    method: str
    nfev: int
    njev: int
    status: int
    message: str

    def __getitem__(self, name: str) -> np.ndarray:
        return self.ys[:, self.state_names.index(name)]


@functools.lru_cache(maxsize=64)
def _compiled(rhs: Any) -> tuple[Any, Any]:
    f = jax.jit(lambda t, y, p: rhs(t, y, p))
    jac = jax.jit(jax.jacfwd(lambda t, y, p: rhs(t, y, p), argnums=1))
    return f, jac


def scipy_functions(model: ODEModel, params: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
    """The model's rhs and its ``jax.jacfwd`` Jacobian as NumPy functions of ``(t, y)``, for
    SciPy's solvers, computed on the host's CPU whatever JAX's default device is.

    SciPy calls them one small evaluation at a time: on an accelerator each call would be a
    round trip to the device (and on a TPU float64 is emulated), so the parameters are
    committed to the first CPU device and each call runs there. Each function is compiled
    once per rhs (shared by every call with other numbers).

    Parameters
    ----------
    model : ODEModel
        The model; its ``rhs(t, y, params)``.
    params : mapping, optional
        Parameter values overriding the model's defaults.

    Returns
    -------
    tuple of callables
        ``fun(t, y) -> (n_states,)`` and ``jac(t, y) -> (n_states, n_states)``, NumPy float64
        (``t`` in the model's time unit, ``y`` ``(n_states,)``).

    Examples
    --------
    >>> import numpy as np
    >>> from simkit import models
    >>> from simkit.reference import scipy_functions
    >>> fun, jac = scipy_functions(models.get("lotka_volterra"))
    >>> fun(0.0, np.array([10.0, 5.0])).shape, jac(0.0, np.array([10.0, 5.0])).shape
    ((2,), (2, 2))
    """
    from ..placement import _host

    f, jac = _compiled(model.rhs)
    p = {k: np.asarray(v, np.float64) for k, v in model.merged_params(params).items()}
    host = _host()
    p = jax.device_put(p, host) if host is not None else {k: jnp.asarray(v) for k, v in p.items()}
    return (lambda t, y: np.asarray(f(t, y, p))), (lambda t, y: np.asarray(jac(t, y, p)))


@functools.lru_cache(maxsize=1)
def _zeroed_bdf() -> type:
    from scipy.integrate import BDF

    class ZeroedBDF(BDF):
        """SciPy's BDF with the unwritten rows of its difference table zeroed.

        SciPy allocates the table ``D`` (MAX_ORDER + 3, n) with ``np.empty`` and writes rows 0
        and 1 only; its first step computes ``D[order + 2] = d - D[order + 1]`` from row 2,
        never written. The value is overwritten before it is used, so the solution does not
        depend on it, but when that memory happens to hold a signalling-NaN bit pattern NumPy
        warns "invalid value encountered in subtract" (an error where warnings are errors:
        simkit's CI once; PySDM#293). Zeroing the rows is what initialised memory would give.
        """

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.D[2:] = 0.0

    return ZeroedBDF


def scipy_method(method: str) -> Any:
    """What to pass as ``scipy.integrate.solve_ivp``'s ``method`` for SciPy's ``method``.

    The name itself, except ``"BDF"``: SciPy's BDF class with the unwritten rows of its
    difference table zeroed (SciPy leaves them uninitialised, which can make NumPy warn
    "invalid value encountered in subtract"; the steps and results are the same).

    Parameters
    ----------
    method : str
        One of SciPy's method names: ``"RK23"``, ``"RK45"``, ``"DOP853"``, ``"Radau"``,
        ``"BDF"``, ``"LSODA"``.

    Returns
    -------
    str or type
        ``method``, or a subclass of ``scipy.integrate.BDF`` for ``"BDF"``.

    Examples
    --------
    >>> import numpy as np, scipy.integrate
    >>> from simkit.reference import scipy_method
    >>> scipy_method("Radau")
    'Radau'
    >>> out = scipy.integrate.solve_ivp(lambda t, y: -y, (0.0, 1.0), [1.0], method=scipy_method("BDF"),
    ...                                 rtol=1e-8, atol=1e-10)
    >>> bool(abs(out.y[0, -1] - np.exp(-1.0)) < 1e-6)
    True
    """
    return _zeroed_bdf() if method == "BDF" else method


def solve_ivp(
    model: ODEModel,
    t_span: Sequence[float] | None = None,
    *,
    y0: Any = None,
    params: Params | None = None,
    saveat: int | Sequence[float] | None = None,
    method: str = "DOP853",
    rtol: float = 1e-12,
    atol: float = 1e-12,
    use_jacobian: bool = True,
    **options: Any,
) -> ReferenceSolution:
    """Solve ``model`` with ``scipy.integrate.solve_ivp``: the reference simkit is checked against.

    The model's rhs is jitted and called with NumPy arrays; the implicit methods get its
    ``jax.jacfwd`` Jacobian. A `PDEModel` is solved by the method of lines, as `simkit.solve`
    takes it.

    Parameters
    ----------
    model : ODEModel or PDEModel
        The model (deterministic: a stochastic model is refused).
    t_span : (float, float), optional
        ``(t0, t1)`` in the model's time unit, finite; default ``model.t_span``.
    y0 : array_like, shape (n_states,), optional
        Initial state; default ``model.y0``.
    params : dict, optional
        Parameter overrides by name, merged with ``model.params`` (unknown names are refused).
    saveat : int or array_like, optional
        A count of evenly spaced times from ``t0`` to ``t1`` (default 101) or an array of
        times inside the span, as `simkit.solve`'s ``saveat`` (not ``"steps"``).

    Other Parameters
    ----------------
    method : str
        SciPy's method: ``"RK23"``, ``"RK45"``, ``"DOP853"`` (default), ``"Radau"``,
        ``"BDF"`` or ``"LSODA"``.
    rtol, atol : float
        SciPy's tolerances; default 1e-12 both (a reference much tighter than the solve it
        checks).
    use_jacobian : bool
        Pass the ``jax.jacfwd`` Jacobian to ``"Radau"``, ``"BDF"`` and ``"LSODA"`` (default
        True; False lets SciPy difference it).
    **options
        Passed to SciPy (e.g. ``max_step``, ``first_step``).

    Returns
    -------
    ReferenceSolution
        ``ts`` ``(n_save,)``, ``ys`` ``(n_save, n_states)`` and SciPy's counters.

    Raises
    ------
    InputError
        An unknown method, a non-finite ``t_span``, ``y0`` or parameter (a `ParameterError`),
        ``y0`` of the wrong shape (a `ShapeError`), a stochastic model, save times outside
        the span.
    SolveError
        SciPy failed (its message is included).

    Examples
    --------
    >>> import numpy as np
    >>> from simkit import models, reference
    >>> ref = reference.solve_ivp(models.get("lotka_volterra"), (0.0, 10.0), saveat=11, method="DOP853")
    >>> ref.ts.shape, ref.ys.shape, ref.status
    ((11,), (11, 2), 0)
    >>> stiff = reference.solve_ivp(models.get("robertson"), (0.0, 40.0), saveat=[40.0], method="Radau",
    ...                             rtol=1e-10, atol=1e-14)
    >>> float(np.round(stiff["y1"][-1], 4))
    0.7158
    """
    from scipy.integrate import solve_ivp as scipy_solve_ivp

    model, y0 = as_ode(model, y0, "reference.solve_ivp: ")  # a PDEModel as `simkit.solve` takes it
    if model.diffusion is not None:  # SciPy integrates the drift alone: the noise was dropped in silence
        raise InputError(f"reference.solve_ivp: model {model.name!r} is stochastic (it has a diffusion); "
                         "SciPy's solve_ivp integrates ODEs only")
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    if t_span is not None and np.ndim(t_span) == 1 and len(t_span) == 2 and not np.all(np.isfinite(t_span)):
        raise InputError(f"reference.solve_ivp: t_span must be finite, got {tuple(t_span)} for {model.name!r}")
    t0, t1 = (float(t) for t in time_span(model, t_span))  # a pair of finite numbers
    # SciPy never returns on a NaN state (every step is rejected): refuse non-finite input first
    given = params if isinstance(params, Mapping) else {}
    bad = sorted(k for k, v in {**model.params, **given}.items()
                 if not isinstance(v, (str, bytes)) and not np.all(np.isfinite(np.asarray(v, dtype=float))))
    merged = {**model.params, **given} if bad else model.merged_params(params)
    if bad:
        raise ParameterError(f"reference.solve_ivp: parameter(s) {bad} of {model.name!r} are not "
                             f"finite: {({k: merged[k] for k in bad})}")
    y_init = np.asarray(model.y0 if y0 is None else y0, dtype=np.float64)
    if y_init.shape != (model.n_states,):
        raise ShapeError(f"reference.solve_ivp: y0 of {model.name!r} must have shape ({model.n_states},), "
                         f"got {y_init.shape}")
    if not np.all(np.isfinite(y_init)):
        states = [n for n, v in zip(model.state_names, np.atleast_1d(y_init)) if not np.all(np.isfinite(v))]
        raise InputError(f"reference.solve_ivp: y0 of {model.name!r} is not finite (states {states}): {y_init}")
    save = as_saveat(saveat)  # the same save-time rules as simkit.solve
    if save.steps:
        raise InputError("reference.solve_ivp: saveat must be a count or an array of times, not 'steps'")
    t_eval = save_grid(t0, t1, save.ts) if save.kind == "linspace" else np.asarray(save.ts, float)
    check_save_times(t_eval, t0, t1)
    fun, jac = scipy_functions(model, merged)
    kwargs = dict(options)
    if use_jacobian and method in IMPLICIT:
        kwargs["jac"] = jac
    out = scipy_solve_ivp(
        fun, (t0, t1), y_init, method=scipy_method(method), t_eval=t_eval, rtol=rtol, atol=atol, **kwargs
    )
    if out.status < 0:
        raise SolveError(f"scipy {method} failed on {model.name!r}: {out.message}")
    return ReferenceSolution(
        ts=out.t,
        ys=out.y.T,
        state_names=model.state_names,
        method=method,
        nfev=int(out.nfev),
        njev=int(out.njev),
        status=int(out.status),
        message=str(out.message),
    )


def compare(solution: Any, reference: Any, rtol: float, atol: float) -> dict[str, float]:
    """Per-state max error of ``solution`` against ``reference``, normalised by tolerance.

    ``e = max_t |y - y_ref| / (atol + rtol * |y_ref|)`` for each state; ``e < 5`` is the
    usual pass mark for a solve at ``(rtol, atol)`` against a much tighter reference
    (SciPy's own test suite uses this). Both must be saved at the same times. A state that
    is NaN anywhere scores ``inf`` (a NaN score would be dropped by Python's ``max`` over
    the states: a check read a NaN state as passing).

    Parameters
    ----------
    solution : Solution or ReferenceSolution
        The result to check: anything with ``ts`` ``(n_save,)``, ``ys`` ``(n_save, n_states)``
        and ``state_names``.
    reference : Solution or ReferenceSolution
        The reference, saved at the same times (``ts`` equal to 1e-12).
    rtol, atol : float
        The tolerances ``solution`` was computed at (``atol`` in the state's units).

    Returns
    -------
    dict
        ``{state name: e}``, each a float (``inf`` for a state that is NaN somewhere).

    Raises
    ------
    InputError
        The two are not saved at the same times.

    Examples
    --------
    >>> import simkit
    >>> from simkit import models, reference
    >>> lv = models.get("lotka_volterra")
    >>> sol = simkit.solve(lv, (0.0, 10.0), saveat=11, rtol=1e-6, atol=1e-9)
    >>> errors = reference.compare(sol, reference.solve_ivp(lv, (0.0, 10.0), saveat=11), rtol=1e-6, atol=1e-9)
    >>> sorted(errors), max(errors.values()) < 5
    (['predator', 'prey'], True)
    """
    ts, ts_ref = np.asarray(solution.ts), np.asarray(reference.ts)
    if ts.shape != ts_ref.shape or not np.allclose(ts, ts_ref, rtol=1e-12, atol=1e-12):
        raise InputError("compare(): the two solutions are not saved at the same times")
    y, y_ref = np.asarray(solution.ys), np.asarray(reference.ys)
    err = np.abs(y - y_ref) / (atol + rtol * np.abs(y_ref))
    err = np.where(np.isnan(err), np.inf, err)
    return {name: float(err[:, i].max()) for i, name in enumerate(solution.state_names)}
