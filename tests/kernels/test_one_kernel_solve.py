"""A small solve runs as one XLA:CPU kernel, its setup included (`simkit._codegen.
in_one_kernel_if_fits`): the same values as the plain program, and the plain program's
batching and derivatives."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit import models
from simkit._prepare import prepare
from simkit.engines import kernel_engine

CASES = [
    ("lorenz", simkit.Tsit5()),
    ("lorenz", simkit.DOP853()),
    ("robertson", simkit.Rodas5P()),
    ("robertson", simkit.RadauIIA5()),
    ("robertson", simkit.BDF()),
    ("robertson", simkit.AutoSwitch()),
    ("hires", simkit.Rodas5P()),
]
# events: their records written by selects inside the kernel, by scatters outside it
LORENZ_EVENTS = (simkit.Event(lambda t, y, p: y[0], max_records=8), simkit.Event(lambda t, y, p: y[2] - 30.0))
ROBERTSON_EVENT = (simkit.Event(lambda t, y, p: y[0] - 0.9),)
EVENT_CASES = [("lorenz", simkit.Tsit5(), LORENZ_EVENTS), ("robertson", simkit.Rodas5P(), ROBERTSON_EVENT)]


def _plan(name, solver, **kw):
    m = models.get(name)
    return prepare(m, (0.0, 1.0), saveat=5, solver=solver, rtol=1e-7, atol=1e-10, **kw)


@pytest.mark.parametrize("name,solver,events", EVENT_CASES, ids=[n for n, _, _ in EVENT_CASES])
def test_events_in_one_kernel_have_the_plain_programs_records(name, solver, events):
    """With events the solve is one kernel too, and its crossings are the same bits as the
    program traced without the path; a terminal event stops both at the same time."""
    plan = prepare(models.get(name), (0.0, 5.0), saveat=5, solver=solver, rtol=1e-7, atol=1e-10, events=events)
    assert "xla_cpu_small_call" in kernel_engine.run_kernel.lower(plan.program, plan.args).as_text()
    whole = kernel_engine.run_kernel(plan.program, plan.args)
    plain = jax.jit(lambda a: kernel_engine._solve_arrays(plan.program, a))(plan.args)
    assert int(np.asarray(whole.event_counts).sum()) > 0
    for key in ("ys", "event_ts", "event_ys", "event_counts", "t_final", "status"):
        np.testing.assert_array_equal(np.asarray(getattr(whole, key)), np.asarray(plain[key]), err_msg=key)


@pytest.mark.parametrize("name,solver", CASES, ids=[f"{n}-{s!r}" for n, s in CASES])
def test_one_kernel_has_the_plain_programs_values(name, solver):
    """Marked for XLA:CPU's single-kernel emitter, and the same bits as the program traced
    without it (thunks, the LU's columns by scatter): nothing in the arithmetic changed."""
    plan = _plan(name, solver)
    lowered = kernel_engine.run_kernel.lower(plan.program, plan.args).as_text()
    assert "xla_cpu_small_call" in lowered
    whole = kernel_engine.run_kernel(plan.program, plan.args)
    plain = jax.jit(lambda a: kernel_engine._solve_arrays(plan.program, a))(plan.args)
    assert int(whole.status) == 0
    np.testing.assert_array_equal(np.asarray(whole.ys), np.asarray(plain["ys"]))
    assert int(whole.stats["num_steps"]) == int(plain["stats"]["num_steps"])


def test_programs_that_do_not_fit_run_as_before():
    """Data above the small-loop threshold (20,000 saves of 3 states: 480 kB) keep the plain
    program: the same steps, so the same final state as a one-kernel solve of few saves."""
    m = models.get("lorenz")
    big = prepare(m, (0.0, 1.0), saveat=20_000, solver=simkit.Tsit5(), rtol=1e-7, atol=1e-10)
    assert "xla_cpu_small_call" not in kernel_engine.run_kernel.lower(big.program, big.args).as_text()
    many = simkit.solve(m, (0.0, 1.0), saveat=20_000, solver=simkit.Tsit5(), rtol=1e-7, atol=1e-10)
    few = simkit.solve(m, (0.0, 1.0), saveat=5, solver=simkit.Tsit5(), rtol=1e-7, atol=1e-10)
    np.testing.assert_array_equal(np.asarray(many.y_final), np.asarray(few.y_final))
    assert int(many.stats["num_steps"]) == int(few.stats["num_steps"])


def test_vmap_and_derivatives_of_a_one_kernel_solve():
    """Batched: each member as its own solve (the plain program, batched). Differentiated: one
    parameter's forward sensitivity (the others are symbolic zeros: no direction pushed for
    them) against a central difference."""
    m = models.get("robertson")

    def final(k1):
        return simkit.solve(m, (0.0, 1.0), saveat=2, params={"k1": k1}, rtol=1e-10, atol=1e-14).ys[-1]

    ks = jnp.array([0.03, 0.04, 0.05])
    batched = jax.vmap(final)(ks)
    one_by_one = jnp.stack([final(k) for k in ks])
    np.testing.assert_allclose(np.asarray(batched), np.asarray(one_by_one), rtol=1e-12, atol=1e-20)
    _, tangent = jax.jvp(final, (0.04,), (1.0,))
    step = 1e-6
    central = (final(0.04 + step) - final(0.04 - step)) / (2 * step)
    np.testing.assert_allclose(np.asarray(tangent), np.asarray(central), rtol=1e-5, atol=1e-12)
    grad = jax.grad(lambda k: final(k)[0])(0.04)
    np.testing.assert_allclose(float(grad), float(tangent[0]), rtol=1e-10)


@pytest.mark.parametrize("solver", [simkit.Tsit5(), simkit.Rodas4()], ids=repr)
def test_a_parameter_the_rhs_ignores(solver):
    """XLA:CPU aborted the process compiling a one-kernel solve whose model has a parameter
    that its rhs never reads (found by the suite: the event tests' oscillator); such
    parameters stay outside the kernel. Against the exact solution (sin t, cos t)."""
    osc = simkit.ODEModel(rhs=lambda t, y, p: jnp.stack([y[1], -y[0]]), params={"unused": 1.0, "level": 5.0},
                          y0=[0.0, 1.0], state_names=("x", "v"), name="one_kernel_osc")
    plan = prepare(osc, (0.0, 10.0), saveat=21, solver=solver, rtol=1e-10, atol=1e-12)
    assert "xla_cpu_small_call" in kernel_engine.run_kernel.lower(plan.program, plan.args).as_text()
    sol = simkit.solve(osc, (0.0, 10.0), saveat=21, solver=solver, rtol=1e-10, atol=1e-12)
    ts = np.asarray(sol.ts)
    np.testing.assert_allclose(np.asarray(sol.ys), np.stack([np.sin(ts), np.cos(ts)], axis=1), atol=1e-7)


def test_a_whole_solution_returned_from_the_users_jit():
    """XLA:CPU aborted the process compiling a one-kernel solve whose input was also the
    program's output: a parameter passed in, returned in the `Solution` (found by the suite);
    the inputs now enter the call packed. The same states as the plain call."""
    m = models.get("lorenz")
    fn = jax.jit(lambda r: simkit.solve(m, (0.0, 1.0), params={"rho": r}, saveat=5, rtol=1e-8, atol=1e-8))
    assert "xla_cpu_small_call" in fn.lower(28.0).as_text()
    sol = fn(28.0)
    assert float(sol.params["rho"]) == 28.0
    plain = simkit.solve(m, (0.0, 1.0), params={"rho": 28.0}, saveat=5, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(np.asarray(sol.ys), np.asarray(plain.ys), rtol=1e-13, atol=1e-13)
