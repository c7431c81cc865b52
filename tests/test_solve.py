"""simkit.solve against exact solutions, and its composition with JAX transforms."""

import warnings

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
import simkit.solvers
from simkit import models


def oscillator_rhs(t, y, p):
    return jnp.stack([y[1], -p["omega"] ** 2 * y[0]])


OSC = simkit.ODEModel(
    rhs=oscillator_rhs, params={"omega": 2.0}, y0=[1.0, 0.0], state_names=("x", "v"),
    name="oscillator", t_span=(0.0, 3.0),
)


def osc_exact(t, omega=2.0):
    return np.stack([np.cos(omega * t), -omega * np.sin(omega * t)], axis=-1)


def ball_rhs(t, y, p):
    return jnp.stack([y[1], -p["g"] + 0.0 * y[0]])


BALL = simkit.ODEModel(rhs=ball_rhs, params={"g": 9.81}, y0=[10.0, 0.0], state_names=("h", "v"),
                       name="ball", t_span=(0.0, 5.0))

TOL = dict(rtol=1e-10, atol=1e-10)


def test_exact_solution_linspace_saveat():
    sol = simkit.solve(OSC, saveat=31, **TOL)
    assert sol.ys.shape == (31, 2) and sol.ts.shape == (31,)
    np.testing.assert_allclose(sol.ts, np.linspace(0, 3, 31), rtol=0, atol=1e-14)
    # global error of a 1e-10 solve over ~1 period: within 100x tolerance
    np.testing.assert_allclose(sol.ys, osc_exact(np.asarray(sol.ts)), rtol=0, atol=1e-8)
    assert sol.status == simkit.Status.SUCCESS and sol.ok


def test_saveat_array_steps_and_backwards():
    ts = jnp.array([0.0, 0.5, 2.0, 3.0])
    sol = simkit.solve(OSC, saveat=ts, **TOL)
    np.testing.assert_allclose(sol.ys, osc_exact(np.asarray(ts)), atol=1e-8)
    for solver in (None, diffrax.Tsit5()):  # simkit's kernel and diffrax: same result shape
        steps = simkit.solve(OSC, saveat="steps", solver=solver, **TOL)
        n = int(steps.stats["num_accepted_steps"])
        assert steps.ts.shape == (n + 1,) and float(steps.ts[0]) == 0.0
        assert np.all(np.diff(np.asarray(steps.ts)) > 0) and float(steps.ts[-1]) == 3.0
        np.testing.assert_allclose(steps.ys, osc_exact(np.asarray(steps.ts)), atol=1e-8)
    back = simkit.solve(OSC, (3.0, 0.0), y0=osc_exact(3.0), saveat=5, **TOL)
    np.testing.assert_allclose(back.y_final, osc_exact(0.0), atol=1e-8)


def test_dense_output_matches_exact():
    sol = simkit.solve(OSC, saveat=2, dense=True, **TOL)
    t = np.linspace(0.0, 3.0, 97)
    np.testing.assert_allclose(sol.evaluate(t), osc_exact(t), atol=1e-8)
    with pytest.raises(ValueError, match="dense=True"):
        simkit.solve(OSC, saveat=2, **TOL).evaluate(1.0)


def test_terminal_event_time_and_index():
    g = 9.81
    sol = simkit.solve(BALL, saveat=51, events=lambda t, y, p: y[0], **TOL)
    assert sol.status == simkit.Status.EVENT
    np.testing.assert_allclose(float(sol.event_time), np.sqrt(2 * 10 / g), rtol=1e-10)
    assert int(sol.event_index) == 0
    # save times after the event are dropped, the rest are kept and exact
    assert np.all(np.asarray(sol.ts) <= float(sol.event_time))
    np.testing.assert_allclose(sol["h"], 10 - 0.5 * g * np.asarray(sol.ts) ** 2, atol=1e-9)
    # two events: the first one to fire (crossing h = 5) is recorded
    two = simkit.solve(BALL, saveat=51, events=[lambda t, y, p: y[0], lambda t, y, p: y[0] - 5.0], **TOL)
    assert int(two.event_index) == 1
    np.testing.assert_allclose(float(two.event_time), np.sqrt(2 * 5 / g), rtol=1e-10)


def test_numbers_do_not_recompile():
    traces = []

    def rhs(t, y, p):
        traces.append(1)
        return -p["k"] * y

    model = simkit.ODEModel(rhs=rhs, params={"k": 1.0}, y0=[1.0, 2.0], state_names=("a", "b"))
    simkit.solve(model, (0.0, 1.0), saveat=11)
    first = len(traces)
    assert first > 0
    s2 = simkit.solve(model, (0.5, 2.0), y0=[3.0, 4.0], params={"k": 0.3}, saveat=11, rtol=1e-9,
                      atol=1e-12, dt0=0.01)
    assert len(traces) == first  # new params, y0, t_span, tolerances, dt0: same program
    np.testing.assert_allclose(s2.ys[-1], np.array([3.0, 4.0]) * np.exp(-0.3 * 1.5), rtol=1e-7)
    # save times given as an array are another structure: traced once, then reused
    s3 = simkit.solve(model, (0.0, 1.0), saveat=jnp.linspace(0.0, 1.0, 11), params={"k": 2.0})
    n_after = len(traces)
    simkit.solve(model, (0.0, 3.0), saveat=jnp.linspace(0.0, 3.0, 11), params={"k": 5.0})
    assert len(traces) == n_after
    np.testing.assert_allclose(s3.ys[-1], np.array([1.0, 2.0]) * np.exp(-2.0), rtol=1e-5)


def test_grad_matches_central_difference():
    lv = models.get("lotka_volterra")

    def loss(alpha, delta):
        sol = simkit.solve(lv, (0.0, 5.0), params={"alpha": alpha, "delta": delta}, saveat=11,
                           rtol=1e-12, atol=1e-12)
        return jnp.sum(jnp.log(sol.ys) ** 2)

    a, d = 0.55, 0.024
    g = jax.grad(loss, argnums=(0, 1))(a, d)
    for i, (x, h) in enumerate([(a, 1e-4), (d, 1e-6)]):
        args_p = [a, d]
        args_m = [a, d]
        args_p[i] = x + h
        args_m[i] = x - h
        fd = (float(loss(*args_p)) - float(loss(*args_m))) / (2 * h)
        assert abs(float(g[i]) - fd) <= 1e-6 * abs(fd), (i, float(g[i]), fd)


def test_vmap_equals_loop_and_jit_composes():
    lorenz = models.get("lorenz")

    def final(rho):
        return simkit.solve(lorenz, (0.0, 1.0), params={"rho": rho}, saveat=5, **TOL).ys

    rhos = jnp.array([10.0, 28.0, 35.0])
    batched = jax.vmap(final)(rhos)
    looped = np.stack([np.asarray(final(r)) for r in rhos])
    np.testing.assert_allclose(batched, looped, rtol=1e-12, atol=1e-12)
    jitted = jax.jit(final)(28.0)
    np.testing.assert_allclose(jitted, looped[1], rtol=1e-12, atol=1e-12)
    sol = jax.jit(lambda r: simkit.solve(lorenz, (0.0, 1.0), params={"rho": r}, saveat=5))(28.0)
    assert isinstance(sol, simkit.Solution) and sol.ys.shape == (5, 3)


def test_failure_under_jit_still_raises():
    rob = models.get("robertson")
    f = jax.jit(lambda k1: simkit.solve(rob, params={"k1": k1}, solver=diffrax.Tsit5(),
                                        max_steps=50).ys)
    with pytest.raises(Exception, match="failed"):
        f(0.04).block_until_ready()


def test_failure_under_jit_of_a_derivative_raises():
    """Under jax.jit(jax.grad(loss)) only the gradient is returned: the check on the primal
    solution was removed with it, and a failed solve gave a finite, wrong gradient."""
    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0], state_names=("y",))

    def loss(k, solver):  # k = 1e4 is stiff: an explicit method needs far more than 200 steps
        return simkit.solve(decay, (0.0, 10.0), params={"k": k}, saveat=np.array([1.0, 10.0]), solver=solver,
                            max_steps=200).ys[-1, 0]

    for solver in (simkit.Tsit5(), diffrax.Tsit5()):
        grad = jax.jit(jax.grad(loss), static_argnums=1)
        np.testing.assert_allclose(grad(1.0, solver), -10 * np.exp(-10.0), rtol=1e-4)  # unchanged when it works
        with pytest.raises(Exception, match="failed"):
            jax.block_until_ready(grad(1e4, solver))


def test_stats_counts():
    sol = simkit.solve(OSC, saveat=3, solver=diffrax.Dopri5(), **TOL)
    s = {k: int(v) for k, v in sol.stats.items()}
    assert s["num_steps"] == s["num_accepted_steps"] + s["num_rejected_steps"] > 0
    # Dopri5: 7 stages, FSAL -> 6 evaluations per step, +1 first, +2 initial-step estimate
    assert s["num_rhs"] == 6 * s["num_steps"] + 3


def test_stiff_defaults_at_tight_tolerance_conserve_mass():
    rob = models.get("robertson")
    sol = simkit.solve(rob, saveat=21, rtol=1e-10, atol=1e-14)
    assert sol.solver_name == "simkit.RadauIIA5()"  # the default below rtol 1e-8 (Rodas5P above)
    np.testing.assert_allclose(np.asarray(sol.ys).sum(axis=1), 1.0, atol=1e-12)
    # where simkit picks diffrax (stiff systems above 64 states), Kvaerno5 gets simkit's
    # Newton tolerances; diffrax's default took ~5,100 steps here
    kvaerno = simkit.solvers.with_newton_tolerances(diffrax.Kvaerno5(), 1e-10, 1e-14)
    dense = simkit.solve(rob, saveat=21, rtol=1e-10, atol=1e-14, dense=True, solver=kvaerno)
    assert dense.solver_name == "diffrax.Kvaerno5"
    np.testing.assert_allclose(np.asarray(dense.ys).sum(axis=1), 1.0, atol=1e-12)
    assert int(dense.stats["num_steps"]) < 1000


def test_solution_access_and_exports(tmp_path):
    sol = simkit.solve(models.get("sir"), saveat=11)
    np.testing.assert_array_equal(sol["I"], sol.ys[:, 1])
    with pytest.raises(simkit.ParameterError, match="states are"):
        sol["Q"]
    ds = sol.to_xarray()  # round trips in detail: tests/test_io.py
    assert list(ds.data_vars) == ["S", "I", "R"] and ds["I"].dims == ("t",)
    assert ds.attrs["model"] == "sir" and ds.attrs["parameters"] == '{"beta": 0.3, "gamma": 0.1}'
    assert ds.attrs["solver"] == "simkit.Tsit5()" and ds.attrs["rtol"] == 1e-6
    ds.to_netcdf(tmp_path / "sir.nc", engine="scipy")  # plain NetCDF-3 attributes too
    ax = sol.plot()
    assert len(ax.get_lines()) == 3
    assert "sir" in repr(sol)


def test_dense_output_outside_the_solved_span_is_refused():
    sol = simkit.solve(OSC, saveat=2, dense=True, **TOL)
    assert np.all(np.isfinite(np.asarray(sol.evaluate(np.array([0.0, 3.0])))))  # both ends are inside
    with pytest.raises(simkit.InputError, match=r"t = \[3.5\] is outside the solved span \[0, 3\] of 'oscillator'"):
        sol.evaluate(3.5)
    with pytest.raises(simkit.InputError, match=r"t = \[-0.1, nan\] is outside"):
        sol.evaluate(np.array([1.0, -0.1, np.nan]))
    # a traced t: checked when the program runs (it gave NaN without a word), or NaN on request
    with pytest.raises(RuntimeError, match=r"Solution.evaluate: a time outside the solved span of 'oscillator'"):
        jax.block_until_ready(jax.jit(sol.evaluate)(3.5))
    assert np.isnan(np.asarray(jax.jit(lambda t: sol.evaluate(t, throw=False))(3.5))).all()


DECAY = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0], state_names=("y",))


@pytest.mark.parametrize("solver", [simkit.Tsit5(), simkit.BDF()], ids=repr)
def test_far_from_t0_zero_time_and_state_advance_together(solver):
    # found by probing: the state advanced by the step h while time advanced by fl(t + h) - t,
    # so at t0 = 1e9 (Unix seconds) the error grew to 5e3 x rtol with status success; now the
    # step taken is t_new - t (SciPy's rule) and the error is the one at t0 = 0
    t0, rtol = 1e9, 1e-10
    sol = simkit.solve(DECAY, (t0, t0 + 5.0), saveat=[t0 + 5.0], solver=solver, rtol=rtol, atol=1e-14)
    ref = simkit.solve(DECAY, (0.0, 5.0), saveat=[5.0], solver=solver, rtol=rtol, atol=1e-14)
    exact = np.exp(-5.0)
    err, err0 = abs(float(sol.ys[-1, 0]) - exact) / exact, abs(float(ref.ys[-1, 0]) - exact) / exact
    assert err <= max(3 * err0, 10 * rtol), (err, err0)


@pytest.mark.parametrize("solver", [simkit.Tsit5(), simkit.RadauIIA5()], ids=repr)
def test_a_pure_relative_tolerance_follows_a_state_down_to_the_smallest_normal_numbers(solver):
    # found by probing: XLA:CPU flushes subnormals to zero, so with atol = 0 the error scale of a
    # state near 1e-300 became 0 and the solve stopped at t = 690 as "non-finite"; SciPy finishes
    # (at e^-700 = 1e-304, below tiny / rtol = 2.2e-300, rtol 1e-8 cannot hold: it warns)
    with pytest.warns(UserWarning, match=r"state 'y' is .* at t = 700, below 2.23e-300 .*flushes subnormal"):
        sol = simkit.solve(DECAY, (0.0, 700.0), saveat=[600.0, 700.0], solver=solver, rtol=1e-8, atol=0.0)
    assert int(sol.status) == 0
    np.testing.assert_allclose(np.asarray(sol.ys[:, 0]), np.exp([-600.0, -700.0]), rtol=1e-3)


@pytest.mark.parametrize("solver", [simkit.Tsit5(), simkit.Rodas5P()], ids=repr)
def test_a_tolerance_below_the_smallest_normal_number_warns_where_it_cannot_hold(solver):
    # found by probing: y' = -y from 1e-300 with atol = 0 ended at 2.8e-308 (Tsit5; Rodas5P:
    # 6.3e-308) where the exact value is 2.1e-309, with status success and no word: XLA:CPU
    # flushes subnormal numbers, so an error scale below 2.2e-308 counts as 2.2e-308
    model = DECAY.replace(y0=np.array([1e-300]))
    with pytest.warns(UserWarning, match=r"state 'y' is 4.5\de-305 at t = 10, .*give atol >= 2.2e-308"):
        sol = simkit.solve(model, (0.0, 20.0), saveat=[10.0, 20.0], solver=solver, rtol=1e-6, atol=0.0)
    assert abs(float(sol.ys[-1, 0]) - 1e-300 * np.exp(-20.0)) < 1e-306  # what it did control: ~tiny absolute
    # an ensemble names the member
    with pytest.warns(UserWarning, match=r"simkit.ensemble: model .* member 1: state 'y' is 4.5\de-305 at t = 10"):
        simkit.ensemble(model, (0.0, 20.0), y0=np.array([[1.0], [1e-300]]), saveat=[10.0, 20.0], solver=solver,
                        rtol=1e-6, atol=0.0)
    # an atol the arithmetic can hold, or states that stay above tiny / rtol: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        simkit.solve(model, (0.0, 20.0), saveat=[10.0, 20.0], solver=solver, rtol=1e-6, atol=1e-300)
        simkit.solve(model, (0.0, 2.0), saveat=[1.0, 2.0], solver=solver, rtol=1e-6, atol=0.0)


def test_a_nan_initial_state_under_vmap_is_reported_as_non_finite_at_once():
    # found by probing: a NaN y0 known only under a transform made a NaN first step that the
    # step-size test never caught: 100,000 rejected attempts reported as MAX_STEPS
    ys0 = jnp.asarray([[1.0], [jnp.nan]])
    sols = jax.vmap(lambda y0: simkit.solve(DECAY, (0.0, 1.0), y0=y0, saveat=2, throw=False))(ys0)
    assert [int(s) for s in sols.status] == [0, int(simkit.Status.NONFINITE)]
    assert int(sols.stats["num_steps"][1]) < 10


def test_a_nan_rhs_at_a_finite_state_is_named_whatever_the_status():
    # found by probing: NONFINITE said "whether the solution blows up" (the state was finite)
    # and the implicit kernels' NONLINEAR_FAILURE blamed the Jacobian
    holed = simkit.ODEModel(rhs=lambda t, y, p: jnp.where(t > 0.5, jnp.nan, -y), params={}, y0=[1.0],
                            state_names=("y",))
    with pytest.raises(simkit.SolveError, match="rhs is not finite just past t = 0.5"):
        simkit.solve(holed, (0.0, 1.0), saveat=2)


@pytest.mark.parametrize("solver", [simkit.Tsit5(), diffrax.Tsit5()], ids=repr)
def test_traced_inputs_that_the_front_door_refuses_end_as_invalid_input(solver):
    """Found by probing: save times, spans and tolerances known only under jax.jit/vmap skipped
    the host checks: times outside the span or unordered gave wrong states with status success
    (the kernels) or every state inf (diffrax), a negative rtol ran as |rtol|. The same rules
    run inside the program (`simkit._traced_checks`): such a member ends INVALID_INPUT with NaN
    states, its neighbours under vmap are unaffected, and throw=True raises under jit."""
    invalid = int(simkit.Status.INVALID_INPUT)
    times = jnp.asarray([[0.0, 0.5, 1.0], [0.0, 0.5, 2.0], [-1.0, 0.5, 1.0], [0.0, 0.8, 0.5],
                         [0.0, jnp.nan, 1.0]])
    sols = jax.vmap(lambda ts: simkit.solve(DECAY, (0.0, 1.0), saveat=ts, solver=solver, rtol=1e-8, atol=1e-10,
                                            throw=False))(times)
    assert [int(s) for s in sols.status] == [0, invalid, invalid, invalid, invalid]
    np.testing.assert_allclose(np.asarray(sols.ys[0, :, 0]), np.exp(-np.asarray(times[0])), rtol=1e-6)
    assert np.isnan(np.asarray(sols.ys[1:])).all()
    # tolerances: negative, NaN; one below 100 eps is raised to it (as at top level)
    rtols = jnp.asarray([1e-8, -1e-8, jnp.nan, 1e-20])
    sols = jax.vmap(lambda r: simkit.solve(DECAY, (0.0, 1.0), saveat=[1.0], solver=solver, rtol=r, atol=1e-12,
                                           throw=False))(rtols)
    assert [int(s) for s in sols.status] == [0, invalid, invalid, 0]
    np.testing.assert_allclose(np.asarray(sols.ys[[0, 3], 0, 0]), np.exp(-1.0), rtol=1e-7)
    # a traced reversed span with ascending save times; throw=True raises under jit
    backwards = jax.jit(lambda t0: simkit.solve(DECAY, (t0, 0.0), saveat=[0.0, 0.5, 1.0], solver=solver).ys)
    with pytest.raises(Exception, match="invalid traced input"):
        jax.block_until_ready(backwards(1.0))


def test_traced_save_times_a_rounding_past_the_span_are_its_end():
    # found by probing: jnp.arange(4) * dt for a span (0, 3 dt) ends at 0.30000000000000004;
    # the host path clipped it to t1, under jit the kernels lost the last row
    f = jax.jit(lambda dt: simkit.solve(DECAY, (0.0, 0.3), saveat=jnp.arange(4) * dt, rtol=1e-10, atol=1e-12))
    sol = f(0.1)
    assert int(sol.status) == 0
    np.testing.assert_allclose(np.asarray(sol.ys[:, 0]), np.exp(-np.arange(4) * 0.1), rtol=1e-8)
    # t1 = inf (a terminal event) needs given save times: a count of them is refused at top
    # level; under jit it gave rows of inf with status EVENT
    ball = simkit.ODEModel(lambda t, y, p: jnp.stack([y[1], -p["g"]]), params={"g": 9.81}, y0=[10.0, 0.0],
                           state_names=("h", "v"))
    hit = simkit.Event(lambda t, y, p: y[0], terminal=True, direction=-1)
    drop = jax.jit(lambda t1: simkit.solve(ball, (0.0, t1), events=hit, saveat=5, throw=False).status)
    assert int(drop(np.inf)) == int(simkit.Status.INVALID_INPUT) and int(drop(5.0)) == int(simkit.Status.EVENT)


@pytest.mark.parametrize("solver", [simkit.Tsit5(), simkit.DOP853()], ids=repr)
def test_a_state_of_1e200_beside_a_state_at_zero(solver):
    # found by probing: x'' = -x from x = 1e200, v = 0 with atol 1e-10: the squares of
    # f0 / scale in the first-step estimate (and of DOP853's bare stage combinations in its
    # error norm) overflowed; the solve stopped at t0 as "non-finite". Exact: x = A cos t
    amplitude = 1e200
    osc = simkit.ODEModel(rhs=lambda t, y, p: jnp.stack([y[1], -y[0]]), params={}, y0=[amplitude, 0.0],
                          state_names=("x", "v"))
    sol = simkit.solve(osc, (0.0, 10.0), saveat=[10.0], solver=solver, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.asarray(sol.ys[-1]) / amplitude, [np.cos(10.0), -np.sin(10.0)], rtol=0, atol=1e-6)


def test_save_count_times_are_numpys_linspace_and_the_files(tmp_path):
    """`saveat=n` with the span's numbers: the grid computed in the program (XLA multiplies by
    the reciprocal of the count, and may fuse a multiply-add) differed from NumPy's
    `linspace` in the last bit on most spans, and `solve_to_file`'s frames (NumPy's grid)
    from `solve`'s, states by up to 1e-13 (found by probing). One host grid for both now."""
    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 0.3}, y0=[1.0], state_names=("x",))
    for t0, t1 in [(-2.0, 7.3), (1.5, 99.1), (0.3, 0.0), (10.0, -3.7)]:
        np.testing.assert_array_equal(simkit.solve(decay, (t0, t1), saveat=33).ts, np.linspace(t0, t1, 33))
    sol = simkit.solve(decay, (0.3, 0.0), saveat=33, rtol=1e-10, atol=1e-12)
    path = simkit.solve_to_file(str(tmp_path / "back.nc"), decay, (0.3, 0.0), saveat=33, chunk=7, rtol=1e-10,
                                atol=1e-12)
    frames = simkit.load(path)
    np.testing.assert_array_equal(frames["t"].values, sol.ts)
    np.testing.assert_array_equal(frames["x"].values, sol.ys[:, 0])
