"""JAX's asynchronous CPU dispatch on and off, for simkit's small solves.

    python benchmarks/experiments/cpu_dispatch_ab.py [--rounds 2] [--out FILE]

By default XLA:CPU hands a program to a worker thread and the caller waits for it, unless
the program is "cheap" (XLA's cost analysis under 1,000 flops) or has host callbacks (then
JAX asks for synchronous execution). A simkit program is neither, and every simkit call waits
for its result codes anyway. This script measures what turning the hand-over off
(``jax_cpu_enable_async_dispatch``) saves.

Rows, each in a fresh process of its own (`own_process`), the two settings alternating, for
``--rounds`` rounds: Robertson (t 0..1e5, rtol 1e-6, atol 1e-10, 60 log-spaced saves, the
default Rodas5P) as a plain call and inside the user's ``jax.jit`` (``throw=True``: such a
program has host callbacks and ran on the calling thread already), and Lorenz (t 0..100,
rtol = atol = 1e-8, 1,000 saves, the default Tsit5) as a plain call. Each: the median of 9
settled calls (after ~10 ms of untimed Python work) and of 200 calls back to back, in ms.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402

from own_process import time_in_fresh_process  # noqa: E402  benchmarks/own_process.py
from stencil import machine  # noqa: E402  benchmarks/stencil.py


def jobs() -> dict:
    rob_t = np.concatenate([[0.0], np.logspace(-5, 5, 60)[1:]]).tolist()
    lz_t = np.linspace(0.0, 100.0, 1000).tolist()
    rob = dict(library="simkit", model="robertson", y0=[1.0, 0.0, 0.0], t_eval=rob_t, rtol=1e-6, atol=1e-10)
    return {
        "robertson plain": dict(rob, jit=False),
        "robertson inside jax.jit": dict(rob, jit=True),
        "lorenz plain": dict(library="simkit", model="lorenz", jit=False, saves=1000, y0=[1.0, 0.0, 0.0],
                             t_eval=lz_t, rtol=1e-8, atol=1e-8),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    rows: dict = {}
    for rnd in range(a.rounds):
        for setting, label in (("1", "async (JAX's default)"), ("0", "sync (SIMKIT_CPU_ASYNC_DISPATCH=0)")):
            os.environ["SIMKIT_CPU_ASYNC_DISPATCH"] = setting  # read by the fresh process
            for name, job in jobs().items():
                out = time_in_fresh_process(job, repeats=9, loop=200)
                entry = rows.setdefault(name, {}).setdefault(label, {"settled_ms": [], "back_to_back_ms": []})
                entry["settled_ms"].append(1e3 * out["settled"])
                entry["back_to_back_ms"].append(1e3 * out["back_to_back"])
                print(f"round {rnd}  {label:24s} {name:26s} settled {1e3 * out['settled']:.3f} ms  "
                      f"back to back {1e3 * out['back_to_back']:.3f} ms", flush=True)
    record = {"command": "python benchmarks/experiments/cpu_dispatch_ab.py " + " ".join(sys.argv[1:]),
              "machine": machine(), "rounds": a.rounds, "rows": rows}
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(record, fh, indent=1)


if __name__ == "__main__":
    main()
