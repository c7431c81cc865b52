"""The front door's checks for inputs known only inside a user's ``jax.jit``/``jax.vmap``.

`simkit._prepare` refuses bad host values before anything compiles. A value that is a
tracer (a span, save times or tolerances computed inside the user's transform) cannot be
refused there: its checks run inside the program instead, as one boolean, and a solve whose
inputs fail them ends with ``Status.INVALID_INPUT`` and NaN states (`simkit._solve.finish`;
the engine runs on harmless inputs instead, `harmless_args`),
raised at top level as any failure (``throw=True``) or read from ``Solution.status``. The
checks are the host checks' rules, so a traced and an untraced call agree:

- save times finite, inside ``[t0, t1]`` up to the host check's rounding slack (times within
  it are clipped to the span's ends, as the host path clips them), ordered from ``t0``
  towards ``t1``;
- ``t0`` finite, ``t1`` finite (``±inf`` only with a terminal event and given save times);
- ``rtol``, ``atol`` finite and non-negative, not both 0; an ``rtol`` below 100 x the
  machine epsilon is raised to it (the host path warns; inside a program it cannot);
- a given ``max_step`` positive (``inf`` is no limit), a given ``dt0`` finite and non-zero.

Found by probing: under ``jax.jit`` save times outside the span or unordered returned wrong
states with status success (the kernels) or every state ``inf`` (diffrax), a negative
``rtol`` ran as ``|rtol|``, and ``t1 = inf`` with a count of save times gave rows of ``inf``.

`teaching_error` turns what JAX raises while tracing a user's rhs or event function (a
Python ``if`` on the state, ``np.sin`` of it, a SciPy-style ``f(t, y)``) into an error that
says what to write instead; `simkit._prepare.check_rhs` and ``check_events`` use it, the one
place every entry point traces the user's functions first.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .errors import InputTypeError
from .params import concrete, is_traced

SAVE_TIME_SLACK = 1e-12  # save times this fraction of the span outside it are its ends (rounding)


def clip_save_times(save_ts: Any, t0: Any, t1: Any) -> Any:
    """Save times within the host check's rounding slack outside ``[t0, t1]`` as the span's ends;
    host values with NumPy, traced ones with jnp (same rule, `simkit._prepare.check_save_times`)."""
    if not is_traced(save_ts, t0, t1):
        lo, hi = np.asarray(min(t0, t1), save_ts.dtype), np.asarray(max(t0, t1), save_ts.dtype)
        return np.clip(save_ts, lo, hi)
    t0, t1 = jnp.asarray(t0, save_ts.dtype), jnp.asarray(t1, save_ts.dtype)
    lo, hi = jnp.minimum(t0, t1), jnp.maximum(t0, t1)
    # (not jnp.clip: at a time equal to an end its derivative went half to the time, half to
    # the end; a save time inside the span moves with itself alone)
    return jnp.where(save_ts < lo, lo, jnp.where(save_ts > hi, hi, save_ts))


def _save_times_ok(ts: Any, t0: Any, t1: Any) -> Any:
    lo, hi = jnp.minimum(t0, t1), jnp.maximum(t0, t1)
    width = hi - lo
    slack = jnp.where(jnp.isfinite(width), SAVE_TIME_SLACK * width, 0.0)
    inside = jnp.all(jnp.isfinite(ts) & (ts >= lo - slack) & (ts <= hi + slack))
    steps = jnp.diff(ts)
    ordered = jnp.all(jnp.where(t1 >= t0, steps >= 0, steps <= 0))
    return inside & ordered


def traced_inputs_ok(*, t0: Any, t1: Any, save_kind: str, save_ts: Any, rtol: Any, atol: Any,
                     max_step: Any, dt0: Any, infinite_end: bool, y0: Any = None) -> Any:
    """A scalar boolean (traced) that holds when every traced input passes the host checks'
    rules, or None when nothing is traced (the host checks have run).

    Parameters
    ----------
    t0, t1 : scalar
        The span (model time unit).
    save_kind : str
        ``SaveAt.kind``: ``"ts"`` (given times, `save_ts`), ``"linspace"`` or ``"steps"``.
    save_ts : array, shape (n_save,)
        The given save times (unclipped), or an empty array.
    rtol, atol : scalar (atol: or one per state, shape ``(n_states,)``)
        Tolerances.
    max_step, dt0 : scalar or None
        As the user gave them (None: not given).
    infinite_end : bool
        Whether ``t1 = ±inf`` is allowed (a terminal event).
    y0 : array, shape (n_states,), optional
        The initial state, checked where ``atol`` may be 0: a state at exactly 0 with an
        atol of 0 has no error scale (a traced atol gave a "non-finite" or "Newton" failure
        at t0 instead of this code; found by probing).
    """
    given = [v for v in (max_step, dt0) if v is not None]
    if not is_traced(t0, t1, save_ts, rtol, atol, *given, *([] if y0 is None else [y0])):
        return None  # (every call at top level: the host checks have run)
    c_atol = concrete(atol)
    if c_atol is not None and not (c_atol == 0).any():
        y0 = None  # no state has atol 0: nothing for y0 to break (a traced y0 alone is fine)
    if y0 is None and not is_traced(t0, t1, save_ts, rtol, atol, *given):
        return None
    t0, t1 = jnp.asarray(t0), jnp.asarray(t1)
    ok = jnp.isfinite(t0) & ~jnp.isnan(t1)
    if not (infinite_end and save_kind != "linspace"):
        ok &= jnp.isfinite(t1)
    if save_kind == "ts":
        ok &= _save_times_ok(jnp.asarray(save_ts), t0, t1)
    rtol, atol = jnp.asarray(rtol), jnp.asarray(atol)
    # (atol: a scalar or one per state)
    ok &= jnp.isfinite(rtol) & (rtol >= 0) & jnp.all(jnp.isfinite(atol) & (atol >= 0) & ((rtol > 0) | (atol > 0)))
    if max_step is not None:
        ok &= jnp.asarray(max_step) > 0  # (NaN fails; inf is no limit)
    if dt0 is not None:
        dt0 = jnp.asarray(dt0)
        ok &= jnp.isfinite(dt0) & (dt0 != 0)
    if y0 is not None:
        ok &= ~jnp.any((atol == 0) & (jnp.asarray(y0) == 0))
    return ok


def harmless_args(args: Any, ok: Any) -> Any:
    """``args`` (a `simkit._prepare.SolveArgs`) where ``ok`` holds; else save times at ``t0``
    and tolerances of 1, so that the engine neither fails on its own checks (diffrax's check
    of the save times made every member's states inf under ``jax.vmap``) nor runs to
    ``max_steps`` (a negative ``rtol`` and ``atol`` did)."""
    t0 = jnp.asarray(args.t0)
    start = jnp.where(jnp.isfinite(t0), t0, 0.0).astype(args.save_ts.dtype)
    one = jnp.ones((), jnp.asarray(args.rtol).dtype)
    return args._replace(save_ts=jnp.where(ok, args.save_ts, start), rtol=jnp.where(ok, args.rtol, one),
                         atol=jnp.where(ok, args.atol, one))


def floor_rtol(rtol: Any, floor: float) -> Any:
    """A traced ``rtol`` in ``(0, floor)`` raised to ``floor`` (`simkit._prepare.rtol_floor`, as the
    host path does, with its warning); host values and 0 unchanged."""
    if not is_traced(rtol):
        return rtol
    return jnp.where((rtol > 0) & (rtol < floor), jnp.asarray(floor, rtol.dtype), rtol)


# -- errors that teach: what a function traced by simkit may not do ----------------------------------


def _takes_args(fn: Any, count: int) -> bool | None:
    """Whether ``fn`` accepts ``count`` positional arguments (None: its signature is unknown);
    remembered per function (reading a signature cost 28 us, 6 % of building a model)."""
    try:
        return _takes_args_cached(fn, count)
    except TypeError:  # an unhashable callable
        return _read_signature(fn, count)


@functools.lru_cache(maxsize=1024)
def _takes_args_cached(fn: Any, count: int) -> bool | None:
    return _read_signature(fn, count)


def _read_signature(fn: Any, count: int) -> bool | None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or an extension type without a signature
        return None
    try:
        signature.bind(*range(count))
    except TypeError:
        return False
    return True


def teaching_error(err: Exception, fn: Any, owner: str, role: str = "rhs") -> InputTypeError | None:
    """An `InputTypeError` that says what to write instead, for an exception raised while
    simkit traced a user's function ``fn(t, y, params)`` (the rhs, or an event function), or
    None when ``err`` is not one of the habits below (the caller re-raises it as it is).

    The habits, each a plain-Python or NumPy way of writing that JAX's tracing cannot follow:

    - a Python ``if``/``while``/``and``/``or`` on the state or a parameter
      (``jax.errors.TracerBoolConversionError``): write ``jnp.where``;
    - a NumPy function on a traced value (``np.sin(y[0])``,
      ``jax.errors.TracerArrayConversionError``): write ``jnp.sin(y[0])``;
    - ``float()``, ``int()``, ``math.*`` or ``.item()`` of a traced value
      (``jax.errors.ConcretizationTypeError``): write the ``jnp`` function;
    - a function that does not take the three arguments ``(t, y, params)`` (a SciPy-style
      ``f(t, y)``; `wrong_arity`): write ``f(t, y, params)``, or call `simkit.solve_ivp`,
      which takes SciPy's ``fun(t, y, *args)``.

    Parameters
    ----------
    err : Exception
        What tracing ``fn`` raised.
    fn : callable
        The user's function.
    owner : str
        Who is speaking, e.g. ``"model 'lorenz'"``.
    role : str
        What ``fn`` is, e.g. ``"rhs"`` or ``"event 0"``.
    """
    where = f"{owner}: the {role}"
    name = getattr(fn, "__name__", type(fn).__name__)
    if isinstance(err, jax.errors.TracerBoolConversionError):
        return InputTypeError(
            f"{where} ({name}) uses the value of the time, the state or a parameter in a Python `if`, "
            "`while`, `and`, `or` or bool(): simkit traces the function once with abstract values to compile "
            "it, so such a branch cannot be decided. Write the choice with jnp.where, which computes both sides "
            "and picks one per entry: `jnp.where(y[0] > 0, -y[0], 0.0)` instead of `-y[0] if y[0] > 0 else 0.0` "
            "(jax.lax.cond where a side is expensive)")
    if isinstance(err, jax.errors.TracerArrayConversionError):
        return InputTypeError(
            f"{where} ({name}) passes the time, the state or a parameter to NumPy (np.sin, np.exp, np.array, "
            "...): simkit traces the function with JAX, and NumPy needs concrete numbers. Use jax.numpy, which "
            "has the same names: `import jax.numpy as jnp`, then `jnp.sin(y[0])` instead of `np.sin(y[0])` "
            "(and `jnp.array([...])` instead of `np.array([...])`)")
    if isinstance(err, jax.errors.ConcretizationTypeError):
        return InputTypeError(
            f"{where} ({name}) turns the time, the state or a parameter into a Python number (float(), int(), "
            "math.sin, .item(), a range(...) of it): simkit traces the function with JAX, where values are "
            "abstract. Keep them arrays and use jax.numpy: `jnp.sin(y[0])` instead of `math.sin(y[0])`, "
            "`y[0].astype(float)` instead of `float(y[0])`")
    if type(err) is TypeError:
        return wrong_arity(fn, owner, role)
    return None


def wrong_arity(fn: Any, owner: str, role: str = "rhs") -> InputTypeError | None:
    """An `InputTypeError` when ``fn`` cannot be called as ``fn(t, y, params)`` (a SciPy-style
    ``f(t, y)``), saying what to write instead; None when it can, or when its signature is unknown.
    Used by `ODEModel` (when it is built) and `teaching_error`."""
    if _takes_args(fn, 3) is not False:
        return None
    name = getattr(fn, "__name__", type(fn).__name__)
    call = "rhs" if role == "rhs" else "g"
    return InputTypeError(
        f"{owner}: the {role} ({name}) does not take three arguments, but simkit calls it as {call}(t, y, params): "
        "t a scalar, y the state (shape (n_states,)) and params the dict of parameters (unused ones may be "
        "ignored). Write `def f(t, y, params): return -0.5 * y`; a SciPy-style f(t, y) or f(t, y, *args) runs "
        "unchanged with simkit.solve_ivp(f, t_span, y0, args=(...))")
