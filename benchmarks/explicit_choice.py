"""Which explicit kernel, by tolerance: Tsit5 against DOP853 on the non-stiff library models.

    python benchmarks/explicit_choice.py [--repeats 7] [--rtols 1e-3,...,1e-12] [--out FILE]

Every non-stiff ODE model of `simkit.models` over its own ``t_span``, 100 saved points,
``atol = rtol``. Error: the largest over the save times and the components of
``|y - ref| / (|ref| + 1)``, ``ref`` SciPy's DOP853 at rtol = atol = 1e-13 (a plain NumPy
rhs, `stiff.numpy_rhs`). Time: `simkit.solve` with ``solver=`` each kernel, median of
``repeats`` calls after the compiling one, the two kernels' calls interleaved (one of each
per round). The question it answers: from which rtol down is DOP853 (order 8, 12 stages)
faster than Tsit5 (order 5, 7 stages) at equal error (Hairer & Wanner I, II.10: DOP853 below
about 1e-7), the advice in docs/solving.md. The default stays Tsit5 whatever the tolerance:
rtol is a number of the compiled program, and choosing the kernel by its value would
recompile when it crosses the bound. Writes `benchmarks/results/explicit_choice.json`; about
a minute.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import statistics
import sys
import time

import jax
import numpy as np
import scipy.integrate

import simkit
from simkit import models
from simkit._config import configure_own_process
configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it
from stiff import machine, numpy_rhs, write_result  # benchmarks/stiff.py (run as scripts)

MODELS = ("arenstorf", "brusselator", "damped_driven_pendulum", "double_pendulum", "fitzhugh_nagumo",
          "hodgkin_huxley", "kepler", "lorenz", "lotka_volterra", "rossler", "seir", "sir", "van_der_pol")
KERNELS = {"Tsit5": simkit.Tsit5(), "DOP853": simkit.DOP853()}
N_SAVE = 100


def reference(m, ts) -> np.ndarray:
    out = scipy.integrate.solve_ivp(numpy_rhs(m), m.t_span, np.asarray(m.y0, float), method="DOP853",
                                    rtol=1e-13, atol=1e-13, t_eval=ts)
    return out.y.T


def equal_error_summary(rows: list[dict]) -> dict[float, dict]:
    """Per rtol, over the models: Tsit5's time over DOP853's at Tsit5's error (DOP853's
    time there interpolated log-log between its own rtols; a model whose Tsit5 error lies
    outside DOP853's range is left out) and, for comparison, the time ratio at the same
    rtol. Sets each row's ``equal_error_ratio`` (None where left out)."""
    by_model: dict[str, list[dict]] = {}
    for row in rows:
        by_model.setdefault(row["model"], []).append(row)
    ratios: dict[float, list[float]] = {}
    same: dict[float, list[float]] = {}
    for model_rows in by_model.values():
        errors = np.array([r["results"]["DOP853"]["error"] for r in model_rows])
        times = np.array([r["results"]["DOP853"]["time"] for r in model_rows])
        order = np.argsort(errors)
        for row in model_rows:
            tsit5 = row["results"]["Tsit5"]
            same.setdefault(row["rtol"], []).append(tsit5["time"] / row["results"]["DOP853"]["time"])
            row["equal_error_ratio"] = None
            if not errors.min() <= tsit5["error"] <= errors.max() or tsit5["error"] <= 0:
                continue
            at_error = np.exp(np.interp(np.log(tsit5["error"]), np.log(errors[order]), np.log(times[order])))
            row["equal_error_ratio"] = float(tsit5["time"] / at_error)
            ratios.setdefault(row["rtol"], []).append(row["equal_error_ratio"])

    def geomean(values):
        return float(np.exp(np.mean(np.log(values))))

    return {rtol: dict(models=len(values), geomean=geomean(values), min=float(min(values)), max=float(max(values)),
                       same_rtol_geomean=geomean(same[rtol]))
            for rtol, values in sorted(ratios.items(), reverse=True)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rtols", default="1e-3,1e-4,1e-5,1e-6,1e-7,1e-8,1e-9,1e-10,1e-11,1e-12")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "explicit_choice.json"))
    args = parser.parse_args(argv)
    rtols = [float(r) for r in args.rtols.split(",")]
    load_before = os.getloadavg()
    rows = []
    for name in args.models.split(","):
        m = models.get(name)
        ts = np.linspace(*m.t_span, N_SAVE)
        ref = reference(m, ts)
        for rtol in rtols:
            calls = {label: (lambda s=solver: simkit.solve(m, m.t_span, saveat=N_SAVE, rtol=rtol, atol=rtol,
                                                          solver=s, throw=False))
                     for label, solver in KERNELS.items()}
            first, sols, times = {}, {}, {label: [] for label in calls}
            for label, call in calls.items():
                start = time.perf_counter()
                sols[label] = jax.block_until_ready(call())
                first[label] = time.perf_counter() - start
            for _ in range(args.repeats):
                for label, call in calls.items():
                    start = time.perf_counter()
                    jax.block_until_ready(call())
                    times[label].append(time.perf_counter() - start)
            row = dict(model=name, rtol=rtol, results={})
            for label, sol in sols.items():
                run = statistics.median(times[label])
                err = float(np.max(np.abs(np.asarray(sol.ys) - ref) / (np.abs(ref) + 1.0)))
                row["results"][label] = dict(time=run, first_call=first[label], error=err, status=int(sol.status),
                                             steps=int(sol.stats["num_steps"]))
            rows.append(row)
            r = row["results"]
            print(f"{name:24s} rtol {rtol:7.0e}  Tsit5 {r['Tsit5']['time'] * 1e3:8.3f} ms {r['Tsit5']['error']:8.1e} "
                  f"{r['Tsit5']['steps']:6d}  DOP853 {r['DOP853']['time'] * 1e3:8.3f} ms {r['DOP853']['error']:8.1e} "
                  f"{r['DOP853']['steps']:6d}  Tsit5/DOP853 time {r['Tsit5']['time'] / r['DOP853']['time']:5.2f}")
            sys.stdout.flush()
    summary = equal_error_summary(rows)
    for rtol, entry in summary.items():
        print(f"rtol {rtol:7.0e}: Tsit5 time / DOP853 time at Tsit5's error, geometric mean over "
              f"{entry['models']} models {entry['geomean']:.2f} (min {entry['min']:.2f}, max {entry['max']:.2f}); "
              f"at the same rtol {entry['same_rtol_geomean']:.2f}")
    command = "python benchmarks/explicit_choice.py " + " ".join(argv if argv is not None else sys.argv[1:])
    load = dict(load_before=load_before, load_after=os.getloadavg())
    return write_result(args.out, dict(command=command, machine=machine() | load, rows=rows,
                                       summary={f"{k:g}": v for k, v in summary.items()}))


if __name__ == "__main__":
    main()
