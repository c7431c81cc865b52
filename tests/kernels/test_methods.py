"""The kernels' methods: tableaus, observed order of the step and of the dense output."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate

import simkit

A = np.array([[-0.1, 1.0], [-1.0, -0.1]])
Y0 = np.array([1.0, 0.0])


def forced_rhs(t, y, p):
    return jnp.asarray(A) @ y + jnp.stack([jnp.sin(t), 0.0 * t])  # non-autonomous


def exact(t):
    out = scipy.integrate.solve_ivp(lambda s, y: A @ y + np.array([np.sin(s), 0.0]), (0.0, t), Y0,
                                    method="DOP853", rtol=1e-13, atol=1e-15)
    return out.y[:, -1]


# kernel, its order, step sizes for the global-error fit, the dense output's order
KERNELS = [
    (simkit.Tsit5(), 5, [0.2, 0.1, 0.05, 0.025], 4, [0.4, 0.2, 0.1, 0.05]),
    (simkit.DOPRI5(), 5, [0.2, 0.1, 0.05, 0.025], 4, [0.4, 0.2, 0.1, 0.05]),
    (simkit.DOP853(), 8, [0.5, 0.4, 0.25, 0.2], 7, [1.0, 0.8, 0.6, 0.4]),
    (simkit.Rodas4(), 4, [0.2, 0.1, 0.05, 0.025], 3, [0.4, 0.2, 0.1, 0.05]),
]


def _step(method, t, y, f, h):
    y_new, _, dense, f_new = method.step(forced_rhs, t, y, f, h, None, 1e-6, 1e-6)
    if f_new is None:
        f_new = forced_rhs(t + h, y_new, None)
    return y_new, dense, f_new


@pytest.mark.parametrize("kernel, order, hs, dense_order, dense_hs", KERNELS)
def test_observed_order_of_step_and_dense_output(kernel, order, hs, dense_order, dense_hs):
    method = kernel.method()
    T = 2.0
    y_T = exact(T)
    errors = []
    for h in hs:
        def body(i, c):
            t, y, f = c
            y_new, _, f_new = _step(method, t, y, f, h)
            return t + h, y_new, f_new

        y0 = jnp.asarray(Y0)
        _, y, _ = jax.lax.fori_loop(0, int(round(T / h)), body, (0.0, y0, forced_rhs(0.0, y0, None)))
        errors.append(float(jnp.max(jnp.abs(y - y_T))))
    slope = np.polyfit(np.log(hs), np.log(errors), 1)[0]
    assert abs(slope - order) < 0.4, (slope, errors)
    # dense output after one step of size h, at theta = 0.37: local error O(h^(q+1))
    dense_errors = []
    for h in dense_hs:
        y0 = jnp.asarray(Y0)
        f0 = forced_rhs(0.0, y0, None)
        y_new, dense, f_new = _step(method, 0.0, y0, f0, h)
        seg = dict(t=0.0, y=y0, y_new=y_new, dense=dense, hs=h, f_new=f_new)
        value = method.interpolate(forced_rhs, None, seg, 0.37)
        dense_errors.append(float(jnp.max(jnp.abs(value - exact(0.37 * h)))))
    dense_slope = np.polyfit(np.log(dense_hs), np.log(dense_errors), 1)[0]
    assert abs(dense_slope - (dense_order + 1)) < 0.4, (dense_slope, dense_errors)


@pytest.mark.parametrize("ours, theirs", [(simkit.DOPRI5(), diffrax.Dopri5), (simkit.Tsit5(), diffrax.Tsit5)])
def test_tableaus_agree_with_diffrax(ours, theirs):
    tab, ref = ours.tableau, theirs.tableau
    np.testing.assert_allclose(tab.c[1:], ref.c, rtol=0, atol=1e-15)
    np.testing.assert_allclose(tab.b, ref.b_sol, rtol=0, atol=1e-15)
    for i, row in enumerate(ref.a_lower, start=1):
        np.testing.assert_allclose(tab.a[i, :i], row, rtol=0, atol=1e-15)
    # error weights agree up to the scale of the estimator (diffrax scales Dopri5's by 2/3)
    ratio = ref.b_error[np.abs(tab.e) > 0] / tab.e[np.abs(tab.e) > 0]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)


def test_tableau_checks_reject_bad_coefficients():
    from simkit.kernels.tableaus import TSIT5, ExplicitTableau

    bad_a = TSIT5.a.copy()
    bad_a[2, 1] += 1e-3
    with pytest.raises(ValueError, match="do not sum to c"):
        ExplicitTableau("bad", 5, 4, bad_a, TSIT5.b, TSIT5.e, TSIT5.c, TSIT5.dense, "")
    bad_dense = TSIT5.dense.copy()
    bad_dense[0, 1] += 1e-3
    with pytest.raises(ValueError, match="theta=1"):
        ExplicitTableau("bad", 5, 4, TSIT5.a, TSIT5.b, TSIT5.e, TSIT5.c, bad_dense, "")


def test_small_lu_with_partial_pivoting_matches_numpy():
    from simkit.kernels.linalg import SMALL_SYSTEM, lu_factor, lu_solve

    rng = np.random.default_rng(3)
    assert SMALL_SYSTEM == 8  # the largest size below is the largest `factor` writes out
    for n, complex_ in ((1, False), (2, False), (3, False), (6, False), (8, False), (3, True), (8, True)):
        a = rng.normal(size=(n, n)) + (1j * rng.normal(size=(n, n)) if complex_ else 0)  # complex: Radau IIA
        if n > 1:
            a[0, 0] = 0.0  # needs a row exchange
        b = rng.normal(size=n)
        x = lu_solve(lu_factor(jnp.asarray(a)), jnp.asarray(b, a.dtype))
        np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    batch = rng.normal(size=(16, 3, 3))
    rhs = rng.normal(size=(16, 3))
    xs = jax.vmap(lambda a, b: lu_solve(lu_factor(a), b))(jnp.asarray(batch), jnp.asarray(rhs))
    np.testing.assert_allclose(np.asarray(xs), np.linalg.solve(batch, rhs[..., None])[..., 0], rtol=1e-10)


def test_lapack_lu_solves_differentiate_and_batch_one_matrix_at_a_time():
    """Above `SMALL_SYSTEM` states `factor`/`solve` call LAPACK, one matrix per call under
    `jax.vmap` (a batched call can hang a multi-device program: tests/test_ensemble_lapack.py).
    The solve stays differentiable in its right-hand side in both modes (its transpose is
    the transposed solve), batched or not; checked against NumPy."""
    from simkit.kernels.linalg import SMALL_SYSTEM, factor, solve

    n = SMALL_SYSTEM + 3
    rng = np.random.default_rng(5)
    a = jnp.asarray(rng.normal(size=(n, n)) + n * np.eye(n))
    b, w = jnp.asarray(rng.normal(size=n)), jnp.asarray(rng.normal(size=n))
    np.testing.assert_allclose(solve(factor(a), b), np.linalg.solve(a, b), rtol=1e-12)

    def loss(bb):  # w . A^-1 b: gradient A^-T w
        return w @ solve(factor(jax.lax.stop_gradient(a)), bb ** 2)

    expected = 2 * b * np.linalg.solve(np.asarray(a).T, w)
    np.testing.assert_allclose(jax.grad(loss)(b), expected, rtol=1e-10)
    np.testing.assert_allclose(jax.jacfwd(loss)(b), expected, rtol=1e-10)
    batch = jnp.stack([b, 2 * b, -b])
    np.testing.assert_allclose(jax.vmap(jax.grad(loss))(batch)[1], 2 * expected, rtol=1e-10)
    mats = jnp.stack([a, a.T, a + jnp.eye(n)])
    xs = jax.vmap(lambda m, r: solve(factor(m), r))(mats, batch)
    for k in range(3):
        np.testing.assert_allclose(xs[k], np.linalg.solve(mats[k], batch[k]), rtol=1e-12)
    # no batched LAPACK call in the batched program: each takes one matrix, inside a loop
    text = jax.jit(jax.vmap(lambda m, r: solve(factor(m), r))).lower(mats, batch).as_text()
    calls = [line for line in text.splitlines() if "lapack_" in line and "custom_call" in line]
    assert calls and not any(f"tensor<3x{n}x{n}x" in line for line in calls), calls


def test_an_explicit_kernel_on_thousands_of_states():
    """The error norm's sum of squares was a chain of n adds: XLA:CPU's compiler recursed n
    deep through it, and from about 5,500 states Python died with a segfault (found by
    probing, an explicit kernel on 10,000 states). Above 64 entries the sum is a pairwise
    tree: ``log2 n`` operations."""
    from simkit.kernels.methods import CHAIN_MAX, _sum_squares

    eqns = len(jax.make_jaxpr(_sum_squares)(jnp.ones(10_000)).eqns)
    assert eqns < 100, eqns  # a chain: 20,000
    x = jnp.linspace(-1.0, 2.0, 1000)
    np.testing.assert_allclose(float(_sum_squares(x)), float(jnp.sum(x * x)), rtol=1e-14)
    assert len(jax.make_jaxpr(_sum_squares)(x[:CHAIN_MAX]).eqns) > 2 * CHAIN_MAX  # small systems: the chain
    n = 6000
    k = np.linspace(0.5, 1.5, n)
    model = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, y0=np.ones(n), params={"k": k},
                            state_names=tuple(f"y{i}" for i in range(n)), name="decays")
    sol = simkit.solve(model, (0.0, 1.0), saveat=2, solver=simkit.Tsit5(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.asarray(sol.ys[-1]), np.exp(-k), rtol=1e-7)


def test_fast_log2_and_exp2_of_the_explicit_controller():
    """The explicit controller's powers from the floats' bits (`methods.fast_log2`,
    `fast_exp2`): log2 within 8e-3 and exp2 within 1.5e-4 (relative) of NumPy's over the
    error norms a controller sees (its floor 1e-10 to 1e10) and the exponents it takes, in
    float64 and float32, both increasing (no jump where an octave starts); an infinite error
    norm (a step with a non-finite state) gives a large finite log and a factor above the clip."""
    from simkit.kernels.methods import fast_exp2, fast_log2

    for dtype in (np.float64, np.float32):
        x = np.logspace(-10, 10, 20_001).astype(dtype)
        logs = np.asarray(fast_log2(jnp.asarray(x)))
        np.testing.assert_allclose(logs, np.log2(x.astype(np.float64)), rtol=0, atol=8e-3)
        assert np.all(np.diff(logs) >= 0)
        z = np.linspace(-60, 60, 20_001).astype(dtype)
        powers = np.asarray(fast_exp2(jnp.asarray(z)))
        np.testing.assert_allclose(powers, np.exp2(z.astype(np.float64)), rtol=1.5e-4)
        assert np.all(np.diff(powers) >= 0)
    assert float(fast_log2(jnp.asarray(np.inf))) == 1024.0
    assert 1e30 < float(fast_exp2(jnp.asarray(0.2 * 1024.0))) < np.inf


def _nonlinear_forced(t, y, p):
    """A non-autonomous rhs whose Jacobian moves with t, y and both parameters."""
    return jnp.stack([-p[0] * y[0] * y[1] + jnp.sin(3.0 * t), p[1] * y[0] ** 2 - 4.0 * y[1] * (1.0 + t)])


@pytest.mark.parametrize("rolled", [False, True], ids=["written", "rolled"])
def test_a_rosenbrock_steps_derivative_is_that_of_its_stage_equations(rolled, monkeypatch):
    """The stage solves carry their own tangent (the Jacobian and its LU factors carry none):
    the derivative of a step with respect to t, y, the parameters and the step size must still
    be that of the step as a function, checked by central differences to 1e-7 of its scale
    (holding the Jacobian constant instead was measured 1e-4 off a solve's sensitivities).
    Differentiated twice, each solve's tangent carries the tangent of W again."""
    from simkit.kernels import methods

    monkeypatch.setattr(methods, "ROLLED_STAGES", "always" if rolled else "tpu-float64")
    method = simkit.Rodas5P().method()

    def step(x):
        t, y, p, h = x[0], x[1:3], x[3:5], x[5]
        f = _nonlinear_forced(t, y, p)
        y_new, err, dense, _ = method.step(_nonlinear_forced, t, y, f, h, p, 1e-6, 1e-6)
        return jnp.concatenate([y_new, dense.ravel(), err[None]])

    x = jnp.array([0.3, 1.2, 0.4, 2.0, 3.0, 0.25])
    eps = 1e-6
    for order, fun in enumerate([jax.jit(step), jax.jit(jax.jacfwd(step))], start=1):
        # first derivatives against differences of the step, second (forward over forward, as
        # a solve's second derivative takes them) against differences of the first
        derivative = np.asarray(jax.jit(jax.jacfwd(fun))(x))
        central = np.stack([(np.asarray(fun(x + eps * e)) - np.asarray(fun(x - eps * e))) / (2 * eps)
                            for e in np.eye(x.shape[0])], axis=-1)
        np.testing.assert_allclose(derivative, central, rtol=0, atol=1e-7 * np.abs(central).max(),
                                   err_msg=f"derivative of order {order}")
