"""`Event`: a condition ``g(t, y, params)`` whose zero crossings a solve records or stops at.

SciPy's semantics (``scipy.integrate.solve_ivp``), in every engine:

- every crossing of an event is recorded (``Solution.t_events[i]``, ``Solution.y_events[i]``),
  filtered by `direction` (+1: ``g`` goes from negative to positive; -1: the reverse; 0: both);
- ``terminal=n`` stops the solve at the n-th recorded crossing (``True`` is 1, ``False`` or 0
  records only).

One rule simkit adds, the same in every engine: a crossing is a sign change *after* ``t0``.
An event that is exactly zero at ``t0`` takes the sign of its first non-zero value, so it
never fires at ``t0``; and since a recorded event state lies on or just past the crossing
(``g`` is zero or has changed sign there), restarting a solve from an event's time and state
does not fire that event again. (SciPy fires an event that is exactly zero at ``t0`` in the
first step.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp

from .errors import InputError, InputTypeError

EventFn = Callable[[Any, Any, Any], Any]
DEFAULT_MAX_RECORDS = 64


@dataclasses.dataclass(frozen=True)
class Event:
    """An event condition for `simkit.solve` / `simkit.ensemble`.

    **Arguments:**

    - `fn`: ``g(t, y, params) -> scalar``, a pure JAX function of the time, the state
      (shape ``(n_states,)``) and the parameter dict.
    - `direction`: +1 records only upward crossings (``g`` from negative to positive), -1
      only downward ones, 0 (default) both.
    - `terminal`: stop at the n-th recorded crossing (``True`` = 1, the default; ``False`` or
      0: record every crossing and never stop).
    - `max_records`: crossings kept per event (static: the result arrays have this length).
      A solve with more crossings fails with a clear message instead of losing them.
    """

    fn: EventFn
    direction: int = 0
    terminal: int = 1
    max_records: int = DEFAULT_MAX_RECORDS

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise InputTypeError(f"Event: fn must be a callable g(t, y, params), got {self.fn!r}")
        if self.direction not in (-1, 0, 1):
            raise InputError(f"Event: direction must be -1, 0 or +1, got {self.direction!r}")
        terminal = self.terminal
        if isinstance(terminal, bool):
            terminal = int(terminal)
        if not isinstance(terminal, int) or terminal < 0:
            raise InputError(f"Event: terminal must be a bool or a non-negative int, got {self.terminal!r}")
        object.__setattr__(self, "terminal", terminal)
        object.__setattr__(self, "direction", int(self.direction))
        if not isinstance(self.max_records, int) or isinstance(self.max_records, bool) or self.max_records < 1:
            raise InputError(f"Event: max_records must be a positive int, got {self.max_records!r}")
        if self.terminal > self.max_records:
            object.__setattr__(self, "max_records", self.terminal)


def as_events(events: Any) -> tuple[Event, ...]:
    """Normalise the ``events=`` argument: a callable, an `Event`, or a sequence of them.

    A plain callable is terminal (stops at its first crossing) unless it carries SciPy's
    attributes ``terminal`` / ``direction``, which are honoured as SciPy does."""
    if events is None:
        return ()
    if callable(events) or isinstance(events, Event):
        events = (events,)
    if isinstance(events, (str, bytes)) or not isinstance(events, Sequence):
        raise InputTypeError(
            f"events must be a callable g(t, y, params), a simkit.Event or a sequence of them, got {events!r}")
    out = []
    for i, ev in enumerate(events):
        if isinstance(ev, Event):
            out.append(ev)
        elif callable(ev):
            out.append(Event(ev, direction=getattr(ev, "direction", 0), terminal=getattr(ev, "terminal", True)))
        else:
            raise InputTypeError(f"events[{i}] must be a callable g(t, y, params) or a simkit.Event, got {ev!r}")
    return tuple(out)


def event_values(events: tuple[Event, ...], t: Any, y: Any, params: Any) -> Any:
    """The events' values at ``(t, y)``, shape ``(n_events,)``, in the dtype of ``y``'s reals."""
    dtype = jnp.real(y).dtype
    return jnp.stack([jnp.real(jnp.asarray(ev.fn(t, y, params))).astype(dtype).reshape(()) for ev in events])


def capacity(events: tuple[Event, ...]) -> int:
    """Length of the per-event record buffers."""
    return max((ev.max_records for ev in events), default=0)
