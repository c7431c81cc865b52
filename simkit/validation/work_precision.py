"""Work-precision: error against run time over a range of tolerances, simkit vs SciPy."""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np

import diffrax as dfx

from .. import models
from .._solve import solve
from ..kernels import BDF, DOP853, RadauIIA5, Rodas5P, Tsit5
from ..reference import solve_ivp
from ..solvers import with_newton_tolerances

# problem -> (t1, atol/rtol ratio, SciPy methods)
PROBLEMS: dict[str, tuple[float | None, float, tuple[str, ...]]] = {
    "lorenz": (5.0, 1.0, ("RK45", "DOP853", "LSODA")),
    "arenstorf": (None, 1.0, ("RK45", "DOP853", "LSODA")),
    "robertson": (None, 1e-4, ("Radau", "BDF", "LSODA")),
    "hires": (None, 1e-3, ("Radau", "BDF", "LSODA")),
}


# What `scaled_error` computes, in the report's text (markdown) and on the figures' error
# axis: keep the three in step (a figure's axis once described another error).
ERROR_DEFINITION = ("max relative error vs reference, "
                    "`max over t, i of |y_i(t) - y_ref,i(t)| / max_t |y_ref,i(t)|` (t: the save times, "
                    "i: the states; each state's error relative to its largest reference magnitude)")
ERROR_AXIS_LABEL = ("max relative error vs reference\n"
                    r"$\mathrm{max}_{t,i}\ |y_i(t) - y_{\mathrm{ref},i}(t)|"
                    r"\ /\ \mathrm{max}_t\,|y_{\mathrm{ref},i}(t)|$")


def scaled_error(ys: Any, ys_ref: Any) -> float:
    """Max over save times t and states i of ``|y_i(t) - y_ref,i(t)| / max_t |y_ref,i(t)|``:
    each state's error relative to that state's largest reference magnitude (`ERROR_DEFINITION`)."""
    ys, ys_ref = np.asarray(ys), np.asarray(ys_ref)
    scale = np.maximum(np.abs(ys_ref).max(axis=0), 1e-300)
    return float((np.abs(ys - ys_ref) / scale).max())


def _time(fn: Any, repeats: int) -> tuple[Any, float]:
    out, times = None, []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return out, statistics.median(times)


def work_precision(name: str, tolerances: list[float], n_save: int = 51, repeats: int = 3) -> dict[str, Any]:
    """Run one problem at each rtol; returns ``{solver_label: [(error, seconds), ...]}``, one
    pair per tolerance (``nan`` where a SciPy method failed). The error is `scaled_error`.

    simkit's and diffrax's solves are compiled first (excluded) and timed as the median
    of ``repeats`` runs; SciPy methods are timed once per tolerance (they are slow).
    """
    t1, ratio, methods = PROBLEMS[name]
    model = models.get(name)
    span = (model.t_span[0], model.t_span[1] if t1 is None else t1)
    ref_method = "Radau" if model.stiff else "DOP853"
    ref = solve_ivp(model, span, saveat=n_save, method=ref_method, rtol=1e-13, atol=1e-13 * ratio)
    out: dict[str, list[tuple[float, float]]] = {}
    if model.stiff:
        ours = {"simkit Rodas5P (default)": lambda rtol: Rodas5P(), "simkit RadauIIA5": lambda rtol: RadauIIA5(),
                "simkit BDF": lambda rtol: BDF(),
                "diffrax Kvaerno5 (simkit Newton tolerances)":
                    lambda rtol: with_newton_tolerances(dfx.Kvaerno5(), rtol, rtol * ratio),
                "diffrax Kvaerno5 (default)": lambda rtol: dfx.Kvaerno5()}
    else:
        ours = {"simkit Tsit5": lambda rtol: Tsit5(), "simkit DOP853": lambda rtol: DOP853(),
                "diffrax Tsit5": lambda rtol: dfx.Tsit5()}
    for label, make in ours.items():
        for rtol in tolerances:
            solver = make(rtol)

            def run(solver=solver, rtol=rtol):
                return solve(model, span, saveat=n_save, rtol=rtol, atol=rtol * ratio,
                             max_steps=500_000, solver=solver).ys.block_until_ready()

            run()  # compile (once per solver object; later tolerances reuse it if equal)
            sol, sec = _time(run, repeats)
            out.setdefault(label, []).append((scaled_error(sol, ref.ys), sec))
    for method in methods:
        for rtol in tolerances:
            try:
                r, sec = _time(
                    lambda: solve_ivp(model, span, saveat=n_save, method=method, rtol=rtol, atol=rtol * ratio),
                    1,
                )
                out.setdefault(f"scipy {method}", []).append((scaled_error(r.ys, ref.ys), sec))
            except Exception:  # a SciPy failure at one tolerance: no point (nan keeps the columns)
                out.setdefault(f"scipy {method}", []).append((float("nan"), float("nan")))
    return out
