"""Step counts and errors of simkit's stiff kernels against SciPy's Radau and BDF, rtol 1e-4 ... 1e-12.

    python benchmarks/stiff_step_counts.py [--rtols 1e-4,...,1e-12] [--problems a,b] [--out FILE]

Counts, not times: the accepted steps, all attempts and rhs evaluations of simkit's
RadauIIA5, BDF and Rodas5P (and the default `simkit.solve` chooses) against the accepted steps
and rhs evaluations of SciPy's ``Radau`` and ``BDF`` (given the exact Jacobian, from
``jax.jacfwd`` of the same rhs, so that both sides run the same algorithm on the same
Jacobian), and each run's error at the final time against a reference. Safe to run on a
shared machine.

Problems (Hairer & Wanner II, section IV.10; Mazzia & Magherini's Test Set for IVP Solvers;
Enright, Hull & Lindberg's stiff DETEST): Robertson to 1e11 in the library's conserving form
and in the Test Set's rates form (`simkit.models.chemistry.robertson_rates_rhs`), HIRES,
POLLU, van der Pol with mu = 1e3 on [0, 3000] and mu = 1e6 on [0, 1.5e6] (through its first jump), the
Oregonator on [0, 360] and E5 on [0, 1e13] (species near 1e-22). atol is ``rtol * scale``,
``scale`` the smallest significant component; E5 uses the Test Set's fixed atol = 1.11e-24.
The error of a run is ``max_i |y_i - ref_i| / max(|ref_i|, floor)`` (relative for every
component above the problem's floor); ``ref`` the published Test Set value where there is one
(ROBER, HIRES, POLLU, E5), else SciPy's Radau at rtol 1e-13 with the exact Jacobian (van der Pol mu = 1e6:
at 1e-10, the tightest at which SciPy's Radau reaches the end).

Tolerance proportionality: per method and problem, the least-squares slope of log10(error)
against log10(rtol) over the rtols whose error stays above 10x the reference's own accuracy
(a slope of 1 means the error follows the tolerance).

Writes ``benchmarks/results/stiff_step_counts.json``; prints the table.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import json
import sys
import time
import types

import jax
import jax.numpy as jnp
import numpy as np
import scipy
import scipy.integrate

import simkit
from simkit import models
from simkit.models.chemistry import (E5_REFERENCE_T1E13, HIRES_REFERENCE_T321, POLLU_REFERENCE_T60,
                                     ROBERTSON_REFERENCE_T1E11, e5, robertson_rates_rhs)
from simkit.models.oscillators import VAN_DER_POL_STIFF_REFERENCE

RTOLS = [1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12]


def _robertson_rates():
    return models.get("robertson").replace(rhs=robertson_rates_rhs, name="robertson_rates")


PROBLEMS = {
    # name: (model factory, t1, atol(rtol), error floor, published reference or None,
    #        the reference's own relative accuracy)
    "robertson": (lambda: models.get("robertson"), 1e11, lambda r: r * 1e-13, 1e-14, ROBERTSON_REFERENCE_T1E11, 1e-9),
    "robertson_rates": (_robertson_rates, 1e11, lambda r: r * 1e-13, 1e-14, ROBERTSON_REFERENCE_T1E11, 1e-9),
    "hires": (lambda: models.get("hires"), 321.8122, lambda r: r * 1e-5, 1e-5, HIRES_REFERENCE_T321, 1e-12),
    "pollu": (lambda: models.get("pollu"), 60.0, lambda r: r * 1e-8, 1e-8, POLLU_REFERENCE_T60, 1e-12),
    "van_der_pol_1e3": (lambda: models.get("van_der_pol_stiff"), 3000.0, lambda r: r * 1e-3, 1e-3,
                        VAN_DER_POL_STIFF_REFERENCE[-1], 1e-11),
    "van_der_pol_1e6": (lambda: models.get("van_der_pol_stiff", mu=1e6), 1.5e6, lambda r: r * 1e-6, 1e-6, None, 1e-9),
    "oregonator": (lambda: models.get("oregonator"), 360.0, lambda r: r * 1e-4, 1e-4, None, 1e-11),
    # (the published E5 value is consistent with y3 - y2 + y4 = 0 to 1.4e-3 of y2: its accuracy)
    "e5": (e5, 1e13, lambda r: 1.11e-24, 1e-23, E5_REFERENCE_T1E13, 2e-3),
}
KERNELS = {"simkit RadauIIA5": simkit.RadauIIA5(), "simkit BDF": simkit.BDF(), "simkit Rodas5P": simkit.Rodas5P(),
           "simkit default": None}
SCIPY = ("Radau", "BDF")


def numpy_problem(model):
    """The model's rhs source run with NumPy for jax.numpy, and its exact Jacobian (jacfwd,
    compiled once), as functions of ``(t, y)`` for SciPy."""
    fn = model.rhs
    plain = types.FunctionType(fn.__code__, {**fn.__globals__, "jnp": np}, fn.__name__, fn.__defaults__,
                               fn.__closure__)
    p = {k: float(v) for k, v in model.params.items()}
    jac = jax.jit(jax.jacfwd(lambda t, y: fn(t, y, p), argnums=1))
    return (lambda t, y: plain(t, y, p)), (lambda t, y: np.asarray(jac(t, y)))


def reference_state(name: str) -> np.ndarray:
    make, t1, atol, floor, published, _ = PROBLEMS[name]
    if published is not None:
        return np.asarray(published, float)
    m = make()
    rhs, jac = numpy_problem(m)
    for rtol in (1e-13, 1e-12, 1e-11, 1e-10):  # (van der Pol mu = 1e6: below 1e-10 the step reaches t's spacing)
        out = scipy.integrate.solve_ivp(rhs, (0.0, t1), np.asarray(m.y0, float), method="Radau", rtol=rtol,
                                        atol=atol(rtol), jac=jac)
        if out.status == 0:
            break
    else:
        raise RuntimeError(f"{name}: SciPy's reference failed: {out.message}")
    return out.y[:, -1]


def error(y, ref, floor) -> float:
    return float(np.max(np.abs(np.asarray(y, float) - ref) / np.maximum(np.abs(ref), floor)))


def run_simkit(m, t1, rtol, atol, solver) -> dict:
    kw = {} if solver is None else {"solver": solver}
    s = simkit.solve(m, (0.0, t1), saveat=1, rtol=rtol, atol=atol, throw=False, max_steps=200_000, **kw)
    return dict(status=int(s.status), solver=s.solver_name, accepted=int(s.stats["num_accepted_steps"]),
                steps=int(s.stats["num_steps"]), nfev=int(s.stats["num_rhs"]), y=np.asarray(s.ys[-1]))


def run_scipy(rhs, jac, y0, t1, rtol, atol, method) -> dict:
    out = scipy.integrate.solve_ivp(rhs, (0.0, t1), y0, method=method, rtol=rtol, atol=atol, jac=jac)
    return dict(status=int(out.status), accepted=int(out.t.size - 1), nfev=int(out.nfev), njev=int(out.njev),
                nlu=int(out.nlu), y=out.y[:, -1])


def cell(r: dict) -> str:
    """``accepted steps (error)`` of one run, for the printed table."""
    return f"{r['accepted']} ({'failed' if r['error'] is None else format(r['error'], '.1e')})"


def slope(rtols, errors, ref_accuracy) -> float | None:
    """Least-squares slope of log10(error) on log10(rtol) over the errors above 10x the
    reference's accuracy (None with fewer than three)."""
    pts = [(np.log10(r), np.log10(e)) for r, e in zip(rtols, errors) if e is not None and e > 10 * ref_accuracy]
    if len(pts) < 3:
        return None
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtols", default=",".join(f"{r:g}" for r in RTOLS))
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "stiff_step_counts.json"))
    args = parser.parse_args(argv)
    rtols = [float(r) for r in args.rtols.split(",")]
    rows, slopes = [], {}
    for name in args.problems.split(","):
        make, t1, atol_of, floor, published, ref_acc = PROBLEMS[name]
        m = make()
        ref = reference_state(name)
        rhs, jac = numpy_problem(m)
        y0 = np.asarray(m.y0, float)
        errs = {}
        for rtol in rtols:
            atol = atol_of(rtol)
            row = dict(problem=name, rtol=rtol, atol=atol, results={})
            for label, solver in KERNELS.items():
                r = run_simkit(m, t1, rtol, atol, solver)
                y = r.pop("y")
                r["error"] = error(y, ref, floor) if r["status"] == 0 else None
                row["results"][label] = r
            for method in SCIPY:
                t = time.perf_counter()
                r = run_scipy(rhs, jac, y0, t1, rtol, atol, method)
                r["seconds"] = time.perf_counter() - t
                y = r.pop("y")
                r["error"] = error(y, ref, floor) if r["status"] == 0 else None
                row["results"][f"SciPy {method}"] = r
            for label, r in row["results"].items():
                errs.setdefault(label, []).append(r["error"])
            sr = row["results"]["SciPy Radau"]["accepted"]
            sb = row["results"]["SciPy BDF"]["accepted"]
            row["ratios"] = {"RadauIIA5 / SciPy Radau": row["results"]["simkit RadauIIA5"]["accepted"] / sr,
                             "BDF / SciPy BDF": row["results"]["simkit BDF"]["accepted"] / sb}
            rows.append(row)
            print(f"{name:16s} {rtol:7.0e} " + "  ".join(f"{k.replace('simkit ', '')}: {cell(v)}"
                                                         for k, v in row["results"].items()), flush=True)
        slopes[name] = {label: slope(rtols, e, ref_acc) for label, e in errs.items()}
        print(f"{name:16s} slopes " + "  ".join(f"{k}: {'-' if v is None else f'{v:.2f}'}"
                                                 for k, v in slopes[name].items()), flush=True)
    result = dict(
        description=__doc__.split("\n\n")[2] if len(__doc__.split("\n\n")) > 2 else "",
        machine=dict(python=sys.version.split()[0], jax=jax.__version__, scipy=scipy.__version__,
                     simkit=simkit.__version__),
        command="python benchmarks/stiff_step_counts.py " + " ".join(argv or sys.argv[1:]),
        rows=rows, slopes=slopes,
    )
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    return result


if __name__ == "__main__":
    main()
