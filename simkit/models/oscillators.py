"""Nonlinear oscillators: Van der Pol (mild and stiff)."""

from __future__ import annotations

import jax.numpy as jnp

from ..model import ODEModel


def van_der_pol_rhs(t, y, p):
    """x' = v, v' = mu (1 - x^2) v - x."""
    x, v = y[0], y[1]
    return jnp.stack([v, p["mu"] * (1.0 - x * x) * v - x])


_SOURCE = (
    "B. van der Pol (1926), On relaxation-oscillations, Phil. Mag. 2:978-992; "
    "E. Hairer & G. Wanner, Solving ODEs II, §IV.1."
)


def van_der_pol() -> ODEModel:
    return ODEModel(
        rhs=van_der_pol_rhs,
        params={"mu": 1.0},
        y0=[2.0, 0.0],
        state_names=("x", "v"),
        name="van_der_pol",
        t_span=(0.0, 20.0),
        source=_SOURCE,
        description="Van der Pol oscillator, mu = 1 (non-stiff).",
    )


def van_der_pol_stiff() -> ODEModel:
    return ODEModel(
        rhs=van_der_pol_rhs,
        params={"mu": 1000.0},
        y0=[2.0, 0.0],
        state_names=("x", "v"),
        name="van_der_pol_stiff",
        t_span=(0.0, 3000.0),
        stiff=True,
        source=_SOURCE,
        description="Van der Pol relaxation oscillator, mu = 1000 (stiff; period ~1614).",
    )


MODELS = {"van_der_pol": van_der_pol, "van_der_pol_stiff": van_der_pol_stiff}
