"""AMICI's log-likelihood of Benchmark-Models-PEtab problems at the nominal parameters, at tight
tolerances: a third reference for simkit.petab's objective (benchmarks/petab_collection.py).

Runs in a separate environment with AMICI (pip install amici petab; needs a C++ compiler,
BLAS and SWIG), never simkit's::

    /path/to/peers-venv/bin/python benchmarks/petab_amici_nominal.py --collection PATH/Benchmark-Models \
        --problems Crauste_CellSystems2017 ...

writes benchmarks/results/petab_amici_nominal.json: per problem and tolerance, AMICI's
log-likelihood, the import (code generation and compilation) time and the simulation time.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
import warnings
from pathlib import Path

TOLERANCES = ((1e-8, 1e-8), (1e-12, 1e-16))  # (rtol, atol): AMICI's test settings, then tight


def main() -> None:
    import amici
    import amici.sim.sundials as ass
    import petab.v1 as petab
    from amici.importers.petab.v1 import import_petab_problem
    from amici.sim.sundials.petab.v1 import LLH, RDATAS, simulate_petab
    from petab.v1.core import flatten_timepoint_specific_output_overrides
    from petab.v1.lint import measurement_table_has_timepoint_specific_mappings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, required=True)
    parser.add_argument("--problems", nargs="+", required=True)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "petab_amici_nominal.json")
    args = parser.parse_args()
    rows = json.loads(args.out.read_text())["problems"] if args.out.exists() else []
    rows = [r for r in rows if r["problem"] not in args.problems]
    for name in args.problems:
        row: dict = {"problem": name}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                problem = petab.Problem.from_yaml(str(args.collection / name / f"{name}.yaml"))
                if measurement_table_has_timepoint_specific_mappings(problem.measurement_df):
                    flatten_timepoint_specific_output_overrides(problem)  # AMICI needs them flat
            start = time.perf_counter()
            with tempfile.TemporaryDirectory() as folder:
                model = import_petab_problem(problem, output_dir=folder, compile_=True,
                                             generate_sensitivity_code=False, verbose=logging.WARNING)
                row["import_wall_s"] = time.perf_counter() - start
                for rtol, atol in TOLERANCES:
                    solver = model.create_solver()
                    solver.set_relative_tolerance(rtol)
                    solver.set_absolute_tolerance(atol)
                    solver.set_max_steps(1_000_000)
                    start = time.perf_counter()
                    result = simulate_petab(problem, amici_model=model, solver=solver)
                    ok = all(r.status == ass.AMICI_SUCCESS for r in result[RDATAS])
                    row[f"llh_rtol{rtol:g}_atol{atol:g}"] = float(result[LLH]) if ok else None
                    row[f"simulate_wall_s_rtol{rtol:g}"] = time.perf_counter() - start
        except Exception as error:  # noqa: BLE001 - reported, not hidden
            row["error"] = f"{type(error).__name__}: {error}"[:500]
        print(json.dumps(row), flush=True)
        rows.append(row)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"what": "AMICI log-likelihood at the nominal parameters",
                                        "amici": amici.__version__, "petab": petab.__version__,
                                        "problems": sorted(rows, key=lambda r: r["problem"])}, indent=1) + "\n")


if __name__ == "__main__":
    main()
