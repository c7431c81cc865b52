"""A/B of a whole small solve as one XLA:CPU kernel (session 33), one line of JSON per run.

    python benchmarks/experiments/one_kernel_solve_ab.py
    PYTHONPATH=/path/to/worktree/of/the/old/commit python benchmarks/experiments/one_kernel_solve_ab.py

Run the two in alternating fresh processes. Rows, each called back to back (after an untimed
call of itself) and settled (after 10 ms of untimed Python work, `timing.settle`), medians of
100 calls, µs:

- Robertson (t 0..1e5, rtol 1e-6, atol 1e-10, 60 log-spaced saves; Rodas5P), the plain
  `simkit.solve` and inside the user's ``jax.jit`` (a parameter passed in);
- HIRES (t 0..321.8122, rtol 1e-6, atol 1e-11, Rodas5P), inside ``jax.jit``;
- Lorenz over one step (``saveat=2``: the cost of a call) and over t 0..100 (rtol = atol =
  1e-8, 1,000 saves; Tsit5), plain.

Also each row's last saved state, to check that the values are the same.
"""

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
from timing import settle  # noqa: E402  benchmarks/timing.py


def median_us(fn, pause, calls=100) -> float:
    jax.block_until_ready(fn())
    samples = []
    for _ in range(calls):
        pause()
        start = time.perf_counter()
        jax.block_until_ready(fn())
        samples.append(time.perf_counter() - start)
    return 1e6 * statistics.median(samples)


def main() -> None:
    rob, hires, lz = (simkit.models.get(n) for n in ("robertson", "hires", "lorenz"))
    ts = np.logspace(-5, 5, 60)
    ts[0] = 0.0
    rob_jit = jax.jit(lambda k1: simkit.solve(rob, (0.0, 1e5), saveat=ts, rtol=1e-6, atol=1e-10,
                                              params={"k1": k1}).ys)
    hires_jit = jax.jit(lambda k1: simkit.solve(hires, (0.0, 321.8122), saveat=2, rtol=1e-6, atol=1e-11,
                                                params={"k1": k1}).ys)
    rows = {
        "Robertson, plain": lambda: simkit.solve(rob, (0.0, 1e5), saveat=ts, rtol=1e-6, atol=1e-10).ys,
        "Robertson, inside jax.jit": lambda: rob_jit(0.04),
        "HIRES, inside jax.jit": lambda: hires_jit(float(hires.params["k1"])),
        "Lorenz one step, plain": lambda: simkit.solve(lz, (0.0, 1e-9), saveat=2).ys,
        "Lorenz 1000 saves, plain": lambda: simkit.solve(lz, (0.0, 100.0), saveat=1000, rtol=1e-8, atol=1e-8).ys,
    }
    out = {"simkit": os.path.dirname(simkit.__file__), "us": {}, "last": {}}
    for name, fn in rows.items():
        out["us"][name] = {"back to back": median_us(fn, lambda: None), "settled": median_us(fn, settle)}
        out["last"][name] = np.asarray(fn())[-1].tolist()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
