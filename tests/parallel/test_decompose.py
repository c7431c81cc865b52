"""Domain decomposition on 4 simulated CPU devices: meshes, agreement with one device, pmap,
gradients, global reductions, adaptive time steps. (Bit-for-bit identity on 2/4/8 devices is
asserted in test_exact_strict.py, where XLA's FMA contraction is off.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simkit
from simkit import models, parallel
from simkit import stencil as sk

DEVICES = jax.devices()


def _dt(model, fraction=0.5):
    explicit = model.name == "cahn_hilliard"
    rho, _ = sk.spectral_radius(model, model.params, model.u0, explicit_only=explicit)
    return fraction * 2.5 / rho, (sk.IMEXEuler() if explicit else sk.RK4())


def test_mesh_choice_and_errors():
    assert parallel.mesh_shape_for((64, 64), 4) == (2, 2)  # smallest halo surface
    assert parallel.mesh_shape_for((256, 16), 4) == (4, 1)  # slabs across the long axis
    assert parallel.mesh_shape_for((128,), 4) == (4,)
    assert parallel.mesh_shape_for((24, 24, 24), 8) == (2, 2, 2)
    with pytest.raises(simkit.ShapeError, match=r"device counts that work: \[1, 2, 3, 5, 6, 10, 15\]"):
        parallel.mesh_shape_for((30,), 4)
    with pytest.raises(simkit.ShapeError, match="does not split evenly"):
        parallel.mesh_for(sk.Grid((30, 30)), shape=(4, 1))
    mesh = parallel.mesh_for(sk.Grid((64, 32)))  # a tie in halo surface: fewer split axes
    assert mesh.axis_names == ("x", "y") and mesh.devices.shape == (4, 1)


@pytest.mark.parametrize("name", models.names("pde"))
def test_every_library_model_decomposed_matches_one_device(name):
    m = models.get(name)
    dt, stepper = _dt(m)
    base = sk.integrate(m, dt=dt, steps=8, save_every=4, stepper=stepper)
    # every library model runs stably at half its stable step (and the comparison means something)
    assert base.us.shape == (3,) + m.u0.shape and np.all(np.isfinite(base.us)), name
    shapes = [(4,) if m.grid.ndim == 1 else (2, 2) + (1,) * (m.grid.ndim - 2)]
    scale = np.abs(base.us).max()
    for shape in shapes:
        mesh = parallel.mesh_for(m.grid, DEVICES[: int(np.prod(shape))], shape=shape)
        out = parallel.integrate(m, mesh=mesh, dt=dt, steps=8, save_every=4, stepper=stepper)
        # FMA contraction may differ by an ulp per operation; the IMEX solve's global inner
        # products sum in another order: agreement to its tolerance
        bound = 1e-9 if isinstance(stepper, sk.IMEXEuler) else 1e-13
        assert np.abs(out.us - base.us).max() <= bound * scale, (name, shape)
        np.testing.assert_array_equal(out.ts, base.ts)
        # the parameter values travel with the result and its file (they were dropped)
        assert out.params.keys() == base.params.keys() and all(
            np.array_equal(out.params[k], base.params[k]) for k in base.params), name


def test_pmap_equals_shard_map_and_rejects_2d_meshes():
    m = models.get("heat_2d")
    slab = parallel.mesh_for(m.grid, shape=(4, 1))
    a = parallel.integrate(m, mesh=slab, dt=0.005, steps=10, save_every=5)
    b = parallel.integrate(m, mesh=slab, dt=0.005, steps=10, save_every=5, transform="pmap")
    np.testing.assert_array_equal(a.us, b.us)
    burgers = models.get("burgers")
    mesh = parallel.mesh_for(burgers.grid)
    np.testing.assert_array_equal(
        parallel.integrate(burgers, mesh=mesh, dt=0.002, steps=10).us,
        parallel.integrate(burgers, mesh=mesh, dt=0.002, steps=10, transform="pmap").us)
    with pytest.raises(simkit.InputError, match="1-D decompositions only"):
        parallel.integrate(m, mesh=parallel.mesh_for(m.grid, shape=(2, 2)), dt=0.005, steps=2, transform="pmap")


def test_gradient_through_the_decomposed_run():
    m = models.get("heat_2d")

    def loss(diffusivity, mesh=None):
        run = sk.rollout if mesh is None else parallel.rollout
        kwargs = {} if mesh is None else {"mesh": mesh}
        us, _, _ = run(m, {"diffusivity": diffusivity}, dt=0.005, steps=20, **kwargs)
        return jnp.sum(us[-1] ** 2)

    single = jax.grad(loss)(0.01)
    for shape in [(4, 1), (2, 2)]:
        g = jax.grad(loss)(0.01, parallel.mesh_for(m.grid, shape=shape))
        assert abs(float(g - single)) <= 1e-13 * abs(float(single)), shape


def test_global_reductions_and_adaptive_cfl_step():
    """Burgers with dt from a CFL bound on max|u| (pmax over the mesh) and mass from psum."""
    m = models.get("burgers")
    dx = m.grid.spacing[0]

    def cfl(u, params, space):
        return 0.5 / (space.max(jnp.abs(u))[0] / dx + 2 * params["viscosity"] / dx**2)

    mass = {"mass": lambda u, space: space.integral(u[0]), "peak": lambda u, space: space.max(jnp.abs(u[0]))}
    base = sk.integrate(m, dt=cfl, steps=200, save_every=50, diagnostics=mass)
    out = parallel.integrate(m, dt=cfl, steps=200, save_every=50, diagnostics=mass)
    assert np.all(np.diff(np.diff(base.ts)) > 0)  # the step grows as the wave's peak decays
    np.testing.assert_allclose(out.ts, base.ts, rtol=1e-13)
    np.testing.assert_allclose(out.us, base.us, atol=1e-13)
    np.testing.assert_allclose(out.diagnostics["mass"], base.diagnostics["mass"], atol=1e-13)
    np.testing.assert_array_equal(out.diagnostics["peak"], np.abs(out.us[:, 0]).max(axis=1))


@settings(max_examples=8, deadline=None)
@given(nx=st.sampled_from([8, 12, 16, 24]), ny=st.sampled_from([8, 12, 16]),
       shape=st.sampled_from([(1, 1), (2, 1), (1, 2), (4, 1), (2, 2), (1, 4)]),
       walls=st.booleans(), seed=st.integers(0, 1000))
def test_property_random_grids_and_meshes(nx, ny, shape, walls, seed):
    grid = sk.Grid((nx, ny), 0.0, (1.0, 0.7))
    if nx % shape[0] or ny % shape[1] or nx // shape[0] < 2 or ny // shape[1] < 2:
        with pytest.raises(simkit.ShapeError):
            parallel.mesh_for(grid, DEVICES[: shape[0] * shape[1]], shape=shape)
        return
    bcs = ((sk.Dirichlet(0.3), sk.Neumann(-0.2)), sk.Periodic()) if walls else sk.Periodic()
    u0 = np.random.default_rng(seed).standard_normal((1, nx, ny))
    m = sk.PDEModel(rhs=lambda t, u, p, s: p["d"] * sk.laplacian(s.pad(u), s.spacing), grid=grid, bcs=bcs,
                    params={"d": 0.01}, u0=u0)
    # dt is under a fortieth of the stable step on every grid drawn: no stability estimate (a compile
    # per grid); the comparison is the subject
    base = sk.integrate(m, dt=1e-3, steps=6, save_every=3, check_stability=False)
    mesh = parallel.mesh_for(grid, DEVICES[: shape[0] * shape[1]], shape=shape)
    out = parallel.integrate(m, mesh=mesh, dt=1e-3, steps=6, save_every=3, check_stability=False)
    assert np.abs(out.us - base.us).max() <= 1e-14 * np.abs(base.us).max()


def test_array_wall_values_decomposed():
    """An array wall value (the face's shape) gives the single-device run where each device
    holds the wall's face whole; where the decomposition cuts the face, a clear error."""
    grid = sk.Grid((16, 12), 0.0, (1.0, 0.7))
    rng = np.random.default_rng(0)
    u0 = rng.standard_normal((1, 16, 12))

    def model(bcs):
        return sk.PDEModel(rhs=lambda t, u, p, s: p["d"] * sk.laplacian(s.pad(u), s.spacing), grid=grid, bcs=bcs,
                           params={"d": 0.01}, u0=u0)

    walls = model(((sk.Dirichlet(rng.random(12)), sk.Neumann(rng.random(12))), sk.Periodic()))
    slabs = parallel.mesh_for(grid, DEVICES[:4], shape=(4, 1))
    base = sk.integrate(walls, dt=1e-3, steps=6, save_every=3, check_stability=False)
    out = parallel.integrate(walls, mesh=slabs, dt=1e-3, steps=6, save_every=3, check_stability=False)
    assert np.abs(out.us - base.us).max() <= 1e-14 * np.abs(base.us).max()
    cut = model((sk.Neumann(0.0), (sk.Dirichlet(rng.random(16)), sk.Neumann(0.0))))
    with pytest.raises(simkit.ShapeError, match=r"halo_pad \(this device's block: an array wall value needs its face "
                                                r"whole on each device.*face's shape \(4,\)"):
        parallel.integrate(cut, mesh=slabs, dt=1e-3, steps=6, save_every=3, check_stability=False)
