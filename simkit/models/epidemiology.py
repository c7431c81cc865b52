"""Compartmental epidemic models: SIR, SEIR (population fractions)."""

from __future__ import annotations

import jax.numpy as jnp

from ..model import ODEModel


def sir_rhs(t, y, p):
    """S' = -beta S I, I' = beta S I - gamma I, R' = gamma I (fractions of the population)."""
    s, i = y[0], y[1]
    infection = p["beta"] * s * i
    recovery = p["gamma"] * i
    return jnp.stack([-infection, infection - recovery, recovery])


def sir() -> ODEModel:
    return ODEModel(
        rhs=sir_rhs,
        params={"beta": 0.3, "gamma": 0.1},
        y0=[0.99, 0.01, 0.0],
        state_names=("S", "I", "R"),
        name="sir",
        t_span=(0.0, 160.0),
        units="t in days, S in 1, I in 1, R in 1, beta in 1/day, gamma in 1/day; "
        "the states are fractions of the population",
        source="W. O. Kermack & A. G. McKendrick (1927), Proc. R. Soc. A 115:700-721; "
        "rates as in R. M. Anderson & R. M. May (1991), Infectious Diseases of Humans.",
        description="Susceptible-infected-recovered epidemic, R0 = beta/gamma = 3.",
    )


def seir_rhs(t, y, p):
    """SIR with an exposed (latent) class E entered by infection and left at rate sigma."""
    s, e, i = y[0], y[1], y[2]
    infection = p["beta"] * s * i
    onset = p["sigma"] * e
    recovery = p["gamma"] * i
    return jnp.stack([-infection, infection - onset, onset - recovery, recovery])


def seir() -> ODEModel:
    return ODEModel(
        rhs=seir_rhs,
        params={"beta": 0.5, "sigma": 1.0 / 5.2, "gamma": 1.0 / 10.0},
        y0=[0.99, 0.0, 0.01, 0.0],
        state_names=("S", "E", "I", "R"),
        name="seir",
        t_span=(0.0, 200.0),
        units="t in days, S in 1, E in 1, I in 1, R in 1, beta in 1/day, sigma in 1/day, gamma in 1/day; "
        "the states are fractions of the population",
        source="R. M. Anderson & R. M. May (1991), Infectious Diseases of Humans, ch. 6; "
        "latent period 5.2 days as in Q. Li et al. (2020), N. Engl. J. Med. 382:1199.",
        description="Susceptible-exposed-infected-recovered epidemic.",
    )


MODELS = {"sir": sir, "seir": seir}
