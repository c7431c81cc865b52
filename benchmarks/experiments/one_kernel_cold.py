"""The whole solve as one XLA:CPU kernel, back to back and after a pause.

    python benchmarks/experiments/one_kernel_cold.py [--rounds 20] [--out benchmarks/results/one_kernel_cold.json]

`simkit.engines.run_kernel` as it is against the same program wrapped in a ``while_loop``
whose trip count, 1, XLA cannot see (``t0 == t0``; the body reads ``t0 + 0 * i`` so that it
is not hoisted out): every operation of the program then sits inside XLA:CPU's small-loop
kernel (see "Small loops compiled whole" in benchmarks/README.md). Both are swapped in and out
of `simkit.engines` between rounds of one process; each round times each row back to back
and after a 10-ms busy wait (`cold_call.py`). Medians over rounds, µs; the results are checked
bit for bit first.
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
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import simkit  # noqa: E402
import simkit.engines as engines  # noqa: E402
from simkit._codegen import codegen_jit  # noqa: E402
from simkit.engines import kernel_engine  # noqa: E402
from stencil import machine  # noqa: E402  (benchmarks/stencil.py)

AS_IS = kernel_engine.run_kernel
RAW = AS_IS.__wrapped__  # the Python function codegen_jit compiles


@codegen_jit(static_argnames=("program",))
def one_kernel(program, args):
    shapes = jax.eval_shape(lambda a: RAW(program, a), args)
    zeros = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
    trips = (args.t0 == args.t0).astype(jnp.int32)  # 1, unknown to XLA

    def body(carry):
        i, _ = carry
        return i + 1, RAW(program, args._replace(t0=args.t0 + 0.0 * i))

    return lax.while_loop(lambda carry: carry[0] < trips, body, (jnp.int32(0), zeros))[1]


def use(engine) -> None:
    kernel_engine.run_kernel = engine
    engines.run_kernel = engine


def busy(gap: float) -> None:
    end = time.perf_counter() + gap
    while time.perf_counter() < end:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    before = machine()
    lorenz, robertson = simkit.models.get("lorenz"), simkit.models.get("robertson")
    save_ts = np.concatenate([[0.0], np.logspace(-5, 5, 60)[1:]])
    rows = {
        "Lorenz, one step": lambda: simkit.solve(lorenz, (0.0, 1e-9), saveat=2).ys,
        "Lorenz, DOP853, 1e-8, 1000 saves": lambda: simkit.solve(
            lorenz, (0.0, 100.0), saveat=np.linspace(0.0, 100.0, 1000), rtol=1e-8, atol=1e-8,
            solver=simkit.DOP853()).ys,
        "Robertson, Rodas5P, 60 saves": lambda: simkit.solve(robertson, (0.0, 1e5), saveat=save_ts, rtol=1e-6,
                                                             atol=1e-10).ys,
    }
    variants = {"as is": AS_IS, "one kernel": one_kernel}
    try:
        outs = {}
        for v, engine in variants.items():
            use(engine)
            outs[v] = {r: np.asarray(fn()) for r, fn in rows.items()}
        same = {r: bool(np.array_equal(outs["as is"][r], outs["one kernel"][r])) for r in rows}
        samples = {(r, v, m): [] for r in rows for v in variants for m in ("back to back", "after 10 ms")}
        for _ in range(a.rounds):
            for v, engine in variants.items():
                use(engine)
                for r, fn in rows.items():
                    fn()
                    start = time.perf_counter()
                    fn()
                    samples[(r, v, "back to back")].append(time.perf_counter() - start)
                    busy(0.01)
                    start = time.perf_counter()
                    fn()
                    samples[(r, v, "after 10 ms")].append(time.perf_counter() - start)
    finally:
        use(AS_IS)
    medians = {r: {f"{v}, {m}": 1e6 * statistics.median(samples[(r, v, m)]) for v in variants
                   for m in ("back to back", "after 10 ms")} for r in rows}
    for r in rows:
        print(f"{r} (same bits: {same[r]}): " + ", ".join(f"{k} {t:.0f}" for k, t in medians[r].items()))
    record = {"command": "python benchmarks/experiments/one_kernel_cold.py " + " ".join(sys.argv[1:]),
              "machine": before, "load_average_after": list(os.getloadavg()), "rounds": a.rounds,
              "same_bits": same, "median_us": medians}
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(record, fh, indent=1)


if __name__ == "__main__":
    main()
