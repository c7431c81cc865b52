"""Composition with JAX transforms, found by probing (reproducers in /work/probe/transforms/)."""

import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit._solve import raise_if_failed

DECAY = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0], state_names=("y",),
                        name="decay")


class _Compiles(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "Finished XLA compilation" in record.getMessage():
            self.names.append(record.getMessage())


def test_a_python_number_beside_a_checked_solve_does_not_recompile_the_check():
    # jax.hessian(loss)(1.1) leaves the Python float among the Solution's params where the
    # check runs; equinox's jitted check took it as static and compiled again for each value
    compiles = _Compiles()
    loggers = [logging.getLogger(name) for name in ("jax._src.dispatch", "jax._src.interpreters.pxla")]
    for logger in loggers:
        logger.addHandler(compiles)
    try:
        with jax.log_compiles(True):
            values = [raise_if_failed({"k": k, "ys": jnp.ones(2)}, jnp.asarray(False), "failed") for k in (1.0, 1.1)]
            compiles.names.clear()
            values.append(raise_if_failed({"k": 1.2, "ys": jnp.ones(2)}, jnp.asarray(False), "failed"))
    finally:
        for logger in loggers:
            logger.removeHandler(compiles)
    assert compiles.names == []
    assert [v["k"] for v in values] == [1.0, 1.1, 1.2]


def test_dense_output_outside_the_span_has_nan_derivatives_under_a_transform():
    # the value was NaN as documented but its gradient exactly 0: a loss through such a time
    # silently left that term out
    def value(k, t):
        return simkit.solve(DECAY, (0.0, 2.0), params={"k": k}, dense=True, saveat=2, rtol=1e-10,
                            atol=1e-12).evaluate(t, throw=False)[0]

    grads = jax.jit(jax.vmap(jax.grad(value, argnums=(0, 1)), in_axes=(None, 0)))(1.0, jnp.array([1.3, 2.5, -0.5]))
    dk, dt = (np.asarray(g) for g in grads)
    np.testing.assert_allclose([dk[0], dt[0]], [-1.3 * np.exp(-1.3), -np.exp(-1.3)], rtol=1e-8)
    assert np.all(np.isnan(dk[1:])) and np.all(np.isnan(dt[1:]))


def test_an_invalid_traced_input_gives_nan_derivatives_with_throw_false():
    # Status.INVALID_INPUT states are NaN; their gradient was exactly 0 (finite, silently)
    def last(k, rtol):
        return simkit.solve(DECAY, (0.0, 1.0), params={"k": k}, rtol=rtol, saveat=2, throw=False).ys[-1, 0]

    grads = jax.jit(jax.vmap(jax.grad(last), in_axes=(None, 0)))(1.0, jnp.array([1e-6, -1.0]))
    np.testing.assert_allclose(grads[0], -np.exp(-1.0), rtol=1e-5)
    assert np.isnan(grads[1])


def test_sample_ranges_traced_inside_a_transform(key):
    # float() of a traced range stopped with JAX's TracerArrayConversionError
    mean_of = lambda mu, sd: jnp.mean(simkit.sample.normal(key, {"a": (mu, sd)}, 8)["a"])
    d_mu, d_sd = jax.grad(mean_of, argnums=(0, 1))(2.0, 1.0)
    z = simkit.sample.normal(key, {"a": (0.0, 1.0)}, 8)["a"]
    np.testing.assert_allclose([d_mu, d_sd], [1.0, float(jnp.mean(z))], rtol=1e-12)
    uniform = jax.jit(lambda hi: simkit.sample.uniform(key, {"a": (0.0, hi)}, 4)["a"])
    np.testing.assert_array_equal(uniform(2.0), simkit.sample.uniform(key, {"a": (0.0, 2.0)}, 4)["a"])
    d_hi = jax.grad(lambda hi: jnp.sum(simkit.sample.latin_hypercube(key, {"a": (0.0, hi)}, 4)["a"]))(2.0)
    np.testing.assert_allclose(d_hi, float(jnp.sum(simkit.sample.latin_hypercube(key, {"a": (0.0, 1.0)}, 4)["a"])))
    with pytest.raises(Exception, match=r"sample.normal: a range given inside jax.jit/grad/vmap is not"):
        jax.block_until_ready(jax.jit(lambda sd: simkit.sample.normal(key, {"a": (0.0, sd)}, 4))(-1.0))


def test_fit_under_a_transform_is_refused_with_simkit_message():
    # JAX's ConcretizationTypeError / TracerArrayConversionError before
    t = np.array([0.5, 1.0, 1.5])
    data = simkit.Dataset(t, np.exp(-1.3 * t)[:, None], observed=("y",), t0=0.0)
    with pytest.raises(simkit.InputTypeError, match="simkit.fit cannot run under jax.jit"):
        jax.jit(lambda k: simkit.fit(DECAY, data, initial={"k": k}).cost)(1.0)
    with pytest.raises(simkit.InputTypeError, match="simkit.fit cannot run under jax.jit"):
        jax.grad(lambda k: simkit.fit(DECAY.with_params(k=k), data).cost)(1.0)


def test_grad_and_jvp_of_a_vmapped_solve_match_the_vmapped_gradient():
    """jax.grad / jax.jvp outside jax.vmap of simkit.solve (the vmap the inner transform): the
    same derivatives as jax.vmap of jax.grad, and as central differences (to 1e-6)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import simkit

    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 0.5}, y0=[1.0], state_names=("u",))

    def final(k):
        return simkit.solve(decay, (0.0, 2.0), params={"k": k}, saveat=2, rtol=1e-10, atol=1e-12).ys[-1, 0]

    ks = jnp.array([0.5, 0.8])
    outer = jax.grad(lambda k: jnp.sum(jax.vmap(final)(k)))(ks)
    inner = jax.vmap(jax.grad(final))(ks)
    _, tangent = jax.jvp(jax.vmap(final), (ks,), (jnp.ones(2),))
    exact = -2.0 * np.exp(-2.0 * np.asarray(ks))  # d/dk exp(-k t) at t = 2
    np.testing.assert_allclose(outer, exact, rtol=1e-6)
    np.testing.assert_allclose(inner, exact, rtol=1e-6)
    np.testing.assert_allclose(tangent, exact, rtol=1e-6)
