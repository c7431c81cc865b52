"""pyPESTO + AMICI (fides trust-region optimiser, forward sensitivities) from the same starts as
benchmarks/petab_multistart.py: drawn the same way (NumPy's default_rng(seed), uniform within the
bounds on the parameters' scales, estimated parameters in the parameter table's order) and
checked against that script's JSON where it has the problem. Writes
benchmarks/results/petab_multistart_pypesto.json.

Runs in a separate environment (pip install pypesto amici fides petab; AMICI needs a C++
compiler, BLAS and SWIG), never simkit's::

    /path/to/peers-venv/bin/python benchmarks/petab_multistart_pypesto.py --collection PATH/Benchmark-Models \
        --problems NAME ...

The model import (code generation and C++ compilation) is counted in the times, as simkit's
compilation is.
"""

from __future__ import annotations

import argparse
import json
import os
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


def main() -> None:
    import petab.v1 as petab
    import pypesto
    import pypesto.optimize as optimize
    import pypesto.petab

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, required=True)
    parser.add_argument("--problems", nargs="+", required=True)
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-iter", type=int, default=500)
    args = parser.parse_args()
    document = json.loads(OUT.read_text()) if OUT.exists() else {"problems": {}}
    simkit_runs = json.loads(SIMKIT.read_text())["problems"] if SIMKIT.exists() else {}
    for name in args.problems:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problem = petab.Problem.from_yaml(str(args.collection / name / f"{name}.yaml"))
        ids, starts = draw_starts(problem, args.starts, args.seed)
        if name in simkit_runs and len(simkit_runs[name]["starts"]) == args.starts:
            assert simkit_runs[name]["parameter_ids"] == ids
            np.testing.assert_allclose(simkit_runs[name]["starts"], starts, rtol=1e-12)
        row = {"parameter_ids": ids, "starts": starts.tolist(), "seed": args.seed, "max_iter": args.max_iter}
        document["problems"][name] = row
        c, w = cpu_seconds(), time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:
            importer = pypesto.petab.PetabImporter(problem, output_folder=folder, model_name=f"{name}_pypesto")
            pproblem = importer.create_problem()
            import_cpu, import_wall = cpu_seconds() - c, time.perf_counter() - w
            full = np.tile(np.asarray(pproblem.x_nominal_scaled, dtype=float) if hasattr(pproblem, "x_nominal_scaled")
                           else np.zeros(pproblem.dim_full), (len(starts), 1))
            index = {n: i for i, n in enumerate(pproblem.x_names)}
            for k, pid in enumerate(row["parameter_ids"]):
                full[:, index[pid]] = starts[:, k]
            pproblem.set_x_guesses(full)
            optimizer = optimize.FidesOptimizer(verbose=0, options={"maxiter": row["max_iter"]})
            result = optimize.minimize(pproblem, optimizer=optimizer, n_starts=len(starts), progress_bar=False)
        cpu, wall = cpu_seconds() - c, time.perf_counter() - w
        runs = sorted(result.optimize_result.list, key=lambda r: int(r["id"]))
        row["pypesto_amici"] = {
            "cost": [float(r["fval"]) if r["fval"] is not None else float("inf") for r in runs],
            "n_iter": [int(r["n_grad"] or 0) for r in runs],
            "status": [str(r["exitflag"]) for r in runs],
            "cpu_s": cpu, "wall_s": wall, "import_cpu_s": import_cpu, "import_wall_s": import_wall,
            "versions": {"pypesto": pypesto.__version__},
            "note": "model import (code generation, compilation) included; n_iter holds gradient evaluations"}
        print(name, json.dumps({k: v for k, v in row["pypesto_amici"].items() if k not in ("cost", "n_iter", "status")}),
              "best", min(row["pypesto_amici"]["cost"]), flush=True)
        OUT.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
