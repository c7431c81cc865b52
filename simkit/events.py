"""`Event`: a condition ``g(t, y, params)`` whose zero crossings a solve records or stops at.

SciPy's semantics (``scipy.integrate.solve_ivp``), in every engine:

- every crossing of an event is recorded (``Solution.t_events[i]``, ``Solution.y_events[i]``)
  where its sign differs between an accepted step's ends (two crossings in one step cancel:
  bound the step with ``max_step`` for events faster than the solution), filtered by
  `direction` (+1: ``g`` goes from negative to positive; -1: the reverse; 0: both);
- ``terminal=n`` stops the solve at the n-th recorded crossing (``True`` is 1, ``False`` or 0
  records only).

One rule simkit adds, the same in every engine: a crossing is a sign change *after* ``t0``.
An event that is exactly zero at ``t0`` takes the sign of its first non-zero value, so it
never fires at ``t0``; and since a recorded event state lies on or just past the crossing
(``g`` is zero or has changed sign there), restarting a solve from an event's time and state
does not fire that event again. (SciPy fires an event that is exactly zero at ``t0`` in the
first step.)

`Event` (re-exported as `simkit.Event`) is this module's only public name (``__all__``). The
rest are internal building blocks of the engines' step loops (`simkit.kernels.loop` and
the diffrax engine), shared so that events behave the same in every engine: `as_events`
(normalising ``events=``), `event_values`, `capacity`, `wanted_crossings`,
`locate_crossings` and `locate_root` (locating a crossing inside a step). They are not part
of the API and may change without notice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .errors import InputError, InputTypeError
from .params import check_function

__all__ = ["Event"]

EventFn = Callable[[Any, Any, Any], Any]
DEFAULT_MAX_RECORDS = 64


@dataclasses.dataclass(frozen=True)
class Event:
    """An event condition for `simkit.solve` / `simkit.ensemble` (SciPy's semantics).

    Parameters
    ----------
    fn : callable
        ``g(t, y, params) -> scalar``, a pure JAX function of the time, the state (shape
        ``(n_states,)``) and the parameter dict; an event is a sign change of ``g`` after
        ``t0``.
    direction : int
        +1 records only upward crossings (``g`` from negative to positive), -1 only
        downward ones, 0 (default) both.
    terminal : int or bool
        Stop at the n-th recorded crossing (``True`` = 1, the default; ``False`` or 0:
        record every crossing and never stop).
    max_records : int
        Crossings kept per event (static: the result arrays have this length). A solve
        with more crossings fails (``Status.TOO_MANY_EVENTS``) with a clear message instead
        of losing them.

    Raises
    ------
    InputError, InputTypeError
        A direction other than -1, 0, +1, a negative or ``None`` terminal count, a
        ``max_records`` below 1, or an `fn` that is not callable or not hashable.

    Examples
    --------
    >>> import jax.numpy as jnp, simkit
    >>> spring = simkit.ODEModel(rhs=lambda t, y, p: jnp.stack([y[1], -y[0]]), params={},
    ...                          y0=[1.0, 0.0], state_names=("x", "v"))
    >>> sol = simkit.solve(spring, (0.0, 10.0), events=simkit.Event(lambda t, y, p: y[0], direction=-1, terminal=0))
    >>> sol.t_events[0].shape
    (2,)
    """

    fn: EventFn
    direction: int = 0
    terminal: int = 1
    max_records: int = DEFAULT_MAX_RECORDS

    def __post_init__(self) -> None:
        check_function("Event", "fn", self.fn)  # a callable g(t, y, params), hashable
        if self.direction not in (-1, 0, 1):
            raise InputError(f"Event: direction must be -1, 0 or +1, got {self.direction!r}")
        terminal = self.terminal
        if isinstance(terminal, (bool, np.bool_)):  # NumPy's bools and ints too (SciPy-style
            terminal = int(terminal)  # attributes set from arrays were refused; found by probing)
        if not isinstance(terminal, (int, np.integer)) or terminal < 0:
            raise InputError(f"Event: terminal must be a bool or a non-negative int, got {self.terminal!r}")
        object.__setattr__(self, "terminal", int(terminal))
        object.__setattr__(self, "direction", int(self.direction))
        records = self.max_records
        if not isinstance(records, (int, np.integer)) or isinstance(records, (bool, np.bool_)) or records < 1:
            raise InputError(f"Event: max_records must be a positive int, got {self.max_records!r}")
        object.__setattr__(self, "max_records", int(records))
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


def locate_root(fn, dtype, iterations: int = 30):
    """Root of ``fn`` on [0, 1] given fn(0) > 0 >= fn(1): Illinois false position.

    Iterated under ``stop_gradient``; two final Newton steps carry the derivatives (the
    implicit-function theorem) without moving the root: the first, from the root held
    constant, gives its first derivatives; the second, from the first's result, its second
    derivatives too (the Newton map's slope is zero at a root, so its derivatives of order
    k need the root's to order k - 1): an event time's gradient and Hessian are exact (with
    one step the Hessian of a falling ball's impact time was 33 % off)."""

    def newton(theta):
        value, slope = jax.jvp(fn, (theta,), (jnp.ones_like(theta),))
        correction = value / jnp.where(slope == 0, 1.0, slope)
        return theta - (correction - lax.stop_gradient(correction))  # the same value, derivatives

    def body(_, state):
        a, fa, b, fb, side = state
        x = jnp.where(fb == fa, 0.5 * (a + b), (a * fb - b * fa) / jnp.where(fb == fa, 1.0, fb - fa))
        x = jnp.clip(x, a, b)
        fx = fn(x)
        right = fx > 0  # root in [x, b]
        a2, b2 = jnp.where(right, x, a), jnp.where(right, b, x)
        fa2 = jnp.where(right, fx, jnp.where(side == -1, fa * 0.5, fa))
        fb2 = jnp.where(right, jnp.where(side == 1, fb * 0.5, fb), fx)
        return a2, fa2, b2, fb2, jnp.where(right, 1, -1)

    def root(f0, f1, keep=None):
        # (f0, f1 scalars, or vectors: one root each, ``fn`` mapping each entry of theta to its
        # own value; ``keep`` False: that entry is not wanted, held at 1 for the Newton steps)
        zero, one = jnp.zeros(jnp.shape(f0), dtype), jnp.ones(jnp.shape(f0), dtype)
        init = (zero, lax.stop_gradient(f0), one, lax.stop_gradient(f1), jnp.full(jnp.shape(f0), 0))
        theta = lax.stop_gradient(lax.fori_loop(0, iterations, body, init)[2])
        if keep is not None:
            theta = jnp.where(keep, theta, one)
        return newton(newton(theta))

    return root


def wanted_crossings(events: tuple[Event, ...], state: dict, g_new: Any, accepted: Any, dtype: Any) -> Any:
    """Which events cross zero in the wanted direction inside an (accepted) step: a sign
    change from the sign of their last non-zero value, shape ``(n_events,)``."""
    direction = jnp.asarray([ev.direction for ev in events], dtype)
    s = state["sign"]
    crossed = accepted & (s * state["g"] > 0) & (s * g_new <= 0)
    upward = s < 0
    return crossed & ((direction == 0) | ((direction > 0) & upward) | ((direction < 0) & ~upward))


def locate_crossings(events: tuple[Event, ...], state: dict, g_new: Any, wanted: Any, t_at: Any, y_at: Any,
                     params: Any, dtype: Any) -> dict:
    """The crossings inside one step, the same in every engine.

    `state` holds each event's value ``g`` at the step's start and the ``sign`` of its last
    non-zero value (0: none yet) and the ``count`` of recorded crossings; ``g_new`` is the
    events' values at the step's end; ``t_at(theta)``/``y_at(theta)`` give the time and the
    method's interpolated state at the fraction ``theta`` of the step (``t_at`` elementwise on
    a vector of fractions; ``y_at`` is vmapped over one); ``wanted`` comes from
    `wanted_crossings`. Returns ``theta`` (where, 1 where none), ``keep`` (the
    crossings to record: those not after the stop), ``fired``, ``theta_stop`` and
    ``stop_index`` (the first crossing that completes its event's terminal count)."""
    terminal = jnp.asarray([ev.terminal for ev in events], jnp.int32)
    s = state["sign"]
    n = len(events)

    def values(theta):  # each event at its own fraction of the step: (n,) -> (n,)
        ts = t_at(theta)
        # (one event: no vmap, whose trace cost a one-event solve's first call 0.05 s)
        ys = jax.vmap(y_at)(theta) if n > 1 else y_at(theta[0])[None]
        return s * jnp.stack([event_values(events[i:i + 1], ts[i], ys[i], params)[0] for i in range(n)])

    locate = locate_root(values, dtype)

    def roots():
        # one loop for every event, entries not crossing here bracketed (1, -1) and set to 1 (a
        # loop per event cost 0.13-0.16 s of compile each: Lorenz with 10 events 2.06 s)
        f0, f1 = jnp.where(wanted, s * state["g"], 1.0), jnp.where(wanted, s * g_new, -1.0)
        return jnp.where(wanted, locate(f0.astype(dtype), f1.astype(dtype), wanted), 1.0).astype(dtype)

    theta = lax.cond(jnp.any(wanted), roots, lambda: jnp.ones((n,), dtype))
    stops = wanted & (terminal > 0) & (state["count"] + 1 >= terminal)
    theta_stop = jnp.min(jnp.where(stops, theta, jnp.inf))
    return dict(theta=theta, keep=wanted & (theta <= theta_stop), fired=jnp.any(stops),
                theta_stop=theta_stop, stop_index=jnp.argmin(jnp.where(stops, theta, jnp.inf)).astype(jnp.int32))
