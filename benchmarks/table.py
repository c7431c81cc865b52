"""The benchmark summary table, read from the committed results in benchmarks/results/*.json.

    python benchmarks/table.py            # print the markdown table and its sources
    python benchmarks/table.py --write    # replace the table in benchmarks/README.md

Each row is one workload; each cell a peer's median time, the method it ran, and the ratio
peer time / simkit time (above 1: simkit is faster; below 1: the peer is). Nothing is typed
in here but which row of which file each cell reads; re-running a benchmark script rewrites
its JSON, and this script then rewrites the table.
"""

from __future__ import annotations

import argparse
import json
import pathlib
from collections.abc import Callable
from dataclasses import dataclass, field

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results"
README = HERE / "README.md"
BEGIN = "<!-- begin: python benchmarks/table.py --write -->"
END = "<!-- end: python benchmarks/table.py --write -->"
PEERS = ("SciPy", "numbalsoda", "diffrax", "NumPy", "numba")


@dataclass(frozen=True)
class Workload:
    """One row: ``times(result)`` gives {row label in the JSON: seconds}; ``simkit`` and
    ``peers`` name the labels shown, each as (label, method shown in the cell); simkit's
    method may be read from the result (a callable)."""

    name: str
    file: str
    times: Callable[[dict], dict[str, float]]
    simkit: tuple[str, str | Callable[[dict], str]]
    peers: dict[str, tuple[str, str]] = field(default_factory=dict)


def _ensemble(problem: str) -> Callable[[dict], dict[str, float]]:
    # seconds for the whole ensemble: members / solves per second (SciPy's loop ran a subset)
    def times(result: dict) -> dict[str, float]:
        block = result[problem]
        return {label: block["members"] / rate for label, rate in block["solves_per_s"].items()}

    return times


def _stiff_row(problem: str, rtol: float, key: str = "problem") -> Callable[[dict], dict[str, float]]:
    def times(result: dict) -> dict[str, float]:
        (row,) = [r for r in result["rows"] if r[key] == problem and r["rtol"] == rtol]
        return {label: r["time"] for label, r in row["results"].items() if r.get("status", 0) == 0}

    return times


def _stiff_solver(problem: str, rtol: float, key: str = "problem") -> Callable[[dict], str]:
    # the method simkit's default chose, as the results file records it ("simkit.Rodas5P()")
    def solver(result: dict) -> str:
        (row,) = [r for r in result["rows"] if r[key] == problem and r["rtol"] == rtol]
        return row["results"]["simkit default"]["solver"].removeprefix("simkit.").removesuffix("()")

    return solver


WORKLOADS = (
    Workload("Lorenz, one solve (t 0..100, rtol = atol = 1e-8, 1,000 saves)", "kernels.json",
             lambda r: r["rows"]["lorenz"]["run_s"], ("simkit default (Tsit5)", "Tsit5"),
             {"SciPy": ("scipy DOP853 (NumPy rhs)", "DOP853"),
              "numbalsoda": ("numbalsoda DOP853 (a process of its own)", "DOP853"),
              "diffrax": ("extra: diffrax Tsit5 (via simkit.solve)", "Tsit5")}),
    Workload("Robertson, one solve (t 0..1e5, rtol 1e-6, atol 1e-10, 60 saves)", "kernels.json",
             lambda r: r["rows"]["robertson"]["run_s"], ("simkit default (Rodas5P)", "Rodas5P"),
             {"SciPy": ("scipy LSODA (NumPy rhs, FD Jacobian)", "LSODA"),
              "numbalsoda": ("numbalsoda LSODA (a process of its own)", "LSODA"),
              "diffrax": ("extra: diffrax Kvaerno5, its default Newton tolerances (via simkit.solve)", "Kvaerno5")}),
    Workload("HIRES, one solve (8 states, rtol 1e-6)", "stiff_robertson_hires_vdp.json",
             _stiff_row("hires", 1e-6), ("simkit default", _stiff_solver("hires", 1e-6)),
             {"SciPy": ("scipy LSODA", "LSODA"), "numbalsoda": ("numbalsoda LSODA", "LSODA")}),
    Workload("van der Pol mu = 1000, one solve (rtol 1e-6)", "stiff_robertson_hires_vdp.json",
             _stiff_row("van_der_pol_1000", 1e-6), ("simkit default", _stiff_solver("van_der_pol_1000", 1e-6)),
             {"SciPy": ("scipy LSODA", "LSODA"), "numbalsoda": ("numbalsoda LSODA", "LSODA")}),
    Workload("Lorenz ensemble, 10,000 members (rho ~ U[10, 50], t 0..10, 1e-6)", "ensemble.json", _ensemble("lorenz"),
             ("simkit.ensemble (default: refilled lanes, all devices)", "Tsit5"),
             {"SciPy": ("scipy RK45 loop (NumPy rhs)", "RK45 loop"),
              "numbalsoda": ("numbalsoda DOP853, numba prange (2 threads)", "DOP853, 2 threads"),
              "diffrax": ("naive jit(vmap(solve)), diffrax Tsit5", "Tsit5, jit(vmap)")}),
    Workload("van der Pol ensemble, 2,500 members (mu log-uniform in [0.1, 100], t 0..20, 1e-6)", "ensemble.json",
             _ensemble("van_der_pol"), ("simkit.ensemble (default: refilled lanes)", "Rodas4"),
             {"SciPy": ("scipy LSODA loop (NumPy rhs)", "LSODA loop"),
              "numbalsoda": ("numbalsoda LSODA, numba prange (2 threads)", "LSODA, 2 threads")}),
    Workload("2-D Brusselator, 10,368 states (method of lines, rtol 1e-6)", "stiff_mol.json",
             _stiff_row(72, 1e-6, key="n"), ("simkit default", _stiff_solver(72, 1e-6, key="n")),
             {"SciPy": ("scipy BDF", "BDF, sparse Jacobian")}),
    Workload("2-D heat, 2048 x 2048, one explicit Euler step", "stencil.json",
             lambda r: r["median_s"], ("simkit heat", "stencil.integrate"),
             {"NumPy": ("numpy heat", "array slicing"),
              "numba": ("numba heat (all threads)", "prange, 2 threads")}),
    Workload("Lynx-hare fit, 6 parameters, one start", "fit.json",
             lambda r: {label: row["run_s"] for label, row in r["rows"].items()},
             ("simkit LM, 1 start(s)", "Levenberg-Marquardt"),
             {"SciPy": ("SciPy least_squares + LSODA, 1 start", "least_squares + LSODA")}),
)


def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def seconds(value: float) -> str:
    """A time in the unit that keeps 3 significant figures readable."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            break
    return f"{value / scale:.3g} {unit}"


def ratio(peer: float, simkit: float) -> str:
    x = peer / simkit
    return f"{x:.3g}x" if x < 100 else f"{x:,.0f}x"


def provenance(result: dict) -> tuple[str, str]:
    """(date, commit) of a result: recorded by the script at run time, else from git."""
    for where in (result.get("machine", {}), result.get("recorded", {})):
        if where.get("commit"):
            return where["date"], where["commit"]
    return "unknown", "unknown"


def table() -> str:
    header = "| workload | simkit | " + " | ".join(PEERS) + " |"
    lines = [header, "|" + "---|" * (2 + len(PEERS))]
    for w in WORKLOADS:
        result = load(w.file)
        times = w.times(result)
        label, method = w.simkit
        method = method(result) if callable(method) else method
        base = times[label]
        cells = [f"{seconds(base)} ({method})"]
        for peer in PEERS:
            if peer not in w.peers:
                cells.append("")
                continue
            plabel, pmethod = w.peers[peer]
            cells.append(f"{seconds(times[plabel])} ({pmethod}): **{ratio(times[plabel], base)}**")
        lines.append(f"| {w.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sources() -> str:
    lines = ["| results file | machine | date | commit | command |", "|---|---|---|---|---|"]
    for name in dict.fromkeys(w.file for w in WORKLOADS):
        result = load(name)
        machine = result.get("machine", {})
        date, commit = provenance(result)
        where = f"{machine.get('cpu', 'unknown')}, {machine.get('cores', '?')} cores"
        command = result.get("command") or f"python benchmarks/{name.removesuffix('.json')}.py"
        lines.append(f"| `{name}` | {where} | {date} | {commit} | `{command}` |")
    return "\n".join(lines)


def block() -> str:
    return "\n\n".join([BEGIN, table(), sources(), END])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"replace the table in {README.name}")
    args = parser.parse_args(argv)
    if not args.write:
        print(block())
        return
    text = README.read_text()
    start, stop = text.index(BEGIN), text.index(END) + len(END)
    README.write_text(text[:start] + block() + text[stop:])
    print(f"wrote the table into {README}")


if __name__ == "__main__":
    main()
