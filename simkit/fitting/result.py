"""`FitResult`: estimates, uncertainties, convergence, fitted solutions, summary and plots."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import jax.numpy as jnp
import numpy as np

from .. import io
from .. import placement as _placement
from .._prepare import choose_solver, solver_label
from ..errors import InputError
from .drivers import BFGS, FitStatus, describe
from .program import hessian, profile_costs
from .uncertainty import inverse


@dataclasses.dataclass(frozen=True, eq=False)
class FitResult(io.Saveable):
    """The outcome of `simkit.fit`.

    Returned by `simkit.fit`, not built by hand. ``print(result)`` gives a summary table;
    `converged`, `cov_hessian` and `solutions` are properties.

    Attributes
    ----------
    names : tuple of str
        The free parameters (initial states fitted as ``"y0:<state>"``).
    estimates, stderr : dict
        ``{name: value}``: estimates and standard errors.
    intervals : dict
        ``{name: (low, high)}`` at `confidence`: Wald intervals on the scale of each
        parameter's bounds (log for a positive parameter, so its interval stays positive;
        logit between two bounds; the parameter itself without bounds), each method named in
        `interval_methods`; for a parameter at a limit, the limit and what the data allow.
    interval_methods : dict
        ``{name: method}``: how each interval was computed (``"Wald"``, ``"Wald on the log
        scale"``, ``"Wald on the logit scale"``, ``"likelihood ratio, the model's predictions
        held"`` for a dispersion at infinity, ``"at its lower bound"``).
    at_limit : dict
        ``{name: sentence}``: the parameters whose best value is a limit of their range,
        where the data fit no better inside: a negative binomial's dispersion at infinity
        (``"dispersion → ∞: the Poisson model fits as well ..."``; its estimate is then
        ``inf``), a noise scale at 0, a parameter at a bound (its estimate the bound). Their
        standard errors are NaN and the others' uncertainties hold them there. Empty for an
        interior optimum.
    cov, corr : numpy.ndarray
        Covariance (Jacobian-based for residual losses, Hessian-based for likelihoods) and
        correlation, ``(n_params, n_params)`` in `names` order.
    cost : float
        ``0.5 * sum(r**2)``, or the negative log-likelihood.
    iterations, evaluations : int
        Iterations, and evaluations of the cost, of the returned start.
    status : FitStatus
        Converged, or which limit stopped the returned start.
    message : str
        The status in words (with the limit that was reached).
    start_costs : numpy.ndarray
        Every start's final cost, ``(starts,)``.
    start_status : tuple of FitStatus
        Every start's status.
    start_ends : numpy.ndarray
        Every start's end point, ``(starts, n_params)``.
    start_at_bound : numpy.ndarray
        ``(starts, n_params)`` int8: ``-1`` where a start ended at a parameter's lower bound,
        ``+1`` at its upper bound, ``0`` inside (the message names the returned start's).
    starts : numpy.ndarray
        The starting points, ``(starts, n_params)``.
    limits : dict
        ``max_iterations``, ``max_evaluations``, ``max_steps`` of the fit.
    hints : tuple of str
        Identifiability hints (e.g. strongly correlated or undetermined parameters).
    residuals : numpy.ndarray or None
        Residuals at the observed points, datasets in order (residual losses).
    confidence : float
        The level of the intervals.
    loss_name, optimizer_name : str
        The loss and the optimiser, by class name.
    n_points : int
        Number of observed values.
    problem : object
        The fit's internal problem (model, datasets, compiled objective).
    optimizer : AbstractDriver
        The optimiser used.

    Examples
    --------
    >>> import simkit
    >>> from simkit import datasets, models
    >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
    ...                     initial_state="fit", bounds="positive")
    >>> result.names[:2], result.converged, result.loss_name, result.optimizer_name
    (('alpha', 'beta'), True, 'LogNormal', 'LevenbergMarquardt')
    >>> print(result)  # doctest: +ELLIPSIS
    fit of 'lotka_volterra': LogNormal loss, LevenbergMarquardt, 42 points, 1 start(s)
    ...
    """

    names: tuple[str, ...]
    estimates: dict[str, float]
    stderr: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    cov: np.ndarray
    corr: np.ndarray
    cost: float
    iterations: int
    evaluations: int
    status: FitStatus
    message: str
    start_costs: np.ndarray
    start_status: tuple[FitStatus, ...]
    starts: np.ndarray
    limits: dict[str, int]
    hints: tuple[str, ...]
    residuals: np.ndarray | None
    confidence: float
    loss_name: str
    optimizer_name: str
    n_points: int
    problem: Any = dataclasses.field(repr=False)
    optimizer: Any = dataclasses.field(repr=False)
    at_limit: dict[str, str] = dataclasses.field(default_factory=dict)
    interval_methods: dict[str, str] = dataclasses.field(default_factory=dict)
    _endpoint: Any = dataclasses.field(default=None, repr=False)  # the optimiser's last point (finite)
    _hessian_cov: Any = dataclasses.field(default=None, repr=False)
    _cache: dict = dataclasses.field(default_factory=dict, repr=False)
    start_ends: np.ndarray | None = None
    start_at_bound: np.ndarray | None = None

    def with_ends(self, ends: np.ndarray, at_bound: np.ndarray) -> FitResult:
        """This result with every start's end point ``(starts, n_params)`` and the bound
        each parameter ended at (``-1`` lower, ``+1`` upper, ``0`` inside); the message
        names the returned start's bounds. Internal: `simkit.fit` calls it.

        Parameters
        ----------
        ends : numpy.ndarray
            ``(starts, n_params)``, natural values.
        at_bound : numpy.ndarray
            ``(starts, n_params)`` int8.

        Returns
        -------
        FitResult
            A new result.

        Examples
        --------
        >>> import simkit
        >>> from simkit import datasets, models
        >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
        ...                     initial_state="fit", bounds="positive")
        >>> result.start_ends.shape, result.start_at_bound.tolist()[0]
        ((1, 6), [0, 0, 0, 0, 0, 0])
        """
        best = int(np.argmin(np.where(np.isfinite(self.start_costs), self.start_costs, np.inf)))
        message = self.message + "".join(f"; {words}" for words in bound_words(self.names, self.problem.space,
                                                                            at_bound[best]))
        return dataclasses.replace(self, start_ends=np.asarray(ends), start_at_bound=np.asarray(at_bound),
                                   message=message, _cache={})

    @property
    def converged(self) -> bool:
        """Whether the returned start converged (its own status).

        Returns
        -------
        bool
            ``status == FitStatus.CONVERGED``.

        Examples
        --------
        >>> import simkit
        >>> from simkit import datasets, models
        >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
        ...                     initial_state="fit", bounds="positive")
        >>> result.converged, result.status.name
        (True, 'CONVERGED')
        """
        return self.status == FitStatus.CONVERGED

    @property
    def solver_name(self) -> str:
        """Deprecated alias of `optimizer_name`.

        Returns
        -------
        str
            `optimizer_name`.

        Examples
        --------
        >>> import simkit
        >>> from simkit import datasets, models
        >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
        ...                     initial_state="fit", bounds="positive")
        >>> result.solver_name == result.optimizer_name
        True
        """
        return self.optimizer_name

    @property
    def cov_hessian(self) -> np.ndarray:
        """Covariance from the Hessian of the objective (``jax.hessian``; scaled by the
        residual variance for residual losses), computed on first use.

        For residual losses, a check of `cov` (from the Jacobian, Gauss-Newton): the two agree
        when the model fits well.

        Returns
        -------
        numpy.ndarray
            ``(n_params, n_params)`` in `names` order.

        Examples
        --------
        >>> import simkit
        >>> from simkit import datasets, models
        >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
        ...                     initial_state="fit", bounds="positive")
        >>> result.cov_hessian.shape
        (6, 6)
        """
        if self._hessian_cov is not None:
            return self._hessian_cov
        if "cov_hessian" not in self._cache:
            at = self.theta if self._endpoint is None else self._endpoint
            h = np.asarray(hessian(self.problem.program, self.problem.arrays, jnp.asarray(at)))
            m, p = self.n_points, len(self.names)
            weighted = all(d.sigma is not None for d in self.problem.datasets)
            s2 = 1.0 if weighted else 2 * self.cost / max(m - p, 1)
            self._cache["cov_hessian"] = s2 * inverse(h)
        return self._cache["cov_hessian"]

    @property
    def solutions(self) -> tuple[Any, ...]:
        """The fitted model on 201 points over each dataset's span (computed on first use).

        Returns
        -------
        tuple of Solution
            One per dataset, from its ``t0`` to its last time.

        Examples
        --------
        >>> import simkit
        >>> from simkit import datasets, models
        >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
        ...                     initial_state="fit", bounds="positive")
        >>> [sol.ts.shape for sol in result.solutions]
        [(201,)]
        """
        if "solutions" not in self._cache:
            sols = []
            for k, d in enumerate(self.problem.datasets):
                _, sol = self.problem.predict(jnp.asarray(self.theta), k, times=np.linspace(d.t0, d.times[-1], 201))
                sols.append(sol)
            self._cache["solutions"] = tuple(sols)
        return self._cache["solutions"]

    @classmethod
    def build(cls, problem, theta, cost, best, outcome, points, stats, optimizer, confidence, limits):
        """The result for start ``best`` of the starts' ``outcome`` (iterations, evaluations,
        status codes and costs, one per start).

        Internal: `simkit.fit` builds its result with it.

        Parameters
        ----------
        problem : object
            The fit's problem (model, datasets, parameter space, compiled objective).
        theta : array_like
            The estimates, in the problem's parameter order.
        cost : float
            The final cost of start ``best``.
        best : int
            The returned start.
        outcome : tuple
            ``(iterations, evaluations, status codes, costs)``, one entry per start.
        points : array_like
            The starting points, ``(starts, n_params)``.
        stats : dict
            Uncertainties: ``stderr``, ``intervals``, ``cov``, ``corr``, ``cov_hessian``,
            ``hints``, ``n_points``.
        optimizer : AbstractDriver
            The optimiser.
        confidence : float
            The level of the intervals.
        limits : dict
            ``max_iterations``, ``max_evaluations``, ``max_steps``.

        Returns
        -------
        FitResult
            The result.

        Examples
        --------
        >>> import simkit
        >>> from simkit import datasets, models
        >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
        ...                     initial_state="fit", bounds="positive")
        >>> isinstance(result, simkit.FitResult)  # built by FitResult.build
        True
        """
        names = problem.space.names
        iterations, evaluations, codes, costs = (np.asarray(a) for a in outcome)
        start_status = tuple(FitStatus(int(c)) if np.isfinite(v) else FitStatus.NONFINITE
                             for c, v in zip(codes, costs))
        message = describe(start_status[best], **limits)
        endpoint = np.asarray(theta, dtype=float)
        at_limit = dict(stats.get("at_limit", {}))
        bounds_hit = {n for n, sentence in at_limit.items() if " bound " in sentence.split(":")[0]}
        if at_limit:  # the estimates at the limit (a dispersion of inf, a bound) and the cost there
            theta = stats["theta"]
            cost = cost if stats.get("limit_cost") is None else float(stats["limit_cost"])
            # the loss's limits (a start that ends at a bound is named by the optimiser's result)
            limits_of_loss = [sentence.split(":")[0] for n, sentence in at_limit.items() if n not in bounds_hit]
            if limits_of_loss:
                message += "; at a limit: " + ", ".join(limits_of_loss)
        methods = stats.get("interval_methods", ("Wald",) * len(names))
        if not np.isfinite(np.asarray(stats["stderr"])[[n not in at_limit for n in names]]).all():
            message += "; some standard errors are undefined (singular curvature)"
        return cls(
            names=names, estimates=dict(zip(names, map(float, theta))),
            stderr=dict(zip(names, map(float, stats["stderr"]))),
            intervals={n: (float(a), float(b)) for n, (a, b) in zip(names, stats["intervals"])},
            cov=stats["cov"], corr=stats["corr"], cost=cost, _hessian_cov=stats["cov_hessian"],
            iterations=int(iterations[best]), evaluations=int(evaluations[best]), status=start_status[best],
            message=message, start_costs=costs, start_status=start_status, starts=np.asarray(points),
            limits=dict(limits), hints=tuple(stats["hints"]),
            residuals=np.asarray(problem.residuals(jnp.asarray(theta))) if problem.loss.residual_form else None,
            confidence=confidence, loss_name=type(problem.loss).__name__, optimizer_name=type(optimizer).__name__,
            n_points=stats["n_points"], problem=problem, optimizer=optimizer, at_limit=at_limit,
            interval_methods=dict(zip(names, methods)), _endpoint=endpoint,
        )

    @property
    def theta(self) -> np.ndarray:
        """The estimates as an array, in `names` order.

        Returns
        -------
        numpy.ndarray
            ``(n_params,)``.

        Examples
        --------
        >>> import simkit
        >>> from simkit import datasets, models
        >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
        ...                     initial_state="fit", bounds="positive")
        >>> result.theta.shape, float(result.theta[0]) == result.estimates["alpha"]
        ((6,), True)
        """
        return np.array([self.estimates[n] for n in self.names])

    def __str__(self) -> str:
        width = max(12, max(len(n) for n in self.names) + 2)
        level = f"{100 * self.confidence:g}%"
        lines = [f"fit of {self.problem.model.name!r}: {self.loss_name} loss, {self.optimizer_name}, "
                 f"{self.n_points} points, {len(self.start_costs)} start(s)",
                 f"cost {self.cost:.6g}, {self.iterations} iterations, {self.evaluations} evaluations, {self.message}"]
        if len(self.start_status) > 1:
            counts = {s: self.start_status.count(s) for s in FitStatus if s in self.start_status}
            lines.append("starts: " + ", ".join(f"{n} {_STATUS_WORDS[s]}" for s, n in counts.items()))
        lines += ["",
                 f"{'parameter':{width}s} {'estimate':>12s} {'std error':>11s} {'rel':>7s}   {level + ' interval':>27s}"]
        for n in self.names:
            est, se = self.estimates[n], self.stderr[n]
            lo, hi = self.intervals[n]
            with np.errstate(invalid="ignore"):
                rel = abs(se / est) if est else np.inf
            lines.append(f"{n:{width}s} {est:12.5g} {se:11.3g} {rel:7.1%}   [{lo:11.5g}, {hi:11.5g}]")
        if self.interval_methods:
            by_method: dict[str, list[str]] = {}
            for n, method in self.interval_methods.items():
                by_method.setdefault(method, []).append(n)
            lines.append("intervals: " + "; ".join(f"{m} ({', '.join(ns)})" for m, ns in by_method.items()))
        if self.at_limit:
            lines.append("")
            lines += [f"limit: {sentence}" for sentence in self.at_limit.values()]
        early = [d for d in self.problem.datasets if d.t0 < d.times[0]]
        if early:
            lines.append("")
            lines += [f"dataset {d.name!r}: the initial state is at t = {d.t0:g}, before its first datum at "
                      f"t = {d.times[0]:g}" for d in early]
        strong = [(self.names[i], self.names[j], self.corr[i, j]) for i in range(len(self.names))
                  for j in range(i + 1, len(self.names)) if abs(self.corr[i, j]) > 0.9]
        if strong:
            lines.append("")
            lines += [f"strong correlation: {a} ~ {b}: {c:+.3f}" for a, b, c in strong]
        if self.hints:
            lines.append("")
            lines += list(self.hints)
        return "\n".join(lines)

    def profile(self, name: str, values: Any = None, *, n: int = 15, width: float = 3.0) -> dict[str, Any]:
        """Profile likelihood of ``name``: for each fixed value (default: the estimate +-
        ``width`` standard errors, ``n`` points, inside the bounds) the other parameters are
        re-fitted (all values at once, ``jax.vmap``). Where an accelerator is JAX's default
        device, fewer values than `simkit.placement.HOST_FIT_STARTS` run on the host's CPU,
        as a fit of that many starts does.

        Parameters
        ----------
        name : str
            A free parameter, one of `names`.
        values : array_like, optional
            The fixed values (default: ``n`` points from ``estimate - width * stderr`` to
            ``estimate + width * stderr``, inside the bounds).
        n : int
            Number of default values (default 15).
        width : float
            Half-width of the default grid in standard errors (default 3).

        Returns
        -------
        dict
            ``values`` (the fixed values), ``delta`` (the likelihood-ratio statistic,
            chi-square with 1 dof, at each value), ``interval`` (``(low, high)``: where
            ``delta`` is below its `confidence` quantile; ``nan`` where the grid does not
            reach it) and ``threshold`` (that quantile).

        Raises
        ------
        InputError
            ``name`` is not a free parameter; `values` not a 1-D sequence of finite numbers
            inside the parameter's bounds, or a non-positive `n` or `width`.

        Examples
        --------
        >>> import simkit
        >>> from simkit import datasets, models
        >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
        ...                     initial_state="fit", bounds="positive")
        >>> profile = result.profile("alpha")
        >>> low, high = profile["interval"]
        >>> profile["values"].shape, bool(low < result.estimates["alpha"] < high)
        ((15,), True)
        """
        from scipy import stats as scipy_stats

        if name not in self.names:
            raise InputError(f"no free parameter {name!r}; free: {list(self.names)}")
        space, problem = self.problem.space, self.problem
        i = self.names.index(name)
        theta_hat = self.theta if self._endpoint is None else self._endpoint  # finite where a limit is inf
        est, se = float(theta_hat[i]), self.stderr[name]
        if values is None:
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
                raise InputError(f"profile: n must be a whole number >= 2, got {n!r}")
            if not (np.isfinite(width) and width > 0):
                raise InputError(f"profile: width must be a positive number of standard errors, got {width!r}")
            se = se if np.isfinite(se) and se > 0 else abs(est) * 0.1 + 1e-12
            lo = max(est - width * se, np.nextafter(space.lower[i], np.inf))
            hi = min(est + width * se, np.nextafter(space.upper[i], -np.inf))
            values = np.linspace(lo, hi, n)
        try:
            given = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"profile: values must be numbers, got {values!r}") from None
        if given.ndim != 1 or given.size == 0:
            raise InputError(f"profile: values must be a non-empty 1-D sequence of numbers, got shape {given.shape}")
        bad = np.flatnonzero(~np.isfinite(given))
        if bad.size:  # (a NaN value made the whole profile NaN, and the interval with it)
            raise InputError(f"profile: values must be finite; {given[bad[:5]].tolist()} at positions "
                             f"{bad[:5].tolist()} are not")
        outside = np.flatnonzero(~((given > space.lower[i]) & (given < space.upper[i])))
        if outside.size:
            raise InputError(f"profile: values {given[outside[:5]].tolist()} of {name!r} are not strictly inside "
                             f"its bounds ({space.lower[i]:g}, {space.upper[i]:g})")
        values = jnp.asarray(given)
        optimizer = self.optimizer if not self.optimizer.bounded else BFGS()  # in transformed coordinates
        # a fit from one start for each value, side by side: placed as a fit of that many starts
        # (`simkit.placement`: few of them run on the host's CPU where an accelerator is the default)
        with _placement.fit_placed(values.shape[0]):
            costs = np.asarray(profile_costs(problem.program, optimizer, problem.arrays, jnp.asarray(theta_hat),
                                             jnp.asarray(i, jnp.int32), values,
                                             jnp.asarray(self.limits["max_iterations"]),
                                             jnp.asarray(self.limits["max_evaluations"])))
        best = min(self.cost, float(np.nanmin(costs)))
        if problem.loss.residual_form and not all(d.sigma is not None for d in problem.datasets):
            m = self.n_points
            delta = m * np.log(costs / best)  # Gaussian noise of unknown variance, profiled out
        else:
            delta = 2 * (costs - best)
        cut = scipy_stats.chi2.ppf(self.confidence, 1)
        vals = np.asarray(values)
        interval = (_crossing(vals, delta, cut, lower=True), _crossing(vals, delta, cut, lower=False))
        return {"values": vals, "delta": delta, "interval": interval, "threshold": float(cut)}

    # data out --------------------------------------------------------------------------------
    def to_xarray(self) -> Any:
        """The fit as an ``xarray.Dataset`` with CF attributes and provenance.

        Returns
        -------
        xarray.Dataset
            Dimensions ``parameter`` (the free parameters, `names`), ``parameter_j`` (the
            same, the second axis of matrices) and ``start``. Variables: ``estimate``,
            ``stderr``, ``interval_low``, ``interval_high`` ``(parameter,)`` (``units`` where
            the model's ``units`` name the parameter); ``cov``, ``corr``
            ``(parameter, parameter_j)``; ``start_point`` ``(start, parameter)``,
            ``start_cost``, ``start_status`` ``(start,)``; ``residuals`` ``(residual,)`` for
            residual losses. Global attributes: the provenance of `simkit.io.provenance`
            (model, source, units, the fitted model's parameters, the ODE solver, rtol, atol,
            status, the fitted model's y0, versions, date), ``loss``, ``optimizer``, ``cost``,
            ``iterations``, ``evaluations``, ``confidence``, ``n_points``, ``limits``,
            ``hints``, ``interval_methods``, ``at_limit`` and ``dataset_overrides`` (the parameters and initial states datasets
            fixed for themselves, by dataset name, where any did).

        Raises
        ------
        DependencyError
            xarray is not installed.

        Examples
        --------
        >>> import simkit
        >>> from simkit import datasets, models
        >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
        ...                     initial_state="fit", bounds="positive")
        >>> ds = result.to_xarray()
        >>> round(ds["estimate"].sel(parameter="alpha").item(), 2), ds["cov"].dims
        (0.54, ('parameter', 'parameter_j'))
        """
        from .. import io

        xr = io.require_xarray("FitResult.to_xarray()")
        model, problem = self.problem.model, self.problem
        names = list(self.names)
        units = {n: io.units_for(model.units, n) for n in names}
        per_parameter = {"parameter_units": json.dumps({n: u for n, u in units.items() if u})} if any(
            units.values()) else {}

        def parameter_var(values: Any, long_name: str) -> tuple:
            return ("parameter", np.asarray(values, dtype=float), io.variable_attrs(long_name))

        data: dict[str, Any] = {
            "estimate": parameter_var([self.estimates[n] for n in names], "estimate"),
            "stderr": parameter_var([self.stderr[n] for n in names], "standard error"),
            "interval_low": parameter_var([self.intervals[n][0] for n in names],
                                          f"lower end of the {100 * self.confidence:g}% interval"),
            "interval_high": parameter_var([self.intervals[n][1] for n in names],
                                           f"upper end of the {100 * self.confidence:g}% interval"),
            "cov": (("parameter", "parameter_j"), np.asarray(self.cov), io.variable_attrs("covariance")),
            "corr": (("parameter", "parameter_j"), np.asarray(self.corr), io.variable_attrs("correlation")),
            "start_point": (("start", "parameter"), np.asarray(self.starts), io.variable_attrs("starting point")),
            "start_cost": ("start", np.asarray(self.start_costs), io.variable_attrs("final cost of each start")),
            "start_status": ("start", np.asarray([int(s) for s in self.start_status]),
                             io.variable_attrs("simkit.fitting.FitStatus code of each start (0: converged)")),
        }
        if self.residuals is not None:
            data["residuals"] = ("residual", np.asarray(self.residuals), io.variable_attrs(
                "residuals at the observed points, datasets in order"))
        coords = {"parameter": ("parameter", names, io.variable_attrs("free parameter", **per_parameter)),
                  "parameter_j": ("parameter_j", names, io.variable_attrs("free parameter (second axis)")),
                  "start": ("start", np.arange(len(self.start_costs)), io.variable_attrs("start index"))}
        fitted = {k: v for k, v in model.params.items()}
        fitted.update({n: self.estimates[n] for n in names if n in fitted})
        # the initial state fitted (initial_state="fit"), and what each dataset fixed for
        # itself (the model's values, written alone, read as if they had been used)
        y0 = np.array(model.y0, dtype=float)
        for n in names:
            if n.startswith("y0:"):
                y0[model.state_names.index(n[3:])] = self.estimates[n]
        overrides = {d.name: {"params": dict(d.params or {}), "y0": dict(d.y0 or {})} for d in problem.datasets
                     if d.params or d.y0}
        # the method that ran: solve's own choice where the fit named none (was "default")
        ode_solver = choose_solver(model, problem.program.ode_solver, model.n_states, bool(np.iscomplexobj(model.y0)))
        attrs = io.provenance(
            "FitResult", model_name=model.name, model_source=model.source, model_units=model.units,
            parameters=fitted, solver=solver_label(ode_solver),
            rtol=problem.arrays["rtol"], atol=problem.arrays["atol"], status=self.message,
            status_code=int(self.status), y0=y0,
            extra={"loss": self.loss_name, "optimizer": self.optimizer_name, "cost": float(self.cost),
                   "iterations": self.iterations, "evaluations": self.evaluations,
                   "confidence": float(self.confidence), "n_points": int(self.n_points), "limits": self.limits,
                   "hints": list(self.hints), "state_names": list(model.state_names),
                   "interval_methods": dict(self.interval_methods), "at_limit": dict(self.at_limit),
                   "datasets": ", ".join(d.name for d in problem.datasets),
                   **({"dataset_overrides": overrides} if overrides else {})})
        return xr.Dataset(data, coords=coords, attrs=attrs)

    # plots -----------------------------------------------------------------------------------
    def plot(self, axes: Any = None) -> Any:
        """Data and fit per observed quantity (top) and residuals (bottom); returns the axes.

        Parameters
        ----------
        axes : numpy.ndarray of matplotlib.axes.Axes, optional
            A ``(2, columns)`` grid (columns: the observed quantities of every dataset); a new
            figure if None.

        Returns
        -------
        numpy.ndarray of matplotlib.axes.Axes
            The ``(2, columns)`` axes.

        Raises
        ------
        ImportError
            matplotlib is not installed.

        Examples
        --------
        >>> import simkit
        >>> from simkit import datasets, models
        >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
        ...                     initial_state="fit", bounds="positive")
        >>> result.plot().shape  # hare and lynx
        (2, 2)
        """
        import matplotlib.pyplot as plt

        from ..plot import plot_fit

        data = self.problem.datasets
        cols = sum(d.values.shape[1] for d in data)
        if axes is None:
            _, axes = plt.subplots(2, cols, figsize=(4.5 * cols, 5.5), squeeze=False,
                                   gridspec_kw={"height_ratios": [3, 1]})
        plot_fit(self, axes)
        return axes

    def plot_correlation(self, ax: Any = None) -> Any:
        """Heat map of the parameters' correlation matrix, the values written in the cells.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (a new figure if None).

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.

        Raises
        ------
        ImportError
            matplotlib is not installed.

        Examples
        --------
        >>> import simkit
        >>> from simkit import datasets, models
        >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
        ...                     initial_state="fit", bounds="positive")
        >>> result.plot_correlation().get_title()
        'parameter correlation'
        """
        from ..plot import plot_correlation

        return plot_correlation(self.names, self.corr, ax)

    def plot_profiles(self, names: Any = None, axes: Any = None) -> Any:
        """Profile likelihoods (`profile`, default grid) of some parameters, one panel each,
        with the threshold of the interval and the Wald interval.

        Parameters
        ----------
        names : sequence of str, optional
            The parameters (default all: one re-fit per parameter and grid point).
        axes : sequence of matplotlib.axes.Axes, optional
            One per name (a new figure if None).

        Returns
        -------
        sequence of matplotlib.axes.Axes
            The axes drawn on.

        Raises
        ------
        InputError
            A name that is not a free parameter.
        ImportError
            matplotlib is not installed.

        Examples
        --------
        >>> import simkit
        >>> from simkit import datasets, models
        >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
        ...                     initial_state="fit", bounds="positive")
        >>> axes = result.plot_profiles(["alpha"])
        >>> axes[0].get_xlabel()
        'alpha'
        """
        from ..plot import plot_profiles

        names = list(self.names if names is None else names)
        return plot_profiles(self, {n: self.profile(n) for n in names}, axes)

    def plot_waterfall(self, ax: Any = None) -> Any:
        """Final costs of every start, sorted (plateaus are local optima): for ``starts > 1``.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (a new figure if None).

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.

        Raises
        ------
        ImportError
            matplotlib is not installed.

        Examples
        --------
        >>> import simkit
        >>> from simkit import datasets, models
        >>> result = simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
        ...                     initial_state="fit", bounds="positive")
        >>> result.plot_waterfall().get_title()
        'multi-start waterfall'
        """
        from ..plot import plot_waterfall

        return plot_waterfall(self.start_costs, ax)


def bound_words(names: Any, space: Any, at_bound: Any) -> list[str]:
    """``"k at its upper bound 1e+05"`` for each parameter a start ended at a bound of."""
    return [f"{n} at its {'lower' if side < 0 else 'upper'} bound "
            f"{(space.lower if side < 0 else space.upper)[i]:g}" for i, (n, side) in enumerate(zip(names, at_bound))
            if side != 0]


_STATUS_WORDS = {FitStatus.CONVERGED: "converged", FitStatus.MAX_ITERATIONS: "at the iteration limit",
                 FitStatus.MAX_EVALUATIONS: "at the evaluation limit", FitStatus.OPTIMIZER_FAILED: "failed",
                 FitStatus.NONFINITE: "with a non-finite cost"}


def _crossing(values: np.ndarray, delta: np.ndarray, cut: float, *, lower: bool) -> float:
    """Where the profile crosses ``cut`` below (``lower``) or above its minimum, by linear
    interpolation between grid points; ``nan`` if the grid does not reach it."""
    k = int(np.nanargmin(delta))
    indices = range(k, 0, -1) if lower else range(k, len(values) - 1)
    for i in indices:
        j = i - 1 if lower else i + 1
        if delta[i] <= cut < delta[j]:
            return float(values[i] + (cut - delta[i]) * (values[j] - values[i]) / (delta[j] - delta[i]))
    return float("nan")
