"""Mechanics: driven pendulum, double pendulum, Kepler problem, Arenstorf orbit."""

from __future__ import annotations

import math

import jax.numpy as jnp

from ..model import ODEModel


def damped_driven_pendulum_rhs(t, y, p):
    """theta'' + damping theta' + sin(theta) = amplitude cos(drive_frequency t) (scaled units)."""
    theta, omega = y[0], y[1]
    return jnp.stack(
        [
            omega,
            -p["damping"] * omega
            - jnp.sin(theta)
            + p["amplitude"] * jnp.cos(p["drive_frequency"] * t),
        ]
    )


def damped_driven_pendulum() -> ODEModel:
    return ODEModel(
        rhs=damped_driven_pendulum_rhs,
        params={"damping": 0.5, "amplitude": 1.5, "drive_frequency": 2.0 / 3.0},
        y0=[0.2, 0.0],
        state_names=("theta", "omega"),
        name="damped_driven_pendulum",
        t_span=(0.0, 60.0),
        units="t in 1, theta in rad, omega in rad, damping in 1, amplitude in 1, drive_frequency in 1; "
        "time is scaled by the natural frequency sqrt(g/l) (omega is d theta/dt in that scaled time), "
        "the drive's torque by m g l and its frequency by the natural frequency",
        source="G. L. Baker & J. P. Gollub (1996), Chaotic Dynamics: An Introduction, 2nd ed., ch. 3 "
        "(q = 2, g = 1.5, omega_D = 2/3: chaotic regime).",
        description="Damped, sinusoidally driven pendulum.",
    )


def double_pendulum_rhs(t, y, p):
    """Planar double pendulum, point masses m1, m2 on massless rods l1, l2 (Lagrangian form)."""
    th1, th2, w1, w2 = y[0], y[1], y[2], y[3]
    m1, m2, l1, l2, g = p["m1"], p["m2"], p["l1"], p["l2"], p["g"]
    d = th2 - th1
    c, s = jnp.cos(d), jnp.sin(d)
    den1 = (m1 + m2) * l1 - m2 * l1 * c * c
    a1 = (
        m2 * l1 * w1 * w1 * s * c
        + m2 * g * jnp.sin(th2) * c
        + m2 * l2 * w2 * w2 * s
        - (m1 + m2) * g * jnp.sin(th1)
    ) / den1
    den2 = (l2 / l1) * den1
    a2 = (
        -m2 * l2 * w2 * w2 * s * c
        + (m1 + m2) * (g * jnp.sin(th1) * c - l1 * w1 * w1 * s - g * jnp.sin(th2))
    ) / den2
    return jnp.stack([w1, w2, a1, a2])


def double_pendulum_energy(y, p):
    """Total energy T + V of the double pendulum (conserved)."""
    th1, th2, w1, w2 = y[..., 0], y[..., 1], y[..., 2], y[..., 3]
    m1, m2, l1, l2, g = p["m1"], p["m2"], p["l1"], p["l2"], p["g"]
    kinetic = (
        0.5 * (m1 + m2) * l1**2 * w1**2
        + 0.5 * m2 * l2**2 * w2**2
        + m2 * l1 * l2 * w1 * w2 * jnp.cos(th1 - th2)
    )
    potential = -(m1 + m2) * g * l1 * jnp.cos(th1) - m2 * g * l2 * jnp.cos(th2)
    return kinetic + potential


def double_pendulum() -> ODEModel:
    return ODEModel(
        rhs=double_pendulum_rhs,
        params={"m1": 1.0, "m2": 1.0, "l1": 1.0, "l2": 1.0, "g": 9.81},
        y0=[2.0, 2.5, 0.0, 0.0],
        state_names=("theta1", "theta2", "omega1", "omega2"),
        name="double_pendulum",
        t_span=(0.0, 10.0),
        units="t in s, theta1 in rad, theta2 in rad, omega1 in rad/s, omega2 in rad/s, m1 in kg, m2 in kg, "
        "l1 in m, l2 in m, g in m/s^2",
        source="T. Shinbrot, C. Grebogi, J. Wisdom & J. A. Yorke (1992), Chaos in a double "
        "pendulum, Am. J. Phys. 60:491-499 (equations of motion for point masses).",
        description="Planar double pendulum released from large angles (chaotic).",
    )


def kepler_rhs(t, y, p):
    """Relative two-body motion q'' = -mu q / |q|^3; state (qx, qy, px, py)."""
    q = y[:2]
    r3 = jnp.sum(q * q) ** 1.5
    return jnp.concatenate([y[2:], -p["mu"] * q / r3])


def kepler_invariants(y, p):
    """(energy, angular momentum) of the Kepler problem."""
    qx, qy, px, py = y[..., 0], y[..., 1], y[..., 2], y[..., 3]
    energy = 0.5 * (px**2 + py**2) - p["mu"] / jnp.sqrt(qx**2 + qy**2)
    return energy, qx * py - qy * px


def kepler() -> ODEModel:
    e = 0.6
    return ODEModel(
        rhs=kepler_rhs,
        params={"mu": 1.0},
        y0=[1.0 - e, 0.0, 0.0, math.sqrt((1.0 + e) / (1.0 - e))],
        state_names=("qx", "qy", "px", "py"),
        name="kepler",
        t_span=(0.0, 20.0),
        units="t in 1, qx in 1, qy in 1, px in 1, py in 1, mu in 1; nondimensional: lengths relative to "
        "the semi-major axis, time to the period / (2 pi), mu = G M = 1",
        source="E. Hairer, C. Lubich & G. Wanner (2006), Geometric Numerical Integration, §I.2.3 "
        "(eccentricity 0.6, period 2 pi).",
        description="Kepler two-body problem; energy and angular momentum are conserved.",
    )


ARENSTORF_PERIOD = 17.0652165601579625588917206249


def arenstorf_rhs(t, y, p):
    """Restricted three-body problem in the rotating frame (Earth-Moon mass ratio mu)."""
    x, yy, vx, vy = y[0], y[1], y[2], y[3]
    mu = p["mu"]
    mup = 1.0 - mu
    d1 = ((x + mu) ** 2 + yy**2) ** 1.5
    d2 = ((x - mup) ** 2 + yy**2) ** 1.5
    ax = x + 2.0 * vy - mup * (x + mu) / d1 - mu * (x - mup) / d2
    ay = yy - 2.0 * vx - mup * yy / d1 - mu * yy / d2
    return jnp.stack([vx, vy, ax, ay])


def arenstorf() -> ODEModel:
    return ODEModel(
        rhs=arenstorf_rhs,
        params={"mu": 0.012277471},
        y0=[0.994, 0.0, 0.0, -2.00158510637908252240537862224],
        state_names=("x", "y", "vx", "vy"),
        name="arenstorf",
        t_span=(0.0, ARENSTORF_PERIOD),
        units="t in 1, x in 1, y in 1, vx in 1, vy in 1, mu in 1; nondimensional: lengths relative to the "
        "Earth-Moon distance, time to the Moon's period / (2 pi), mu the Moon's fraction of the total mass",
        source="R. F. Arenstorf (1963), Am. J. Math. 85:27-35; E. Hairer, S. P. Nørsett & "
        "G. Wanner, Solving ODEs I, §II.0, eq. (0.1) (periodic with period 17.0652165601579...).",
        description="Arenstorf orbit: a periodic satellite orbit in the Earth-Moon system.",
    )


MODELS = {
    "damped_driven_pendulum": damped_driven_pendulum,
    "double_pendulum": double_pendulum,
    "kepler": kepler,
    "arenstorf": arenstorf,
}
