"""Timing helpers shared by the benchmark scripts (median of interleaved repeats), and the
driver that runs a script once per floating precision in fresh processes."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np


def timed(fn: Callable) -> float:
    """Seconds for one call of ``fn``, waiting for its result."""
    import jax  # (here: `own_process` runs numbalsoda's rows in processes without JAX)

    start = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - start


def settle() -> None:
    """About 10 ms of pure-Python work, untimed, before every timed call (see `settled_rounds`)."""
    sum(i * i for i in range(200_000))


def settled_rounds(fns: dict[str, Callable], repeats: int, max_s: float = 5.0) -> dict[str, dict]:
    """Median and samples of each function over ``repeats`` interleaved rounds after a warm-up
    call of each (one call of each row per round), every timed call after the same untimed
    `settle`, so that no row inherits a warm state from the row before it: a compiled JAX call
    right after another one runs ~0.5 ms faster than after a few ms of other work (measured:
    Robertson with Rodas5P, 0.8 ms back to back, 1.3-1.9 ms after Python work, a SciPy solve
    or a sleep), which matters for millisecond solves. Each round calls the rows in an order
    of its own (a seeded shuffle). A row whose call took over ``max_s``
    seconds is not called again (a slow peer: its one sample is the median)."""
    for fn in fns.values():
        fn()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    order = np.random.default_rng(0)
    for _ in range(repeats):
        # each round in its own order: a JAX call right after a SciPy or numba peer runs
        # slower than one after another JAX call, settled or not (in a fixed
        # order simkit's default row, always after numbalsoda's, ran 0.4-5.8 ms slower than
        # the same program two rows later, rotated rounds keeping it there)
        for k in order.permutation(list(fns)):
            if samples[k] and samples[k][-1] > max_s:
                continue
            settle()
            samples[k].append(timed(fns[k]))
    return {k: dict(median=statistics.median(v), samples=v) for k, v in samples.items()}


def interleaved(fns: dict[str, Callable], repeats: int, warm_up: bool = True) -> dict[str, float]:
    """Median seconds of each function over ``repeats`` rounds, one call of each per round."""
    if warm_up:
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            times[k].append(timed(fn))
    return {k: statistics.median(v) for k, v in times.items()}


def first_and_rounds(fns: dict[str, Callable], repeats: int, per_call: dict[str, int] | None = None) -> tuple:
    """``(first, samples)``: the seconds of each function's first call (compile and run), and
    ``repeats`` interleaved rounds of one call each, divided by ``per_call[k]`` (steps per call;
    default 1), waiting for every result."""
    per_call = per_call or {}
    first = {k: timed(f) for k, f in fns.items()}
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            samples[k].append(timed(f) / per_call.get(k, 1))
    return first, samples


def run_precisions(script: str, argv: list[str], out: str, precisions: str, machine: dict) -> dict:
    """Run ``script`` once per precision (``"float64,float32"``) in a fresh process with
    ``SIMKIT_ENABLE_X64`` set, each writing its results to ``--child-out``; gather them into
    ``out`` (a JSON file, rewritten after each precision) with the command and ``machine``."""
    start = time.perf_counter()
    name = os.path.relpath(script, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = dict(command=" ".join([f"python {name}", *argv]), machine=machine, runs={})
    for precision in precisions.split(","):
        env = dict(os.environ, SIMKIT_ENABLE_X64="1" if precision == "float64" else "0")
        part = f"{out}.{precision}.part"
        code = subprocess.call([sys.executable, script, *argv, "--child-out", part], env=env)
        try:
            with open(part) as fh:
                result["runs"][precision] = json.load(fh)
            os.remove(part)
        except OSError:
            result["runs"][precision] = dict(error=f"exit code {code}, no results")
        if code:
            result["runs"][precision]["exit_code"] = code
        result["wall_s"] = time.perf_counter() - start
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as fh:
            json.dump(result, fh, indent=1)
    print(f"wrote {out} ({result['wall_s']:.0f} s)")
    return result


def host() -> dict:
    """The host's platform, Python, core count and CPU model."""
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), model)
    except OSError:
        pass
    return dict(platform=platform.platform(), python=platform.python_version(), cores=os.cpu_count(), cpu=model)


def provenance() -> dict:
    """When and on which code a result was measured: the UTC date and ``git describe --always
    --dirty`` of the checkout this script lives in (``"unknown"`` outside a git checkout)."""
    import datetime
    import subprocess

    try:
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                                cwd=os.path.dirname(os.path.abspath(__file__)), check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"), commit=commit)


def precision_main(parser, child: Callable, script: str, default_out: str) -> None:
    """The ``main`` of a script run once per precision: adds ``--precisions``, ``--out`` and
    the internal ``--child-out`` to ``parser``; a child process runs ``child(args)``, the
    parent `run_precisions`."""
    import argparse

    parser.add_argument("--precisions", default="float64,float32")
    parser.add_argument("--out", default=default_out)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_out:
        child(args)
    else:
        run_precisions(os.path.abspath(script), sys.argv[1:], args.out, args.precisions, host())
