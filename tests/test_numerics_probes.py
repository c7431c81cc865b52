"""Numerical edge cases of `simkit.solve` on small systems, found by probing (float64).

Each test pins a defect that an outside user met: a wrong status, a solve that never
returned, or a failure message with the wrong advice.
"""

import jax.numpy as jnp
import pytest

import simkit
from simkit import Status

DECAY = simkit.ODEModel(rhs=lambda t, y, p: -y, y0=jnp.array([1.0]), params={}, state_names=("y",))
# NaN for t > 2: from t0 = 3 the rhs is NaN at the first evaluation
NAN_LATE = simkit.ODEModel(rhs=lambda t, y, p: jnp.where(t > 2.0, jnp.nan, -y), y0=jnp.array([1.0]), params={},
                           state_names=("y",))


@pytest.mark.parametrize("solver", [simkit.Rodas5P(), simkit.RadauIIA5()], ids=["Rodas5P", "RadauIIA5"])
def test_step_below_the_spacing_of_t_is_a_step_size_underflow(solver):
    # at t0 = 1e15 times are 0.125 apart; rtol 1e-10 wants steps of ~1e-2, which cannot move
    # t (SciPy: "step size is less than spacing between numbers"). Rodas5P reported "the
    # state became non-finite" (its 1 / h of a zero step), RadauIIA5 "Newton failed".
    sol = simkit.solve(DECAY, (1e15, 1e15 + 1.0), saveat=2, solver=solver, rtol=1e-10, atol=1e-14, throw=False)
    assert int(sol.status) == Status.STEP_SIZE_UNDERFLOW
    # the message tells the span's ends apart (it printed "t_span [1e+15, 1e+15]")
    with pytest.raises(simkit.SolveError, match=r"t_span \[1000000000000000\.0, 1000000000000001\.0\]"):
        simkit.solve(DECAY, (1e15, 1e15 + 1.0), saveat=2, solver=solver, rtol=1e-10, atol=1e-14)


def test_bdf_with_an_rhs_nan_at_t0_returns():
    # a NaN rhs at t0 made BDF's first step size NaN; its Newton retry loop compared the
    # factors' c with a NaN c, found them stale forever and never returned (max_steps=5
    # too). Now the solve ends at once with a failure status, at t0.
    sol = simkit.solve(NAN_LATE, (3.0, 5.0), saveat=2, solver=simkit.BDF(), max_steps=5, throw=False)
    assert int(sol.status) in (Status.NONLINEAR_FAILURE, Status.NONFINITE)
    assert float(sol.t_final) == 3.0
    assert int(sol.stats["num_steps"]) <= 5


def test_max_steps_under_a_small_max_step_does_not_blame_stiffness():
    # steps capped at max_step = 1e-7 over a span of 1 exhaust max_steps: the message said
    # "the step size collapsed, as for a stiff problem: try Rodas5P", which cannot help
    with pytest.raises(simkit.SolveError, match=r"capped by max_step = 1e-07") as info:
        simkit.solve(DECAY, (0.0, 1.0), saveat=2, max_step=1e-7, max_steps=20)
    assert "stiff" not in str(info.value)


def test_a_saved_value_that_overflows_between_finite_steps_is_not_a_success():
    """DOP853 from a state of 1e306 (float64; 1e37 in float32, as found by probing): every
    step's end is finite, but its dense output's sums overflow, and the saves were NaN with
    status success. Now `Status.NONFINITE`, in a solve and an ensemble, and the message says
    what overflowed; Tsit5's interpolant holds there."""
    import numpy as np

    big = simkit.ODEModel(rhs=lambda t, y, p: -p["a"] * y, y0=[1e306, 1.0], params={"a": 1.0}, state_names=("u", "v"))
    ts = np.linspace(0.0, 1.0, 5)
    sol = simkit.solve(big, (0.0, 1.0), saveat=ts, rtol=1e-5, atol=1e-10, solver=simkit.DOP853(), throw=False)
    assert np.all(np.isfinite(np.asarray(sol.y_final)))
    assert int(sol.status) == Status.NONFINITE and not np.all(np.isfinite(np.asarray(sol.ys)))
    with pytest.raises(simkit.SolveError, match="saved value between steps"):
        simkit.solve(big, (0.0, 1.0), saveat=ts, rtol=1e-5, atol=1e-10, solver=simkit.DOP853())
    ens = simkit.ensemble(big, (0.0, 1.0), params={"a": np.array([1.0, 1.0])}, saveat=ts, rtol=1e-5, atol=1e-10,
                          solver=simkit.DOP853())
    assert np.all(np.asarray(ens.status) == Status.NONFINITE)
    ok = simkit.solve(big, (0.0, 1.0), saveat=ts, rtol=1e-5, atol=1e-10, solver=simkit.Tsit5())
    np.testing.assert_allclose(np.asarray(ok.ys)[:, 0], 1e306 * np.exp(-ts), rtol=1e-4)
