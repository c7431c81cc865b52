"""`Solution`: the result of `simkit.solve` — times, states, stats, status."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .errors import DependencyError, ParameterError
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
                 "event_counts"],
    meta_fields=["state_names", "model_name", "solver_name"],
)
@dataclasses.dataclass(frozen=True)
class Solution:
    """Trajectory of an ODE solve.

    A pytree, so it can be returned from ``jax.jit``/``jax.vmap`` of a function that
    calls `simkit.solve`; under ``jax.vmap`` every array field gains a leading member axis.

    **Fields:**

    - `ts`: save times, shape ``(n_save,)``.
    - `ys`: states at `ts`, shape ``(n_save, n_states)`` (row = time, column = state).
    - `state_names`: names of the state columns.
    - `stats`: dict of solver counters: ``num_steps`` (attempted), ``num_accepted_steps``,
      ``num_rejected_steps`` and, for explicit Runge–Kutta solvers, ``num_rhs`` (right-hand
      side evaluations, including the two of the initial-step estimate).
    - `status`: integer `simkit.Status` code (0 = success, 1 = terminated by an event).
    - `t_final`, `y_final`: time and state where the integration stopped.
    - `event_index`: index of the terminal event that stopped the solve (``-1`` if none);
      `event_time` its time.
    - `t_events`, `y_events`: every recorded crossing, as SciPy's ``solve_ivp`` gives them: a
      list with one array per event, of shape ``(crossings,)`` and ``(crossings, n_states)``.
      The raw fixed-size records are `event_ts` ``(n_events, capacity)`` (``inf`` beyond the
      count), `event_ys` and `event_counts` ``(n_events,)``.

    Save times after a terminal event are dropped when the solve is called outside of
    a JAX transform; under a transform (shapes must be static) they are kept and filled
    with ``inf`` (times) and the state at the event.
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

    @property
    def t_events(self) -> list:
        """Times of every recorded crossing, one array per event (SciPy's ``t_events``)."""
        if self.event_ts is None:
            return []
        return [self.event_ts[i][: n] for i, n in enumerate(self._recorded())]

    def _recorded(self) -> list[int]:
        """Crossings kept per event (at most its ``max_records``: rows beyond are ``inf``)."""
        ts = np.asarray(self.event_ts)
        counts = np.minimum(np.asarray(self.event_counts), ts.shape[-1])
        return [int(np.sum(np.isfinite(ts[i, : counts[i]]))) for i in range(len(counts))]

    @property
    def y_events(self) -> list:
        """States at every recorded crossing, one ``(crossings, n_states)`` array per event."""
        if self.event_ys is None:
            return []
        return [self.event_ys[i][: n] for i, n in enumerate(self._recorded())]

    # -- access ---------------------------------------------------------------
    def __getitem__(self, name: str) -> Any:
        """The trajectory of one state by name, shape ``(n_save,)``."""
        return self.ys[..., state_column(self.state_names, name, f"solution of {self.model_name!r}")]

    @property
    def ok(self) -> bool:
        """True when the solve reached ``t1`` or stopped at an event."""
        return bool(np.all(np.asarray(self.status) <= int(Status.EVENT)))

    @property
    def message(self) -> str:
        """Human-readable status."""
        codes = np.unique(np.asarray(self.status))
        return "; ".join(describe(int(c)) for c in codes)

    def evaluate(self, t: Any) -> Any:
        """Dense output: the state at time(s) ``t``; shape ``t.shape + (n_states,)``.

        Available when the solve was called with ``dense=True``, on the solved span (from
        ``t0`` to `t_final`, which is the event time when an event stopped the solve); a
        ``t`` outside it raises `InputError` (under a JAX transform, where ``t`` is traced,
        it gives NaN).
        """
        from .errors import InputError

        if self.interpolation is None:
            raise InputError("dense output was not requested: call simkit.solve(..., dense=True)")
        t = jnp.asarray(t)
        ends = (self.interpolation.t0, self.interpolation.t1)
        if not any(isinstance(x, jax.core.Tracer) for x in (t, *ends)) and all(np.ndim(e) == 0 for e in ends):
            lo, hi = sorted(float(e) for e in ends)
            values = np.asarray(t, dtype=float)
            outside = ~((values >= lo) & (values <= hi))  # NaN is outside too
            if np.any(outside):
                stopped = " (the solve stopped at an event)" if int(np.asarray(self.status)) == Status.EVENT else ""
                raise InputError(f"Solution.evaluate: t = {values[outside].tolist()} is outside the solved "
                                 f"span [{lo:g}, {hi:g}] of {self.model_name!r}{stopped}")
        flat = jnp.reshape(t, (-1,))
        out = jax.vmap(self.interpolation.evaluate)(flat)
        return jnp.reshape(out, t.shape + out.shape[-1:])

    # -- export ---------------------------------------------------------------
    def to_xarray(self) -> Any:
        """An ``xarray.DataArray`` with dims ``(time, state)``; attrs hold the model name,
        parameters, solver and tolerances. Needs xarray (a core dependency)."""
        try:
            import xarray as xr
        except ImportError:
            raise DependencyError(
                "Solution.to_xarray() needs xarray, a dependency of simkit-jax that is "
                "missing here: pip install xarray"
            ) from None
        attrs: dict[str, Any] = {
            "model": self.model_name,
            "solver": self.solver_name,
            "rtol": float(self.rtol),
            "atol": float(self.atol),
            "status": self.message,
        }
        for k, v in self.params.items():
            arr = np.asarray(v)
            attrs[f"param_{k}"] = float(arr) if arr.ndim == 0 else arr.tolist()
        return xr.DataArray(
            np.asarray(self.ys),
            dims=("time", "state"),
            coords={"time": np.asarray(self.ts), "state": list(self.state_names)},
            name=self.model_name,
            attrs=attrs,
        )

    def plot(self, ax: Any = None, *, states: list[str] | None = None, **kwargs: Any) -> Any:
        """Plot states against time on ``ax`` (a new figure if None); returns the Axes."""
        from .plot import plot_solution

        return plot_solution(self, ax=ax, states=states, **kwargs)

    def __repr__(self) -> str:
        n = np.shape(self.ts)
        return (
            f"Solution(model={self.model_name!r}, solver={self.solver_name}, "
            f"n_save={n}, states={list(self.state_names)}, status={self.message!r})"
        )
