"""matplotlib helpers: each takes a result and an optional Axes and returns the Axes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(6.4, 4.0))
    return ax


def plot_solution(sol: Any, ax: Any = None, *, states: Sequence[str] | None = None, **kwargs: Any) -> Any:
    """States of a `Solution` (or reference solution) against time."""
    ax = _axes(ax)
    names = list(sol.state_names) if states is None else list(states)
    ts = np.asarray(sol.ts)
    for name in names:
        ax.plot(ts, np.asarray(sol[name]), label=name, **kwargs)
    ax.set_xlabel("t")
    ax.set_ylabel("state")
    title = getattr(sol, "model_name", None)
    if title:
        ax.set_title(title)
    if len(names) <= 10:
        ax.legend(loc="best", fontsize="small")
    return ax


def plot_work_precision(
    results: Mapping[str, Sequence[tuple[float, float]]], ax: Any = None, *, title: str = ""
) -> Any:
    """Work-precision diagram: for each solver a curve of (error, seconds) points."""
    ax = _axes(ax)
    for label, points in results.items():
        pts = sorted((e, t) for e, t in points if np.isfinite(e) and e > 0)
        if not pts:
            continue
        err, sec = zip(*pts)
        ax.loglog(err, sec, marker="o", label=label)
    ax.set_xlabel("max error vs reference (relative to |y| + 1)")
    ax.set_ylabel("run time per solve [s]")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return ax


def plot_fan(ens: Any, ax: Any = None, *, state: str, quantiles: Sequence[float] = (0.05, 0.25),
             color: str = "C0", **kwargs: Any) -> Any:
    """Fan chart of an `EnsembleSolution`: median line and quantile bands of one state."""
    ax = _axes(ax)
    i = list(ens.state_names).index(state)
    t = ens.times
    for q in sorted(quantiles):
        lo, hi = ens.quantile([q, 1 - q])[:, :, i]
        ax.fill_between(t, lo, hi, color=color, alpha=0.25, lw=0, label=f"{q:.0%}-{1 - q:.0%}")
    ax.plot(t, ens.quantile(0.5)[:, i], color=color, label="median", **kwargs)
    ax.set_xlabel("t")
    ax.set_ylabel(state)
    ax.set_title(f"{ens.model_name}: {ens.n_members} members")
    ax.legend(fontsize="small")
    return ax
