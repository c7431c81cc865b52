"""simkit.Rodas5P: its tableau, observed orders, accuracy against SciPy's Radau, gradients.

Programs are shared: every Robertson solve uses one saved-times layout (so the primal solves,
the tolerance sweep and the finite differences run one compiled loop), and the constant-step
order test is one jitted program for all step sizes.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate

import simkit
from simkit import models, reference
from simkit.models.oscillators import VAN_DER_POL_STIFF_REFERENCE as VDP_REFERENCE
from simkit.kernels.tableaus import RODAS4, RODAS5P, RosenbrockTableau

ROB_SAVE = 41  # the one Robertson program of this file


# -- the tableau ----------------------------------------------------------------------------

def from_ordinarydiffeq(A, C, gamma, c, d, H):
    """OrdinaryDiffEq.jl's RodasTableau (A, C, gamma, c, d, H; b = (A[s, :s-1], 1), error
    weights e_s) in simkit's fields. Its perform_step solves ``(J - I/(h gamma)) k = -(f + h d_i
    f_t + sum_j C_ij/h k_j)`` with the stage argument ``y + sum_j A_ij k_j``: Hairer's
    transformed form, the one simkit uses, so the map is the identity."""
    s = A.shape[0]
    c_full = np.zeros((s, s))
    c_full[:, : C.shape[1]] = C
    return dict(gamma=gamma, a=A, c=c_full, alpha=c, d=d, m=np.r_[A[s - 1, : s - 1], 1.0], dense=H)


def test_ordinarydiffeq_rodas4_maps_onto_hairers_rodas_exactly():
    # OrdinaryDiffEq.jl, lib/OrdinaryDiffEqRosenbrockTableaus/src/rosenbrock_tableaus.jl
    # (RODAS4A, RODAS4C, RODAS4c, RODAS4d, RODAS4H): the map used for Rodas5P's numbers
    A = np.zeros((6, 6))
    A[1, :1] = [1.544]
    A[2, :2] = [0.9466785280815826, 0.2557011698983284]
    A[3, :3] = [3.314825187068521, 2.896124015972201, 0.9986419139977817]
    A[4, :4] = [1.221224509226641, 6.019134481288629, 12.53708332932087, -0.687886036105895]
    A[5, :5] = [1.221224509226641, 6.019134481288629, 12.53708332932087, -0.687886036105895, 1]
    C = np.zeros((6, 5))
    C[1, :1] = [-5.6688]
    C[2, :2] = [-2.430093356833875, -0.2063599157091915]
    C[3, :3] = [-0.1073529058151375, -9.594562251023355, -20.47028614809616]
    C[4, :4] = [7.496443313967647, -10.24680431464352, -33.99990352819905, 11.7089089320616]
    C[5, :5] = [8.083246795921522, -7.981132988064893, -31.52159432874371, 16.31930543123136,
                -6.058818238834054]
    H = np.array([
        [10.12623508344586, -7.487995877610167, -34.80091861555747, -7.992771707568823,
         1.025137723295662, 0],
        [-0.6762803392801253, 6.087714651680015, 16.43084320892478, 24.76722511418386,
         -6.594389125716872, 0],
    ])
    mapped = from_ordinarydiffeq(A, C, 0.25, np.array([0, 0.386, 0.21, 0.63, 1, 1.0]),
                                 np.array([0.25, -0.1043, 0.1035, -0.0362, 0, 0]), H)
    for field, value in mapped.items():
        assert np.array_equal(getattr(RODAS4, field), value), field  # bit for bit
    for field in ("a", "c", "alpha", "d", "m", "dense"):
        assert getattr(RODAS5P, field).shape[-1] == 8


def _stability(tab, z):
    """R(z) of the step and of the embedded solution, in the original form."""
    s = len(tab.m)
    g = np.linalg.inv(np.eye(s) / tab.gamma - tab.c)
    beta = tab.a @ g + g
    b, b_hat = tab.m @ g, (tab.m - np.eye(s)[-1]) @ g
    out = []
    for w in (b, b_hat):
        out.append(np.array([1 + zi * w @ np.linalg.solve(np.eye(s) - zi * beta, np.ones(s)) for zi in z]))
    return out


def test_rodas5p_is_l_stable():
    for tab in (RODAS4, RODAS5P):
        for r in _stability(tab, np.array([-1e12, -1e8])):
            assert np.all(np.abs(r) < 1e-6)  # R(-inf) = 0 (stiffly accurate)
        y = np.logspace(-3, 4, 50)
        z = np.concatenate([1j * y, -y + 3j * y])  # the imaginary axis and a sector of C-
        for r in _stability(tab, z):
            assert np.all(np.abs(r) <= 1 + 1e-12)


def test_construction_checks_reject_bad_coefficients():
    fields = dict(name="bad", order=5, dense_order=4, gamma=RODAS5P.gamma, alpha=RODAS5P.alpha,
                  a=RODAS5P.a, c=RODAS5P.c, d=RODAS5P.d, m=RODAS5P.m, dense=RODAS5P.dense, source="")
    RosenbrockTableau(**fields)  # the published numbers pass
    a = RODAS5P.a.copy()
    a[3, 1] += 1e-6
    with pytest.raises(ValueError, match="rows of a do not sum to alpha"):
        RosenbrockTableau(**{**fields, "a": a})
    d = RODAS5P.d.copy()
    d[2] += 1e-6
    with pytest.raises(ValueError, match="sum to d"):
        RosenbrockTableau(**{**fields, "d": d})
    c = RODAS5P.c.copy()
    c[4, 2] += 1e-6  # moves gamma_ij: caught by the sums or an order condition
    with pytest.raises(ValueError):
        RosenbrockTableau(**{**fields, "c": c})
    dense = RODAS5P.dense.copy()
    dense[2, 3] += 1e-6
    with pytest.raises(ValueError, match="dense output is not of order 4"):
        RosenbrockTableau(**{**fields, "dense": dense})
    with pytest.raises(ValueError, match="order-6 conditions"):
        RosenbrockTableau(**{**fields, "order": 6})
    m = RODAS5P.m.copy()
    m[0] += 1e-6
    with pytest.raises(ValueError, match="stiffly accurate"):
        RosenbrockTableau(**{**fields, "m": m})


# -- observed order at constant steps -------------------------------------------------------

def forced_pendulum(t, y, p):
    """Nonlinear and non-autonomous (the f_t terms count)."""
    return jnp.stack([y[1], -jnp.sin(y[0]) - 0.2 * y[1] + jnp.cos(1.3 * t)])


Y0 = np.array([1.0, 0.0])


def exact(t):
    out = scipy.integrate.solve_ivp(lambda s, y: np.asarray(forced_pendulum(s, y, None)), (0.0, t), Y0,
                                    method="DOP853", rtol=1e-13, atol=1e-15)
    return out.y[:, -1]


def test_observed_order_of_step_estimator_and_dense_output():
    method = simkit.Rodas5P().method()

    def step(t, y, f, h):  # rtol 0, atol 1: err_norm is the rms of the estimate k_s
        y_new, err, dense, _ = method.step(forced_pendulum, t, y, f, h, None, 0.0, 1.0)
        return y_new, err, dense

    @jax.jit
    def run(h, n):
        y0 = jnp.asarray(Y0)
        f0 = forced_pendulum(0.0, y0, None)

        def body(i, c):
            t, y, f = c
            y_new = step(t, y, f, h)[0]
            return t + h, y_new, forced_pendulum(t + h, y_new, None)

        y_end = jax.lax.fori_loop(0, n, body, (jnp.asarray(0.0), y0, f0))[1]
        y1, err, dense = step(0.0, y0, f0, h)
        value = method.interpolate(forced_pendulum, None, dict(y=y0, y_new=y1, dense=dense), 0.5)
        return y_end, err, value

    T = 1.0  # measured pairwise slopes here: 5.07, 5.03, 5.01 (at T = 2 an error component
    # changes sign near h = 0.1 and the pairwise slopes wander between 4.4 and 6.3)
    y_T = exact(T)
    hs = np.array([0.2, 0.1, 0.05, 0.025])
    glob, est, dens = [], [], []
    for h in hs:
        y_end, err, value = run(h, int(round(T / h)))
        glob.append(float(jnp.max(jnp.abs(y_end - y_T))))
        est.append(float(err))
        dens.append(float(jnp.max(jnp.abs(value - exact(0.5 * h)))))
    slope = lambda e: np.polyfit(np.log(hs), np.log(e), 1)[0]  # noqa: E731
    assert abs(slope(glob) - 5) < 0.4, glob  # order 5
    assert abs(slope(est) - 5) < 0.4, est  # estimator: local error of the order-4 solution
    assert abs(slope(dens) - 5) < 0.4, dens  # dense output of order 4: local error O(h^5)


# -- adaptive solves ------------------------------------------------------------------------

def rob_solve(rtol, span=(0.0, 1e5), **kw):
    return simkit.solve(models.get("robertson"), span, saveat=ROB_SAVE, rtol=rtol, atol=1e-14,
                        solver=simkit.Rodas5P(), **kw)


def test_robertson_against_scipy_radau_and_steps_per_tolerance():
    ref = reference.solve_ivp(models.get("robertson"), (0.0, 1e5), saveat=ROB_SAVE, method="Radau",
                              rtol=1e-12, atol=1e-16)
    sol = rob_solve(1e-8)
    errors = reference.compare(sol, ref, 1e-8, 1e-14)
    assert max(errors.values()) < 5, errors
    # steps ~ rtol**(-1/5) for a 5(4) pair (Rodas4: ~ rtol**(-1/4) and more)
    rtols = np.array([1e-6, 1e-8, 1e-10])
    steps = [int(rob_solve(r).stats["num_steps"]) for r in rtols]
    rate = -np.polyfit(np.log(rtols), np.log(steps), 1)[0]
    assert 0.15 < rate < 0.24, (rate, steps)


def test_interpolant_on_a_stiff_forced_problem_against_the_exact_solution():
    # Prothero-Robinson y' = L (y - g) + g', g = 2 + sin t: the stiff component pins y to g, the
    # steps' ends are accurate and the steps grow past sin's scale; the interpolant (save times)
    # holds the tolerance once max_step bounds the steps (docs/solving.md, "Values between
    # steps"; measured 0.008 tol for Rodas5P, 2.3 for Rodas4's order-3 interpolant)
    m = simkit.ODEModel(rhs=lambda t, y, p: p["L"] * (y - (2.0 + jnp.sin(t))) + jnp.cos(t), y0=[2.0],
                        params={"L": -1e6}, state_names=("y",), name="prothero_robinson", stiff=True)
    ts = np.linspace(0.0, 20.0, 101)
    exact = 2.0 + np.sin(ts)
    tol = 1e-6

    def error(solver, max_step):
        sol = simkit.solve(m, (0.0, 20.0), saveat=ts, rtol=tol, atol=tol, solver=solver, max_step=max_step)
        end = abs(float(sol.y_final[0]) - (2.0 + np.sin(20.0))) / tol
        return float(np.max(np.abs(np.asarray(sol.ys)[:, 0] - exact) / (tol + tol * exact))), end

    assert error(simkit.Rodas5P(), 0.1)[0] < 0.1
    assert error(simkit.Rodas4(), 0.1)[0] < 10
    # without max_step: 8 steps, the end within the tolerance (the save times are not)
    assert error(simkit.Rodas5P(), np.inf)[1] < 1


def test_van_der_pol_mu_1000_at_tight_tolerance():
    m = models.get("van_der_pol_stiff")
    assert m.params["mu"] == 1000.0 and m.t_span == (0.0, 3000.0)  # unscaled, two periods
    sol = simkit.solve(m, saveat=11, rtol=1e-10, atol=1e-10, solver=simkit.Rodas5P())
    assert sol.status == simkit.Status.SUCCESS
    err = np.abs(np.asarray(sol.ys) - VDP_REFERENCE) / (1e-10 + 1e-10 * np.abs(VDP_REFERENCE))
    assert err.max() < 5, err.max(axis=0)
    # measured 4005 steps (Rodas4 at the same tolerances: 11105)
    assert int(sol.stats["num_steps"]) < 5000, int(sol.stats["num_steps"])


def test_gradient_through_the_custom_jvp_matches_finite_differences():
    def product(k1):
        return rob_solve(1e-10, span=(0.0, 100.0), params={"k1": k1}).ys[-1, 2]

    g = float(jax.grad(product)(0.04))
    fd = (float(product(0.04 + 1e-6)) - float(product(0.04 - 1e-6))) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_default_at_tight_tolerance_keeps_species_near_1e_22():
    """E5 (species near 1e-22 at t = 1e13) at rtol 1e-11, atol 1.11e-24 with the default
    kernel: RadauIIA5 below rtol 1e-8 (`simkit.kernels.solvers.default_stiff_kernel`), y2 and
    y3 within 1 % of the published value. Rodas5P, the default at every rtol before, ended
    25 % off there (benchmarks/stiff_step_counts.py: 25-170 % at rtol 1e-4 ... 1e-12)."""
    from simkit.models.chemistry import E5_REFERENCE_T1E13, e5

    sol = simkit.solve(e5(), (0.0, 1e13), saveat=1, rtol=1e-11, atol=1.11e-24)
    assert sol.solver_name == "simkit.RadauIIA5()"
    ref = np.asarray(E5_REFERENCE_T1E13)
    rel = np.abs(np.asarray(sol.ys[-1])[1:3] - ref[1:3]) / ref[1:3]
    assert rel.max() < 1e-2, rel
    # at rtol 1e-8 and above, and with a traced rtol (None), the default stays Rodas5P
    from simkit.kernels.solvers import default_stiff_kernel

    assert [default_stiff_kernel(r) for r in (1e-8, 1e-6, None)] == [simkit.Rodas5P()] * 3
