"""simkit.AutoSwitch: stiffness detection (Hairer's h*rho test) and switching between Tsit5
and Rodas5P. On a non-stiff problem it is Tsit5 step for step; on stiff ones it switches (and
back, on van der Pol's fast transitions) and meets the references; dense output across a
switch, gradients, ensembles and the `stiff=None` model hint.

The van der Pol solves share one program (11 save times, rtol/atol change only numbers).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from model_references import stored_reference  # tests/model_references.py

import simkit
from simkit import models, reference
from simkit.errors import InputTypeError
from simkit.kernels.switching import real_stability_boundary
from simkit.kernels.tableaus import DOPRI5, TSIT5
from simkit.models.chemistry import ROBERTSON_REFERENCE_T1E11
from simkit.models.oscillators import VAN_DER_POL_STIFF_REFERENCE
from simkit.validation.cases import reference_solution

AUTO = simkit.AutoSwitch()
VDP = models.get("van_der_pol_stiff")


def _stats(sol):
    return {k: int(v) for k, v in sol.stats.items()}


def test_stability_boundaries():
    # the real-axis stability intervals: DOPRI5's 3.3066 (Hairer & Wanner I, Fig. II.4.2,
    # where DOPRI5's stiffness test uses 3.25); Tsit5's 3.5068
    assert real_stability_boundary(np.asarray(DOPRI5.a, float), np.asarray(DOPRI5.b, float)) == pytest.approx(
        3.3066, abs=1e-4)
    assert real_stability_boundary(np.asarray(TSIT5.a, float), np.asarray(TSIT5.b, float)) == pytest.approx(
        3.5068, abs=1e-4)


def test_stability_boundary_is_the_scans_and_computed_once():
    """The batched scan finds the boundary a point-by-point scan finds, to the bit, and each
    method's is computed once (an `AutoSwitch` ensemble built its method, and this scan,
    at every call: 54 ms)."""
    from simkit.kernels.switching import _stability_boundary

    a, b = np.asarray(TSIT5.a, float), np.asarray(TSIT5.b, float)
    n, one = len(b), np.ones(len(b))

    def growth(z):
        return abs(1.0 + z * b @ np.linalg.solve(np.eye(n) - z * a, one))

    xs = np.linspace(1e-3, 10.0, 20001)
    bad = next(x for x in xs if growth(-x) > 1.0 + 1e-12)
    lo, hi = bad - (xs[1] - xs[0]), bad
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if growth(-mid) <= 1.0 + 1e-12 else (lo, mid)
    assert real_stability_boundary(a, b) == lo
    simkit.AutoSwitch().method()
    misses = _stability_boundary.cache_info().misses
    simkit.AutoSwitch().method()
    assert _stability_boundary.cache_info().misses == misses


@pytest.mark.parametrize("tol", [1e-8, 1e-12])
def test_non_stiff_problem_is_tsit5_step_for_step(tol):
    # at 1e-12 too: the stiffness-ratio test (h rho / rtol**(1/5) above 80) stays silent
    lorenz = models.get("lorenz")
    auto = simkit.solve(lorenz, (0.0, 10.0), saveat=11, rtol=tol, atol=tol, solver=AUTO)
    tsit5 = simkit.solve(lorenz, (0.0, 10.0), saveat=11, rtol=tol, atol=tol, solver=simkit.Tsit5())
    stats = _stats(auto)
    assert stats.pop("num_switches") == 0 and stats.pop("num_stiff_steps") == 0
    plain = _stats(tsit5)
    # one jvp of the rhs per attempt (the power iteration of the stiffness estimate)
    assert stats.pop("num_rhs") == plain.pop("num_rhs") + plain["num_steps"]
    assert stats == plain
    np.testing.assert_allclose(auto.ys, tsit5.ys, rtol=1e-13, atol=1e-13)


def test_van_der_pol_switches_both_ways_and_meets_the_reference():
    sol = simkit.solve(VDP, saveat=11, rtol=1e-8, atol=1e-8, solver=AUTO)
    stats = _stats(sol)
    # stiff on the slow branches, explicit through the fast transitions: several switches
    assert stats["num_switches"] >= 3 and 0 < stats["num_stiff_steps"] < stats["num_accepted_steps"]
    ref = np.asarray(VAN_DER_POL_STIFF_REFERENCE)
    err = np.abs(np.asarray(sol.ys) - ref) / (1e-8 + 1e-8 * np.abs(ref))
    assert err.max() < 50, err.max(axis=0)  # global error within a few tens of tolerances
    # far fewer steps than the explicit method alone, which is stability-bound on the slow branches
    tsit5 = simkit.solve(VDP, saveat=11, rtol=1e-8, atol=1e-8, solver=simkit.Tsit5(), max_steps=20_000,
                         throw=False)
    assert tsit5.status == simkit.Status.MAX_STEPS


def test_dense_output_across_switches_matches_scipy():
    ts = np.linspace(0.0, 3000.0, 301)  # save times inside stiff and non-stiff stretches
    sol = simkit.solve(VDP, saveat=ts, rtol=1e-9, atol=1e-9, solver=AUTO)
    # SciPy at rtol 1e-11: its error is a hundredth of the bound below
    ref = reference.solve_ivp(VDP, saveat=ts, method="Radau", rtol=1e-11, atol=1e-11)
    x, x_ref = np.asarray(sol.ys[:, 0]), np.asarray(ref.ys[:, 0])
    # away from the fast transitions (where a time error of the spike is amplified), the
    # interpolated states are accurate to the tolerance's order
    slow = np.abs(np.asarray(ref.ys[:, 1])) < 0.01
    assert slow.sum() > 250
    assert np.max(np.abs(x - x_ref)[slow]) < 1e-5


@pytest.mark.parametrize("name, t1, rtol, atol", [("robertson", 1e5, 1e-10, 1e-14), ("oregonator", None, 1e-10, 1e-10)])
def test_tight_tolerances_switch_where_the_stage_test_is_blind(name, t1, rtol, atol):
    # at rtol 1e-10 the solution is so smooth that the stiff mode never shows in the stage
    # differences (h rho read 0.05 against a true 3.35): without the power iteration on J the
    # Oregonator ran out of max_steps explicit and Robertson took 40,000 steps
    model = models.get(name)
    t_span = None if t1 is None else (0.0, t1)
    sol = simkit.solve(model, t_span, saveat=5, rtol=rtol, atol=atol, solver=AUTO, max_steps=30_000)
    stats = _stats(sol)
    assert stats["num_switches"] >= 1 and stats["num_steps"] < 15_000, stats
    # SciPy Radau at rtol 1e-12 and atol a thousandth of the model case's (its error is a
    # hundredth of the tolerance tested), on the model case's span at 41 times, of which every
    # 10th is one of these 5: stored (tests/model_references.py; the Oregonator's took 11 s)
    ref = stored_reference(name) or reference_solution(name)
    np.testing.assert_allclose(ref.ts[::10], np.asarray(sol.ts), rtol=1e-15)
    y, y_ref = np.asarray(sol.ys), np.asarray(ref.ys[::10])
    err = np.abs(y - y_ref) / (atol + rtol * np.abs(y_ref))
    assert err.max() < 20, err.max(axis=0)  # measured 1.5 (Robertson), 0.98 (Oregonator)


def test_tightest_tolerances_switch_though_the_steps_are_stable():
    """At rtol 1e-12 Tsit5's steps on Robertson are limited by accuracy, not stability (h rho
    at 0.3 of the stability boundary), so Hairer's test never fired and AutoSwitch ran out of
    100,000 explicit steps at t = 63. Such a step is long against the stiff mode (h rho /
    rtol**(1/5) about 270): the stiffness-ratio test switches, and the solve takes Rodas5P's
    steps (10,417 here) to the published reference."""
    rob = models.get("robertson")
    sol = simkit.solve(rob, (0.0, 1e11), saveat=2, rtol=1e-12, atol=1e-25, solver=AUTO)
    stats = _stats(sol)
    assert stats["num_steps"] < 12_000 and stats["num_stiff_steps"] > 0.9 * stats["num_accepted_steps"], stats
    ref = np.asarray(ROBERTSON_REFERENCE_T1E11)
    err = np.max(np.abs(np.asarray(sol.ys[-1]) - ref) / np.abs(ref))
    assert err < 1e-11, err  # measured 4.0e-13


@pytest.mark.parametrize("h, trial, back", [(2.0, True, True), (4.0, True, False), (2.0, False, False)])
def test_a_trial_switch_that_does_not_pay_goes_back_and_rests(h, trial, back):
    """After TRIAL_STEPS stiff steps, a switch made by the stiffness ratio alone (a trial)
    must be taking steps cost_ratio (3 for 3 states) times the explicit step before it, or
    the loop switches back and the ratio test rests; a switch by Hairer's test stays."""
    from simkit.kernels.switching import TRIAL_STEPS, TRIAL_WAIT

    method = AUTO.method()
    y0 = jnp.ones(3)
    ctrl = method.controller_init(y0) | dict(stiff=jnp.asarray(True), hits=jnp.asarray(int(trial), jnp.int32),
                                            run=jnp.asarray(TRIAL_STEPS - 1, jnp.int32),
                                            h_switch=jnp.asarray(1.0), switches=jnp.asarray(1, jnp.int32))
    work = dict(hrho=jnp.asarray(100.0), limit=jnp.asarray(0.5 * method.boundary), v=ctrl["v"])
    assert method.cost_ratio(3) == 3.0
    _, new = method.propose(jnp.asarray(0.5), jnp.asarray(h), ctrl, jnp.asarray(True), jnp.asarray(False), work,
                            phase=1)
    assert bool(new["stiff"]) is (not back)
    assert int(new["wait"]) == (TRIAL_WAIT if back else 0)


def test_robertson_switches_once_and_matches_scipy():
    rob = models.get("robertson")
    ts = np.geomspace(1e-5, 1e5, 21)
    sol = simkit.solve(rob, saveat=ts, rtol=1e-8, atol=1e-12, solver=AUTO)
    ref = reference.solve_ivp(rob, saveat=ts, method="Radau", rtol=1e-12, atol=1e-16)
    assert _stats(sol)["num_switches"] >= 1 and _stats(sol)["num_stiff_steps"] > 0
    scale = np.array([1.0, 1e-5, 1.0])  # y2 peaks near 3.6e-5
    assert np.max(np.abs(np.asarray(sol.ys) - np.asarray(ref.ys)) / scale) < 1e-6


def test_gradient_matches_finite_differences():
    def final_x(mu):
        return simkit.solve(VDP, (0.0, 300.0), saveat=2, params={"mu": mu}, rtol=1e-10, atol=1e-10,
                            solver=AUTO).ys[-1, 0]

    g = jax.grad(final_x)(1000.0)
    h = 1e-3
    fd = (final_x(1000.0 + h) - final_x(1000.0 - h)) / (2 * h)
    assert np.isfinite(g) and float(g) == pytest.approx(float(fd), rel=1e-4, abs=1e-8)


def test_ensemble_members_equal_single_solves():
    mus = jnp.asarray([10.0, 300.0, 1000.0])
    ens = simkit.ensemble(VDP, (0.0, 300.0), params={"mu": mus}, saveat=5, rtol=1e-6, atol=1e-6,
                          solver=AUTO)
    for i, mu in enumerate(mus):
        one = simkit.solve(VDP, (0.0, 300.0), params={"mu": mu}, saveat=5, rtol=1e-6, atol=1e-6, solver=AUTO)
        np.testing.assert_allclose(ens.ys[i], one.ys, rtol=1e-12, atol=1e-12)


def test_unknown_stiffness_hint_chooses_autoswitch():
    model = simkit.ODEModel(rhs=VDP.rhs, params=VDP.params, y0=VDP.y0, state_names=VDP.state_names,
                            name="vdp unknown", stiff=None)
    sol = simkit.solve(model, (0.0, 300.0), saveat=5, rtol=1e-6, atol=1e-6)
    assert sol.solver_name == "simkit.AutoSwitch()" and int(sol.stats["num_stiff_steps"]) > 0
    with pytest.raises(InputTypeError, match="stiff must be True, False or None"):
        model.replace(stiff="maybe")
