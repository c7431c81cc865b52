"""The bounded minimisers (simkit.fitting.bounded) against SciPy's L-BFGS-B and
least_squares: optimum, active bounds, every start the same alone and in a batch, finite at
the bounds. One compile per function and lane count, reused across tests."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from simkit.errors import InputError, ShapeError
from simkit.fitting import FitStatus, least_squares_bounded, minimize_bounded

LOWER = np.array([-2.0, -2.0, 0.5, -2.0])
UPPER = np.array([2.0, 0.8, 2.0, 2.0])  # holds the second variable at 0.8 (the free optimum is 1)
STARTS = np.clip(np.random.default_rng(0).uniform(-1.5, 1.5, (6, 4)), LOWER, UPPER)


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def scipy_lbfgsb(x0):
    fun = jax.jit(jax.value_and_grad(rosenbrock))
    return scipy.optimize.minimize(lambda x: tuple(np.asarray(v) for v in fun(jnp.asarray(x))), x0, jac=True,
                                   method="L-BFGS-B", bounds=list(zip(LOWER, UPPER)),
                                   options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 1000})


@pytest.fixture(scope="module")
def batch():
    return minimize_bounded(rosenbrock, STARTS, LOWER, UPPER, gtol=1e-9, ftol=0.0)


def test_rosenbrock_with_bounds_matches_scipy_lbfgsb(batch):
    best = min((scipy_lbfgsb(x0) for x0 in STARTS), key=lambda r: r.fun)
    assert np.all(np.asarray(batch.status) == FitStatus.CONVERGED)
    assert np.all(np.asarray(batch.grad_norm) <= 1e-6)  # to where f stops changing in float64
    i = int(np.argmin(batch.cost))
    # SciPy's optimum, to the accuracy the gradients allow
    np.testing.assert_allclose(np.asarray(batch.x[i]), best.x, atol=1e-7)
    assert abs(float(batch.cost[i]) - best.fun) <= 1e-12
    # the bounded optimum: the second variable held at its upper bound, reported as such
    assert best.x[1] == UPPER[1]
    assert np.asarray(batch.at_bound[i]).tolist() == [0, 1, 0, 0]
    assert batch.at_bound.dtype == jnp.int8


def test_a_start_gives_the_same_answer_alone_and_in_any_batch(batch):
    alone = minimize_bounded(rosenbrock, STARTS[3:4], LOWER, UPPER, gtol=1e-9, ftol=0.0)
    assert float(alone.x[0, 0]) == float(batch.x[3, 0]) and int(alone.n_iter[0]) == int(batch.n_iter[3])
    np.testing.assert_array_equal(np.asarray(alone.x[0]), np.asarray(batch.x[3]))
    two_lanes = minimize_bounded(rosenbrock, STARTS, LOWER, UPPER, gtol=1e-9, ftol=0.0, lanes=2)
    for field in ("x", "cost", "n_iter", "n_eval", "status", "at_bound"):
        np.testing.assert_array_equal(np.asarray(getattr(two_lanes, field)), np.asarray(getattr(batch, field)))


def test_no_nan_where_the_function_fails_beyond_a_bound_or_far_out():
    # log(1 + x) is NaN below -1: the box [0, 1e5] keeps every point finite; the optimum is
    # at the lower bound (the function rises from 0)
    fun = lambda x: jnp.sum(jnp.log1p(x))
    out = minimize_bounded(fun, jnp.array([[1.0, 1e-5], [50.0, 7.0]]), jnp.zeros(2), jnp.full(2, 1e5))
    assert np.all(np.isfinite(np.asarray(out.x))) and np.all(np.isfinite(np.asarray(out.cost)))
    assert np.asarray(out.at_bound).tolist() == [[-1, -1], [-1, -1]]
    assert np.asarray(out.status).tolist() == [FitStatus.CONVERGED] * 2
    # a start where the function is not finite ends at once with NONFINITE
    out = minimize_bounded(lambda x: jnp.sum((x - 3.0) ** 2 + 1e-3 * jnp.log(x - 1.0)), jnp.array([[0.5], [2.0]]),
                           jnp.zeros(1), jnp.full(1, 5.0))
    assert np.asarray(out.status).tolist() == [FitStatus.NONFINITE, FitStatus.CONVERGED]
    assert np.isfinite(float(out.cost[1]))


def test_least_squares_bounded_matches_scipy_least_squares():
    # exponential decay y = a exp(-k t) + c, with c held at its lower bound 0.2 (the data's is 0.1)
    t = np.linspace(0.0, 4.0, 25)
    y = 2.0 * np.exp(-1.3 * t) + 0.1 + 0.01 * np.sin(7 * t)
    residuals = lambda p: p[0] * jnp.exp(-p[1] * jnp.asarray(t)) + p[2] - jnp.asarray(y)
    lower, upper = np.array([0.0, 0.0, 0.2]), np.array([10.0, 10.0, 1.0])
    x0 = np.array([[1.0, 0.5, 0.5], [5.0, 4.0, 0.9], [0.1, 0.1, 0.21]])
    out = least_squares_bounded(residuals, x0, lower, upper, ftol=1e-15, gtol=1e-15)
    ref = scipy.optimize.least_squares(lambda p: np.asarray(residuals(jnp.asarray(p))), x0[0],
                                       bounds=(lower, upper), xtol=1e-15, ftol=1e-15, gtol=1e-15)
    assert np.asarray(out.status).tolist() == [FitStatus.CONVERGED] * 3
    np.testing.assert_allclose(np.asarray(out.x), np.broadcast_to(ref.x, (3, 3)), rtol=1e-7)
    np.testing.assert_allclose(np.asarray(out.cost), ref.cost, rtol=1e-10)
    assert np.asarray(out.at_bound).tolist() == [[0, 0, -1]] * 3
    alone = least_squares_bounded(residuals, x0[1:2], lower, upper, ftol=1e-15, gtol=1e-15)
    np.testing.assert_array_equal(np.asarray(alone.x[0]), np.asarray(out.x[1]))


def test_bad_input_is_refused_before_compiling():
    with pytest.raises(ShapeError, match=r"\(n_starts, n\)"):
        minimize_bounded(rosenbrock, np.zeros(4), LOWER, UPPER)
    with pytest.raises(ShapeError, match="lower and upper"):
        minimize_bounded(rosenbrock, np.zeros((1, 4)), LOWER[:3], UPPER)
    with pytest.raises(InputError, match="indices \\[1\\]"):
        least_squares_bounded(lambda x: x, np.zeros((1, 2)), np.array([0.0, 2.0]), np.array([1.0, 1.0]))
    with pytest.raises(InputError, match="lanes"):
        minimize_bounded(rosenbrock, np.zeros((1, 4)), LOWER, UPPER, lanes=0)
