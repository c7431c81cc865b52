"""Validation cases: each library model against SciPy, with every applicable solver.

A solve at local tolerance ``(rtol, atol)`` has a *global* error that is larger by a
problem- and method-dependent factor (error growth along the trajectory: chaos, close
encounters, fast relaxation jumps). For each (model, solver) the table holds the factor
measured with simkit 0.1 on the reference machine — the normalised error
``max |y - y_ref| / (atol + rtol |y_ref|)`` at 41 save times against a SciPy reference
solved ~1000x tighter — and a case passes while the error stays within 3x of it, so a
regression in accuracy fails while rounding-level drift between machines does not.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any

import diffrax as dfx
import numpy as np

from .. import models
from .._solve import solve
from ..kernels import DOP853, DOPRI5, Rodas4, Rodas5P, Tsit5
from ..reference import compare, solve_ivp

NONSTIFF_SOLVERS = {"simkit.Tsit5": Tsit5(), "simkit.DOPRI5": DOPRI5(), "simkit.DOP853": DOP853(),
                    "diffrax.Tsit5": dfx.Tsit5()}
STIFF_SOLVERS = {"simkit.Rodas5P": Rodas5P(), "simkit.Rodas4": Rodas4(), "diffrax.Kvaerno5": dfx.Kvaerno5()}
MARGIN = 3.0


@dataclasses.dataclass(frozen=True)
class ModelCase:
    """How one model is checked: horizon, tolerances, measured error factors and why."""

    horizon: float | None  # t1 (None: the model's own t_span)
    rtol: float
    atol: float
    measured: dict[str, float]  # solver label -> normalised error measured
    note: str = ""

    def bound(self, solver: str) -> float:
        return MARGIN * max(self.measured[solver], 1.0)


def _ns(tsit5, dopri5, dop853, dfx_tsit5):
    return {"simkit.Tsit5": tsit5, "simkit.DOPRI5": dopri5, "simkit.DOP853": dop853,
            "diffrax.Tsit5": dfx_tsit5}


def _st(rodas5p, rodas4, kvaerno5):
    return {"simkit.Rodas5P": rodas5p, "simkit.Rodas4": rodas4, "diffrax.Kvaerno5": kvaerno5}


_T = 1e-10
MODEL_CASES: dict[str, ModelCase] = {
    "arenstorf": ModelCase(None, _T, _T, _ns(589, 2.42e4, 8.57e3, 1.26e3),
                           "two close lunar passes amplify phase error"),
    "brusselator": ModelCase(None, _T, _T, _ns(4.57, 12.9, 1.44, 6.14), "limit cycle"),
    "damped_driven_pendulum": ModelCase(30.0, _T, _T, _ns(5.0, 17.5, 2.48, 6.79), "chaotic: horizon 30"),
    "double_pendulum": ModelCase(5.0, _T, _T, _ns(869, 219, 1.16e3, 1.26e3), "chaotic: horizon 5"),
    "fitzhugh_nagumo": ModelCase(None, _T, _T, _ns(8.58, 7.97, 19.0, 8.41), "fast spikes"),
    "hires": ModelCase(None, _T, _T, _st(0.821, 1.69, 14.0), "stiff"),
    "hodgkin_huxley": ModelCase(None, _T, _T, _ns(6.07, 5.8, 3.48, 6.42), "fast spikes"),
    "kepler": ModelCase(None, _T, _T, _ns(413, 422, 142, 583),
                        "e = 0.6: pericentre passages amplify phase error"),
    "lorenz": ModelCase(8.0, _T, _T, _ns(14.8, 55.1, 5.74, 23.5), "chaotic: horizon 8 (Lyapunov time ~1.1)"),
    "lotka_volterra": ModelCase(None, _T, _T, _ns(2.95, 1.56, 4.13, 3.09), "periodic orbit"),
    "oregonator": ModelCase(None, _T, _T, _st(1.5, 8.12, 186), "stiff relaxation oscillation"),
    "pollu": ModelCase(None, _T, _T, _st(0.449, 1.01, 7.87), "20 species, 25 reactions"),
    # diffrax's Kvaerno5 with its default Newton tolerances: 17.5 x tol on y1 with diffrax 0.7.2,
    # equinox 0.13.8, optimistix 0.1.0, lineax 0.1.1 (0.603 at the previous landing's versions;
    # 5,108 steps, 2,352 rejected, either way): a Newton tolerance too loose for this problem
    "robertson": ModelCase(None, _T, 1e-14, _st(3.3, 1.03, 17.5), "stiff; quasi-steady y2 ~ 1e-5"),
    "rossler": ModelCase(None, _T, _T, _ns(16.4, 62.8, 35.9, 25.7), "chaotic (weakly): horizon 50"),
    "seir": ModelCase(None, _T, _T, _ns(0.244, 0.559, 2.92, 0.782), "smooth"),
    "sir": ModelCase(None, _T, _T, _ns(1.18, 2.81, 2.96, 1.14), "smooth"),
    "van_der_pol": ModelCase(None, _T, _T, _ns(2.94, 6.81, 2.84, 5.63), "limit cycle"),
    "van_der_pol_stiff": ModelCase(None, _T, _T, _st(2.03, 9.56, 427), "mu = 1000 relaxation jumps"),
}


def solvers_for(name: str) -> dict[str, Any]:
    """The solvers a model is validated with (explicit ones only for non-stiff models)."""
    return STIFF_SOLVERS if models.get(name).stiff else NONSTIFF_SOLVERS


def _span(name: str) -> tuple[float, float]:
    model, case = models.get(name), MODEL_CASES[name]
    return (model.t_span[0], model.t_span[1] if case.horizon is None else case.horizon)


def reference_settings(name: str, n_save: int = 41) -> dict[str, Any]:
    """How model ``name``'s SciPy reference is computed (`reference_solution`'s arguments):
    DOP853 at rtol 1e-13 (non-stiff) or Radau with the jacfwd Jacobian at rtol 1e-12 (stiff:
    its error is a hundredth of the 1e-10 tolerance the cases are solved at; 1e-13 took
    15-20 s on the stiff oscillators), atol a thousandth of the case's."""
    model, case = models.get(name), MODEL_CASES[name]
    return dict(t_span=_span(name), saveat=n_save, method="Radau" if model.stiff else "DOP853",
                rtol=1e-12 if model.stiff else 1e-13, atol=case.atol * 1e-3)


@functools.lru_cache(maxsize=None)
def reference_solution(name: str, n_save: int = 41) -> Any:
    """SciPy's reference for model ``name`` (`reference_settings`); computed once per model
    and shared by its solvers' cases."""
    return solve_ivp(models.get(name), **reference_settings(name, n_save))


def run_model_case(name: str, solver: str | None = None, n_save: int = 41, reference: Any = None) -> dict[str, Any]:
    """Solve model ``name`` with one validated solver (default: the first, simkit's
    default kernel) and compare with SciPy's reference (computed by `reference_solution`
    unless given, e.g. stored from an earlier run with the same settings); returns errors,
    bound, pass/fail and times."""
    case = MODEL_CASES[name]
    solvers = solvers_for(name)
    label = next(iter(solvers)) if solver is None else solver
    model = models.get(name)
    start = time.perf_counter()
    sol = solve(model, _span(name), saveat=n_save, rtol=case.rtol, atol=case.atol,
                max_steps=300_000, solver=solvers[label])
    simkit_seconds = time.perf_counter() - start
    ref = reference_solution(name, n_save) if reference is None else reference
    errors = compare(sol, ref, case.rtol, case.atol)
    worst = max(errors.values())
    bound = case.bound(label)
    return {
        "name": name,
        "solver": label,
        "span": _span(name),
        "errors": errors,
        "max_error": worst,
        "bound": bound,
        "passed": bool(np.isfinite(worst) and worst <= bound),
        "note": case.note,
        "reference": ref.method,
        "steps": int(sol.stats["num_steps"]),
        "num_rhs": int(sol.stats.get("num_rhs", -1)),
        "simkit_seconds": simkit_seconds,
        "solution": sol,
        "ref": ref,
    }
