"""Population dynamics: Lotka–Volterra predator–prey."""

from __future__ import annotations

import jax.numpy as jnp

from ..model import ODEModel


def lotka_volterra_rhs(t, y, p):
    """prey' = alpha prey - beta prey predator; predator' = delta prey predator - gamma predator."""
    prey, pred = y[0], y[1]
    return jnp.stack(
        [
            p["alpha"] * prey - p["beta"] * prey * pred,
            p["delta"] * prey * pred - p["gamma"] * pred,
        ]
    )


def lotka_volterra() -> ODEModel:
    return ODEModel(
        rhs=lotka_volterra_rhs,
        params={"alpha": 0.55, "beta": 0.028, "gamma": 0.80, "delta": 0.024},
        y0=[33.0, 6.2],
        state_names=("prey", "predator"),
        name="lotka_volterra",
        t_span=(0.0, 20.0),
        units="t in years, prey in thousands of pelts, predator in thousands of pelts, alpha in 1/year, "
        "gamma in 1/year, beta in 1/(thousand pelts year), delta in 1/(thousand pelts year)",
        source="A. J. Lotka (1925), Elements of Physical Biology; V. Volterra (1926), Nature 118:558. "
        "Constants near the Hudson's Bay lynx-hare estimates of B. Carpenter (2018), "
        "'Predator-prey population dynamics: the Lotka-Volterra model in Stan'.",
        description="Predator-prey oscillations.",
    )


MODELS = {"lotka_volterra": lotka_volterra}
