"""What a small call costs after a pause: back to back against after other work.

    python benchmarks/experiments/cold_call.py [--rounds 40] [--out benchmarks/results/cold_call.json]
    taskset -c 0 python benchmarks/experiments/cold_call.py ...   # everything on one CPU

`benchmarks/kernels.py` times each call after ~10 ms of untimed Python work, and there a
small simkit solve is much slower than back to back (Lorenz with DOP853: 1.2 against 1.8 ms)
while numbalsoda's is not. This script asks why. Each row is timed in three ways within one
round, rows and modes interleaved: right after an untimed call of itself ("back to back"),
after a busy wait of ``gap`` seconds in Python (a loop over ``time.perf_counter``: it keeps
the CPU busy and touches almost no memory) and after ``time.sleep(gap)``, for gaps of 0.1, 1
and 10 ms. Rows:

- ``simkit.solve`` of Lorenz over one step (``saveat=2``), split into its phases as
  `simkit.solve` runs them: the front door (`simkit._prepare.prepare`), the dispatch of the
  compiled program (`simkit.engines.run`), the wait for its result and `simkit._solve.finish`;
- ``simkit.solve`` of Lorenz, t 0..100, rtol = atol = 1e-8, 1,000 saves, DOP853 (the
  `kernels.py` problem);
- numbalsoda's DOP853 on the same problem (numba cfunc rhs; skipped when not installed);
- a ``jax.jit`` call of ``x + 1`` on a scalar, waiting for it;
- NumPy: ``np.sin`` of 1,000 values, summed.

Medians over ``--rounds`` rounds, in microseconds. The JSON holds the medians and the machine.
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
from simkit import engines, models  # noqa: E402
from simkit._prepare import prepare  # noqa: E402
from simkit._solve import finish  # noqa: E402
from stencil import machine  # noqa: E402  (benchmarks/stencil.py)

GAPS = (1e-4, 1e-3, 1e-2)
PHASES = ("front door", "dispatch", "wait", "finish")


def busy(gap: float) -> None:
    end = time.perf_counter() + gap
    while time.perf_counter() < end:
        pass


def numbalsoda_lorenz(save_ts):
    try:
        import numba as nb
        from numbalsoda import dop853, lsoda_sig
    except ImportError:
        return None

    @nb.cfunc(lsoda_sig)
    def lorenz(t, u, du, p):
        du[0] = 10.0 * (u[1] - u[0])
        du[1] = u[0] * (28.0 - u[2]) - u[1]
        du[2] = u[0] * u[1] - (8.0 / 3.0) * u[2]

    u0 = np.ones(3)
    return lambda: dop853(lorenz.address, u0, save_ts, rtol=1e-8, atol=1e-8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    before = machine()
    lorenz = models.get("lorenz")
    one_step = dict(saveat=2)
    span = (0.0, 1e-9)
    save_ts = np.linspace(0.0, 100.0, 1000)

    def phased():  # one whole simkit.solve, as its phases (seconds each)
        t = [time.perf_counter()]
        plan = prepare(lorenz, span, **one_step)
        t.append(time.perf_counter())
        result = engines.run(plan.program, plan.args)
        t.append(time.perf_counter())
        jax.block_until_ready(result)
        t.append(time.perf_counter())
        finish(plan, result, True)
        t.append(time.perf_counter())
        return np.diff(t)

    trivial = jax.jit(lambda x: x + 1.0)
    x = np.float64(1.0)
    rows = {
        "simkit Lorenz one step": phased,
        "simkit Lorenz DOP853, 1e-8, 1000 saves": lambda: jax.block_until_ready(
            simkit.solve(lorenz, (0.0, 100.0), saveat=save_ts, rtol=1e-8, atol=1e-8, solver=simkit.DOP853()).ys),
        "jax.jit(x + 1) on a scalar": lambda: jax.block_until_ready(trivial(x)),
        "NumPy sin of 1,000 values": lambda: np.sin(np.arange(1000.0)).sum(),
    }
    nb_call = numbalsoda_lorenz(save_ts)
    if nb_call is not None:
        rows["numbalsoda DOP853, 1e-8, 1000 saves"] = nb_call
    modes = {"back to back": None}
    for gap in GAPS:
        modes[f"busy {gap * 1e3:g} ms"] = (lambda g: lambda: busy(g))(gap)
        modes[f"sleep {gap * 1e3:g} ms"] = (lambda g: lambda: time.sleep(g))(gap)
    for fn in rows.values():
        for _ in range(20):
            fn()
    samples = {(r, m): [] for r in rows for m in modes}
    for _ in range(a.rounds):
        for r, fn in rows.items():
            for m, pause in modes.items():
                if pause is None:
                    fn()
                else:
                    pause()
                start = time.perf_counter()
                out = fn()
                total = time.perf_counter() - start
                samples[(r, m)].append(np.concatenate([[total], out]) if r == "simkit Lorenz one step" else total)
    medians = {}
    for r in rows:
        medians[r] = {}
        for m in modes:
            s = np.array(samples[(r, m)])
            if s.ndim == 2:
                med = np.median(s, axis=0) * 1e6
                medians[r][m] = {"whole": float(med[0]), **{p: float(v) for p, v in zip(PHASES, med[1:])}}
            else:
                medians[r][m] = float(statistics.median(s) * 1e6)
    print(f"medians of {a.rounds} rounds, µs; {before['cpu']}, {before['cores']} cores, "
          f"load {before['load_average'][0]:.2f}, CPU affinity {sorted(os.sched_getaffinity(0))}")
    for r in rows:
        print(r)
        for m in modes:
            v = medians[r][m]
            text = (f"{v['whole']:8.0f} (" + ", ".join(f"{p} {v[p]:.0f}" for p in PHASES) + ")"
                    if isinstance(v, dict) else f"{v:8.0f}")
            print(f"  {m:14s} {text}")
    record = {"command": "python benchmarks/experiments/cold_call.py " + " ".join(sys.argv[1:]),
              "cpu_affinity": sorted(os.sched_getaffinity(0)), "machine": before,
              "load_average_after": list(os.getloadavg()), "rounds": a.rounds, "median_us": medians}
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(record, fh, indent=1)


if __name__ == "__main__":
    main()
