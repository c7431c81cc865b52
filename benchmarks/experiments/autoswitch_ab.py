"""AutoSwitch before and after a change to `simkit/kernels/switching.py`, in one process.

    python benchmarks/experiments/autoswitch_ab.py --before COMMIT [--repeats 7] [--out FILE]

The ``--before`` commit's `switching.py` is loaded from git as a module of its own and run as a kernel beside the current
`simkit.AutoSwitch()` and `simkit.Rodas5P()`, the three calls interleaved (one of each per
round, medians of ``repeats`` after the compiling call), on the stiff suite's problems
(`benchmarks/stiff.py`: Robertson to 1e5 and 1e11, HIRES, POLLU, van der Pol mu = 1000, the
Oregonator) at rtol 1e-8, 1e-10 and 1e-12 with the suite's atol. Timing the two versions in
one process removes the machine's drift between runs, which on this shared 2-core machine
was as large as the differences (the same program 250-500 ms from one process to the
next). Writes `benchmarks/results/autoswitch_ab.json`; about 3 minutes.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time

import jax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/: stiff.py

import simkit  # noqa: E402
from simkit import models  # noqa: E402
from simkit.kernels.methods import ExplicitRK, Rosenbrock  # noqa: E402
from simkit.kernels.solvers import _RODAS5P_TABLEAU, _TSIT5_TABLEAU, AutoSwitch  # noqa: E402
from stiff import PROBLEMS, error, machine, reference_state, write_result  # noqa: E402


def load_before(commit: str):
    """The commit's `simkit.kernels.switching`, as a module named ``switching_before``."""
    source = subprocess.run(["git", "show", f"{commit}:simkit/kernels/switching.py"], check=True,
                            capture_output=True, text=True, cwd=HERE).stdout
    source = source.replace("from .methods import", "from simkit.kernels.methods import")
    source = source.replace("from .linalg import", "from simkit.kernels.linalg import")
    path = os.path.join(tempfile.mkdtemp(), "switching_before.py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location("switching_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the git commit whose switching.py to compare")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default=os.path.join(HERE, "..", "results", "autoswitch_ab.json"))
    args = parser.parse_args(argv)
    before = load_before(args.before)

    class AutoSwitchBefore(AutoSwitch):
        def method(self):
            return before.AutoSwitchMethod(ExplicitRK(_TSIT5_TABLEAU), Rosenbrock(_RODAS5P_TABLEAU))

        def __repr__(self) -> str:
            return f"AutoSwitch@{args.before}"

    solvers = {"before": AutoSwitchBefore(), "after": AutoSwitch(), "Rodas5P": simkit.Rodas5P()}
    load = os.getloadavg()
    rows = []
    for name, (model_name, t1, scale, _) in PROBLEMS.items():
        m = models.get(model_name)
        ref = reference_state(name)
        for rtol in (1e-8, 1e-10, 1e-12):
            calls = {label: (lambda s=solver: simkit.solve(m, (0.0, t1), saveat=1, rtol=rtol, atol=rtol * scale,
                                                          solver=s, throw=False))
                     for label, solver in solvers.items()}
            sols = {label: jax.block_until_ready(call()) for label, call in calls.items()}
            times = {label: [] for label in calls}
            for _ in range(args.repeats):
                for label, call in calls.items():
                    start = time.perf_counter()
                    jax.block_until_ready(call())
                    times[label].append(time.perf_counter() - start)
            row = dict(problem=name, rtol=rtol, atol=rtol * scale, results={})
            for label, sol in sols.items():
                stats = {k: int(v) for k, v in sol.stats.items()}
                row["results"][label] = dict(time=statistics.median(times[label]), status=int(sol.status),
                                             error=error(sol.ys[-1], ref, scale), **stats)
            r = row["results"]
            row["before_over_after"] = r["before"]["time"] / r["after"]["time"]
            row["after_over_rodas5p"] = r["after"]["time"] / r["Rodas5P"]["time"]
            rows.append(row)
            print(f"{name:17s} {rtol:6.0e}  before {r['before']['time'] * 1e3:8.2f} ms {r['before']['num_steps']:7d} "
                  f"steps status {r['before']['status']}  after {r['after']['time'] * 1e3:8.2f} ms "
                  f"{r['after']['num_steps']:7d} steps ({r['after']['num_stiff_steps']} stiff, "
                  f"{r['after']['num_switches']} switches)  Rodas5P {r['Rodas5P']['time'] * 1e3:8.2f} ms  "
                  f"before/after {row['before_over_after']:5.2f}", flush=True)
    command = "python benchmarks/experiments/autoswitch_ab.py " + " ".join(argv if argv is not None else sys.argv[1:])
    return write_result(args.out, dict(command=command, before=args.before,
                                       machine=machine() | dict(load_before=load, load_after=os.getloadavg()),
                                       rows=rows))


if __name__ == "__main__":
    main()
