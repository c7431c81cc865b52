"""Chemical kinetics: Robertson, Oregonator, HIRES, Brusselator, POLLU, E5."""

from __future__ import annotations

import jax.numpy as jnp

from ..model import ODEModel

_HW2 = "E. Hairer & G. Wanner (1996), Solving ODEs II, 2nd ed., §IV.10"


def _unit_free(names) -> str:
    """``units`` of a model published without physical units: ``"1"`` for time and every name."""
    return ", ".join(f"{name} in 1" for name in ("t", *names))


def robertson_rhs(t, y, p):
    """Robertson's autocatalytic reaction (k1 = 0.04, k2 = 3e7, k3 = 1e4).

    ``f2`` is written as ``-(f1 + f3)``, the same function, so that the rates cancel in
    ``f1 + f2 + f3`` to rounding of ``f2`` rather than of the rates: y1 + y2 + y3 is conserved,
    and an implicit method's Newton corrections in that direction (which ``I - c J`` does not
    damp: it is a zero eigenvalue of ``J``) are not rate-sized rounding noise scaled by the
    step. Measured to t = 1e11 at rtol 1e-10 (benchmarks/experiments/conserving_rhs.py): with
    Rodas5P a 400-570x smaller error than ``f2 = r1 - r2 - r3``, and with Rodas5P, RadauIIA5
    and BDF 16-1,800x fewer rejected steps (benchmarks/measurements.md, "Robertson: rounding
    in the conserved direction").
    """
    y1, y2, y3 = y[0], y[1], y[2]
    r1 = p["k1"] * y1
    r2 = p["k2"] * y2 * y2
    r3 = p["k3"] * y2 * y3
    f1, f3 = -r1 + r3, r2
    return jnp.stack([f1, -(f1 + f3), f3])


def robertson() -> ODEModel:
    return ODEModel(
        rhs=robertson_rhs,
        params={"k1": 0.04, "k2": 3.0e7, "k3": 1.0e4},
        y0=[1.0, 0.0, 0.0],
        state_names=("y1", "y2", "y3"),
        name="robertson",
        t_span=(0.0, 1.0e5),
        stiff=True,
        units=_unit_free(("y1", "y2", "y3", "k1", "k2", "k3"))
        + "; as published (a test problem without physical units): y1 + y2 + y3 = 1",
        source=f"H. H. Robertson (1966), in Numerical Analysis, Walsh (ed.), 178-182; {_HW2}. "
        "Mass y1 + y2 + y3 is conserved.",
        description="Stiff chemical kinetics with a quasi-steady intermediate.",
    )


def robertson_rates_rhs(t, y, p):
    """Robertson as the Test Set for IVP Solvers writes it: ``f2 = r1 - r3 - r2`` with the
    rates ``r1 = k1 y1``, ``r2 = k2 y2^2``, ``r3 = k3 y2 y3`` (the same function as
    `robertson_rhs`; its three components round apart, so ``f1 + f2 + f3`` is rounding of
    the rates' size, not zero). For ``robertson().replace(rhs=robertson_rates_rhs)``: the
    form users copy from the literature, on which the stiff kernels are measured too
    (``benchmarks/stiff_step_counts.py``)."""
    r1 = p["k1"] * y[0]
    r2 = p["k2"] * y[1] * y[1]
    r3 = p["k3"] * y[1] * y[2]
    return jnp.stack([-r1 + r3, r1 - r3 - r2, r2])


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
        units=_unit_free(("y1", "y2", "y3", "s", "q", "w")) + "; nondimensional (Field-Noyes scaled form)",
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
        units=_unit_free([f"y{i}" for i in range(1, 9)] + [f"k{i}" for i in range(1, 13)])
        + "; as published (a test problem without physical units)",
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
        units="t in 1, x in 1, y in 1, a in 1, b in 1; nondimensional",
        source="I. Prigogine & R. Lefever (1968), J. Chem. Phys. 48:1695; E. Hairer, S. P. Nørsett "
        "& G. Wanner, Solving ODEs I, §II.16, eq. (16.12).",
        description="Brusselator: a limit cycle for b > 1 + a^2.",
    )


_POLLU_K = (0.35, 0.266e2, 0.123e5, 0.86e-3, 0.82e-3, 0.15e5, 0.13e-3, 0.24e5, 0.165e5, 0.9e4,
            0.22e-1, 0.12e5, 0.188e1, 0.163e5, 0.48e7, 0.35e-3, 0.175e-1, 0.1e9, 0.444e12,
            0.124e4, 0.21e1, 0.578e1, 0.474e-1, 0.178e4, 0.312e1)

# published reference solutions (Mazzia & Magherini, Test Set for IVP Solvers, problems ROBER,
# HIRES and POLLU); checked here against SciPy's Radau at rtol 1e-12 (HIRES: 2e-13 relative,
# ROBER at t = 1e11 with atol 1e-22: 4e-10 relative)
ROBERTSON_REFERENCE_T1E11 = (0.2083340149701255e-7, 0.8333360770334713e-13, 0.9999999791665050)
HIRES_REFERENCE_T321 = (
    0.7371312573325668e-3, 0.1442485726316185e-3, 0.5888729740967575e-4, 0.1175651343283149e-2,
    0.2386356198831331e-2, 0.6238968252742796e-2, 0.2849998395185769e-2, 0.2850001604814231e-2,
)
POLLU_REFERENCE_T60 = (
    0.56462554800227e-1, 0.13424841304223e0, 0.41397343310994e-8, 0.55231402074843e-2,
    0.20189772623021e-6, 0.14645418634940e-6, 0.77842491189979e-1, 0.32450753533960e0,
    0.74940133838804e-2, 0.16222931573015e-7, 0.11358638332570e-7, 0.22305059757213e-2,
    0.20871628827986e-3, 0.13969210168401e-4, 0.89648848568982e-2, 0.43528463693301e-17,
    0.68992196962634e-2, 0.10078030373659e-3, 0.17721465139699e-5, 0.56829432923163e-4,
)


_POLLU_SPECIES = ("NO2", "NO", "O3P", "O3", "HO2", "OH", "HCHO", "CO", "ALD", "MEO2",
                  "C2O3", "CO2", "PAN", "CH3O", "HNO3", "O1D", "SO2", "SO4", "NO3", "N2O5")
_POLLU_SECOND_ORDER = (2, 3, 6, 8, 9, 10, 12, 14, 20, 23, 24)  # reactions r = k c_a c_b; the rest r = k c
# Verwer (1994): concentrations in ppm, time in minutes; rate constants in 1/min (first order)
# and 1/(ppm min) (second order)
_POLLU_UNITS = ", ".join(
    ["t in min"] + [f"{s} in ppm" for s in _POLLU_SPECIES]
    + [f"k{i} in {'1/(ppm min)' if i in _POLLU_SECOND_ORDER else '1/min'}" for i in range(1, 26)])


def pollu_rhs(t, y, p):
    """Air pollution model of Verwer (1994): 20 species, 25 reactions (rates k1..k25)."""
    c = [None] + [y[i] for i in range(20)]  # 1-based species, as in the source
    k = [None] + [p[f"k{i}"] for i in range(1, 26)]
    r = [None,
         k[1] * c[1], k[2] * c[2] * c[4], k[3] * c[5] * c[2], k[4] * c[7], k[5] * c[7],
         k[6] * c[7] * c[6], k[7] * c[9], k[8] * c[9] * c[6], k[9] * c[11] * c[2],
         k[10] * c[11] * c[1], k[11] * c[13], k[12] * c[10] * c[2], k[13] * c[14],
         k[14] * c[1] * c[6], k[15] * c[3], k[16] * c[4], k[17] * c[4], k[18] * c[16],
         k[19] * c[16], k[20] * c[17] * c[6], k[21] * c[19], k[22] * c[19],
         k[23] * c[1] * c[4], k[24] * c[19] * c[1], k[25] * c[20]]
    return jnp.stack([
        -r[1] - r[10] - r[14] - r[23] - r[24] + r[2] + r[3] + r[9] + r[11] + r[12] + r[22] + r[25],
        -r[2] - r[3] - r[9] - r[12] + r[1] + r[21],
        -r[15] + r[1] + r[17] + r[19] + r[22],
        -r[2] - r[16] - r[17] - r[23] + r[15],
        -r[3] + 2.0 * r[4] + r[6] + r[7] + r[13] + r[20],
        -r[6] - r[8] - r[14] - r[20] + r[3] + 2.0 * r[18],
        -r[4] - r[5] - r[6] + r[13],
        r[4] + r[5] + r[6] + r[7],
        -r[7] - r[8],
        -r[12] + r[7] + r[9],
        -r[9] - r[10] + r[8] + r[11],
        r[9],
        -r[11] + r[10],
        -r[13] + r[12],
        r[14],
        -r[18] - r[19] + r[16],
        -r[20],
        r[20],
        -r[21] - r[22] - r[24] + r[23] + r[25],
        -r[25] + r[24],
    ])


def pollu() -> ODEModel:
    y0 = [0.0] * 20
    for i, v in ((2, 0.2), (4, 0.04), (7, 0.1), (8, 0.3), (9, 0.01), (17, 0.007)):
        y0[i - 1] = v
    return ODEModel(
        rhs=pollu_rhs,
        params={f"k{i}": v for i, v in enumerate(_POLLU_K, start=1)},
        y0=y0,
        state_names=_POLLU_SPECIES,
        name="pollu",
        t_span=(0.0, 60.0),
        stiff=True,
        units=_POLLU_UNITS,
        source="J. G. Verwer (1994), Gauss-Seidel iteration for stiff ODEs from chemical kinetics, "
        "SIAM J. Sci. Comput. 15:1243-1250; F. Mazzia & C. Magherini, Test Set for IVP Solvers "
        "(problem POLLU, with its reference solution at t = 60).",
        description="Air pollution chemistry: 20 species, 25 reactions, stiff.",
    )


def e5_rhs(t, y, p):
    """E5 (chemical pyrolysis, Enright, Hull & Lindberg's stiff DETEST): rates
    ``p1 = A y1``, ``p2 = B y1 y3``, ``p3 = M C y2 y3``, ``p4 = C y4``; ``f3 = f2 - f4``
    as the Test Set writes it, so that ``y3 - y2 + y4`` is conserved to rounding of ``f3``."""
    p1 = p["A"] * y[0]
    p2 = p["B"] * y[0] * y[2]
    p3 = p["M"] * p["C"] * y[1] * y[2]
    p4 = p["C"] * y[3]
    f2, f4 = p1 - p3, p2 - p4
    return jnp.stack([-p1 - p2, f2, f2 - f4, f4])


def e5() -> ODEModel:
    """E5 on [0, 1e13]: four species over 18 decades of time, ending near 1e-22 (y2, y3) and
    1e-290 (y1). The Test Set's tolerances are atol = 1.11e-24 and rtol 1e-6 ... 1e-12; its
    reference (`E5_REFERENCE_T1E13`) was computed in extended precision. Not in the model
    library's registry (``models.get``): a benchmark and test problem for tight tolerances
    (``benchmarks/stiff_step_counts.py``, ``tests/kernels/test_rodas5p.py``)."""
    return ODEModel(
        rhs=e5_rhs,
        params={"A": 7.89e-10, "B": 1.1e7, "C": 1.13e3, "M": 1.0e6},
        y0=[1.76e-3, 0.0, 0.0, 0.0],
        state_names=("y1", "y2", "y3", "y4"),
        name="e5",
        t_span=(0.0, 1.0e13),
        stiff=True,
        units=_unit_free(("y1", "y2", "y3", "y4", "A", "B", "C", "M"))
        + "; as published (a test problem without physical units)",
        source="W. H. Enright, T. E. Hull & B. Lindberg (1975), Comparing numerical methods for stiff "
        "systems of ODEs, BIT 15:10-48 (problem E5); F. Mazzia & C. Magherini, Test Set for IVP "
        f"Solvers (problem E5, with its reference solution at t = 1e13); {_HW2}.",
        description="E5 chemical pyrolysis: stiff kinetics over 13 decades, species near 1e-22.",
    )


# the Test Set's E5 reference at t = 1e13 (RADAU in extended precision, rtol 1.1e-18, atol 1.1e-40)
E5_REFERENCE_T1E13 = (0.1152903278711829e-290, 0.8867655517642120e-22, 0.8854814626268838e-22, 0.0)


MODELS = {
    "robertson": robertson,
    "oregonator": oregonator,
    "hires": hires,
    "brusselator": brusselator,
    "pollu": pollu,
}
