"""The accelerator lane: every public capability on whatever device JAX sees, against exact
solutions, SciPy, or float64 references computed on the host.

On a GPU or TPU machine run it in ONE process (only one process can hold a TPU)::

    python -m pytest -m accelerator -p no:xdist tests/test_accelerator.py
    SIMKIT_ENABLE_X64=0 python -m pytest -m accelerator -p no:xdist tests/test_accelerator.py  # float32

On a CPU (CI) the same tests run in the ordinary suite, so they never rot. Tolerances follow
the precision in use: float64 (simkit's default) or float32.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.linalg

import simkit
from simkit import _config, models
from simkit import stencil as sk

# (the once-per-process float64-on-a-TPU advice is expected there)
pytestmark = [pytest.mark.accelerator, pytest.mark.filterwarnings("ignore:.*float64 is emulated on a TPU")]

DEVICE = jax.devices()[0]  # JAX's default device: the accelerator where there is one
HOST = jax.devices("cpu")[0]
F64 = _config.float_dtype() == jnp.float64
# relative tolerances against a reference: solver error plus the precision's rounding
SOLVE_RTOL = 1e-8 if F64 else 1e-4
SOLVE_TOL = 2e-5 if F64 else 5e-3
FIELD_TOL = 1e-9 if F64 else 1e-4
# tolerances the solvers are asked for (float32: rtol at least 100 x its epsilon, 1.2e-5)
RTOL, ATOL = (1e-9, 1e-11) if F64 else (2e-5, 1e-7)

DECAY = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 0.7}, y0=[1.0, 2.0],
                        state_names=("a", "b"), name="decay", t_span=(0.0, 2.0))


def _on_device(array) -> bool:
    return DEVICE in jnp.asarray(array).devices()


def _close(actual, expected, tol, *, floor=0.0):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    scale = np.maximum(np.abs(expected), floor)
    worst = float(np.max(np.abs(actual - expected) / np.where(scale > 0, scale, 1.0)))
    assert worst <= tol, f"relative difference {worst:.3g} > {tol:.3g}"


def _scipy(model, t_span, t_eval, method="DOP853", **kwargs):
    params = {k: np.asarray(v) for k, v in model.params.items()}
    f = jax.jit(lambda t, y: model.rhs(t, y, params))
    with jax.default_device(HOST), jax.enable_x64(True):  # float64 references, also in the float32 lane
        ref = scipy.integrate.solve_ivp(lambda t, y: np.asarray(f(t, y)), t_span,
                                        np.asarray(model.y0, np.float64), method=method, t_eval=t_eval,
                                        rtol=1e-12, atol=1e-14, **kwargs)
    assert ref.success
    return ref.y.T


@pytest.fixture(scope="module")
def lorenz_reference():
    lorenz = models.get("lorenz")
    return lorenz, _scipy(lorenz, (0.0, 1.0), np.linspace(0.0, 1.0, 5))


@pytest.mark.parametrize("solver", [simkit.Tsit5(), simkit.DOPRI5(), simkit.DOP853()], ids=str)
def test_explicit_kernels_on_the_device(lorenz_reference, solver):
    lorenz, ref = lorenz_reference
    sol = simkit.solve(lorenz, (0.0, 1.0), saveat=5, solver=solver, rtol=RTOL, atol=ATOL, device=DEVICE)
    assert _on_device(sol.ys)
    _close(sol.ys, ref, SOLVE_TOL, floor=1.0)


@pytest.fixture(scope="module")
def robertson_reference():
    rob = models.get("robertson")
    t_eval = np.array([0.0, 1.0, 100.0, 1e4])
    ref = _scipy(rob, (0.0, 1e4), t_eval, method="Radau", first_step=1e-8)
    return rob, t_eval, ref


@pytest.mark.parametrize("solver", [simkit.Rodas5P(), simkit.Rodas4(), simkit.RadauIIA5(), simkit.BDF(),
                                    simkit.AutoSwitch()], ids=str)
def test_stiff_kernels_on_the_device(robertson_reference, solver):
    rob, t_eval, ref = robertson_reference
    kwargs = dict(saveat=jnp.asarray(t_eval), solver=solver, rtol=RTOL * 10, atol=ATOL * 1e-3, device=DEVICE)
    sol = simkit.solve(rob, (0.0, 1e4), **kwargs)  # (RadauIIA5 on a TPU in float64: real arithmetic)
    assert _on_device(sol.ys)
    # states span 1e-5 .. 1: each relative to its own size, the smallest to 1e-6 of the total
    _close(sol.ys, ref, 50 * SOLVE_TOL, floor=1e-6)


def test_a_stiff_system_above_the_straight_line_size_and_matrix_free():
    """Twelve states: the LU of the LAPACK-size path (array-operation loops on a TPU); the
    same system by BDF's Newton-Krylov with the FFT preconditioner of a PDE."""
    heat = models.get("heat_1d")
    grid = sk.Grid((12,), 0.0, 1.0)
    small = simkit.PDEModel(rhs=heat.rhs, linear=heat.linear, grid=grid, bcs=heat.bcs, params=heat.params,
                            u0=np.sin(np.pi * grid.coordinates())[None], name="heat12", stiff=True)
    ode = small.to_ode()
    with jax.default_device(HOST):
        y0 = jnp.asarray(ode.y0)
        a = np.asarray(jax.jacfwd(lambda y: ode.rhs(0.0, y, ode.params))(y0))
    exact = scipy.linalg.expm(0.05 * a) @ np.asarray(y0)
    for solver in (simkit.BDF(linear_solver="dense"), simkit.BDF(linear_solver="krylov")):
        sol = simkit.solve(ode, (0.0, 0.05), saveat=2, solver=solver, rtol=RTOL * 10, atol=ATOL, device=DEVICE)
        _close(sol.ys[-1], exact, 100 * SOLVE_TOL, floor=1e-2)


def test_diffrax_engine_events_dense_output():
    import diffrax

    # (on a TPU, diffeqsolve's nextafter(t1) is lowered in float arithmetic: XLA's own form does not compile there)
    sol = simkit.solve(DECAY, (0.0, 2.0), saveat=3, solver=diffrax.Tsit5(), rtol=RTOL, atol=ATOL, device=DEVICE)
    assert _on_device(sol.ys)
    _close(sol.ys, np.exp(-0.7 * np.asarray(sol.ts))[:, None] * np.array([1.0, 2.0]), SOLVE_TOL)
    ball = simkit.ODEModel(rhs=lambda t, y, p: jnp.stack([y[1], -p["g"] + 0 * y[0]]), params={"g": 9.81},
                           y0=[10.0, 0.0], state_names=("h", "v"))
    hit = simkit.solve(ball, (0.0, 5.0), events=lambda t, y, p: y[0], rtol=RTOL, atol=ATOL, device=DEVICE)
    _close(hit.event_time, np.sqrt(2 * 10.0 / 9.81), SOLVE_TOL)
    dense = simkit.solve(DECAY, saveat=2, dense=True, rtol=RTOL, atol=ATOL, device=DEVICE)
    _close(dense.evaluate(1.3), np.exp(-0.7 * 1.3) * np.array([1.0, 2.0]), 10 * SOLVE_TOL)


def test_diffrax_implicit_solver():
    import diffrax

    from simkit.placement import prepare_for_platform

    with pytest.raises(simkit.InputError, match="implicit solver KenCarp4 cannot run on a TPU"):
        prepare_for_platform(diffrax.KenCarp4(), "tpu", "simkit.ensemble")
    if DEVICE.platform == "tpu":  # refused before compiling: XLA's TPU backend has no float64 LU
        with pytest.raises(simkit.InputError, match="implicit solver Kvaerno5 cannot run on a TPU"):
            simkit.solve(DECAY, (0.0, 2.0), solver=diffrax.Kvaerno5(), device=DEVICE)
        return
    sol = simkit.solve(DECAY, (0.0, 2.0), saveat=2, solver=diffrax.Kvaerno5(), rtol=RTOL, atol=ATOL, device=DEVICE)
    _close(sol.ys[-1], np.exp(-1.4) * np.array([1.0, 2.0]), 10 * SOLVE_TOL)


@pytest.mark.parametrize("solver", [None, simkit.Rodas5P()], ids=["default", "Rodas5P"])
def test_forward_and_reverse_gradients(solver):
    # (Rodas5P: the stage solves carry the tangent of the Jacobian -k; in float64 on a TPU
    # its stages run in a loop)
    def final_b(k):
        return simkit.solve(DECAY, (0.0, 2.0), params={"k": k}, saveat=2, rtol=RTOL, atol=ATOL,
                            solver=solver, device=DEVICE).ys[-1, 1]

    def final_z(z):  # k and both initial states move with one scalar
        return simkit.solve(DECAY, (0.0, 2.0), y0=jnp.asarray([1.0, 2.0]) * (1.0 + z[0]),
                            params={"k": 0.7 * (1.0 + z[0])}, saveat=2, rtol=RTOL, atol=ATOL, solver=solver,
                            device=DEVICE).ys[-1]

    k = jnp.asarray(0.7, _config.float_dtype())
    with jax.default_device(DEVICE):
        exact = -2.0 * 2.0 * np.exp(-0.7 * 2.0)  # d/dk 2 exp(-k t) at t = 2
        _close(jax.grad(final_b)(k), exact, SOLVE_TOL)
        _close(jax.jacfwd(final_b)(k), exact, SOLVE_TOL)
        # a fit's forward-only Jacobian: the solve pushes the caller's one tangent, not three
        # (`simkit.kernels.autodiff.forward_tangents`); d/dz (1 + z) y0 exp(-1.4 (1 + z)) at 0
        _, jac = simkit.fitting.bounded.residuals_and_jacobian(final_z, 1)(jnp.zeros(1, _config.float_dtype()))
        _close(jac[:, 0], np.exp(-1.4) * (1.0 - 1.4) * np.array([1.0, 2.0]), SOLVE_TOL)


def test_ensemble_on_refilled_lanes():
    ks = jnp.linspace(0.1, 2.0, 40)
    ens = simkit.ensemble(DECAY, (0.0, 2.0), params={"k": ks}, saveat=3, rtol=RTOL, atol=ATOL)
    ts = np.asarray(ens.ts)  # (members, saves)
    exact = np.exp(-np.asarray(ks)[:, None, None] * ts[:, :, None]) * np.array([1.0, 2.0])
    _close(ens.ys, exact, SOLVE_TOL)
    assert np.all(np.asarray(ens.status) == 0)


@pytest.fixture(scope="module")
def heat():
    """heat_1d (Dirichlet, 128 cells) and its discrete operator A (float64, on the host)."""
    model = models.get("heat_1d")
    ode = model.to_ode()
    with jax.default_device(HOST):
        y0 = jnp.asarray(ode.y0)
        a = np.asarray(jax.jacfwd(lambda y: ode.rhs(0.0, y, ode.params))(y0))
    return model, a, np.asarray(y0)


def _rk4_matrix(a, dt):
    z = dt * a
    eye = np.eye(a.shape[0])
    return eye + z + z @ z / 2 + z @ z @ z / 6 + z @ z @ z @ z / 24


def test_stencil_integrate_rollout_and_imex(heat):
    model, a, y0 = heat
    dt, steps = 2e-4, 20
    field = sk.integrate(model, dt=dt, steps=steps)  # RK4: u_n = R(dt A)^n u_0 exactly
    exact = np.linalg.matrix_power(_rk4_matrix(a, dt), steps) @ y0
    _close(np.asarray(field.us[-1]).reshape(-1), exact, FIELD_TOL, floor=0.1)
    frames = jax.jit(lambda u: sk.rollout(model, u0=u, dt=dt, steps=steps)[0])(jnp.asarray(model.u0))
    _close(np.asarray(frames[-1]).reshape(-1), exact, FIELD_TOL, floor=0.1)
    imex = sk.integrate(model, dt=5e-3, steps=4, stepper=sk.IMEXEuler())  # (I - dt A)^-n u_0
    exact_imex = np.linalg.matrix_power(np.linalg.inv(np.eye(a.shape[0]) - 5e-3 * a), 4) @ y0
    _close(np.asarray(imex.us[-1]).reshape(-1), exact_imex, 1e3 * FIELD_TOL, floor=0.1)


def test_stencil_row_blocks_match_xla_loop(monkeypatch):
    """A periodic 2-D float32 rollout in row blocks (`simkit.stencil.blocked`, several steps per
    pass; Mosaic on a TPU, interpreted elsewhere) equals XLA's loop to float32 rounding: heat by
    Euler, Gray-Scott by RK4, and heat under `jax.vmap`. With JAX's float64 on, the rollout runs
    in `simkit.precision("float32")`; a float64 rollout makes no plan (the kernel is float32)."""
    from simkit.stencil import blocked

    monkeypatch.setattr(blocked, "BLOCK_BYTES", 64 * 1024)
    rows, columns = 64, 256
    gs = models.get("gray_scott")
    rng = np.random.default_rng(0)
    gsm = gs.replace(grid=sk.Grid((rows, columns), 0.0, 2.5),
                     u0=np.concatenate([np.ones((1, rows, columns)), np.zeros((1, rows, columns))])
                     + 0.05 * rng.random((2, rows, columns)))
    heat = simkit.PDEModel(rhs=lambda t, u, p, space: p["d"] * sk.laplacian(space.pad(u), space.spacing),
                           grid=sk.Grid((rows, columns)), bcs=sk.Periodic(), params={"d": 1.0},
                           u0=rng.random((1, rows, columns)), name="heat")
    # (steps 12 and 6 in passes of k = 8 and 2: a last, shorter pass for heat)
    cases = ((heat, sk.ForwardEuler(), 0.2 / columns**2, 12, False), (gsm, sk.RK4(), 0.5, 6, False),
             (heat, sk.ForwardEuler(), 0.2 / columns**2, 12, True))
    for model, stepper, dt, steps, batched in cases:
        runs = {}
        for mode in ("never", "always"):
            monkeypatch.setattr(blocked, "MODE", mode)
            jax.clear_caches()
            with simkit.precision("float32"):
                fn = jax.jit(lambda u: sk.rollout(model, u0=u, dt=dt, steps=steps, save_every=steps // 2,
                                                  stepper=stepper)[0])
                fn = jax.jit(jax.vmap(fn)) if batched else fn
                u0 = jnp.asarray(model.u0, jnp.float32)
                u0 = jnp.stack([u0, 1.0 - u0]) if batched else u0
                runs[mode] = (np.asarray(fn(u0)), "pallas_call" in str(jax.make_jaxpr(fn)(u0)))
        assert runs["never"][1] is False
        assert runs["always"][1] is True, model.name
        assert runs["always"][0].dtype == np.float32
        np.testing.assert_allclose(runs["always"][0], runs["never"][0], rtol=0, atol=1e-5 * np.abs(runs["never"][0]).max())
    if F64:  # a float64 rollout keeps XLA's loop
        fn = jax.jit(lambda u: sk.rollout(heat, u0=u, dt=1e-6, steps=4, save_every=2)[0])
        assert "pallas_call" not in str(jax.make_jaxpr(fn)(jnp.asarray(heat.u0)))
    jax.clear_caches()


def test_decomposition_on_the_devices_present(heat):
    from simkit import parallel

    model, a, y0 = heat
    devices = [d for d in jax.devices() if d.platform == DEVICE.platform]
    count = max(c for c in (1, 2, 4, 8) if c <= len(devices) and model.grid.shape[0] % c == 0)
    mesh = parallel.mesh_for(model.grid, devices[:count])
    field = parallel.integrate(model, mesh=mesh, dt=2e-4, steps=20)
    exact = np.linalg.matrix_power(_rk4_matrix(a, 2e-4), 20) @ y0
    _close(np.asarray(field.us[-1]).reshape(-1), exact, FIELD_TOL, floor=0.1)


def test_fit_with_multi_start():
    truth = {"k": 0.7}
    ts = np.linspace(0.2, 2.0, 8)
    values = np.exp(-truth["k"] * ts)[:, None] * np.array([1.0, 2.0])
    data = simkit.Dataset(times=ts, values=values, observed=("a", "b"), t0=0.0)
    # (devices=: on the accelerator; a fit of so few starts runs on the host by default)
    result = simkit.fit(DECAY.with_params(k=0.2), data, free=["k"], bounds={"k": (0.01, 5.0)}, starts=3,
                        devices=[DEVICE])
    _close(result.estimates["k"], truth["k"], 1e-5 if F64 else 1e-3)
    if DEVICE != HOST:  # the starts split between the accelerator and the host, each its own program
        both = simkit.fit(DECAY.with_params(k=0.2), data, free=["k"], bounds={"k": (0.01, 5.0)}, starts=3,
                          devices=[DEVICE, HOST])
        _close(both.estimates["k"], truth["k"], 1e-5 if F64 else 1e-3)
        assert np.asarray(both.start_status).tolist() == np.asarray(result.start_status).tolist()


def test_save_load_and_resumable_files(tmp_path):
    sol = simkit.solve(DECAY, saveat=5, rtol=RTOL, atol=ATOL, device=DEVICE)
    path = sol.save(str(tmp_path / "decay.nc"))
    back = simkit.load(path)  # an xarray Dataset, one variable per state
    np.testing.assert_array_equal(np.stack([back["a"].values, back["b"].values], axis=-1), np.asarray(sol.ys))
    streamed = simkit.load(simkit.solve_to_file(str(tmp_path / "streamed.nc"), DECAY, saveat=5, chunk=2,
                                                rtol=RTOL, atol=ATOL))
    _close(np.stack([streamed["a"].values, streamed["b"].values], axis=-1), sol.ys, SOLVE_TOL)


def test_placement_rule():
    """A single solve and a fit of few starts run on the host's CPU by default when the
    default device is an accelerator; an ensemble on the default device; `device=` overrides
    both."""
    sol = simkit.solve(DECAY, saveat=2)
    assert HOST in sol.ys.devices()
    assert DEVICE in simkit.solve(DECAY, saveat=2, device=DEVICE).ys.devices()
    ens = simkit.ensemble(DECAY, params={"k": jnp.linspace(0.5, 1.0, 4)}, saveat=2)
    assert jnp.asarray(ens.ys).devices() <= set(jax.devices()) or isinstance(ens.ys, np.ndarray)
    one_start = simkit.fitting.least_squares_bounded(lambda x: x - 1.0, jnp.zeros((1, 2)), jnp.full(2, -5.0),
                                                     jnp.full(2, 5.0))
    assert HOST in one_start.x.devices()
    _close(one_start.x, np.ones((1, 2)), 1e-6)


def test_the_precision_in_use_is_the_lanes():
    """The float32 lane (``SIMKIT_ENABLE_X64=0``) computes in float32 with JAX's float64 off,
    as a float32 user's process does; the float64 lane in float64."""
    x64 = os.environ.get("SIMKIT_ENABLE_X64", "1").strip().lower() not in ("0", "false", "no", "off")
    assert F64 is x64 and jax.config.jax_enable_x64 is x64
    assert simkit.solve(DECAY, saveat=2, device=DEVICE).ys.dtype == (jnp.float64 if x64 else jnp.float32)


def test_per_call_precision():
    with simkit.precision("float32"):
        sol = simkit.solve(DECAY, saveat=3, rtol=1e-4, atol=1e-7, device=DEVICE)
    assert sol.ys.dtype == jnp.float32
    _close(sol.ys[-1], np.exp(-0.7 * 2.0) * np.array([1.0, 2.0]), 1e-4)
