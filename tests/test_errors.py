"""Every input error names the problem; numerical failures raise SolveError."""

import diffrax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit import models

LORENZ = models.get("lorenz")


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"params": {"gamma": 1.0}}, simkit.ParameterError, r"no parameter\(s\) \['gamma'\].*'sigma', 'rho', 'beta'"),
        ({"params": {"rho": float("nan")}}, simkit.ParameterError, "parameter 'rho' is not finite"),
        ({"params": {"rho": jnp.inf}}, simkit.ParameterError, "parameter 'rho' is not finite"),
        ({"y0": [1.0, jnp.nan, 0.0]}, simkit.ParameterError, "y0 is not finite"),
        ({"y0": [1.0, 2.0]}, simkit.ShapeError, r"y0 must have shape \(3,\).*got \(2,\)"),
        ({"y0": np.ones((5, 3))}, simkit.ShapeError, "simkit.ensemble or jax.vmap"),
        ({"rtol": 0.0, "atol": 0.0}, simkit.InputError, "rtol and atol are both 0"),
        ({"rtol": -1e-6}, simkit.InputError, "rtol must be >= 0"),
        ({"atol": -1e-6}, simkit.InputError, "atol must be >= 0"),
        ({"t_span": (0.0, jnp.inf)}, simkit.InputError, "t1 must be finite .*terminal event"),
        ({"saveat": 0}, simkit.InputError, "at least 1 save point"),
        ({"saveat": [0.0, 30.0]}, simkit.InputError, r"lie in t_span \[0.0, 20.0\]"),
        ({"saveat": [0.0, 2.0, 1.0]}, simkit.InputError, "ordered from t0 towards t1"),
        ({"saveat": "every"}, simkit.InputError, "'steps'"),
        ({"max_steps": 0}, simkit.InputError, "max_steps must be at least 1"),
        ({"max_steps": 2.5}, simkit.InputTypeError, "max_steps must be an int"),
        ({"dt0": 0.0}, simkit.InputError, "dt0 must be non-zero"),
        ({"dt0": 30.0}, simkit.InputError, "dt0 = 30 is larger than the span"),
        ({"solver": "tsit5"}, simkit.InputTypeError, "diffrax solver object"),
        ({"events": [1.0]}, simkit.InputTypeError, r"events\[0\] must be a callable"),
    ],
)
def test_input_errors_name_the_problem(kwargs, error, match):
    t_span = kwargs.pop("t_span", (0.0, 20.0))
    with pytest.raises(error, match=match):
        simkit.solve(LORENZ, t_span, **kwargs)


def test_errors_share_a_base_class():
    for cls in (simkit.ParameterError, simkit.ShapeError, simkit.InputError, simkit.SolveError):
        assert issubclass(cls, simkit.SimkitError)


def test_missing_t_span():
    model = simkit.ODEModel(rhs=lambda t, y, p: -y, params={}, y0=[1.0], state_names=("a",))
    with pytest.raises(simkit.InputError, match="no default t_span"):
        simkit.solve(model)


def test_stiff_model_with_explicit_solver_fails_loudly():
    rob = models.get("robertson")
    with pytest.raises(simkit.SolveError) as info:
        simkit.solve(rob, solver=diffrax.Tsit5(), max_steps=2000)
    msg = str(info.value)
    assert "'robertson'" in msg and "max_steps reached" in msg and "failed at t = " in msg
    assert "step size collapsed" in msg and "Kvaerno5" in msg
    # without throwing, the failure is kept in the status, never as silent numbers
    sol = simkit.solve(rob, solver=diffrax.Tsit5(), max_steps=2000, throw=False)
    assert sol.status == simkit.Status.MAX_STEPS and not sol.ok
    assert float(sol.t_final) < 1e5


def test_blow_up_is_reported():
    model = simkit.ODEModel(rhs=lambda t, y, p: y**2, params={}, y0=[1.0], state_names=("y",),
                            name="blowup")
    # y' = y^2, y(0) = 1 blows up at t = 1: the kernel's step size underflows there,
    # diffrax keeps shrinking it until max_steps
    with pytest.raises(simkit.SolveError, match=r"'blowup' failed at t = (0\.99|1 ).*step size underflowed.*blow up"):
        simkit.solve(model, (0.0, 2.0), max_steps=5000)
    with pytest.raises(simkit.SolveError, match=r"'blowup' failed at t = (0\.99|1 ).*max_steps.*blow up"):
        simkit.solve(model, (0.0, 2.0), max_steps=5000, solver=diffrax.Tsit5())
