"""Stochastic models (Itô SDEs with diagonal noise): Ornstein–Uhlenbeck, geometric Brownian motion."""

from __future__ import annotations

import jax.numpy as jnp

from ..model import ODEModel


def ou_drift(t, y, p):
    return p["theta"] * (p["mu"] - y)


def ou_diffusion(t, y, p):
    return p["sigma"] * jnp.ones_like(y)


def ornstein_uhlenbeck() -> ODEModel:
    return ODEModel(
        rhs=ou_drift,
        diffusion=ou_diffusion,
        params={"theta": 1.0, "mu": 0.5, "sigma": 0.3},
        y0=[2.0],
        state_names=("x",),
        name="ornstein_uhlenbeck",
        t_span=(0.0, 3.0),
        units="t in 1, x in 1, theta in 1, mu in 1, sigma in 1; nondimensional",
        source="G. E. Uhlenbeck & L. S. Ornstein (1930), Phys. Rev. 36:823-841. "
        "Mean mu + (x0 - mu) exp(-theta t), variance sigma^2 (1 - exp(-2 theta t)) / (2 theta).",
        description="Ornstein-Uhlenbeck process dx = theta (mu - x) dt + sigma dW.",
    )


def gbm_drift(t, y, p):
    return p["mu"] * y


def gbm_diffusion(t, y, p):
    return p["sigma"] * y


def geometric_brownian_motion() -> ODEModel:
    return ODEModel(
        rhs=gbm_drift,
        diffusion=gbm_diffusion,
        params={"mu": 0.1, "sigma": 0.2},
        y0=[1.0],
        state_names=("S",),
        name="geometric_brownian_motion",
        t_span=(0.0, 1.0),
        units="t in 1, S in 1, mu in 1, sigma in 1; nondimensional: S relative to its initial value "
        "and t to the time unit of the rates mu and sigma",
        source="F. Black & M. Scholes (1973), J. Polit. Econ. 81:637-654; mean S0 exp(mu t), "
        "variance S0^2 exp(2 mu t) (exp(sigma^2 t) - 1).",
        description="Geometric Brownian motion dS = mu S dt + sigma S dW (Ito).",
    )


MODELS = {"ornstein_uhlenbeck": ornstein_uhlenbeck, "geometric_brownian_motion": geometric_brownian_motion}
