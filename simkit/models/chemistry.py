"""Chemical kinetics: Robertson, Oregonator, HIRES, Brusselator."""

from __future__ import annotations

import jax.numpy as jnp

from ..model import ODEModel

_HW2 = "E. Hairer & G. Wanner (1996), Solving ODEs II, 2nd ed., §IV.10"


def robertson_rhs(t, y, p):
    """Robertson's autocatalytic reaction (k1 = 0.04, k2 = 3e7, k3 = 1e4)."""
    y1, y2, y3 = y[0], y[1], y[2]
    r1 = p["k1"] * y1
    r2 = p["k2"] * y2 * y2
    r3 = p["k3"] * y2 * y3
    return jnp.stack([-r1 + r3, r1 - r2 - r3, r2])


def robertson() -> ODEModel:
    return ODEModel(
        rhs=robertson_rhs,
        params={"k1": 0.04, "k2": 3.0e7, "k3": 1.0e4},
        y0=[1.0, 0.0, 0.0],
        state_names=("y1", "y2", "y3"),
        name="robertson",
        t_span=(0.0, 1.0e5),
        stiff=True,
        source=f"H. H. Robertson (1966), in Numerical Analysis, Walsh (ed.), 178-182; {_HW2}. "
        "Mass y1 + y2 + y3 is conserved.",
        description="Stiff chemical kinetics with a quasi-steady intermediate.",
    )


def oregonator_rhs(t, y, p):
    """Field–Noyes Oregonator (Belousov–Zhabotinsky reaction), scaled form."""
    y1, y2, y3 = y[0], y[1], y[2]
    s, q, w = p["s"], p["q"], p["w"]
    return jnp.stack(
        [s * (y2 + y1 * (1.0 - q * y1 - y2)), (y3 - (1.0 + y1) * y2) / s, w * (y1 - y3)]
    )


def oregonator() -> ODEModel:
    return ODEModel(
        rhs=oregonator_rhs,
        params={"s": 77.27, "q": 8.375e-6, "w": 0.161},
        y0=[1.0, 2.0, 3.0],
        state_names=("y1", "y2", "y3"),
        name="oregonator",
        t_span=(0.0, 360.0),
        stiff=True,
        source=f"R. J. Field & R. M. Noyes (1974), J. Chem. Phys. 60:1877-1884; {_HW2}, eq. (10.4).",
        description="Oregonator: stiff relaxation oscillations of the BZ reaction.",
    )


def hires_rhs(t, y, p):
    """HIRES: 8 species of plant photomorphogenesis (Schäfer 1975)."""
    y1, y2, y3, y4, y5, y6, y7, y8 = (y[i] for i in range(8))
    k = p
    bind = k["k10"] * y6 * y8
    return jnp.stack(
        [
            -k["k1"] * y1 + k["k2"] * y2 + k["k3"] * y3 + k["k4"],
            k["k1"] * y1 - k["k5"] * y2,
            -k["k6"] * y3 + k["k2"] * y4 + k["k7"] * y5,
            k["k3"] * y2 + k["k1"] * y3 - k["k8"] * y4,
            -k["k9"] * y5 + k["k2"] * y6 + k["k2"] * y7,
            -bind + k["k11"] * y4 + k["k1"] * y5 - k["k2"] * y6 + k["k11"] * y7,
            bind - k["k12"] * y7,
            -bind + k["k12"] * y7,
        ]
    )


def hires() -> ODEModel:
    return ODEModel(
        rhs=hires_rhs,
        params={
            "k1": 1.71, "k2": 0.43, "k3": 8.32, "k4": 0.0007, "k5": 8.75, "k6": 10.03,
            "k7": 0.035, "k8": 1.12, "k9": 1.745, "k10": 280.0, "k11": 0.69, "k12": 1.81,
        },
        y0=[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0057],
        state_names=tuple(f"y{i}" for i in range(1, 9)),
        name="hires",
        t_span=(0.0, 321.8122),
        stiff=True,
        source=f"E. Schäfer (1975), J. Math. Biol. 2:41-56; {_HW2}, eq. (10.3); "
        "F. Mazzia & C. Magherini, Test Set for IVP Solvers (HIRES).",
        description="High Irradiance RESponse: 8-species stiff kinetics.",
    )


def brusselator_rhs(t, y, p):
    """x' = a + x^2 y - (b + 1) x, y' = b x - x^2 y."""
    x, yy = y[0], y[1]
    x2y = x * x * yy
    return jnp.stack([p["a"] + x2y - (p["b"] + 1.0) * x, p["b"] * x - x2y])


def brusselator() -> ODEModel:
    return ODEModel(
        rhs=brusselator_rhs,
        params={"a": 1.0, "b": 3.0},
        y0=[1.5, 3.0],
        state_names=("x", "y"),
        name="brusselator",
        t_span=(0.0, 20.0),
        source="I. Prigogine & R. Lefever (1968), J. Chem. Phys. 48:1695; E. Hairer, S. P. Nørsett "
        "& G. Wanner, Solving ODEs I, §II.16, eq. (16.12).",
        description="Brusselator: a limit cycle for b > 1 + a^2.",
    )


MODELS = {
    "robertson": robertson,
    "oregonator": oregonator,
    "hires": hires,
    "brusselator": brusselator,
}
