"""What one step of each simkit kernel runs, read from XLA's optimised HLO.

    python benchmarks/kernel_anatomy.py [--repeats 9] [--out benchmarks/results/kernel_anatomy.json]

For each kernel method, `simkit.inspect` compiles the program `simkit.solve` runs (nothing is
executed for it) and reads: compile time, XLA's cost analysis, the counts of fusions, while
loops, copies and custom-calls in the whole program, and what one iteration of the stepping
while loop runs (thunks: fusions, copies, other unfused operations), with the loops nested in
it (the LU factorisation's ``fori_loop``, Radau's Newton iterations). Then a short timing of
the same solve (median of interleaved repeats after the compile) divided by the number of
attempted steps: microseconds per step, all of the solve's work included (save times too).

Rows (the settings of benchmarks/kernels.py): Lorenz t 0..100, rtol = atol = 1e-8, 1000 saved
points, with Tsit5, DOPRI5, DOP853; Robertson t 0..1e5, rtol 1e-6, atol 1e-10, 100 saved
points, with Rodas4, Rodas5P, RadauIIA5. About 20 s on a loaded 2-core machine. Writes every
count, each loop's anatomy and the machine to the JSON file.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")  # compile times are measured

import argparse
import dataclasses
import json

import simkit
from simkit._config import configure_own_process
configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it
from stencil import machine  # benchmarks/stencil.py (run as scripts)
from timing import interleaved  # benchmarks/timing.py

LORENZ = dict(model="lorenz", t_span=(0.0, 100.0), saveat=1000, rtol=1e-8, atol=1e-8)
ROBERTSON = dict(model="robertson", t_span=(0.0, 1e5), saveat=100, rtol=1e-6, atol=1e-10)
ROWS = [("Tsit5", LORENZ), ("DOPRI5", LORENZ), ("DOP853", LORENZ),
        ("Rodas4", ROBERTSON), ("Rodas5P", ROBERTSON), ("RadauIIA5", ROBERTSON)]


def inner_loops(info: simkit.Inspection, loop) -> list:
    """The loops an iteration of ``loop`` runs (directly or in a branch), outermost first."""
    out = []
    for other in info.loops[info.loops.index(loop) + 1:]:
        if other.depth <= loop.depth:
            break
        out.append(other)
    return out


def fixed_thunks(info: simkit.Inspection, loop) -> int:
    """Thunks one iteration of ``loop`` always runs: its own and, times their trip counts, those
    of the fixed-count loops it runs in every iteration (not in a branch)."""
    total = loop.thunks
    for child in inner_loops(info, loop):
        if child.parent == loop.name and not child.in_branch and child.trip_count is not None:
            total += child.trip_count * fixed_thunks(info, child)
    return total


def setup_of(method: str, setup: dict) -> tuple:
    model = simkit.models.get(setup["model"])
    kwargs = dict(saveat=setup["saveat"], rtol=setup["rtol"], atol=setup["atol"],
                  solver=getattr(simkit, method)())
    return model, setup["t_span"], kwargs


def row(method: str, setup: dict, info: simkit.Inspection, seconds: float) -> dict:
    model, t_span, kwargs = setup_of(method, setup)
    stats = simkit.solve(model, t_span, **kwargs).stats
    n_steps = int(stats["num_steps"])
    step = info.stepping_loop
    nested = [dataclasses.asdict(lp) for lp in inner_loops(info, step)]
    return dict(
        method=method, model=setup["model"], settings={k: v for k, v in setup.items() if k != "model"},
        lower_s=info.lower_seconds, compile_s=info.compile_seconds, flops=info.flops,
        bytes_accessed=info.bytes_accessed, transcendentals=info.transcendentals,
        fusions=info.fusions, while_loops=info.while_loops, copies=info.copies,
        custom_calls=info.custom_calls, conditionals=info.conditionals,
        step_loop=dataclasses.asdict(step), step_thunks_fixed=fixed_thunks(info, step), nested_loops=nested,
        # loops of the step whose trip count depends on the data (Newton): thunks per iteration
        data_dependent=[(dataclasses.asdict(lp), fixed_thunks(info, lp)) for lp in inner_loops(info, step)
                        if lp.parent == step.name and lp.trip_count is None],
        loops=[dataclasses.asdict(lp) for lp in info.loops],
        num_steps=n_steps, num_accepted=int(stats["num_accepted_steps"]), num_rhs=int(stats["num_rhs"]),
        solve_s=seconds, us_per_step=1e6 * seconds / max(n_steps, 1),
    )


def _function(loop: dict) -> str:
    """The function a loop was written in (``lu_factor``, ``attempt``), else its HLO name."""
    source = loop["source"]
    return source.rsplit("(", 1)[1].rstrip(")").rsplit(".", 1)[-1] if "(" in source else loop["name"]


def loops_text(r: dict) -> str:
    """The loops one step runs, grouped: ``12x lu_solve (3 x 6)``."""
    step = r["step_loop"]["name"]
    names = {lp["name"]: _function(lp) for lp in r["loops"]}
    groups: dict[str, int] = {}
    for lp in r["nested_loops"]:
        trip = "n" if lp["trip_count"] is None else str(lp["trip_count"])
        notes = (["in a branch"] if lp["in_branch"] else []) + (
            [f"in {names.get(lp['parent'], lp['parent'])}"] if lp["parent"] != step else [])
        key = f"{_function(lp)} ({trip} x {lp['thunks']}{', ' + ', '.join(notes) if notes else ''})"
        groups[key] = groups.get(key, 0) + 1
    return "; ".join(f"{n}x {k}" for k, n in groups.items()) or "-"


def table(rows: list[dict]) -> str:
    lines = ["| method | problem | compile s | program: fusions / while loops / copies / custom-calls | "
             "stepping-loop body: thunks = fusions + copies + other | loops in a step (iterations x thunks) | "
             "thunks per step | steps | µs per step |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["step_loop"]
        other = s["thunks"] - s["fusions"] - s["copies"]
        per_step = str(r["step_thunks_fixed"]) + "".join(
            f" + {n} per {_function(lp)} iteration" for lp, n in r["data_dependent"])
        lines.append(
            f"| {r['method']} | {r['model']} | {r['compile_s']:.2f} | {r['fusions']} / {r['while_loops']} / "
            f"{r['copies']} / {r['custom_calls']} | {s['thunks']} = {s['fusions']} + {s['copies']} + {other}"
            f"{' (one kernel)' if s.get('kernel') else ''} | "
            f"{loops_text(r)} | {per_step} | {r['num_steps']} | {r['us_per_step']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "kernel_anatomy.json"))
    args = parser.parse_args(argv)
    before = machine()
    # compile every program first (inspect; nothing runs), then time the solves interleaved
    cases = {method: setup_of(method, setup) for method, setup in ROWS}
    infos = {method: simkit.inspect(model, t_span, **kw) for method, (model, t_span, kw) in cases.items()}
    solves = {method: (lambda c: lambda: simkit.solve(c[0], c[1], **c[2]).ys)(case)
              for method, case in cases.items()}
    seconds = interleaved(solves, args.repeats)
    rows = [row(method, setup, infos[method], seconds[method]) for method, setup in ROWS]
    print(table(rows))
    result = dict(rows=rows, machine=before, load_average_after=list(os.getloadavg()),
                  simkit=simkit.__version__, repeats=args.repeats)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
