"""Computations whose form depends on the platform (simkit.kernels.platforms): the CPU program
against NumPy, and the program lowered for a TPU without the operations its compiler rejects."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simkit.kernels.platforms import just_below


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_just_below_is_nextafter_here_and_has_no_nextafter_on_a_tpu(dtype):
    x = jnp.asarray([1.0, 1.5, 2.0, 3.0, 1e-30, 7.3e5, -1.0, -1.5, -2.0, 1e30], dtype)
    fn = jax.jit(just_below)
    np.testing.assert_array_equal(fn(x), np.nextafter(np.asarray(x), -np.inf))
    tpu = fn.trace(x).lower(lowering_platforms=("tpu",)).as_text()
    assert "next_after" not in tpu and "next_after" in fn.trace(x).lower().as_text()  # (chlo.next_after)
