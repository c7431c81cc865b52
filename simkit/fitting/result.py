"""`FitResult`: estimates, uncertainties, convergence, fitted solutions, summary and plots."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import jax.numpy as jnp
import numpy as np

from .. import io
from ..errors import InputError
from .drivers import BFGS, FitStatus, describe
from .program import hessian, profile_costs
from .uncertainty import inverse


@dataclasses.dataclass(frozen=True, eq=False)
class FitResult(io.Saveable):
    """The outcome of `simkit.fit`.

    **Fields:** `names`; `estimates`, `stderr` (name -> value); `intervals` (name -> (low,
    high), Wald, at `confidence`); `cov` (Jacobian-based for residual losses, Hessian-based
    for likelihoods), `cov_hessian`, `corr` (arrays in `names` order); `cost` (0.5 sum r^2
    or the negative log-likelihood); `status` (a `FitStatus`: converged, or which limit
    stopped the returned start), `converged`, `message`, `iterations` and `evaluations` (of
    the cost, by the returned start); `start_costs`, `start_status` (every start's final
    cost and status) and `starts`; `limits` (``max_iterations``, ``max_evaluations``,
    ``max_steps``); `hints` (identifiability); `solutions` (the fitted model on a fine grid,
    one per dataset); `residuals`.
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
    _hessian_cov: Any = dataclasses.field(default=None, repr=False)
    _cache: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def converged(self) -> bool:
        """Whether the returned start converged (its own status)."""
        return self.status == FitStatus.CONVERGED

    @property
    def solver_name(self) -> str:
        """Deprecated alias of `optimizer_name`."""
        return self.optimizer_name

    @property
    def cov_hessian(self) -> np.ndarray:
        """Covariance from the Hessian of the objective (``jax.hessian``; scaled by the
        residual variance for residual losses), computed on first use."""
        if self._hessian_cov is not None:
            return self._hessian_cov
        if "cov_hessian" not in self._cache:
            h = np.asarray(hessian(self.problem.program, self.problem.arrays, jnp.asarray(self.theta)))
            m, p = self.n_points, len(self.names)
            weighted = all(d.sigma is not None for d in self.problem.datasets)
            s2 = 1.0 if weighted else 2 * self.cost / max(m - p, 1)
            self._cache["cov_hessian"] = s2 * inverse(h)
        return self._cache["cov_hessian"]

    @property
    def solutions(self) -> tuple[Any, ...]:
        """The fitted model on 201 points over each dataset's span (computed on first use)."""
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
        status codes and costs, one per start)."""
        names = problem.space.names
        iterations, evaluations, codes, costs = (np.asarray(a) for a in outcome)
        start_status = tuple(FitStatus(int(c)) if np.isfinite(v) else FitStatus.NONFINITE
                             for c, v in zip(codes, costs))
        message = describe(start_status[best], **limits)
        if not np.isfinite(stats["stderr"]).all():
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
            n_points=stats["n_points"], problem=problem, optimizer=optimizer,
        )

    @property
    def theta(self) -> np.ndarray:
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
            rel = abs(se / est) if est else np.inf
            lines.append(f"{n:{width}s} {est:12.5g} {se:11.3g} {rel:7.1%}   [{lo:11.5g}, {hi:11.5g}]")
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
        re-fitted (all values at once, ``jax.vmap``). Returns ``values``, ``delta`` (the
        likelihood-ratio statistic, chi-square with 1 dof) and ``interval`` (where ``delta``
        is below its `confidence` quantile; ``nan`` where the grid does not reach it)."""
        from scipy import stats as scipy_stats

        if name not in self.names:
            raise InputError(f"no free parameter {name!r}; free: {list(self.names)}")
        space, problem = self.problem.space, self.problem
        i = self.names.index(name)
        est, se = self.estimates[name], self.stderr[name]
        if values is None:
            se = se if np.isfinite(se) and se > 0 else abs(est) * 0.1 + 1e-12
            lo = max(est - width * se, np.nextafter(space.lower[i], np.inf))
            hi = min(est + width * se, np.nextafter(space.upper[i], -np.inf))
            values = np.linspace(lo, hi, n)
        values = jnp.asarray(values)
        optimizer = self.optimizer if not self.optimizer.bounded else BFGS()  # in transformed coordinates
        costs = np.asarray(profile_costs(problem.program, optimizer, problem.arrays, jnp.asarray(self.theta), i, values,
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
            status, y0, versions, date), ``loss``, ``optimizer``, ``cost``, ``iterations``,
            ``evaluations``, ``confidence``, ``n_points``, ``limits`` and ``hints``.

        Raises
        ------
        DependencyError
            xarray is not installed.

        Example
        -------
        >>> import numpy as np, simkit
        >>> model = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0],
        ...                         state_names=("y",), name="decay")
        >>> times = np.linspace(0.0, 2.0, 6)
        >>> data = simkit.Dataset(times, np.exp(-1.3 * times)[:, None], observed=("y",))
        >>> ds = simkit.fit(model, data).to_xarray()
        >>> round(ds["estimate"].sel(parameter="k").item(), 6), ds["cov"].dims
        (1.3, ('parameter', 'parameter_j'))
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
                                          f"lower end of the {100 * self.confidence:g}% Wald interval"),
            "interval_high": parameter_var([self.intervals[n][1] for n in names],
                                           f"upper end of the {100 * self.confidence:g}% Wald interval"),
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
        ode_solver = problem.program.ode_solver
        attrs = io.provenance(
            "FitResult", model_name=model.name, model_source=model.source, model_units=model.units,
            parameters=fitted, solver="default" if ode_solver is None else repr(ode_solver),
            rtol=problem.arrays["rtol"], atol=problem.arrays["atol"], status=self.message,
            status_code=int(self.status), y0=np.asarray(model.y0),
            extra={"loss": self.loss_name, "optimizer": self.optimizer_name, "cost": float(self.cost),
                   "iterations": self.iterations, "evaluations": self.evaluations,
                   "confidence": float(self.confidence), "n_points": int(self.n_points), "limits": self.limits,
                   "hints": list(self.hints), "state_names": list(model.state_names),
                   "datasets": ", ".join(d.name for d in problem.datasets)})
        return xr.Dataset(data, coords=coords, attrs=attrs)

    # plots -----------------------------------------------------------------------------------
    def plot(self, axes: Any = None) -> Any:
        """Data and fit per observed quantity (top) and residuals (bottom); returns the axes."""
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
        from ..plot import plot_correlation

        return plot_correlation(self.names, self.corr, ax)

    def plot_profiles(self, names: Any = None, axes: Any = None) -> Any:
        from ..plot import plot_profiles

        names = list(self.names if names is None else names)
        return plot_profiles(self, {n: self.profile(n) for n in names}, axes)

    def plot_waterfall(self, ax: Any = None) -> Any:
        from ..plot import plot_waterfall

        return plot_waterfall(self.start_costs, ax)


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
