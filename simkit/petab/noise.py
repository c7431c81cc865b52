"""PEtab's noise models: the negative log-likelihood of one measurement.

For a measurement ``m``, a simulated observable ``h`` and a noise parameter ``s`` (the
standard deviation of a normal, the scale of a Laplace distribution), on the observable's
transformation ``lin``, ``log`` or ``log10`` (PEtab 1.0, "Noise distributions"):

- normal, lin:    ``log(2 pi s^2) / 2 + ((m - h) / s)^2 / 2``
- normal, log:    ``log(2 pi s^2 m^2) / 2 + ((log m - log h) / s)^2 / 2``
- normal, log10:  ``log(2 pi s^2 m^2 log(10)^2) / 2 + ((log10 m - log10 h) / s)^2 / 2``
- laplace, lin:   ``log(2 s) + |m - h| / s``
- laplace, log:   ``log(2 s m) + |log m - log h| / s``
- laplace, log10: ``log(2 s m log(10)) + |log10 m - log10 h| / s``

The ``m`` factors are the Jacobian of the transformation, so the value is the density of the
untransformed measurement. Under a log transformation a simulated ``h`` at or below zero (a
solve's noise around a quantity that decayed to zero) counts as the smallest normal float:
a finite, very poor value instead of NaN.
"""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp

from .sbml import UnsupportedFeatureError

DISTRIBUTIONS = ("normal", "laplace")
TRANSFORMATIONS = ("lin", "log", "log10")


def check_noise_model(observable_id: str, distribution: str, transformation: str) -> None:
    """Raise `UnsupportedFeatureError` naming the PEtab feature if the pair is not one above."""
    if distribution not in DISTRIBUTIONS:
        raise UnsupportedFeatureError(
            f"observable {observable_id!r}: PEtab noiseDistribution {distribution!r} is not supported "
            f"(supported: {', '.join(DISTRIBUTIONS)})")
    if transformation not in TRANSFORMATIONS:
        raise UnsupportedFeatureError(
            f"observable {observable_id!r}: PEtab observableTransformation {transformation!r} is not "
            f"supported (supported: {', '.join(TRANSFORMATIONS)})")


def _transform(value: Any, transformation: str) -> Any:
    if transformation == "log":
        return jnp.log(value)
    if transformation == "log10":
        return jnp.log10(value)
    return value


def _positive(simulation: Any, transformation: str) -> Any:
    """The simulated value a log transformation reads: at least the smallest normal float.
    A positive quantity that decays to zero comes out of a solve as noise of either sign
    below its absolute tolerance (Perelson's virus load at -1e-8 after t = 4 for some
    starts); its log would be NaN, which makes a start's objective NaN and stalls the
    optimiser's steps near it. At the floor the value is finite and very poor (log10 of
    2.2e-308 is -308) and flat in the parameters."""
    if transformation == "lin":
        return simulation
    simulation = jnp.asarray(simulation)
    return jnp.maximum(simulation, jnp.finfo(simulation.dtype).tiny)


def _residual(measurement: Any, simulation: Any, transformation: str) -> tuple[Any, Any]:
    """``transform(m) - transform(h)`` (``h`` at least the smallest normal float under a log
    transformation: `_positive`) and the log of the transformation's Jacobian
    ``|d transform(m) / dm|^-1`` at the measurement (0 on the linear scale)."""
    residual = _transform(measurement, transformation) - _transform(_positive(simulation, transformation),
                                                                    transformation)
    if transformation == "log":
        return residual, jnp.log(measurement)
    if transformation == "log10":
        return residual, jnp.log(measurement * math.log(10.0))
    return residual, 0.0


def negative_log_likelihood(measurement: Any, simulation: Any, noise: Any, distribution: str,
                            transformation: str) -> Any:
    """Elementwise negative log-likelihood of PEtab's noise model (formulas above).

    Parameters
    ----------
    measurement, simulation, noise : array_like, same shape
        Measured value, simulated observable (both untransformed) and noise parameter
        (normal: standard deviation; laplace: scale), on the transformation's scale.
    distribution : {"normal", "laplace"}
    transformation : {"lin", "log", "log10"}

    Returns
    -------
    jax.Array
        Same shape as ``measurement``.
    """
    residual, jacobian = _residual(measurement, simulation, transformation)
    if distribution == "normal":
        return 0.5 * jnp.log(2.0 * math.pi * noise**2) + 0.5 * (residual / noise) ** 2 + jacobian
    return jnp.log(2.0 * noise) + jnp.abs(residual / noise) + jacobian


NORMAL_OFFSET = 20.0  # added to each normal measurement's normalisation term in `normal_residuals`


def normal_residuals(measurement: Any, simulation: Any, noise: Any, transformation: str) -> tuple[Any, Any]:
    """The normal noise model's negative log-likelihood as a sum of squares, for Gauss-Newton
    methods: ``nll = (r**2 + c**2) / 2 - NORMAL_OFFSET`` elementwise, with the weighted residual
    ``r = (transform(m) - transform(h)) / s`` and ``c = sqrt(2 (log(2 pi s^2) / 2 + log J +
    NORMAL_OFFSET))`` carrying the noise's normalisation (its argument held at or above 1e-12:
    exact while ``log(2 pi s^2) / 2 + log J > -20``, e.g. any ``s`` above 1e-9 with ``J = 1``).

    Parameters
    ----------
    measurement, simulation, noise : array_like, same shape
        As in `negative_log_likelihood`.
    transformation : {"lin", "log", "log10"}

    Returns
    -------
    tuple of jax.Array
        ``(r, c)``, each the shape of ``measurement``.
    """
    residual, jacobian = _residual(measurement, simulation, transformation)
    norm = 0.5 * jnp.log(2.0 * math.pi * noise**2) + jacobian + NORMAL_OFFSET
    return residual / noise, jnp.sqrt(2.0 * jnp.maximum(norm, 1e-12))
