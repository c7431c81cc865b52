"""Multi-start fits of Benchmark-Models-PEtab problems: simkit against SciPy's L-BFGS-B on the
same starts (pyPESTO + AMICI on the same starts: benchmarks/petab_multistart_pypesto.py).

For each problem, ``--starts`` points drawn uniformly within the bounds on the parameters'
scales (seeded, written to the JSON so that the other toolchain reads the same ones), then:

- ``simkit``: `PetabProblem.fit`, every start in one compiled program: with ``--fit-method``
  that method (``least_squares``: projected Levenberg-Marquardt, the default of `fit` for
  normal noise); with ``--ftol``, `simkit.fitting.minimize_bounded` (projected L-BFGS-B) on the
  objective with that tolerance; with neither, ``fit(method="lbfgsb", ftol=2.2e-9)``;
- ``scipy``: ``scipy.optimize.minimize(method="L-BFGS-B")`` from each start in a loop, on
  simkit's compiled objective and gradient.

Reported per method: each start's end cost, status and iterations; the best objective; the
fraction of starts within 0.1 of the best known value (the objective at the collection's
nominal parameters, which are the published estimates, or a lower value found by any method);
CPU and wall seconds of compilation (the first call) and of the fit, in all and per converged
start. pyPESTO + AMICI's runs of the same starts are read from its own results file and
summarised beside them (``--summarise-only`` recomputes the summaries without fitting).

Every method runs in one process pinned to one core, with one thread for BLAS::

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/petab_multistart.py \
        --collection PATH/Benchmark-Models --problems NAME ... [--starts 10] [--max-iter 500]

``--methods simkit --label NAME [--fit-method ...] [--ftol ...] [--gtol ...]`` adds a run of simkit's
fit under its own key (the README's table: ``simkit_least_squares`` and ``simkit_ftol0``);
``--repeats N`` compiles and fits N times (JAX's caches cleared between) and reports the median
times (the shared machine's speed drifts by 10-30 % over minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

import simkit
import simkit.petab as sp
from simkit.fitting import minimize_bounded

OUT = Path(__file__).parent / "results" / "petab_multistart.json"
DEVICES = None  # --devices N: simkit's fits split their starts between N CPU devices
PYPESTO = Path(__file__).parent / "results" / "petab_multistart_pypesto.json"


def _clock():
    return time.process_time(), time.perf_counter()


def _since(start):
    return time.process_time() - start[0], time.perf_counter() - start[1]


def _in_start_order(x0: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Index ``order`` with ``starts[order[i]] == x0[i]`` (PetabFit sorts its starts by cost)."""
    return np.array([int(np.argmin(np.abs(starts - x).max(axis=1))) for x in x0])


def _simkit_fit(problem, x0: np.ndarray, max_iter: int, gtol: float, ftol: float | None, method: str | None = None):
    """``(cost, status, n_iter)`` per start, in the order of ``x0``: `PetabProblem.fit` (with
    ``method`` if given), or with ``ftol`` given, `simkit.fitting.minimize_bounded` on the
    problem's objective."""
    if method is not None:
        fit = problem.fit(starts=x0, method=method, max_iter=max_iter, gtol=gtol, ftol=ftol, devices=DEVICES)
        order = _in_start_order(x0, fit.starts)
        return fit.cost[order], fit.status[order], fit.n_iter[order]
    if ftol is None:
        fit = problem.fit(starts=x0, method="lbfgsb", ftol=2.2e-9, max_iter=max_iter, gtol=gtol, devices=DEVICES)
        order = _in_start_order(x0, fit.starts)
        return fit.cost[order], fit.status[order], fit.n_iter[order]
    out = minimize_bounded(problem.objective, jnp.asarray(x0), jnp.asarray(problem.lower), jnp.asarray(problem.upper),
                           max_iter=max_iter, gtol=gtol, ftol=ftol, devices=DEVICES)
    return np.asarray(out.cost), np.asarray(out.status), np.asarray(out.n_iter)


def run_problem(folder: Path, n_starts: int, seed: int, max_iter: int, methods: list[str], gtol: float,
                ftol: float | None = None, fit_method: str | None = None, repeats: int = 1) -> dict:
    name = folder.name
    import libsbml, petab.v1, sbmlmath, sympy, yaml  # noqa: F401, E401 - imported before the clock, as pyPESTO's are
    from petab.v1 import math  # noqa: F401

    start = _clock()
    problem = sp.load(folder / f"{name}.yaml")
    load_cpu, load_wall = _since(start)
    x0 = problem.sample_starts(n_starts, seed)
    row: dict = {"problem": name, "estimated": len(problem.parameter_ids), "starts": x0.tolist(),
                 "parameter_ids": list(problem.parameter_ids), "seed": seed, "max_iter": max_iter,
                 "load_cpu_s": load_cpu, "load_wall_s": load_wall,
                 "cpu_affinity": sorted(os.sched_getaffinity(0)), "omp_num_threads": os.environ.get("OMP_NUM_THREADS")}
    objective = jax.jit(problem.objective)
    row["nll_nominal"] = float(objective(jnp.asarray(problem.x_nominal)))
    if "simkit" in methods:
        times = []
        for k in range(repeats):
            if k:  # from scratch again: JAX's traces and compiled programs dropped
                jax.clear_caches()
            # max_iter is a traced argument: a first call with max_iter=1 compiles the program the fit
            # runs (and takes one step from each start); the second call reuses it.
            start = _clock()
            _simkit_fit(problem, x0, 1, gtol, ftol, fit_method)
            compile_cpu, compile_wall = _since(start)
            start = _clock()
            out = _simkit_fit(problem, x0, max_iter, gtol, ftol, fit_method)
            fit_cpu, fit_wall = _since(start)
            if k:
                assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(out, (cost, status, n_iter)))
            cost, status, n_iter = out
            times.append((compile_cpu, compile_wall, fit_cpu, fit_wall))
        compile_cpu, compile_wall, fit_cpu, fit_wall = (float(v) for v in np.median(np.asarray(times), axis=0))
        row["simkit"] = {"cost": cost.tolist(), "status": status.tolist(), "n_iter": n_iter.tolist(),
                         "max_iter": max_iter, "gtol": gtol,
                         "repeats": [dict(zip(("compile_cpu_s", "compile_wall_s", "fit_cpu_s", "fit_wall_s"), t))
                                     for t in times],
                         "ftol": ftol if ftol is not None else (
                             "PetabProblem.fit's default (1e-8 for least squares, 0 for L-BFGS-B)" if fit_method
                             else "2.2e-9"),
                         "compile_cpu_s": compile_cpu, "compile_wall_s": compile_wall,
                         "fit_cpu_s": fit_cpu, "fit_wall_s": fit_wall,
                         "cpu_s": compile_cpu + fit_cpu, "wall_s": compile_wall + fit_wall,
                         "note": (f"PetabProblem.fit(method={fit_method!r}) (projected Levenberg-Marquardt on the "
                                  "weighted residuals" if fit_method == "least_squares" else
                                  ("PetabProblem.fit(method='lbfgsb', ftol=2.2e-9)" if ftol is None
                                   else "minimize_bounded(problem.objective, ...)") + " (projected L-BFGS-B")
                                 + (", starts one after another in one compiled program" if DEVICES is None else
                                    f", the starts split between {len(DEVICES)} CPU devices, one after another on each")
                                 + "); compile_*: its first call, with max_iter=1 (one step per start included)"
                                 + (f"; the median of {repeats} runs, JAX's caches cleared between them (each in"
                                    " 'repeats'; the same costs each time)" if repeats > 1 else ""),
                         "devices": 1 if DEVICES is None else len(DEVICES)}
    if "scipy" in methods:
        start = _clock()
        value_and_grad = jax.jit(jax.value_and_grad(problem.objective))
        value_and_grad(jnp.asarray(x0[0]))
        compile_cpu, compile_wall = _since(start)

        def fun(x):
            v, g = value_and_grad(jnp.asarray(x))
            v, g = float(v), np.asarray(g, dtype=float)
            if not np.isfinite(v):
                return np.inf, np.zeros_like(g)
            return v, g

        costs, statuses, iters, evals = [], [], [], []
        fit_start = _clock()
        for x in x0:
            out = scipy.optimize.minimize(fun, x, jac=True, method="L-BFGS-B",
                                          bounds=list(zip(problem.lower, problem.upper)),
                                          options={"maxiter": max_iter})
            costs.append(float(out.fun))
            statuses.append(int(out.status))
            iters.append(int(out.nit))
            evals.append(int(out.nfev))
        fit_cpu, fit_wall = _since(fit_start)
        row["scipy"] = {"cost": costs, "status": statuses, "n_iter": iters, "n_eval": evals, "max_iter": max_iter,
                        "compile_cpu_s": compile_cpu, "compile_wall_s": compile_wall,
                        "fit_cpu_s": fit_cpu, "fit_wall_s": fit_wall,
                        "cpu_s": compile_cpu + fit_cpu, "wall_s": compile_wall + fit_wall,
                        "note": "scipy.optimize.minimize(method='L-BFGS-B') per start on simkit's jitted "
                                "value_and_grad; compile_*: its first call"}
    return row


def summarise(row: dict, others: dict | None = None) -> dict:
    """Best cost, fraction within 0.1 of the best known value, time per converged start (the
    problem's load, compilation and the fit)."""
    results = {m: r for m, r in {**row, **(others or {})}.items() if isinstance(r, dict) and "cost" in r}
    best_known = min([row["nll_nominal"]] + [min(c for c in r["cost"] if np.isfinite(c)) for r in results.values()
                                              if any(np.isfinite(c) for c in r["cost"])])
    summary = {"best_known": best_known, "nll_nominal": row["nll_nominal"]}
    for m, r in results.items():
        cost = np.asarray(r["cost"], dtype=float)
        hits = int(np.sum(cost <= best_known + 0.1))
        # simkit's load of the problem (SBML to JAX functions) serves simkit's and SciPy's runs and
        # counts in their totals, as AMICI's model import counts in pyPESTO's (its own cpu_s)
        load = (0.0, 0.0) if m == "pypesto_amici" else (row.get("load_cpu_s", 0.0), row.get("load_wall_s", 0.0))
        cpu_s, wall_s = r["cpu_s"] + load[0], r["wall_s"] + load[1]
        summary[m] = {"best": float(np.nanmin(cost)), "best_minus_nominal": float(np.nanmin(cost)) - row["nll_nominal"],
                      "within_0.1": hits, "fraction_within_0.1": hits / cost.size,
                      "cpu_s": cpu_s, "wall_s": wall_s, "load_cpu_s": load[0],
                      "compile_cpu_s": r.get("compile_cpu_s"), "compile_wall_s": r.get("compile_wall_s"),
                      "cpu_s_per_start": cpu_s / cost.size,
                      "cpu_s_per_converged_start": cpu_s / hits if hits else None,
                      "wall_s_per_converged_start": wall_s / hits if hits else None,
                      "median_iterations": float(np.median(r["n_iter"]))}
    return summary


def _others(path: Path, name: str, row: dict) -> dict:
    """pyPESTO + AMICI's run of ``name`` from the same starts, if there is one."""
    if not path.exists():
        return {}
    runs = json.loads(path.read_text())["problems"]
    if name not in runs or "pypesto_amici" not in runs[name]:
        return {}
    if np.shape(runs[name]["starts"]) != np.shape(row["starts"]):  # another number of starts: not comparable
        return {}
    np.testing.assert_allclose(runs[name]["starts"], row["starts"], rtol=1e-12)
    return {"pypesto_amici": runs[name]["pypesto_amici"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, required=True)
    parser.add_argument("--problems", nargs="+", required=True)
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-iter", type=int, default=500)
    parser.add_argument("--methods", nargs="+", default=["simkit", "scipy"])
    parser.add_argument("--summarise-only", dest="rows_only", nargs="*", default=[],
                        help="problems whose runs are kept; only their summary is recomputed")
    parser.add_argument("--label", default="simkit", help="key of simkit's run in the JSON (for variants)")
    parser.add_argument("--gtol", type=float, default=1e-6, help="simkit's tolerance on the projected gradient")
    parser.add_argument("--fit-method", default=None, choices=["least_squares", "lbfgsb"],
                        help="PetabProblem.fit's method for simkit's run")
    parser.add_argument("--ftol", type=float, default=None,
                        help="simkit's relative-decrease tolerance (default: with --fit-method, PetabProblem.fit's; "
                             "without, 2.2e-9)")
    parser.add_argument("--devices", type=int, default=1,
                        help="simkit: split the starts between this many CPU devices (pin as many cores)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="simkit: compile and fit this many times (JAX's caches cleared between), the median")
    parser.add_argument("--out", type=Path, default=OUT, help="the results file (read, updated, written)")
    parser.add_argument("--pypesto", type=Path, default=PYPESTO,
                        help="pyPESTO + AMICI results on the same starts (petab_multistart_pypesto.py)")
    args = parser.parse_args()
    global DEVICES
    if args.devices > 1:
        simkit.configure(cpu_devices=args.devices)
        DEVICES = jax.local_devices()[:args.devices]
    out = args.out
    document = json.loads(out.read_text()) if out.exists() else {"problems": {}}
    document["what"] = ("multi-start fits from the same starts (uniform on the parameters' scales within the bounds); "
                        "CPU and wall seconds; cpu_s and wall_s include compilation, also given apart")
    if set(args.problems) - set(args.rows_only):  # runs here: this process's pinning is the one recorded
        document["meta"] = {"machine": f"{platform.machine()}, {os.cpu_count()} cores shared with other jobs while measured",
                            "pinning": f"{len(os.sched_getaffinity(0))} core(s), pinned, machine shared "
                                       f"(CPU affinity {sorted(os.sched_getaffinity(0))}, "
                                       f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')})",
                            "jax": jax.__version__, "scipy": scipy.__version__,
                            "solver": "simkit.petab.load defaults: the stiff default of simkit.solve, rtol 1e-8, "
                                      "atol 1e-10"}
    for name in args.problems:
        previous = document["problems"].get(name, {})
        if name in args.rows_only:
            row = previous
        else:
            row = run_problem(args.collection / name, args.starts, args.seed, args.max_iter, args.methods, args.gtol,
                              args.ftol, args.fit_method, args.repeats)
            if args.label != "simkit" and "simkit" in row:
                row[args.label] = row.pop("simkit")
            if previous.get("starts") == row["starts"]:  # runs of other methods from the same starts are kept
                row = {**{k: v for k, v in previous.items() if isinstance(v, dict) and "cost" in v}, **row}
                if args.label != "simkit":  # a variant: the row's own limit stays the main runs'
                    row["max_iter"] = previous.get("max_iter", row["max_iter"])
        others = _others(args.pypesto, name, row)
        row.update(others)
        row["summary"] = summarise(row, others)
        document["problems"][name] = row
        print(name, json.dumps(row["summary"]), flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
