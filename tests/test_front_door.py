"""The front door (simkit._prepare): one preparation for every call, SciPy's semantics for
edge cases, and the rule that a bad input is an error, never a silent wrong result."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit import models

LORENZ = models.get("lorenz")
DECAY = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0, 2.0],
                        state_names=("a", "b"), name="decay", t_span=(0.0, 2.0))
ENGINES = [simkit.Tsit5(), diffrax.Tsit5()]


def test_saveat_object_and_shorthands_are_one_program():
    a = simkit.solve(DECAY, saveat=11)
    b = simkit.solve(DECAY, saveat=simkit.SaveAt(ts=11))
    np.testing.assert_array_equal(np.asarray(a.ys), np.asarray(b.ys))
    ts = np.linspace(0.0, 2.0, 7)
    c = simkit.solve(DECAY, saveat=ts)
    d = simkit.solve(DECAY, saveat=simkit.SaveAt(ts=ts))
    np.testing.assert_array_equal(np.asarray(c.ys), np.asarray(d.ys))
    steps = simkit.solve(DECAY, saveat="steps")
    np.testing.assert_array_equal(np.asarray(steps.ys), np.asarray(simkit.solve(DECAY, saveat=simkit.SaveSteps()).ys))
    with pytest.raises(ValueError, match="not both"):
        simkit.SaveAt(ts=3, steps=True)


@pytest.mark.parametrize("solver", ENGINES, ids=["kernel", "diffrax"])
def test_t0_equal_t1_returns_y0(solver):
    sol = simkit.solve(DECAY, (1.0, 1.0), saveat=3, solver=solver)
    assert sol.ok and np.all(np.asarray(sol.ts) == 1.0)
    np.testing.assert_array_equal(np.asarray(sol.ys), np.tile([1.0, 2.0], (3, 1)))


def test_empty_state():
    empty = simkit.ODEModel(rhs=lambda t, y, p: -y, params={}, y0=np.zeros(0), state_names=())
    sol = simkit.solve(empty, (0.0, 1.0), saveat=4)
    assert sol.ok and np.shape(sol.ys) == (4, 0)
    np.testing.assert_allclose(np.asarray(sol.ts), np.linspace(0, 1, 4))
    # events and dense output on no states were ignored: status success at t1 = inf (probing)
    for kwargs in (dict(events=simkit.Event(lambda t, y, p: t - 0.5)), dict(dense=True)):
        with pytest.raises(simkit.InputError, match="has no states.*events and dense output need states"):
            simkit.solve(empty, (0.0, 1.0), saveat=4, **kwargs)


def test_numpy_numbers_and_complex_lists_are_taken():
    """Found by probing: an Event's NumPy int or bool (SciPy-style attributes set from arrays)
    was refused; a complex y0 given as a list failed in NumPy's float()."""
    ev = simkit.Event(lambda t, y, p: t - 1.0, terminal=np.int64(2), max_records=np.int64(10))
    assert (ev.terminal, ev.max_records) == (2, 10) and type(ev.terminal) is int
    assert simkit.Event(lambda t, y, p: t, terminal=np.True_).terminal == 1
    rot = simkit.ODEModel(rhs=lambda t, y, p: -1j * y, params={}, y0=[1 + 0j], state_names=("z",))
    assert rot.y0.dtype == np.complex128
    np.testing.assert_allclose(simkit.solve(rot, (0.0, 1.0), saveat=2, rtol=1e-10, atol=1e-12).ys[-1, 0],
                               np.exp(-1j), rtol=1e-8)


def test_a_vmapped_solution_is_not_evaluated_with_a_bare_error():
    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0], state_names=("x",))
    sols = jax.vmap(lambda k: simkit.solve(decay, (0.0, 1.0), params={"k": k}, saveat=2, dense=True))(
        jnp.array([1.0, 2.0]))
    with pytest.raises(simkit.InputError, match=r"ys has shape \(2, 2, 1\), a batched solution"):
        sols.evaluate(0.5)


@pytest.mark.parametrize("solver", ENGINES, ids=["kernel", "diffrax"])
def test_max_step_bounds_every_step(solver):
    sol = simkit.solve(DECAY, saveat="steps", max_step=0.05, solver=solver)
    steps = np.diff(np.asarray(sol.ts))
    assert steps.max() <= 0.05 * (1 + 1e-12) and len(steps) >= 40
    np.testing.assert_allclose(np.asarray(sol.ys[-1]), np.array([1.0, 2.0]) * np.exp(-2.0), rtol=1e-5)


@pytest.mark.parametrize("solver", ENGINES, ids=["kernel", "diffrax"])
def test_dt0_sign_is_ignored_in_both_directions(solver):
    for span in ((0.0, 2.0), (2.0, 0.0)):
        plus = simkit.solve(DECAY, span, saveat=5, dt0=0.01, solver=solver)
        minus = simkit.solve(DECAY, span, saveat=5, dt0=-0.01, solver=solver)
        np.testing.assert_array_equal(np.asarray(plus.ys), np.asarray(minus.ys))
        assert plus.ok and int(plus.stats["num_steps"]) < 1000


@pytest.mark.parametrize("solver", ENGINES, ids=["kernel", "diffrax"])
def test_rows_not_reached_hold_the_state_where_the_solve_stopped(solver):
    """throw=False and max_steps reached: ts is inf and ys is y_final past the stop, in both
    engines (diffrax's rows were inf)."""
    sol = simkit.solve(DECAY, (0.0, 2.0), saveat=5, solver=solver, max_steps=3, throw=False)
    reached = np.isfinite(np.asarray(sol.ts))
    assert int(sol.status) == int(simkit.Status.MAX_STEPS) and not reached.all()
    np.testing.assert_array_equal(np.asarray(sol.ys)[~reached], np.broadcast_to(sol.y_final, (int((~reached).sum()), 2)))


@pytest.mark.parametrize("solver", ENGINES, ids=["kernel", "diffrax"])
def test_complex_state(solver):
    """y' = i w y: y = exp(i w t) y0, integrated as a complex system (never truncated)."""
    spin = simkit.ODEModel(rhs=lambda t, y, p: 1j * p["w"] * y, params={"w": 2.0}, y0=np.array([1.0 + 0j, 0.5j]),
                           state_names=("u", "v"), name="spin")
    sol = simkit.solve(spin, (0.0, 3.0), saveat=4, solver=solver, rtol=1e-10, atol=1e-12)
    exact = np.exp(2j * np.asarray(sol.ts))[:, None] * np.array([1.0, 0.5j])
    assert np.iscomplexobj(np.asarray(sol.ys))
    np.testing.assert_allclose(np.asarray(sol.ys), exact, rtol=1e-8, atol=1e-8)
    # dense output: complex values (diffrax's, solved on (re, im), gave both parts stacked)
    dense = simkit.solve(spin, (0.0, 3.0), saveat=4, solver=solver, rtol=1e-10, atol=1e-12, dense=True)
    t = np.array([0.77, 2.1])
    np.testing.assert_allclose(np.asarray(dense.evaluate(t)), np.exp(2j * t)[:, None] * np.array([1.0, 0.5j]),
                               rtol=1e-8, atol=1e-8)
    with pytest.raises(TypeError, match="complex states"):
        simkit.solve(spin, (0.0, 3.0), solver=simkit.Rodas4())


def test_the_default_for_a_small_stiff_complex_model_is_diffrax():
    """The stiff kernels' Jacobian and LU are real: the default (Rodas5P, or AutoSwitch for
    stiff=None) crashed in jax.jacfwd below 65 states."""
    for stiff in (True, None):
        spin = simkit.ODEModel(rhs=lambda t, y, p: (1j * p["w"] - p["d"]) * y, params={"w": 2.0, "d": 0.1},
                               y0=np.array([1.0 + 0j, 0.5j]), state_names=("u", "v"), stiff=stiff)
        sol = simkit.solve(spin, (0.0, 3.0), saveat=2, rtol=1e-8, atol=1e-10)
        assert sol.solver_name == "diffrax.Kvaerno5"
        np.testing.assert_allclose(np.asarray(sol.ys[-1]), np.exp((2j - 0.1) * 3.0) * np.array([1.0, 0.5j]),
                                   rtol=1e-6)


def test_rhs_output_checked_once_at_trace_time():
    broadcasting = DECAY.replace(rhs=lambda t, y, p: -y[:1])
    with pytest.raises(ValueError, match=r"rhs returned shape \(1,\).*\(2,\)"):
        simkit.solve(broadcasting)
    listing = DECAY.replace(rhs=lambda t, y, p: [-y[0], -y[1]])
    with pytest.raises(TypeError, match="rhs must return one array"):
        simkit.solve(listing)


def test_rhs_output_narrower_than_the_state_is_refused():
    """float32 derivatives of a float64 state crashed the stiff kernels and AutoSwitch (the
    default for stiff=None) inside JAX, and the explicit kernels rounded every derivative to
    float32 whatever rtol asked; integers alike. Refused before compiling, in solve and ensemble."""
    for kind in (jnp.float32, jnp.int32):
        narrow = DECAY.replace(rhs=lambda t, y, p, kind=kind: (-y).astype(kind), stiff=None)
        for call in (lambda: simkit.solve(narrow, solver=simkit.Tsit5()), lambda: simkit.solve(narrow),
                     lambda: simkit.ensemble(narrow, y0=np.ones((2, 2)))):
            with pytest.raises(TypeError, match=f"rhs returned {jnp.dtype(kind).name} values for a float64 state"):
                call()


def test_save_times_checked_in_solve_and_ensemble():
    with pytest.raises(ValueError, match="saveat times must be finite"):
        simkit.solve(DECAY, saveat=[0.0, np.nan, 1.0])
    rhos = np.linspace(10.0, 20.0, 8)
    for bad, match in (([0.0, 30.0], "lie in t_span"), ([0.0, 2.0, 1.0], "ordered"), ([np.nan], "finite")):
        with pytest.raises(ValueError, match=match):
            simkit.ensemble(LORENZ, (0.0, 20.0), params={"rho": rhos}, saveat=bad)


@pytest.mark.parametrize("engine", ENGINES + [diffrax.Kvaerno5()], ids=lambda s: type(s).__module__[:6] + type(s).__name__)
def test_save_times_just_outside_the_span_are_its_ends(engine):
    """Times within the rounding slack (1e-12 of the span) outside [t0, t1] are accepted as
    t0 and t1: diffrax made every saved time and state inf (status SUCCESS), the kernels the
    one time past t1."""
    for ts, ends in (([0.0, 0.5, 2.0 * (1 + 5e-13)], [0.0, 0.5, 2.0]), ([-1e-13, 0.5, 2.0], [0.0, 0.5, 2.0])):
        sol = simkit.solve(DECAY, saveat=np.array(ts), solver=engine, rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(np.asarray(sol.ts), ends)
        np.testing.assert_allclose(np.asarray(sol.ys[:, 0]), np.exp(-np.array(ends)), rtol=1e-6)


def test_ensemble_degenerate_inputs():
    with pytest.raises(ValueError, match="0 members"):
        simkit.ensemble(DECAY, params={"k": np.zeros(0)})
    with pytest.raises(ValueError, match="devices is empty"):
        simkit.ensemble(DECAY, params={"k": np.ones(4)}, devices=[])


def test_saving_every_step_is_bounded_by_the_memory_budget():
    with pytest.raises(ValueError, match="memory budget"):
        simkit.solve(DECAY, saveat="steps", max_steps=10**12)


def test_rtol_below_machine_precision_warns():
    with pytest.warns(UserWarning, match="raised to"):
        sol = simkit.solve(DECAY, rtol=1e-16, atol=1e-12, saveat=3)
    assert float(sol.rtol) == pytest.approx(100 * np.finfo(np.float64).eps)


def test_float32_raises_the_default_rtol_in_silence():
    """In float32 the defaults (1e-6 for solves, 1e-8 for fits) are below 100 epsilons: raised
    without a warning; a tolerance the caller gave warns (pyproject turns warnings into errors)."""
    eps32 = float(np.finfo(np.float32).eps)
    with simkit.precision("float32"):
        sol = simkit.solve(DECAY, saveat=3)
        ens = simkit.ensemble(DECAY, params={"k": jnp.asarray([0.5, 1.0])}, saveat=3)
        with pytest.warns(UserWarning, match="raised to"):
            simkit.solve(DECAY, saveat=3, rtol=1e-6)
    assert float(sol.rtol) == pytest.approx(100 * eps32) and float(np.max(ens.rtol)) == pytest.approx(100 * eps32)


def test_params_of_the_wrong_kind():
    for bad in ([1.0], np.ones(1), "k=1"):
        with pytest.raises(TypeError, match="params must be a dict"):
            simkit.solve(DECAY, params=bad)
    with pytest.raises(ValueError, match="simkit.ensemble or jax.vmap"):
        simkit.solve(DECAY, params={"k": np.ones(3)})
    with pytest.raises(ValueError, match="t_span must be a pair"):
        simkit.solve(DECAY, 5.0)
    # ParameterError is a KeyError (a name that is not there) and a ValueError (a bad value)
    with pytest.raises(KeyError):
        simkit.solve(DECAY, params={"kk": 1.0})


def test_rollouts_check_parameter_names():
    heat = models.get("heat_1d")
    with pytest.raises(KeyError, match="no parameter"):
        simkit.stencil.rollout(heat, {"nope": 1.0}, dt=1e-5, steps=2)


def test_numbers_never_recompile_through_the_front_door():
    traces = []

    def rhs(t, y, p):
        traces.append(1)
        return -p["k"] * y

    model = DECAY.replace(rhs=rhs)
    simkit.solve(model, (0.0, 1.0), saveat=simkit.SaveAt(ts=[0.0, 0.5, 1.0]), max_step=0.5)
    n = len(traces)
    simkit.solve(model, (0.0, 3.0), saveat=[0.0, 1.0, 3.0], max_step=0.3, dt0=0.01, rtol=1e-8,
                 y0=[2.0, 3.0], params={"k": 0.5})
    assert len(traces) == n


@pytest.mark.parametrize("solver", ENGINES, ids=["kernel", "diffrax"])
def test_infinite_end_with_a_terminal_event(solver):
    ball = simkit.ODEModel(rhs=lambda t, y, p: jnp.stack([y[1], -p["g"] + 0 * y[0]]), params={"g": 9.81},
                           y0=[10.0, 0.0], state_names=("h", "v"), name="ball")
    sol = simkit.solve(ball, (0.0, np.inf), saveat=[0.0, 0.5, 1.0], events=lambda t, y, p: y[0], solver=solver,
                       rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(float(sol.event_time), np.sqrt(2 * 10 / 9.81), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(sol["h"]), 10 - 0.5 * 9.81 * np.array([0.0, 0.5, 1.0]) ** 2, rtol=1e-9)
    with pytest.raises(ValueError, match="t1 = inf needs explicit save times"):
        simkit.solve(ball, (0.0, np.inf), events=lambda t, y, p: y[0], solver=solver)


@pytest.mark.parametrize("kernel", [simkit.Tsit5(), simkit.DOPRI5(), simkit.DOP853(), simkit.Rodas4()])
def test_dense_output_keeps_the_engine_and_every_saved_value(kernel):
    """dense=True: the kernel's own interpolant, the same engine, the same saved bits."""
    model, span = (models.get("robertson"), (0.0, 100.0)) if kernel.stiff else (LORENZ, (0.0, 2.0))
    plain = simkit.solve(model, span, saveat=11, solver=kernel, rtol=1e-8, atol=1e-10)
    dense = simkit.solve(model, span, saveat=11, solver=kernel, rtol=1e-8, atol=1e-10, dense=True)
    assert dense.solver_name == plain.solver_name == repr(kernel)
    np.testing.assert_array_equal(np.asarray(dense.ys), np.asarray(plain.ys))
    inner = np.asarray(plain.ts)[1:-1]
    np.testing.assert_allclose(np.asarray(dense.evaluate(inner)), np.asarray(plain.ys)[1:-1], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("solver", ENGINES, ids=["kernel", "diffrax"])
def test_dense_output_ends_at_a_terminal_event(solver):
    """diffrax's interpolant runs on to the end of the step that found the event: evaluate
    returned states past the stop there."""
    spring = simkit.ODEModel(rhs=lambda t, y, p: jnp.stack([y[1], -y[0]]), params={}, y0=[1.0, 0.0],
                             state_names=("x", "v"), name="spring")
    sol = simkit.solve(spring, (0.0, 10.0), events=simkit.Event(lambda t, y, p: y[0], direction=1, terminal=1),
                       dense=True, solver=solver, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(float(sol.t_final), 1.5 * np.pi, rtol=1e-7)
    np.testing.assert_allclose(np.asarray(sol.evaluate(4.7)), [np.cos(4.7), -np.sin(4.7)], atol=1e-6)
    with pytest.raises(simkit.InputError, match=r"outside the solved span \[0, 4.71239\] of 'spring' \(the solve "
                                                r"stopped at an event\)"):
        sol.evaluate(float(sol.t_final) + 1e-4)


def test_dense_output_is_differentiable():
    def x_at(rho):
        sol = simkit.solve(LORENZ, (0.0, 1.0), params={"rho": rho}, saveat=3, rtol=1e-10, atol=1e-10, dense=True)
        return sol.evaluate(0.37)[0]

    g = float(jax.grad(x_at)(28.0))
    fd = (float(x_at(28.0 + 1e-5)) - float(x_at(28.0 - 1e-5))) / 2e-5
    np.testing.assert_allclose(g, fd, rtol=1e-5)


@pytest.mark.parametrize("solver", ENGINES, ids=["kernel", "diffrax"])
def test_dense_output_is_one_compiled_program(solver):
    """`Solution.evaluate` runs one compiled program per interpolant and shape of t (it ran
    op by op: about 70 small compiles on a first call, 60 ms per call after); a Python
    float, a NumPy scalar and a 0-d array share it."""
    from test_inspect import compiles

    sol = simkit.solve(LORENZ, (0.0, 1.0), saveat=3, dense=True, solver=solver, rtol=1e-10, atol=1e-10)
    first = sol.evaluate(0.25)
    times = (np.float64(0.25), jnp.asarray(0.25, jnp.float64), 0.25, np.array(0.25))
    with compiles() as names:
        same = [sol.evaluate(t) for t in times]
    assert names == [], names
    for value in same:
        np.testing.assert_array_equal(np.asarray(value), np.asarray(first))
    with compiles() as names:
        several = sol.evaluate(np.array([0.25, 0.5]))
    assert names.count("jit(_evaluate)") == 1 and len(names) <= 4, names
    np.testing.assert_array_equal(np.asarray(several[0]), np.asarray(first))


@pytest.mark.parametrize("solver", ENGINES, ids=["kernel", "diffrax"])
def test_a_single_save_point_is_the_final_state(solver):
    sol = simkit.solve(DECAY, saveat=1, solver=solver, rtol=1e-10, atol=1e-12)
    assert np.asarray(sol.ts).tolist() == [2.0]
    np.testing.assert_allclose(np.asarray(sol.ys[0]), np.array([1.0, 2.0]) * np.exp(-2.0), rtol=1e-8)


def test_first_step_fallback_is_not_relative_to_the_span():
    """A state and slope of ~0 at t0 (Hairer's fallback 1e-6): on a span of 1e11 the first
    step is not 1e5, and a late start still moves t."""
    ramp = simkit.ODEModel(rhs=lambda t, y, p: p["a"] * t * jnp.ones_like(y), params={"a": 1e-22}, y0=[0.0],
                           state_names=("u",), name="ramp")
    sol = simkit.solve(ramp, (0.0, 1e11), saveat="steps", rtol=1e-8, atol=1e-12)
    assert float(sol.ts[1]) <= 1e-3  # 100 x the fallback 1e-6 (was 1e5 x 100 before)
    np.testing.assert_allclose(float(sol.ys[-1, 0]), 0.5e-22 * 1e22, rtol=1e-8)
    late = simkit.solve(ramp, (1e10, 1e11), saveat=2, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(float(late.ys[-1, 0]), 0.5e-22 * (1e22 - 1e20), rtol=1e-8)
