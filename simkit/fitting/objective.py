"""Losses (as objects) and the map from free parameters to model predictions.

A loss compares the model's prediction ``mu`` with observations ``y`` at the given points.
Residual losses (`LeastSquares`, `LogNormal`) give residuals ``r`` with cost
``0.5 * sum(r**2)`` for Levenberg-Marquardt / Gauss-Newton; every loss gives a negative
log-likelihood for quasi-Newton solvers and for Hessian-based uncertainties. Losses with a
nuisance parameter (`GaussianNLL`'s noise scale, `NegativeBinomial`'s dispersion) estimate it
with the model parameters (as its logarithm).
"""

from __future__ import annotations

from typing import Any, ClassVar

import equinox as eqx
import jax.numpy as jnp
from jax.scipy.special import gammaln

from ..errors import InputError

TINY = 1e-300


class AbstractLoss(eqx.Module):
    """``residual_form``: has `residuals`; ``nuisance``: name of an extra estimated
    parameter (its log is optimised), or ``None``."""

    residual_form: ClassVar[bool] = False
    nuisance: ClassVar[str | None] = None

    def residuals(self, mu, y, sigma):
        raise TypeError(f"{type(self).__name__} is a likelihood, not a residual loss: use a scalar "
                        "solver (LBFGS, LBFGSB)")

    def nll(self, mu, y, sigma, mask, extra):
        """Negative log-likelihood summed over the points in ``mask``."""
        raise NotImplementedError

    def check(self, values) -> None:
        """Raise for data the loss cannot take."""


class LeastSquares(AbstractLoss):
    """``r = (mu - y) / sigma`` (sigma = 1 without per-point sigmas)."""

    residual_form = True

    def residuals(self, mu, y, sigma):
        return (mu - y) / sigma

    def nll(self, mu, y, sigma, mask, extra):
        r = jnp.where(mask, (mu - y) / sigma, 0.0)
        return 0.5 * jnp.sum(r * r)


class LogNormal(AbstractLoss):
    """Least squares on logarithms: ``r = (log mu - log y) / sigma``, for positive data with
    multiplicative noise (e.g. population counts over orders of magnitude)."""

    residual_form = True

    def residuals(self, mu, y, sigma):
        return (jnp.log(jnp.maximum(mu, TINY)) - jnp.log(jnp.maximum(y, TINY))) / sigma

    def nll(self, mu, y, sigma, mask, extra):
        r = jnp.where(mask, self.residuals(mu, jnp.where(mask, y, 1.0), sigma), 0.0)
        return 0.5 * jnp.sum(r * r)

    def check(self, values) -> None:
        import numpy as np

        given = values[np.isfinite(values)]
        if np.any(given <= 0):
            raise InputError("LogNormal loss needs positive data; found values <= 0")


class GaussianNLL(AbstractLoss):
    """Gaussian likelihood with one noise scale ``noise`` estimated from the data:
    ``sum(0.5 ((mu - y) / noise)^2 + log noise + 0.5 log 2 pi)``."""

    nuisance = "noise"

    def nll(self, mu, y, sigma, mask, extra):
        s = jnp.exp(extra)
        r = jnp.where(mask, (mu - y) / s, 0.0)
        n = jnp.sum(mask)
        return 0.5 * jnp.sum(r * r) + n * (extra + 0.5 * jnp.log(2 * jnp.pi))


class Poisson(AbstractLoss):
    """Counts: ``sum(mu - y log mu + log y!)``."""

    def nll(self, mu, y, sigma, mask, extra):
        mu = jnp.maximum(mu, TINY)
        y = jnp.where(mask, y, 0.0)
        return jnp.sum(jnp.where(mask, mu - y * jnp.log(mu) + gammaln(y + 1.0), 0.0))

    def check(self, values) -> None:
        import numpy as np

        given = values[np.isfinite(values)]
        if np.any(given < 0) or np.any(given != np.round(given)):
            raise InputError("Poisson loss needs non-negative integer counts")


class NegativeBinomial(AbstractLoss):
    """Over-dispersed counts, variance ``mu + mu^2 / dispersion``, the dispersion estimated."""

    nuisance = "dispersion"

    def nll(self, mu, y, sigma, mask, extra):
        k = jnp.exp(extra)
        mu = jnp.maximum(mu, TINY)
        y = jnp.where(mask, y, 0.0)
        logp = (gammaln(y + k) - gammaln(k) - gammaln(y + 1.0) + k * jnp.log(k / (k + mu))
                + y * jnp.log(mu / (k + mu)))
        return -jnp.sum(jnp.where(mask, logp, 0.0))

    check = Poisson.check


def as_loss(loss: Any) -> AbstractLoss:
    if loss is None:
        return LeastSquares()
    if not isinstance(loss, AbstractLoss):
        raise InputError(f"loss must be a simkit loss object (LeastSquares(), LogNormal(), GaussianNLL(), "
                         f"Poisson(), NegativeBinomial()), got {loss!r}")
    return loss
