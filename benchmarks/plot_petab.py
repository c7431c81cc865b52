"""Work-precision figure of the multi-start fits of Benchmark-Models-PEtab problems, drawn from
benchmarks/results/petab_multistart.json (which holds pyPESTO + AMICI's runs beside simkit's
and SciPy's)::

    python benchmarks/plot_petab.py [--results benchmarks/results/petab_multistart.json] \
        [--out benchmarks/results/petab_multistart.png]

One panel per problem. Each start is a point: the objective it reached above the best known
value (log scale; starts within 1e-4 drawn at 1e-4) against its method's CPU seconds per
start, compilation counted (all of the method's time over its starts). The dotted line is
the 0.1 within which a start counts as converged; the legend gives each method's converged
starts and CPU seconds per converged start. Nothing is recomputed here.
"""

from __future__ import annotations

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FLOOR = 1e-4
STYLE = {  # method -> (label, colour, marker)
    "simkit_least_squares": ("simkit, least squares (projected Levenberg-Marquardt, the default)", "C5", "*"),
    "simkit_ftol0": ("simkit, L-BFGS-B (fit(method='lbfgsb'))", "C0", "o"),
    "scipy": ("SciPy L-BFGS-B on simkit's objective", "C1", "s"),
    "pypesto_amici": ("pyPESTO + AMICI (fides)", "C2", "^"),
}


def draw(data: dict, path: str) -> list[str]:
    """Draw one panel per problem; returns the problems drawn."""
    problems = sorted(n for n, row in data["problems"].items() if "summary" in row)
    cols = min(3, len(problems))
    nrows = -(-len(problems) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(6.4 * cols, 5.0 * nrows), squeeze=False, layout="constrained")
    for ax, name in zip(axes.flat, problems):
        row = data["problems"][name]
        best = row["summary"]["best_known"]
        for k, (method, (label, colour, marker)) in enumerate(STYLE.items()):
            if method not in row:
                continue
            run = row[method]
            cost = np.asarray(run["cost"], dtype=float)
            per_start = row["summary"][method]["cpu_s_per_start"]  # the problem's load counted
            gap = np.where(np.isfinite(cost), np.maximum(cost - best, FLOOR), np.nan)
            failed = int(np.sum(~np.isfinite(cost)))
            jitter = per_start * (1.0 + 0.04 * (np.arange(cost.size) - cost.size / 2) / cost.size)
            hits = row["summary"][method]["within_0.1"]
            per_hit = row["summary"][method]["cpu_s_per_converged_start"]
            text = f"{label}: {hits}/{cost.size} converged" + (f", {per_hit:.3g} CPU s each" if per_hit else "")
            text += f" ({failed} ended not finite)" if failed else ""
            ax.scatter(jitter, gap, color=colour, marker=marker, alpha=0.75, s=28, label=text)
        ax.axhline(0.1, color="0.4", linestyle=":", linewidth=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{name} ({row['estimated']} parameters)", fontsize=10)
        ax.set_xlabel("CPU s per start (load and compilation counted)")
        ax.set_ylabel("objective - best known")
        ax.legend(fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(f"{v:g}")[0] in "25" else ""))
        ax.grid(True, which="major", alpha=0.3)
    for ax in list(axes.flat)[len(problems):]:
        ax.set_visible(False)
    fig.suptitle("Multi-start fits from the same 10 starts; one core each. Converged: within 0.1 (dotted) of the best known",
                 fontsize=10)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return problems


def table(data: dict) -> str:
    """The README's table: one row per problem and method."""
    lines = ["| problem (estimated) | objective at nominal / best known | method | best - best known | "
             "starts within 0.1 | CPU s: compile + fit | CPU s per converged start | median iterations |",
             "|---|---|---|---|---|---|---|---|"]
    for name in sorted(n for n, row in data["problems"].items() if "summary" in row):
        row = data["problems"][name]
        summary = row["summary"]
        first = True
        for method, (label, _, _) in STYLE.items():
            if method not in row:
                continue
            run, s = row[method], summary[method]
            # load (simkit's of the problem; AMICI's of its compiled model) and compilation
            compile_s = run.get("compile_cpu_s", 0.0) + run.get("load_cpu_s", 0.0) + s.get("load_cpu_s", 0.0)
            head = (f"{name} ({row['estimated']}) | {summary['nll_nominal']:.4f} / {summary['best_known']:.4f}"
                    if first else " | ")
            per_hit = f"{s['cpu_s_per_converged_start']:.3g}" if s["cpu_s_per_converged_start"] else "none converged"
            lines.append(f"| {head} | {label.split(' (')[0].split(' on ')[0]} | {s['best'] - summary['best_known']:.3g} | "
                         f"{s['within_0.1']}/{len(run['cost'])} | {compile_s:.3g} + {s['cpu_s'] - compile_s:.3g} | "
                         f"{per_hit} | {s['median_iterations']:.0f} |")
            first = False
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=os.path.join(HERE, "results", "petab_multistart.json"))
    parser.add_argument("--out", default=os.path.join(HERE, "results", "petab_multistart.png"))
    parser.add_argument("--table", action="store_true", help="print the README's table too")
    args = parser.parse_args()
    with open(args.results) as f:
        data = json.load(f)
    if args.table:
        print(table(data))
    print("drew", ", ".join(draw(data, args.out)), "->", args.out)


if __name__ == "__main__":
    main()
