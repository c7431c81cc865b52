"""Result codes carried out of compiled solves (`Status`) and their messages."""

from __future__ import annotations

import enum


class Status(enum.IntEnum):
    """Outcome of one solve. Codes <= EVENT are successes."""

    SUCCESS = 0
    EVENT = 1
    MAX_STEPS = 2
    NONFINITE = 3
    NONLINEAR_FAILURE = 4
    STEP_SIZE_UNDERFLOW = 5
    TOO_MANY_EVENTS = 6
    FAILURE = 9


_MESSAGES = {
    Status.SUCCESS: "success",
    Status.EVENT: "stopped by a terminal event",
    Status.MAX_STEPS: "max_steps reached before t1",
    Status.NONFINITE: "the state became non-finite (NaN or inf)",
    Status.NONLINEAR_FAILURE: "the implicit solver's nonlinear (Newton) iteration failed",
    Status.STEP_SIZE_UNDERFLOW: "the step size underflowed",
    Status.TOO_MANY_EVENTS: "an event crossed zero more often than its max_records allows",
    Status.FAILURE: "the solver failed",
}


def describe(code: int) -> str:
    """Message for a status code."""
    try:
        return _MESSAGES[Status(code)]
    except ValueError:
        return f"unknown status {code}"
