"""`Dataset`: observations of a model's states (or of a function of them) at given times."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError, ShapeError


@dataclasses.dataclass(frozen=True, eq=False)
class Dataset:
    """Observations of one experiment.

    **Fields:**

    - `times` (n_times,): observation times, increasing (the model's time unit).
    - `values` (n_times, n_observed): observed values; NaN marks a missing value.
    - `observed`: the model state observed in each column (names), or a function
      ``h(y, params) -> (n_observed,)`` of the state (e.g. a sum of compartments).
    - `names`: a label per column (default: `observed` when those are names).
    - `sigma`: per-point standard deviations (same shape as `values`, or one per column, or
      a number), for weighted least squares; ``None``: unweighted.
    - `y0`: this experiment's initial state by name (others: the model's, or fitted);
      `params`: this experiment's fixed inputs (parameters that differ between experiments).
    - `t0`: the time the initial state refers to (default ``times[0]``).

    Several experiments that share parameters: pass a list of datasets to `simkit.fit`.
    """

    times: Any
    values: Any
    observed: Sequence[str] | Callable
    names: tuple[str, ...] | None = None
    sigma: Any = None
    y0: Mapping[str, float] | None = None
    params: Mapping[str, Any] | None = None
    t0: float | None = None
    name: str = "data"

    def __post_init__(self) -> None:
        times = np.asarray(self.times, dtype=float)
        values = np.asarray(self.values, dtype=float)
        if values.ndim == 1:
            values = values[:, None]
        if times.ndim != 1 or values.shape[0] != times.shape[0]:
            raise ShapeError(f"dataset {self.name!r}: times {times.shape} and values {values.shape} "
                             "must be (n,) and (n, columns)")
        if not np.all(np.diff(times) > 0):
            raise InputError(f"dataset {self.name!r}: times must be strictly increasing")
        if not callable(self.observed):
            observed = tuple(self.observed)
            if len(observed) != values.shape[1]:
                raise ShapeError(f"dataset {self.name!r}: {values.shape[1]} value columns but "
                                 f"{len(observed)} observed states {observed}")
            object.__setattr__(self, "observed", observed)
            names = observed if self.names is None else tuple(self.names)
        else:
            names = tuple(self.names) if self.names is not None else tuple(f"h{i}" for i in range(values.shape[1]))
        sigma = None
        if self.sigma is not None:
            sigma = np.broadcast_to(np.asarray(self.sigma, dtype=float), values.shape).copy()
            if not np.all(sigma[np.isfinite(values)] > 0):
                raise InputError(f"dataset {self.name!r}: sigma must be positive where values are given")
        if not np.any(np.isfinite(values)):
            raise InputError(f"dataset {self.name!r}: no finite values")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "t0", float(times[0]) if self.t0 is None else float(self.t0))

    @property
    def mask(self) -> np.ndarray:
        """(n_times, n_observed) True where a value is given."""
        return np.isfinite(self.values)

    @property
    def n_points(self) -> int:
        return int(self.mask.sum())

    @classmethod
    def from_csv(cls, path: str, *, time: str, columns: Mapping[str, str], sigma: Mapping[str, str] | None = None,
                 time_offset: float | None = None, **kwargs: Any) -> Dataset:
        """Read named columns: ``columns`` maps a CSV column to the model state it observes;
        ``sigma`` maps a CSV column of standard deviations to its state. Lines starting with
        ``#`` are comments. ``time_offset`` is subtracted from the times (default: the first
        time, so the data start at t = 0)."""
        import csv

        with open(path, encoding="utf-8") as fh:
            rows = [row for row in csv.reader(line for line in fh if not line.lstrip().startswith("#")) if row]
        header = [h.strip() for h in rows[0]]

        def number(text: str) -> float:
            text = text.strip()
            return float(text) if text not in ("", "NA", "nan", "NaN") else np.nan

        table = {h: np.array([number(r[i]) if i < len(r) else np.nan for r in rows[1:]]) for i, h in enumerate(header)}
        missing = [c for c in [time, *columns, *(sigma or {})] if c not in header]
        if missing:
            raise InputError(f"{path}: no column(s) {missing}; the file has {list(header)}")
        times = np.asarray(table[time], dtype=float)
        offset = times[0] if time_offset is None else time_offset
        values = np.stack([table[c] for c in columns], axis=1)
        sig = None
        if sigma:
            by_state = {state: np.asarray(table[col]) for col, state in sigma.items()}
            sig = np.stack([by_state.get(state, np.ones_like(times)) for state in columns.values()], axis=1)
        return cls(times=times - offset, values=values, observed=tuple(columns.values()),
                   names=tuple(columns), sigma=sig, **kwargs)
