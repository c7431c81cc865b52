"""What a pause before a call costs simkit's compiled program, by kind of pause.

    python benchmarks/experiments/pause_cost.py [--out FILE]
    taskset -c 0 python benchmarks/experiments/pause_cost.py [--out FILE]   # one CPU

Rows: simkit's default on Robertson (t 0..1e5, rtol 1e-6, atol 1e-10, 60 log-spaced saves,
Rodas5P) inside the user's ``jax.jit`` (a parameter passed in, so each call runs the compiled
program alone), and a ``jax.jit`` of ``x + 1`` on a 3-vector. Each is called 40 times after each
kind of untimed pause: none (back to back), 10 ms of Python work (`timing.settle`, what the
benchmarks' settled calls use), 10 ms and 1 ms of ``time.sleep``, a 10 ms busy wait on
``time.perf_counter`` (no memory touched) and a sum over 64 MB (the caches evicted). Medians in
µs. numbalsoda's LSODA on the same problem loses nothing to a pause (`own_process.py`).
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

import jax  # noqa: E402
import numpy as np  # noqa: E402

import simkit  # noqa: E402
from stencil import machine  # noqa: E402  benchmarks/stencil.py
from timing import settle  # noqa: E402  benchmarks/timing.py


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    rob = simkit.models.get("robertson")
    ts = np.logspace(-5, 5, 60)
    ts[0] = 0.0
    robertson = jax.jit(lambda k1: simkit.solve(rob, (0.0, 1e5), saveat=ts, rtol=1e-6, atol=1e-10,
                                                params={"k1": k1}).ys)
    x = jax.numpy.ones(3)
    plus_one = jax.jit(lambda v: v + 1.0)
    big = np.ones(8_000_000)

    def busy() -> None:
        end = time.perf_counter() + 0.01
        while time.perf_counter() < end:
            pass

    pauses = {"none (back to back)": lambda: None, "Python work 10 ms": settle,
              "sleep 10 ms": lambda: time.sleep(0.01), "sleep 1 ms": lambda: time.sleep(0.001),
              "busy wait 10 ms": busy, "sum over 64 MB": big.sum}
    out = {}
    rows = {"Robertson, Rodas5P inside jax.jit": lambda: robertson(0.04), "jax.jit of x + 1": lambda: plus_one(x)}
    for name, fn in rows.items():
        jax.block_until_ready(fn())
        out[name] = {}
        for pause_name, pause in pauses.items():
            samples = []
            for _ in range(40):
                pause()
                start = time.perf_counter()
                jax.block_until_ready(fn())
                samples.append(time.perf_counter() - start)
            out[name][pause_name] = 1e6 * statistics.median(samples)
            print(f"{name:36s} {pause_name:22s} {out[name][pause_name]:8.0f} µs")
    record = dict(command="python benchmarks/experiments/pause_cost.py " + " ".join(sys.argv[1:]),
                  cpu_affinity=sorted(os.sched_getaffinity(0)), machine=machine(), median_us=out)
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(record, fh, indent=1)


if __name__ == "__main__":
    main()
