"""`simkit.solve_ivp` runs SciPy's own ``solve_ivp`` documentation examples unchanged.

The examples are those of ``scipy.integrate.solve_ivp``'s docstring (SciPy 1.17): exponential
decay (automatic time points, then ``t_eval``), the upward cannon with a terminal event,
the cannon with two events and dense output, Lotka–Volterra with ``args`` and dense output,
and ``y' = A y`` with a complex ``A`` (a vector state and a 3 x 3 matrix state). Each runs
through SciPy and through simkit with SciPy's default tolerances (rtol 1e-3, atol 1e-6), and
each result is compared with the exact solution (or a reference at rtol 1e-12): simkit's
error may be at most twice SciPy's, plus rounding. At tight tolerances both agree to 1e-8.
SciPy's docs have no stiff example: Robertson's problem checks "Radau", "BDF" and "LSODA".

Also here: the result's SciPy shapes, failures as ``status = -1``, ``jax.grad``/``jax.vmap``
through the call, and the errors that say what to write instead of a SciPy habit.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.linalg

import simkit

# -- SciPy's examples, as its documentation writes them -------------------------------------------


def exponential_decay(t, y):
    return -0.5 * y


def upward_cannon(t, y):
    return [y[1], -0.5]


def hit_ground(t, y):
    return y[0]


hit_ground.terminal = True
hit_ground.direction = -1


def apex(t, y):
    return y[1]


def lotkavolterra(t, z, a, b, c, d):
    x, y = z
    return [a * x - b * x * y, -c * y + d * x * y]


A = np.array([[-0.25 + 0.14j, 0, 0.33 + 0.44j], [0.25 + 0.58j, -0.2 + 0.14j, 0], [0, 0.2 + 0.4j, -0.1 + 0.97j]])


def deriv_vec(t, y):
    return A @ y


def deriv_mat(t, y):
    return (A @ y.reshape(3, 3)).flatten()


Y0_MAT = np.array([[2 + 0j, 3 + 0j, 4 + 0j], [5 + 0j, 6 + 0j, 7 + 0j], [9 + 0j, 34 + 0j, 78 + 0j]]).flatten()


def _exact_decay(t, y0):
    return np.outer(np.asarray(y0, float), np.exp(-0.5 * np.asarray(t)))


def _exact_cannon(t, y0):
    t = np.asarray(t)
    return np.stack([10 * t - 0.25 * t**2, 10 - 0.5 * t])


def _exact_linear(t, y0):
    y0 = np.asarray(y0).reshape(3, -1)
    return np.stack([(scipy.linalg.expm(A * s) @ y0).flatten() for s in np.asarray(t)], axis=1)


def _reference_lotka(t, y0):
    ref = scipy.integrate.solve_ivp(lotkavolterra, [0, 15], y0, args=(1.5, 1, 3, 1), method="DOP853",
                                    rtol=1e-12, atol=1e-12, dense_output=True)
    return ref.sol(t)


# (name, fun, t_span, y0, keyword arguments, exact solution or reference)
EXAMPLES = [
    ("decay", exponential_decay, [0, 10], [2, 4, 8], {}, _exact_decay),
    ("decay_t_eval", exponential_decay, [0, 10], [2, 4, 8], dict(t_eval=[0, 1, 2, 4, 10]), _exact_decay),
    ("cannon", upward_cannon, [0, 100], [0, 10], dict(events=hit_ground), _exact_cannon),
    ("cannon_apex_dense", upward_cannon, [0, 100], [0, 10], dict(events=(hit_ground, apex), dense_output=True),
     _exact_cannon),
    ("lotka_volterra", lotkavolterra, [0, 15], [10, 5], dict(args=(1.5, 1, 3, 1), dense_output=True),
     _reference_lotka),
    ("complex_vector", deriv_vec, [0, 25], np.array([10 + 0j, 20 + 0j, 30 + 0j]),
     dict(t_eval=np.linspace(0, 25, 101)), _exact_linear),
    ("complex_matrix", deriv_mat, [0, 25], Y0_MAT, dict(t_eval=np.linspace(0, 25, 101)), _exact_linear),
]


def _error(y, exact):
    """The largest error of each component, relative to that component's largest size."""
    return float(np.max(np.abs(y - exact) / np.max(np.abs(exact), axis=1, keepdims=True)))


@pytest.mark.parametrize("name, fun, t_span, y0, kwargs, exact", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_scipy_documentation_example(name, fun, t_span, y0, kwargs, exact):
    ours = simkit.solve_ivp(fun, t_span, y0, **kwargs)
    theirs = scipy.integrate.solve_ivp(fun, t_span, y0, **kwargs)
    n = np.size(y0)
    assert isinstance(ours.t, np.ndarray) and ours.t.ndim == 1
    assert ours.y.shape == (n, ours.t.size)  # (state, time), as SciPy
    assert (ours.status, ours.success) == (theirs.status, theirs.success)
    assert ours.t[0] == t_span[0] and abs(ours.t[-1] - theirs.t[-1]) <= 1e-12 * abs(theirs.t[-1])
    if "t_eval" in kwargs:
        np.testing.assert_array_equal(ours.t, theirs.t)
    # simkit's error is at most twice SciPy's at SciPy's default tolerances (plus rounding)
    ours_error, theirs_error = _error(ours.y, exact(ours.t, y0)), _error(theirs.y, exact(theirs.t, y0))
    assert ours_error <= 2 * theirs_error + 1e-12, (ours_error, theirs_error)
    if "events" in kwargs:
        assert len(ours.t_events) == len(theirs.t_events)
        for t_ours, t_theirs, y_ours in zip(ours.t_events, theirs.t_events, ours.y_events):
            np.testing.assert_allclose(t_ours, t_theirs, rtol=1e-12, atol=1e-12)
            assert y_ours.shape == (t_ours.size, n)
        np.testing.assert_allclose(ours.t_events[0], [40.0], rtol=1e-12)  # as SciPy's docs print
        np.testing.assert_allclose(ours.y_events[0], [[0.0, -10.0]], atol=1e-12)
    else:
        assert ours.t_events is None and ours.y_events is None
    if kwargs.get("dense_output"):
        t = np.linspace(t_span[0], ours.t[-1], 50)
        assert ours.sol(t).shape == (n, 50) and ours.sol(t[3]).shape == (n,)
        dense_error = _error(ours.sol(t), exact(t, y0))
        assert dense_error <= 2 * _error(theirs.sol(t), exact(t, y0)) + 1e-12
        if name == "cannon_apex_dense":  # SciPy's docs: sol(t_apex) is [100, 0]
            np.testing.assert_allclose(ours.sol(ours.t_events[1][0]), [100.0, 0.0], atol=1e-10)
    else:
        assert ours.sol is None


@pytest.mark.parametrize("index", [1, 4, 5], ids=["decay_t_eval", "lotka_volterra", "complex_vector"])
def test_tight_tolerances_agree_with_scipy(index):
    """At rtol 1e-10, atol 1e-12 both solvers give the same answer to 1e-8 (relative to each
    component's size): the same problem is solved, not a similar one."""
    _, fun, t_span, y0, kwargs, _ = EXAMPLES[index]
    kwargs = {**kwargs, "rtol": 1e-10, "atol": 1e-12}
    ours, theirs = simkit.solve_ivp(fun, t_span, y0, **kwargs), scipy.integrate.solve_ivp(fun, t_span, y0, **kwargs)
    if "t_eval" in kwargs:
        assert _error(ours.y, theirs.y) < 1e-8
    else:  # Lotka-Volterra: at the same times through the dense outputs
        t = np.linspace(0, 15, 31)
        assert _error(ours.sol(t), theirs.sol(t)) < 1e-8


def robertson(t, y, k1, k2, k3):
    return [-k1 * y[0] + k3 * y[1] * y[2], k1 * y[0] - k2 * y[1] ** 2 - k3 * y[1] * y[2], k2 * y[1] ** 2]


@functools.lru_cache(maxsize=1)
def _robertson_reference():
    """SciPy's Radau at rtol 1e-12 at `test_stiff_methods_on_robertson`'s times, computed once
    for its three methods."""
    return scipy.integrate.solve_ivp(robertson, [0, 1e5], [1.0, 0.0, 0.0], method="Radau", args=(0.04, 3e7, 1e4),
                                     t_eval=np.geomspace(1e-5, 1e5, 21), rtol=1e-12, atol=1e-16).y


@pytest.mark.parametrize("method", ["Radau", "BDF", "LSODA"])
def test_stiff_methods_on_robertson(method):
    """SciPy's stiff method names on Robertson's problem (SciPy's docs have no stiff example):
    the error against a reference at most twice SciPy's with the same method."""
    kwargs = dict(args=(0.04, 3e7, 1e4), t_eval=np.geomspace(1e-5, 1e5, 21), rtol=1e-6, atol=1e-8)
    ours = simkit.solve_ivp(robertson, [0, 1e5], [1.0, 0.0, 0.0], method=method, **kwargs)
    theirs = scipy.integrate.solve_ivp(robertson, [0, 1e5], [1.0, 0.0, 0.0], method=method, **kwargs)
    reference = _robertson_reference()
    assert ours.status == 0 and ours.nfev > 0
    assert _error(ours.y, reference) <= 2 * _error(theirs.y, reference) + 1e-12
    if method == "BDF":  # simkit's BDF counts its Jacobians and factorisations
        assert ours.njev >= 1 and ours.nlu >= 1
    else:
        assert ours.njev is None and ours.nlu is None  # not counted by these methods


def test_rk23_is_bogacki_shampine():
    ours = simkit.solve_ivp(exponential_decay, [0, 10], [2, 4, 8], method="RK23", t_eval=[0, 1, 2, 4, 10])
    theirs = scipy.integrate.solve_ivp(exponential_decay, [0, 10], [2, 4, 8], method="RK23", t_eval=[0, 1, 2, 4, 10])
    exact = _exact_decay(ours.t, [2, 4, 8])
    assert ours.solution.solver_name == "diffrax.Bosh3" and (ours.njev, ours.nlu) == (0, 0)
    assert _error(ours.y, exact) <= 2 * _error(theirs.y, exact)


def test_failure_is_status_minus_one():
    def decay_one(t, y):
        return -0.5 * y[0]  # a scalar for a one-state system, which SciPy broadcasts

    res = simkit.solve_ivp(decay_one, [0, 10], [2.0], max_steps=3)
    assert (res.status, res.success) == (-1, False)
    assert "max_steps" in res.message
    assert np.all(np.isfinite(res.t)) and 0 < res.t[-1] < 10 and res.y.shape == (1, res.t.size)
    np.testing.assert_allclose(res.y[0], 2.0 * np.exp(-0.5 * res.t), rtol=1e-3)


def test_grad_and_vmap_reach_args_and_y0():
    """jax.grad through the args, jax.vmap over y0 (with t_eval: fixed shapes)."""

    def decay(t, y, k):
        return -k * y

    def final(k):
        return simkit.solve_ivp(decay, (0.0, 2.0), jnp.array([1.0]), args=(k,), t_eval=jnp.array([0.0, 2.0]),
                                rtol=1e-10, atol=1e-12).y[0, -1]

    assert abs(float(jax.grad(final)(0.5)) - (-2.0 * np.exp(-1.0))) < 1e-7
    res = jax.vmap(lambda y0: simkit.solve_ivp(decay, (0.0, 2.0), y0, args=(0.5,), t_eval=jnp.array([0.0, 2.0]),
                                               rtol=1e-10, atol=1e-12))(jnp.array([[1.0], [3.0]]))
    assert res.y.shape == (2, 1, 2) and res.status.tolist() == [0, 0]
    np.testing.assert_allclose(res.y[:, 0, -1], [np.exp(-1.0), 3 * np.exp(-1.0)], rtol=1e-8)


def test_vectorized_fun_gets_a_column():
    def spring(t, y):
        assert y.ndim == 2  # SciPy's vectorized contract: (n, k)
        return jnp.stack([y[1, :], -y[0, :]])

    res = simkit.solve_ivp(spring, (0.0, 1.0), [1.0, 0.0], vectorized=True, t_eval=[1.0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res.y[:, -1], [np.cos(1.0), -np.sin(1.0)], atol=1e-7)


# -- errors that say what to write instead -----------------------------------------------------------


def _branching(t, y, p):
    if y[0] > 0:
        return -y
    return y


def _numpy_sin(t, y, p):
    return jnp.stack([np.sin(y[0])])


def _scipy_style(t, y):
    return -y


@pytest.mark.parametrize("rhs, words", [
    (_branching, "jnp.where(y[0] > 0, -y[0], 0.0)"),
    (_numpy_sin, "jnp.sin(y[0])` instead of `np.sin(y[0])"),
    (_scipy_style, "simkit.solve_ivp(f, t_span, y0, args=(...))"),
], ids=["python_if", "numpy_on_state", "scipy_signature"])
def test_rhs_habits_get_errors_that_teach(rhs, words):
    if rhs is _scipy_style:  # refused when the model is built, before anything is traced
        with pytest.raises(simkit.InputTypeError, match="does not take three arguments") as info:
            simkit.ODEModel(rhs=rhs, params={}, y0=[1.0])
        assert words in str(info.value)
        return
    model = simkit.ODEModel(rhs=rhs, params={}, y0=[1.0])
    for call in (lambda: simkit.solve(model, (0.0, 1.0)),
                 lambda: simkit.ensemble(model, y0=np.ones((2, 1)), t_span=(0.0, 1.0))):
        with pytest.raises(simkit.InputTypeError, match="rhs") as info:
            call()
        assert words in str(info.value) and isinstance(info.value, TypeError)


def test_solve_ivp_errors_that_teach():
    with pytest.raises(TypeError, match="jnp.sin"):
        simkit.solve_ivp(lambda t, y: np.sin(y), (0.0, 1.0), [1.0])
    with pytest.raises(TypeError, match=r"args=\(1.5, 1.0\)"):  # extra arguments without args
        simkit.solve_ivp(lotkavolterra, (0.0, 1.0), [1.0, 1.0])
    with pytest.raises(TypeError, match="must be a tuple"):  # SciPy: args cannot be unpacked
        simkit.solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), [1.0], args=0.5)
    with pytest.raises(TypeError, match="event 0"):
        simkit.solve_ivp(exponential_decay, (0.0, 1.0), [1.0], events=lambda t: t - 0.5)
    with pytest.raises(ValueError, match="method must be one of"):
        simkit.solve_ivp(exponential_decay, (0.0, 1.0), [1.0], method="rk45")
    with pytest.raises(TypeError, match="unknown options"):
        simkit.solve_ivp(exponential_decay, (0.0, 1.0), [1.0], atoll=1e-8)
    with pytest.warns(UserWarning, match="jax.jacfwd"):  # SciPy's jac: no effect, as SciPy warns
        assert simkit.solve_ivp(exponential_decay, [0, 10], [2, 4, 8], jac=None).success


def test_state_names_default_to_component_numbers():
    model = simkit.ODEModel(rhs=exponential_decay_p, params={}, y0=[2.0, 4.0])
    assert model.state_names == ("y0", "y1")
    assert model.replace(y0=[1.0, 1.0]).state_names == ("y0", "y1")


def exponential_decay_p(t, y, p):
    return -0.5 * y
