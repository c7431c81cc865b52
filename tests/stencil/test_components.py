"""A multi-component field stepped with its components apart (simkit/stencil/components.py):
the rhs evaluated per component equals the stacked rhs, for the library's models and for
operations that must be stacked back; rollouts, gradients and vmaps agree with the stacked
time loop, and the compiled time loop holds no stack of the components."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simkit import models
from simkit import stencil as sk
from simkit.stencil import stepping
from simkit.stencil.operators import _biharmonic
from simkit.stencil.components import Components, split_rhs
from simkit.stencil.pde import Space

MULTI = [n for n in models.names("pde") if models.get(n).u0.shape[0] > 1]


def _both(rhs, u, t=0.3):
    apart = jax.jit(lambda u: split_rhs(rhs)(t, Components.of(u)).stacked())(u)
    return np.asarray(apart), np.asarray(jax.jit(lambda u: rhs(t, u))(u))


def test_library_models_with_components():
    assert {"gray_scott", "fitzhugh_nagumo_2d", "brusselator_2d", "wave"} <= set(MULTI)


@pytest.mark.parametrize("name", MULTI)
def test_rhs_apart_equals_the_stacked_rhs(name):
    m = models.get(name)
    p = {k: jnp.asarray(v) for k, v in m.params.items()}
    apart, stacked = _both(lambda t, u: m.rhs(t, u, p, m.space), jnp.asarray(m.u0))
    # the same operations on the same numbers; XLA may contract a product and a sum into one
    # fused multiply-add in one form and not the other: a few units in the last place
    np.testing.assert_allclose(apart, stacked, rtol=1e-14, atol=1e-14 * np.abs(stacked).max())


def test_operations_across_components_are_stacked_back():
    """A sum over the components, a gather, a reversed component order, a custom JVP rule
    and a cumulative sum are not taken apart (the components are stacked back for them): the
    values and gradients are the stacked rhs's, to rounding."""
    space = models.get("gray_scott").space

    def rhs(t, u):
        total = jnp.sum(u, axis=0)
        swapped = u[jnp.array([1, 0])]
        lap = sk.laplacian(space.pad(u), space.spacing)
        return (jnp.stack([total, jax.nn.relu(u[1] - 0.5)]) + 0.1 * swapped[::-1] * t
                + jnp.cumsum(u, axis=0) * 1e-3 + 1e-6 * lap)

    u = jnp.asarray(np.random.default_rng(3).random((2, 128, 128)))
    apart, stacked = _both(rhs, u)
    np.testing.assert_allclose(apart, stacked, rtol=1e-14, atol=1e-14)
    loss_apart = lambda u: jnp.sum(split_rhs(rhs)(0.3, Components.of(u)).stacked() ** 2)
    loss = lambda u: jnp.sum(rhs(0.3, u) ** 2)
    np.testing.assert_allclose(jax.jit(jax.grad(loss_apart))(u), jax.jit(jax.grad(loss))(u), rtol=1e-12, atol=1e-12)



def test_a_first_axis_of_one_broadcasts_over_the_components():
    """A ``(1, nx, ny)`` array times the field (one rate field for every component): lax
    keeps that size-1 broadcast, and the parts were zipped with its one row, so the product
    held the first component only (a sum over components silently wrong, a plain product a
    bare TypeError; found by probing)."""
    rng = np.random.default_rng(0)
    rate = jnp.asarray(rng.uniform(1.0, 2.0, (1, 128, 128)))

    def rhs(t, u):
        s = (rate * u).sum(0)
        return jnp.stack([-s, s]) - rate * u + jnp.ones((1, 1, 128)) * t

    u = jnp.asarray(rng.uniform(0.5, 1.0, (2, 128, 128)))
    apart, stacked = _both(rhs, u)
    np.testing.assert_allclose(apart, stacked, rtol=1e-14, atol=1e-14)

def test_components_arithmetic():
    a = Components.of(jnp.arange(6.0).reshape(2, 3))
    b = Components.of(jnp.ones((2, 3)))
    out = (2.0 * a + b / 4 - a * b - 1.0 + (-a)).stacked()
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(out, 2 * x + 0.25 - x - 1 - x)
    assert a.shape == (2, 3) and a.size == 6 and a.dtype == jnp.float64


def _stacked_loop(monkeypatch):
    monkeypatch.setattr(stepping, "components_apart", lambda program, u0: False)


@pytest.mark.parametrize("stepper", [sk.ForwardEuler(), sk.RK4()], ids=lambda s: type(s).__name__)
def test_rollout_apart_equals_the_stacked_loop(stepper, monkeypatch):
    m = models.get("gray_scott")  # 2 x 128^2: the components are carried apart
    assert stepping.components_apart(stepping.build_program(m, dt=1.0, steps=2, save_every=1, stepper=stepper,
                                                            diagnostics=None), m.u0)

    def run(d):
        return sk.rollout(m, {"diffusivity_u": d}, dt=1.0, steps=6, save_every=3, stepper=stepper)[0]

    def loss(d):
        return jnp.sum(run(d)[-1, 1] ** 2)

    # reverse mode through Euler's loop; forward mode through RK4's (the reverse-mode RK4
    # test took 20 s alone, 11 s with forward mode)
    derivative = jax.grad(loss) if isinstance(stepper, sk.ForwardEuler) else jax.jacfwd(loss)
    apart, grad_apart = jax.jit(run)(2e-5), jax.jit(derivative)(2e-5)
    _stacked_loop(monkeypatch)
    jax.clear_caches()
    stacked, grad_stacked = jax.jit(run)(2e-5), jax.jit(derivative)(2e-5)
    scale = np.abs(np.asarray(stacked)).max()
    np.testing.assert_allclose(apart, stacked, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(grad_apart, grad_stacked, rtol=1e-10)


def test_imex_apart_equals_the_stacked_loop(monkeypatch):
    """IMEX Euler: the linear part taken apart too, BiCGStab on the components (its inner
    products summed component by component)."""
    m = models.get("gray_scott")
    run = jax.jit(lambda: sk.rollout(m, dt=5.0, steps=4, save_every=2, stepper=sk.IMEXEuler())[0])
    apart = run()
    _stacked_loop(monkeypatch)
    jax.clear_caches()
    stacked = jax.jit(lambda: sk.rollout(m, dt=5.0, steps=4, save_every=2, stepper=sk.IMEXEuler())[0])()
    np.testing.assert_allclose(apart, stacked, rtol=0, atol=1e-12 * np.abs(np.asarray(stacked)).max())


def test_vmapped_rollout_apart_equals_its_members():
    m = models.get("gray_scott")
    u0 = jnp.asarray(m.u0)
    members = jnp.stack([u0, 0.9 * u0])
    final = lambda u: sk.rollout(m, u0=u, dt=1.0, steps=4, save_every=4, stepper=sk.SSPRK3())[0][-1]
    batched = jax.jit(jax.vmap(final))(members)
    single = jax.jit(final)
    np.testing.assert_allclose(batched, np.stack([single(u) for u in members]), rtol=1e-13, atol=1e-15)


def _loop_concatenates(text: str) -> int:
    """Concatenates in the time loop: the `while` bodies and every computation they call."""
    computations = {c.split(" ", 1)[0].lstrip("%"): c for c in re.split(r"\n(?=%|ENTRY)", text)}
    todo, seen, count = re.findall(r"body=%([\w.\-]+)", text), set(), 0
    while todo:
        name = todo.pop()
        if name in seen or name not in computations:
            continue
        seen.add(name)
        count += computations[name].count(" concatenate(")
        todo += re.findall(r"%([\w.\-]+)", computations[name])  # names of called computations among them
    return count


def test_time_loop_holds_no_stack_of_the_components(monkeypatch):
    """The point of carrying the components apart: XLA fuses a stack of the components into
    the update as a branch on the component at every point, which is not vectorised (a
    Gray-Scott Euler step at 1024^2: 4.4 ms against 2.3 apart, benchmarks/measurements.md)."""
    m = models.get("gray_scott")
    u0 = jnp.asarray(m.u0)
    program = jax.jit(lambda u: sk.rollout(m, u0=u, dt=1.0, steps=6, save_every=6, stepper=sk.ForwardEuler())[0])
    assert _loop_concatenates(program.lower(u0).compile().as_text()) == 0
    _stacked_loop(monkeypatch)
    jax.clear_caches()
    assert _loop_concatenates(program.lower(u0).compile().as_text()) > 0  # the check can fail


@pytest.mark.parametrize("stepper, dt", [(sk.RK4(), 1.0), (sk.IMEXEuler(), 5.0)], ids=["RK4", "IMEXEuler"])
def test_decomposed_run_apart_equals_one_device(stepper, dt):
    """On a device mesh each shard carries its components apart too (the halo exchange's
    ``ppermute`` is applied per component; IMEX's inner products are reduced over the mesh
    component by component): Gray-Scott 2 x 128^2 in two slabs of 2 x 64 x 128."""
    from simkit import parallel

    m = models.get("gray_scott")
    mesh = parallel.mesh_for(m.grid, jax.devices()[:2], shape=(2, 1))
    program = stepping.build_program(m, dt=dt, steps=4, save_every=2, stepper=stepper, diagnostics=None)
    assert stepping.components_apart(program, m.u0[:, :64])
    one = sk.integrate(m, dt=dt, steps=4, save_every=2, stepper=stepper)
    two = parallel.integrate(m, mesh=mesh, dt=dt, steps=4, save_every=2, stepper=stepper)
    bound = 1e-12 if isinstance(stepper, sk.IMEXEuler) else 1e-13  # BiCGStab's sums in another order
    np.testing.assert_allclose(two.us, one.us, rtol=0, atol=bound * np.abs(one.us).max())


@pytest.mark.parametrize("bcs", [
    (sk.Periodic(), (sk.Dirichlet(0.5), sk.Neumann(-0.2))),
    ((sk.Robin(1.0, 0.3, 0.1), sk.Dirichlet(1.0)), sk.Periodic()),
], ids=["periodic-dirichlet-neumann", "robin-dirichlet-periodic"])
def test_every_operator_and_boundary_apart_equals_stacked(bcs):
    """Each operator of the library, on two components, under each kind of boundary
    condition: the rhs evaluated apart gives the stacked rhs's values."""
    grid = sk.Grid((16, 12), 0.0, (1.0, 0.75))
    space = Space(grid, bcs)

    def rhs(t, u):
        p2 = space.pad(u, width=2)
        p1 = space.pad(u)
        grad = sk.gradient(p1, space.spacing)  # (2 axes, 2 components, ...)
        flux = sk.flux_divergence(p1, lambda v: 0.5 * v**2, space.spacing, sk.Rusanov(lambda v: v))
        # (the library's biharmonic refuses walls; its formula is what is compared here)
        return (sk.laplacian(p2, space.spacing, order=4) + 1e-3 * _biharmonic(p2, space.spacing)
                + grad[0] * u[::-1] + 0.1 * sk.divergence(p1, space.spacing)[None]  # u as a 2-D vector field
                - sk.advection(p2, (u[::-1], -u), space.spacing, order=3) + flux)

    u = jnp.asarray(np.random.default_rng(5).random((2, 16, 12)))
    apart, stacked = _both(rhs, u)
    np.testing.assert_allclose(apart, stacked, rtol=1e-13, atol=1e-13 * np.abs(stacked).max())
