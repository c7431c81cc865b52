"""pyPESTO + AMICI (fides trust-region optimiser, forward sensitivities) from the same starts as
benchmarks/petab_multistart.py, whose JSON it reads and extends (key ``pypesto_amici``).

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
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

OUT = Path(__file__).parent / "results" / "petab_multistart.json"


def main() -> None:
    import petab.v1 as petab
    import pypesto
    import pypesto.optimize as optimize
    import pypesto.petab

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, required=True)
    parser.add_argument("--problems", nargs="+", required=True)
    args = parser.parse_args()
    document = json.loads(OUT.read_text())
    for name in args.problems:
        row = document["problems"][name]
        starts = np.asarray(row["starts"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problem = petab.Problem.from_yaml(str(args.collection / name / f"{name}.yaml"))
        c, w = time.process_time(), time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:
            importer = pypesto.petab.PetabImporter(problem, output_folder=folder, model_name=f"{name}_pypesto")
            pproblem = importer.create_problem()
            import_cpu, import_wall = time.process_time() - c, time.perf_counter() - w
            full = np.tile(np.asarray(pproblem.x_nominal_scaled, dtype=float) if hasattr(pproblem, "x_nominal_scaled")
                           else np.zeros(pproblem.dim_full), (len(starts), 1))
            index = {n: i for i, n in enumerate(pproblem.x_names)}
            for k, pid in enumerate(row["parameter_ids"]):
                full[:, index[pid]] = starts[:, k]
            pproblem.set_x_guesses(full)
            optimizer = optimize.FidesOptimizer(verbose=0, options={"maxiter": row["max_iter"]})
            result = optimize.minimize(pproblem, optimizer=optimizer, n_starts=len(starts), progress_bar=False)
        cpu, wall = time.process_time() - c, time.perf_counter() - w
        runs = sorted(result.optimize_result.list, key=lambda r: int(r["id"]))
        row["pypesto_amici"] = {
            "cost": [float(r["fval"]) if r["fval"] is not None else float("inf") for r in runs],
            "n_iter": [int(r["n_grad"] or 0) for r in runs],
            "status": [str(r["exitflag"]) for r in runs],
            "cpu_s": cpu, "wall_s": wall, "import_cpu_s": import_cpu, "import_wall_s": import_wall,
            "versions": {"pypesto": pypesto.__version__},
            "note": "model import (code generation, compilation) included; n_iter holds gradient evaluations"}
        print(name, json.dumps({k: v for k, v in row["pypesto_amici"].items() if k != "cost"}),
              "best", min(row["pypesto_amici"]["cost"]), flush=True)
        OUT.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
