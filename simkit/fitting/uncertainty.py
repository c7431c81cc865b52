"""Uncertainty at the optimum: covariance from the Jacobian (``s^2 (J^T J)^-1``) and from
the Hessian of the negative log-likelihood (``jax.hessian``), standard errors, correlation,
Wald intervals (on the scale of each parameter's bounds: log for a positive parameter, logit
between two bounds), limits the fit ran to (a dispersion to infinity, a noise to zero, a
parameter to its bound), and identifiability hints from the singular values of the scaled
Jacobian."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from .drivers import residual_cosines
from .program import hessian, jacobian

WEAK = 1e-6  # relative singular value below which a direction counts as unidentifiable
BOUND_COSINE = 1e-3  # residual-column cosine above which a converged parameter is held by a bound


def inverse(matrix: np.ndarray) -> np.ndarray:
    """Pseudo-inverse of a symmetric matrix, scaled to a unit diagonal first (``D^-1/2 M
    D^-1/2``, then back) so that parameters of different magnitudes (a rate of 1e-3 beside a
    source of 1e3: ``J^T J``'s diagonal spans 1e12) do not fall under the cutoff for
    singular directions; NaN where it has non-finite entries."""
    if not np.all(np.isfinite(matrix)):
        return np.full_like(matrix, np.nan)
    diag = np.sqrt(np.abs(np.diag(matrix)))
    d = np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 1.0)
    scale = np.outer(d, d)
    return scale * np.linalg.pinv(matrix * scale, rcond=1e-12, hermitian=True)


def uncertainty(problem: Any, theta: np.ndarray, confidence: float,
                least_squares: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """Covariance, standard errors, correlation, intervals and identifiability hints at
    ``theta`` (natural parameters, shape ``(p,)``). ``least_squares``: the residuals (all
    points, masked ones as zeros) and their Jacobian at ``theta`` where the optimiser kept
    them; computed here (one more compiled program) where None or not finite."""
    from scipy import stats as scipy_stats

    full_names = problem.space.names
    limits = at_limits(problem, np.asarray(theta, dtype=float), confidence)
    keep = np.array([n not in limits["notes"] for n in full_names])
    if not keep.any():  # every parameter at a limit: nothing left to estimate a covariance for
        return _limits_only(problem, limits, confidence)
    theta_j = jnp.asarray(theta)
    theta = np.asarray(theta, dtype=float)[keep]
    names = tuple(n for n, k in zip(full_names, keep) if k)
    lower_all, upper_all, x0_all = problem.space.lower[keep], problem.space.upper[keep], problem.space.x0[keep]
    p = len(names)
    out: dict[str, Any] = {}
    if problem.loss.residual_form:
        if least_squares is not None and all(np.all(np.isfinite(a)) for a in least_squares):
            r, jac = least_squares
        else:
            r, jac = jacobian(problem.program, problem.arrays, theta_j)
        r, jac = np.asarray(r)[problem._flat_mask], np.asarray(jac)[problem._flat_mask][:, keep]
        m = r.shape[0]
        dof = max(m - p, 1)
        weighted = all(d.sigma is not None for d in problem.datasets)
        # no more points than parameters: the residuals estimate no variance (SciPy's
        # curve_fit: an infinite covariance)
        s2 = 1.0 if weighted else float(r @ r) / (m - p) if m > p else np.inf
        jtj = jac.T @ jac
        cov = s2 * inverse(jtj)
        hess = cov_h = None  # on demand: FitResult.cov_hessian
        quantile = scipy_stats.t.ppf(0.5 + confidence / 2, dof) if not weighted else scipy_stats.norm.ppf(0.5 + confidence / 2)
        sensitivity = jac * np.where(theta == 0, 1.0, np.abs(theta))
        out.update(jacobian=jac, residual_variance=s2, dof=dof, n_points=m)
    else:
        # a parameter at a limit is held there: the others' curvature with it fixed
        hess = np.asarray(hessian(problem.program, problem.arrays, theta_j, of="nll"))[np.ix_(keep, keep)]
        cov = cov_h = inverse(hess)
        quantile = scipy_stats.norm.ppf(0.5 + confidence / 2)
        scale = np.where(theta == 0, 1.0, np.abs(theta))
        sensitivity = hess * np.outer(scale, scale)
        out.update(dof=None, n_points=int(sum(d.n_points for d in problem.datasets)))
    hints = []
    if problem.loss.residual_form:
        # a bound that holds a parameter: there the cost still falls outwards (the cosine
        # between the residuals and its Jacobian column is not ~0, as at an interior optimum)
        g = jac.T @ r
        cosine = np.asarray(residual_cosines(g, jtj, np.linalg.norm(r)))
        for i in np.flatnonzero(cosine > BOUND_COSINE):
            side, bound = ("lower", lower_all[i]) if g[i] > 0 else ("upper", upper_all[i])
            # and it has come close to that bound (a thousandth of the start's distance)
            if np.isfinite(bound) and abs(theta[i] - bound) <= 1e-3 * abs(x0_all[i] - bound):
                hints.append(f"{names[i]} = {theta[i]:.6g} is held at its {side} bound {bound:g}: the data "
                             "pull it beyond, and its standard error and interval describe the bound, not the data")
    if problem.loss.residual_form and not weighted and m <= p:
        hints.append(f"{m} data point(s) for {p} parameter(s): no residual variance to estimate the "
                     "uncertainties from (standard errors undefined)")
    not_minimum = np.zeros(p, bool)
    if hess is not None and np.all(np.isfinite(hess)) and np.linalg.eigvalsh(hess)[0] <= 0:
        hints.append("the Hessian of the negative log-likelihood is not positive definite here: not a strict "
                     "minimum, so standard errors and correlations are not meaningful")
        # the parameters along its directions of no or negative curvature have no standard
        # error (the pseudo-inverse gave them negative variances, shown as 0: a zero-width
        # interval at an iteration limit)
        values, vectors = np.linalg.eigh(sensitivity)
        for value, vector in zip(values, vectors.T):
            if value <= 0:
                not_minimum |= np.abs(vector) > 0.2
    if not np.all(np.isfinite(sensitivity)):
        hints.append("the curvature at the optimum is not finite: no uncertainties")
        sensitivity = np.zeros_like(sensitivity)
    _, singular, vt = np.linalg.svd(sensitivity, full_matrices=True)  # vt: all p directions
    singular = np.concatenate([singular, np.zeros(p - singular.shape[0])])  # fewer rows than p: zeros
    relative = singular / singular[0] if singular[0] > 0 else singular
    undefined = np.zeros(p, bool)
    for value, vector in zip(relative, vt):
        if value < WEAK:
            involved = [names[i] for i in np.argsort(-np.abs(vector))[:3] if abs(vector[i]) > 0.2]
            undefined |= np.abs(vector) > 0.2
            hints.append(f"near-zero singular value {value:.1e}: {', '.join(involved)} are not separately "
                         "identifiable from these data (their standard errors are undefined)")
    # a parameter along a direction the data do not determine has no standard error: the
    # pseudo-inverse drops that direction and would report a small, finite one
    undefined |= not_minimum
    cov = np.array(cov, dtype=float)
    cov[undefined, :] = np.nan
    cov[:, undefined] = np.nan
    cov[undefined, undefined] = np.inf
    with np.errstate(invalid="ignore"):
        variance = np.diag(cov)
        stderr = np.where(variance >= 0, np.sqrt(np.abs(variance)), np.nan)  # a negative one: undefined
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.outer(stderr, stderr)
        corr = np.where(np.isfinite(scale) & (scale > 0), cov / np.where(scale > 0, scale, 1.0), np.nan)
    low, high, methods = wald(theta, stderr, lower_all, upper_all, quantile)
    # back to every parameter: those at a limit have no standard error, their interval is the limit's
    full = len(full_names)

    def spread(vector: np.ndarray, fill: float) -> np.ndarray:
        wide = np.full(full, fill)
        wide[keep] = vector
        return wide

    def spread2(matrix: np.ndarray | None) -> np.ndarray | None:
        if matrix is None:
            return None
        wide = np.full((full, full), np.nan)
        wide[np.ix_(keep, keep)] = matrix
        return wide

    intervals = np.stack([spread(low, np.nan), spread(high, np.nan)], axis=1)
    method_list = []
    j = 0
    for i, name in enumerate(full_names):
        if keep[i]:
            method_list.append(methods[j])
            j += 1
        else:
            lo, hi, method = limits["intervals"][name]
            intervals[i] = (lo, hi)
            method_list.append(method)
    out.update(cov=spread2(cov), cov_hessian=spread2(cov_h), stderr=spread(stderr, np.nan), corr=spread2(corr),
               intervals=intervals, interval_methods=tuple(method_list), at_limit=dict(limits["notes"]),
               theta=limits["theta"], limit_cost=limits["cost"],
               singular_values=relative, hints=hints, hessian=hess, quantile=float(quantile))
    return out


def wald(theta: np.ndarray, stderr: np.ndarray, lower: np.ndarray, upper: np.ndarray,
         quantile: float) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Wald intervals ``z +- quantile * se_z`` on the scale that maps each parameter's bounds
    to the whole line, mapped back: ``log(theta - lower)`` for a lower bound only (a
    positive parameter: its interval stays positive), ``log(upper - theta)`` for an upper
    bound only, ``logit`` between two bounds, ``theta`` itself without bounds; ``se_z`` by
    the delta method. Returns the low and high ends and each interval's method in words."""
    lo_b, hi_b = np.isfinite(lower), np.isfinite(upper)
    low, high, methods = np.empty_like(theta), np.empty_like(theta), []
    with np.errstate(all="ignore"):
        for i, (x, se, a, b) in enumerate(zip(theta, stderr, lower, upper)):
            if lo_b[i] and hi_b[i]:
                z, slope = np.log((x - a) / (b - x)), (b - a) / ((x - a) * (b - x))
                back = lambda v, a=a, b=b: a + (b - a) / (1.0 + np.exp(-v))  # noqa: E731
                methods.append("Wald on the logit scale")
            elif lo_b[i]:
                z, slope, back = np.log(x - a), 1.0 / (x - a), (lambda v, a=a: a + np.exp(v))
                methods.append("Wald on the log scale")
            elif hi_b[i]:
                z, slope, back = np.log(b - x), 1.0 / (b - x), (lambda v, b=b: b - np.exp(v))
                methods.append("Wald on the log scale")
            else:
                z, slope, back = x, 1.0, (lambda v: v)
                methods.append("Wald")
            half = quantile * se * abs(slope)
            ends = sorted((back(z - half), back(z + half)), key=lambda v: (np.isnan(v), v))
            low[i], high[i] = ends if np.isfinite(x) else (np.nan, np.nan)
    return low, high, tuple(methods)


def at_limits(problem: Any, theta: np.ndarray, confidence: float) -> dict[str, Any]:
    """Parameters whose best value is a limit of their range, where the cost is no better
    inside: a parameter at a finite bound (the cost there, the others fixed, is no higher),
    and the loss's nuisance parameter at the limit its `AbstractLoss.limit` names (a
    negative binomial's dispersion at infinity: the Poisson likelihood; a noise scale at 0).

    Returns ``notes`` (``{name: sentence}``), ``theta`` (the estimates, those at a limit set
    to it), ``cost`` (the cost at the limit, or None) and ``intervals`` (``{name: (low,
    high, method)}`` for the parameters at a limit)."""
    from scipy import stats as scipy_stats

    space, loss = problem.space, problem.loss
    names, theta = space.names, np.array(theta, dtype=float)
    notes: dict[str, str] = {}
    intervals: dict[str, tuple[float, float, str]] = {}
    cost = None
    here = None
    for i, name in enumerate(names):
        for side, bound in (("lower", space.lower[i]), ("upper", space.upper[i])):
            reach = abs(space.x0[i] - bound)
            if name in notes or not np.isfinite(bound) or not abs(theta[i] - bound) <= 1e-3 * reach:
                continue
            if here is None:
                here = float(problem.cost(jnp.asarray(theta)))
            trial = theta.copy()
            trial[i] = bound
            there = float(problem.cost(jnp.asarray(trial)))
            if np.isfinite(there) and there <= here + 1e-9 * max(1.0, abs(here)):
                notes[name] = (f"{name} at its {side} bound {bound:g}: the data pull it beyond (no standard error; "
                               "the others' uncertainties hold it there)")
                intervals[name] = ((bound, np.nan) if side == "lower" else (np.nan, bound)) + (f"at its {side} bound",)
                theta[i], here, cost = bound, there, there
    if loss.nuisance is not None and names[-1] not in notes and np.isfinite(theta[-1]) and theta[-1] > 0:
        arrays = problem.arrays
        mus: list[Any] = []

        def nll_at(extra: Any) -> Any:
            if not mus:  # the predictions, on first use (one solve per dataset)
                mus.extend(problem.predict(jnp.asarray(theta), k)[0] for k in range(len(problem.datasets)))
            return sum(loss.nll(mu, arrays["obs"][k], arrays["sigma"][k], arrays["mask"][k], extra)
                       for k, mu in enumerate(mus))

        given = np.concatenate([np.asarray(d.values)[d.mask] for d in problem.datasets])
        scale = float(np.sqrt(np.mean(given ** 2))) if given.size else 1.0
        sentence = loss.limit(nll_at, np.log(theta[-1]), scale)
        if sentence is not None:
            value = float(loss.limit_value())
            notes[names[-1]] = sentence
            at = float(nll_at(np.log(value) if value > 0 else -np.inf))
            cost = at if np.isfinite(at) else cost
            threshold = 0.5 * scipy_stats.chi2.ppf(confidence, 1)
            if value == np.inf and np.isfinite(at):
                low = _lower_end(nll_at, np.log(theta[-1]), at + threshold)
                intervals[names[-1]] = (low, np.inf, "likelihood ratio, the model's predictions held")
            else:
                intervals[names[-1]] = (value, np.nan, "at its limit")
            theta[-1] = value
    return {"notes": notes, "theta": theta, "cost": cost, "intervals": intervals}


def _lower_end(nll_at: Any, top: float, level: float) -> float:
    """The largest ``exp(e)`` below ``exp(top)`` where ``nll_at(e)`` rises to ``level`` (the
    lower end of a one-sided likelihood interval reaching infinity): a grid in ``e``, then
    bisection; 0 where it never does above ``exp(-30)``."""
    import jax

    grid = np.linspace(-30.0, max(float(top), 40.0), 281)
    values = np.asarray(jax.vmap(nll_at)(jnp.asarray(grid)))
    above = np.flatnonzero(~(values < level))
    if not above.size:
        return 0.0
    i = int(above[-1])
    if i == grid.size - 1:
        return float(np.exp(grid[-1]))
    a, b = grid[i], grid[i + 1]  # nll_at(a) >= level > nll_at(b)
    for _ in range(50):
        m = 0.5 * (a + b)
        if float(nll_at(m)) >= level:
            a = m
        else:
            b = m
    return float(np.exp(0.5 * (a + b)))


def _limits_only(problem: Any, limits: dict[str, Any], confidence: float) -> dict[str, Any]:
    """The statistics when every free parameter is at a limit."""
    from scipy import stats as scipy_stats

    names = problem.space.names
    p = len(names)
    nan = np.full((p, p), np.nan)
    return dict(cov=nan, cov_hessian=nan if not problem.loss.residual_form else None, corr=nan,
                stderr=np.full(p, np.nan), intervals=np.array([limits["intervals"][n][:2] for n in names]),
                interval_methods=tuple(limits["intervals"][n][2] for n in names), at_limit=dict(limits["notes"]),
                theta=limits["theta"], limit_cost=limits["cost"], singular_values=np.zeros(p), hints=[],
                hessian=None, quantile=float(scipy_stats.norm.ppf(0.5 + confidence / 2)), dof=None,
                n_points=int(sum(d.n_points for d in problem.datasets)))
