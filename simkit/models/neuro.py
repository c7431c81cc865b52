"""Neuron models: FitzHugh–Nagumo, Hodgkin–Huxley."""

from __future__ import annotations

import jax.numpy as jnp

from ..model import ODEModel


def fitzhugh_nagumo_rhs(t, y, p):
    """v' = v - v^3/3 - w + current, w' = (v + a - b w) / tau."""
    v, w = y[0], y[1]
    return jnp.stack([v - v**3 / 3.0 - w + p["current"], (v + p["a"] - p["b"] * w) / p["tau"]])


def fitzhugh_nagumo() -> ODEModel:
    return ODEModel(
        rhs=fitzhugh_nagumo_rhs,
        params={"a": 0.7, "b": 0.8, "tau": 12.5, "current": 0.5},
        y0=[-1.0, 1.0],
        state_names=("v", "w"),
        name="fitzhugh_nagumo",
        t_span=(0.0, 100.0),
        units="t in 1, v in 1, w in 1, a in 1, b in 1, tau in 1, current in 1; nondimensional",
        source="R. FitzHugh (1961), Biophys. J. 1:445-466; J. Nagumo, S. Arimoto & S. Yoshizawa "
        "(1962), Proc. IRE 50:2061.",
        description="FitzHugh-Nagumo excitable neuron; periodic spiking for current = 0.5.",
    )


def _vtrap(x, scale):
    """x / (1 - exp(-x/scale)), finite (and differentiable) at x = 0 where it equals scale."""
    small = jnp.abs(x) < 1e-6 * scale
    safe = jnp.where(small, scale, x)
    return jnp.where(small, scale + 0.5 * x, safe / -jnp.expm1(-safe / scale))


def hodgkin_huxley_rhs(t, y, p):
    """Hodgkin–Huxley squid axon: membrane potential V (mV) and gates m, h, n; time in ms."""
    v, m, h, n = y[0], y[1], y[2], y[3]
    alpha_m = 0.1 * _vtrap(v + 40.0, 10.0)
    beta_m = 4.0 * jnp.exp(-(v + 65.0) / 18.0)
    alpha_h = 0.07 * jnp.exp(-(v + 65.0) / 20.0)
    beta_h = 1.0 / (1.0 + jnp.exp(-(v + 35.0) / 10.0))
    alpha_n = 0.01 * _vtrap(v + 55.0, 10.0)
    beta_n = 0.125 * jnp.exp(-(v + 65.0) / 80.0)
    i_na = p["g_na"] * m**3 * h * (v - p["e_na"])
    i_k = p["g_k"] * n**4 * (v - p["e_k"])
    i_l = p["g_l"] * (v - p["e_l"])
    return jnp.stack(
        [
            (p["current"] - i_na - i_k - i_l) / p["capacitance"],
            alpha_m * (1.0 - m) - beta_m * m,
            alpha_h * (1.0 - h) - beta_h * h,
            alpha_n * (1.0 - n) - beta_n * n,
        ]
    )


def hodgkin_huxley() -> ODEModel:
    return ODEModel(
        rhs=hodgkin_huxley_rhs,
        params={
            "capacitance": 1.0, "g_na": 120.0, "g_k": 36.0, "g_l": 0.3,
            "e_na": 50.0, "e_k": -77.0, "e_l": -54.387, "current": 10.0,
        },
        y0=[-65.0, 0.0529, 0.5961, 0.3177],
        state_names=("V", "m", "h", "n"),
        name="hodgkin_huxley",
        t_span=(0.0, 50.0),
        units="t in ms, V in mV, m in 1, h in 1, n in 1, capacitance in uF/cm^2, g_na in mS/cm^2, "
        "g_k in mS/cm^2, g_l in mS/cm^2, e_na in mV, e_k in mV, e_l in mV, current in uA/cm^2; "
        "m, h and n are gating probabilities",
        source="A. L. Hodgkin & A. F. Huxley (1952), J. Physiol. 117:500-544; rates and constants "
        "in the resting-potential -65 mV convention of P. Dayan & L. F. Abbott (2001), "
        "Theoretical Neuroscience, §5.6.",
        description="Hodgkin-Huxley action potentials under a constant current (tonic spiking).",
    )


MODELS = {"fitzhugh_nagumo": fitzhugh_nagumo, "hodgkin_huxley": hodgkin_huxley}
