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
    """A loss of `simkit.fit`: how the model's prediction ``mu`` is compared with data ``y``.

    Subclass it for another likelihood: implement `nll` (and `residuals` with
    ``residual_form = True`` for Levenberg-Marquardt / Gauss-Newton), and `check` to refuse
    data the loss cannot take.

    Attributes
    ----------
    residual_form : bool
        The loss has `residuals` (cost ``0.5 * sum(r**2)``), for residual optimisers (a
        class variable).
    nuisance : str or None
        Name of an extra estimated parameter (its log is optimised, passed as ``extra``),
        or ``None`` (a class variable).
    uses_sigma : bool
        The loss reads the datasets' ``sigma`` (default True); `simkit.fit` refuses data
        with sigma for a loss that does not (`GaussianNLL` estimates its one noise scale,
        `Poisson` and `NegativeBinomial` have their own variance): they were ignored in
        silence. A class variable.
    data_power : int
        The power of the data's unit in which the loss is expressed when the data have no
        ``sigma`` (`LeastSquares`: 2, a sum of squares in data units; default 0: a
        likelihood, or unit-free). The scalar optimisers (`BFGS`, `LBFGS`, `LBFGSB`), whose
        tolerances are absolute, then minimise the loss divided by the data's root mean
        square to this power: the same estimate, and a stop that does not depend on the
        data's scale (data of size 1e-6 otherwise "converge" at the start). A class variable.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit.fitting import AbstractLoss
    >>> class Laplace(AbstractLoss):  # absolute deviations, unit scale
    ...     def nll(self, mu, y, sigma, mask, extra):
    ...         return jnp.sum(jnp.where(mask, jnp.abs(mu - y) / sigma, 0.0))
    >>> Laplace().nll(jnp.array([1.0, 2.0]), jnp.array([1.5, 3.0]), 1.0, jnp.array([True, True]), None).item()
    1.5
    """

    residual_form: ClassVar[bool] = False
    nuisance: ClassVar[str | None] = None
    data_power: ClassVar[int] = 0
    uses_sigma: ClassVar[bool] = True

    def residuals(self, mu, y, sigma):
        """Residuals ``r``, whose cost is ``0.5 * sum(r**2)`` (residual losses only).

        Parameters
        ----------
        mu : jax.Array
            Model predictions at the observed points.
        y : jax.Array
            Observations, same shape.
        sigma : jax.Array or float
            Standard deviations (1 without per-point sigmas).

        Returns
        -------
        jax.Array
            Same shape as ``mu``.

        Raises
        ------
        TypeError
            A likelihood loss (``residual_form = False``): use a scalar optimiser.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit import LeastSquares
        >>> LeastSquares().residuals(jnp.array([1.0, 2.0]), jnp.array([1.5, 2.0]), 0.5).tolist()
        [-1.0, 0.0]
        """
        raise TypeError(f"{type(self).__name__} is a likelihood, not a residual loss: use a scalar "
                        "solver (LBFGS, LBFGSB)")

    def nll(self, mu, y, sigma, mask, extra):
        """Negative log-likelihood summed over the points in ``mask``.

        Parameters
        ----------
        mu : jax.Array
            Model predictions, shape ``(n_times, n_observed)`` (or any, as ``y``).
        y : jax.Array
            Observations, same shape (anything where ``mask`` is False).
        sigma : jax.Array or float
            Standard deviations (1 without per-point sigmas).
        mask : jax.Array
            Booleans, same shape: the points that count.
        extra : jax.Array or None
            The log of the `nuisance` parameter, for losses that have one.

        Returns
        -------
        jax.Array
            A scalar.

        Raises
        ------
        NotImplementedError
            On the abstract class.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit import LeastSquares
        >>> mu, y, mask = jnp.array([1.0, 2.0]), jnp.array([1.5, 2.0]), jnp.array([True, True])
        >>> LeastSquares().nll(mu, y, 0.5, mask, None).item()  # 0.5 * sum(r**2)
        0.5
        """
        raise NotImplementedError

    def check(self, values) -> None:
        """Raise for data the loss cannot take (called by `simkit.fit` before compiling).

        Parameters
        ----------
        values : numpy.ndarray
            The observed values (NaN where missing).

        Raises
        ------
        InputError
            Data outside the loss's domain (e.g. non-positive values for `LogNormal`,
            non-integer counts for `Poisson`).

        Examples
        --------
        >>> import numpy as np
        >>> from simkit import Poisson
        >>> Poisson().check(np.array([0.0, 3.0, np.nan]))  # counts: accepted
        >>> Poisson().check(np.array([1.5]))
        Traceback (most recent call last):
        ...
        simkit.errors.InputError: Poisson loss needs non-negative integer counts
        """


class LeastSquares(AbstractLoss):
    """Least squares: ``r = (mu - y) / sigma`` (sigma = 1 without per-point sigmas).

    The default loss of `simkit.fit` (with `LevenbergMarquardt`). Takes no arguments.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit import LeastSquares
    >>> LeastSquares().residuals(jnp.array([1.0, 2.0]), jnp.array([1.5, 2.0]), 0.5).tolist()
    [-1.0, 0.0]
    """

    residual_form = True
    data_power = 2

    def residuals(self, mu, y, sigma):
        return (mu - y) / sigma

    def nll(self, mu, y, sigma, mask, extra):
        r = jnp.where(mask, (mu - y) / sigma, 0.0)
        return 0.5 * jnp.sum(r * r)


class LogNormal(AbstractLoss):
    """Least squares on logarithms: ``r = (log mu - log y) / sigma``, for positive data with
    multiplicative noise (e.g. population counts over orders of magnitude).

    Takes no arguments. `simkit.fit` refuses data with values ``<= 0``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit import LogNormal
    >>> LogNormal().residuals(jnp.array([1.0, jnp.e]), jnp.array([1.0, 1.0]), 1.0).tolist()
    [0.0, 1.0]
    """

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
    ``sum(0.5 ((mu - y) / noise)^2 + log noise + 0.5 log 2 pi)``.

    ``GaussianNLL(per_observable=True)``: one noise scale per observable, named
    ``"noise:<column>"`` by the datasets' column names (shared by datasets with the same
    column name). The fit estimates ``log noise`` with the model parameters (the
    ``extra`` argument of `nll`); a likelihood: use `BFGS` (the default for it), `LBFGS` or
    `LBFGSB`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit import GaussianNLL
    >>> mu, y, mask = jnp.array([1.0, 2.0]), jnp.array([1.5, 2.0]), jnp.array([True, True])
    >>> round(GaussianNLL().nll(mu, y, 1.0, mask, jnp.log(0.5)).item(), 6)  # noise = 0.5
    0.951583
    """

    nuisance = "noise"
    uses_sigma = False
    per_observable: bool = False

    def nll(self, mu, y, sigma, mask, extra):
        s = jnp.exp(extra)
        r = jnp.where(mask, (mu - y) / s, 0.0)
        # extra: one log noise, or one per point (per_observable)
        return 0.5 * jnp.sum(r * r) + jnp.sum(jnp.where(mask, extra + 0.5 * jnp.log(2 * jnp.pi), 0.0))


class Poisson(AbstractLoss):
    """Counts: ``sum(mu - y log mu + log y!)``.

    Takes no arguments. `simkit.fit` refuses data that are not non-negative integers.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit import Poisson
    >>> mu, y, mask = jnp.array([2.0, 3.0]), jnp.array([1.0, 4.0]), jnp.array([True, True])
    >>> round(Poisson().nll(mu, y, 1.0, mask, None).item(), 6)
    3.090457
    """

    uses_sigma = False

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
    """Over-dispersed counts, variance ``mu + mu^2 / dispersion``, the dispersion estimated.

    Takes no arguments. The fit estimates ``log dispersion`` with the model parameters
    (the ``extra`` argument of `nll`); `simkit.fit` refuses data that are not non-negative
    integers.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit import NegativeBinomial
    >>> mu, y, mask = jnp.array([2.0, 3.0]), jnp.array([1.0, 4.0]), jnp.array([True, True])
    >>> round(NegativeBinomial().nll(mu, y, 1.0, mask, jnp.log(10.0)).item(), 6)  # dispersion 10
    3.229098
    """

    nuisance = "dispersion"
    uses_sigma = False

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
