import numpy as np
import pytest

import simkit
from simkit import models


def _decay(t, y, p):
    return -p["k"] * y


def test_model_library_has_the_promised_models_with_sources():
    names = models.names("ode")
    assert len(names) >= 14
    for required in ["lorenz", "rossler", "lotka_volterra", "sir", "seir", "van_der_pol",
                     "van_der_pol_stiff", "damped_driven_pendulum", "double_pendulum", "kepler",
                     "arenstorf", "robertson", "oregonator", "hires", "brusselator",
                     "fitzhugh_nagumo", "hodgkin_huxley", "pollu"]:
        assert required in names
    for name in names:
        m = models.get(name)
        assert m.name == name
        assert len(m.source) > 20, name
        assert m.t_span is not None
        assert np.shape(m.y0) == (m.n_states,)
        dy = np.asarray(m.rhs(0.0, np.asarray(m.y0), m.params))
        if m.diffusion is not None:
            g = np.asarray(m.diffusion(0.0, np.asarray(m.y0), m.params))
            assert g.shape == (m.n_states,) and np.all(np.isfinite(g)), name
        assert dy.shape == (m.n_states,) and np.all(np.isfinite(dy)), name


def test_stiffness_hints():
    assert models.get("robertson").stiff and models.get("van_der_pol_stiff").stiff
    assert not models.get("lorenz").stiff


def test_get_unknown_model_lists_names():
    with pytest.raises(simkit.ParameterError, match="lorenz"):
        models.get("lorentz")


def test_with_params_and_unknown_parameter():
    m = models.get("lorenz", rho=35.0)
    assert m.params["rho"] == 35.0 and m.params["sigma"] == 10.0
    with pytest.raises(simkit.ParameterError, match=r"valid names are \['sigma', 'rho', 'beta'\]"):
        m.with_params(gamma=1.0)


def test_replace_returns_new_model():
    m = models.get("lorenz")
    m2 = m.replace(y0=[2.0, 2.0, 2.0])
    assert np.asarray(m.y0)[0] == 1.0 and np.asarray(m2.y0)[0] == 2.0


def test_model_validates_shapes():
    with pytest.raises(simkit.ShapeError, match="state_names has 2"):
        simkit.ODEModel(rhs=_decay, params={"k": 1.0}, y0=[1.0, 2.0, 3.0], state_names=("a", "b"))
    with pytest.raises(simkit.ShapeError, match="1-D"):
        simkit.ODEModel(rhs=_decay, params={"k": 1.0}, y0=[[1.0]], state_names=("a",))
    with pytest.raises(simkit.ShapeError, match="unique"):
        simkit.ODEModel(rhs=_decay, params={"k": 1.0}, y0=[1.0, 1.0], state_names=("a", "a"))
    with pytest.raises(simkit.InputTypeError, match="not the string 'ab'"):  # was split into ('a', 'b')
        simkit.ODEModel(rhs=_decay, params={"k": 1.0}, y0=[1.0, 1.0], state_names="ab")


def test_model_defaults_are_checked_as_overrides_are():
    """A default of NaN ran 100,000 steps to "max_steps reached"; a string failed in NumPy."""
    with pytest.raises(simkit.ParameterError, match="'k' is not finite"):
        simkit.ODEModel(rhs=_decay, params={"k": np.nan}, y0=[1.0], state_names=("a",))
    for bad in ("fast", None):
        with pytest.raises(simkit.InputTypeError, match="'k' must be a number"):
            simkit.ODEModel(rhs=_decay, params={"k": bad}, y0=[1.0], state_names=("a",))


def test_state_index():
    m = models.get("sir")
    assert m.state_index("I") == 1
    with pytest.raises(simkit.ParameterError, match="states are"):
        m.state_index("Q")


def test_models_keep_their_own_arrays():
    """A model (or a wall) held the caller's NumPy arrays: writing into them afterwards
    changed the model's y0, parameters, initial field or wall values, and every later solve
    (found by probing)."""
    from simkit import stencil as sk

    y0, rates = np.array([1.0, 2.0]), np.array([0.5, 1.0])
    m = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": rates}, y0=y0, state_names=("a", "b"))
    before = simkit.solve(m, (0.0, 1.0), saveat=2).ys[-1]
    y0[:], rates[:] = 7.0, 3.0
    np.testing.assert_array_equal(simkit.solve(m, (0.0, 1.0), saveat=2).ys[-1], before)
    np.testing.assert_allclose(before, [np.exp(-0.5), 2 * np.exp(-1.0)], rtol=1e-5)
    with pytest.raises(ValueError, match="read-only"):  # immutable, as the docs say
        m.y0[0] = 1.0
    assert m.replace(name="again").y0 is m.y0  # its own array is not copied again
    field = np.ones((1, 8))
    pde = sk.PDEModel(rhs=lambda t, u, p, s: -u, grid=sk.Grid((8,)), bcs=sk.Periodic(), params={}, u0=field)
    field[:] = 0.0
    np.testing.assert_array_equal(pde.u0, 1.0)
    face = np.ones(8)  # a wall's values, as a boundary condition holds them
    walls = (sk.Dirichlet(face), sk.Neumann(face), sk.Robin(value=face))
    face[:] = 5.0
    assert all((np.asarray(w.flux if isinstance(w, sk.Neumann) else w.value) == 1.0).all() for w in walls)
