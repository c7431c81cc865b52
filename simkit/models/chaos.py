"""Chaotic flows: Lorenz, Rössler."""

from __future__ import annotations

import jax.numpy as jnp

from ..model import ODEModel


def lorenz_rhs(t, y, p):
    """Lorenz (1963): x' = sigma (y - x), y' = x (rho - z) - y, z' = x y - beta z."""
    x, yy, z = y[0], y[1], y[2]
    return jnp.stack(
        [p["sigma"] * (yy - x), x * (p["rho"] - z) - yy, x * yy - p["beta"] * z]
    )


def lorenz() -> ODEModel:
    return ODEModel(
        rhs=lorenz_rhs,
        params={"sigma": 10.0, "rho": 28.0, "beta": 8.0 / 3.0},
        y0=[1.0, 1.0, 1.0],
        state_names=("x", "y", "z"),
        name="lorenz",
        t_span=(0.0, 20.0),
        units="t in 1, x in 1, y in 1, z in 1, sigma in 1, rho in 1, beta in 1; nondimensional "
        "(scaled convection amplitudes and time: sigma the Prandtl number, rho the reduced Rayleigh number)",
        source="E. N. Lorenz (1963), Deterministic nonperiodic flow, J. Atmos. Sci. 20:130-141; "
        "classic constants sigma=10, rho=28, beta=8/3.",
        description="Lorenz convection model; chaotic for the classic constants.",
    )


def rossler_rhs(t, y, p):
    """Rössler (1976): x' = -y - z, y' = x + a y, z' = b + z (x - c)."""
    x, yy, z = y[0], y[1], y[2]
    return jnp.stack([-yy - z, x + p["a"] * yy, p["b"] + z * (x - p["c"])])


def rossler() -> ODEModel:
    return ODEModel(
        rhs=rossler_rhs,
        params={"a": 0.2, "b": 0.2, "c": 5.7},
        y0=[1.0, 1.0, 1.0],
        state_names=("x", "y", "z"),
        name="rossler",
        t_span=(0.0, 50.0),
        units="t in 1, x in 1, y in 1, z in 1, a in 1, b in 1, c in 1; nondimensional",
        source="O. E. Rössler (1976), An equation for continuous chaos, Phys. Lett. A 57:397-398; "
        "a=b=0.2, c=5.7.",
        description="Rössler attractor.",
    )


MODELS = {"lorenz": lorenz, "rossler": rossler}
