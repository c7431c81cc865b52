"""Computations whose form depends on the platform (simkit.kernels.platforms): the CPU program
against NumPy, and the program lowered for a TPU without the operations its compiler rejects."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit import models
from simkit.kernels import methods
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


@pytest.mark.parametrize("solver", [simkit.Tsit5(), simkit.DOPRI5(), simkit.DOP853()], ids=str)
def test_stages_in_a_loop_give_the_written_out_step_to_rounding(solver, monkeypatch):
    """The explicit methods' stages in a ``fori_loop`` (float64 on a TPU) against their
    written-out form (elsewhere): step, error norm, stages and the dense output."""
    lorenz = models.get("lorenz")
    method, rhs, params = solver.method(), lorenz.rhs, lorenz.params
    y = jnp.asarray([1.5, -2.0, 20.0])
    f, hs = rhs(0.3, y, params), 0.01

    def step_and_dense():
        y_new, err, dense, f_new = method.step(rhs, 0.3, y, f, hs, params, 1e-8, 1e-10)
        seg = method.expand(rhs, params, 0.3, hs, method.keep(y, f, y_new, dense, f_new), 1e-8, 1e-10)
        return y_new, err, dense, method.interpolate(rhs, params, seg, 0.4)

    written = step_and_dense()
    monkeypatch.setattr(methods, "ROLLED_STAGES", "always")
    rolled = step_and_dense()
    # the error estimate (in units of the tolerance) is a difference of nearly equal sums:
    # other rounding shows in it at 1e-11 (a step-size factor needs two digits)
    for a, b, tol in zip(rolled, written, (1e-13, 1e-9, 1e-13, 1e-13)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


@pytest.mark.parametrize("solver", [simkit.Rodas5P(), simkit.Rodas4()], ids=str)
@pytest.mark.parametrize("model", ["robertson", "hires"])
def test_rosenbrock_stages_in_a_loop_give_the_written_out_step_to_rounding(solver, model, monkeypatch):
    m = models.get(model)
    method, rhs, params = solver.method(), m.rhs, m.params
    y = jnp.asarray(m.y0, jnp.float64) * 1.1 + 1e-3
    f, hs = rhs(0.5, y, params), 1e-3
    written = method.step(rhs, 0.5, y, f, hs, params, 1e-8, 1e-10)[:3]
    monkeypatch.setattr(methods, "ROLLED_STAGES", "always")
    rolled = method.step(rhs, 0.5, y, f, hs, params, 1e-8, 1e-10)[:3]
    # (the error norm, in units of the tolerance: the last stage, at rounding's level of the
    # state here, 1e-18 in HIRES's units)
    for a, b, tol in zip(rolled, written, (1e-13, 1e-7, 1e-12)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_a_float64_explicit_solve_for_a_tpu_loops_over_its_stages():
    """Lowered for a TPU, Tsit5's float64 program holds its stages in loops (a smaller program:
    XLA's TPU compile time follows the float64 operations); for a CPU, written out."""
    lorenz = models.get("lorenz")
    fn = jax.jit(lambda y0: simkit.solve(lorenz, (0.0, 1.0), y0=y0, solver=simkit.Tsit5(), saveat=5,
                                         throw=False).ys)
    y0 = jnp.asarray(lorenz.y0, jnp.float64)
    loops = lambda text: text.count("stablehlo.while")  # noqa: E731
    tpu, cpu = (fn.trace(y0).lower(lowering_platforms=(p,)).as_text() for p in ("tpu", "cpu"))
    assert loops(tpu) >= loops(cpu) + 2  # the step's stages, and their redo for dense output
