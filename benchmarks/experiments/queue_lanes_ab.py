"""Refilled lanes on a CPU: the default lane count against 256 lanes.

    python benchmarks/experiments/queue_lanes_ab.py [--rounds 15] [--out FILE]

`simkit.ensemble` gives a CPU device's refilled queue fewer lanes than 256
where it has fewer than 16 members per lane (`simkit._ensemble.MEMBERS_PER_LANE`; at least
`MIN_QUEUE_LANES` = 64 lanes): the queue's drain, its last members running on a few lanes
while the others idle, then costs a smaller share of the run. This script runs the default and
``chunk_size=256`` (the default before) on the `benchmarks/ensemble.py` workloads at two
sizes each, and 500 members (Lorenz, rho ~ U[10, 50], t 0..10, 1e-6, Tsit5; van der Pol, mu log-uniform in
[0.1, 100], t 0..20, 1e-6, Rodas4; ``saveat=2``; all devices): one process, both compiled
first, then ``--rounds`` rounds, the order swapped every round; medians of the call times
and of the paired ratios (256 lanes' time over the default's), and whether the two gave the
same bits (they should: results do not depend on the lanes).
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
from simkit import _ensemble, models  # noqa: E402
from stencil import machine  # noqa: E402  (benchmarks/stencil.py)


def workloads() -> dict:
    rng = np.random.default_rng(0)
    rhos = rng.uniform(10.0, 50.0, 10_000)
    mus = np.exp(rng.uniform(np.log(0.1), np.log(100.0), 10_000))
    lorenz = dict(model=models.get("lorenz"), t_span=(0.0, 10.0), rtol=1e-6, atol=1e-6)
    vdp = dict(model=models.get("van_der_pol"), t_span=(0.0, 20.0), rtol=1e-6, atol=1e-6, solver=simkit.Rodas4())
    return {
        "van der Pol, 500 members": (vdp, {"mu": mus[:500]}),
        "van der Pol, 2,500 members": (vdp, {"mu": mus[:2500]}),
        "van der Pol, 10,000 members": (vdp, {"mu": mus}),
        "Lorenz, 500 members": (lorenz, {"rho": rhos[:500]}),
        "Lorenz, 2,000 members": (lorenz, {"rho": rhos[:2000]}),
        "Lorenz, 10,000 members": (lorenz, {"rho": rhos}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "results", "queue_lanes_ab.json"))
    args = parser.parse_args()
    before = machine()
    n_dev = len(jax.local_devices())
    rows = {}
    for name, (kw, params) in workloads().items():
        members = len(next(iter(params.values())))
        per_device = -(-members // n_dev)
        default_lanes = _ensemble.lanes_per_device(per_device, "cpu", True, fits=10**9)
        calls = {"default": None, "256 lanes": 256}
        ys = {}
        for label, lanes in calls.items():  # compile + first call
            ys[label] = np.asarray(simkit.ensemble(**kw, params=params, saveat=2, chunk_size=lanes).ys)
        times = {label: [] for label in calls}
        for r in range(args.rounds):
            for label in (list(calls) if r % 2 == 0 else list(calls)[::-1]):
                start = time.perf_counter()
                np.asarray(simkit.ensemble(**kw, params=params, saveat=2, chunk_size=calls[label]).ys)
                times[label].append(time.perf_counter() - start)
        ratio = statistics.median(b / a for a, b in zip(times["default"], times["256 lanes"]))
        rows[name] = dict(members=members, devices=n_dev, default_lanes=default_lanes,
                          solves_per_s={k: members / statistics.median(v) for k, v in times.items()},
                          median_paired_ratio_256_over_default=ratio, times_s=times,
                          same_bits=bool(np.array_equal(ys["default"], ys["256 lanes"])))
        print(f"{name}: default ({default_lanes} lanes) {rows[name]['solves_per_s']['default']:,.0f} solves/s, "
              f"256 lanes {rows[name]['solves_per_s']['256 lanes']:,.0f}; paired ratio {ratio:.3f}; "
              f"same bits {rows[name]['same_bits']}", flush=True)
    result = dict(command=" ".join(["python benchmarks/experiments/queue_lanes_ab.py", *sys.argv[1:]]),
                  machine=before, load_average_after=list(os.getloadavg()), rounds=args.rounds, rows=rows)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
