"""simkit.RadauIIA5: its coefficients, observed orders, agreement with SciPy's Radau (values
and step counts: the same algorithm), published test-set references, dense output,
gradients, ensembles and events; the complex system in real arithmetic (a TPU's float64 form)
against the complex form, and the float64 program lowered for a TPU.

Programs are shared: the Robertson solves use one saved-times layout.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate

import simkit
from simkit import models, reference
from simkit.kernels.radau import RADAU_IIA5, RadauIIA5Method, pair_lu, pair_solve
from simkit.models.chemistry import HIRES_REFERENCE_T321
from simkit.models.oscillators import VAN_DER_POL_STIFF_REFERENCE

from robertson_numpy import robertson_numpy

ROB_SAVE = 21
RADAU = simkit.RadauIIA5()


def test_coefficients_are_radau_iia():
    a, c = RADAU_IIA5["a"], RADAU_IIA5["c"]
    # Hairer & Wanner, Table IV.5.6 (exact values)
    s6 = np.sqrt(6.0)
    expected = np.array([
        [(88 - 7 * s6) / 360, (296 - 169 * s6) / 1800, (-2 + 3 * s6) / 225],
        [(296 + 169 * s6) / 1800, (88 + 7 * s6) / 360, (-2 - 3 * s6) / 225],
        [(16 - s6) / 36, (16 + s6) / 36, 1 / 9],
    ])
    np.testing.assert_allclose(a, expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(c, [(4 - s6) / 10, (4 + s6) / 10, 1.0], rtol=0, atol=1e-16)
    # the transformation: T^-1 A^-1 T = diag(mu_real, [[alpha, -beta], [beta, alpha]])
    t, ti = RADAU_IIA5["t"], RADAU_IIA5["ti"]
    mu_c = RADAU_IIA5["mu_complex"]
    blocks = np.array([[RADAU_IIA5["mu_real"], 0, 0], [0, mu_c.real, -mu_c.imag], [0, mu_c.imag, mu_c.real]])
    np.testing.assert_allclose(ti @ np.linalg.inv(a) @ t, blocks, atol=1e-12)
    # stability function R(z) = 1 + z b^T (I - zA)^-1 1: A-stable, R(-inf) = 0 (L-stable)
    b = a[-1]

    def stab(z):
        return 1 + z * b @ np.linalg.solve(np.eye(3) - z * a, np.ones(3))

    y = np.logspace(-3, 5, 60)
    assert max(abs(stab(1j * v)) for v in y) <= 1 + 1e-12
    assert abs(stab(-1e12)) < 1e-10


def forced_pendulum(t, y, p):
    return jnp.stack([y[1], -jnp.sin(y[0]) - 0.2 * y[1] + jnp.cos(1.3 * t)])


Y0 = np.array([1.0, 0.0])


def exact(t):
    out = scipy.integrate.solve_ivp(lambda s, y: np.asarray(forced_pendulum(s, y, None)), (0.0, t), Y0,
                                    method="DOP853", rtol=1e-13, atol=1e-15)
    return out.y[:, -1]


def test_observed_order_of_step_and_dense_output():
    """Constant steps with a fresh Jacobian each step and Newton converged tightly: global
    order 5; the collocation polynomial at theta = 0.5 is of order 3 (local error O(h^4))."""
    method = RADAU.method()

    def attempt(t, y, h):
        ctrl = method.controller_init(y)
        f = forced_pendulum(t, y, None)
        y_new, err, dense, _, work = method.attempt(forced_pendulum, t, y, f, h, None, 1e-13, 1e-13, ctrl)
        return y_new, dense, work["converged"]

    @jax.jit
    def run(h, n):
        y0 = jnp.asarray(Y0)

        def body(i, c):
            t, y, ok = c
            y_new, _, conv = attempt(t, y, h)
            return t + h, y_new, ok & conv

        _, y_end, ok = jax.lax.fori_loop(0, n, body, (jnp.asarray(0.0), y0, jnp.asarray(True)))
        _, dense, _ = attempt(0.0, y0, h)
        return y_end, ok, method.interpolate(None, None, dict(y=y0, dense=dense), 0.5)

    T = 1.0
    y_T = exact(T)
    hs = np.array([0.2, 0.1, 0.05])
    glob, dens = [], []
    for h in hs:
        y_end, ok, value = run(h, int(round(T / h)))
        assert bool(ok)
        glob.append(float(jnp.max(jnp.abs(y_end - y_T))))
        dens.append(float(jnp.max(jnp.abs(value - exact(0.5 * h)))))
    slope = lambda e: np.polyfit(np.log(hs), np.log(e), 1)[0]  # noqa: E731
    assert abs(slope(glob) - 5) < 0.4, glob
    assert abs(slope(dens) - 4) < 0.4, dens


def rob_solve(rtol, span=(0.0, 1e5), **kw):
    return simkit.solve(models.get("robertson"), span, saveat=ROB_SAVE, rtol=rtol,
                        atol=kw.pop("atol", 1e-14), solver=RADAU, **kw)


def test_robertson_matches_scipy_radau_in_values_and_steps():
    """The same algorithm as SciPy's Radau (tolerances used as given, the same Newton
    tolerance, Jacobian reuse and Gustafsson controller): step counts agree to a few percent
    (measured: 66/65, 188/186, 573/564, 1776/1751 for rtol 1e-4..1e-10, atol rtol*1e-4)."""
    ref = reference.solve_ivp(models.get("robertson"), (0.0, 1e5), saveat=ROB_SAVE, method="Radau",
                              rtol=1e-12, atol=1e-18)
    for rtol in (1e-6, 1e-9):
        sol = rob_solve(rtol, atol=rtol * 1e-4)
        assert sol.status == simkit.Status.SUCCESS
        errors = reference.compare(sol, ref, rtol, rtol * 1e-4)
        assert max(errors.values()) < 3, errors
        sp = scipy.integrate.solve_ivp(robertson_numpy, (0.0, 1e5), [1.0, 0.0, 0.0], method="Radau", rtol=rtol,
                                       atol=rtol * 1e-4)
        ours, theirs = int(sol.stats["num_accepted_steps"]), len(sp.t) - 1
        assert abs(ours - theirs) <= 0.05 * theirs, (ours, theirs)


def test_hires_reaches_the_published_reference():
    sol = simkit.solve(models.get("hires"), saveat=1, rtol=1e-10, atol=1e-14, solver=RADAU)
    assert sol.status == simkit.Status.SUCCESS
    rel = np.abs(np.asarray(sol.ys[-1]) - HIRES_REFERENCE_T321) / np.asarray(HIRES_REFERENCE_T321)
    assert rel.max() < 1e-8, rel


def test_van_der_pol_mu_1000_at_tight_tolerance():
    m = models.get("van_der_pol_stiff")
    sol = simkit.solve(m, saveat=11, rtol=1e-10, atol=1e-10, solver=RADAU)
    assert sol.status == simkit.Status.SUCCESS
    ref = np.asarray(VAN_DER_POL_STIFF_REFERENCE)
    err = np.abs(np.asarray(sol.ys) - ref) / (1e-10 + 1e-10 * np.abs(ref))
    assert err.max() < 5, err.max(axis=0)


def test_dense_output_is_the_saved_interpolant():
    sol = rob_solve(1e-8, span=(0.0, 40.0), dense=True)
    ts = np.asarray(sol.ts)
    dense = jnp.stack([sol.evaluate(t) for t in ts[1:-1]])
    np.testing.assert_array_equal(np.asarray(dense), np.asarray(sol.ys[1:-1]))  # bit-identical


def test_gradient_matches_finite_differences():
    def product(k1):
        return rob_solve(1e-10, span=(0.0, 100.0), params={"k1": k1}).ys[-1, 2]

    g = float(jax.grad(product)(0.04))
    fd = (float(product(0.04 + 1e-6)) - float(product(0.04 - 1e-6))) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_ensemble_members_equal_single_solves():
    m = models.get("robertson")
    k1 = np.array([0.02, 0.04, 0.08])
    ens = simkit.ensemble(m, (0.0, 1e5), params={"k1": k1}, saveat=ROB_SAVE, rtol=1e-6, atol=1e-10,
                          solver=RADAU)
    for i, k in enumerate(k1):
        one = rob_solve(1e-6, params={"k1": float(k)}, atol=1e-10)
        np.testing.assert_allclose(np.asarray(ens.ys[i]), np.asarray(one.ys), rtol=1e-12, atol=1e-20)


def test_terminal_event_is_located_on_the_collocation_polynomial():
    ev = simkit.Event(lambda t, y, p: y[2] - 0.5, terminal=True)
    sol = rob_solve(1e-9, events=ev)
    assert sol.status == simkit.Status.EVENT
    np.testing.assert_allclose(float(sol.y_final[2]), 0.5, rtol=1e-12)
    event = lambda t, y: y[2] - 0.5  # noqa: E731
    event.terminal = True
    sp = scipy.integrate.solve_ivp(robertson_numpy, (0.0, 1e5), [1.0, 0.0, 0.0], method="Radau", rtol=1e-12,
                                   atol=1e-18, events=event)
    np.testing.assert_allclose(float(sol.t_final), sp.t_events[0][0], rtol=1e-7)


def test_refuses_complex_states():
    with pytest.raises(simkit.InputTypeError, match="complex"):
        simkit.solve(models.get("van_der_pol"), (0.0, 1.0), y0=jnp.array([1.0 + 0j, 0.0]), solver=RADAU)


def test_num_rhs_counts_every_evaluation():
    """Counted by host callbacks (a Jacobian by jax.jacfwd is n evaluations, as the stats
    count it): RadauIIA5 left out the rhs at each attempt's end, which the loop evaluates."""
    import jax
    import jax.numpy as jnp

    count = {"f": 0, "jac": 0}

    @jax.custom_jvp
    def ident(y):
        return y

    @ident.defjvp
    def _ident_jvp(primals, tangents):  # once per (batched) jacfwd Jacobian
        jax.debug.callback(lambda: count.__setitem__("jac", count["jac"] + 1))
        return primals[0], tangents[0]

    def rhs(t, y, p):
        jax.debug.callback(lambda: count.__setitem__("f", count["f"] + 1))
        y = ident(y)
        return jnp.stack([y[1], p["mu"] * (1 - y[0] ** 2) * y[1] - y[0], -p["k"] * y[2]])

    m = simkit.ODEModel(rhs=rhs, params={"mu": 50.0, "k": 1e3}, y0=[2.0, 0.0, 1.0], state_names=("x", "v", "z"))
    sol = simkit.solve(m, (0.0, 2.0), saveat=2, solver=simkit.RadauIIA5(), rtol=1e-6, atol=1e-8)
    jax.effects_barrier()
    assert int(sol.stats["num_rhs"]) == count["f"] - count["jac"] + 3 * count["jac"], (sol.stats, count)


def robertson_rounded_apart(t, y, p):
    """Robertson's rates form with ``k3 y2 y3`` grouped differently in f1 and f2, as XLA's
    fused multiply-adds may group it: ``f1 + f2 + f3`` is then rounding of the rates' size
    (about eps |r3|), not of f2's. The same function to rounding."""
    r1 = p["k1"] * y[0]
    r2 = p["k2"] * y[1] * y[1]
    return jnp.stack([-r1 + (p["k3"] * y[1]) * y[2], r1 - (p["k3"] * y[2]) * y[1] - r2, r2])


def _robertson_numpy(t, y):
    """The library's Robertson (`simkit.models.chemistry.robertson_rhs`) with NumPy."""
    r1, r2, r3 = 0.04 * y[0], 3.0e7 * y[1] * y[1], 1.0e4 * y[1] * y[2]
    f1, f3 = -r1 + r3, r2
    return np.array([f1, -(f1 + f3), f3])


def test_rates_rounded_apart_at_tight_tolerance_takes_scipys_steps():
    """Robertson to 1e11, rtol 1e-8 / atol 1e-16, its rates rounded apart in the conserved
    direction (`robertson_rounded_apart`): Newton's corrections stall at that rounding, and a
    stall far below the error test's unit is convergence (`radau.NEWTON_NOISE_NORM`). Within
    1.3x of SciPy's Radau's accepted steps on the same problem written without that rounding
    (measured 1,914 attempts against 1,733; before, 6,514 attempts, 3,189 rejected; SciPy's
    Radau on the rounded-apart form: 3,119), and the published value to 1e-7."""
    from simkit.models.chemistry import ROBERTSON_REFERENCE_T1E11

    m = models.get("robertson").replace(rhs=robertson_rounded_apart)
    sol = simkit.solve(m, (0.0, 1e11), saveat=1, rtol=1e-8, atol=1e-16, solver=RADAU)
    ref = scipy.integrate.solve_ivp(_robertson_numpy, (0.0, 1e11), [1.0, 0.0, 0.0], method="Radau",
                                    rtol=1e-8, atol=1e-16)
    assert sol.status == simkit.Status.SUCCESS and ref.status == 0
    attempts, scipy_steps = int(sol.stats["num_steps"]), ref.t.size - 1
    assert attempts < 1.3 * scipy_steps, (attempts, scipy_steps)
    published = np.asarray(ROBERTSON_REFERENCE_T1E11)
    err = np.abs(np.asarray(sol.ys[-1]) - published) / np.maximum(published, 1e-14)
    assert err.max() < 1e-7, err


class _RadauInRealArithmetic(simkit.RadauIIA5):
    """RadauIIA5 with the complex system solved in real arithmetic on the CPU too (the form
    a float64 program for a TPU takes)."""

    def method(self):
        return RadauIIA5Method(real_arithmetic_platforms=("cpu", "tpu"))


def test_complex_lu_in_real_arithmetic_solves_complex_systems():
    rng = np.random.default_rng(0)
    solve = jax.jit(lambda ar, ai, br, bi: pair_solve(*pair_lu(ar, ai), br, bi))
    for n in (3, 9):
        a = rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))
        a[0, 0] = 1e-12  # the first pivot is a row swap
        b = rng.normal(size=n) + 1j * rng.normal(size=n)
        x_re, x_im = solve(a.real, a.imag, b.real, b.imag)
        expected = np.linalg.solve(a, b)
        np.testing.assert_allclose(np.asarray(x_re) + 1j * np.asarray(x_im), expected, rtol=0,
                                   atol=1e-13 * np.abs(expected).max())


def test_complex_system_in_real_arithmetic_takes_the_same_steps():
    """Robertson at rtol 1e-6: the same accepted and rejected steps as the complex form
    (measured: 191 attempts each; HIRES 202 each) and the same values to 1e-6 of the
    tolerance (measured 8e-10), so within 5 % of SciPy's Radau steps as well."""
    rtol, atol = 1e-6, 1e-10
    complex_form = rob_solve(rtol, atol=atol)
    real_form = simkit.solve(models.get("robertson"), (0.0, 1e5), saveat=ROB_SAVE, rtol=rtol, atol=atol,
                             solver=_RadauInRealArithmetic())
    assert real_form.status == simkit.Status.SUCCESS
    steps = [(int(s.stats["num_accepted_steps"]), int(s.stats["num_rejected_steps"]))
             for s in (complex_form, real_form)]
    assert abs(steps[0][0] - steps[1][0]) <= 2 and abs(steps[0][1] - steps[1][1]) <= 2, steps
    ys = np.asarray(complex_form.ys)
    units = np.abs(np.asarray(real_form.ys) - ys) / (atol + rtol * np.abs(ys))
    assert units.max() < 1e-6, units.max()
    sp = scipy.integrate.solve_ivp(robertson_numpy, (0.0, 1e5), [1.0, 0.0, 0.0], method="Radau", rtol=rtol,
                                   atol=atol)
    assert abs(steps[1][0] - (len(sp.t) - 1)) <= 0.05 * (len(sp.t) - 1), (steps, len(sp.t) - 1)


@pytest.mark.parametrize("n", [3, 9], ids=["straight-line LU", "LAPACK-size LU"])
def test_float64_program_for_a_tpu_holds_no_complex_numbers(n):
    """XLA's TPU backend has no complex128: the float64 program lowered for a TPU (on this
    CPU, no TPU needed) solves the complex system in real arithmetic, with no complex type
    and no custom call (LAPACK) in it; the CPU program keeps the complex LU."""
    from simkit import engines
    from simkit._prepare import prepare

    model = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y + jnp.roll(y, 1) * y[0], params={"k": 2.0},
                            y0=np.linspace(1.0, 2.0, n), state_names=tuple(f"y{i}" for i in range(n)))
    plan = prepare(model, (0.0, 1.0), saveat=2, solver=RADAU, rtol=1e-6, atol=1e-10)
    assert plan.args.y0.dtype == jnp.float64
    engine, args = engines.entry(plan.program, plan.args)
    traced = engine.pick(*args).trace(*args)
    tpu = traced.lower(lowering_platforms=("tpu",)).as_text()
    assert "complex" not in tpu and "custom_call" not in tpu
    assert "complex<f64>" in traced.lower(lowering_platforms=("cpu",)).as_text()
