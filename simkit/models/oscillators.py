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
        units="t in 1, x in 1, v in 1, mu in 1; nondimensional",
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
        units="t in 1, x in 1, v in 1, mu in 1; nondimensional",
        source=_SOURCE,
        description="Van der Pol relaxation oscillator, mu = 1000 (stiff; period ~1614).",
    )


# Van der Pol mu = 1000 on [0, 3000] at 11 save times: SciPy Radau, rtol = atol = 1e-13,
# jacfwd Jacobian (simkit.reference.solve_ivp(m, saveat=11, method="Radau", rtol=1e-13,
# atol=1e-13); 22 s). Rodas5P at 1e-13 agrees with it to 2e-12.
VAN_DER_POL_STIFF_REFERENCE = (
    (2.0000000000000000e+00, 0.0000000000000000e+00),
    (1.7793977690045018e+00, -8.2141570269719192e-04),
    (1.4845756932882956e+00, -1.2330698826285536e-03),
    (-1.9364435447961077e+00, 7.0420886015803616e-04),
    (-1.6997140034610128e+00, 8.9978195059524249e-04),
    (-1.3547459194878404e+00, 1.6217887275917992e-03),
    (1.8690579838720562e+00, -7.4960861597281401e-04),
    (1.6114533462302401e+00, -1.0091872507173938e-03),
    (1.1491721451541330e+00, -3.5842275825308436e-03),
    (-1.7969750287124826e+00, 8.0613647723103913e-04),
    (-1.5106069367457944e+00, 1.1783800007274436e-03),
)


MODELS = {"van_der_pol": van_der_pol, "van_der_pol_stiff": van_der_pol_stiff}
