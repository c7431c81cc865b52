"""`EngineResult`: what every engine returns, a named record (never a positional tuple)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp

from ..status import Status


class EngineResult(NamedTuple):
    """One solve's raw outputs, all arrays (a pytree, so it can leave ``jax.jit``).

    - `ts` ``(n_save,)``, `ys` ``(n_save, n_states)``: saved times (``inf`` where never
      reached) and states.
    - `stats`: dict of counters (``num_steps``, ``num_accepted_steps``, ``num_rejected_steps``,
      ``num_rhs`` where known).
    - `status`: int32 `simkit.Status` code.
    - `t_final`, `y_final`: where the integration stopped.
    - `event_index`, `event_time`: the terminal event that stopped the solve (``-1``/NaN if none).
    - `event_ts` ``(n_events, capacity)``, `event_ys` ``(n_events, capacity, n_states)``,
      `event_counts` ``(n_events,)``: every recorded crossing of each event (``inf``/0 beyond
      the count); ``capacity`` is the largest ``Event.max_records``.
    - `interpolation`: the dense interpolant (``SaveAt(dense=True)``), else None.
    """

    ts: Any
    ys: Any
    stats: dict
    status: Any
    t_final: Any
    y_final: Any
    event_index: Any
    event_time: Any
    event_ts: Any
    event_ys: Any
    event_counts: Any
    interpolation: Any = None


def nonfinite_saves(status: Any, ys: Any) -> Any:
    """``status`` with `Status.NONFINITE` where a solve that succeeded (or stopped at an
    event) saved a non-finite value: every step's end was finite, but a value between steps
    (the interpolant) overflowed. Found by probing: float32 DOP853 from a state of 1e37 saved
    NaN with status success. ``status`` ``(...)``, ``ys`` ``(..., n_save, n_states)``."""
    finite = jnp.all(jnp.isfinite(ys), axis=tuple(range(jnp.ndim(status), jnp.ndim(ys))))
    return jnp.where((status <= int(Status.EVENT)) & ~finite, int(Status.NONFINITE), status).astype(jnp.int32)
