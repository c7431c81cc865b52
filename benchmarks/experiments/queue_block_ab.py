"""Refilled lanes stepping in blocks against one attempt per iteration.

    python benchmarks/experiments/queue_block_ab.py [--rounds 6] [--calls 4]
                                                    [--out benchmarks/results/queue_block_ab.json]

`simkit.engines.kernel_queue` runs members that save at t0 and t1 only (``saveat=2``) in
blocks of `kernel_queue.BLOCK` step attempts, with the saves and the refill between blocks;
other members run the loop that saves and tests for a refill after every attempt. This script
runs both on the `benchmarks/ensemble.py` workloads (Lorenz, 10,000 members, rho ~ U[10,
50], t 0..10, 1e-6, Tsit5; van der Pol, 2,500 members, mu log-uniform in [0.1, 100], t
0..20, 1e-6, Rodas4; ``saveat=2``; all devices) in one process: the choice
(`kernel_queue.ends_only`) is swapped between rounds, each round compiling its program
again (``jax.clear_caches``) and timing ``--calls`` calls; reported: solves per second from
the median over rounds of each round's fastest call, the median of the paired ratios, and
whether the two gave the same values, steps and counters.
"""

from __future__ import annotations

import argparse
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
from simkit import models  # noqa: E402
from simkit.engines import kernel_queue  # noqa: E402
from stencil import machine  # noqa: E402  (benchmarks/stencil.py)

VARIANTS = {"blocks": kernel_queue.ends_only, "every attempt": lambda program: False}


def compare(workloads: dict, variants: dict, install, rounds: int, calls: int) -> dict:
    """Each workload ``(model, member values, ensemble kwargs)`` under each of two
    ``variants`` (name -> what ``install`` puts in place), swapped between ``rounds``, each
    round compiling its program again (``jax.clear_caches``) and timing ``calls`` calls:
    solves per second (the median over rounds of each round's fastest call), the median of
    the paired ratios (second over first variant's time), the first call, and whether the
    two gave the same values, steps and counters."""
    first_name, second_name = variants
    rows = {}
    for name, (model, values, kw) in workloads.items():
        members = len(next(iter(values.values())))
        best = {v: [] for v in variants}
        first = {v: [] for v in variants}
        results = {}
        for r in range(rounds):
            for v in (list(variants) if r % 2 == 0 else list(variants)[::-1]):
                install(variants[v])
                jax.clear_caches()
                start = time.perf_counter()
                results[v] = simkit.ensemble(model, params=values, **kw)
                first[v].append(time.perf_counter() - start)
                times = []
                for _ in range(calls):
                    start = time.perf_counter()
                    jax.block_until_ready(simkit.ensemble(model, params=values, **kw).ys)
                    times.append(time.perf_counter() - start)
                best[v].append(min(times))
        x, y = results[first_name], results[second_name]
        rows[name] = row = {
            "members": members,
            "solves_per_s": {v: members / statistics.median(t) for v, t in best.items()},
            "paired_speed_up": statistics.median(e / b for b, e in zip(best[first_name], best[second_name])),
            "first_call_s": {v: statistics.median(t) for v, t in first.items()},
            "best_call_s": best,
            "same_values": bool(np.array_equal(x.ys, y.ys)),
            "max_abs_difference": float(np.max(np.abs(x.ys - y.ys))),
            "same_steps_and_counters": all(np.array_equal(x.stats[k], y.stats[k]) for k in x.stats),
        }
        print(f"{name}: " + ", ".join(f"{v} {s:,.0f} solves/s" for v, s in row["solves_per_s"].items())
              + f"; {first_name} / {second_name} {row['paired_speed_up']:.2f}x (median of paired rounds); "
              f"same values {row['same_values']}, same steps and counters {row['same_steps_and_counters']}",
              flush=True)
    return rows


def record(script: str, workloads: dict, variants: dict, attr: str) -> None:
    """The command line (``--rounds``, ``--calls``, ``--out``), then `compare` with the
    variants put in place as ``kernel_queue.<attr>`` (the first one restored after), and the
    JSON record written to ``--out``."""
    ap = argparse.ArgumentParser(description=sys.modules["__main__"].__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    before = machine()
    try:
        rows = compare(workloads, variants, lambda choice: setattr(kernel_queue, attr, choice), a.rounds, a.calls)
    finally:
        setattr(kernel_queue, attr, next(iter(variants.values())))
    out = {"command": f"python benchmarks/experiments/{os.path.basename(script)} " + " ".join(sys.argv[1:]),
           "machine": before, "load_average_after": list(os.getloadavg()), "block": kernel_queue.BLOCK,
           "rounds": a.rounds, "calls": a.calls, "rows": rows}
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(out, fh, indent=1)


def main() -> None:
    rng = np.random.default_rng(0)
    workloads = {
        "lorenz": (models.get("lorenz"), {"rho": rng.uniform(10.0, 50.0, 10000)},
                   dict(t_span=(0.0, 10.0), saveat=2, rtol=1e-6, atol=1e-6)),
        "van_der_pol": (models.get("van_der_pol"), {"mu": np.exp(rng.uniform(np.log(0.1), np.log(100.0), 2500))},
                        dict(t_span=(0.0, 20.0), saveat=2, rtol=1e-6, atol=1e-6, solver=simkit.Rodas4())),
    }
    record(__file__, workloads, VARIANTS, "ends_only")


if __name__ == "__main__":
    main()
