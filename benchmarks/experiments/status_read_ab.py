"""What reading a solve's status code costs: ``int()`` of the jax.Array against NumPy.

    python benchmarks/experiments/status_read_ab.py [--rounds 20] [--calls 300]
                                                    [--out benchmarks/results/status_read_ab.json]

`simkit._solve.finish` reads the result's status code to decide whether to raise. ``int()`` of
a fresh ``jax.Array`` goes through ``Array._value``; ``np.asarray`` reads the CPU buffer through
the buffer protocol. This script runs in one process: ``finish`` as committed (``np.asarray``)
and the same function with the one line as it was (``int(result.status)``), swapped between
rounds (each round starting with the other), on the rows of `benchmarks/call_overhead.py`
(Lorenz over one step; Robertson, Rodas5P, 60 saves). Each round: the median of ``--calls``
whole `simkit.solve` calls; reported: medians over rounds and the median of the paired
differences.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import jax  # noqa: E402
import numpy as np  # noqa: E402

import simkit  # noqa: E402
import simkit._solve as solve_module  # noqa: E402
from simkit import models  # noqa: E402
from stencil import machine  # noqa: E402  (benchmarks/stencil.py)

NEW_LINE = "code = int(np.asarray(result.status))"


def old_finish():
    """`finish` with the status read by ``int()`` of the jax.Array, as before."""
    source = inspect.getsource(solve_module.finish)
    if NEW_LINE not in source:
        raise SystemExit(f"simkit._solve.finish no longer reads {NEW_LINE!r}: update this experiment")
    namespace = dict(vars(solve_module))
    exec(source.replace(NEW_LINE, "code = int(result.status)"), namespace)  # noqa: S102
    return namespace["finish"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    variants = {"np.asarray": solve_module.finish, "int()": old_finish()}
    lorenz, robertson = models.get("lorenz"), models.get("robertson")
    save_ts = np.concatenate([[0.0], np.logspace(-5, 5, 60)[1:]])
    rows = {
        "lorenz_one_step": lambda: jax.block_until_ready(simkit.solve(lorenz, (0.0, 1e-9), saveat=2)),
        "robertson": lambda: jax.block_until_ready(
            simkit.solve(robertson, (0.0, 1e5), saveat=save_ts, rtol=1e-6, atol=1e-10)),
    }
    times: dict = {row: {v: [] for v in variants} for row in rows}
    for call in rows.values():
        for _ in range(200):
            call()
    for r in range(a.rounds):
        for row, call in rows.items():
            for name in (list(variants) if r % 2 else list(variants)[::-1]):
                solve_module.finish = variants[name]
                each = []
                for _ in range(a.calls):
                    start = time.perf_counter()
                    call()
                    each.append(time.perf_counter() - start)
                times[row][name].append(1e6 * statistics.median(each))
    solve_module.finish = variants["np.asarray"]
    result = {}
    for row, by in times.items():
        new, old = by["np.asarray"], by["int()"]
        result[row] = {"np.asarray_us": statistics.median(new), "int_us": statistics.median(old),
                       "paired_difference_us": statistics.median([n - o for n, o in zip(new, old)])}
        print(row, {k: round(v, 1) for k, v in result[row].items()})
    record = {"command": "python benchmarks/experiments/status_read_ab.py " + " ".join(sys.argv[1:]),
              "machine": machine(), "rounds": a.rounds, "calls": a.calls, "rows": result}
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(record, fh, indent=1)


if __name__ == "__main__":
    main()
