"""The SciPy yardstick itself: exact solutions, implicit methods with the jacfwd Jacobian."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit import models, reference


def decay_rhs(t, y, p):
    return -p["k"] * y


DECAY = simkit.ODEModel(rhs=decay_rhs, params={"k": jnp.array([1.0, 10.0])}, y0=[1.0, 2.0],
                        state_names=("a", "b"), name="decay", t_span=(0.0, 2.0))


@pytest.mark.parametrize("method", reference.scipy_ivp.METHODS)
def test_reference_methods_on_exact_solution(method):
    ref = reference.solve_ivp(DECAY, saveat=11, method=method, rtol=1e-10, atol=1e-12)
    exact = np.array([1.0, 2.0]) * np.exp(-np.outer(ref.ts, [1.0, 10.0]))
    assert ref.ys.shape == (11, 2)
    np.testing.assert_allclose(ref.ys, exact, rtol=1e-6, atol=1e-9)
    if method in reference.scipy_ivp.IMPLICIT and method != "LSODA":
        assert ref.njev >= 1  # the jacfwd Jacobian was used


def test_compare_is_normalised_by_tolerance():
    sol = simkit.solve(DECAY, saveat=11, rtol=1e-6, atol=1e-9)
    ref = reference.solve_ivp(DECAY, saveat=11, method="DOP853", rtol=1e-13, atol=1e-14)
    err = reference.compare(sol, ref, 1e-6, 1e-9)
    assert set(err) == {"a", "b"} and all(0 <= e < 5 for e in err.values())
    y = np.asarray(sol.ys)
    manual = np.max(np.abs(y - ref.ys) / (1e-9 + 1e-6 * np.abs(ref.ys)), axis=0)
    np.testing.assert_allclose([err["a"], err["b"]], manual)
    # a state that is NaN somewhere scores inf: Python's max over the states dropped a NaN
    # score, and a validation check read a NaN state as passing
    broken = type("Broken", (), dict(ts=sol.ts, ys=np.asarray(sol.ys).copy(), state_names=sol.state_names))
    broken.ys[3, 1] = np.nan
    assert max(reference.compare(broken, ref, 1e-6, 1e-9).values()) == np.inf


def test_compare_rejects_different_times():
    sol = simkit.solve(DECAY, saveat=11)
    ref = reference.solve_ivp(DECAY, saveat=12)
    with pytest.raises(simkit.InputError, match="same times"):
        reference.compare(sol, ref, 1e-6, 1e-9)


def test_reference_errors():
    with pytest.raises(simkit.InputError, match="method must be one of"):
        reference.solve_ivp(models.get("sir"), method="Euler")


@pytest.mark.parametrize("kwargs, error, names", [
    (dict(params={"k": jnp.array([1.0, jnp.nan])}), simkit.ParameterError, r"parameter\(s\) \['k'\]"),
    (dict(y0=[np.nan, 2.0]), simkit.InputError, r"y0 of 'decay' is not finite \(states \['a'\]\)"),
    (dict(t_span=(0.0, np.inf)), simkit.InputError, r"t_span must be finite"),
    (dict(saveat=[0.0, np.nan]), simkit.InputError, r"saveat times must be finite"),
])
def test_non_finite_input_is_refused_before_scipy_runs(kwargs, error, names):
    """SciPy would reject every step of a NaN state forever; the check comes first."""
    with pytest.raises(error, match=names):
        reference.solve_ivp(DECAY, method="RK45", **kwargs)


def test_scipy_bdf_does_not_read_its_uninitialised_table(monkeypatch):
    """SciPy's BDF allocates its difference table with ``np.empty`` and its first step reads
    a row it never wrote (harmless to the result, but when the memory holds a signalling-NaN
    bit pattern NumPy warns "invalid value encountered in subtract": an error in this suite,
    which once failed CI). With ``np.empty`` handing out such memory, as it may, SciPy's own
    BDF warns and ``reference.scipy_method("BDF")`` (the one simkit's reference uses)
    neither warns nor changes the answer. Should SciPy initialise its table one day, the
    first check fails: the workaround can go then."""
    import types
    import warnings

    import scipy.integrate
    from scipy.integrate._ivp import bdf

    def rhs(t, y):
        return np.array([-0.04 * y[0] + 1e4 * y[1] * y[2], 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
                         3e7 * y[1] ** 2])

    def run(method):
        return scipy.integrate.solve_ivp(rhs, (0.0, 10.0), [1.0, 0.0, 0.0], method=method, rtol=1e-6, atol=1e-10)

    clean = run("BDF")  # np.empty as NumPy gives it
    poisoned = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    snan = np.array(0x7FF4000000000000, np.uint64).view(np.float64)  # exponent all ones, quiet bit 0

    def empty(shape, dtype=float, **kw):
        assert np.dtype(dtype) == np.float64
        return np.full(shape, 0x7FF4000000000000, np.uint64).view(np.float64)

    assert np.isnan(snan)
    poisoned.empty = empty
    monkeypatch.setattr(bdf, "np", poisoned)
    with pytest.warns(RuntimeWarning, match="invalid value encountered in subtract"):
        run("BDF")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fixed = run(reference.scipy_method("BDF"))
    np.testing.assert_array_equal(fixed.y, clean.y)  # the same steps, the same numbers
    assert fixed.nfev == clean.nfev and reference.scipy_method("Radau") == "Radau"


def test_reference_refuses_what_scipy_would_get_wrong():
    """Found by probing: a dataset fixing a free parameter replaced it in the residuals (the
    "fit" returned its start, converged); unknown names and options passed silently; an SDE's
    noise was dropped; a PDE model failed with an AttributeError (now solved as `solve`
    takes it, by the method of lines)."""
    from simkit import Dataset

    lv = models.get("lotka_volterra")
    data = Dataset(times=[0.0, 1.0, 2.0], values=[[1.0, 1.0]] * 3, observed=("prey", "predator"), params={"alpha": 0.4})
    with pytest.raises(simkit.InputError, match=r"dataset 'data' fixes \['alpha'\], which the fit also estimates"):
        reference.least_squares(lv, data, free=["alpha"])
    plain = Dataset(times=[0.0, 1.0, 2.0], values=[[1.0, 1.0]] * 3, observed=("prey", "predator"))
    with pytest.raises(simkit.ParameterError, match=r"no parameter\(s\) \['foo'\]"):
        reference.least_squares(lv, plain, free=["foo"])
    with pytest.raises(simkit.ParameterError, match=r"given for \['alfa'\], which are not free"):
        reference.least_squares(lv, plain, free=["alpha"], initial={"alfa": 0.5})
    with pytest.raises(simkit.InputError, match="initial_state must be 'fixed' or 'fit'"):
        reference.least_squares(lv, plain, free=["alpha"], initial_state="fitt")
    with pytest.raises(simkit.InputError, match="is stochastic"):
        reference.solve_ivp(models.get("ornstein_uhlenbeck"), saveat=2)
    heat = models.get("heat_1d")
    ref = reference.solve_ivp(heat, (0.0, 1e-3), saveat=2, method="BDF", rtol=1e-10, atol=1e-12)
    sol = simkit.solve(heat, (0.0, 1e-3), saveat=2, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ref.ys[-1], np.asarray(sol.ys)[-1], rtol=1e-7, atol=1e-9)


def test_advection_takes_one_velocity_for_every_axis():
    """``models.get("advection", velocity=2.0)`` was accepted, then failed with an
    IndexError in the rhs (found by probing)."""
    one, per_axis = models.get("advection", velocity=2.0), models.get("advection", velocity=np.array([2.0]))
    u = jnp.asarray(one.u0)
    np.testing.assert_array_equal(one.rhs(0.0, u, one.params, one.space), per_axis.rhs(0.0, u, per_axis.params,
                                                                                      per_axis.space))


def test_scipy_functions_compute_on_the_host_whatever_the_default_device(monkeypatch):
    # SciPy calls the rhs one small evaluation at a time: on an accelerator machine each call
    # must not be a round trip to the accelerator (here a CPU device other than the first
    # stands in for it)
    from simkit.reference import scipy_ivp

    compiled, seen = scipy_ivp._compiled, []

    def spy(rhs):
        f, jac = compiled(rhs)

        def record(g):
            def call(*args):
                out = g(*args)
                seen.append(out.devices())
                return out
            return call
        return record(f), record(jac)

    monkeypatch.setattr(scipy_ivp, "_compiled", spy)
    model = models.get("lotka_volterra")
    with jax.default_device(jax.devices()[-1]):
        ref = reference.solve_ivp(model, (0.0, 1.0), saveat=3, method="Radau", rtol=1e-8, atol=1e-10)
    assert len(jax.devices()) > 1 and seen
    assert all(devices == {jax.devices("cpu")[0]} for devices in seen)
    expected = reference.solve_ivp(model, (0.0, 1.0), saveat=3, method="Radau", rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(ref.ys, expected.ys)
