"""Work-precision diagrams of the stiff suite, drawn from benchmarks/results/stiff.json:

    python benchmarks/plot_stiff.py [--results benchmarks/results/stiff.json] [--out benchmarks/results/stiff_work_precision.png]
    python benchmarks/plot_stiff.py --results benchmarks/results/stiff_mol_wp.json --out benchmarks/results/stiff_mol_work_precision.png

The second draws `benchmarks/stiff_mol.py`'s rows (one panel per grid size, simkit's default
drawn as its own curve, the error as that script defines it).

One panel per problem: run time per solve against the error at the final time (as
`benchmarks/stiff.py` computes it: the largest over components of ``|y - ref| / (|ref| +
scale)``), one point per rtol, one curve per solver. Runs that failed (status not 0) are
left out and counted in the legend. Nothing is recomputed here: the figure shows the
committed measurements, and its caption names the command that produced them.
"""

from __future__ import annotations

import argparse
import json
import os
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STYLE = {  # solver -> (colour, marker, line style): simkit solid, peers dashed
    "simkit Rodas4": ("C0", "o", "-"), "simkit Rodas5P": ("C1", "s", "-"),
    "simkit RadauIIA5": ("C2", "^", "-"), "simkit AutoSwitch": ("C3", "D", "-"),
    "simkit BDF": ("C4", "v", "-"),
    "scipy Radau": ("C2", "^", "--"), "scipy BDF": ("C4", "v", "--"), "scipy LSODA": ("C5", "x", "--"),
    "numbalsoda LSODA": ("C7", "+", ":"),
    "extra: simkit default inside jax.jit": ("C1", "s", ":"),  # the default's program alone
    # benchmarks/stiff_mol.py's rows
    "simkit default": ("C1", "o", "-"), "simkit unpreconditioned": ("C3", "D", "-"), "simkit dense": ("C0", "s", "-"),
    "simkit krylov": ("C1", "o", "-"),
}


def _problem(row: dict) -> str:
    """A row's panel: stiff.py's problem, or stiff_mol.py's grid."""
    return row.get("problem") or f"2-D Brusselator {row['n']}x{row['n']} ({row['states']:,} states)"


def draw(data: dict, path: str) -> list[str]:
    """Draw the panels; returns the problems drawn."""
    rows = data["rows"]
    problems = list(dict.fromkeys(_problem(r) for r in rows))
    mol = "problem" not in rows[0]  # stiff_mol.py: its default is the row of interest
    cols = min(3, len(problems))
    nrows = -(-len(problems) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(max(5.2 * cols, 6.5), 4.2 * nrows + 0.4 * (cols == 1)), squeeze=False, layout="constrained")
    handles: dict[str, object] = {}
    for ax, name in zip(axes.flat, problems):
        by_solver: dict[str, list[tuple[float, float]]] = {}
        failed: dict[str, int] = {}
        for r in (r for r in rows if _problem(r) == name):
            for label, res in r["results"].items():
                if label == "simkit default" and not mol:
                    continue
                if res.get("status", 0) != 0 or not np.isfinite(res["error"]) or res["error"] <= 0:
                    failed[label] = failed.get(label, 0) + 1
                    continue
                by_solver.setdefault(label, []).append((res["error"], res["time"]))
        for label, pts in by_solver.items():
            err, sec = zip(*sorted(pts))
            colour, marker, line = STYLE.get(label, ("k", ".", "-"))
            (h,) = ax.loglog(err, sec, marker=marker, linestyle=line, color=colour, label=label)
            handles.setdefault(label, h)
        rtols = sorted({r["rtol"] for r in rows if _problem(r) == name})
        note = ", ".join(f"{k.replace('simkit ', '')} x{v}" for k, v in failed.items())
        note = "\n".join(textwrap.wrap(f"runs that failed (left out): {note}", 60)) if note else ""
        ax.set_title(f"{name}, rtol {rtols[-1]:g} ... {rtols[0]:g}" + (f"\n{note}" if note else ""), fontsize=8)
        ax.set_xlabel("error at t1: max_i |y_i - ref_i| / (|ref_i| + " + ("1)" if mol else "scale)"), fontsize=8)
        ax.set_ylabel("run time per solve [s]", fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(problems):]:
        ax.axis("off")
    if len(problems) == 1:  # one panel: the legend inside it (its upper right is empty here)
        axes.flat[0].legend(list(handles.values()), list(handles.keys()), loc="upper right", fontsize=8)
    else:
        fig.legend(list(handles.values()), list(handles.keys()), loc="outside right upper", fontsize=9)
    title = (f"{'method of lines' if mol else 'stiff suite'} work-precision "
             f"({data.get('command', 'python benchmarks/stiff.py')}; "
             f"{data.get('machine', {}).get('cores', '?')} cores)")
    fig.suptitle("\n".join(textwrap.wrap(title, 60 * cols)), fontsize=10)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return problems


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=os.path.join(HERE, "results", "stiff.json"))
    parser.add_argument("--out", default=os.path.join(HERE, "results", "stiff_work_precision.png"))
    args = parser.parse_args(argv)
    with open(args.results) as fh:
        data = json.load(fh)
    problems = draw(data, args.out)
    print(f"{args.out}: {len(problems)} problems")


if __name__ == "__main__":
    main()
