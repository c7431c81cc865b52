"""Timing helpers shared by the benchmark scripts (median of interleaved repeats)."""

from __future__ import annotations

import statistics
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
