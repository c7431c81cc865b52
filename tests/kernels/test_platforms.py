"""Computations whose form depends on the platform (simkit.kernels.platforms): the CPU program
against NumPy, and the program lowered for a TPU without the operations its compiler rejects."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simkit.kernels.platforms import just_below, lower_nextafter_by_arithmetic_on_tpu, nextafter_by_arithmetic


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_just_below_is_nextafter_here_and_has_no_nextafter_on_a_tpu(dtype):
    x = jnp.asarray([1.0, 1.5, 2.0, 3.0, 1e-30, 7.3e5, -1.0, -1.5, -2.0, 1e30], dtype)
    fn = jax.jit(just_below)
    np.testing.assert_array_equal(fn(x), np.nextafter(np.asarray(x), -np.inf))
    tpu = fn.trace(x).lower(lowering_platforms=("tpu",)).as_text()
    assert "next_after" not in tpu and "next_after" in fn.trace(x).lower().as_text()  # (chlo.next_after)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_by_arithmetic_is_nextafter_for_normal_numbers(dtype):
    info = np.finfo(dtype)
    rng = np.random.default_rng(3)
    exponents = rng.integers(info.minexp + 2, info.maxexp - 2, 600)
    x = np.concatenate([rng.uniform(1.0, 2.0, 600) * 2.0 ** exponents * rng.choice([-1.0, 1.0], 600),
                        2.0 ** np.arange(info.minexp, info.maxexp), -(2.0 ** np.arange(info.minexp, info.maxexp)),
                        [1.0, 3.0, info.max, -info.max, info.tiny, -info.tiny]]).astype(dtype)
    fn = jax.jit(nextafter_by_arithmetic)
    for toward in (np.inf, -np.inf, 0.0, 3.0):
        y = np.full_like(x, toward)
        with np.errstate(over="ignore"):
            expected = np.nextafter(x, y)
        expected = np.where(np.abs(expected) < info.tiny, 0.0, expected)  # (toward zero from +/-tiny: flushed)
        np.testing.assert_array_equal(np.asarray(fn(x, y)), expected.astype(dtype))
    special = np.array([0.0, np.inf, -np.inf, np.nan, 2.0], dtype)
    got = np.asarray(fn(special, np.array([1.0, 0.0, 0.0, 0.0, 2.0], dtype)))
    np.testing.assert_array_equal(got[:3], np.array([info.tiny, info.max, -info.max], dtype))
    assert np.isnan(got[3]) and got[4] == 2.0


def test_a_tpu_program_lowers_nextafter_in_float_arithmetic_once_asked_and_a_cpu_program_keeps_it():
    x = jnp.asarray([1.0, -3.5, 0.0])
    fn = jax.jit(lambda x: jnp.nextafter(x, jnp.inf))
    lower_nextafter_by_arithmetic_on_tpu()
    lower_nextafter_by_arithmetic_on_tpu()  # (idempotent)
    assert "next_after" not in fn.trace(x).lower(lowering_platforms=("tpu",)).as_text()
    assert "next_after" in fn.trace(x).lower().as_text()
    np.testing.assert_array_equal(fn(x), np.nextafter(np.asarray(x), np.inf))
