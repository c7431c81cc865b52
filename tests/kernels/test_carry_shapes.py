"""The loop's first state is built from shapes each method declares (`dense_zeros`,
`linalg.factor_zeros`, `loop.expanded_shape`) instead of tracing a step for them: they must
be exactly what a traced step gives (shapes, dtypes, tree structure)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit.kernels import linalg
from simkit.kernels.loop import expanded_shape, initial_state, stepper

KERNELS = [simkit.Tsit5(), simkit.DOPRI5(), simkit.DOP853(), simkit.Rodas4(), simkit.Rodas5P(),
           simkit.RadauIIA5(), simkit.BDF(), simkit.AutoSwitch()]


def _structure(tree):
    return jax.tree_util.tree_structure(tree), [(a.shape, jnp.dtype(a.dtype)) for a in jax.tree_util.tree_leaves(tree)]


def _rhs(t, y, p):
    return -p["k"] * y + jnp.roll(y, 1)


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
@pytest.mark.parametrize("n", [3, 10])
def test_declared_dense_shapes_are_what_a_step_gives(kernel, n):
    method = kernel.method()
    y0 = jnp.linspace(1.0, 2.0, n)
    params = {"k": jnp.asarray(2.0)}
    t0, t1, rtol, atol = jnp.asarray(0.0), jnp.asarray(1.0), jnp.asarray(1e-6), jnp.asarray(1e-9)
    f0 = method.init(_rhs, t0, y0, params)
    ctrl0 = method.controller_init(y0)
    traced = jax.eval_shape(lambda: method.attempt(_rhs, t0, y0, f0, jnp.asarray(1.0), params, rtol, atol, ctrl0))[2]
    assert _structure(method.dense_zeros(y0)) == _structure(traced)
    # the recomputed segment's shapes, declared against traced
    state0 = initial_state(method, _rhs, t0, t1, y0, params, rtol, atol, jnp.asarray(0.1), max_steps=10)
    expand = stepper(method, _rhs, t0, t1, params, rtol, atol, jnp.asarray(np.inf), max_steps=10,
                     dtype=y0.dtype)[2]
    assert _structure(expanded_shape(method, expand, state0["seg"])) == _structure(jax.eval_shape(expand, state0["seg"]))


@pytest.mark.parametrize("kernel", [simkit.Tsit5(), simkit.DOP853()], ids=repr)
def test_declared_dense_shapes_of_a_complex_state(kernel):
    method = kernel.method()
    y0 = jnp.asarray([1.0 + 1j, 0.5j])
    f0 = method.init(lambda t, y, p: 1j * y, 0.0, y0, {})
    traced = jax.eval_shape(lambda: method.attempt(lambda t, y, p: 1j * y, jnp.asarray(0.0), y0, f0, jnp.asarray(0.1),
                                                   {}, 1e-6, 1e-9, method.controller_init(y0)))[2]
    assert _structure(method.dense_zeros(y0)) == _structure(traced)


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.complex128, jnp.float32])
def test_factor_zeros_is_the_factorisation_s_shape(dtype):
    for n in (1, 2, 5, linalg.SMALL_SYSTEM, linalg.SMALL_SYSTEM + 1):
        traced = jax.eval_shape(linalg.factor, jax.ShapeDtypeStruct((n, n), dtype))
        assert _structure(linalg.factor_zeros(n, dtype)) == _structure(traced)
