"""`load` a PEtab problem into a `PetabProblem`: model, objective, bounds, multi-start fit."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._codegen import codegen_jit, gc_paused
from .._prepare import check_count
from ..errors import InputError, ShapeError
from ..model import ODEModel
from .layout import Layout, build_layout, ode_model, read_problem, to_scale
from .objective import SolverOptions, build_objective

# Least squares stops where three accepted steps in a row, and the decreases predicted for them,
# are below this fraction of the cost (fides, pyPESTO's default optimiser, stops at ``frtol=1e-8``
# after one). On seven problems of the Benchmark-Models-PEtab collection, from 10 starts each,
# `simkit.fitting.least_squares_bounded`'s default 1e-10 took up to 1.65x the steps and 1.9x the
# time, and the same starts ended within 0.1 of the best known cost (benchmarks/README.md).
LEAST_SQUARES_FTOL = 1e-8


class PetabFit(NamedTuple):
    """Every start of `PetabProblem.fit`, sorted by cost (best first).

    Attributes
    ----------
    x : np.ndarray
        ``(n_starts, n_est)`` end points, on the parameters' PEtab scales.
    cost : np.ndarray
        ``(n_starts,)`` negative log-likelihood at ``x``.
    status : np.ndarray
        ``(n_starts,)`` `simkit.fitting.FitStatus` codes.
    n_iter : np.ndarray
        ``(n_starts,)`` accepted steps.
    at_bound : np.ndarray
        ``(n_starts, n_est)``: -1 at the lower bound, +1 at the upper, 0 inside.
    starts : np.ndarray
        ``(n_starts, n_est)`` the start points (same order).
    parameter_ids : tuple of str
        The estimated parameters.

    Examples
    --------
    Two short starts of the 9-parameter problem read by `load` (minutes on a CPU):

    >>> import simkit.petab
    >>> problem = simkit.petab.load("Boehm_JProteomeRes2014/Boehm_JProteomeRes2014.yaml")
    >>> fit = problem.fit(problem.x_nominal[None, :] + [[0.0], [0.1]], max_iter=3)
    >>> fit.x.shape, fit.cost.shape, bool(fit.cost[0] <= fit.cost[1])
    ((2, 9), (2,), True)
    >>> len(fit.best), fit.parameter_ids[0]
    (9, 'Epo_degradation_BaF3')
    """

    x: np.ndarray
    cost: np.ndarray
    status: np.ndarray
    n_iter: np.ndarray
    at_bound: np.ndarray
    starts: np.ndarray
    parameter_ids: tuple[str, ...]

    @property
    def best(self) -> dict[str, float]:
        """The best start's parameters on their PEtab scales, by id.

        Returns
        -------
        dict
            ``{parameter id: value}`` of ``x[0]`` (the lowest cost), on the parameters'
            scales (``10 ** value`` for a ``log10`` parameter).

        Examples
        --------
        See `PetabFit`: ``fit.best["Epo_degradation_BaF3"]``.
        """
        return dict(zip(self.parameter_ids, (float(v) for v in self.x[0])))


class PetabProfile(NamedTuple):
    """A profile likelihood from `PetabProblem.profile`: one parameter fixed at each value, the
    others fitted again.

    Attributes
    ----------
    name : str
        The profiled parameter.
    values : np.ndarray
        ``(n_values,)`` where it was fixed, on its PEtab scale, ascending.
    cost : np.ndarray
        ``(n_values,)`` the negative log-likelihood minimised over the other parameters.
    x : np.ndarray
        ``(n_values, n_est)`` the end points (the profiled parameter at ``values``).
    status : np.ndarray
        ``(n_values,)`` `simkit.fitting.FitStatus` codes.
    best_cost : float
        The cost of the fit profiled around (``fit.cost[0]``).
    best_value : float
        The profiled parameter at that fit, on its scale.

    Examples
    --------
    >>> import numpy as np, simkit.petab
    >>> problem = simkit.petab.load("Boehm_JProteomeRes2014/Boehm_JProteomeRes2014.yaml")
    >>> fit = problem.fit(problem.x_nominal[None, :])
    >>> k = fit.best["k_phos"]
    >>> prof = problem.profile("k_phos", k + np.array([-0.1, -0.05, 0.05, 0.1]), fit)
    >>> prof.interval(0.95)   # doctest: +SKIP
    (4.116, 4.288)
    """

    name: str
    values: np.ndarray
    cost: np.ndarray
    x: np.ndarray
    status: np.ndarray
    best_cost: float
    best_value: float

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The profile-likelihood interval: where twice the cost's rise above ``best_cost``
        stays below the chi-square quantile with one degree of freedom (3.84 at 95 %),
        linearly interpolated between the profiled values on each side of ``best_value``.

        Parameters
        ----------
        level : float
            Confidence level in (0, 1).

        Returns
        -------
        tuple of float
            ``(low, high)`` on the parameter's scale; ``-inf`` / ``inf`` on a side whose
            profile stays below the threshold (not determined by the data within the values
            profiled).

        Examples
        --------
        See `PetabProfile`.
        """
        from scipy import stats

        if not 0.0 < level < 1.0:
            raise InputError(f"PetabProfile.interval: level must lie in (0, 1), got {level!r}")
        cut = float(stats.chi2.ppf(level, 1))
        stat = 2.0 * (self.cost - self.best_cost)
        ends = []
        for side in (-1.0, 1.0):
            keep = (self.values - self.best_value) * side > 0
            dist = np.abs(self.values[keep] - self.best_value)
            order = np.argsort(dist)
            d, q = np.r_[0.0, dist[order]], np.r_[0.0, stat[keep][order]]
            above = np.nonzero(q >= cut)[0]
            if above.size == 0:
                ends.append(side * np.inf)
                continue
            j = above[0]
            reach = d[j - 1] + (cut - q[j - 1]) * (d[j] - d[j - 1]) / (q[j] - q[j - 1])
            ends.append(self.best_value + side * reach)
        return float(ends[0]), float(ends[1])


class PetabProblem:
    """A PEtab parameter-estimation problem in simkit.

    Attributes
    ----------
    model : ODEModel
        The SBML model (states: species and rate-rule targets; params: SBML parameters and
        compartments, defaults from the PEtab nominal values of the first condition).
    parameter_ids : tuple of str
        The estimated parameters, in the order of ``x``.
    scales : tuple of str
        Their PEtab scales (``lin``, ``log``, ``log10``).
    x_nominal, lower, upper : np.ndarray
        ``(n_est,)`` nominal values and bounds, on the parameters' scales.
    conditions : tuple of (str, str)
        The (pre-equilibration or "", simulation) condition pairs that have measurements.
    layout : Layout
        The problem as index arrays (`simkit.petab.layout.Layout`).
    options : SolverOptions
        Tolerances and solver of each condition's solve.

    Examples
    --------
    These examples read ``Boehm_JProteomeRes2014`` of the Benchmark-Models-PEtab collection
    (in simkit's repository under ``tests/data/petab``; run them from that folder).

    >>> import simkit.petab
    >>> problem = simkit.petab.load("Boehm_JProteomeRes2014/Boehm_JProteomeRes2014.yaml")
    >>> problem.parameter_ids[:2], problem.scales[0], float(problem.lower[0]), float(problem.upper[0])
    (('Epo_degradation_BaF3', 'k_exp_hetero'), 'log10', -5.0, 5.0)
    >>> round(float(problem.objective(problem.x_nominal)), 4)  # AMICI's reference: 138.2220
    138.222
    >>> problem.simulate(problem.x_nominal).shape  # 1 condition, 16 times, 8 states
    (1, 16, 8)
    """

    def __init__(self, model: ODEModel, layout: Layout, parameter_ids: tuple[str, ...], objective: Any,
                 simulate: Any, options: SolverOptions, lower: np.ndarray, upper: np.ndarray, name: str,
                 residuals: Any = None, prior: Any = None) -> None:
        self.model, self.layout, self.parameter_ids, self.options = model, layout, parameter_ids, options
        self.name = name
        self.scales = layout.scales
        self.x_nominal = to_scale(layout.theta_nominal[layout.estimated], layout.scales)
        self.lower, self.upper = lower, upper
        self.conditions = layout.pairs
        self._objective, self._simulate, self._residuals = objective, simulate, residuals
        self._prior = prior
        # the least-squares form's pairs of residuals: one per measurement and per prior
        self._n_terms = sum(v.size for v in layout.measurement_value) + layout.priors.count
        # (XLA:CPU's classic code generator, as for every fit of kernel solves: `simkit._codegen`)
        self._value_and_grad = codegen_jit()(jax.value_and_grad(objective))

    def __repr__(self) -> str:
        return (f"PetabProblem({self.name!r}, states={len(self.model.state_names)}, "
                f"estimated={len(self.parameter_ids)}, conditions={len(self.conditions)}, "
                f"measurements={sum(v.size for v in self.layout.measurement_value)})")

    def objective(self, x: Any) -> Any:
        """PEtab's objective at ``x``: the negative log-likelihood of the measurements, plus
        the negative log-density of the parameters' priors where the parameter table gives
        them (`negative_log_prior`).

        Pure JAX: ``jax.jit``, ``jax.grad`` and ``jax.vmap`` apply.

        Parameters
        ----------
        x : array_like
            ``(n_est,)`` estimated parameters on their PEtab scales (order: ``parameter_ids``).

        Returns
        -------
        jax.Array
            Scalar; ``inf`` where a solve failed.

        Examples
        --------
        See `PetabProblem`: ``problem.objective(problem.x_nominal)``, and ``jax.grad``:

        >>> import jax, simkit.petab
        >>> problem = simkit.petab.load("Boehm_JProteomeRes2014/Boehm_JProteomeRes2014.yaml")
        >>> jax.grad(problem.objective)(problem.x_nominal).shape
        (9,)
        """
        return self._objective(x)

    def negative_log_prior(self, x: Any) -> Any:
        """The part of `objective` that the parameters' objective priors contribute
        (``objectivePriorType`` in the parameter table; `simkit.petab.priors`): 0 where the
        problem has none. ``objective(x) - negative_log_prior(x)`` is the negative
        log-likelihood alone.

        Parameters
        ----------
        x : array_like
            ``(n_est,)`` estimated parameters on their PEtab scales.

        Returns
        -------
        jax.Array
            Scalar; ``inf`` outside a uniform prior's range.

        Examples
        --------
        >>> import simkit.petab
        >>> problem = simkit.petab.load("Boehm_JProteomeRes2014/Boehm_JProteomeRes2014.yaml")
        >>> float(problem.negative_log_prior(problem.x_nominal))  # no priors in this problem
        0.0
        """
        return self._prior(x) if self._prior is not None else jnp.zeros(())

    def value_and_grad(self, x: Any) -> tuple[Any, Any]:
        """``(objective(x), gradient)``, compiled once per problem.

        Parameters
        ----------
        x : array_like
            ``(n_est,)`` estimated parameters on their PEtab scales (order: ``parameter_ids``).

        Returns
        -------
        tuple of jax.Array
            The objective (a scalar) and its gradient ``(n_est,)``.

        Examples
        --------
        >>> import simkit.petab
        >>> problem = simkit.petab.load("Boehm_JProteomeRes2014/Boehm_JProteomeRes2014.yaml")
        >>> value, grad = problem.value_and_grad(problem.x_nominal)
        >>> round(float(value), 4), grad.shape
        (138.222, (9,))
        """
        return self._value_and_grad(jnp.asarray(x, dtype=float))

    def simulate(self, x: Any) -> Any:
        """States at the measurement times of every condition pair, ``(n_pairs, n_times, n_states)``
        (times: ``layout.save_times``).

        Parameters
        ----------
        x : array_like
            ``(n_est,)`` estimated parameters on their PEtab scales (order: ``parameter_ids``).

        Returns
        -------
        jax.Array
            ``(n_pairs, n_times, n_states)``: states in ``model.state_names`` order, one row
            per time of ``layout.save_times`` of each condition pair.

        Examples
        --------
        See `PetabProblem`: ``problem.simulate(problem.x_nominal).shape`` is ``(1, 16, 8)``.
        """
        return self._simulate(jnp.asarray(x, dtype=float))[0]

    def sample_starts(self, n: int, seed: int = 0) -> np.ndarray:
        """``(n, n_est)`` starts uniform within the bounds on the parameters' scales, or drawn
        from a parameter's ``initializationPriorType`` where the parameter table gives one
        (the types of `simkit.petab.priors`), then clipped to the bounds.

        Parameters
        ----------
        n : int
            Number of starts.
        seed : int
            Seed of NumPy's generator (``numpy.random.default_rng``).

        Returns
        -------
        np.ndarray
            ``(n, n_est)`` points inside ``[lower, upper]``.

        Examples
        --------
        >>> import simkit.petab
        >>> problem = simkit.petab.load("Boehm_JProteomeRes2014/Boehm_JProteomeRes2014.yaml")
        >>> starts = problem.sample_starts(4, seed=1)
        >>> starts.shape, bool(((starts >= problem.lower) & (starts <= problem.upper)).all())
        ((4, 9), True)
        """
        from .priors import sample

        rng = np.random.default_rng(seed)
        starts = self.lower + rng.random((n, len(self.parameter_ids))) * (self.upper - self.lower)
        for i, draws in sample(self.layout.start_priors, rng, n, self.scales).items():
            starts[:, i] = np.clip(np.nan_to_num(draws, nan=self.lower[i]), self.lower[i], self.upper[i])
        return starts

    def _minimize(self, method: str | None, x0: Any, lower: Any, upper: Any, max_iter: int, gtol: float,
                  ftol: float | None, lanes: int | None, devices: Any = None) -> Any:
        """`fit`'s minimiser from the starts ``x0`` ``(n_starts, n_est)`` within ``[lower, upper]``:
        a `simkit.fitting.BoundedResult` whose cost is the objective (``ftol`` None: the
        method's default, ``LEAST_SQUARES_FTOL`` or 0)."""
        from ..fitting.bounded import least_squares_bounded, minimize_bounded
        from .noise import NORMAL_OFFSET

        if method is None:
            method = "least_squares" if self._residuals is not None else "lbfgsb"
        if method == "least_squares":
            if self._residuals is None:
                raise InputError("method='least_squares' needs normal noise on every observable and no Laplace "
                                 "priors; use method='lbfgsb'")
            out = least_squares_bounded(self._residuals, x0, lower, upper, max_iter=max_iter, gtol=gtol,
                                        ftol=LEAST_SQUARES_FTOL if ftol is None else ftol, lanes=lanes,
                                        devices=devices)
            return out._replace(cost=np.asarray(out.cost) - self._n_terms * NORMAL_OFFSET)
        if method == "lbfgsb":
            return minimize_bounded(self._objective, x0, lower, upper, max_iter=max_iter, gtol=gtol,
                                    ftol=0.0 if ftol is None else ftol,
                                    lanes=lanes, devices=devices)
        raise InputError(f"method must be 'least_squares' or 'lbfgsb', got {method!r}")

    def fit(self, starts: Any = 10, *, seed: int = 0, method: str | None = None, max_iter: int = 500,
            gtol: float = 1e-6, ftol: float | None = None, lanes: int | None = None,
            devices: Sequence[jax.Device] | None = None) -> PetabFit:
        """Multi-start bounded fit: projected Levenberg-Marquardt on the weighted residuals
        (`simkit.fitting.least_squares_bounded`) where every observable's noise is normal and
        no prior is a Laplace one, projected L-BFGS-B on the objective (`simkit.fitting.minimize_bounded`) otherwise.

        The least-squares form holds each measurement's weighted residual ``(m - h) / s`` and a
        second residual carrying the noise's normalisation ``log(2 pi s^2) / 2`` (estimated
        noise parameters take part; `simkit.petab.noise.normal_residuals`): half their sum of
        squares is the objective plus a constant. On seven problems of the Benchmark-Models-PEtab
        collection, from the same 10 starts each, it reached the best known cost to 0.1 from 31
        of 70 starts, L-BFGS-B from 22, pyPESTO + AMICI + fides from 32
        (benchmarks/README.md).

        Parameters
        ----------
        starts : int or array_like
            A number of starts drawn uniformly within the bounds on the parameters' scales
            (`sample_starts`), or the starts themselves, ``(n_starts, n_est)``.
        seed : int
            Seed of the drawn starts.
        method : {"least_squares", "lbfgsb"}, optional
            Default: "least_squares" where every observable's noise is normal and no prior is a
            Laplace one, else "lbfgsb".
        max_iter : int, optional
            Accepted steps per start.
        gtol : float, optional
            Converged when the projected gradient's largest entry is at most this (the
            objective's units per unit of each parameter on its scale; fides's ``gatol`` has
            the same default).
        ftol : float, optional
            Converged when an accepted step decreases the cost by less than ``ftol`` times the
            cost (relative; for least squares the cost is half the residuals' sum of squares,
            and three steps in a row, their predicted decreases too, must be as small). Default:
            1e-8 for least squares (as fides's ``frtol``); 0 for L-BFGS-B,
            which then stops on the projected gradient only (its decreases can be small far from
            a minimum: `simkit.fitting.minimize_bounded`'s default 2.2e-9 stopped starts still
            descending along the flat valleys of these problems).
        lanes : int, optional
            Starts run side by side on each device (default: all on an accelerator, one
            after another on a CPU; `simkit.fitting.bounded.default_lanes`).
        devices : sequence of jax.Device, optional
            Split the starts between these devices, each running its share (e.g.
            ``jax.local_devices()`` after ``simkit.configure(cpu_devices=True)``; default: JAX's
            default device). See `simkit.fitting.least_squares_bounded`.

        Returns
        -------
        PetabFit
            Every start's end point, cost and status, best first.

        Examples
        --------
        See `PetabFit`.
        """
        if isinstance(starts, (int, np.integer)) and not isinstance(starts, bool):
            x0 = self.sample_starts(int(starts), seed)
        else:
            x0 = np.asarray(starts, dtype=float)
            if x0.ndim == 1:
                x0 = x0[None, :]
            if x0.ndim != 2 or x0.shape[1] != len(self.parameter_ids):
                raise ShapeError(f"starts must have shape (n_starts, {len(self.parameter_ids)}), got {x0.shape}")
        out = self._minimize(method, x0, self.lower, self.upper, max_iter, gtol, ftol, lanes, devices)
        cost = np.asarray(out.cost)
        order = np.argsort(np.where(np.isfinite(cost), cost, np.inf), kind="stable")
        return PetabFit(x=np.asarray(out.x)[order], cost=cost[order], status=np.asarray(out.status)[order],
                        n_iter=np.asarray(out.n_iter)[order], at_bound=np.asarray(out.at_bound)[order],
                        starts=x0[order], parameter_ids=self.parameter_ids)


    def profile(self, name: str, values: Any, fit: PetabFit, *, method: str | None = None, max_iter: int = 500,
                gtol: float = 1e-6, ftol: float | None = None) -> PetabProfile:
        """The profile likelihood of parameter ``name``: fixed at each of ``values`` (on its
        PEtab scale, within its bounds), the other parameters fitted again (`fit`'s method,
        equal bounds fixing the parameter), outwards from ``fit``'s best point on each side,
        each value started from the optimum of its neighbour nearer the fit. Every value runs in the
        program `fit` compiled for one start: profiling costs no compilation after a
        one-start fit, and one after a multi-start fit.

        Parameters
        ----------
        name : str
            One of ``parameter_ids``.
        values : array_like
            ``(n_values,)`` values to fix it at, on its scale.
        fit : PetabFit
            The fit to profile around (its best start).
        method, max_iter, gtol, ftol : optional
            As in `fit`.

        Returns
        -------
        PetabProfile
            The values (ascending), costs, end points and statuses; ``interval(level)``.

        Raises
        ------
        InputError
            An unknown parameter, no values, or a value that is NaN or outside its bounds.

        Examples
        --------
        See `PetabProfile`.
        """
        if name not in self.parameter_ids:
            raise InputError(f"profile: {name!r} is not an estimated parameter; choose from {self.parameter_ids}")
        i = self.parameter_ids.index(name)
        values = np.sort(np.atleast_1d(np.asarray(values, dtype=float)))
        if (values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values))
                or np.any(values < self.lower[i]) or np.any(values > self.upper[i])):
            raise InputError(f"profile: values of {name!r} must be a non-empty 1-d array within its bounds "
                             f"[{self.lower[i]}, {self.upper[i]}] (on its scale), got {values}")
        best = np.array(fit.x[0], dtype=float)
        cost, xs, status = np.empty(len(values)), np.empty((len(values), len(best))), np.empty(len(values), int)
        # outwards from the fit on each side, each point started from its neighbour's optimum
        for side in (values < best[i], values >= best[i]):
            index = np.flatnonzero(side)
            x0 = best.copy()
            for k in sorted(index, key=lambda k: abs(values[k] - best[i])):
                lower, upper = self.lower.copy(), self.upper.copy()
                lower[i] = upper[i] = x0[i] = values[k]
                out = self._minimize(method, x0[None, :], lower, upper, max_iter, gtol, ftol, None)
                cost[k], xs[k], status[k] = float(out.cost[0]), np.asarray(out.x[0]), int(out.status[0])
                if np.isfinite(cost[k]):
                    x0 = xs[k].copy()
        return PetabProfile(name=name, values=values, cost=cost, x=xs, status=status,
                            best_cost=float(fit.cost[0]), best_value=float(best[i]))


def load(yaml_path: str | Path, *, rtol: float = 1e-8, atol: float = 1e-10, solver: Any = None,
         max_steps: int = 100_000, steady_state_time: float = 1e6, max_event_firings: int = 2) -> PetabProblem:
    """Read a PEtab problem (its YAML file) into a `PetabProblem`.

    Parameters
    ----------
    yaml_path : str or Path
        The problem's PEtab YAML file (PEtab 1.0; one SBML model).

    Other Parameters
    ----------------
    rtol, atol : float
        Tolerances of each condition's solve.
    solver : optional
        A simkit stiff solver (default: the stiff default of `simkit.solve`).
    max_steps : int
        Step budget per solve.
    steady_state_time : float
        How long pre-equilibration, and a measurement at time ``inf``, integrate (model time
        units) before taking the state as the steady state.
    max_event_firings : int
        Firings of the model's state-triggered events in one simulation (all events
        together); a simulation whose events would fire more often fails, and its objective
        is ``inf``. Each allowed firing costs one more solve segment per condition.

    Returns
    -------
    PetabProblem

    Raises
    ------
    simkit.petab.UnsupportedFeatureError
        A PEtab or SBML feature that is not supported (named in the message): SBML event
        triggers other than comparisons, event delays and priorities, time- and
        state-triggered events in one model, events with pre-equilibration, algebraic rules,
        fast reactions, variable stoichiometry, delays; PEtab prior types
        PEtab 1.0 does not define, mapping tables, noise distributions other than normal and
        laplace, observable transformations and parameter scales other than lin,
        log and log10, non-SBML models.
    InputError
        Missing files, undefined symbols, inconsistent tables, a negative
        ``max_event_firings``.
    InputTypeError
        A ``max_event_firings`` that is not an int.
    DependencyError
        petab, python-libsbml, sbmlmath or sympy is not installed.

    Examples
    --------
    The examples read ``Boehm_JProteomeRes2014`` of the Benchmark-Models-PEtab collection
    (in simkit's repository under ``tests/data/petab``; run them from that folder).

    >>> import simkit.petab
    >>> problem = simkit.petab.load("Boehm_JProteomeRes2014/Boehm_JProteomeRes2014.yaml")
    >>> problem
    PetabProblem('Boehm_JProteomeRes2014', states=8, estimated=9, conditions=1, measurements=48)
    >>> problem.model.state_names[:2]
    ('STAT5A', 'STAT5B')
    """
    max_event_firings = check_count("max_event_firings", max_event_firings, minimum=0)
    with gc_paused():  # (SymPy's and JAX's many objects: `simkit._codegen.gc_paused`)
        return _load(yaml_path, rtol, atol, solver, max_steps, steady_state_time, max_event_firings)


def _load(yaml_path: str | Path, rtol: float, atol: float, solver: Any, max_steps: int, steady_state_time: float,
          max_event_firings: int) -> PetabProblem:
    problem, sbml = read_problem(yaml_path)
    layout = build_layout(problem, sbml)
    pdf = problem.parameter_df
    theta_ids = [str(i) for i in pdf.index]
    ids = tuple(theta_ids[i] for i in layout.estimated)
    lower = to_scale(pdf["lowerBound"].to_numpy(dtype=float)[layout.estimated], layout.scales)
    upper = to_scale(pdf["upperBound"].to_numpy(dtype=float)[layout.estimated], layout.scales)
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper)) and np.all(lower <= upper)):
        raise InputError(f"PEtab bounds must be finite on the parameters' scales with lower <= upper: {ids}")
    name = Path(yaml_path).stem
    model = ode_model(sbml, layout, name)
    options = SolverOptions(rtol=rtol, atol=atol, solver=solver, max_steps=max_steps,
                            steady_state_time=steady_state_time, max_event_firings=max_event_firings)
    objective, simulate, residuals, prior = build_objective(model, sbml, layout, theta_ids, options)
    return PetabProblem(model, layout, ids, objective, simulate, options, lower, upper, name, residuals,
                        prior if layout.priors.any else None)
