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

import jax


def timed(fn: Callable) -> float:
    """Seconds for one call of ``fn``, waiting for its result."""
    start = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - start


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
