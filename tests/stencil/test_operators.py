"""Stencil operators: coefficient checks, linearity, polynomial exactness, conservation,
observed convergence order."""

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simkit import InputError, ShapeError
from simkit import stencil as sk

settings.register_profile("stencil", max_examples=25, deadline=None)
settings.load_profile("stencil")


def test_stencils_are_checked_when_built():
    with pytest.raises(InputError, match="moments"):
        sk.Stencil((-1, 0, 1), (1.0, -2.0, 1.1), 2, 2)
    with pytest.raises(InputError, match="claim the true order"):
        sk.Stencil((-1, 1), (-0.5, 0.5), 1, 1)  # central difference is 2nd order


def _padded_poly(coeffs, grid, width):
    """A polynomial field evaluated on the grid *and* its ghost points (exact ghosts)."""
    dx = grid.spacing
    axes = [grid.lower[a] + (np.arange(-width, grid.shape[a] + width) + 0.5) * dx[a] for a in range(grid.ndim)]
    mesh = np.meshgrid(*axes, indexing="ij")
    value = sum(c * np.prod([m**k for m, k in zip(mesh, powers)], axis=0) for powers, c in coeffs.items())
    return sk.Padded(jnp.asarray(value), width, grid.ndim), mesh


GRID2 = sk.Grid((9, 7), (-1.0, 0.5), (1.3, 2.0))


@given(st.lists(st.floats(-3, 3), min_size=6, max_size=6))
def test_laplacian_exact_on_quadratics_and_quartics(c):
    # 2nd-order Laplacian: exact for total degree <= 3; 4th order: exact for degree <= 5
    cubic = {(0, 0): c[0], (1, 0): c[1], (2, 0): c[2], (1, 1): c[3], (0, 3): c[4], (2, 1): c[5]}
    p, (x, y) = _padded_poly(cubic, GRID2, 1)
    exact = 2 * c[2] + 6 * c[4] * y + 2 * c[5] * y
    np.testing.assert_allclose(sk.laplacian(p, GRID2.spacing), exact[1:-1, 1:-1], atol=1e-9)
    quintic = {(5, 0): c[0], (0, 4): c[1], (3, 2): c[2]}
    p, (x, y) = _padded_poly(quintic, GRID2, 2)
    exact = 20 * c[0] * x**3 + 12 * c[1] * y**2 + 6 * c[2] * x * y**2 + 2 * c[2] * x**3
    np.testing.assert_allclose(sk.laplacian(p, GRID2.spacing, order=4), exact[2:-2, 2:-2], atol=1e-8)


@given(st.lists(st.floats(-3, 3), min_size=4, max_size=4))
def test_gradient_divergence_and_upwind_exactness(c):
    field = {(2, 0): c[0], (1, 1): c[1], (0, 2): c[2], (0, 0): c[3]}
    p, (x, y) = _padded_poly(field, GRID2, 2)
    gx, gy = 2 * c[0] * x + c[1] * y, c[1] * x + 2 * c[2] * y
    g = sk.gradient(p, GRID2.spacing)
    np.testing.assert_allclose(g[0], gx[2:-2, 2:-2], atol=1e-9)
    np.testing.assert_allclose(g[1], gy[2:-2, 2:-2], atol=1e-9)
    # divergence of the (exact, padded) gradient is the Laplacian, exact for quadratics
    vec = sk.Padded(jnp.stack([jnp.asarray(gx), jnp.asarray(gy)]), 2, 2)
    np.testing.assert_allclose(sk.divergence(vec, GRID2.spacing), 2 * c[0] + 2 * c[2] + 0 * x[2:-2, 2:-2], atol=1e-9)
    # third-order upwind is exact on quadratics for either sign of the velocity
    v = (np.where(x[2:-2, 2:-2] > 0, 1.5, -0.7), -2.0)
    exact = v[0] * gx[2:-2, 2:-2] + v[1] * gy[2:-2, 2:-2]
    np.testing.assert_allclose(sk.advection(p, v, GRID2.spacing, order=3), exact, atol=1e-9)


@given(st.integers(0, 2**31 - 1), st.floats(-2, 2), st.floats(-2, 2))
def test_operators_are_linear(seed, a, b):
    rng = np.random.default_rng(seed)
    grid = sk.Grid((8, 6))
    u, v = rng.standard_normal((2,) + grid.shape)
    bc = sk.Periodic()
    for op in (lambda p: sk.laplacian(p, grid.spacing, 4), lambda p: sk.gradient(p, grid.spacing),
               lambda p: sk.biharmonic(p, grid.spacing), lambda p: sk.advection(p, (1.0, -1.0), grid.spacing, 3)):
        lhs = op(sk.pad(jnp.asarray(a * u + b * v), bc, 2, grid.spacing))
        rhs = a * op(sk.pad(jnp.asarray(u), bc, 2, grid.spacing)) + b * op(sk.pad(jnp.asarray(v), bc, 2, grid.spacing))
        np.testing.assert_allclose(lhs, rhs, atol=1e-9 * (1 + np.abs(rhs).max()))


@given(st.integers(0, 2**31 - 1))
def test_periodic_operators_conserve(seed):
    rng = np.random.default_rng(seed)
    grid = sk.Grid((12, 10), 0.0, (2.0, 1.0))
    u = jnp.asarray(rng.uniform(0.1, 2.0, grid.shape))
    p = sk.pad(u, sk.Periodic(), 2, grid.spacing)
    scale = float(jnp.abs(u).sum()) / min(grid.spacing) ** 2
    for out in (sk.laplacian(p, grid.spacing), sk.laplacian(p, grid.spacing, 4),
                sk.advection(p, (0.7, -0.3), grid.spacing, 1), sk.advection(p, (0.7, -0.3), grid.spacing, 3),
                sk.flux_divergence(p, lambda w: 0.5 * w**2, grid.spacing),
                sk.flux_divergence(p, lambda w: 0.5 * w**2, grid.spacing, sk.Rusanov(lambda w: w))):
        assert abs(float(jnp.sum(out))) < 1e-13 * scale


def _periodic_error(n, op, exact):
    grid = sk.Grid((n,), 0.0, 2 * np.pi)
    x = grid.coordinates()
    p = sk.pad(jnp.asarray(np.exp(np.sin(x))), sk.Periodic(), 2, grid.spacing)
    return float(np.abs(op(p, grid.spacing) - exact(x)).max())


@pytest.mark.parametrize("name, op, order", [
    ("laplacian 2", lambda p, h: sk.laplacian(p, h, 2), 2),
    ("laplacian 4", lambda p, h: sk.laplacian(p, h, 4), 4),
    ("gradient 2", lambda p, h: sk.gradient(p, h, 2)[0], 2),
    ("gradient 4", lambda p, h: sk.gradient(p, h, 4)[0], 4),
    ("upwind 1", lambda p, h: sk.advection(p, (1.0,), h, 1), 1),
    ("upwind 3", lambda p, h: -sk.advection(p, (-1.0,), h, 3), 3),
    ("biharmonic", lambda p, h: sk.biharmonic(p, h), 2),
])
def test_observed_order_in_space(name, op, order):
    """Error against the exact derivative of exp(sin x) on refined periodic grids; the fitted
    log-log slope is within 0.25 of the claimed order."""
    f = np.exp

    def exact(x):
        s, c = np.sin(x), np.cos(x)
        d1 = c * f(s)
        d2 = (c**2 - s) * f(s)
        if "laplacian" in name:
            return d2
        if "biharmonic" in name:
            # d4/dx4 exp(sin x)
            return f(s) * (c**4 - 6 * s * c**2 - 4 * c**2 + 3 * s**2 + s)
        return d1

    ns = np.array([32, 64, 128, 256])
    errors = [_periodic_error(n, op, exact) for n in ns]
    slope = -np.polyfit(np.log(ns), np.log(errors), 1)[0]
    assert abs(slope - order) < 0.25, (name, slope, errors)


def test_operator_errors_name_the_problem():
    grid = sk.Grid((8,))
    p1 = sk.pad(jnp.ones(8), sk.Periodic(), 1, grid.spacing)
    with pytest.raises(ShapeError, match="needs 2 ghost layers"):
        sk.laplacian(p1, grid.spacing, order=4)
    with pytest.raises(InputError, match="order must be one of"):
        sk.laplacian(p1, grid.spacing, order=3)
    with pytest.raises(InputError, match="expects a Padded"):
        sk.laplacian(jnp.ones(8), grid.spacing)


def test_rusanov_takes_a_constant_speed_as_the_readme_writes_it():
    """``Rusanov(speed)``: a number was accepted and failed when called ("'float' object is not
    callable", deep in the rollout)."""
    p = sk.pad(jnp.array([1.0, 2.0, 4.0, 3.0, 0.5]), sk.Periodic(), 1, (0.5,))
    constant = sk.flux_divergence(p, lambda u: -2.0 * u, 0.5, sk.Rusanov(-2.0))
    as_function = sk.flux_divergence(p, lambda u: -2.0 * u, 0.5, sk.Rusanov(lambda u: jnp.full_like(u, 2.0)))
    assert np.array_equal(np.asarray(constant), np.asarray(as_function))
    # for a linear flux the Rusanov flux with |c| is upwind: -c du/dx by one-sided differences
    u = np.array([1.0, 2.0, 4.0, 3.0, 0.5])
    np.testing.assert_allclose(np.asarray(constant), -2.0 * (np.roll(u, -1) - u) / 0.5, rtol=1e-14)
