"""`SaveAt`: which times a solve returns. The shorthands of ``saveat=`` become one object here.

- ``saveat=n`` (an int): ``SaveAt(ts=n)``, n evenly spaced times from t0 to t1;
- ``saveat=[t_0, ..., t_k]`` (an array): ``SaveAt(ts=array)``, those times, ordered from t0
  towards t1 and inside the span;
- ``saveat="steps"`` / ``SaveSteps()``: ``SaveAt(steps=True)``, every accepted step;
- ``dense=True``: ``SaveAt(..., dense=True)``, the solver's interpolant for
  ``Solution.evaluate(t)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .errors import InputError, InputTypeError, ShapeError

DEFAULT_COUNT = 101


@dataclasses.dataclass(frozen=True, eq=False)
class SaveAt:
    """Save times of a solve (``saveat=`` of `simkit.solve` and `simkit.ensemble`).

    ``saveat=n``, ``saveat=array`` and ``saveat="steps"`` are shorthands for this object.

    Parameters
    ----------
    ts : int or array_like, optional
        An int ``n`` (``n >= 1`` evenly spaced times from ``t0`` to ``t1``; ``n = 1``
        saves ``t1``) or a 1-D array of times inside ``t_span``, ordered from ``t0`` towards
        ``t1`` (shape ``(n_save,)``, the model's time unit). Default 101 unless `steps`.
    steps : bool
        Save every accepted step (``ts`` then must be None); bounded by the memory budget
        (``SIMKIT_MEMORY_BUDGET``).
    dense : bool
        Keep the solver's dense output for ``Solution.evaluate(t)``.

    Raises
    ------
    InputError, ShapeError, InputTypeError
        Both `ts` and `steps`, a count below 1, times that are not a non-empty 1-D array
        (`simkit.solve` checks that they are finite, inside the span and ordered).

    Examples
    --------
    >>> import simkit
    >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=simkit.SaveAt(ts=[0.0, 0.5, 1.0]))
    >>> sol.ts.shape
    (3,)
    """

    ts: Any = None
    steps: bool = False
    dense: bool = False

    def __post_init__(self) -> None:
        if self.steps and self.ts is not None:
            raise InputError("SaveAt: give ts or steps=True, not both")
        if not isinstance(self.steps, (bool, np.bool_)) or not isinstance(self.dense, (bool, np.bool_)):
            raise InputTypeError(f"SaveAt: steps and dense must be bools, got {self.steps!r}, {self.dense!r}")
        ts = self.ts
        if ts is None and not self.steps:
            ts = DEFAULT_COUNT
        if isinstance(ts, (bool, np.bool_)):
            raise InputTypeError(f"SaveAt: ts must be an int count or an array of times, got {ts!r}")
        if isinstance(ts, (int, np.integer)):
            if ts < 1:
                raise InputError(f"saveat must be at least 1 save point, got {ts}")
            ts = int(ts)
        elif ts is not None:
            if isinstance(ts, (str, bytes)) or isinstance(ts, float):
                raise InputTypeError(
                    f"saveat must be an int count, an array of times, 'steps' or a simkit.SaveAt; got {ts!r}")
            if np.ndim(ts) != 1 or np.shape(ts)[0] == 0:
                raise ShapeError(f"saveat times must be a non-empty 1-D array, got shape {np.shape(ts)}")
        object.__setattr__(self, "ts", ts)
        object.__setattr__(self, "steps", bool(self.steps))
        object.__setattr__(self, "dense", bool(self.dense))

    @property
    def count(self) -> int | None:
        """Number of save times when known from the structure alone (None for `steps`).

        Returns
        -------
        int or None
            The count ``n`` of ``SaveAt(ts=n)``, the length of given times, or None for
            ``steps=True`` (known only after the solve).

        Examples
        --------
        >>> import simkit
        >>> simkit.SaveAt(ts=[0.0, 0.5, 1.0]).count, simkit.SaveAt(steps=True).count
        (3, None)
        """
        if self.steps:
            return None
        return self.ts if isinstance(self.ts, int) else int(np.shape(self.ts)[0])

    @property
    def kind(self) -> str:
        """How the save times are given: ``"linspace"`` (a count), ``"ts"`` (given times) or
        ``"steps"``.

        Returns
        -------
        str
            One of ``"linspace"``, ``"ts"``, ``"steps"``.

        Examples
        --------
        >>> import simkit
        >>> simkit.SaveAt(ts=11).kind, simkit.SaveAt(ts=[0.0, 1.0]).kind, simkit.SaveSteps().kind
        ('linspace', 'ts', 'steps')
        """
        return "steps" if self.steps else ("linspace" if isinstance(self.ts, int) else "ts")

    def __repr__(self) -> str:
        ts = self.ts if self.ts is None or isinstance(self.ts, int) else f"array{np.shape(self.ts)}"
        return f"SaveAt(ts={ts}, steps={self.steps}, dense={self.dense})"


class SaveSteps(SaveAt):
    """``SaveAt(steps=True)``, kept under its 0.1 name: save every accepted step.

    Takes no arguments; ``saveat="steps"`` is the same. The number of saves is known only
    after the solve (bounded by the memory budget, ``SIMKIT_MEMORY_BUDGET``).

    Examples
    --------
    >>> import simkit
    >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=simkit.SaveSteps())
    >>> len(sol.ts) == int(sol.stats["num_accepted_steps"]) + 1  # t0 and every step
    True
    """

    def __init__(self) -> None:
        super().__init__(steps=True)


def save_grid(t0: Any, t1: Any, n: int) -> Any:
    """The ``n`` evenly spaced save times of ``SaveAt(ts=n)``: from t0 to t1, and ``[t1]`` for
    ``n = 1`` (the final state). NumPy for host numbers, JAX for traced ones."""
    import jax.numpy as jnp

    xp = np if isinstance(t0, (int, float, np.ndarray, np.generic)) and isinstance(t1, (int, float, np.ndarray, np.generic)) else jnp
    if n == 1:
        return xp.reshape(xp.asarray(t1), (1,))
    return xp.linspace(t0, t1, n)


def program_save_times(save: str, n_save: int, t0: Any, t1: Any, given: Any) -> Any:
    """The save times a compiled solve uses: ``given`` (the `SolveArgs` ``save_ts``), which
    for ``save == "linspace"`` holds the host's grid where `simkit._prepare.prepare` had
    the span's numbers, else the grid computed in the program (a traced span). One grid for
    `solve` and `simkit.solve_to_file`: computed in the program, XLA multiplies by the
    reciprocal of the count and may fuse a multiply-add, and most spans' times differed from
    NumPy's ``linspace`` (and the file's) in the last bit (found by probing)."""
    if save == "linspace" and given.shape[0] != n_save:
        return save_grid(t0, t1, n_save)
    return given


def as_saveat(saveat: Any, dense: bool = False) -> SaveAt:
    """Convert the ``saveat=`` shorthands (None, int, array, ``"steps"``) to a `SaveAt`."""
    if isinstance(saveat, SaveAt):
        if dense and not saveat.dense:
            return SaveAt(ts=saveat.ts, steps=saveat.steps, dense=True)
        return saveat
    if isinstance(saveat, str):
        if saveat != "steps":
            raise InputError(f"saveat must be an int, an array of times or 'steps'; got {saveat!r}")
        return SaveAt(steps=True, dense=dense)
    return SaveAt(ts=saveat, dense=dense)
