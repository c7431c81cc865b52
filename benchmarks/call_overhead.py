"""What one `simkit.solve` call costs besides its steps.

    python benchmarks/call_overhead.py [--calls 2000] [--out benchmarks/results/call_overhead.json]

Rows: Lorenz over a span of one step (saveat=2: the cost of a call, hardly any stepping) and
Robertson as in `benchmarks/kernels.py` (t 0..1e5, rtol 1e-6, atol 1e-10, 60 log-spaced saves;
Rodas5P, about 100 steps). Each row: the median time of a whole call (``simkit.solve`` and
waiting for its result) and of its three phases run apart on the same inputs: the front door
(`simkit._prepare.prepare`: checks and the plan), the compiled program (called with the plan,
waiting for it), and `finish` (the `Solution` and the status check). Phases are timed in
separate loops, so their sum need not equal the whole call. Medians of ``--calls`` calls after
100 warm-up calls; numbalsoda's call of the same Robertson problem beside it where installed, in a
fresh process of its own (`own_process`).
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import json
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import jax
import numpy as np

import simkit
from simkit import engines, models
from simkit._prepare import prepare
from simkit._solve import finish
from simkit._config import configure_own_process
configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it
from stencil import machine  # benchmarks/stencil.py
from own_process import time_in_fresh_process  # benchmarks/own_process.py


def median_us(fn, calls: int) -> float:
    for _ in range(100):
        fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e6 * statistics.median(times)


def phases(model, t_span, calls: int, **kw) -> dict:
    plan = prepare(model, t_span, **kw)
    engine, call_args = engines.entry(plan.program, plan.args)
    result = engines.run(plan.program, plan.args)
    sol = simkit.solve(model, t_span, **kw)
    return {
        "solver": sol.solver_name, "steps": int(sol.stats["num_steps"]),
        "solve_us": median_us(lambda: jax.block_until_ready(simkit.solve(model, t_span, **kw)), calls),
        "prepare_us": median_us(lambda: prepare(model, t_span, **kw), calls),
        "program_us": median_us(lambda: jax.block_until_ready(engine(*call_args)), calls),
        "finish_us": median_us(lambda: finish(plan, result, True), calls),
    }


def numbalsoda_robertson(save_ts, calls: int) -> float | None:
    """numbalsoda's LSODA on the same problem, back to back in a fresh process of its own
    (`own_process`), in µs; None when not installed."""
    job = dict(library="numbalsoda", method="lsoda", rhs="robertson", y0=[1.0, 0.0, 0.0], t_eval=save_ts.tolist(),
               rtol=1e-6, atol=1e-10)
    out = time_in_fresh_process(job, repeats=5, loop=calls)
    return None if out is None else 1e6 * out["back_to_back"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    save_ts = np.concatenate([[0.0], np.logspace(-5, 5, 60)[1:]])
    rows = {
        "lorenz_one_step": phases(models.get("lorenz"), (0.0, 1e-9), a.calls, saveat=2),
        "robertson": phases(models.get("robertson"), (0.0, 1e5), a.calls, saveat=save_ts, rtol=1e-6, atol=1e-10),
    }
    rows["robertson"]["numbalsoda_lsoda_us"] = numbalsoda_robertson(save_ts, a.calls)
    for name, row in rows.items():
        print(name, {k: (round(v, 1) if isinstance(v, float) else v) for k, v in row.items()})
    record = {"command": "python benchmarks/call_overhead.py " + " ".join(sys.argv[1:]), "machine": machine(),
              "calls": a.calls, "rows": rows}
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(record, fh, indent=1)


if __name__ == "__main__":
    main()
