"""simkit.solve through the fused kernels: derivatives, events, status codes, cost."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit import models

LORENZ = models.get("lorenz")
TIGHT = dict(rtol=1e-10, atol=1e-10)


def ball_rhs(t, y, p):
    return jnp.stack([y[1], -p["g"] + 0.0 * y[0]])


BALL = simkit.ODEModel(rhs=ball_rhs, params={"g": 9.81}, y0=[10.0, 0.0], state_names=("h", "v"),
                       name="ball", t_span=(0.0, 5.0))


def hit_ground(t, y, p):
    return y[0]


def lorenz_loss(params, solver):
    sol = simkit.solve(LORENZ, (0.0, 1.0), params=params, saveat=11, solver=solver, **TIGHT)
    return jnp.sum(sol.ys**2)


PARAMS = {k: jnp.asarray(v) for k, v in LORENZ.params.items()}
# the gradient of `lorenz_loss` at PARAMS, one compiled program per solver (the solver static)
lorenz_grad = jax.jit(jax.grad(lorenz_loss), static_argnums=1)


@pytest.fixture(scope="module")
def tsit5_gradient():
    """The reverse-mode gradient through simkit.Tsit5(), computed once for the two tests that
    compare it (with diffrax's, and with forward mode)."""
    return lorenz_grad(PARAMS, simkit.Tsit5())


@pytest.fixture(scope="module")
def diffrax_gradient():
    return lorenz_grad(PARAMS, diffrax.Tsit5())


def test_solver_choice():
    assert simkit.solve(LORENZ, (0.0, 1.0)).solver_name == "simkit.Tsit5()"
    assert simkit.solve(models.get("hires"), (0.0, 1.0)).solver_name == "simkit.Rodas5P()"
    assert simkit.solve(LORENZ, (0.0, 1.0), dense=True).solver_name == "simkit.Tsit5()"  # dense: same engine
    assert simkit.solve(LORENZ, (0.0, 1.0), solver=diffrax.Dopri5()).solver_name == "diffrax.Dopri5"
    big = simkit.ODEModel(rhs=lambda t, y, p: -y, params={}, y0=np.ones(65),
                          state_names=tuple(f"u{i}" for i in range(65)))
    assert simkit.solve(big, (0.0, 1.0)).solver_name == "diffrax.Tsit5"


@pytest.mark.parametrize("kernel", ["Tsit5", simkit.DOP853()])
def test_reverse_mode_matches_diffrax_gradient(kernel, tsit5_gradient, diffrax_gradient):
    ours = tsit5_gradient if kernel == "Tsit5" else lorenz_grad(PARAMS, kernel)
    for k in PARAMS:
        np.testing.assert_allclose(float(ours[k]), float(diffrax_gradient[k]), rtol=1e-6)


def test_forward_mode_hessian_and_vmap(tsit5_gradient):
    grad = tsit5_gradient
    fwd = jax.jit(jax.jacfwd(lorenz_loss), static_argnums=1)(PARAMS, simkit.Tsit5())
    for k in PARAMS:
        np.testing.assert_allclose(float(fwd[k]), float(grad[k]), rtol=1e-12)

    def loss_rho(rho):
        return lorenz_loss({**PARAMS, "rho": rho}, simkit.Tsit5())

    hess = jax.jit(jax.hessian(loss_rho))(28.0)
    g = jax.jit(jax.grad(loss_rho))  # one compiled program for both difference points
    fd = (float(g(28.0 + 1e-4)) - float(g(28.0 - 1e-4))) / 2e-4
    np.testing.assert_allclose(float(hess), fd, rtol=1e-5)

    def traj(rho):
        return simkit.solve(LORENZ, (0.0, 1.0), params={"rho": rho}, saveat=5, **TIGHT).ys

    rhos = jnp.array([10.0, 28.0, 35.0])
    np.testing.assert_allclose(jax.vmap(traj)(rhos), np.stack([traj(r) for r in rhos]),
                               rtol=1e-12, atol=1e-12)


def test_gradient_with_respect_to_initial_state_and_end_time():
    lv = models.get("lotka_volterra")

    @jax.jit  # one program for the six difference points
    def final_prey(y0, t1):
        return simkit.solve(lv, (0.0, t1), y0=y0, saveat=3, **TIGHT).ys[-1, 0]

    y0, t1 = jnp.array([33.0, 6.2]), 5.0
    g_y0, g_t1 = jax.jit(jax.grad(final_prey, argnums=(0, 1)))(y0, t1)
    for i in range(2):
        e = jnp.zeros(2).at[i].set(1e-4)
        fd = (final_prey(y0 + e, t1) - final_prey(y0 - e, t1)) / 2e-4
        np.testing.assert_allclose(float(g_y0[i]), float(fd), rtol=1e-6)
    fd_t1 = (final_prey(y0, t1 + 1e-5) - final_prey(y0, t1 - 1e-5)) / 2e-5
    np.testing.assert_allclose(float(g_t1), float(fd_t1), rtol=1e-6)


def test_rosenbrock_gradient_matches_finite_difference():
    rob = models.get("robertson")

    @jax.jit
    def product(k1):
        return simkit.solve(rob, (0.0, 100.0), params={"k1": k1}, saveat=5, rtol=1e-10,
                            atol=1e-14).ys[-1, 2]

    g = float(jax.jit(jax.grad(product))(0.04))
    fd = (float(product(0.04 + 1e-6)) - float(product(0.04 - 1e-6))) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-6)


# one kernel per method class: explicit RK with its tableau's interpolant (Tsit5; DOPRI5 runs
# the same code with another tableau), DOP853's own dense output, Rosenbrock (Rodas4)
@pytest.mark.parametrize("kernel", [simkit.Tsit5(), simkit.DOP853(), simkit.Rodas4()])
def test_events_locate_the_root_and_differentiate(kernel):
    sol = simkit.solve(BALL, saveat=51, events=hit_ground, solver=kernel, **TIGHT)
    assert sol.status == simkit.Status.EVENT and int(sol.event_index) == 0
    np.testing.assert_allclose(float(sol.event_time), np.sqrt(2 * 10 / 9.81), rtol=1e-10)
    assert np.all(np.asarray(sol.ts) <= float(sol.event_time))
    np.testing.assert_allclose(sol["h"], 10 - 0.5 * 9.81 * np.asarray(sol.ts) ** 2, atol=1e-8)
    two = simkit.solve(BALL, saveat=51, events=[hit_ground, lambda t, y, p: y[0] - 5.0],
                       solver=kernel, **TIGHT)
    assert int(two.event_index) == 1
    np.testing.assert_allclose(float(two.event_time), np.sqrt(2 * 5 / 9.81), rtol=1e-10)

    def event_time(g):
        return simkit.solve(BALL, params={"g": g}, events=hit_ground, solver=kernel, **TIGHT).event_time

    # t* = sqrt(2 h / g): dt*/dg = -t* / (2 g), through the implicit-function theorem
    np.testing.assert_allclose(float(jax.grad(event_time)(9.81)),
                               -0.5 * np.sqrt(20.0) * 9.81**-1.5, rtol=1e-8)


def test_status_codes():
    rob = models.get("robertson")
    with pytest.raises(simkit.SolveError, match="max_steps reached.*simkit.Rodas5P"):
        simkit.solve(rob, solver=simkit.Tsit5(), max_steps=500)
    sol = simkit.solve(rob, solver=simkit.Tsit5(), max_steps=500, throw=False)
    assert sol.status == simkit.Status.MAX_STEPS and float(sol.t_final) < 1e5
    # sqrt of a negative state: the step is rejected until h underflows -> NONFINITE
    drain = simkit.ODEModel(rhs=lambda t, y, p: -jnp.sqrt(y), params={}, y0=[1.0],
                            state_names=("v",), name="drain")
    out = simkit.solve(drain, (0.0, 3.0), throw=False)
    assert out.status == simkit.Status.NONFINITE
    np.testing.assert_allclose(float(out.t_final), 2.0, atol=1e-3)  # empties at t = 2
    with pytest.raises(simkit.SolveError, match="'drain' failed at t = 2.*non-finite"):
        simkit.solve(drain, (0.0, 3.0))


# Pinned cost (steps, rhs evaluations) of the default kernels: a change in step-size
# control shows up here. Recorded with simkit 0.1; allowed drift 2%.
PINNED = [
    ("lorenz", simkit.Tsit5(), (0.0, 10.0), 1e-8, 1e-8, 757, 4545),
    ("lorenz", simkit.DOP853(), (0.0, 10.0), 1e-8, 1e-8, 249, 2991),
    ("robertson", simkit.Rodas4(), (0.0, 1e5), 1e-6, 1e-10, 183, 1101),
    ("van_der_pol_stiff", simkit.Rodas4(), (0.0, 3000.0), 1e-6, 1e-6, 921, 5529),
]


@pytest.mark.parametrize("name, kernel, span, rtol, atol, steps, rhs", PINNED)
def test_pinned_cost(name, kernel, span, rtol, atol, steps, rhs):
    sol = simkit.solve(models.get(name), span, saveat=11, rtol=rtol, atol=atol, solver=kernel)
    assert abs(int(sol.stats["num_steps"]) - steps) <= 0.02 * steps, int(sol.stats["num_steps"])
    assert abs(int(sol.stats["num_rhs"]) - rhs) <= 0.02 * rhs, int(sol.stats["num_rhs"])


def test_kernel_does_not_recompile_for_new_numbers():
    traces = []

    def rhs(t, y, p):
        traces.append(1)
        return -p["k"] * y

    model = simkit.ODEModel(rhs=rhs, params={"k": 1.0}, y0=[1.0, 2.0], state_names=("a", "b"))
    simkit.solve(model, (0.0, 1.0), saveat=11, solver=simkit.DOP853())
    n = len(traces)
    sol = simkit.solve(model, (0.5, 2.0), y0=[3.0, 4.0], params={"k": 0.3}, saveat=11,
                       rtol=1e-9, atol=1e-12, dt0=0.01, solver=simkit.DOP853())
    assert len(traces) == n
    np.testing.assert_allclose(sol.ys[-1], np.array([3.0, 4.0]) * np.exp(-0.3 * 1.5), rtol=1e-8)


def test_no_false_step_size_underflow_on_a_long_span():
    """Robertson on the test set's span [0, 1e11] with a tiny atol: the underflow floor is
    relative to |t| (Hairer's rule), not to the span; once it refused every step below
    3.5e-7 near t = 0 and failed at t = 8.4e-8."""
    sol = simkit.solve(models.get("robertson"), (0.0, 1e11), saveat=11, rtol=1e-10, atol=1e-24,
                       solver=simkit.Rodas4())
    # Hairer & Wanner / the IVP test set's reference solution at t = 1e11
    reference = np.array([0.2083340149701e-07, 0.8333360770334e-13, 0.9999999791665])
    np.testing.assert_allclose(np.asarray(sol.ys[-1]), reference, rtol=1e-6)


def _decay_rhs(t, y, p):
    return -y


@pytest.mark.parametrize("solver", [simkit.Tsit5(), simkit.Rodas5P(), simkit.BDF()], ids=lambda s: type(s).__name__)
def test_a_step_that_reaches_t1_by_rounding_is_the_last(solver):
    """With max_step = span / 79, the 79th step's end t + h rounds to t1 while h is 10 ulps
    short of the span left (the test of the last step was relative to that span only): the
    solve stopped at t1 as "max_steps reached", and saveat="steps" recorded t1 twice."""
    decay = simkit.ODEModel(rhs=_decay_rhs, params={}, y0=[1.0], state_names=("u",), name="decay")
    sol = simkit.solve(decay, (0.0, 2.5), saveat=3, max_step=2.5 / 79, solver=solver)  # raised before
    assert int(sol.status) == 0 and float(sol.t_final) == 2.5
    np.testing.assert_allclose(np.asarray(sol.ys[-1, 0]), np.exp(-2.5), rtol=1e-5)  # rtol 1e-6
    steps = simkit.solve(decay, (0.0, 2.5), saveat="steps", max_step=2.5 / 79, solver=solver)
    ts = np.asarray(steps.ts)
    assert ts[-1] == 2.5 and np.all(np.diff(ts) > 0), ts[-3:]
    assert len(ts) == int(steps.stats["num_accepted_steps"]) + 1
