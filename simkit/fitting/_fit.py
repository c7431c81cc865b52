"""`fit`: estimate model parameters from data through the solvers."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _config
from .. import placement as _placement
from .. import progress as _progress
from ..errors import InputError
from ..params import check_key, merge_params, refuse_traced
from ..model import ODEModel
from ..sample import latin_hypercube
from ..stencil.pde import PDEModel
from .bounded import as_array, split_and_lanes
from .data import Dataset, check_observation
from .drivers import BFGS, LBFGSB, AbstractDriver, BoundedLevenbergMarquardt, LevenbergMarquardt
from .objective import AbstractLoss, as_loss
from .parameters import ParameterSpace, build
from .program import FIT_RTOL, Problem
from .result import FitResult
from .uncertainty import uncertainty

_UNSET: Any = object()


def _starts(space: ParameterSpace, n: int, key: Any) -> np.ndarray:
    """``n`` starting points: the given start first, then a Latin hypercube within the bounds,
    drawn on each parameter's scale (uniform in ``log10`` on a ``log10`` scale). Where a scaled
    bound is infinite the range is a factor 10 either side of a positive start with a
    non-negative lower bound (on a log scale: a decade either side), and the start +- 10
    |start| otherwise."""
    lo, hi = space.scaled_bounds()
    x0 = np.asarray(space.to_scaled(jnp.asarray(space.x0)))
    scales = space.scales or ("lin",) * len(space.names)
    ranges = {}
    for i, name in enumerate(space.names):
        a, b = lo[i], hi[i]
        if not np.isfinite(a) or not np.isfinite(b):
            if scales[i] != "lin":  # a decade either side, in the scale's units
                step = np.log(10.0) if scales[i] == "log" else 1.0
                a, b = max(a, x0[i] - step), min(b, x0[i] + step)
            else:
                scale = abs(x0[i]) if x0[i] != 0 else 1.0
                a = max(a, x0[i] - 10 * scale) if x0[i] <= 0 or not np.isfinite(a) or a < 0 else max(a, x0[i] / 10)
                b = min(b, x0[i] + 10 * scale) if x0[i] <= 0 else min(b, x0[i] * 10)
        ranges[name] = (float(a), float(b))
    draws = latin_hypercube(key, ranges, max(n - 1, 1))
    sample = np.stack([np.asarray(draws[name]) for name in space.names], axis=1)
    natural = np.asarray(space.from_scaled(jnp.asarray(sample)))
    inside = np.clip(natural, np.nextafter(space.lower, np.inf), np.nextafter(space.upper, -np.inf))
    return np.concatenate([space.x0[None], inside])[:n]


def _given_starts(space: ParameterSpace, starts: Any) -> np.ndarray:
    """User-given starting points: an array ``(n_starts, n_free)`` in the order of the free
    parameters, or a sequence of ``{name: value}`` (names not given take the fit's start),
    checked to lie inside the bounds."""
    names = space.names
    if isinstance(starts, Mapping):
        starts = [starts]
    if len(starts) and all(isinstance(row, Mapping) for row in starts):
        unknown = sorted({k for row in starts for k in row} - set(names))
        if unknown:
            raise InputError(f"starts name {unknown}, which are not free; free: {list(names)}")
        points = np.array([[float(row.get(n, v)) for n, v in zip(names, space.x0)] for row in starts])
    else:
        points = np.asarray(starts, dtype=float)
        if points.ndim != 2 or points.shape[1] != len(names) or points.shape[0] < 1:
            raise InputError(f"starts as points must have shape (n_starts, {len(names)}) (free parameters "
                             f"{list(names)} in that order), got shape {points.shape}")
    outside = [(i, n) for i, row in enumerate(points) for n, v, a, b in zip(names, row, space.lower, space.upper)
               if not (a <= v <= b)]
    if outside:
        raise InputError(f"starts outside their bounds (start, parameter): {outside[:10]}")
    return points


def _nuisance(loss: AbstractLoss, datasets: Sequence[Dataset]) -> tuple[list[str], tuple]:
    """The loss's own estimated parameters: its `nuisance` (one for all data), or with
    ``per_observable`` one ``"<nuisance>:<column>"`` per distinct column name over the
    datasets; and, then, per dataset the position of each column's among them (offset by the
    other free parameters in `Problem`)."""
    if loss.nuisance is None:
        return [], ()
    if not getattr(loss, "per_observable", False):
        return [loss.nuisance], ()
    columns = list(dict.fromkeys(c for d in datasets for c in d.names))
    return [f"{loss.nuisance}:{c}" for c in columns], tuple(tuple(columns.index(c) for c in d.names)
                                                           for d in datasets)


def _default_optimizer(loss: AbstractLoss, space: ParameterSpace, n_nuisance: int) -> AbstractDriver:
    """Projected bounds (`BoundedLevenbergMarquardt`, `LBFGSB`) where a model parameter has two
    finite bounds or a log scale: a transform there saturates towards the bounds; else
    `LevenbergMarquardt` or `BFGS`."""
    n = len(space.names) - n_nuisance
    lo, hi = space.scaled_bounds()
    scales = space.scales or ("lin",) * len(space.names)
    boxed = bool(np.any(np.isfinite(lo[:n]) & np.isfinite(hi[:n]))) or any(k != "lin" for k in scales[:n])
    if loss.residual_form:
        return BoundedLevenbergMarquardt() if boxed else LevenbergMarquardt()
    return LBFGSB() if boxed else BFGS()


def _check_y0_function(model: ODEModel, y0_function: Any) -> None:
    """``initial_state=`` as a function: it must give one value per state (traced
    abstractly on the model's parameters, before compiling)."""
    try:
        shape = jax.eval_shape(y0_function, {k: jnp.asarray(v) for k, v in model.params.items()}).shape
    except Exception as error:  # a KeyError for a missing name, say: name the function
        raise InputError(f"initial_state function failed on the model's parameters: {type(error).__name__}: "
                         f"{error}") from error
    if int(np.prod(shape)) != model.n_states:
        raise InputError(f"initial_state function gives shape {shape}; model {model.name!r} has {model.n_states} "
                         f"states {list(model.state_names)[:20]}")


def _warn_y0_moved(model: ODEModel, datasets: Sequence[Dataset]) -> None:
    """Warn where a dataset without its own ``t0`` starts after the model's ``t_span``
    start and takes the model's initial state: that state, the model's at ``t_span[0]``,
    is then put at the dataset's first time (a decay fitted to data from t = 2 gave k = 2.0
    for 0.7, silently; found by probing)."""
    start = float(model.t_span[0])
    for d in datasets:
        own = set(d.y0 or ())
        if d.t0_defaulted and d.t0 != start and not own >= set(model.state_names):
            warnings.warn(f"dataset {d.name!r} starts at t = {d.t0:g} (its first time: no t0 was given), but model "
                          f"{model.name!r} starts at t = {start:g} (its t_span): the model's initial state is used "
                          f"as the state at t = {d.t0:g}. Give Dataset(..., t0={start:g}) if it is the state at "
                          f"t = {start:g}, or t0={d.t0:g} to keep this", UserWarning, stacklevel=3)


def _check_dataset_inputs(model: ODEModel, datasets: Sequence[Dataset], free: Sequence[str]) -> None:
    """A dataset's fixed parameters must be the model's (`merge_params`, the one name check)
    and not free; its fixed initial states not fitted (either would be silently ignored or
    would freeze a free value)."""
    for d in datasets:
        merge_params(model.params, d.params, owner=f"dataset {d.name!r}")
        fixed = list(d.params or {})
        both = [n for n in fixed if n in free] + [s for s in (d.y0 or {}) if f"y0:{s}" in free]
        if both:
            raise InputError(f"dataset {d.name!r} fixes {both}, which the fit also estimates: leave them out of "
                             "free (or initial_state='fixed'), or out of the dataset")


def fit(
    model: ODEModel | PDEModel,
    data: Dataset | Sequence[Dataset],
    *,
    free: Sequence[str] | None = None,
    initial: Mapping[str, float] | None = None,
    bounds: Mapping[str, tuple[float, float]] | str | None = None,
    initial_state: str = "fixed",
    loss: AbstractLoss | None = None,
    optimizer: AbstractDriver | None = None,
    starts: int | Any = 1,
    key: Any = None,
    scales: Mapping[str, str] | None = None,
    lanes: int | None = None,
    devices: Sequence[jax.Device] | None = None,
    confidence: float = 0.95,
    max_iterations: int | None = None,
    max_evaluations: int = 2000,
    max_steps: int = 20_000,
    rtol: float = FIT_RTOL,
    atol: float | jax.typing.ArrayLike = 1e-10,
    ode_solver: Any = None,
    solver: Any = _UNSET,
    progress: bool | None = None,
) -> FitResult:
    """Estimate parameters of ``model`` from ``data``.

    Parameters
    ----------
    model : ODEModel or PDEModel
        The model (a `PDEModel` is fitted through the method of lines).
    data : Dataset or sequence of Dataset
        One experiment, or several sharing the parameters.
    free : sequence of str, optional
        Names of the parameters to estimate (default: every scalar parameter); the others
        stay at the model's values (``model.with_params`` to change them).
    initial : dict, optional
        Starting values by name (default: the model's values).
    bounds : dict or "positive", optional
        ``{name: (low, high)}`` or ``"positive"`` (every free parameter > 0).
    initial_state : {"fixed", "fit"} or callable
        ``"fixed"`` (the model's ``y0``, or each dataset's) or ``"fit"`` (estimate every
        initial state, named ``"y0:<state>"``, at the data's first time: one initial state
        shared by all datasets, so experiments that start from different states need
        ``"fixed"`` with each dataset's ``y0``), or a function ``y0(params) -> (n_states,)``
        of the parameters (free and fixed, with each dataset's own), pure JAX: the initial
        state of every solve (a dataset's ``y0`` entries still override it).
    loss : AbstractLoss, optional
        `LeastSquares()` (default), `LogNormal()`, `GaussianNLL()`, `Poisson()`,
        `NegativeBinomial()`.
    optimizer : AbstractDriver, optional
        `LevenbergMarquardt()`, `BoundedLevenbergMarquardt()`, `GaussNewton()`, `BFGS()`,
        `LBFGS()`, `LBFGSB()`, or `Optimistix(optimistix solver)`. `LBFGSB` and
        `BoundedLevenbergMarquardt` keep the bounds by projection (a start that runs into a
        bound stays there, and says so); the others use smooth transforms. Default: where a
        free parameter has two finite bounds or a log scale, `BoundedLevenbergMarquardt`
        (residual losses) or `LBFGSB` (likelihoods); else `LevenbergMarquardt` or `BFGS`.
    starts : int or array_like
        Number of starting points (the given start and a Latin hypercube within the
        bounds, on each parameter's scale), or the points themselves: an array
        ``(n_starts, n_free)`` of natural values in the order of `FitResult.names`, or a
        sequence of ``{name: value}``. The best is returned with its own status; every
        start's end point, cost, status and bounds reached are kept
        (`FitResult.start_ends`, `FitResult.start_costs`, `FitResult.start_status`,
        `FitResult.start_at_bound`).
    key : jax.Array, optional
        For the start design (default ``jax.random.key(0)``).
    scales : dict, optional
        ``{name: "lin" | "log" | "log10"}``: the scale each parameter is optimised and its
        starts drawn on (default ``"lin"``; a loss's noise or dispersion ``"log"``). A log
        scale needs a lower bound ``>= 0``.
    lanes : int, optional
        For `LBFGSB` and `BoundedLevenbergMarquardt`: how many starts run side by side
        under ``jax.vmap`` (default: all of them on an accelerator, one on a CPU, where a
        pass waits for the lane whose solve takes the most steps). A start ends where it
        ends alone (to the rounding of a vmapped solve).
    devices : sequence of jax.Device, optional
        Split the starts in order between these devices, each running its share (e.g.
        ``jax.local_devices()`` after ``simkit.configure(cpu_devices=True)``; default: JAX's
        default device runs them all). Each share runs the one-device program, compiled once
        (`simkit.fitting.split`): a split start ends where it ends unsplit.
    confidence : float
        Confidence level of the intervals (default 0.95).
    max_iterations : int, optional
        Iterations per start (default: the optimizer's own, e.g. 200 for
        `LevenbergMarquardt`, 512 for `BFGS`).
    max_evaluations : int
        Evaluations of the cost (with its derivatives) per start, default 2000, checked
        between iterations.
    max_steps : int
        ODE solver steps per solve, default 20,000: a solve that needs more (parameters that
        make the model stiff, say) counts as failed, and a failed solve gives an infinite
        cost, so the optimiser backs off. A fit's run time is at most about
        ``max_evaluations`` solves of ``max_steps`` steps with their sensitivities (per
        start; starts side by side, ``lanes > 1``, wait for each other's slowest solve).
    rtol, atol : float
        Tolerances of the solves (``atol`` a scalar or one per state, as in `simkit.solve`;
        the default rtol, 1e-8, is float32's 1.2e-5 in float32).
    ode_solver : optional
        The ODE solver of the solves (as `simkit.solve`'s ``solver``).
    solver : optional
        The former name of `optimizer` (deprecated, warns).
    progress : bool, optional
        For ``starts > 1``, a ``tqdm`` bar of the two stages (the starts, which run together
        in one compiled program, then the uncertainties): ``None`` (default) follows
        `simkit.progress` (``SIMKIT_PROGRESS``, else a terminal or notebook once the fit has
        taken 3 s).

    Returns
    -------
    FitResult
        Estimates, standard errors, intervals, covariance, correlation, cost, status and
        the limits that stopped each start (every fit ends; ``print(result)`` for a
        summary).

    Raises
    ------
    ParameterError
        An unknown name in `free`, `initial` or `bounds`.
    InputError, ShapeError, InputTypeError
        Data that do not match the model (unknown observed states, times before the
        model's start), datasets with and without sigma in one least-squares fit, bad
        bounds or options, before compiling.

    Examples
    --------
    >>> import simkit
    >>> from simkit import datasets, models
    >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
    ...                     initial_state="fit", bounds="positive")
    >>> result.converged, sorted(result.estimates)[:2]
    (True, ['alpha', 'beta'])
    """
    if solver is not _UNSET:
        warnings.warn("simkit.fit(solver=...) is deprecated and will be removed in the next release: pass the "
                      "optimiser as optimizer=...", DeprecationWarning, stacklevel=2)
        if optimizer is not None:
            raise InputError("fit() got both optimizer= and its deprecated name solver=: pass optimizer= only")
        optimizer = solver
    if isinstance(model, PDEModel):
        model = model.to_ode()
    if not isinstance(model, ODEModel):
        raise InputError(f"fit() expects an ODEModel or PDEModel, got {type(model).__name__}")
    # (JAX's ConcretizationTypeError or TracerArrayConversionError before; found by probing)
    refuse_traced("simkit.fit", "call it with concrete values (starts=... runs several starts under jax.vmap "
                  "itself); to differentiate a loss through solves, use jax.grad of simkit.solve",
                  model, initial, bounds, key)
    datasets = [data] if isinstance(data, Dataset) else list(data)
    if not datasets or not all(isinstance(d, Dataset) for d in datasets):
        raise InputError("data must be a simkit.Dataset or a list of them")
    for d in datasets:
        if not callable(d.observed):
            missing = [s for s in d.observed if s not in model.state_names]
            if missing:
                raise InputError(f"dataset {d.name!r} observes {missing}, not states of {model.name!r} "
                                 f"({list(model.state_names)[:20]})")
        else:
            check_observation(d, model)  # its output's shape, before compiling
    loss = as_loss(loss)
    y0_function = initial_state if callable(initial_state) else None
    if y0_function is not None:
        initial_state = "fixed"
    if initial_state not in ("fixed", "fit"):
        raise InputError(f"initial_state must be 'fixed', 'fit' or a function y0(params), got {initial_state!r}")
    if initial_state == "fixed" and model.t_span is not None and y0_function is None:
        _warn_y0_moved(model, datasets)
    if y0_function is not None:
        _check_y0_function(model, y0_function)
    if optimizer is not None and not isinstance(optimizer, AbstractDriver):
        raise InputError("optimizer must be a simkit fitting optimiser object (LevenbergMarquardt(), BFGS(), ...), "
                         f"got {optimizer!r}")
    if optimizer is not None and optimizer.residual and not loss.residual_form:
        raise InputError(f"{type(optimizer).__name__} works on residuals; {type(loss).__name__} is a likelihood: "
                         "use BFGS(), LBFGS() or LBFGSB()")
    nuisance, noise_index = _nuisance(loss, datasets)
    space = build(model, free, bounds, initial, initial_state == "fit", model.state_names, np.asarray(model.y0),
                  nuisance, scales)
    optimizer = optimizer if optimizer is not None else _default_optimizer(loss, space, len(nuisance))
    limits = {"max_iterations": optimizer.default_max_iterations() if max_iterations is None else max_iterations,
              "max_evaluations": max_evaluations, "max_steps": max_steps}
    for name, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"{name} must be a positive whole number, got {value!r}")
    limits = {name: int(value) for name, value in limits.items()}
    for d in datasets:
        loss.check(d.values)
    with_sigma = [d.name for d in datasets if d.sigma is not None]
    if loss.residual_form and with_sigma and len(with_sigma) < len(datasets):
        # weighted residuals (in units of sigma, whose variance is 1) and unweighted ones (in
        # the data's units, of a variance to estimate) do not share one variance
        raise InputError(f"datasets {with_sigma} give sigma and "
                         f"{[d.name for d in datasets if d.sigma is None]} do not: give sigma for every dataset "
                         "(absolute standard deviations) or for none (one noise variance, estimated)")
    if with_sigma and not loss.uses_sigma:
        raise InputError(f"datasets {with_sigma} give sigma, which {type(loss).__name__} does not use (it was "
                         "ignored): use LeastSquares() for known standard deviations (weighted least squares), "
                         "or drop sigma")
    given = not isinstance(starts, (int, np.integer)) or isinstance(starts, bool)
    if not given and int(starts) < 1:
        raise InputError(f"starts must be at least 1, got {starts}")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.floating, np.integer)) \
            or not 0.0 < float(confidence) < 1.0:
        hint = f" (for {confidence}% pass {confidence / 100:g})" if isinstance(confidence, (int, float)) \
            and 1.0 < confidence < 100.0 else ""
        raise InputError(f"confidence must be a fraction strictly between 0 and 1, got {confidence!r}{hint}")
    _check_dataset_inputs(model, datasets, space.names)
    problem = Problem(model, datasets, space, loss, rtol, atol, ode_solver, limits["max_steps"],
                      y0_function=y0_function, noise_index=noise_index)
    dtype = _config.float_dtype()
    points = _given_starts(space, starts) if given else _starts(space, int(starts), jax.random.key(0) if key is None
                                                                 else check_key(key, "fit()"))
    with _placement.fit_placed(len(points), devices):  # few starts: the host
        split, lanes = split_and_lanes(len(points), lanes, devices, False, "fit")
        with _progress.bar(2, f"fit {model.name}", progress=progress if len(points) > 1 else False,
                           unit="stages") as stages:
            stages.set_postfix_str(f"{len(points)} starts", refresh=False)
            thetas, iterations, evaluations, codes, costs, least_squares, at_bound = problem.run(
                optimizer, as_array(points, dtype), max_iterations=limits["max_iterations"],
                max_evaluations=limits["max_evaluations"], lanes=lanes, devices=split)
            costs = np.asarray(costs)
            finite = np.isfinite(costs)
            if not finite.any():
                raise InputError("every start failed (non-finite cost): the ODE solve fails there (max_steps="
                                 f"{limits['max_steps']} per solve) or the model gives NaN; check the data, the bounds "
                                 "and the starting values")
            stages.set_postfix_str("uncertainties", refresh=False)
            stages.update(1)
            best = int(np.argmin(np.where(finite, costs, np.inf)))
            theta = np.asarray(thetas[best])
            kept = None if least_squares is None else tuple(np.asarray(a[best]) for a in least_squares)
            stats = uncertainty(problem, theta, confidence, kept)
            stages.update(1)
    result = FitResult.build(problem, theta, float(costs[best]), best, (iterations, evaluations, codes, costs),
                             points, stats, optimizer, confidence, limits)
    return result.with_ends(np.asarray(thetas), np.asarray(at_bound))
