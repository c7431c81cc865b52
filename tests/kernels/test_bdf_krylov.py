"""simkit.BDF without a Jacobian (Newton-Krylov): GMRES, the FFT preconditioner of a PDE's
linear part, agreement with SciPy on a method-of-lines system, gradients, and the default
for large stiff models.

The method-of-lines problem is `simkit.models.get("brusselator_2d")` on an 8 x 8 grid (128
states: small enough for SciPy's dense finite-difference Jacobian in the reference, stiff
enough that the preconditioner matters: c * |lambda_max| of the diffusion reaches 10^3).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit import reference
from simkit.kernels.bdf import PRECONDITIONED_DENSE_MAX_STATES
from simkit.kernels.gmres import gmres
from simkit.stencil import Grid, Periodic, laplacian
from simkit.stencil.pde import Space
from simkit.stencil.preconditioner import SpectralPreconditioner

KRYLOV = simkit.BDF(linear_solver="krylov")
UNPRECONDITIONED = simkit.BDF(linear_solver="krylov", preconditioner=None)
T1 = 11.5  # past the forcing's switch at t = 1.1
RTOL = ATOL = 1e-6


# -- GMRES ------------------------------------------------------------------------------------

def test_gmres_solves_to_its_tolerance_with_and_without_a_preconditioner():
    rng = np.random.default_rng(0)
    n = 60
    a = jnp.asarray(np.diag(np.linspace(1.0, 50.0, n)) + rng.standard_normal((n, n)) / np.sqrt(n))  # nonsymmetric
    b = jnp.asarray(rng.standard_normal(n))
    exact = np.linalg.solve(np.asarray(a), np.asarray(b))
    x, (k, converged, _) = gmres(lambda v: a @ v, b, lambda v: v, tol=1e-10, max_dim=60)
    assert bool(converged) and float(jnp.linalg.norm(a @ x - b)) <= 1e-10
    np.testing.assert_allclose(x, exact, rtol=0, atol=1e-10)
    # the diagonal as a (right) preconditioner: the same solution in fewer iterations
    xp, (kp, _, _) = gmres(lambda v: a @ v, b, lambda v: v / jnp.diag(a), tol=1e-10, max_dim=60)
    np.testing.assert_allclose(xp, exact, rtol=0, atol=1e-10)
    assert int(kp) < int(k), (int(kp), int(k))
    # a capped Krylov space stops there, with the best iterate it has, and says so
    x5, (k5, converged5, reduced5) = gmres(lambda v: a @ v, b, lambda v: v, tol=1e-10, max_dim=5)
    assert int(k5) == 5 and float(jnp.linalg.norm(a @ x5 - b)) < float(jnp.linalg.norm(b))
    assert not bool(converged5) and bool(reduced5)


def test_gmres_tangent_is_the_solve_of_the_tangent():
    """d/ds of A(s)^{-1} b(s) = A^{-1} (b' - A' x): implicit differentiation (custom_linear_solve)."""
    rng = np.random.default_rng(1)
    n = 20
    a0 = jnp.asarray(np.eye(n) * 4 + rng.standard_normal((n, n)) / np.sqrt(n))
    a1, b0, b1 = (jnp.asarray(v) for v in (rng.standard_normal((n, n)), rng.standard_normal(n), rng.standard_normal(n)))

    def x(s):
        return gmres(lambda v: (a0 + s * a1) @ v, b0 + s * b1, lambda v: v, tol=1e-13, max_dim=n)[0]

    exact = lambda s: jnp.linalg.solve(a0 + s * a1, b0 + s * b1)  # noqa: E731
    np.testing.assert_allclose(jax.jit(jax.jacfwd(x))(0.3), jax.jit(jax.jacfwd(exact))(0.3), rtol=0, atol=1e-10)


def test_an_unconverged_gmres_solve_fails_its_newton_iteration():
    """Found by probing: a GMRES solve capped at krylov_dim returned its best iterate and the
    Newton iteration, which tests only the correction's size, accepted it: 12 states with
    eigenvalues from -1 to -1e6 and krylov_dim = 4 ended 4e5 tolerances off, status success.
    Now such a solve fails the iteration (CVODE's rule) and the step shrinks until GMRES
    converges: within tolerance of exp(A t), the stalls counted and named on failure."""
    from scipy.linalg import expm

    n = 12
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((n, n)))
    a = q @ np.diag(-np.logspace(0, 6, n)) @ q.T
    linear = simkit.ODEModel(rhs=lambda t, y, p: p["a"] @ y, params={"a": a}, y0=np.ones(n),
                             state_names=tuple(f"y{i}" for i in range(n)), stiff=True)
    ts = np.array([0.1, 1.0])
    exact = np.stack([expm(a * t) @ np.ones(n) for t in ts])
    capped = simkit.BDF(linear_solver="krylov", krylov_dim=4)
    sol = simkit.solve(linear, (0.0, 1.0), saveat=ts, rtol=1e-6, atol=1e-9, solver=capped)
    err = np.max(np.abs(np.asarray(sol.ys) - exact) / (1e-6 * np.abs(exact) + 1e-9))
    assert err < 5 and int(sol.stats["num_linear_failures"]) > 0, (err, sol.stats)  # 0.02 measured
    with pytest.raises(simkit.SolveError, match="GMRES did not converge within krylov_dim = 4"):
        simkit.solve(linear, (0.0, 1.0), saveat=ts, rtol=1e-6, atol=1e-9, solver=capped, max_steps=500)


# -- the FFT preconditioner ----------------------------------------------------------------------

def _coupled(t, u, p, space):
    """A translation-invariant operator coupling two components (diffusion, advection-like
    first differences, a constant coupling), to test the per-wavenumber 2 x 2 solve."""
    lap = laplacian(space.pad(u), space.spacing)
    shifted = jnp.roll(u, 1, axis=1)
    return jnp.stack([p["d"] * lap[0] + 0.3 * u[1] - 2.0 * shifted[1], 0.5 * lap[1] - 0.7 * u[0] + shifted[0]])


@pytest.mark.parametrize("case", ["one component, 1-D", "two coupled components, 2-D", "three components, 1-D"])
def test_spectral_preconditioner_is_the_exact_inverse_on_a_periodic_grid(case):
    if case == "one component, 1-D":
        grid, linear, comps = Grid(24), lambda t, u, p, space: p["d"] * laplacian(space.pad(u), space.spacing), 1
    elif case == "two coupled components, 2-D":
        grid, linear, comps = Grid((6, 8)), _coupled, 2
    else:
        grid, comps = Grid(10), 3
        linear = lambda t, u, p, space: p["d"] * laplacian(space.pad(u), space.spacing) + jnp.roll(u, 1, axis=0)  # noqa: E731
    params, c = {"d": 0.2}, 0.37
    space = Space(grid, Periodic())
    n = comps * grid.size
    dense = jax.jacfwd(lambda y: linear(0.0, y.reshape((comps,) + grid.shape), params, space).reshape(-1))(jnp.zeros(n))
    v = jnp.asarray(np.random.default_rng(2).standard_normal(n))
    expected = np.linalg.solve(np.eye(n) - c * np.asarray(dense), np.asarray(v))
    apply = SpectralPreconditioner(linear, grid, Periodic(), comps)(0.0, v, params, c)
    np.testing.assert_allclose(apply(v), expected, rtol=0, atol=1e-12 * np.abs(expected).max())


# -- the method-of-lines Brusselator against SciPy -------------------------------------------------

@pytest.fixture(scope="module")
def bruss8():
    m = simkit.models.pde_reaction.brusselator_2d(8)
    ref = reference.solve_ivp(m.to_ode(), (0.0, T1), saveat=3, method="Radau", rtol=1e-10, atol=1e-10)
    sp = reference.solve_ivp(m.to_ode(), (0.0, T1), saveat=3, method="BDF", rtol=RTOL, atol=ATOL)
    return m, ref, sp


def test_matrix_free_bdf_matches_scipy_and_the_preconditioner_pays(bruss8):
    m, ref, sp = bruss8
    theirs = max(reference.compare(sp, ref, RTOL, ATOL).values())
    iterations = {}
    # simkit.BDF() is the default's program ("auto": matrix-free at 128 states with a preconditioner)
    for label, solver in (("spectral", simkit.BDF()), ("none", UNPRECONDITIONED)):
        sol = simkit.solve(m, (0.0, T1), saveat=3, rtol=RTOL, atol=ATOL, solver=solver)
        assert sol.status == simkit.Status.SUCCESS
        ours = max(reference.compare(sol, ref, RTOL, ATOL).values())
        # as the dense BDF's bar (test_bdf.WITHIN_SCIPY_BDF): SciPy's BDF error, with room for
        # another valid step sequence (measured: spectral 2.0, none 1.6, SciPy 2.2)
        assert ours < 2.0 * theirs, (label, ours, theirs)
        assert "num_lu_decompositions" not in sol.stats
        iterations[label] = int(sol.stats["num_linear_iterations"])
    # the diffusion inverted by FFT leaves GMRES about one iteration per Newton iteration
    # (measured 13x fewer iterations than without it at 8 x 8, 24x at 32 x 32)
    assert iterations["spectral"] * 4 < iterations["none"], iterations


def test_matrix_free_bdf_gradient_matches_finite_differences():
    # 4 x 4 (32 states): the forward sensitivity carries one direction per input (35 here)
    m = simkit.models.pde_reaction.brusselator_2d(4)

    def final(alpha, tol):
        return simkit.solve(m, (0.0, 2.0), saveat=2, rtol=tol, atol=tol, params={"alpha": alpha},
                            solver=KRYLOV).ys[-1]

    jac = np.asarray(jax.jit(jax.jacfwd(lambda a: final(a, 1e-9)))(10.0))
    # central differences of solves 1000x tighter (at the gradient's tolerance, their noise,
    # 1e-9 / h, is 15 % of this sensitivity; the dense BDF's jacfwd agrees with it to 1e-9)
    fd = (np.asarray(final(10.0 + 1e-3, 1e-12)) - np.asarray(final(10.0 - 1e-3, 1e-12))) / 2e-3
    np.testing.assert_allclose(jac, fd, rtol=0, atol=1e-4 * np.abs(fd).max())


def test_stiff_pde_defaults_to_matrix_free_bdf_with_its_preconditioner(bruss8):
    m, ref, _ = bruss8
    ode = m.to_ode()
    assert ode.n_states > PRECONDITIONED_DENSE_MAX_STATES and isinstance(ode.preconditioner, SpectralPreconditioner)
    sol = simkit.solve(m, (0.0, T1), saveat=3, rtol=RTOL, atol=ATOL)
    assert sol.solver_name == "simkit.BDF()" and sol.status == simkit.Status.SUCCESS
    assert int(sol.stats["num_linear_iterations"]) >= int(sol.stats["num_steps"])  # matrix-free
    np.testing.assert_array_equal(sol.ys, simkit.solve(m, (0.0, T1), saveat=3, rtol=RTOL, atol=ATOL,
                                                       solver=simkit.BDF()).ys)
    # a plain ODE model of this size (no preconditioner) stays dense: "auto" decides by size
    # and by whether there is a preconditioner (the choice is static, made when tracing)
    auto = simkit.BDF().with_model_preconditioner(None).method()
    assert not auto.krylov(ode.n_states) and auto.krylov(257)
    assert simkit.BDF().with_model_preconditioner(ode.preconditioner).method().krylov(ode.n_states)
    assert KRYLOV.with_model_preconditioner(None).method().krylov(1)  # forced


def test_bdf_options_are_checked_and_named():
    assert repr(simkit.BDF()) == "simkit.BDF()"
    assert repr(UNPRECONDITIONED) == "simkit.BDF(linear_solver='krylov', preconditioner=None)"
    assert simkit.BDF(linear_solver="krylov") == KRYLOV and KRYLOV != simkit.BDF()
    with pytest.raises(simkit.InputError, match="linear_solver"):
        simkit.BDF(linear_solver="sparse")
    with pytest.raises(simkit.InputError, match="krylov_dim"):
        simkit.BDF(krylov_dim=0)
    with pytest.raises(simkit.InputError, match="preconditioner"):
        simkit.BDF(preconditioner="jacobi")
    with pytest.raises(simkit.InputError, match="preconditioner"):
        simkit.BDF(preconditioner=np.eye(3))  # a matrix, not a function (was an ambiguous-truth ValueError)
    # a preconditioner whose function returns the wrong shape: named when tracing, before compiling
    truncating = simkit.BDF(linear_solver="krylov", preconditioner=lambda t, y, p, c: (lambda v: v[:5]))
    ode = simkit.models.pde_reaction.brusselator_2d(4).to_ode()
    with pytest.raises(simkit.ShapeError, match=r"shape \(32,\) to one of that shape, got \(5,\)"):
        simkit.solve(ode, (0.0, 1.0), saveat=2, solver=truncating)


def test_a_nan_preconditioner_is_reported_as_a_newton_failure():
    # every Newton iteration fails (GMRES returns NaN): the step shrinks to nothing, and the
    # status names the Newton iteration, not the step size
    poisoned = simkit.BDF(linear_solver="krylov", preconditioner=lambda t, y, p, c: (lambda v: v * jnp.nan))
    ode = simkit.models.pde_reaction.brusselator_2d(4).to_ode()
    sol = simkit.solve(ode, (0.0, 1.0), saveat=2, solver=poisoned, throw=False)
    assert sol.status == simkit.Status.NONLINEAR_FAILURE
    with pytest.raises(simkit.SolveError, match=r"failed at t = 0 .*Newton.*NaN"):
        simkit.solve(ode, (0.0, 1.0), saveat=2, solver=poisoned)
