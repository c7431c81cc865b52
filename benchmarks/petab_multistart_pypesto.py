"""pyPESTO + AMICI (fides trust-region optimiser, forward sensitivities) from the same starts as
benchmarks/petab_multistart.py: drawn the same way (NumPy's default_rng(seed), uniform within the
bounds on the parameters' scales, estimated parameters in the parameter table's order) and
checked against that script's JSON where it has the problem. Writes
benchmarks/results/petab_multistart_pypesto.json.

Runs in a separate environment (pip install pypesto amici fides petab swig; AMICI needs a C++
compiler, BLAS and SWIG on the PATH: SWIG 4.5.1 from the package index; with Debian 12's SWIG
4.1.0 AMICI 1.0.1 built, but its compiled models failed to load), never simkit's. One process, one thread, pinned to one core::

    OMP_NUM_THREADS=1 taskset -c 1 /path/to/peers-venv/bin/python benchmarks/petab_multistart_pypesto.py \
        --collection PATH/Benchmark-Models --problems NAME ... [--models FOLDER]

The model import (code generation and C++ compilation) is counted. Without ``--models`` it runs
inside the timed fit. With ``--models FOLDER`` the compiled models are kept there: ``--compile``
only compiles them and records the import time next to them (``FOLDER/NAME.import.json``), and a
later fit loads the compiled model and adds that recorded import time to its own.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

SIMKIT = Path(__file__).parent / "results" / "petab_multistart.json"
OUT = Path(__file__).parent / "results" / "petab_multistart_pypesto.json"


def cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (AMICI compiles in subprocesses)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def draw_starts(problem, n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """The estimated parameters' ids and ``(n, n_est)`` starts, as PetabProblem.sample_starts draws them."""
    pdf = problem.parameter_df
    est = pdf[pdf["estimate"] == 1]
    scale = {"lin": lambda v: v, "log": np.log, "log10": np.log10}
    lower = np.array([scale[s](v) for s, v in zip(est["parameterScale"], est["lowerBound"].astype(float))])
    upper = np.array([scale[s](v) for s, v in zip(est["parameterScale"], est["upperBound"].astype(float))])
    rng = np.random.default_rng(seed)
    return [str(i) for i in est.index], lower + rng.random((n, len(lower))) * (upper - lower)


def meta(processes: int = 1) -> dict:
    engine = "pyPESTO's single-core engine" if processes == 1 else f"pyPESTO's multi-process engine, {processes} processes"
    return {"machine": f"{platform.machine()}, {os.cpu_count()} cores shared with other jobs while measured",
            "pinning": f"{len(os.sched_getaffinity(0))} core(s), pinned, machine shared (CPU affinity "
                       f"{sorted(os.sched_getaffinity(0))}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, {engine}; "
                       f"AMICI_PARALLEL_COMPILE={os.environ.get('AMICI_PARALLEL_COMPILE')})"}


def main() -> None:
    import amici
    import fides
    import petab.v1 as petab
    import pypesto
    import pypesto.engine
    import pypesto.optimize as optimize
    import pypesto.petab
    from petab.v1.core import flatten_timepoint_specific_output_overrides
    from petab.v1.lint import measurement_table_has_timepoint_specific_mappings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, required=True)
    parser.add_argument("--problems", nargs="+", required=True)
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-iter", type=int, default=500)
    parser.add_argument("--models", type=Path, default=None, help="folder of compiled AMICI models (kept)")
    parser.add_argument("--compile", action="store_true", help="only compile the models into --models")
    parser.add_argument("--processes", type=int, default=1,
                        help="the starts in this many processes (pyPESTO's MultiProcessEngine; pin as many cores)")
    parser.add_argument("--out", type=Path, default=OUT, help="the results file (read, updated, written)")
    args = parser.parse_args()
    out = args.out
    if args.compile and args.models is None:
        parser.error("--compile needs --models")
    document = json.loads(out.read_text()) if out.exists() else {"problems": {}}
    simkit_runs = json.loads(SIMKIT.read_text())["problems"] if SIMKIT.exists() else {}
    for name in args.problems:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problem = petab.Problem.from_yaml(str(args.collection / name / f"{name}.yaml"))
            if measurement_table_has_timepoint_specific_mappings(problem.measurement_df):
                flatten_timepoint_specific_output_overrides(problem)  # AMICI needs them flat; same objective
        ids, starts = draw_starts(problem, args.starts, args.seed)
        if name in simkit_runs and len(simkit_runs[name]["starts"]) == args.starts:
            assert simkit_runs[name]["parameter_ids"] == ids
            np.testing.assert_allclose(simkit_runs[name]["starts"], starts, rtol=1e-12)
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch) / name if args.models is None else args.models / name
            record = None if args.models is None else args.models / f"{name}.import.json"
            c, w = cpu_seconds(), time.perf_counter()
            importer = pypesto.petab.PetabImporter(problem, output_folder=str(folder), model_name=f"{name}_pypesto")
            pproblem = importer.create_problem()
            import_cpu, import_wall = cpu_seconds() - c, time.perf_counter() - w
            if args.compile:
                record.write_text(json.dumps({"import_cpu_s": import_cpu, "import_wall_s": import_wall,
                                              **meta(args.processes)}))
                print(name, "compiled", import_cpu, import_wall, flush=True)
                continue
            compiled = None
            if record is not None and record.exists():
                compiled = json.loads(record.read_text())
            row = {"parameter_ids": ids, "starts": starts.tolist(), "seed": args.seed, "max_iter": args.max_iter}
            nominal = np.asarray(problem.x_nominal_scaled, dtype=float)  # PEtab's order: pproblem.x_names
            full = np.tile(nominal, (len(starts), 1))
            assert list(pproblem.x_names) == list(problem.x_ids)
            index = {n: i for i, n in enumerate(pproblem.x_names)}
            for k, pid in enumerate(row["parameter_ids"]):
                full[:, index[pid]] = starts[:, k]
            row["nll_nominal_amici"] = float(pproblem.objective(pproblem.get_reduced_vector(nominal)))
            pproblem.set_x_guesses(full)
            optimizer = optimize.FidesOptimizer(verbose=0, options={"maxiter": row["max_iter"]})
            fc, fw = cpu_seconds(), time.perf_counter()
            result = optimize.minimize(pproblem, optimizer=optimizer, n_starts=len(starts), progress_bar=False,
                                       engine=pypesto.engine.SingleCoreEngine() if args.processes == 1 else
                                       pypesto.engine.MultiProcessEngine(n_procs=args.processes))
            fit_cpu, fit_wall = cpu_seconds() - fc, time.perf_counter() - fw
        runs = sorted(result.optimize_result.list, key=lambda r: int(r["id"]))
        compile_cpu = compiled["import_cpu_s"] if compiled else import_cpu
        compile_wall = compiled["import_wall_s"] if compiled else import_wall
        row["pypesto_amici"] = {
            "cost": [float(r["fval"]) if r["fval"] is not None and np.isfinite(r["fval"]) else float("inf")
                     for r in runs],
            "n_iter": [int(r["n_grad"] or 0) for r in runs],
            "n_fval": [int(r["n_fval"] or 0) for r in runs],
            "status": [str(r["exitflag"]) for r in runs],
            "fit_cpu_s": fit_cpu, "fit_wall_s": fit_wall,
            "compile_cpu_s": compile_cpu, "compile_wall_s": compile_wall,
            "load_cpu_s": import_cpu if compiled else 0.0, "load_wall_s": import_wall if compiled else 0.0,
            "compile": ("imported and compiled once before the fit (its own run), then loaded "
                        f"({compiled['pinning']})" if compiled else "imported and compiled inside the timed run"),
            "versions": {"pypesto": pypesto.__version__, "amici": amici.__version__, "fides": fides.__version__},
            "note": "n_iter holds gradient evaluations (fides: one per iteration)"}
        r = row["pypesto_amici"]
        r["cpu_s"] = r["compile_cpu_s"] + r["load_cpu_s"] + r["fit_cpu_s"]
        r["wall_s"] = r["compile_wall_s"] + r["load_wall_s"] + r["fit_wall_s"]
        row["meta"] = meta(args.processes)
        document["problems"][name] = row
        print(name, json.dumps({k: v for k, v in r.items() if k not in ("cost", "n_iter", "n_fval", "status")}),
              "best", min(r["cost"]), "nominal", row["nll_nominal_amici"], flush=True)
        document["what"] = ("pyPESTO + AMICI + fides multi-start fits from the starts of petab_multistart.json; "
                            "times in seconds, CPU and wall; pinned (meta), machine shared")
        out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
