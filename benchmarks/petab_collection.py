"""simkit.petab on the Benchmark-Models-PEtab collection: the objective at the nominal parameters.

For each problem: whether simkit reads it (or the PEtab/SBML feature it refuses), the negative
log-likelihood at the nominal parameters against two references, compile times, and the time
of one objective and of one objective with its gradient (CPU seconds and wall seconds, medians
of ``--repeats`` interleaved calls), and the gradient against central finite differences
along one random direction (differences of the objective solved at rtol 1e-12, atol 1e-14).

References:
- ``amici``: the log-likelihoods AMICI's test suite keeps for the collection
  (tests/benchmark_models/benchmark_models.yaml in AMICI), for the problems it lists;
- ``amici_tight``: AMICI 1.0 at rtol 1e-12, atol 1e-16 (benchmarks/petab_amici_nominal.py, run
  in its own environment), where measured; AMICI's stored values above were computed at about
  rtol 1e-8 and differ from it by up to 7e-6 relative (Crauste_CellSystems2017);
- ``simulated_table``: the log-likelihood of the collection's own simulation table
  (simulatedData_*.tsv, simulated by the problem's authors at the nominal parameters, printed
  to about 10 digits) computed with ``petab.calculate_llh``.

Usage::

    python benchmarks/petab_collection.py --collection PATH/Benchmark-Models [--problems A B ...]

writes benchmarks/results/petab_objective_at_nominal.json (``--out`` to change).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import simkit.petab as sp

AMICI_LLH = {  # AMICI's tests/benchmark_models/benchmark_models.yaml ("llh" at the nominal parameters)
    "Bachmann_MSB2011": 418.40573341425295,
    "Beer_MolBioSystems2014": 58622.9145631413,
    "Boehm_JProteomeRes2014": -138.22199693517703,
    "Borghans_BiophysChem1997": 83.3237191357272,
    "Brannmark_JBC2010": -141.889113770537,
    "Bruno_JExpBot2016": 46.688176988431806,
    "Chen_MSB2009": -115700.1192629893,
    "Crauste_CellSystems2017": -190.96521897435176,
    "Elowitz_Nature2000": 63.20279991419332,
    "Fiedler_BMCSystBiol2016": 58.58390161681,
    "Fujita_SciSignal2010": 53.08377736998929,
    "Isensee_JCB2018": -3949.375966548649,
    "Lucarelli_CellSystems2018": -1681.6059879426584,
    "Schwen_PONE2014": -943.9992988598723,
    "Sneyd_PNAS2002": 319.79177818768756,
    "Smith_BMCSystBiol2013": -888198.436541014,
    "Weber_BMC2015": -296.2017922646865,
    "Zheng_PNAS2012": 278.33353271001477,
}

DEFAULT_PROBLEMS = [
    "Boehm_JProteomeRes2014", "Borghans_BiophysChem1997", "Brannmark_JBC2010", "Bruno_JExpBot2016",
    "Crauste_CellSystems2017", "Elowitz_Nature2000", "Fiedler_BMCSystBiol2016", "Fujita_SciSignal2010",
    "Sneyd_PNAS2002", "Weber_BMC2015", "Zheng_PNAS2012", "Perelson_Science1996", "Rahman_MBS2016",
    "Bertozzi_PNAS2020", "Raia_CancerResearch2011", "Zhao_QuantBiol2020", "Armistead_CellDeathDis2024",
    "Okuonghae_ChaosSolitonsFractals2020", "Oliveira_NatCommun2021", "Giordano_Nature2020",
    "Blasi_CellSystems2016", "Laske_PLOSComputBiol2019", "Lucarelli_CellSystems2018", "Isensee_JCB2018",
    "Bachmann_MSB2011", "Schwen_PONE2014", "Beer_MolBioSystems2014", "Smith_BMCSystBiol2013",
    "Liu_IFACPapersOnLine2025", "Alkan_SciSignal2018", "Raimundez_PCB2020", "Lang_PLOSComputBiol2024",
    "SalazarCavazos_MBoC2020", "Chen_MSB2009", "Froehlich_CellSystems2018",
]


def _clock(fun):
    c, w = time.process_time(), time.perf_counter()
    out = jax.block_until_ready(fun())
    return out, time.process_time() - c, time.perf_counter() - w


def simulated_table_llh(yaml: Path) -> float | None:
    """``petab.calculate_llh`` of the problem's own simulation table, or None if it has none."""
    import petab.v1 as petab

    tables = sorted(yaml.parent.glob("simulatedData_*.tsv")) + sorted(yaml.parent.glob("simulations.tsv"))
    if not tables:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problem = petab.Problem.from_yaml(str(yaml))
        try:
            return float(petab.calculate_llh(problem.measurement_df, petab.get_simulation_df(str(tables[0])),
                                             problem.observable_df, problem.parameter_df))
        except Exception:  # noqa: BLE001 - a table that does not line up with the problem
            return None


def amici_tight_llh(name: str) -> float | None:
    """AMICI's log-likelihood at rtol 1e-12, atol 1e-16 (benchmarks/petab_amici_nominal.py), if measured."""
    path = Path(__file__).parent / "results" / "petab_amici_nominal.json"
    if not path.exists():
        return None
    for row in json.loads(path.read_text())["problems"]:
        if row["problem"] == name:
            return row.get("llh_rtol1e-12_atol1e-16")
    return None


def problem_yaml(folder: Path) -> Path:
    """The problem's YAML file: ``<name>.yaml``, else the folder's only (first) one."""
    yaml = folder / f"{folder.name}.yaml"
    return yaml if yaml.exists() else sorted(folder.glob("*.yaml"))[0]


def compare(row: dict, yaml: Path) -> None:
    """Add each reference log-likelihood and the relative difference of ``-row["nll"]`` from it."""
    for label, ref in (("amici", AMICI_LLH.get(row["problem"])), ("simulated_table", simulated_table_llh(yaml)),
                       ("amici_tight", amici_tight_llh(row["problem"]))):
        if ref is not None:
            row[f"reference_llh_{label}"] = ref
            row[f"rel_error_{label}"] = abs(row["nll"] + ref) / abs(ref)


def run_problem(folder: Path, repeats: int, gradient: bool) -> dict:
    name = folder.name
    yaml = problem_yaml(folder)
    row: dict = {"problem": name}
    c, w = time.process_time(), time.perf_counter()
    try:
        problem = sp.load(yaml)
    except sp.UnsupportedFeatureError as error:
        row.update(supported=False, unsupported=str(error))
        return row
    except Exception as error:  # noqa: BLE001 - reported in the table, not hidden
        row.update(supported=False, error=f"{type(error).__name__}: {error}")
        return row
    row.update(supported=True, load_cpu_s=time.process_time() - c, load_wall_s=time.perf_counter() - w,
               states=len(problem.model.state_names), estimated=len(problem.parameter_ids),
               conditions=len(problem.conditions),
               preequilibration=bool(problem.layout.preequilibrated.any()),
               measurements=int(sum(v.size for v in problem.layout.measurement_value)))
    x = jnp.asarray(problem.x_nominal)
    objective = jax.jit(problem.objective)
    value, cpu, wall = _clock(lambda: objective(x))
    prior = float(problem.negative_log_prior(x))
    # nll: the likelihood alone, which the references are; objective: with the priors' terms
    row.update(objective_compile_cpu_s=cpu, objective_compile_wall_s=wall, nll=float(value) - prior)
    if problem.layout.priors.any:
        row.update(negative_log_prior=prior, objective=float(value))
    compare(row, yaml)
    calls = {"objective": lambda: objective(x)}
    if gradient and math.isfinite(float(value)):
        (v2, grad), cpu, wall = _clock(lambda: problem.value_and_grad(x))
        row.update(gradient_compile_cpu_s=cpu, gradient_compile_wall_s=wall)
        calls["objective_and_gradient"] = lambda: problem.value_and_grad(x)
        # central differences of the objective solved at tight tolerances (at the default ones
        # the solver's error, ~1e-8 of the objective, swamps a difference quotient)
        tight = jax.jit(sp.load(yaml, rtol=1e-12, atol=1e-14).objective)
        d = np.random.default_rng(0).standard_normal(x.size)
        d /= np.linalg.norm(d)
        h = 1e-4
        fd = (float(tight(x + h * d)) - float(tight(x - h * d))) / (2 * h)
        row.update(directional_derivative=float(np.asarray(grad) @ d), finite_difference=fd,
                   finite_difference_step=h,
                   gradient_rel_error=abs(float(np.asarray(grad) @ d) - fd) / max(abs(fd), 1e-12))
    times = {k: ([], []) for k in calls}
    for _ in range(repeats):  # interleaved
        for key, call in calls.items():
            _, cpu, wall = _clock(call)
            times[key][0].append(cpu)
            times[key][1].append(wall)
    for key, (cpus, walls) in times.items():
        row[f"{key}_cpu_s"] = statistics.median(cpus)
        row[f"{key}_wall_s"] = statistics.median(walls)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, required=True, help="the collection's Benchmark-Models folder")
    parser.add_argument("--problems", nargs="*", default=DEFAULT_PROBLEMS)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-gradient", action="store_true")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "petab_objective_at_nominal.json")
    parser.add_argument("--references-only", action="store_true",
                        help="recompute the comparisons of the stored objective values with the references")
    args = parser.parse_args()
    if args.references_only:
        document = json.loads(args.out.read_text())
        for row in document["problems"]:
            if "nll" in row:
                compare(row, problem_yaml(args.collection / row["problem"]))
        args.out.write_text(json.dumps(document, indent=1) + "\n")
        return
    rows = []
    if args.out.exists():  # problems run before are kept unless run again
        rows = [r for r in json.loads(args.out.read_text())["problems"] if r["problem"] not in args.problems]
    for name in args.problems:
        folder = args.collection / name
        if not folder.is_dir():
            rows.append({"problem": name, "supported": False, "error": "not in the collection folder"})
            continue
        row = run_problem(folder, args.repeats, not args.no_gradient)
        rows.append(row)
        print(json.dumps(row), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(_document(rows), indent=1) + "\n")


def _document(rows: list[dict]) -> dict:
    return {
        "what": "simkit.petab objective at the nominal parameters: its negative log-likelihood (nll) "
                "against reference log-likelihoods, and, where the problem has objective priors, their "
                "negative log-density and the objective (their sum); times in seconds (medians; CPU and wall)",
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}; 2 cores shared with other "
                   "jobs while measured (wall times inflated several-fold)",
        "jax": jax.__version__,
        "solver": "simkit.solve, the stiff default (Rodas5P up to 64 states), rtol 1e-8, atol 1e-10",
        "problems": sorted(rows, key=lambda r: r["problem"]),
    }


if __name__ == "__main__":
    main()
