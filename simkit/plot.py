"""matplotlib helpers: each takes a result and an optional Axes and returns the Axes.

The result types' own plot methods call these (`Solution.plot`, `EnsembleSolution.plot`,
`FieldSolution.plot` and ``animate``, `FitResult.plot` and its ``plot_correlation``,
``plot_profiles``, ``plot_waterfall``); call them directly to draw several results on one
Axes or to draw arrays that are not a result. `axis_label` and `model_axis_label` write axis
labels that carry units. matplotlib is imported only when a function draws.
"""

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

    Parameters
    ----------
    quantity : str
        What the axis shows (``"t"``, ``"|error| of x"``, ...).
    unit : str or None
        Its unit (e.g. from `simkit.io.units_for`); ``"1"``: dimensionless; ``None`` or
        ``""``: not known.
    unknown : str or None
        The words shown in parentheses when the unit is not known (default
        ``"model units"``); ``None``: the bare quantity.

    Returns
    -------
    str
        The label.

    Examples
    --------
    >>> from simkit.plot import axis_label
    >>> axis_label("t", "days"), axis_label("S", "1")
    ('t [days]', 'S (dimensionless)')
    >>> axis_label("x", None), axis_label("x", None, unknown=None)
    ('x (model units)', 'x')
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

    Parameters
    ----------
    units : str or mapping
        ``model.units``: free text such as ``"V in mV, time in ms"`` or a mapping
        ``name -> unit``.
    name : str
        The variable whose unit is looked up (a state, component or coordinate name;
        ``"t"`` or ``"time"``: the time axis).
    quantity : str, optional
        The text shown before the unit (default ``name``), e.g. ``"|error| of m"``.
    unknown : str or None
        As in `axis_label`: the words shown when the model gives no unit for ``name``.

    Returns
    -------
    str
        The label.

    Examples
    --------
    >>> from simkit.plot import model_axis_label
    >>> model_axis_label("V in mV, time in ms", "t")
    't [ms]'
    >>> model_axis_label("V in mV, time in ms", "m", "|error| of m")
    '|error| of m (model units)'
    """
    from .io import units_for

    return axis_label(name if quantity is None else quantity, units_for(units, name), unknown=unknown)


def _state_labels(units: Any, names: Sequence[str], quantity: str = "state") -> tuple[str, list[str]]:
    """``(y-axis label, legend labels)`` for states ``names`` of a model with ``units``: one
    shared unit goes on the axis; different units go into the legend, one per state."""
    from .io import units_for

    found = [units_for(units, name) for name in names]
    if len(set(found)) == 1:
        return axis_label(quantity if len(names) > 1 else names[0], found[0]), list(names)
    return f"{quantity} (units in the legend)", [axis_label(n, u) for n, u in zip(names, found)]


def plot_solution(sol: Any, ax: Any = None, *, states: Sequence[str] | None = None, **kwargs: Any) -> Any:
    """States of a `Solution` against time, one line per state, labelled by name.

    What `Solution.plot` draws. The axes carry the units of ``sol.model_units``
    (`model_axis_label`): ``t [days]``, ``state [...]`` when the states drawn share one unit,
    else each legend entry names its state's unit; the title is the model's name; a legend
    is drawn for up to 10 states.

    Parameters
    ----------
    sol : Solution
        The solution (or any object with ``ts``, ``state_names``, ``sol[name]`` and
        optionally ``model_name``, such as a reference solution of the validation suite).
    ax : matplotlib.axes.Axes, optional
        Where to draw (a new figure if None).
    states : sequence of str, optional
        The states to draw, in this order (default: all).
    **kwargs
        Passed to matplotlib's ``plot`` of every line.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    ParameterError
        A name in `states` that is not a state of `sol`.
    ImportError
        matplotlib is not installed.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import simkit
    >>> from simkit.plot import plot_solution
    >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11)
    >>> ax = plot_solution(sol, states=["x", "z"], lw=1)
    >>> [line.get_label() for line in ax.get_lines()], ax.get_title()
    (['x', 'z'], 'lorenz')
    """
    ax = _axes(ax)
    names = list(sol.state_names) if states is None else list(states)
    ts = np.asarray(sol.ts)
    units = getattr(sol, "model_units", "")
    ylabel, labels = _state_labels(units, names)
    for name, label in zip(names, labels):
        ax.plot(ts, np.asarray(sol[name]), label=label, **kwargs)
    ax.set_xlabel(model_axis_label(units, "t"))
    ax.set_ylabel(ylabel)
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
    """Work-precision diagram: for each solver a curve of (error, seconds) points, log-log.

    Points are sorted by error; points whose error is not finite or not positive (a failed
    run, or an exact result) are left out, and a solver with none left draws no curve.

    Parameters
    ----------
    results : mapping of str to sequence of (float, float)
        Per solver (the legend label), its ``(error, run time in seconds)`` points, e.g.
        one per tolerance.
    ax : matplotlib.axes.Axes, optional
        Where to draw (a new figure if None).
    title : str
        The axes' title (default none).
    xlabel : str
        The x-axis label. It should say how the errors were computed (the default,
        ``"error vs reference"``, only says what they are against).
    legend_outside : bool
        Put the legend to the right of the axes, clear of the curves (make room for it: a
        wider figure, or ``layout="constrained"``); default False: matplotlib's best place
        inside.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on; the y-axis is ``run time per solve [s]``.

    Raises
    ------
    ImportError
        matplotlib is not installed.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> from simkit.plot import plot_work_precision
    >>> results = {"Tsit5": [(1e-4, 0.002), (1e-7, 0.004)], "Rodas4": [(1e-5, 0.01), (float("nan"), 0.1)]}
    >>> ax = plot_work_precision(results, xlabel="max |y - y_ref| / max |y_ref|")
    >>> [len(line.get_xdata()) for line in ax.get_lines()], ax.get_xscale(), ax.get_ylabel()
    ([2, 1], 'log', 'run time per solve [s]')
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
    """Fan chart of an `EnsembleSolution`: median line and quantile bands of one state.

    What `EnsembleSolution.plot` draws: for each ``q`` of `quantiles` a band from quantile
    ``q`` to ``1 - q`` over the valid members at each save time (`EnsembleSolution.quantile`),
    and the median as a line, against `EnsembleSolution.times`.

    Parameters
    ----------
    ens : EnsembleSolution
        The ensemble.
    ax : matplotlib.axes.Axes, optional
        Where to draw (a new figure if None).
    state : str
        The state to draw (keyword only, required).
    quantiles : sequence of float
        Lower quantiles of the bands, each in ``[0, 0.5)`` (default ``(0.05, 0.25)``: the
        5-95 % and 25-75 % bands).
    color : str
        A matplotlib colour for the bands and the median (default ``"C0"``).
    **kwargs
        Passed to matplotlib's ``plot`` of the median.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: x-axis ``t``, y-axis the state's name, the title names the model
        and the number of members.

    Raises
    ------
    ValueError
        `state` is not a state name, or a quantile outside ``[0, 1]``.
    ImportError
        matplotlib is not installed.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import numpy as np, simkit
    >>> from simkit.plot import plot_fan
    >>> ens = simkit.ensemble(simkit.models.get("lorenz"), (0.0, 1.0), saveat=5,
    ...                       params={"rho": np.linspace(10.0, 30.0, 4)})
    >>> ax = plot_fan(ens, state="z")
    >>> [text.get_text() for text in ax.get_legend().get_texts()], ax.get_title()
    (['5%-95%', '25%-75%', 'median'], 'lorenz: 4 members')
    """
    ax = _axes(ax)
    i = list(ens.state_names).index(state)
    t = ens.times
    for q in sorted(quantiles):
        lo, hi = ens.quantile([q, 1 - q])[:, :, i]
        ax.fill_between(t, lo, hi, color=color, alpha=0.25, lw=0, label=f"{q:.0%}-{1 - q:.0%}")
    ax.plot(t, ens.quantile(0.5)[:, i], color=color, label="median", **kwargs)
    units = getattr(ens, "model_units", "")
    ax.set_xlabel(model_axis_label(units, "t"))
    ax.set_ylabel(model_axis_label(units, state))
    ax.set_title(f"{ens.model_name}: {ens.n_members} members")
    ax.legend(fontsize="small")
    return ax


def plot_field(grid: Any, field: Any, ax: Any = None, *, title: str = "", **kwargs: Any) -> Any:
    """A field on ``grid``: a line in 1-D, an image in 2-D, the middle slice of axis 0 in 3-D.

    What `FieldSolution.plot` draws. A 2-D field is shown with its first axis (``x``) upwards
    and its second (``y``) across, on the grid's box, with a colour bar; a 3-D field as the
    ``(y, z)`` slice at the middle index of ``x``.

    Parameters
    ----------
    grid : simkit.stencil.Grid
        The grid the field lives on (1 to 3 axes).
    field : array_like
        The field's values, shape ``grid.shape`` (one component of one saved frame).
    ax : matplotlib.axes.Axes, optional
        Where to draw (a new figure if None).
    title : str
        The axes' title (default none).
    **kwargs
        Passed to matplotlib's ``plot`` (1-D) or ``imshow`` (2-D, 3-D; default colour map
        ``viridis``).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    ValueError
        A 1-D `field` whose length is not the grid's (matplotlib's error).
    TypeError
        A 2-D or 3-D `grid` with a `field` of too few axes for an image (matplotlib's
        error). The shape of an image is not checked against `grid`: it is drawn on the
        grid's box whatever its shape.
    ImportError
        matplotlib is not installed.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import numpy as np
    >>> from simkit.plot import plot_field
    >>> from simkit.stencil import Grid
    >>> grid = Grid((8, 6), upper=(1.0, 2.0))
    >>> ax = plot_field(grid, np.arange(48.0).reshape(8, 6), title="u")
    >>> ax.get_xlabel(), ax.get_ylabel(), ax.get_images()[0].get_extent()
    ('y', 'x', [0.0, 2.0, 0.0, 1.0])
    """
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
    """Write ``frames`` as an animated GIF at ``path`` (matplotlib's Pillow writer).

    What `FieldSolution.animate` writes: one GIF frame per saved frame, each titled with its
    time; a line in 1-D, an image in 2-D, the middle slice of axis 0 in 3-D, on a colour (or
    y-axis) scale fixed over all frames. The figure is closed afterwards.

    Parameters
    ----------
    grid : simkit.stencil.Grid
        The grid the frames live on.
    frames : array_like
        Shape ``(saves,) + grid.shape``: one field per saved time.
    ts : array_like
        The ``saves`` times, shown in the titles.
    path : str
        The file to write (a ``.gif``); replaced if it exists.
    title : str
        Text before ``t = ...`` in every frame's title (default none).
    fps : int
        Frames per second (default 10).
    **kwargs
        Passed to matplotlib's ``plot`` (1-D) or ``imshow`` (default colour map
        ``viridis``).

    Returns
    -------
    str
        ``path``.

    Raises
    ------
    ImportError
        matplotlib or Pillow is not installed.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import os
    >>> import numpy as np
    >>> from simkit.plot import animate_field
    >>> from simkit.stencil import Grid
    >>> grid = Grid(16)
    >>> x = grid.coordinates(0)
    >>> frames = np.stack([np.sin(2 * np.pi * (x - 0.1 * i)) for i in range(3)])
    >>> path = animate_field(grid, frames, [0.0, 0.1, 0.2], "wave.gif", title="u", fps=2)
    >>> path, os.path.getsize(path) > 0
    ('wave.gif', True)
    """
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
    """Data (dots) and the fitted model (lines) per observed column, residuals below.

    What `FitResult.plot` draws (it also makes the axes). Column ``j`` of `axes` holds the
    ``j``-th observed quantity, counting the columns of every dataset in order: the fitted
    curve at the solution's save times and the data in the top row, titled
    ``"<dataset>: <column>"``; the residuals (where the loss has them) in the bottom row.

    Parameters
    ----------
    result : FitResult
        A result of `simkit.fit`.
    axes : numpy.ndarray of matplotlib.axes.Axes
        Shape ``(2, columns)`` (``plt.subplots(2, columns, squeeze=False)``), ``columns``
        the number of observed quantities of all datasets together.

    Returns
    -------
    numpy.ndarray of matplotlib.axes.Axes
        `axes`, drawn on.

    Raises
    ------
    IndexError
        `axes` has fewer than 2 rows or fewer columns than observed quantities.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import simkit
    >>> from simkit.plot import plot_fit
    >>> decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 0.5}, y0=[1.0],
    ...                         state_names=("u",), name="decay")
    >>> data = simkit.Dataset(times=[0.0, 0.5, 1.0, 1.5, 2.0], values=[1.0, 0.6, 0.37, 0.22, 0.14],
    ...                       observed=("u",))
    >>> result = simkit.fit(decay, data)
    >>> fig, axes = plt.subplots(2, 1, squeeze=False)
    >>> axes = plot_fit(result, axes)
    >>> axes[0, 0].get_title(), [line.get_label() for line in axes[0, 0].get_lines()]
    ('data: u', ['fit', 'data'])
    """
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
            rax.set_xlabel(model_axis_label(problem.model.units, "t"))
            col += 1
        offset += int(mask.sum())
    return axes


def plot_correlation(names: Sequence[str], corr: Any, ax: Any = None) -> Any:
    """Heat map of a correlation matrix, values written in the cells.

    What `FitResult.plot_correlation` draws (with the fit's parameter names and
    ``result.corr``): a diverging colour map from -1 (blue) to +1 (red), each cell's value
    written to two decimals, a colour bar.

    Parameters
    ----------
    names : sequence of str
        A label per row and column.
    corr : numpy.ndarray
        The correlation matrix, shape ``(len(names), len(names))`` (an array: its cells are
        read as ``corr[i, j]``).
    ax : matplotlib.axes.Axes, optional
        Where to draw (a new figure if None).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on, titled ``"parameter correlation"``.

    Raises
    ------
    IndexError
        `corr` is smaller than ``len(names)`` on a side.
    TypeError
        `corr` is a nested list rather than an array.
    ImportError
        matplotlib is not installed.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import numpy as np
    >>> from simkit.plot import plot_correlation
    >>> ax = plot_correlation(["k", "y0:u"], np.array([[1.0, -0.8], [-0.8, 1.0]]))
    >>> [text.get_text() for text in ax.texts]
    ['1.00', '-0.80', '-0.80', '1.00']
    """
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
    """Profile likelihoods (likelihood-ratio statistic against the fixed value), one panel each.

    What `FitResult.plot_profiles` draws (with ``{name: result.profile(name)}``): per
    parameter, the statistic at each fixed value (dots and line), the threshold of the
    profile interval (dashed), the estimate (a vertical line) and the Wald interval
    (shaded).

    Parameters
    ----------
    result : FitResult
        The fit: its ``estimates[name]`` and ``intervals[name]`` (the Wald interval) are
        drawn.
    profiles : mapping of str to dict
        Per parameter name, a profile as `FitResult.profile` returns it: ``values`` (the
        fixed values), ``delta`` (the statistic at each) and ``threshold``.
    axes : sequence of matplotlib.axes.Axes, optional
        One per profile, in the order of `profiles` (a new figure with one row of panels if
        None).

    Returns
    -------
    sequence of matplotlib.axes.Axes
        The axes drawn on, x-axis the parameter's name.

    Raises
    ------
    KeyError
        A name of `profiles` that is not a parameter of `result`, or a profile without
        ``values``, ``delta`` or ``threshold``.
    ImportError
        matplotlib is not installed.

    Examples
    --------
    A profile as ``result.profile("k", n=5)`` returns it; `result` needs only the fit's
    ``estimates`` and ``intervals`` here (a `FitResult` in practice):

    >>> import matplotlib; matplotlib.use("Agg")
    >>> import types
    >>> import numpy as np
    >>> from simkit.plot import plot_profiles
    >>> result = types.SimpleNamespace(estimates={"k": 1.02}, intervals={"k": (0.95, 1.09)})
    >>> profile = {"values": np.linspace(0.95, 1.09, 5), "delta": np.array([7.1, 2.8, 0.0, 2.7, 6.7]),
    ...            "threshold": 3.84}
    >>> axes = plot_profiles(result, {"k": profile})
    >>> len(axes), axes[0].get_xlabel(), axes[0].get_ylabel()
    (1, 'k', 'likelihood-ratio statistic')
    """
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
    """Final costs of every start, sorted (a waterfall plot: plateaus are local optima).

    What `FitResult.plot_waterfall` draws with ``result.start_costs``: the costs in
    increasing order against their rank, on a log scale when all are positive (linear
    otherwise, e.g. for a likelihood that can be negative).

    Parameters
    ----------
    costs : array_like
        The final cost of each start, shape ``(starts,)``.
    ax : matplotlib.axes.Axes, optional
        Where to draw (a new figure if None).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on, titled ``"multi-start waterfall"``.

    Raises
    ------
    ImportError
        matplotlib is not installed.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> from simkit.plot import plot_waterfall
    >>> ax = plot_waterfall([3.2, 0.41, 0.40, 3.1])
    >>> ax.get_lines()[0].get_ydata().tolist(), ax.get_yscale()
    ([0.4, 0.41, 3.1, 3.2], 'log')
    """
    ax = _axes(ax)
    costs = np.sort(np.asarray(costs))
    ax.plot(np.arange(1, len(costs) + 1), costs, "o-", ms=3)
    ax.set_yscale("log" if np.all(costs > 0) else "linear")
    ax.set_xlabel("start (sorted)")
    ax.set_ylabel("final cost")
    ax.set_title("multi-start waterfall", fontsize=9)
    return ax
