"""Stochastic models: ensemble statistics against closed forms within Monte-Carlo error."""

import jax
import numpy as np
import pytest

import simkit
from simkit import models

N = 400  # members; the bounds below are 4 Monte-Carlo standard errors (seeded)


def test_ornstein_uhlenbeck_mean_and_variance():
    ou = models.get("ornstein_uhlenbeck")
    theta, mu, sigma, x0 = 1.0, 0.5, 0.3, 2.0
    ens = simkit.ensemble(ou, params={"sigma": np.full(N, sigma)}, saveat=7, key=jax.random.key(0))
    t = np.linspace(0.0, 3.0, 7)[1:]
    mean = mu + (x0 - mu) * np.exp(-theta * t)
    var = sigma**2 * (1 - np.exp(-2 * theta * t)) / (2 * theta)
    m, v = ens.mean()[1:, 0], ens.std()[1:, 0] ** 2
    assert np.all(np.abs(m - mean) < 4 * np.sqrt(var / N)), (m, mean)
    assert np.all(np.abs(v - var) < 4 * var * np.sqrt(2.0 / (N - 1))), (v, var)


def test_geometric_brownian_motion_mean():
    gbm = models.get("geometric_brownian_motion")
    mu, sigma = 0.1, 0.2
    ens = simkit.ensemble(gbm, y0=np.ones((N, 1)), saveat=5, key=jax.random.key(1))
    t = np.linspace(0.0, 1.0, 5)[1:]
    mean = np.exp(mu * t)
    sd = np.sqrt(np.exp(2 * mu * t) * (np.exp(sigma**2 * t) - 1))
    # Euler-Maruyama's weak error at 1000 steps (~1e-4 here) is far below the bound
    assert np.all(np.abs(ens.mean()[1:, 0] - mean) < 4 * sd / np.sqrt(N))


def test_stochastic_runs_are_reproducible_and_chunk_independent():
    ou = models.get("ornstein_uhlenbeck")
    # 200 steps (dt0 0.015), not the default 1,000: the run, not the compile, took most of the time
    kwargs = dict(params={"theta": np.linspace(0.5, 1.5, 40)}, saveat=4, dt0=0.015, key=jax.random.key(5))
    a = simkit.ensemble(ou, **kwargs)
    b = simkit.ensemble(ou, chunk_size=8, devices=jax.local_devices()[:1], **kwargs)
    # bit for bit (the classic generator, SIMKIT_FAST_COMPILE=1, rounds a chunk of 256 lanes
    # differently, by an ulp: docs/ensembles.md; not the chunks here)
    np.testing.assert_array_equal(a.ys, b.ys)
    # a member equals the single solve with its own key
    k3 = jax.random.split(jax.random.key(5), 40)[3]
    single = simkit.solve(ou, params={"theta": np.linspace(0.5, 1.5, 40)[3]}, saveat=4, dt0=0.015, key=k3)
    np.testing.assert_allclose(a.ys[3], single.ys, rtol=1e-12)
    c = simkit.ensemble(ou, **{**kwargs, "key": jax.random.key(6)})
    assert not np.allclose(a.ys[:, -1], c.ys[:, -1])


def test_stochastic_input_errors():
    ou = models.get("ornstein_uhlenbeck")
    with pytest.raises(simkit.InputError, match="pass key"):
        simkit.solve(ou)
    with pytest.raises(simkit.InputError, match="pass key"):
        simkit.ensemble(ou, params={"theta": np.ones(4)})
    with pytest.raises(simkit.InputError, match="diffrax SDE solver"):
        simkit.solve(ou, key=jax.random.key(0), solver=simkit.Tsit5())
    with pytest.raises(simkit.InputError, match="only for stochastic"):
        simkit.solve(models.get("lorenz"), key=jax.random.key(0))


def test_ito_solvers_only_and_their_log_mean():
    """GBM's E[log S(1)] = mu - sigma^2 / 2 (Itô); Heun, Midpoint, ODE solvers give the
    Stratonovich mu and were accepted with status success."""
    import diffrax

    gbm = models.get("geometric_brownian_motion")
    n, mu, sigma = 400, 0.1, 1.0
    exact = mu - sigma**2 / 2
    ens = simkit.ensemble(gbm, y0=np.ones((n, 1)), params={"sigma": sigma}, saveat=2, key=jax.random.key(3),
                          solver=diffrax.ItoMilstein(), dt0=0.01)
    logs = np.log(ens.ys[:, -1, 0])  # standard deviation sigma; Stratonovich's mean is 2.5 of its errors away
    assert abs(logs.mean() - exact) < 4 * sigma / np.sqrt(n), (logs.mean(), exact)
    for solver in (diffrax.Heun(), diffrax.Midpoint(), diffrax.Tsit5(), diffrax.ImplicitEuler()):
        with pytest.raises(simkit.InputError, match="Itô SDE"):
            simkit.solve(gbm, key=jax.random.key(0), solver=solver)


def test_sde_max_step_and_direction():
    ou = models.get("ornstein_uhlenbeck")
    sol = simkit.solve(ou, (0.0, 3.0), key=jax.random.key(0), max_step=1e-3, saveat="steps")
    assert len(sol.ts) == 3001 and np.diff(sol.ts).max() <= 1e-3 * (1 + 1e-9)  # was 1000 steps of 3e-3 (ignored)
    sol = simkit.solve(ou, (0.0, 3.0), key=jax.random.key(0), dt0=0.1, max_step=1e-2, saveat="steps")
    assert len(sol.ts) == 301
    ens = simkit.ensemble(ou, (0.0, 3.0), params={"theta": np.ones(8)}, saveat="steps", max_step=1e-3,
                          key=jax.random.key(0), max_steps=5000)  # ensembles had no max_step, nor dt0
    assert ens.ys.shape == (8, 3001, 1)
    with pytest.raises(simkit.InputError, match="forwards in time"):  # was NaN and "blows up"
        simkit.solve(ou, (3.0, 0.0), key=jax.random.key(0))
