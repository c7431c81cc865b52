"""`Solution`: the result of `simkit.solve` — times, states, stats, status."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _config, io
from .errors import InputError, InputTypeError, ParameterError
from .status import Status, describe


def state_column(state_names: tuple[str, ...], name: str, owner: str) -> int:
    """Column of the state called ``name``; a named error when there is none."""
    if not isinstance(name, str):
        raise TypeError(f"index {owner} by state name, e.g. ['x']; use .ys for arrays")
    try:
        return state_names.index(name)
    except ValueError:
        raise ParameterError(
            f"{owner} has no state {name!r}; states are {list(state_names)}"
        ) from None


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["ts", "ys", "stats", "status", "t_final", "y_final", "event_index",
                 "event_time", "params", "rtol", "atol", "interpolation", "event_ts", "event_ys",
                 "event_counts", "y0"],
    meta_fields=["state_names", "model_name", "solver_name", "model_source", "model_units"],
)
@dataclasses.dataclass(frozen=True)
class Solution(io.Saveable):
    """Trajectory of an ODE solve.

    Returned by `simkit.solve`, not built by hand. A pytree, so it can be returned from
    ``jax.jit``/``jax.vmap`` of a function that calls `simkit.solve`; under ``jax.vmap``
    every array field gains a leading member axis. ``sol["x"]`` is the trajectory of state
    ``x``, shape ``(n_save,)`` (`ParameterError` for an unknown name).

    Save times after a terminal event are dropped when the solve is called outside of
    a JAX transform; under a transform (shapes must be static) they are kept and filled
    with ``inf`` (times) and the state at the event.

    Attributes
    ----------
    ts : jax.Array
        Save times, shape ``(n_save,)`` (the model's time unit); ``inf`` for a time the solve
        did not reach (a terminal event, or a failure with ``throw=False``).
    ys : jax.Array
        States at `ts`, shape ``(n_save, n_states)`` (row = time, column = state); a row
        not reached holds the state where the solve stopped (``y_final``), in every engine.
    state_names : tuple of str
        Names of the state columns.
    stats : dict
        Solver counters: ``num_steps`` (attempted), ``num_accepted_steps``,
        ``num_rejected_steps`` and, for explicit Runge–Kutta solvers, ``num_rhs`` (right-hand
        side evaluations of the steps, including the two of the initial-step estimate; the
        kernels redo the stages of a step that covers save times, which it does not count).
    status : int or jax.Array
        `simkit.Status` code (0 = success, 1 = terminated by an event).
    t_final, y_final : jax.Array
        Time and state (``(n_states,)``) where the integration stopped.
    event_index : jax.Array
        Index of the terminal event that stopped the solve (``-1`` if none).
    event_time : jax.Array
        Its time.
    params : dict
        The parameter values of the solve.
    rtol, atol : float or numpy.ndarray
        The tolerances of the solve (``atol`` a scalar or one per state).
    model_name, solver_name : str
        The model's name and the solver's (e.g. ``"simkit.Tsit5()"``).
    interpolation : object or None
        The dense interpolant (``dense=True``), read by `evaluate`.
    event_ts : jax.Array or None
        The raw fixed-size event records, ``(n_events, capacity)`` (``inf`` beyond the count);
        `t_events` and `y_events` give them as SciPy does.
    event_ys : jax.Array or None
        States at the recorded crossings, ``(n_events, capacity, n_states)``.
    event_counts : jax.Array or None
        Crossings per event, ``(n_events,)``.
    y0 : jax.Array
        The initial state, ``(n_states,)``.
    model_source, model_units : str
        The model's citation and units (written by `to_xarray`/`save`).

    Examples
    --------
    >>> import simkit
    >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11)
    >>> sol.ts.shape, sol.ys.shape, sol.state_names
    ((11,), (11, 3), ('x', 'y', 'z'))
    >>> sol["x"].shape, sol.ok, sol.message
    ((11,), True, 'success')
    """

    ts: Any
    ys: Any
    stats: dict[str, Any]
    status: Any
    t_final: Any
    y_final: Any
    event_index: Any
    event_time: Any
    params: dict[str, Any]
    rtol: Any
    atol: Any
    state_names: tuple[str, ...]
    model_name: str = "model"
    solver_name: str = ""
    interpolation: Any = None
    event_ts: Any = None
    event_ys: Any = None
    event_counts: Any = None
    y0: Any = None
    model_source: str = ""
    model_units: Any = ""

    @property
    def t_events(self) -> list:
        """Times of every recorded crossing, one array per event (SciPy's ``t_events``).

        Returns
        -------
        list of jax.Array
            One array of shape ``(crossings,)`` per event, in the order of ``events=``; an
            empty list for a solve without events.

        Examples
        --------
        >>> import simkit
        >>> sol = simkit.solve(simkit.models.get("van_der_pol"), (0.0, 10.0),
        ...                    events=simkit.Event(lambda t, y, p: y[0], terminal=0))
        >>> [ts.shape for ts in sol.t_events]
        [(3,)]
        """
        if self.event_ts is None:
            return []
        return [self.event_ts[i][: n] for i, n in enumerate(self._recorded())]

    def _recorded(self) -> list[int]:
        """Crossings kept per event (at most its ``max_records``: rows beyond are ``inf``)."""
        if isinstance(self.event_counts, jax.core.Tracer) or isinstance(self.event_ts, jax.core.Tracer):
            # (a shape known only once the solve has run: JAX's own error named its internals)
            raise InputTypeError(
                "Solution.t_events and Solution.y_events have as many rows as crossings were recorded, known only "
                "after the solve runs: under jax.jit, jax.grad or jax.vmap read the fixed-size records instead, "
                "Solution.event_ts (events, max_records; inf beyond each count), Solution.event_ys and "
                "Solution.event_counts (or event_time and y_final for a terminal event)")
        return recorded(self.event_ts, self.event_counts)

    @property
    def y_events(self) -> list:
        """States at every recorded crossing, one ``(crossings, n_states)`` array per event.

        Returns
        -------
        list of jax.Array
            One array of shape ``(crossings, n_states)`` per event (SciPy's ``y_events``);
            an empty list for a solve without events.

        Examples
        --------
        >>> import simkit
        >>> sol = simkit.solve(simkit.models.get("van_der_pol"), (0.0, 10.0),
        ...                    events=simkit.Event(lambda t, y, p: y[0], terminal=0))
        >>> abs(float(sol.y_events[0][0, 0])) < 1e-8  # x = 0 at the crossing
        True
        """
        if self.event_ys is None:
            return []
        return [self.event_ys[i][: n] for i, n in enumerate(self._recorded())]

    # -- access ---------------------------------------------------------------
    def __getitem__(self, name: str) -> Any:
        """The trajectory of one state by name, shape ``(n_save,)``.

        Raises
        ------
        ParameterError
            No state of that name (the message lists the names).
        """
        return self.ys[..., state_column(self.state_names, name, f"solution of {self.model_name!r}")]

    @property
    def ok(self) -> bool:
        """True when the solve reached ``t1`` or stopped at an event.

        Returns
        -------
        bool
            ``status <= Status.EVENT`` (for a batched solution: for every member).

        Examples
        --------
        >>> import simkit
        >>> simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11).ok
        True
        """
        return bool(np.all(np.asarray(self.status) <= int(Status.EVENT)))

    @property
    def message(self) -> str:
        """Human-readable status.

        Returns
        -------
        str
            The `Status` in words (for a batched solution, each distinct one, joined by
            ``"; "``).

        Examples
        --------
        >>> import simkit
        >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11, max_steps=5, throw=False)
        >>> sol.message
        'max_steps reached before t1'
        """
        codes = np.unique(np.asarray(self.status))
        return "; ".join(describe(int(c)) for c in codes)

    def evaluate(self, t: Any, *, throw: bool = True) -> Any:
        """Dense output: the state at time(s) ``t``, from the solver's own interpolant.

        A time outside the solved span is an error, never an extrapolation or a clamp: with
        concrete times an `InputError` naming them; under a JAX transform (``t`` or the
        solution traced: ``jax.jit``, ``jax.vmap``, ``jax.grad``) a run-time error
        (``equinox.error_if``, as `simkit.solve`'s checks under a transform), or, with
        ``throw=False``, NaN values with NaN derivatives there.

        Parameters
        ----------
        t : float or array_like
            Time(s) on the solved span (from ``t0`` to `t_final`, which is the event time
            when an event stopped the solve). Each new shape of ``t`` compiles once.
        throw : bool
            Under a transform, raise at run time when a time lies outside the span (default);
            False: NaN values (and NaN derivatives) at those times, the others unchanged.

        Returns
        -------
        jax.Array
            Shape ``t.shape + (n_states,)``.

        Raises
        ------
        InputError
            The solve was not called with ``dense=True``, a concrete ``t`` lies outside the
            span (whatever ``throw``), or the solution is batched (a ``jax.vmap`` of solves).
        RuntimeError
            Under a transform with ``throw=True``: a time lies outside the span
            (``equinox.error_if``, raised when the compiled program runs, as JAX's
            ``JaxRuntimeError`` carrying the message, which names the model).

        Examples
        --------
        >>> import simkit
        >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11, dense=True)
        >>> sol.evaluate([0.25, 0.5]).shape
        (2, 3)
        """
        from ._prepare import check_flag
        from .errors import InputError

        check_flag("throw", throw)
        if self.interpolation is None:
            raise InputError("dense output was not requested: call simkit.solve(..., dense=True)")
        # concrete times in simkit's float dtype: one program for floats, NumPy scalars, arrays
        t = jnp.asarray(t) if isinstance(t, jax.core.Tracer) else jnp.asarray(t, dtype=_config.float_dtype())
        # the solved span ends at t_final: an event's time (diffrax's interpolant runs on to
        # the end of the step that found it)
        ends = (self.interpolation.t0, self.interpolation.t1 if self.t_final is None else self.t_final)
        if np.ndim(self.ys) != 2:  # a bare JAX broadcasting error before (found by probing)
            raise InputError(f"Solution.evaluate: ys has shape {np.shape(self.ys)}, a batched solution (from "
                             "jax.vmap): evaluate inside the vmapped function, or one member at a time")
        if not any(isinstance(x, jax.core.Tracer) for x in (t, *ends)) and all(np.ndim(e) == 0 for e in ends):
            lo, hi = sorted(float(e) for e in ends)
            values = np.asarray(t, dtype=float)
            outside = ~((values >= lo) & (values <= hi))  # NaN is outside too
            if np.any(outside):
                stopped = " (the solve stopped at an event)" if int(np.asarray(self.status)) == Status.EVENT else ""
                raise InputError(f"Solution.evaluate: t = {values[outside].tolist()} is outside the solved "
                                 f"span [{lo:g}, {hi:g}] of {self.model_name!r}{stopped}")
        out = _evaluate(self.interpolation, jnp.reshape(t, (-1,)), ends)
        out = jnp.reshape(out, t.shape + out.shape[-1:])
        if throw and any(isinstance(x, jax.core.Tracer) for x in (t, *ends, out)):
            # a traced time outside the span gave NaN without a word
            from ._solve import raise_if_failed

            lo, hi = jnp.minimum(*ends), jnp.maximum(*ends)
            outside = ~jnp.all((t >= lo) & (t <= hi))  # NaN is outside too
            out = raise_if_failed(out, outside, f"Solution.evaluate: a time outside the solved span of "
                                                f"{self.model_name!r} (evaluate(t, throw=False) gives NaN there)")
        return out

    # -- export ---------------------------------------------------------------
    def to_xarray(self) -> Any:
        """The trajectory as an ``xarray.Dataset`` with CF attributes and provenance.

        Returns
        -------
        xarray.Dataset
            One variable per state, named by the state, along the time coordinate ``t``;
            each has a ``long_name`` and, where the model's ``units`` say, ``units``
            (`simkit.io.units_for`). Global attributes: the provenance of
            `simkit.io.provenance` (model, source, units, parameters, solver, rtol, atol,
            status, ``y0``, versions, date), ``state_names``, the solver ``stats`` (JSON
            strings), ``t_final`` and ``y_final`` (where the solve stopped: a terminal
            event's state is saved nowhere else). A solve with events also has
            ``event_t`` (``(event, crossing)``, NaN beyond each event's count),
            ``event_y`` (``(event, crossing, state)``) and ``event_count`` (``(event,)``):
            `t_events` and `y_events`, padded.

        Raises
        ------
        DependencyError
            xarray is not installed.
        InputError
            A batched solution (from ``jax.vmap``: export its members one by one), or a state
            named ``t`` (with events also ``state``, ``event_t``, ``event_y``, ``event_count``).

        Examples
        --------
        >>> import simkit
        >>> sol = simkit.solve(simkit.models.get("sir"), saveat=11)
        >>> ds = sol.to_xarray()
        >>> ds["I"].dims, ds["t"].attrs["units"]
        (('t',), 'days')
        """
        from . import io

        xr = io.require_xarray("Solution.to_xarray()")
        ts, ys = np.asarray(self.ts), np.asarray(self.ys)
        if ts.ndim != 1 or ys.ndim != 2:
            raise InputError(f"Solution.to_xarray(): ys has shape {ys.shape}, a batched solution (from "
                             "jax.vmap); export one member at a time, or use simkit.ensemble")
        events = self.event_ts is not None and np.shape(self.event_ts)[0] > 0
        others = event_variables(self.event_ts, self.event_ys, self.event_counts) if events else {}
        io.check_names(self.state_names, ["t"] + (["state"] + list(others) if events else []), "states")
        data = {name: ("t", ys[:, i], io.variable_attrs(f"state {name} of {self.model_name}",
                                                        io.units_for(self.model_units, name)))
                for i, name in enumerate(self.state_names)}
        coords = {"t": ("t", ts, io.variable_attrs("time", io.units_for(self.model_units, "t"), axis="T"))}
        status = np.asarray(self.status)
        attrs = io.provenance(
            "Solution", model_name=self.model_name, model_source=self.model_source, model_units=self.model_units,
            parameters=self.params, solver=self.solver_name, rtol=self.rtol, atol=self.atol,
            status=self.message, status_code=status, y0=self.y0,
            extra={"state_names": list(self.state_names), "stats": self.stats,
                   "t_final": float(np.asarray(self.t_final).real), "y_final": _attr_array(self.y_final)})
        if events:
            data.update(others)
            coords["state"] = ("state", list(self.state_names))
        return xr.Dataset(data, coords=coords, attrs=attrs)

    def plot(self, ax: Any = None, *, states: list[str] | None = None, **kwargs: Any) -> Any:
        """Plot states against time.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (a new figure if None).
        states : list of str, optional
            The states to draw (default: all).
        **kwargs
            Passed to matplotlib's ``plot``.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.

        Raises
        ------
        ParameterError
            A name in `states` that is not a state.
        ImportError
            matplotlib is not installed.

        Examples
        --------
        >>> import simkit
        >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11)
        >>> ax = sol.plot(states=["x", "z"])
        >>> [line.get_label() for line in ax.get_lines()]
        ['x', 'z']
        """
        from .plot import plot_solution

        return plot_solution(self, ax=ax, states=states, **kwargs)

    def __repr__(self) -> str:
        n = np.shape(self.ts)
        return (
            f"Solution(model={self.model_name!r}, solver={self.solver_name}, "
            f"n_save={n}, states={list(self.state_names)}, status={self.message!r})"
        )


def recorded(event_ts: Any, event_counts: Any) -> list[int]:
    """Crossings kept per event of one solve (at most its ``max_records``: the fixed-size
    records ``event_ts``, ``(event, capacity)``, are ``inf`` beyond)."""
    ts = np.asarray(event_ts)
    counts = np.minimum(np.asarray(event_counts), ts.shape[-1])
    return [int(np.sum(np.isfinite(ts[i, : counts[i]]))) for i in range(len(counts))]


def event_variables(event_ts: Any, event_ys: Any, event_counts: Any, prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    """Event records as xarray variables: ``event_t`` ``(*prefix, event, crossing)``,
    ``event_y`` ``(*prefix, event, crossing, state)`` (NaN beyond each event's count, the
    crossing axis as long as the most crossings recorded) and ``event_count``
    ``(*prefix, event)``. ``prefix``: leading axes of the records (``("member",)`` for an
    ensemble's), each record one solve's."""
    ts, ys = np.asarray(event_ts), np.asarray(event_ys)
    lead = ts.shape[: len(prefix)]
    flat_ts = ts.reshape((-1,) + ts.shape[len(prefix):])
    flat_ys = ys.reshape((-1,) + ys.shape[len(prefix):])
    flat_counts = np.asarray(event_counts).reshape((-1,) + np.shape(event_counts)[len(prefix):])
    counts = np.array([recorded(t, c) for t, c in zip(flat_ts, flat_counts)], np.int32).reshape(
        flat_ts.shape[:1] + flat_ts.shape[1:2])
    width = int(counts.max(initial=0))
    t = np.full(flat_ts.shape[:2] + (width,), np.nan)
    y = np.full(flat_ys.shape[:2] + (width,) + flat_ys.shape[3:], np.nan, dtype=np.result_type(ys.dtype, np.float64))
    for m, i in np.ndindex(counts.shape):
        k = counts[m, i]
        t[m, i, :k], y[m, i, :k] = flat_ts[m, i, :k], flat_ys[m, i, :k]
    dims = tuple(prefix) + ("event",)
    return {"event_t": (dims + ("crossing",), t.reshape(lead + t.shape[1:]),
                        {"long_name": "time of each recorded event crossing"}),
            "event_y": (dims + ("crossing", "state"), y.reshape(lead + y.shape[1:]),
                        {"long_name": "state at each recorded crossing"}),
            "event_count": (dims, counts.reshape(lead + counts.shape[1:]),
                            {"long_name": "crossings recorded per event"})}


def _attr_array(value: Any) -> Any:
    """A state as an attribute: a real vector as it is, else (complex) its JSON form."""
    from . import io

    a = np.asarray(value)
    return a if a.dtype.kind in "iuf" and a.ndim == 1 else io.to_jsonable(a)


@eqx.filter_jit
def _evaluate(interpolation: Any, ts: Any, ends: tuple[Any, Any]) -> Any:
    """The interpolant at the times ``ts`` (n,), one compiled program per interpolant
    structure and shape of ``ts`` (op by op, a first call compiled about 70 small programs).

    A time outside the solved span ``ends`` gives NaN, and so do the derivatives there: the
    interpolants' own ``where(inside, value, nan)`` passes no derivative to the unused value,
    so ``jax.grad`` of a loss through such a time was finite (found by probing). The
    interpolant is read at the nearest end instead (moving with ``t``, to carry its
    derivative) and scaled by NaN; inside, ``value * 1`` leaves the values' bits."""
    lo, hi = (jax.lax.stop_gradient(jnp.minimum(*ends)), jax.lax.stop_gradient(jnp.maximum(*ends)))
    inside = (ts >= lo) & (ts <= hi)
    moving = ts - jax.lax.stop_gradient(ts)  # 0, with derivative 1
    at = jnp.where(inside, ts, jnp.where(ts < lo, lo, hi) + moving)
    out = jax.vmap(interpolation.evaluate)(at)
    return out * jnp.where(inside, 1.0, jnp.nan)[:, None]
