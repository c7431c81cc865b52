"""Ghost filling: exactness of the boundary closures, periodic wrap, errors."""

import jax.numpy as jnp
import numpy as np
import pytest

from simkit import InputError, ShapeError
from simkit import stencil as sk


@pytest.mark.parametrize("width", [1, 2, 3])
@pytest.mark.parametrize("kind", ["dirichlet", "neumann", "robin"])
def test_ghosts_exact_for_polynomials_of_degree_2w_minus_1(kind, width):
    grid = sk.Grid((12,), -0.5, 1.7)
    rng = np.random.default_rng(width)
    coeffs = rng.standard_normal(2 * width)
    poly = np.polynomial.Polynomial(coeffs)
    dpoly = poly.deriv()
    lo, hi = grid.lower[0], grid.upper[0]

    def condition(x, outward):
        if kind == "dirichlet":
            return sk.Dirichlet(float(poly(x)))
        if kind == "neumann":
            return sk.Neumann(float(outward * dpoly(x)))
        return sk.Robin(alpha=2.0, beta=0.5, value=float(2.0 * poly(x) + 0.5 * outward * dpoly(x)))

    bcs = ((condition(lo, -1.0), condition(hi, 1.0)),)
    x = grid.coordinates()
    padded = sk.pad(jnp.asarray(poly(x)), bcs, width, grid.spacing)
    dx = grid.spacing[0]
    x_all = lo + (np.arange(-width, 12 + width) + 0.5) * dx
    np.testing.assert_allclose(padded.data, poly(x_all), rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(padded.interior, poly(x))


def test_classic_width_one_closures():
    grid = sk.Grid((4,))
    u = jnp.asarray([1.0, 2.0, 3.0, 4.0])
    d = sk.pad(u, sk.Dirichlet(0.5), 1, grid.spacing).data
    np.testing.assert_allclose([d[0], d[-1]], [2 * 0.5 - 1.0, 2 * 0.5 - 4.0])
    n = sk.pad(u, sk.Neumann(2.0), 1, grid.spacing).data
    np.testing.assert_allclose([n[0], n[-1]], [1.0 + 2.0 * 0.25, 4.0 + 2.0 * 0.25])


def test_periodic_wrap_and_corners_2d():
    grid = sk.Grid((4, 5))
    u = jnp.arange(20.0).reshape(4, 5)
    p = sk.pad(u, sk.Periodic(), 2, grid.spacing)
    np.testing.assert_array_equal(p.data, np.pad(np.asarray(u), 2, mode="wrap"))
    # mixed: periodic in x, walls in y; leading component axes carried along
    both = sk.pad(jnp.stack([u, -u]), (sk.Periodic(), (sk.Dirichlet(0.0), sk.Neumann(0.0))), 1, grid.spacing, ndim=2)
    assert both.data.shape == (2, 6, 7)
    np.testing.assert_array_equal(both.data[1], -both.data[0])
    np.testing.assert_array_equal(both.data[0, 1:-1, 0], -u[:, 0])  # Dirichlet 0: odd reflection
    np.testing.assert_array_equal(both.data[0, 1:-1, -1], u[:, -1])  # Neumann 0: even reflection


def test_boundary_errors():
    grid = sk.Grid((6,))
    with pytest.raises(InputError, match="Periodic must be set on both sides"):
        sk.pad(jnp.ones(6), ((sk.Periodic(), sk.Dirichlet(0.0)),), 1, grid.spacing)
    with pytest.raises(ShapeError, match="2 given for 1 axes"):
        sk.pad(jnp.ones(6), (sk.Periodic(), sk.Periodic()), 1, grid.spacing)
    with pytest.raises(InputError, match="alpha and beta"):
        sk.Robin(alpha=0.0, beta=0.0)
    with pytest.raises(InputError, match="lower < upper"):
        sk.Grid((8,), 1.0, 0.0)
    with pytest.raises(ShapeError, match="1 to 3 axes"):
        sk.Grid((4, 4, 4, 4))


@pytest.mark.parametrize("width", [1, 2])
def test_windows_are_blocks_of_the_padded_array(width):
    """Operators read windows of a padded field that is never built: every shifted view
    (corners included) and every window equals the block of the materialised padded array,
    bit for bit, for each kind of condition and for a Padded made from a padded array."""
    grid = sk.Grid((7, 9), 0.0, 1.0)
    u = jnp.asarray(np.random.default_rng(1).random((2, 7, 9)))
    w = width
    for bcs in [sk.Periodic(), sk.Dirichlet(0.3), (sk.Neumann(0.5), (sk.Dirichlet(1.0), sk.Robin(1.0, 2.0, 0.1)))]:
        p = sk.pad(u, bcs, w, grid.spacing, ndim=2)
        data = np.asarray(p.data)
        assert data.shape == p.shape == (2, 7 + 2 * w, 9 + 2 * w)
        q = sk.Padded(data, w, 2)
        np.testing.assert_array_equal(q.data, data)
        for o0 in range(-w, w + 1):
            for o1 in range(-w, w + 1):
                block = data[:, w + o0: w + o0 + 7, w + o1: w + o1 + 9]
                np.testing.assert_array_equal(p.shifted({0: o0, 1: o1}), block)
                np.testing.assert_array_equal(q.shifted({0: o0, 1: o1}), block)
        np.testing.assert_array_equal(p.window({0: (w - 1, w + 8)}), data[:, w - 1: w + 8, w: w + 9])
        np.testing.assert_array_equal(p.component(1).data, data[1])
