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


def test_a_float32_field_keeps_its_dtype_against_float64_wall_values():
    """Wall values given as float64 arrays (for example from parameters in a float64 process)
    make float64 ghosts; the windows of a float32 field stay float32, ghosts rounded to it."""
    grid = sk.Grid((6, 5), 0.0, 1.0)
    u = jnp.asarray(np.random.default_rng(2).random((6, 5)), jnp.float32)
    wall = jnp.asarray(np.linspace(0.1, 0.9, 5), jnp.float64)  # one value per point of the face
    p = sk.pad(u, ((sk.Dirichlet(wall), sk.Neumann(0.25)), sk.Periodic()), 1, grid.spacing)
    assert p.data.dtype == p.shifted({0: -1, 1: 1}).dtype == p.window({0: (0, 7)}).dtype == jnp.float32
    ghosts = np.asarray(p.shifted({0: -1}))[0]  # the row below the first: 2 wall - u[0]
    np.testing.assert_allclose(ghosts, 2 * np.asarray(wall) - np.asarray(u[0]), rtol=1e-6)


@pytest.mark.parametrize("width", [1, 2])
def test_wall_values_of_the_face_shape_hold_on_every_axis(width):
    """An array value (the face's shape) once held only on the first grid axis: on the others
    every ghost took its first entry, silently. Here the condition each wall's ghosts encode,
    on a 3-D field with two components, the corner ghosts included (the value continued into the
    ghost layers of the axes padded before, by the polynomial of the ghosts' degree: for
    width 1, linear)."""
    rng = np.random.default_rng(0)
    shape = (6, 7, 8)
    u = rng.random((2,) + shape)
    dx = (0.5, 0.25, 0.2)
    faces = {axis: rng.random(shape[:axis] + shape[axis + 1:]) for axis in range(3)}
    bcs = [(sk.Dirichlet(faces[0]), sk.Neumann(0.0)), (sk.Neumann(faces[1]), sk.Dirichlet(1.0)),
           (sk.Neumann(0.0), sk.Dirichlet(faces[2]))]
    data = np.asarray(sk.pad(u, bcs, width, dx, ndim=3).data)
    w = width

    def edge_padded(face, axis):  # the face over the padded extent of the axes padded before
        for i, b in enumerate(b for b in range(3) if b != axis):  # width 1: linear continuation
            if b < axis:
                first, last = np.take(face, [0], i), np.take(face, [-1], i)
                before, after = 2 * first - np.take(face, [1], i), 2 * last - np.take(face, [-2], i)
                face = np.concatenate([before, face, after], axis=i)
        return face

    def side(axis, index):  # the padded array at one index of axis, interior along later axes
        sl = [slice(None)] * 4
        sl[1 + axis] = index
        for b in range(axis + 1, 3):
            sl[1 + b] = slice(w, w + shape[b])
        return data[tuple(sl)]

    # Dirichlet on the lower wall of axis 0: the interpolant through the ghosts and the interior
    # points nearest the wall is `value` at the face; for width 1 the mean of ghost and first point
    if w == 1:
        np.testing.assert_allclose((side(0, 0) + side(0, 1)) / 2, np.broadcast_to(faces[0], (2,) + faces[0].shape),
                                   rtol=1e-13)
        # Neumann on the lower wall of axis 1: (first point - ghost) / dx = -du/dn ... du/dn = flux,
        # n outward (-axis): (ghost - first) / dx = flux
        np.testing.assert_allclose((side(1, 0) - side(1, 1)) / dx[1], np.broadcast_to(edge_padded(faces[1], 1),
                                   (2,) + edge_padded(faces[1], 1).shape), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose((side(2, -1) + side(2, -2)) / 2, np.broadcast_to(edge_padded(faces[2], 2),
                                   (2,) + edge_padded(faces[2], 2).shape), rtol=1e-13)
    # any width: the same ghosts as with the wall's own axis first, i.e. the transposed problem
    swapped_bcs = [(sk.Neumann(faces[1]), sk.Dirichlet(1.0)), (sk.Dirichlet(faces[0]), sk.Neumann(0.0)),
                   (sk.Neumann(0.0), sk.Dirichlet(faces[2].T))]
    swapped = np.asarray(sk.pad(np.swapaxes(u, 1, 2), swapped_bcs, w, (dx[1], dx[0], dx[2]),
                                ndim=3).window({0: (0, w)}))
    ours = np.swapaxes(np.asarray(sk.pad(u, bcs, w, dx, ndim=3).window({1: (0, w)})), 1, 2)
    np.testing.assert_allclose(ours, swapped, rtol=1e-13, atol=1e-13)


def test_wall_values_of_another_shape_are_refused():
    grid = sk.Grid((16, 12))
    rhs = lambda t, u, p, s: sk.laplacian(s.pad(u), s.spacing)  # noqa: E731
    for value in (np.ones((16, 1)), np.ones(12), np.ones((12, 16))):
        with pytest.raises(ShapeError, match=r"the lower wall of grid axis 1 has a Dirichlet value of shape .* the "
                                             r"face's shape \(16,\)"):
            sk.PDEModel(rhs=rhs, grid=grid, bcs=[sk.Neumann(0.0), (sk.Dirichlet(value), sk.Neumann(0.0))],
                        params={}, u0=np.zeros((1, 16, 12)))
    with pytest.raises(ShapeError, match=r"pad: the lower wall of grid axis 0 has a Dirichlet value of shape \(3,\)"):
        sk.pad(jnp.zeros(6), sk.Dirichlet(np.array([1.0, 5.0, 9.0])), 2, (0.125,))


def test_corner_ghosts_of_varying_wall_values_are_those_of_a_smooth_field():
    # u = x^2 y^2 on [0.5, 1.5]^2 with walls holding its values or slopes (arrays along the
    # face): the biharmonic (13 points, the corner ghosts included) is 8 everywhere. With the
    # wall value continued by its edge into the corner ghosts the four corner cells were off
    # by 7.5e4 at n = 12, growing as h^-3
    f = lambda x, y: x**2 * y**2  # noqa: E731
    grid = sk.Grid((12, 12), 0.5, 1.5)
    c = grid.coordinates(0)
    # Neumann on the lower y wall: du/dn (outward, -y) = -2 x^2 y at y = 0.5
    bcs = [(sk.Dirichlet(f(0.5, c)), sk.Dirichlet(f(1.5, c))), (sk.Neumann(-(c**2)), sk.Dirichlet(f(c, 1.5)))]
    x, y = grid.meshgrid()
    # (the public biharmonic refuses walls: exact here, since u is quadratic along each axis,
    # but not for fields that are not cubic near a wall; its formula reads the corner ghosts)
    from simkit.stencil.operators import _biharmonic

    value = np.asarray(_biharmonic(sk.pad(jnp.asarray(f(x, y)), bcs, 2, grid.spacing), grid.spacing))
    np.testing.assert_allclose(value, 8.0, atol=1e-6)
    with pytest.raises(InputError, match="biharmonic: a wall's ghosts"):
        sk.biharmonic(sk.pad(jnp.asarray(f(x, y)), bcs, 2, grid.spacing), grid.spacing)
    # u = x^4 / 24 with exact Neumann data: d4/dx4 = 1 everywhere, the wall ghosts' value
    # was 0 in the first cell (and 0.96 in the second)
    x1 = (np.arange(16) + 0.5) / 16
    p1 = sk.pad(jnp.asarray(x1**4 / 24), [(sk.Neumann(0.0), sk.Neumann(1 / 6))], 2, (1 / 16,))
    assert abs(float(_biharmonic(p1, 1 / 16)[0])) < 1e-9  # what the refusal guards against


def test_non_finite_wall_values_and_a_singular_robin_wall_are_named():
    """A NaN wall value failed later as "the field became non-finite ... unstable"; a Robin
    wall with beta = -alpha dx / 2 failed in NumPy's bare "Singular matrix"."""
    grid = sk.Grid((16,))
    with pytest.raises(InputError, match="lower wall of grid axis 0 has a non-finite Dirichlet value"):
        sk.PDEModel(rhs=lambda t, u, p, space: u, grid=grid, bcs=sk.Dirichlet(np.nan), params={}, u0=np.zeros((1, 16)))
    with pytest.raises(InputError, match=r"Robin\(alpha=1, beta=-0.05\) on a grid of spacing 0.1"):
        sk.pad(jnp.ones(10), sk.Robin(1.0, -0.05), 1, (0.1,)).data  # (ghosts are built when read)
