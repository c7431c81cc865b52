"""Banded Jacobians and LU for `simkit.BDF(jac_sparsity=...)`: the middle range between a
dense LU and matrix-free GMRES.

The linear algebra is checked against NumPy's dense solve on banded matrices hidden by a
random reordering (partial pivoting needed where the diagonal vanishes); the Jacobian
against ``jax.jacfwd``; the BDF solve against the dense BDF (the same algorithm: the same
steps, values equal to the linear solves' rounding) and SciPy's Radau at rtol 1e-10.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.sparse

import simkit
from simkit.errors import InputError, ShapeError
from simkit.kernels.banded import band_structure, banded_factor, banded_jacobian, banded_solve

RNG = np.random.default_rng(7)


def banded_matrix(n, kl, ku):
    a = np.zeros((n, n))
    for i in range(n):
        lo, hi = max(0, i - kl), min(n, i + ku + 1)
        a[i, lo:hi] = RNG.normal(size=hi - lo)
    return a


@pytest.mark.parametrize("n, kl, ku, hidden, pivot", [
    (37, 3, 3, True, True),     # reordered; the diagonal of I - cA vanishes: pivoting needed
    (6, 1, 1, False, True),     # one block smaller than the minimum (even: a zero-diagonal tridiagonal of odd order is singular)
    (70, 5, 2, True, False),    # kl != ku, several blocks, padding
])
def test_banded_solve_matches_dense_solve(n, kl, ku, hidden, pivot):
    a = banded_matrix(n, kl, ku)
    c = 0.7
    if pivot:  # I - c A with a zero diagonal: no LU without row exchanges
        np.fill_diagonal(a, 1.0 / c)
    q = RNG.permutation(n) if hidden else np.arange(n)
    a = a[np.ix_(q, q)]
    s = band_structure(a != 0)
    assert s.kl + s.ku <= 2 * (kl + ku)  # reverse Cuthill-McKee finds a band again
    band = banded_jacobian(lambda y: jnp.asarray(a) @ y, jnp.zeros(n), s)
    b = RNG.normal(size=n)
    x = banded_solve(banded_factor(band, c, s), jnp.asarray(b), s)
    m = np.eye(n) - c * a
    exact = np.linalg.solve(m, b)
    assert np.max(np.abs(np.asarray(x) - exact)) < 1e-12 * np.linalg.cond(m) * np.max(np.abs(exact))


def test_banded_jacobian_matches_jacfwd():
    n = 30
    q = RNG.permutation(n)
    where = np.empty(n, int)
    where[q] = np.arange(n)

    def f(y):  # a nonlinear tridiagonal coupling in the order q
        z = y[q]
        out = jnp.sin(z) * jnp.concatenate([z[1:], z[:1] * 0]) + jnp.concatenate([z[:1] * 0, z[:-1] ** 2])
        return out[where]

    y = jnp.asarray(RNG.normal(size=n))
    dense = np.asarray(jax.jacfwd(f)(y))
    s = band_structure(dense != 0)
    band = np.asarray(banded_jacobian(f, y, s))
    rebuilt = np.zeros((n, n))
    for i in range(n):
        for d in range(s.width):
            j = i - s.kl + d
            if 0 <= j < n:
                rebuilt[s.perm[i], s.perm[j]] = band[i, d]
    np.testing.assert_allclose(rebuilt, dense, rtol=0, atol=1e-15)
    assert s.width == 3  # tridiagonal once reordered: 3 Jacobian-vector products, not 30


N = 25  # grid points: 50 states, [u, v] blocks (a band only after reordering)
RTOL = ATOL = 1e-6


def brusselator():
    """The 1-D Brusselator (Hairer & Wanner II, section IV.1; alpha = 1/50, u = 1, v = 3 at
    both ends), states ordered [u, v] as a SciPy user writes it, and its sparsity pattern."""
    def rhs(t, y, p):
        u, v = y[:N], y[N:]
        c = p["alpha"] * (N + 1) ** 2
        up = jnp.concatenate([jnp.ones(1), u, jnp.ones(1)])
        vp = jnp.concatenate([jnp.full(1, 3.0), v, jnp.full(1, 3.0)])
        return jnp.concatenate([1 + u * u * v - 4 * u + c * (up[:-2] - 2 * u + up[2:]),
                                3 * u - u * u * v + c * (vp[:-2] - 2 * v + vp[2:])])

    x = np.arange(1, N + 1) / (N + 1)
    model = simkit.ODEModel(rhs=rhs, params={"alpha": 0.02}, y0=np.concatenate([1 + np.sin(2 * np.pi * x),
                                                                                   np.full(N, 3.0)]), stiff=True,
                            state_names=tuple(f"u{i}" for i in range(N)) + tuple(f"v{i}" for i in range(N)))
    tri = np.eye(N) + np.eye(N, k=1) + np.eye(N, k=-1)
    pattern = np.block([[tri, np.eye(N)], [np.eye(N), tri]]) != 0
    return model, pattern


@pytest.fixture(scope="module")
def problem():
    model, pattern = brusselator()
    rhs = jax.jit(lambda y: model.rhs(0.0, y, model.params))
    ref = scipy.integrate.solve_ivp(lambda t, y: np.asarray(rhs(y)), (0.0, 10.0), np.asarray(model.y0),
                                    method="Radau", rtol=1e-10, atol=1e-10, jac_sparsity=pattern)
    return model, pattern, ref.y[:, -1]


def test_bdf_with_a_sparsity_pattern_takes_the_dense_steps(problem):
    model, pattern, ref = problem
    banded = simkit.BDF(jac_sparsity=pattern)
    sol = simkit.solve(model, (0.0, 10.0), saveat=1, rtol=RTOL, atol=ATOL, solver=banded)
    dense = simkit.solve(model, (0.0, 10.0), saveat=1, rtol=RTOL, atol=ATOL, solver=simkit.BDF(linear_solver="dense"))
    assert "num_lu_decompositions" in sol.stats and "band 2+2" in sol.solver_name
    for key in ("num_steps", "num_accepted_steps", "num_lu_decompositions", "num_jacobians", "final_order"):
        assert int(sol.stats[key]) == int(dense.stats[key]), key
    # a Jacobian is 5 Jacobian-vector products (the band's width), not 50 columns
    per_jacobian = (int(dense.stats["num_rhs"]) - int(sol.stats["num_rhs"])) / int(sol.stats["num_jacobians"])
    assert per_jacobian == 50 - 5
    np.testing.assert_allclose(sol.ys[-1], dense.ys[-1], rtol=1e-10)
    # SciPy's BDF with jac_sparsity reaches 4.5 (same algorithm); measured here 5.1
    err = np.max(np.abs(np.asarray(sol.ys[-1]) - ref) / (ATOL + RTOL * np.abs(ref)))
    assert err < 10, err


def test_banded_tangents_equal_the_dense_ones(problem):
    """Forward sensitivities (the kernels' custom_jvp) through the banded solves, two
    tangents at once (``jax.jacfwd`` batches them with ``jax.vmap``), against the dense
    BDF's, which takes the same steps; the dense BDF's sensitivities are checked against
    SciPy in test_sensitivities.py."""
    model, pattern, _ = problem

    def final(theta, solver):  # theta = (alpha, a scale of y0)
        return simkit.solve(model, (0.0, 2.0), saveat=1, params={"alpha": theta[0]}, y0=theta[1] * model.y0,
                            rtol=RTOL, atol=ATOL, solver=solver).ys[-1]

    theta = jnp.asarray([0.02, 1.0])
    g_banded = jax.jacfwd(final)(theta, simkit.BDF(jac_sparsity=pattern))
    g_dense = jax.jacfwd(final)(theta, simkit.BDF(linear_solver="dense"))
    assert g_banded.shape == (50, 2)
    np.testing.assert_allclose(g_banded, g_dense, rtol=1e-8, atol=1e-10 * np.abs(g_dense).max())


def test_bad_patterns_are_named():
    with pytest.raises(InputError, match="needs jac_sparsity"):
        simkit.BDF(linear_solver="banded")
    with pytest.raises(InputError, match=r"square \(n, n\) pattern, got shape \(3, 4\)"):
        simkit.BDF(jac_sparsity=np.ones((3, 4)))
    model, pattern = brusselator()
    with pytest.raises(ShapeError, match="jac_sparsity is 3 x 3 but model .* has 50 states"):
        simkit.solve(model, (0.0, 1.0), solver=simkit.BDF(jac_sparsity=np.ones((3, 3))))
    # the pattern is part of the solver's identity (which program runs), not the array object
    assert simkit.BDF(jac_sparsity=pattern) == simkit.BDF(jac_sparsity=scipy.sparse.csr_matrix(pattern))
    assert simkit.BDF(jac_sparsity=pattern) != simkit.BDF(jac_sparsity=np.ones((50, 50)))


def test_an_explicitly_banded_bdf_runs():
    # found by probing: the front door rebuilt the solver without its pattern, and every solve
    # with linear_solver="banded" failed "needs jac_sparsity" although the pattern was given
    rob = simkit.models.get("robertson")
    banded = simkit.BDF(linear_solver="banded", jac_sparsity=np.ones((3, 3), bool))
    sol = simkit.solve(rob, (0.0, 1.0), saveat=3, solver=banded, rtol=1e-8, atol=1e-12)
    ref = simkit.solve(rob, (0.0, 1.0), saveat=3, solver=simkit.BDF(linear_solver="dense"), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(np.asarray(sol.ys), np.asarray(ref.ys), rtol=1e-12, atol=1e-15)


def _ring(n, coupling):
    """y_i' = d (y_{i-1} - 2 y_i + y_{i+1}) + coupling y_i y_{i+3} - y_i^3 on a ring: a band
    after reordering; with y0 = 0 on the odd states the product's derivative vanishes at y0."""
    y0 = np.where(np.arange(n) % 2 == 0, np.sin(np.linspace(0, np.pi, n)), 0.0)
    rhs = lambda t, y, p: (p["d"] * (jnp.roll(y, 1) - 2 * y + jnp.roll(y, -1))  # noqa: E731
                           + coupling * y * jnp.roll(y, -3) - y ** 3)
    return simkit.ODEModel(rhs=rhs, params={"d": 1e6}, y0=y0, state_names=tuple(f"y{i}" for i in range(n)),
                           stiff=True), y0


def test_the_default_reads_the_pattern_and_runs_banded_and_a_dense_one_does_not():
    """Above 256 states without a preconditioner the default BDF reads the Jacobian's
    pattern from the rhs (simkit/kernels/structure.py) and runs banded; before, it ran
    unpreconditioned GMRES, which cannot follow a very stiff chain (max_steps). The
    pattern holds the entries that vanish at y0 (a product with states at 0), and the
    solve reaches SciPy's BDF with the true pattern to its own accuracy. A dense Jacobian
    gets no pattern (matrix-free)."""
    from simkit._prepare import choose_solver
    from simkit.kernels.sparsity import detected_pattern

    n = 260
    model, y0 = _ring(n, 0.5)
    pattern, narrow, band = detected_pattern(model)
    i = np.arange(n)
    truth = np.zeros((n, n), bool)
    for shift in (0, 1, -1, 3):
        truth[i, (i + shift) % n] = True
    np.testing.assert_array_equal(pattern.toarray() != 0, truth)  # (i, i + 3) is zero at y0 for odd i
    assert narrow
    # the solver the front door resolves is the one the pattern gives, with the cached band
    # (reordered once per rhs, not once per solve)
    resolved = choose_solver(model, None, n, False)
    assert resolved._band is band and band == simkit.BDF(jac_sparsity=pattern)._band
    assert repr(resolved) == "simkit.BDF(jac_sparsity=<260x260, band 7+7>)"
    assert choose_solver(model, None, n, False)._band is band
    ts = np.array([0.0, 0.1, 1.0])
    sol = simkit.solve(model, (0.0, 1.0), saveat=ts, rtol=1e-6, atol=1e-8)
    assert "jac_sparsity=<260x260" in sol.solver_name, sol.solver_name

    def f(t, y):
        return 1e6 * (np.roll(y, 1) - 2 * y + np.roll(y, -1)) + 0.5 * y * np.roll(y, -3) - y ** 3

    ref = scipy.integrate.solve_ivp(f, (0.0, 1.0), y0, method="BDF", t_eval=ts, rtol=1e-11, atol=1e-13,
                                    jac_sparsity=truth)
    theirs = scipy.integrate.solve_ivp(f, (0.0, 1.0), y0, method="BDF", t_eval=ts, rtol=1e-6, atol=1e-8,
                                       jac_sparsity=truth)
    err, err_scipy = np.max(np.abs(np.asarray(sol.ys).T - ref.y)), np.max(np.abs(theirs.y - ref.y))
    assert err <= 3 * err_scipy, (err, err_scipy)
    dense = simkit.ODEModel(rhs=lambda t, y, p: -p["a"] @ y, params={"a": np.eye(n) + 1e-3}, y0=np.ones(n),
                            state_names=tuple(f"y{i}" for i in range(n)), stiff=True)
    assert repr(choose_solver(dense, None, n, False)) == "simkit.BDF()"
    assert repr(choose_solver(dense, simkit.BDF(jac_sparsity="detect"), n, False)) == "simkit.BDF()"
    with pytest.raises(InputError, match="'detect'"):
        simkit.BDF(jac_sparsity="auto")


def test_a_where_coupling_not_taken_at_y0_is_in_the_pattern():
    """The case that kept numerical probing opt-in: a coupling of 1e5 to the
    mirrored state, switched on by ``jnp.where`` once y[0] passes 1. Probes at y0 never saw
    it, and the banded BDF ran 100,000 steps into max_steps. Read from the program, both
    branches are in the pattern, and the default takes the dense BDF's steps and values."""
    n = 300

    def rhs(t, y, p):
        lap = jnp.concatenate([y[1:2] - y[:1], y[2:] - 2 * y[1:-1] + y[:-2], y[-2:-1] - y[-1:]])
        far = jnp.where(y[0] > 1.0, 1e5 * (y[::-1] - y), 0.0)
        return p["d"] * lap + far + jnp.where(jnp.arange(n) == 0, 1.0, 0.0)

    model = simkit.ODEModel(rhs=rhs, params={"d": 1e4}, y0=np.zeros(n), state_names=tuple(f"y{i}" for i in range(n)),
                            stiff=True)
    from simkit.kernels.sparsity import detected_pattern

    pattern = detected_pattern(model)[0].toarray() != 0
    i = np.arange(n)
    assert pattern[i, n - 1 - i].all()  # the branch not taken at y0
    sol = simkit.solve(model, (0.0, 2.0), saveat=3, rtol=1e-6, atol=1e-8)
    dense = simkit.solve(model, (0.0, 2.0), saveat=3, rtol=1e-6, atol=1e-8, solver=simkit.BDF(linear_solver="dense"))
    assert "jac_sparsity=<300x300" in sol.solver_name, sol.solver_name
    assert float(sol.ts[-1]) == 2.0 and int(sol.status) == 0
    assert int(sol.stats["num_steps"]) <= int(dense.stats["num_steps"]) + 5, (sol.stats, dense.stats)
    np.testing.assert_allclose(np.asarray(sol.ys), np.asarray(dense.ys), rtol=1e-5, atol=1e-7)


def test_factors_are_kept_while_c_moves_little_and_follow_it_when_asked(problem):
    """``refactor_ratio=0.3`` (the default above 128 states) keeps the factors of I - c J
    while c stays within 30 % of theirs (CVODE's rule): fewer factorisations, the same
    steps and accuracy; ``refactor_ratio=0`` (the default up to 128 states) follows every
    change of c, as SciPy's BDF, whose count of LU factorisations it then matches."""
    from simkit.kernels.bdf import REFACTOR_MIN_STATES, REFACTOR_RATIO, BDFMethod

    assert BDFMethod().refactor_ratio_for(REFACTOR_MIN_STATES) == 0.0
    assert BDFMethod().refactor_ratio_for(REFACTOR_MIN_STATES + 1) == REFACTOR_RATIO == 0.3
    model, pattern, ref = problem
    kept = simkit.solve(model, (0.0, 10.0), saveat=1, rtol=RTOL, atol=ATOL,
                        solver=simkit.BDF(jac_sparsity=pattern, refactor_ratio=0.3))
    scipy_rule = simkit.solve(model, (0.0, 10.0), saveat=1, rtol=RTOL, atol=ATOL, solver=simkit.BDF(jac_sparsity=pattern))
    assert kept.solver_name.endswith("refactor_ratio=0.3, jac_sparsity=<50x50, band 2+2>)")
    n_kept, n_scipy_rule = (int(s.stats["num_lu_decompositions"]) for s in (kept, scipy_rule))
    assert n_kept <= 0.75 * n_scipy_rule, (n_kept, n_scipy_rule)  # measured 22 against 39
    steps = [int(s.stats["num_accepted_steps"]) for s in (kept, scipy_rule)]
    assert abs(steps[0] - steps[1]) <= 0.05 * steps[1], steps
    for sol in (kept, scipy_rule):  # within 10 tolerances of SciPy's Radau at 1e-10 (measured 5.1)
        err = np.max(np.abs(np.asarray(sol.ys[-1]) - ref) / (ATOL + RTOL * np.abs(ref)))
        assert err < 10, err
    rhs = jax.jit(lambda y: model.rhs(0.0, y, model.params))
    sp = scipy.integrate.solve_ivp(lambda t, y: np.asarray(rhs(y)), (0.0, 10.0), np.asarray(model.y0),
                                   method="BDF", rtol=RTOL, atol=ATOL, jac_sparsity=pattern)
    assert abs(n_scipy_rule - sp.nlu) <= 0.1 * sp.nlu, (n_scipy_rule, sp.nlu)


@pytest.mark.parametrize("bad", [1.0, -0.1, True, "0.3", float("nan")])
def test_a_bad_refactor_ratio_is_named(bad):
    with pytest.raises(InputError, match=r"refactor_ratio must be None or a number in \[0, 1\)"):
        simkit.BDF(refactor_ratio=bad)
