"""Result codes carried out of compiled solves (`Status`) and their messages."""

from __future__ import annotations

import enum


class Status(enum.IntEnum):
    """Outcome of one solve. Codes <= EVENT are successes.

    An ``enum.IntEnum``: a result's ``status`` holds the integer (an array under
    ``jax.vmap`` or in an `EnsembleSolution`); ``Status(code)`` gives the name.

    Attributes
    ----------
    SUCCESS : int
        0: reached ``t1``.
    EVENT : int
        1: stopped by a terminal event.
    MAX_STEPS : int
        2: the step budget ``max_steps`` ran out before ``t1``.
    NONFINITE : int
        3: the state became non-finite (NaN or inf), at a step or in a saved value between steps.
    NONLINEAR_FAILURE : int
        4: the implicit solver's Newton iteration failed.
    STEP_SIZE_UNDERFLOW : int
        5: the step size underflowed.
    TOO_MANY_EVENTS : int
        6: an event crossed zero more often than its ``max_records`` allows.
    INVALID_INPUT : int
        7: an input known only inside ``jax.jit``/``jax.vmap`` failed the checks that refuse
        it outside (save times outside the span or unordered, a non-finite span, negative
        tolerances...); the states are NaN.
    EVENT_NONFINITE : int
        8: an event function returned NaN (at ``t0`` or a step's end): it can never
        cross zero, so the solve stops there rather than miss its events.
    FAILURE : int
        9: any other solver failure.

    Examples
    --------
    >>> import simkit
    >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11, max_steps=5, throw=False)
    >>> simkit.Status(int(sol.status)).name, sol.ok
    ('MAX_STEPS', False)
    """

    SUCCESS = 0
    EVENT = 1
    MAX_STEPS = 2
    NONFINITE = 3
    NONLINEAR_FAILURE = 4
    STEP_SIZE_UNDERFLOW = 5
    TOO_MANY_EVENTS = 6
    INVALID_INPUT = 7
    EVENT_NONFINITE = 8
    FAILURE = 9


_MESSAGES = {
    Status.SUCCESS: "success",
    Status.EVENT: "stopped by a terminal event",
    Status.MAX_STEPS: "max_steps reached before t1",
    Status.NONFINITE: "the state became non-finite (NaN or inf)",
    Status.NONLINEAR_FAILURE: "the implicit solver's nonlinear (Newton) iteration failed",
    Status.STEP_SIZE_UNDERFLOW: "the step size underflowed",
    Status.TOO_MANY_EVENTS: "an event crossed zero more often than its max_records allows",
    Status.INVALID_INPUT: ("an input known only inside jax.jit/vmap was invalid: save times outside t_span or "
                           "unordered, a non-finite t_span, negative or zero tolerances, or a non-positive "
                           "max_step or dt0"),
    Status.EVENT_NONFINITE: "an event function returned NaN, so its crossings cannot be found",
    Status.FAILURE: "the solver failed",
}


def describe(code: int) -> str:
    """Message for a status code."""
    try:
        return _MESSAGES[Status(code)]
    except ValueError:
        return f"unknown status {code}"
