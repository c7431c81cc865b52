"""Uncertainty at the optimum: covariance from the Jacobian (``s^2 (J^T J)^-1``) and from
the Hessian of the negative log-likelihood (``jax.hessian``), standard errors, correlation,
Wald intervals, identifiability hints from the singular values of the scaled Jacobian, and
profile likelihoods."""

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

    theta_j = jnp.asarray(theta)
    names = problem.space.names
    p = len(names)
    out: dict[str, Any] = {}
    if problem.loss.residual_form:
        if least_squares is not None and all(np.all(np.isfinite(a)) for a in least_squares):
            r, jac = least_squares
        else:
            r, jac = jacobian(problem.program, problem.arrays, theta_j)
        r, jac = np.asarray(r)[problem._flat_mask], np.asarray(jac)[problem._flat_mask]
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
        hess = np.asarray(hessian(problem.program, problem.arrays, theta_j, of="nll"))
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
            side, bound = ("lower", problem.space.lower[i]) if g[i] > 0 else ("upper", problem.space.upper[i])
            # and it has come close to that bound (a thousandth of the start's distance)
            if np.isfinite(bound) and abs(theta[i] - bound) <= 1e-3 * abs(problem.space.x0[i] - bound):
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
    out.update(cov=cov, cov_hessian=cov_h, stderr=stderr, corr=corr,
               intervals=np.stack([theta - quantile * stderr, theta + quantile * stderr], axis=1),
               singular_values=relative, hints=hints, hessian=hess, quantile=float(quantile))
    return out
