"""Catalogue of bad inputs across the public API.

Every case is ``(call, error, match)``: ``call()`` must raise ``error`` (the built-in a Python
user catches: ``ValueError``, ``TypeError``, ``KeyError``), the error must also be a
`simkit.SimkitError`, and its message must match ``match``, which names the offending
input. Every error is raised before compilation: each case also asserts that XLA compiled
nothing while it ran (a listener on JAX's backend-compile event), so the whole file stays
cheap. The command line (``simkit ...``) is catalogued separately: its errors are one line on
stderr and a non-zero exit status.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit import Dataset, models, parallel, reference, sample, stencil
from simkit.cli import main as cli_main

NAN, INF = float("nan"), float("inf")
KEY = jax.random.key(0)

LORENZ = models.get("lorenz")  # states x, y, z; params sigma, rho, beta; t_span (0, 20)
OU = models.get("ornstein_uhlenbeck")  # stochastic: needs a key
HEAT = models.get("heat_1d")  # PDE: u0 (1, 128), params {'diffusivity'}


def _osc(t, y, p):
    return jnp.stack([y[1], -p["k"] * y[0]])


OSC = simkit.ODEModel(rhs=_osc, params={"k": 1.0}, y0=[1.0, 0.0], state_names=("x", "v"), name="osc",
                      t_span=(0.0, 1.0))
NO_SPAN = simkit.ODEModel(rhs=_osc, params={"k": 1.0}, y0=[1.0, 0.0], state_names=("x", "v"), name="nospan")


def _bad_rhs_model(rhs, name):
    return simkit.ODEModel(rhs=rhs, params={"k": 1.0}, y0=[1.0, 0.0], state_names=("x", "v"), name=name)


RHS_LIST = _bad_rhs_model(lambda t, y, p: [y[1], -y[0]], "rhs_list")
RHS_BROADCAST = _bad_rhs_model(lambda t, y, p: -y[:1], "rhs_broadcast")
RHS_SCALAR = _bad_rhs_model(lambda t, y, p: jnp.sum(y), "rhs_scalar")
RHS_MATRIX = _bad_rhs_model(lambda t, y, p: jnp.outer(y, y), "rhs_matrix")
RHS_COMPLEX = _bad_rhs_model(lambda t, y, p: 1j * y, "rhs_complex")

DATA = Dataset(times=[0.0, 1.0, 2.0], values=[1.0, 2.0, 3.0], observed=("x",))

# an ensemble result of 3 members built from arrays (no solve, nothing compiled)
ENS = simkit.EnsembleSolution(ts=np.tile([0.0, 0.5, 1.0], (3, 1)), ys=np.arange(9.0).reshape(3, 3, 1),
                              status=np.zeros(3, np.int32), stats={}, params={}, y0=np.zeros((3, 1)),
                              t_final=np.ones(3), y_final=np.ones((3, 1)), state_names=("x",))
ADVECTION = models.get("advection")  # params {'velocity': (1,)}: one per grid axis
PADDED = stencil.pad(np.arange(5.0), stencil.Neumann(0.0), 1, (1.0,))
SMALL_HEAT = stencil.PDEModel(rhs=HEAT.rhs, grid=stencil.Grid((4,), 0.0, 1.0), bcs=stencil.Periodic(),
                              params={"diffusivity": 0.1}, u0=np.ones((1, 4)), name="small_heat")

_TMP = tempfile.TemporaryDirectory(prefix="simkit-bad-inputs-")  # removed at exit
_CSV_DIR = _TMP.name
CSV = os.path.join(_CSV_DIR, "data.csv")
with open(CSV, "w", encoding="utf-8") as fh:
    fh.write("# observations\nday,cases\n0,1\n1,2\n2,4\n")


def solve(**kwargs):
    """simkit.solve on Lorenz over (0, 1), with ``kwargs`` overriding."""
    model = kwargs.pop("model", LORENZ)
    t_span = kwargs.pop("t_span", (0.0, 1.0))
    return lambda: simkit.solve(model, t_span, **kwargs)


def ens(**kwargs):
    """simkit.ensemble on Lorenz over (0, 1) with 3 members (rho batched) unless overridden."""
    model = kwargs.pop("model", LORENZ)
    t_span = kwargs.pop("t_span", (0.0, 1.0))
    kwargs.setdefault("params", {"rho": np.array([20.0, 28.0, 35.0])})
    return lambda: simkit.ensemble(model, t_span, **kwargs)


def event(fn=lambda t, y, p: y[0], **kwargs):
    return lambda: simkit.Event(fn, **kwargs)


def integrate(**kwargs):
    kwargs.setdefault("dt", 1e-5)
    kwargs.setdefault("steps", 2)
    model = kwargs.pop("model", HEAT)
    return lambda: stencil.integrate(model, **kwargs)


def rollout(params=None, u0=None, **kwargs):
    kwargs.setdefault("dt", 1e-5)
    kwargs.setdefault("steps", 2)
    return lambda: stencil.rollout(HEAT, params, u0, **kwargs)


def par_integrate(**kwargs):
    kwargs.setdefault("dt", 1e-5)
    kwargs.setdefault("steps", 2)
    model = kwargs.pop("model", HEAT)
    return lambda: parallel.integrate(model, **kwargs)


def fit(**kwargs):
    data = kwargs.pop("data", DATA)
    kwargs.setdefault("free", ["rho"])
    return lambda: simkit.fit(LORENZ, data, **kwargs)


def pde(**fields):
    fields = {"rhs": HEAT.rhs, "grid": HEAT.grid, "bcs": HEAT.bcs, "params": {}, "u0": HEAT.u0, **fields}
    return lambda: stencil.PDEModel(**fields)


def _vector_event(t, y, p):
    return y


def _failing_event(t, y, p):
    return y["x"]


class _Unhashable:
    """A callable whose class sets ``__hash__ = None`` (as a dataclass with ``eq=True`` does)."""

    __hash__ = None

    def __call__(self, t, y, p):
        return y[0] - 0.5


def _bug(reason):
    return pytest.mark.xfail(strict=True, reason="bug: " + reason)


def _complex_y0():
    return np.array([1.0 + 1.0j, 0.0])


# (call, built-in error, regex the message must match: it names the offending input)
CASES = [
    # -- simkit.solve: params ------------------------------------------------------------------
    pytest.param(solve(params=[10.0, 28.0, 8 / 3]), TypeError, r"params must be a dict.*got list", id="solve-params-list"),
    pytest.param(solve(params=np.array([10.0, 28.0, 2.0])), TypeError, r"params must be a dict.*got ndarray",
                 id="solve-params-array"),
    pytest.param(solve(params="rho=28"), TypeError, r"params must be a dict.*got str", id="solve-params-string"),
    pytest.param(solve(params=(("rho", 28.0),)), TypeError, r"params must be a dict.*got tuple",
                 id="solve-params-pairs"),
    pytest.param(solve(params={"gamma": 1.0}), KeyError, r"no parameter\(s\) \['gamma'\].*'sigma', 'rho', 'beta'",
                 id="solve-params-unknown"),
    pytest.param(solve(params={"Rho": 1.0, "rho": 2.0}), KeyError, r"\['Rho'\]", id="solve-params-unknown-case"),
    pytest.param(solve(params={"rho": NAN}), ValueError, r"parameter 'rho' is not finite", id="solve-params-nan"),
    pytest.param(solve(params={"rho": -INF}), ValueError, r"parameter 'rho' is not finite", id="solve-params-inf"),
    pytest.param(solve(params={"rho": jnp.nan}), ValueError, r"parameter 'rho' is not finite",
                 id="solve-params-jax-nan"),
    pytest.param(solve(params={"rho": "28"}), TypeError, r"parameter 'rho' must be a number", id="solve-params-str"),
    pytest.param(solve(params={"rho": None}), TypeError, r"parameter 'rho' must be a number", id="solve-params-none"),
    pytest.param(solve(params={"rho": np.ones(4)}), ValueError, r"parameter 'rho' has shape \(4,\).*ensemble",
                 id="solve-params-batch"),
    # -- simkit.solve: y0 ----------------------------------------------------------------------
    pytest.param(solve(y0=[1.0, 2.0]), ValueError, r"y0 must have shape \(3,\).*got \(2,\)", id="solve-y0-short"),
    pytest.param(solve(y0=np.ones((2, 3))), ValueError, r"y0 must have shape \(3,\).*simkit.ensemble",
                 id="solve-y0-batch"),
    pytest.param(solve(y0=1.0), ValueError, r"y0 must have shape \(3,\).*got \(\)", id="solve-y0-scalar"),
    pytest.param(solve(y0=[1.0, NAN, 0.0]), ValueError, r"y0 is not finite", id="solve-y0-nan"),
    pytest.param(solve(y0=[1.0, INF, 0.0]), ValueError, r"y0 is not finite", id="solve-y0-inf"),
    pytest.param(solve(y0="abc"), TypeError, r"y0 must be an array of shape \(3,\)", id="solve-y0-string"),
    pytest.param(solve(y0=["a", "b", "c"]), TypeError, r"y0 must be numeric", id="solve-y0-strings"),
    pytest.param(solve(y0=[[1.0], [2.0], [3.0]]), TypeError, r"y0 must be an array of shape \(3,\)",
                 id="solve-y0-nested"),
    # -- simkit.solve: t_span ------------------------------------------------------------------
    pytest.param(solve(t_span=5.0), ValueError, r"t_span must be a pair", id="solve-tspan-scalar"),
    pytest.param(solve(t_span=(0.0, 1.0, 2.0)), ValueError, r"t_span must be a pair", id="solve-tspan-three"),
    pytest.param(solve(t_span="01"), ValueError, r"t_span must be a pair", id="solve-tspan-string"),
    pytest.param(solve(t_span=(0.0, NAN)), ValueError, r"t1 must be finite", id="solve-tspan-nan-end"),
    pytest.param(solve(t_span=(NAN, 1.0)), ValueError, r"t0 must be finite", id="solve-tspan-nan-start"),
    pytest.param(solve(t_span=(0.0, INF)), ValueError, r"t1 must be finite.*terminal event", id="solve-tspan-inf"),
    pytest.param(solve(t_span=(-INF, 0.0)), ValueError, r"t0 must be finite", id="solve-tspan-minus-inf"),
    pytest.param(solve(t_span=("0", 1.0)), TypeError, r"t0 must be a real number", id="solve-tspan-str"),
    pytest.param(solve(t_span=(0.0, [1.0, 2.0])), TypeError, r"t1 must be a real number", id="solve-tspan-array"),
    pytest.param(solve(model=NO_SPAN, t_span=None), ValueError, r"'nospan' has no default t_span",
                 id="solve-tspan-missing"),
    pytest.param(solve(t_span=(0.0, INF), events=simkit.Event(lambda t, y, p: y[0] - 100.0)), ValueError,
                 r"t1 = inf needs explicit save times", id="solve-tspan-inf-linspace"),
    # -- simkit.solve: tolerances --------------------------------------------------------------
    pytest.param(solve(rtol=-1e-6), ValueError, r"rtol must be >= 0", id="solve-rtol-negative"),
    pytest.param(solve(rtol=NAN), ValueError, r"rtol must be finite", id="solve-rtol-nan"),
    pytest.param(solve(rtol="1e-6"), TypeError, r"rtol must be a number", id="solve-rtol-string"),
    pytest.param(solve(rtol=None), TypeError, r"rtol must be a number", id="solve-rtol-none"),
    pytest.param(solve(rtol=[1e-3, 1e-3, 1e-3]), TypeError, r"rtol must be a real scalar", id="solve-rtol-array"),
    pytest.param(solve(atol=-1.0), ValueError, r"atol must be >= 0", id="solve-atol-negative"),
    pytest.param(solve(atol=INF), ValueError, r"atol must be finite", id="solve-atol-inf"),
    pytest.param(solve(atol=1j), TypeError, r"atol must be a real scalar", id="solve-atol-complex"),
    pytest.param(solve(rtol=0.0, atol=0.0), ValueError, r"rtol and atol are both 0", id="solve-tolerances-zero"),
    # a pure relative tolerance and a state at exactly 0: NaN first step, "max_steps reached" at t0
    pytest.param(solve(atol=0.0, y0=np.array([1.0, 0.0, 1.0])), ValueError, r"atol = 0 .* states \['y'\] that start at exactly 0",
                 id="solve-atol-zero-state-zero"),
    # atol one per state (SciPy's array_like atol)
    pytest.param(solve(atol=[1e-6, 1e-6]), ValueError, r"atol must be a scalar or have shape \(3,\), one per state, "
                 r"got shape \(2,\)", id="solve-atol-per-state-short"),
    pytest.param(solve(atol=np.full((3, 1), 1e-6)), ValueError, r"atol must be a scalar or have shape \(3,\)",
                 id="solve-atol-per-state-2d"),
    pytest.param(solve(atol=[1e-6, -1e-6, 1e-6]), ValueError, r"atol must be finite and >= 0 for every state, got "
                 r"-1e-06 for state 'y'", id="solve-atol-per-state-negative"),
    pytest.param(solve(atol=[1e-6, 1e-6, NAN]), ValueError, r"got nan for state 'z'", id="solve-atol-per-state-nan"),
    pytest.param(solve(atol=["a", "b", "c"]), TypeError, r"atol must be real numbers", id="solve-atol-per-state-str"),
    pytest.param(solve(rtol=0.0, atol=[1e-6, 0.0, 1e-6]), ValueError, r"rtol and atol are both 0 for the states "
                 r"\['y'\]", id="solve-atol-per-state-zero-rtol-zero"),
    pytest.param(solve(atol=[1e-6, 0.0, 1e-6], y0=np.array([1.0, 0.0, 0.0])), ValueError,
                 r"atol = 0 .* states \['y'\] that start at exactly 0", id="solve-atol-per-state-zero-state-zero"),
    pytest.param(solve(atol=["1e-6", "1e-6", "1e-6"]), TypeError, r"atol must be real numbers",
                 id="solve-atol-per-state-numeric-strings"),
    pytest.param(lambda: simkit.BDF("krylov", jac_sparsity=np.eye(3)), ValueError, r"'krylov' does not use jac_sparsity",
                 id="bdf-krylov-with-pattern"),
    pytest.param(solve(solver=diffrax.Euler()), ValueError, r"Euler\(\) has no error estimate", id="solve-diffrax-euler-ode"),
    # -- simkit.solve: max_steps, max_step, dt0 ----------------------------------------------------
    pytest.param(solve(max_steps=0), ValueError, r"max_steps must be at least 1, got 0", id="solve-max-steps-0"),
    pytest.param(solve(max_steps=-5), ValueError, r"max_steps must be at least 1", id="solve-max-steps-negative"),
    pytest.param(solve(max_steps=2.5), TypeError, r"max_steps must be an int, got 2.5", id="solve-max-steps-float"),
    pytest.param(solve(max_steps=True), TypeError, r"max_steps must be an int, got True", id="solve-max-steps-bool"),
    pytest.param(solve(max_steps="100"), TypeError, r"max_steps must be an int", id="solve-max-steps-string"),
    pytest.param(solve(max_step=-1.0), ValueError, r"max_step must be positive", id="solve-max-step-negative"),
    pytest.param(solve(max_step=0.0), ValueError, r"max_step must be positive", id="solve-max-step-zero"),
    pytest.param(solve(max_step=NAN), ValueError, r"max_step must be", id="solve-max-step-nan"),
    pytest.param(solve(max_step=-INF), ValueError, r"max_step must be", id="solve-max-step-minus-inf"),
    pytest.param(solve(max_step=INF, dt0=0.0), ValueError, r"dt0 must be non-zero", id="solve-max-step-inf-is-no-limit"),
    pytest.param(solve(max_step="big"), TypeError, r"max_step must be a number", id="solve-max-step-string"),
    pytest.param(solve(dt0=0.0), ValueError, r"dt0 must be non-zero", id="solve-dt0-zero"),
    pytest.param(solve(dt0=NAN), ValueError, r"dt0 must be finite", id="solve-dt0-nan"),
    pytest.param(solve(dt0=10.0), ValueError, r"dt0 = 10 is larger than the span", id="solve-dt0-above-span"),
    pytest.param(solve(dt0="0.1"), TypeError, r"dt0 must be a number", id="solve-dt0-string"),
    # -- simkit.solve: saveat ------------------------------------------------------------------
    pytest.param(solve(saveat=0), ValueError, r"saveat must be at least 1 save point, got 0", id="solve-saveat-0"),
    pytest.param(solve(saveat=-3), ValueError, r"saveat must be at least 1 save point", id="solve-saveat-negative"),
    pytest.param(solve(saveat="stepz"), ValueError, r"saveat must be .*'steps'; got 'stepz'", id="solve-saveat-typo"),
    pytest.param(solve(saveat=2.5), TypeError, r"saveat must be an int count.*got 2.5", id="solve-saveat-float"),
    pytest.param(solve(saveat=True), TypeError, r"ts must be an int count.*got True", id="solve-saveat-bool"),
    pytest.param(solve(saveat=np.ones((2, 2))), ValueError, r"saveat times must be a non-empty 1-D array.*\(2, 2\)",
                 id="solve-saveat-2d"),
    pytest.param(solve(saveat=[]), ValueError, r"saveat times must be a non-empty 1-D array", id="solve-saveat-empty"),
    pytest.param(solve(saveat=[0.0, NAN, 1.0]), ValueError, r"saveat times must be finite", id="solve-saveat-nan"),
    pytest.param(solve(saveat=[0.0, 2.0]), ValueError, r"saveat times must lie in t_span \[0.0, 1.0\]",
                 id="solve-saveat-after-span"),
    pytest.param(solve(saveat=[-1.0, 0.5]), ValueError, r"saveat times must lie in t_span", id="solve-saveat-before-span"),
    pytest.param(solve(saveat=[0.5, 0.2]), ValueError, r"saveat times must be ordered from t0 towards t1",
                 id="solve-saveat-unsorted"),
    pytest.param(solve(t_span=(1.0, 0.0), saveat=[0.2, 0.5]), ValueError, r"ordered from t0 towards t1",
                 id="solve-saveat-unsorted-backward"),
    pytest.param(solve(saveat="steps", max_steps=10**9), ValueError, r"memory budget.*lower max_steps",
                 id="solve-saveat-steps-memory"),
    pytest.param(solve(saveat=10**9), ValueError, r"saving 1000000000 rows.*memory budget.*save fewer times",
                 id="solve-saveat-count-memory"),
    pytest.param(lambda: simkit.SaveAt(ts=[0.5], steps=True), ValueError, r"give ts or steps=True, not both",
                 id="saveat-ts-and-steps"),
    pytest.param(lambda: simkit.SaveAt(steps="yes"), TypeError, r"steps and dense must be bools",
                 id="saveat-steps-string"),
    pytest.param(solve(dense=True, solver=simkit.Tsit5(), max_steps=10**8), ValueError,
                 r"dense output for up to max_steps = 100000000 steps.*memory budget", id="solve-dense-memory"),
    # -- simkit.solve: events ------------------------------------------------------------------
    pytest.param(solve(events=1.0), TypeError, r"events must be a callable.*got 1.0", id="solve-events-number"),
    pytest.param(solve(events="x"), TypeError, r"events must be a callable.*got 'x'", id="solve-events-string"),
    pytest.param(solve(events=[lambda t, y, p: y[0], 2.0]), TypeError, r"events\[1\] must be a callable",
                 id="solve-events-list-item"),
    pytest.param(solve(events=_vector_event), ValueError, r"event 0 must return a scalar, got \(3,\)",
                 id="solve-event-vector"),
    pytest.param(solve(events=[lambda t, y, p: y[0], _failing_event]), ValueError,
                 r"event 1 \('_failing_event'\) failed to evaluate", id="solve-event-fails"),
    pytest.param(event(fn=1.0), TypeError, r"Event: fn must be a callable", id="event-not-callable"),
    pytest.param(event(direction=2), ValueError, r"Event: direction must be -1, 0 or \+1, got 2", id="event-direction"),
    pytest.param(event(terminal=-1), ValueError, r"Event: terminal must be .*got -1", id="event-terminal-negative"),
    pytest.param(event(terminal=2.5), ValueError, r"Event: terminal must be .*got 2.5", id="event-terminal-float"),
    pytest.param(event(max_records=0), ValueError, r"Event: max_records must be a positive int", id="event-max-records"),
    # -- simkit.solve: the model, its rhs and the solver ------------------------------------------
    pytest.param(lambda: simkit.solve("lorenz", (0.0, 1.0)), TypeError, r"expected an ODEModel.*got str",
                 id="solve-model-string"),
    pytest.param(solve(model=RHS_LIST, t_span=(0.0, 1.0)), TypeError, r"'rhs_list': rhs must return one array.*list",
                 id="solve-rhs-list"),
    pytest.param(solve(model=RHS_BROADCAST, t_span=(0.0, 1.0)), ValueError,
                 r"'rhs_broadcast': rhs returned shape \(1,\), the state has shape \(2,\)", id="solve-rhs-broadcast"),
    pytest.param(solve(model=RHS_SCALAR, t_span=(0.0, 1.0)), ValueError, r"'rhs_scalar': rhs returned shape \(\)",
                 id="solve-rhs-scalar"),
    pytest.param(solve(model=RHS_MATRIX, t_span=(0.0, 1.0)), ValueError, r"'rhs_matrix': rhs returned shape \(2, 2\)",
                 id="solve-rhs-matrix"),
    pytest.param(solve(model=RHS_COMPLEX, t_span=(0.0, 1.0)), TypeError, r"'rhs_complex': rhs returned complex",
                 id="solve-rhs-complex"),
    pytest.param(solve(solver=simkit.Tsit5), TypeError, r"solver must be a solver object, e.g. Tsit5\(\), not the class",
                 id="solve-solver-kernel-class"),
    pytest.param(solve(solver=diffrax.Kvaerno5), TypeError, r"Kvaerno5\(\), not the class",
                 id="solve-solver-diffrax-class"),
    pytest.param(solve(solver="tsit5"), TypeError, r"solver must be a simkit kernel.*got 'tsit5'",
                 id="solve-solver-string"),
    pytest.param(solve(model=OSC, y0=_complex_y0(), solver=simkit.Rodas4()), TypeError,
                 r"Rodas4\(\) does not support complex states", id="solve-complex-rodas4"),
    pytest.param(solve(key=KEY), ValueError, r"'lorenz' is deterministic: key is only for stochastic",
                 id="solve-key-deterministic"),
    pytest.param(solve(model=OU), ValueError, r"'ornstein_uhlenbeck' is stochastic: pass key=",
                 id="solve-key-missing"),
    pytest.param(solve(model=OU, key=KEY, solver=simkit.Tsit5()), ValueError,
                 r"simkit.Tsit5\(\) solves ODEs.*'ornstein_uhlenbeck'", id="solve-sde-kernel"),
    # -- simkit.ensemble -----------------------------------------------------------------------
    pytest.param(ens(params={"rho": np.zeros(0)}), ValueError, r"member axis is empty \(0 members\)",
                 id="ensemble-zero-members"),
    pytest.param(ens(devices=[]), ValueError, r"devices is empty", id="ensemble-no-devices"),
    pytest.param(ens(y0=np.ones((4, 3))), ValueError, r"member counts disagree.*'y0': 4", id="ensemble-counts"),
    pytest.param(ens(params={"rho": np.ones(3), "beta": np.ones(2)}), ValueError,
                 r"member counts disagree.*parameter 'beta'", id="ensemble-counts-params"),
    pytest.param(ens(saveat=simkit.SaveAt(ts=5, dense=True)), ValueError,
                 r"ensemble\(\): dense output \(SaveAt\(dense=True\)\) is not kept per member", id="ensemble-dense"),
    pytest.param(ens(chunk_size=0), ValueError, r"chunk_size must be at least 1, got 0", id="ensemble-chunk-0"),
    # -- switches: a bool, not a value read by its truth ("no" would read as True) -----------
    pytest.param(ens(refill="no"), TypeError, r"refill must be True, False or None, got 'no'", id="ensemble-refill-str"),
    pytest.param(ens(balance=1), TypeError, r"balance must be True or False, got 1", id="ensemble-balance-int"),
    pytest.param(ens(progress="off"), TypeError, r"progress must be True, False or None, got 'off'",
                 id="ensemble-progress-str"),
    pytest.param(solve(dense="yes"), TypeError, r"dense must be True or False, got 'yes'", id="solve-dense-str"),
    pytest.param(solve(throw=0), TypeError, r"throw must be True or False, got 0", id="solve-throw-int"),
    pytest.param(integrate(check_stability="false"), TypeError, r"check_stability must be True or False",
                 id="integrate-check-stability-str"),
    pytest.param(par_integrate(throw=None), TypeError, r"throw must be True or False, got None",
                 id="parallel-throw-none"),
    pytest.param(ens(chunk_size=2.5), TypeError, r"chunk_size must be an int, got 2.5", id="ensemble-chunk-float"),
    pytest.param(ens(params=None), ValueError, r"nothing is batched", id="ensemble-nothing-batched"),
    pytest.param(ens(params={"rho": np.ones((3, 2))}), ValueError, r"parameter 'rho': expected shape \(\)",
                 id="ensemble-param-shape"),
    pytest.param(ens(params={"rho": np.array([28.0, NAN, 30.0])}), ValueError,
                 r"parameter 'rho' is not finite for members \[1\]", id="ensemble-param-nan"),
    pytest.param(ens(params={"gamma": np.ones(3)}), KeyError, r"no parameter\(s\) \['gamma'\]",
                 id="ensemble-param-unknown"),
    pytest.param(ens(params=[1.0, 2.0]), TypeError, r"params must be a dict.*got list", id="ensemble-params-list"),
    pytest.param(ens(y0=np.ones((3, 2)), params=None), ValueError, r"y0: expected shape \(3,\) or \(members, 3\)",
                 id="ensemble-y0-shape"),
    pytest.param(ens(y0=np.full((2, 3), NAN), params=None), ValueError, r"y0 is not finite", id="ensemble-y0-nan"),
    pytest.param(ens(rtol=-1.0), ValueError, r"rtol must be >= 0", id="ensemble-rtol"),
    pytest.param(ens(saveat="steps", max_steps=10**9), ValueError, r"memory budget", id="ensemble-steps-memory"),
    pytest.param(ens(key=KEY), ValueError, r"deterministic: key is only for stochastic", id="ensemble-key"),
    pytest.param(lambda: simkit.ensemble("lorenz", (0.0, 1.0)), TypeError, r"expects an ODEModel, got str",
                 id="ensemble-model-string"),
    # -- simkit.stencil ------------------------------------------------------------------------
    pytest.param(lambda: stencil.Grid((8.5,)), ValueError, r"shape \(8.5,\).*whole number", id="grid-shape-float"),
    pytest.param(lambda: stencil.Grid((1,)), ValueError, r"at least 2 points per axis", id="grid-shape-one"),
    pytest.param(lambda: stencil.Grid((4, 4, 4, 4)), ValueError, r"1 to 3 axes", id="grid-four-axes"),
    pytest.param(lambda: stencil.Grid((8,), lower=1.0, upper=0.0), ValueError, r"lower < upper", id="grid-box"),
    pytest.param(lambda: stencil.Grid((8, 8), lower=(0.0, 0.0, 0.0)), ValueError, r"lower has 3 entries for a 2-D",
                 id="grid-lower-length"),
    pytest.param(lambda: stencil.Grid((8,), centering="edge"), ValueError, r"centering must be one of.*'edge'",
                 id="grid-centering"),
    pytest.param(pde(bcs="periodic"), TypeError, r"bcs takes boundary-condition objects.*'periodic'",
                 id="pde-bcs-string"),
    pytest.param(pde(u0=np.zeros((1, 64))), ValueError, r"u0 must have shape .*\(1, 128\), got \(1, 64\)",
                 id="pde-u0-shape"),
    pytest.param(integrate(steps=2.5), ValueError, r"steps must be a whole number, got 2.5", id="integrate-steps-float"),
    pytest.param(integrate(steps=0), ValueError, r"steps \(0\) must be a positive multiple", id="integrate-steps-0"),
    pytest.param(integrate(steps=10, save_every=3), ValueError, r"multiple of save_every \(3\)",
                 id="integrate-save-every"),
    pytest.param(integrate(dt=0.0), ValueError, r"dt must be positive and finite.*got 0", id="integrate-dt-zero"),
    pytest.param(integrate(dt=NAN), ValueError, r"dt must be positive and finite", id="integrate-dt-nan"),
    pytest.param(integrate(params={"nope": 1.0}), KeyError, r"'heat_1d' has no parameter\(s\) \['nope'\]",
                 id="integrate-params-unknown"),
    pytest.param(integrate(params=[1.0]), TypeError, r"params must be a dict", id="integrate-params-list"),
    pytest.param(integrate(params={"diffusivity": NAN}), ValueError, r"parameter 'diffusivity' is not finite",
                 id="integrate-params-nan"),
    pytest.param(integrate(u0=np.zeros((1, 64))), ValueError, r"u0.*\(1, 128\).*\(1, 64\)", id="integrate-u0-shape"),
    pytest.param(integrate(u0=np.full((1, 128), NAN)), ValueError, r"u0 of 'heat_1d' is not finite",
                 id="integrate-u0-nan"),
    pytest.param(integrate(stepper="rk4"), TypeError, r"stepper must be a simkit.stencil stepper.*'rk4'",
                 id="integrate-stepper-string"),
    pytest.param(integrate(model=HEAT.replace(linear=None), stepper=stencil.IMEXEuler()), ValueError, r"IMEXEuler needs the model's linear part",
                 id="integrate-imex-without-linear"),
    pytest.param(integrate(model=LORENZ), TypeError, r"expects a PDEModel, got ODEModel",
                 id="integrate-ode-model"),
    pytest.param(rollout(params={"nope": 1.0}), KeyError, r"no parameter\(s\) \['nope'\]", id="rollout-params-unknown"),
    pytest.param(rollout(u0=np.zeros((1, 64))), ValueError, r"u0 must have shape \(1, 128\), got \(1, 64\)",
                 id="rollout-u0-shape"),
    pytest.param(rollout(steps=2.5), ValueError, r"steps must be a whole number", id="rollout-steps-float"),
    # -- simkit.parallel -----------------------------------------------------------------------
    pytest.param(par_integrate(transform="vmap"), ValueError, r"transform must be one of.*'vmap'",
                 id="parallel-transform"),
    pytest.param(par_integrate(model=LORENZ), TypeError, r"expects a PDEModel, got ODEModel",
                 id="parallel-ode-model"),
    pytest.param(par_integrate(params={"nope": 1.0}), KeyError, r"no parameter\(s\) \['nope'\]",
                 id="parallel-params-unknown"),
    pytest.param(par_integrate(steps=0), ValueError, r"steps \(0\) must be a positive multiple", id="parallel-steps-0"),
    pytest.param(lambda: parallel.integrate(HEAT, dt=1e-5, steps=2, mesh=parallel.mesh_for(stencil.Grid((8, 8)))),
                 ValueError, r"mesh axes \('x', 'y'\) do not match a 1-D grid", id="parallel-mesh-axes"),
    pytest.param(lambda: parallel.mesh_for(stencil.Grid((6,)), shape=(4,)), ValueError,
                 r"grid of shape \(6,\) does not split evenly into mesh \(4,\)", id="parallel-mesh-uneven"),
    pytest.param(lambda: parallel.rollout(HEAT, {"nope": 1.0}, dt=1e-5, steps=2), KeyError, r"\['nope'\]",
                 id="parallel-rollout-params-unknown"),
    # -- simkit.fit ----------------------------------------------------------------------------
    pytest.param(fit(free=["gamma"]), KeyError, r"no parameter\(s\) \['gamma'\]", id="fit-free-unknown"),
    pytest.param(fit(bounds={"rho": (2.0, 1.0)}), ValueError, r"lower must be below upper for \['rho'\]",
                 id="fit-bounds-reversed"),
    pytest.param(fit(bounds={"gamma": (0.0, 1.0)}), KeyError, r"bounds given for \['gamma'\], which are not free",
                 id="fit-bounds-unknown"),
    pytest.param(fit(bounds={"rho": (0.0, 1.0)}), ValueError, r"starting values of \['rho'\] are not strictly inside",
                 id="fit-start-outside-bounds"),
    pytest.param(fit(initial={"gamma": 1.0}), KeyError, r"initial values given for \['gamma'\]",
                 id="fit-initial-unknown"),
    pytest.param(fit(data="data.csv"), ValueError, r"data must be a simkit.Dataset", id="fit-data-string"),
    pytest.param(fit(data=Dataset(times=[0.0, 1.0], values=[1.0, 2.0], observed=("q",))), ValueError,
                 r"observes \['q'\], not states of 'lorenz'", id="fit-data-unknown-state"),
    pytest.param(fit(starts=0), ValueError, r"starts must be at least 1, got 0", id="fit-starts-0"),
    pytest.param(fit(initial_state="guess"), ValueError, r"initial_state must be 'fixed',? (or )?'fit'.*, got 'guess'",
                 id="fit-initial-state"),
    pytest.param(fit(optimizer="lm"), (TypeError, ValueError), r"optimizer must be a simkit fitting optimiser.*'lm'",
                 id="fit-optimizer-string"),
    # -- simkit.Dataset --------------------------------------------------------------------------
    pytest.param(lambda: Dataset(times=[0.0, 1.0, 2.0], values=[1.0, 2.0], observed=("x",)), ValueError,
                 r"times \(3,\) and values \(2, 1\)", id="dataset-lengths"),
    pytest.param(lambda: Dataset(times=[0.0, 2.0, 1.0], values=[1.0, 2.0, 3.0], observed=("x",)), ValueError,
                 r"times must be strictly increasing", id="dataset-times-unsorted"),
    pytest.param(lambda: Dataset(times=[0.0, 1.0], values=[[1.0, 2.0], [3.0, 4.0]], observed=("x",)), ValueError,
                 r"2 value columns but 1 observed states", id="dataset-columns"),
    pytest.param(lambda: Dataset(times=[0.0, 1.0], values=[1.0, 2.0], observed=("x",), sigma=-1.0), ValueError,
                 r"sigma must be positive", id="dataset-sigma-negative"),
    pytest.param(lambda: Dataset(times=[0.0, 1.0], values=[NAN, NAN], observed=("x",)), ValueError,
                 r"no finite values", id="dataset-all-nan"),
    pytest.param(lambda: Dataset.from_csv(CSV, time="day", columns={"deaths": "x"}), ValueError,
                 r"no column\(s\) \['deaths'\]; the file has \['day', 'cases'\]", id="dataset-csv-column"),
    pytest.param(lambda: Dataset.from_csv(CSV, time="t", columns={"cases": "x"}), ValueError,
                 r"no column\(s\) \['t'\]", id="dataset-csv-time-column"),
    # -- simkit.sample -------------------------------------------------------------------------
    pytest.param(lambda: sample.uniform(KEY, {"rho": (2.0, 1.0)}, 4), ValueError, r"'rho' needs low <= high",
                 id="sample-uniform-reversed"),
    pytest.param(lambda: sample.latin_hypercube(KEY, {"rho": (2.0, 1.0)}, 4), ValueError, r"'rho' needs low <= high",
                 id="sample-lhs-reversed"),
    pytest.param(lambda: sample.uniform(KEY, {"rho": (1.0, NAN)}, 4), ValueError, r"'rho' needs two finite numbers",
                 id="sample-uniform-nan"),
    pytest.param(lambda: sample.uniform(KEY, {"rho": (1.0, 2.0, 3.0)}, 4), ValueError,
                 r"'rho' needs \(low, high\) as two real numbers", id="sample-uniform-three"),
    pytest.param(lambda: sample.uniform(KEY, {"rho": (1.0, 2.0)}, 0), ValueError, r"n must be positive, got 0",
                 id="sample-uniform-n-0"),
    pytest.param(lambda: sample.normal(KEY, {"rho": (28.0, -1.0)}, 4), ValueError, r"standard deviations",
                 id="sample-normal-std"),
    # -- simkit.reference.solve_ivp --------------------------------------------------------------
    pytest.param(lambda: reference.solve_ivp(LORENZ, (0.0, 0.1), params={"rho": NAN}), ValueError,
                 r"\['rho'\] of 'lorenz' are not finite", id="reference-params-nan"),
    pytest.param(lambda: reference.solve_ivp(LORENZ, (0.0, 0.1), params={"gamma": 1.0}), KeyError,
                 r"no parameter\(s\) \['gamma'\]", id="reference-params-unknown"),
    pytest.param(lambda: reference.solve_ivp(LORENZ, (0.0, 0.1), params=[1.0]), TypeError,
                 r"params must be a (dict|mapping)", id="reference-params-list"),
    pytest.param(lambda: reference.solve_ivp(LORENZ, (0.0, 0.1), method="RK4"), ValueError,
                 r"method must be one of.*'RK4'", id="reference-method"),
    pytest.param(lambda: reference.solve_ivp(NO_SPAN), ValueError, r"'nospan' has no default t_span",
                 id="reference-tspan-missing"),

    # -- known bugs (reported to the lead): strict, so a fix shows up as XPASS ---------------------
    pytest.param(lambda: reference.solve_ivp(LORENZ, (0.0, 0.01), y0=[1.0, 2.0]), ValueError, r"y0.*\(3,\)",
                 id="reference-y0-shape"),
    pytest.param(lambda: reference.solve_ivp(LORENZ, (0.0, 0.01, 2.0)), ValueError, r"t_span",
                 id="reference-tspan-three"),
    pytest.param(lambda: reference.solve_ivp(LORENZ, (0.0, 0.01), saveat=0), ValueError, r"saveat",
                 id="reference-saveat-0"),
    pytest.param(lambda: reference.solve_ivp(LORENZ, (0.0, 0.01), saveat=[0.005, 2.0]), ValueError, r"saveat",
                 id="reference-saveat-outside"),
    pytest.param(ens(y0="abc", params=None), TypeError, r"y0", id="ensemble-y0-string"),
    pytest.param(fit(free="rho"), TypeError, r"free", id="fit-free-string"),
    pytest.param(fit(bounds="negative"), ValueError, r"bounds", id="fit-bounds-string"),
    pytest.param(lambda: sample.uniform(KEY, {"rho": (1.0, 2.0)}, 2.5), TypeError, r"\bn\b", id="sample-n-float"),
    pytest.param(lambda: sample.uniform(KEY, [(1.0, 2.0)], 4), TypeError, r"ranges", id="sample-ranges-list"),
    pytest.param(lambda: Dataset(times=[0.0, 1.0], values=[1.0, 2.0], observed=("x",), sigma=[1.0, 1.0, 1.0]),
                 ValueError, r"sigma", id="dataset-sigma-shape"),
    pytest.param(integrate(dt="0.1"), TypeError, r"\bdt\b", id="integrate-dt-string"),
    # -- functions simkit compiles by: callable and hashable (JAX's "Non-hashable static
    # arguments" named simkit's internal program, not the function) ------------------------------
    pytest.param(lambda: simkit.ODEModel(rhs=_Unhashable(), params={}, y0=[1.0], state_names=("a",)), TypeError,
                 r"rhs must be hashable.*_Unhashable", id="model-rhs-unhashable"),
    pytest.param(lambda: simkit.ODEModel(rhs=3.0, params={}, y0=[1.0], state_names=("a",)), TypeError,
                 r"rhs must be a callable", id="model-rhs-not-callable"),
    pytest.param(lambda: LORENZ.replace(diffusion=_Unhashable()), TypeError, r"diffusion must be hashable",
                 id="model-diffusion-unhashable"),
    pytest.param(solve(events=_Unhashable()), TypeError, r"Event: fn must be hashable", id="solve-event-unhashable"),
    # -- results, stencils and meshes: NumPy's, JAX's or Python's own errors before, or no error ----------
    pytest.param(lambda: ENS.quantile(1.5), ValueError, r"EnsembleSolution.quantile\(\): q must lie in \[0, 1\], got "
                 r"\[1.5\]$", id="ensemble-quantile-above-one"),
    pytest.param(lambda: ENS.quantile([5, 95]), ValueError, r"got \[5.0, 95.0\] \(a percentage\? 90 % is q=0.9\)",
                 id="ensemble-quantile-percent"),
    pytest.param(lambda: ENS.quantile(NAN), ValueError, r"q must lie in \[0, 1\], got \[nan\]", id="ensemble-quantile-nan"),
    pytest.param(lambda: ENS.quantile("median"), TypeError, r"q must be a number or numbers in \[0, 1\], got 'median'",
                 id="ensemble-quantile-string"),
    pytest.param(lambda: ENS.std(ddof=-1), ValueError, r"std\(\): ddof must be >= 0 \(the divisor is n - ddof\), "
                 r"got -1", id="ensemble-std-ddof-negative"),  # (a divisor of n + 1, silently)
    pytest.param(lambda: ENS.std(ddof=0.5), TypeError, r"std\(\): ddof must be a whole number", id="ensemble-std-ddof-float"),
    pytest.param(integrate(diagnostics={"label": lambda u, s: "hot"}), TypeError, r"diagnostic 'label' of 'heat_1d' "
                 r"returned a value JAX cannot hold; it must return a number or an array", id="integrate-diagnostic-string"),
    pytest.param(rollout(diagnostics={"none": lambda u, s: None}), TypeError, r"diagnostic 'none' of 'heat_1d' "
                 r"returned NoneType", id="rollout-diagnostic-none"),
    pytest.param(lambda: parallel.mesh_for(stencil.Grid((4,), 0.0, 1.0), jax.devices()[:4], shape=(4,)), ValueError,
                 r"grid of shape \(4,\) is too small for mesh \(4,\) \(4 devices\): axis 0 \(4 points over 4 devices: "
                 r"1 each, fewer than 2\); device counts that work for this grid: \[1, 2\]", id="parallel-mesh-too-small"),
    pytest.param(lambda: parallel.integrate(SMALL_HEAT, mesh=parallel.mesh_for(stencil.Grid((8,), 0.0, 1.0),
                                                                               jax.devices()[:4]), dt=1e-5, steps=2),
                 ValueError, r"grid of shape \(4,\) is too small for "
                 r"mesh \(4,\) \(4 devices\)", id="parallel-integrate-grid-too-small"),  # named a 1-point Grid
    pytest.param(lambda: stencil.Rusanov("fast"), TypeError, r"Rusanov\(wave_speed\): wave_speed is f'\(u\), a function "
                 r"of the state .* or a constant speed \(e.g. Rusanov\(1.0\)\); got 'fast'", id="rusanov-string"),
    pytest.param(lambda: stencil.Rusanov(INF), ValueError, r"a constant speed must be finite, got inf", id="rusanov-inf"),
    pytest.param(lambda: stencil.advection(PADDED, 1.0, 1.0), TypeError, r"advection: velocity must be a sequence of "
                 r"one entry per grid axis, e.g. \[1.0\]", id="advection-velocity-number"),
    pytest.param(lambda: stencil.advection(PADDED, [np.ones(3)], 1.0), ValueError, r"advection: velocity\[0\] has "
                 r"shape \(3,\); each entry is a number or an array of the field's shape \(5,\)",
                 id="advection-velocity-shape"),
    pytest.param(integrate(model=ADVECTION, params={"velocity": np.array([1.0, 2.0])}), ValueError,
                 r"model 'advection': parameter 'velocity' has shape \(2,\), its default \(1,\)",
                 id="integrate-velocity-shape"),  # JAX's "Incompatible types for broadcasting" from inside the rhs
    pytest.param(lambda: stencil.rollout(ADVECTION, {"velocity": np.ones(200)}, dt=1e-4, steps=2), ValueError,
                 r"parameter 'velocity' has shape \(200,\), its default \(1,\)", id="rollout-velocity-shape"),
    pytest.param(lambda: simkit.ODEModel(rhs=_osc, params={"k": 1.0}, y0=[1.0, 0.0], state_names=("x", "")),
                 ValueError, r"state_names\[1\] are empty in \('x', ''\): every state needs a name",
                 id="model-state-name-empty"),
    pytest.param(lambda: simkit.ODEModel(rhs=_osc, params={"k": 1.0}, y0=[1.0, 0.0], state_names=(" ", "v")),
                 ValueError, r"state_names\[0\] are empty", id="model-state-name-blank"),
]


@pytest.fixture
def compiles():
    """Backend compilations while a test runs (none expected: errors come before)."""
    seen: list[float] = []

    def listener(event: str, duration: float, **kwargs) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            seen.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    yield seen
    jax.monitoring.unregister_event_duration_listener(listener)


@pytest.mark.parametrize("call, error, match", CASES)
def test_bad_input(call, error, match, compiles):
    with pytest.raises(error, match=match) as info:
        call()
    assert isinstance(info.value, simkit.SimkitError), f"{type(info.value).__mro__} is not a SimkitError"
    assert not compiles, f"{len(compiles)} compilation(s) before the error: it must be raised before compiling"


def test_catalogue_size():
    assert len(CASES) + len(CLI_CASES) >= 80


# -- the command line ---------------------------------------------------------------------------------


class CommandFailed(Exception):
    """A ``simkit`` command that exited with a non-zero status: ``(status, stderr)``."""


def cli(*argv: str):
    def call():
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                status = cli_main(list(argv))
            except SystemExit as exc:  # argparse
                status = exc.code
        text = err.getvalue()
        if status not in (0, None):
            raise CommandFailed(status, text)
        return text

    return call


CLI_CASES = [
    pytest.param(cli("run", "nosuchmodel"), r"no model named 'nosuchmodel'", id="cli-unknown-model"),
    pytest.param(cli("run", "lorenz", "--set", "gamma=1"), r"no parameter\(s\) \['gamma'\]", id="cli-unknown-param"),
    pytest.param(cli("run", "lorenz", "--set", "rho"), r"--set expects name=value, got 'rho'", id="cli-set-no-value"),
    pytest.param(cli("run", "lorenz", "--set", "rho=abc"), r"value of 'rho' is not a number: 'abc'",
                 id="cli-set-not-number"),
    pytest.param(cli("run", "lorenz", "--set", "rho=nan"), r"parameter 'rho' is not finite", id="cli-set-nan"),
    pytest.param(cli("run", "lorenz", "--saveat", "0"), r"saveat must be at least 1", id="cli-saveat-0"),
    pytest.param(cli("run", "lorenz", "--rtol", "-1"), r"rtol must be >= 0", id="cli-rtol-negative"),
    pytest.param(cli("run", "lorenz", "--t1", "nan"), r"t1 must be finite", id="cli-t1-nan"),
    pytest.param(cli("run", "lorenz", "--t0", "5", "--t1", "5", "--saveat", "x"), r"--saveat: invalid int value: 'x'",
                 id="cli-saveat-not-int"),
    pytest.param(cli("run", "heat_1d"), r"'heat_1d' is a PDE model", id="cli-pde-model"),
    pytest.param(cli("run", "lorenz", "--csv", os.path.join(_CSV_DIR, "missing", "out.csv")),
                 r"--csv .*is not an existing folder", id="cli-csv-folder"),
    pytest.param(cli("frobnicate"), r"invalid choice: 'frobnicate'", id="cli-unknown-command"),
]


@pytest.mark.parametrize("call, match", CLI_CASES)
def test_bad_command_line(call, match, compiles):
    with pytest.raises(CommandFailed) as info:
        call()
    status, err = info.value.args
    assert status == 2, (status, err)
    assert "Traceback" not in err, err
    # simkit's own errors are one line; argparse's are its usage line plus one error line
    last = err.strip().splitlines()[-1]
    assert last.startswith(("simkit: error: ", "simkit run: error: ", "simkit: error:")), err
    if last.startswith("simkit: error: ") and "usage:" not in err:
        assert err.count("\n") == 1, err
    assert re.search(match, last), err
    assert not compiles, f"{len(compiles)} compilation(s) before the error"


def test_command_line_error_in_a_subprocess():
    """The installed entry point: exit status 2 and one line on stderr, no traceback."""
    out = subprocess.run([sys.executable, "-m", "simkit.cli", "run", "lorenz", "--set", "gamma=1"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "JAX_PLATFORMS": "cpu", "SIMKIT_COMPILATION_CACHE": "0"})
    assert out.returncode == 2, out
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("simkit: error: "), out.stderr
    assert "no parameter(s) ['gamma']" in out.stderr


def test_stencil_and_ensemble_limits():
    """Wrong kinds are TypeErrors; unchecked numbers once ran a whole job."""
    with pytest.raises(TypeError, match="expects a PDEModel"):
        stencil.integrate(LORENZ, dt=1e-3, steps=2)
    with pytest.raises(ValueError, match="t0 must be finite"):
        stencil.integrate(HEAT, dt=1e-6, steps=2, t0=NAN)
    with pytest.raises(ValueError, match="memory_budget must be at least 1"):
        simkit.ensemble(LORENZ, (0.0, 1.0), params={"rho": np.ones(8)}, memory_budget=-1)


def test_a_dt_rule_must_give_positive_finite_steps():
    """A rule's zero or negative step once ran without a word (times standing still or
    running backwards, status 0)."""
    for bad in (0.0, -1e-5, float("nan")):
        with pytest.raises(ValueError, match=f"the dt rule gave {bad:g} at u0: it must give a positive, finite"):
            stencil.integrate(HEAT, dt=lambda u, p, s, bad=bad: bad, steps=4, save_every=2)
    m0 = float(np.max(HEAT.u0))

    def late(u, p, s):  # positive at u0, negative once the field has decayed a little
        return jnp.where(jnp.max(u) < 0.999 * m0, -1e-5, 1e-5)

    with pytest.raises(simkit.SolveError, match=r"the dt rule gave a step that is not positive and finite after t = "):
        stencil.integrate(HEAT, dt=late, steps=200, save_every=20)
    kept = stencil.integrate(HEAT, dt=late, steps=200, save_every=20, throw=False)
    assert kept.status == 3 and np.isfinite(kept.ts[1]) and np.isnan(kept.ts[-1]) and np.isnan(kept.us[-1]).all()


def test_ensembles_refuse_complex_members():
    """They were cast to real (the imaginary part dropped, behind NumPy's ComplexWarning)."""
    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0, 2.0],
                            state_names=("a", "b"), t_span=(0.0, 1.0))
    with pytest.raises(TypeError, match=r"ensemble\(\): complex values in y0: ensembles take real values"):
        simkit.ensemble(decay, y0=np.array([[1 + 1j, 0.0], [1j, 1.0]]), saveat=3)
    with pytest.raises(TypeError, match=r"complex values in parameter\(s\) \['k'\]"):
        simkit.ensemble(decay, params={"k": np.array([1j, 2j])}, saveat=3)


def test_an_int_seed_is_not_a_key():
    """JAX's "invalid PRNG key data" came from deep inside before."""
    ou = models.get("ornstein_uhlenbeck")
    data = Dataset(times=np.linspace(0.0, 1.0, 4), values=np.ones(4), observed=("x",))
    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0], state_names=("x",))
    for owner, call in [("sample.uniform", lambda: sample.uniform(0, {"k": (0.0, 1.0)}, 4)),
                        ("solve()", lambda: simkit.solve(ou, (0.0, 0.1), key=0, saveat=3)),
                        ("ensemble()", lambda: simkit.ensemble(ou, (0.0, 0.1), params={"sigma": np.ones(2)}, key=7)),
                        ("fit()", lambda: simkit.fit(decay, data, free=["k"], starts=2, key=0))]:
        with pytest.raises(TypeError, match=re.escape(owner) + r": key must be a jax.random key, e.g. jax.random.key"):
            call()
    # keys, one per member: JAX's "split accepts a single key ... use jax.vmap" (found by probing)
    for keys in (jax.random.split(jax.random.key(0), 6), jax.random.split(jax.random.PRNGKey(0), 6)):
        with pytest.raises(TypeError, match=r"ensemble\(\): key must be one jax.random key .* shape \(6,\)"):
            simkit.ensemble(ou, (0.0, 0.1), params={"sigma": np.ones(6)}, key=keys)


def test_stencil_diagnostics_are_a_dict():
    """A list failed on ``.items()``."""
    with pytest.raises(TypeError, match="diagnostics must be a dict of name -> function"):
        stencil.integrate(HEAT, dt=1e-6, steps=2, diagnostics=[lambda u, s: u.sum()])


def test_ensemble_devices_and_an_empty_free_list():
    """Raw errors before: 'Device' object is not iterable, a shard count mismatch from XLA,
    and "need at least one array to stack" from NumPy."""
    rho = {"rho": np.ones(8)}
    with pytest.raises(TypeError, match=r"devices takes a list of devices, e.g. \[cpu:0\], got one device"):
        simkit.ensemble(LORENZ, (0.0, 1.0), params=rho, devices=jax.devices()[0])
    with pytest.raises(ValueError, match="devices must be distinct jax devices"):
        simkit.ensemble(LORENZ, (0.0, 1.0), params=rho, devices=[jax.devices()[0]] * 2)
    data = Dataset(times=np.linspace(0.0, 1.0, 4), values=np.ones((4, 3)), observed=("x", "y", "z"))
    with pytest.raises(ValueError, match="free is empty: nothing to fit"):
        simkit.fit(LORENZ, data, free=[])


def test_ensemble_and_stencil_integrate_refuse_traced_inputs():
    # both place work on devices and return host arrays: under jax.grad they failed with
    # JAX's conversion errors; now an error that names what to transform instead
    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0], state_names=("u",))
    with pytest.raises(simkit.InputTypeError, match="jax.vmap of simkit.solve"):
        jax.grad(lambda k: simkit.ensemble(decay, (0.0, 1.0), params={"k": k}, saveat=2).ys.sum())(jnp.ones(3))
    # found by probing: the numbers besides t_span, params and y0 got JAX's ConcretizationTypeError
    for name in ("rtol", "atol", "max_step", "dt0"):
        with pytest.raises(simkit.InputTypeError, match="jax.vmap of simkit.solve"):
            jax.jit(lambda v: simkit.ensemble(decay, (0.0, 1.0), params={"k": np.ones(3)}, saveat=2,
                                              **{name: v}).ys)(1e-3)
    heat = simkit.models.get("heat_1d")
    name = next(iter(heat.params))
    with pytest.raises(simkit.InputTypeError, match="stencil.rollout"):
        jax.grad(lambda v: simkit.stencil.integrate(heat, dt=1e-4, steps=2, params={name: v}).us.sum())(1.0)


def test_fit_data_and_names_that_were_misread():
    """Found by probing: a model parameter named like the loss's own fitted ``noise`` lost its
    estimate to it in every result; ``observed="prey"`` became four states of one letter;
    observation times before ``t0`` compiled a fit that failed as "non-finite cost"."""
    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["noise"] * y, params={"noise": 1.0}, y0=[1.0], state_names=("x",))
    data = Dataset(times=np.linspace(0.0, 1.0, 4), values=np.exp(-np.linspace(0.0, 1.0, 4)), observed=("x",))
    with pytest.raises(simkit.ParameterError, match="a parameter named 'noise', the name of the loss's own fitted"):
        simkit.fit(decay, data, loss=simkit.GaussianNLL())
    with pytest.raises(TypeError, match=r"observed must be a sequence of state names .* got the string 'prey'"):
        Dataset(times=[0.0, 1.0], values=[1.0, 2.0], observed="prey")
    with pytest.raises(simkit.InputError, match=r"observation times start at 0, before t0 = 2"):
        Dataset(times=[0.0, 1.0, 3.0], values=[1.0, 2.0, 3.0], observed=("x",), t0=2.0)


def test_fit_warns_where_the_models_initial_state_moves_to_the_first_observation():
    """A decay with t_span (0, 10) fitted to data from t = 2 (no t0 given) put the model's
    y0, the state at t = 0, at t = 2: k = 2.0 for 0.7, silently (found by probing)."""
    import warnings

    from simkit.fitting._fit import _warn_y0_moved

    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0], state_names=("x",),
                            t_span=(0.0, 10.0))
    late = dict(times=[2.0, 3.0], values=[0.2, 0.1], observed=("x",))
    with pytest.warns(UserWarning, match=r"starts at t = 2 \(its first time: no t0 was given\), but model .* starts "
                                         r"at t = 0 .* Give Dataset\(\.\.\., t0=0\)"):
        _warn_y0_moved(decay, [Dataset(**late)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_y0_moved(decay, [Dataset(**late, t0=2.0), Dataset(**late, y0={"x": 0.3}),
                               Dataset(times=[0.0, 3.0], values=[1.0, 0.1], observed=("x",))])


def test_a_chunk_size_above_the_members_is_bounded_by_them():
    """37 members with chunk_size=10**9 were padded to 2e9 lanes (the process died at 22 GB)."""
    from simkit._ensemble import lanes_per_device

    fits = 10**12
    for queue in (True, False):
        # 10 members on a device: 32 lanes (four vectors of float64), as with no chunk_size
        assert lanes_per_device(10, "cpu", queue, fits, chunk_size=10**9) == lanes_per_device(10, "cpu", queue, fits)
        assert lanes_per_device(37, "cpu", queue, fits, chunk_size=10**9) == 40  # 37 rounded up to the vector width
        assert lanes_per_device(37, "cpu", queue, fits, chunk_size=64) == 40
        assert lanes_per_device(500, "cpu", queue, fits, chunk_size=64) == 64  # below the members: as given


def test_impure_right_hand_sides_warn_where_it_is_cheap_to_see():
    """An rhs reading mutable Python state got the answer compiled the first time, even for a
    new model built on the same function, without a word. The documented rule (ODEModel's
    rhs), checked here as stated; and the two cases a model warns about when it is built."""
    import dataclasses
    import warnings

    class Decay:
        def __init__(self):
            self.rate = 1.0

        def rhs(self, t, y, p):
            return -self.rate * y

    @dataclasses.dataclass(frozen=True)
    class FrozenDecay:
        rate: float = 1.0

        def rhs(self, t, y, p):
            return -self.rate * y

    build = dict(params={}, y0=[1.0], state_names=("x",))
    with pytest.warns(UserWarning, match=r"its rhs reads the attributes of a Decay object \(the rhs is one of its "
                                         r"methods.*Pass such values in params"):
        simkit.ODEModel(rhs=Decay().rhs, **build)
    rates = np.array([1.0])

    def rhs(t, y, p):
        return -rates * y

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pure, or constant: nothing to say
        simkit.ODEModel(rhs=FrozenDecay().rhs, **build)
        simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, **{**build, "params": {"k": 1.0}})
        first = simkit.solve(simkit.ODEModel(rhs=rhs, **build), (0.0, 1.0), saveat=2).ys[-1, 0]
        simkit.ODEModel(rhs=rhs, **build)  # unchanged
    rates[0] = 3.0
    with pytest.warns(UserWarning, match=r"its rhs reads the NumPy array 'rates', changed in place since the first "
                                         r"model was built on this rhs; a program simkit compiled"):
        again = simkit.ODEModel(rhs=rhs, **build)
    # the rule as documented: the program compiled for rhs still holds rates = 1
    assert simkit.solve(again, (0.0, 1.0), saveat=2).ys[-1, 0] == first
    np.testing.assert_allclose(first, np.exp(-1.0), rtol=1e-5)
