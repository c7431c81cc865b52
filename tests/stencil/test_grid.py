"""`Grid` and `PDEModel` construction: refused inputs name the argument."""

import numpy as np
import pytest

import simkit
from simkit import stencil as sk


@pytest.mark.parametrize("shape", [(8.7,), (8, 2.5), (float("nan"),)])
def test_a_fractional_shape_is_refused_not_truncated(shape):
    with pytest.raises(simkit.InputError, match=r"Grid: shape .* must be a whole number"):
        sk.Grid(shape)


@pytest.mark.parametrize("shape", [("8",), (True, 8)])
def test_a_shape_that_is_not_numbers_is_a_type_error(shape):
    with pytest.raises(simkit.InputTypeError, match=r"Grid: shape"):
        sk.Grid(shape)


def test_whole_shapes_in_any_spelling():
    assert sk.Grid(8).shape == sk.Grid((8.0,)).shape == sk.Grid(np.array([8])).shape == (8,)
    assert sk.Grid((8, 8)).with_shape((np.int64(16), 4.0)).shape == (16, 4)


def test_meshgrid_and_the_deprecated_mesh():
    g = sk.Grid((4, 3))
    x, y = g.meshgrid()
    assert x.shape == y.shape == (4, 3) and np.allclose(x[:, 0], g.coordinates(0))
    with pytest.warns(DeprecationWarning, match=r"Grid.meshgrid\(\)"):
        old = g.mesh()
    assert all(np.array_equal(a, b) for a, b in zip(old, (x, y)))


def _model(bcs):
    return sk.PDEModel(rhs=lambda t, u, p, s: u, grid=sk.Grid((8,)), bcs=bcs, params={},
                       u0=np.zeros((1, 8)))


@pytest.mark.parametrize("bcs, hint", [("periodic", r"Periodic\(\)"), ("neumann", r"Neumann\(0.0\)"),
                                       ([("dirichlet", sk.Neumann(0.0))], r"Dirichlet\(0.0\)")])
def test_boundary_conditions_given_as_strings_name_the_objects(bcs, hint):
    with pytest.raises(simkit.InputTypeError, match=rf"bcs takes boundary-condition objects.*{hint}") as info:
        _model(bcs)
    assert "Robin(alpha, beta, value)" in str(info.value)


def test_boundary_conditions_of_another_type_name_the_objects():
    with pytest.raises(simkit.InputTypeError, match=r"bcs must be a boundary condition \(simkit.stencil.Periodic"):
        _model(5)
    assert _model(sk.Periodic()).bcs == sk.Periodic()
