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


def axis_label(quantity: str, unit: str | None, *, unknown: str | None = "model units") -> str:
    """An axis label that carries its unit: ``"t [days]"``.

    The CF unit ``"1"`` of a dimensionless quantity reads ``"t (dimensionless)"``. Without a
    unit: ``"t (model units)"`` (``unknown`` in parentheses), or the bare quantity when
    ``unknown`` is ``None``; a unit is never guessed.
    """
    if unit == "1":
        return f"{quantity} (dimensionless)"
    if unit:
        return f"{quantity} [{unit}]"
    return f"{quantity} ({unknown})" if unknown else quantity


def model_axis_label(units: Any, name: str, quantity: str | None = None, *,
                     unknown: str | None = "model units") -> str:
    """`axis_label` of variable ``name`` (``"t"``: time) with its unit read from a model's
    ``units`` by `simkit.io.units_for`; ``quantity`` (default ``name``) is the text shown.

    >>> model_axis_label("V in mV, time in ms", "t")
    't [ms]'
    >>> model_axis_label("V in mV, time in ms", "m", "|error| of m")
    '|error| of m (model units)'
    """
    from .io import units_for

    return axis_label(name if quantity is None else quantity, units_for(units, name), unknown=unknown)


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
    results: Mapping[str, Sequence[tuple[float, float]]], ax: Any = None, *, title: str = "",
    xlabel: str = "error vs reference", legend_outside: bool = False,
) -> Any:
    """Work-precision diagram: for each solver a curve of (error, seconds) points.

    ``xlabel`` should say how the errors were computed (the default only says what they
    are against); ``legend_outside`` puts the legend to the right of the axes, clear of the
    curves (make room for it: a wider figure, or ``layout="constrained"``).
    """
    ax = _axes(ax)
    for label, points in results.items():
        pts = sorted((e, t) for e, t in points if np.isfinite(e) and e > 0)
        if not pts:
            continue
        err, sec = zip(*pts)
        ax.loglog(err, sec, marker="o", label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("run time per solve [s]")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if legend_outside:
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    else:
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


def plot_field(grid: Any, field: Any, ax: Any = None, *, title: str = "", **kwargs: Any) -> Any:
    """A field on ``grid``: a line in 1-D, an image in 2-D, the middle slice of axis 0 in 3-D."""
    ax = _axes(ax)
    field = np.asarray(field)
    if grid.ndim == 1:
        ax.plot(grid.coordinates(0), field, **kwargs)
        ax.set_xlabel("x")
    else:
        image = field if grid.ndim == 2 else field[field.shape[0] // 2]
        axes = (0, 1) if grid.ndim == 2 else (1, 2)
        lo, hi = grid.lower, grid.upper
        extent = (lo[axes[1]], hi[axes[1]], lo[axes[0]], hi[axes[0]])
        mappable = ax.imshow(image, origin="lower", extent=extent, **({"cmap": "viridis"} | kwargs))
        ax.figure.colorbar(mappable, ax=ax, shrink=0.8)
        ax.set_xlabel("y" if grid.ndim == 2 else "z")
        ax.set_ylabel("x" if grid.ndim == 2 else "y")
    if title:
        ax.set_title(title, fontsize=9)
    return ax


def animate_field(grid: Any, frames: Any, ts: Any, path: str, *, title: str = "", fps: int = 10,
                  **kwargs: Any) -> str:
    """Write ``frames`` (saves,) + grid.shape as a GIF at ``path`` (Pillow writer)."""
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation, PillowWriter

    frames = np.asarray(frames)
    fig, ax = plt.subplots(figsize=(4.2, 4) if grid.ndim > 1 else (5, 3))
    if grid.ndim == 1:
        (line,) = ax.plot(grid.coordinates(0), frames[0], **kwargs)
        ax.set_ylim(frames.min(), frames.max())

        def draw(i):
            line.set_ydata(frames[i])
            ax.set_title(f"{title}  t = {ts[i]:.4g}", fontsize=9)
            return (line,)
    else:
        images = frames if grid.ndim == 2 else frames[:, frames.shape[1] // 2]
        image = ax.imshow(images[0], origin="lower", vmin=images.min(), vmax=images.max(),
                          **({"cmap": "viridis"} | kwargs))
        ax.set_xticks([])
        ax.set_yticks([])

        def draw(i):
            image.set_data(images[i])
            ax.set_title(f"{title}  t = {ts[i]:.4g}", fontsize=9)
            return (image,)

    animation = FuncAnimation(fig, draw, frames=len(frames), blit=False)
    animation.save(path, writer=PillowWriter(fps=fps))
    plt.close(fig)
    return path


def plot_fit(result: Any, axes: Any) -> Any:
    """Data (dots) and the fitted model (lines) per observed column, residuals below."""
    problem = result.problem
    col = 0
    offset = 0
    for k, (data, sol) in enumerate(zip(problem.datasets, result.solutions)):
        params, _ = problem.params_and_y0(result.theta, k)
        if callable(data.observed):
            import jax

            curves = np.asarray(jax.vmap(lambda y: data.observed(y, params))(sol.ys))
        else:
            curves = np.asarray(sol.ys)[:, [problem.model.state_index(s) for s in data.observed]]
        n = data.values.shape[1]
        mask = data.mask
        for j in range(n):
            ax, rax = axes[0, col], axes[1, col]
            line = ax.plot(np.asarray(sol.ts), curves[:, j], lw=1.5, label="fit")[0]
            ax.plot(data.times, data.values[:, j], "o", ms=4, color=line.get_color(), label="data")
            ax.set_title(f"{data.name}: {data.names[j]}", fontsize=9)
            ax.legend(fontsize=7)
            if result.residuals is not None:
                # residuals are flattened row-major over (time, column) at the masked points
                flat = np.full(mask.shape, np.nan)
                count = int(mask.sum())
                flat[mask] = result.residuals[offset:offset + count]
                rax.axhline(0.0, color="0.6", lw=0.8)
                rax.plot(data.times, flat[:, j], "o", ms=3, color=line.get_color())
                rax.set_ylabel("residual", fontsize=8)
            rax.set_xlabel("t")
            col += 1
        offset += int(mask.sum())
    return axes


def plot_correlation(names: Sequence[str], corr: Any, ax: Any = None) -> Any:
    """Heat map of a correlation matrix, values written in the cells."""
    ax = _axes(ax)
    image = ax.imshow(np.asarray(corr), vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    for i in range(len(names)):
        for j in range(len(names)):
            ax.text(j, i, f"{corr[i, j]:.2f}", ha="center", va="center", fontsize=7)
    ax.figure.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title("parameter correlation", fontsize=9)
    return ax


def plot_profiles(result: Any, profiles: Mapping[str, Any], axes: Any = None) -> Any:
    """Profile likelihoods (likelihood-ratio statistic against the fixed value)."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, len(profiles), figsize=(3.6 * len(profiles), 3.2), squeeze=False)
        axes = axes[0]
    for ax, (name, prof) in zip(axes, profiles.items()):
        ax.plot(prof["values"], prof["delta"], "o-", ms=3)
        ax.axhline(prof["threshold"], color="0.5", ls="--", lw=0.8)
        ax.axvline(result.estimates[name], color="C3", lw=0.8)
        lo, hi = result.intervals[name]
        ax.axvspan(lo, hi, color="C1", alpha=0.15, label="Wald interval")
        ax.set_xlabel(name)
        ax.set_ylabel("likelihood-ratio statistic")
        ax.legend(fontsize=7)
    return axes


def plot_waterfall(costs: Any, ax: Any = None) -> Any:
    """Final costs of every start, sorted (a waterfall plot: plateaus are local optima)."""
    ax = _axes(ax)
    costs = np.sort(np.asarray(costs))
    ax.plot(np.arange(1, len(costs) + 1), costs, "o-", ms=3)
    ax.set_yscale("log" if np.all(costs > 0) else "linear")
    ax.set_xlabel("start (sorted)")
    ax.set_ylabel("final cost")
    ax.set_title("multi-start waterfall", fontsize=9)
    return ax
