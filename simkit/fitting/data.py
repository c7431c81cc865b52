"""`Dataset`: observations of a model's states (or of a function of them) at given times."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError, InputTypeError, ShapeError
from ..params import is_traced


@dataclasses.dataclass(frozen=True, eq=False)
class Dataset:
    """Observations of one experiment.

    Several experiments that share parameters: pass a list of datasets to `simkit.fit`.
    `from_csv` reads one from a file. The fields are also attributes (stored normalised:
    float arrays, ``values`` 2-D, ``sigma`` broadcast to ``values``' shape, ``t0`` a float).

    Parameters
    ----------
    times : array_like
        Observation times, shape ``(n_times,)``, strictly increasing (the model's time unit).
    values : array_like
        Observed values, shape ``(n_times, n_observed)`` (or ``(n_times,)`` for one
        column); NaN marks a missing value.
    observed : sequence of str or callable
        The model state observed in each column (names), or a function
        ``h(y, params) -> (n_observed,)`` of the state (e.g. a sum of compartments).
    names : sequence of str, optional
        A label per column (default: `observed` when those are names, else ``h0, h1, ...``).
    sigma : float or array_like, optional
        Per-point standard deviations (same shape as `values`, or one per column, or a
        number), for weighted least squares; ``None``: unweighted.
    y0 : dict, optional
        This experiment's initial state by name (others: the model's, or fitted).
    params : dict, optional
        This experiment's fixed inputs (parameters that differ between experiments).
    t0 : float, optional
        The time the initial state refers to (default ``times[0]``).
    name : str
        A label for messages and plots (default ``"data"``).

    Raises
    ------
    ShapeError
        ``times`` not 1-D or not as long as ``values``, a number of `observed` names other
        than the number of columns, or a `sigma` that does not broadcast to ``values``.
    InputError
        Times not finite or not strictly increasing, times before `t0`, an infinite value, a
        `sigma` that is not positive where values are given, or no finite value at all.
    InputTypeError
        `observed` given as a string (a state name goes in a tuple: ``("S",)``), or values
        traced by ``jax.jit``, ``jax.grad`` or ``jax.vmap`` (build a Dataset outside them).

    Examples
    --------
    >>> import numpy as np, simkit
    >>> data = simkit.Dataset(times=[0.0, 1.0, 2.0], values=[[10.0, np.nan], [8.0, 1.5], [6.5, 2.5]],
    ...                       observed=("S", "I"), sigma=0.1)
    >>> data.values.shape, data.n_points, data.t0
    ((3, 2), 5, 0.0)
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
    t0_defaulted: bool = dataclasses.field(default=False, init=False, repr=False)  # t0 is times[0], not given

    def __post_init__(self) -> None:
        if is_traced(self.times, self.values, self.sigma, self.t0, dict(self.y0 or {}), dict(self.params or {})):
            # (NumPy's TracerArrayConversionError before)
            raise InputTypeError(f"dataset {self.name!r}: a Dataset holds observations as NumPy arrays and is built "
                                 "outside jax.jit, jax.grad and jax.vmap, as simkit.fit runs; here its values are "
                                 "traced. Build it before the transform; to differentiate through solves, transform "
                                 "a function that calls simkit.solve")
        times = np.asarray(self.times, dtype=float)
        values = np.asarray(self.values, dtype=float)
        if values.ndim == 1:
            values = values[:, None]
        if times.ndim != 1 or values.shape[0] != times.shape[0]:
            raise ShapeError(f"dataset {self.name!r}: times {times.shape} and values {values.shape} "
                             "must be (n,) and (n, columns)")
        if not np.all(np.isfinite(times)):
            raise InputError(f"dataset {self.name!r}: times must be finite; rows "
                             f"{np.flatnonzero(~np.isfinite(times)).tolist()[:10]} are not")
        if not np.all(np.diff(times) > 0):
            raise InputError(f"dataset {self.name!r}: times must be strictly increasing")
        infinite = np.isinf(values)
        if infinite.any():  # NaN marks a missing value; an infinity is a mistake upstream
            raise InputError(f"dataset {self.name!r}: values must be finite or NaN (missing); infinite at rows "
                             f"{sorted(set(np.nonzero(infinite)[0].tolist()))[:10]}")
        if isinstance(self.observed, (str, bytes)):  # tuple("prey") was ('p', 'r', 'e', 'y')
            raise InputTypeError(f"dataset {self.name!r}: observed must be a sequence of state names (one per "
                                 f"column), e.g. ({self.observed!r},), or a function; got the string {self.observed!r}")
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
            given = np.asarray(self.sigma, dtype=float)
            try:
                sigma = np.broadcast_to(given, values.shape).copy()
            except ValueError:
                raise ShapeError(f"dataset {self.name!r}: sigma has shape {given.shape}; it must be one per point "
                                 f"{values.shape}, one per column ({values.shape[-1]},) or a scalar") from None
            if not np.all(sigma[np.isfinite(values)] > 0):
                raise InputError(f"dataset {self.name!r}: sigma must be positive where values are given")
        if not np.any(np.isfinite(values)):
            raise InputError(f"dataset {self.name!r}: no finite values")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "sigma", sigma)
        t0 = float(times[0]) if self.t0 is None else float(self.t0)
        if not np.isfinite(t0) or times[0] < t0:  # the solve starts at t0 (the fit failed as "non-finite cost")
            raise InputError(f"dataset {self.name!r}: observation times start at {times[0]:g}, before t0 = {t0:g} "
                             "(the time the initial state refers to): give t0 <= the first time")
        object.__setattr__(self, "t0_defaulted", self.t0 is None)  # (read by `simkit.fit`'s warning)
        object.__setattr__(self, "t0", t0)

    @property
    def mask(self) -> np.ndarray:
        """Where a value is given (not NaN).

        Returns
        -------
        numpy.ndarray
            Booleans, shape ``(n_times, n_observed)``.

        Examples
        --------
        >>> import numpy as np, simkit
        >>> simkit.Dataset([0.0, 1.0], [[1.0, np.nan], [2.0, 3.0]], observed=("S", "I")).mask.tolist()
        [[True, False], [True, True]]
        """
        return np.isfinite(self.values)

    @property
    def n_points(self) -> int:
        """Number of observed values (missing ones not counted).

        Returns
        -------
        int
            ``mask.sum()``.

        Examples
        --------
        >>> import numpy as np, simkit
        >>> simkit.Dataset([0.0, 1.0], [[1.0, np.nan], [2.0, 3.0]], observed=("S", "I")).n_points
        3
        """
        return int(self.mask.sum())

    @classmethod
    def from_csv(cls, path: str, *, time: str, columns: Mapping[str, str], sigma: Mapping[str, str] | None = None,
                 time_offset: Any = None, time_format: str | None = None, time_unit: str = "days",
                 delimiter: str | None = None, **kwargs: Any) -> Dataset:
        """Read a dataset from the named columns of a CSV file (other columns are ignored).

        The file is UTF-8, with or without a byte-order mark; lines starting with ``#`` are
        comments; the first other line names the columns. Empty cells and ``NA``, ``N/A``,
        ``NaN``, ``null`` are missing values (NaN). In a file separated by ``;`` (or tab or
        ``|``), a decimal comma (``1,5``) reads as a decimal point. Errors name the file, the
        column and the line.

        Parameters
        ----------
        path : str or os.PathLike
            The CSV file.
        time : str
            The column of observation times: numbers (the model's time unit, kept as written)
            or dates and times (ISO 8601, ``2020-03-01`` or ``2020-03-01 12:00``, or
            ``time_format``), which become days since the first one (``time_unit`` to choose
            another unit; ``time_offset`` another origin).
        columns : dict
            ``{CSV column: model state it observes}``.
        sigma : dict, optional
            ``{CSV column of standard deviations: state}``, one for every value column; where
            several value columns observe one state (replicates), ``{sigma column: value
            column}``.
        time_offset : float, str or datetime, optional
            Subtracted from numeric times (default: none, the times as written; ``"first"``:
            the first time, so the data start at t = 0); for dates, the date of t = 0 (a
            ``datetime`` or an ISO string; default and ``"first"``: the first date).
        time_format : str, optional
            A ``datetime.strptime`` format for dates that are not ISO 8601 (e.g.
            ``"%d/%m/%Y"``).
        time_unit : {"days", "weeks", "hours", "minutes", "seconds"}
            The unit of times read from dates (default ``"days"``).
        delimiter : str, optional
            The field separator (default: sniffed among ``,`` ``;`` tab and ``|``).
        **kwargs
            Passed to `Dataset` (``name`` defaults to the file's name).

        Returns
        -------
        Dataset
            One column per entry of `columns`, in that order, named by the CSV columns.

        Raises
        ------
        InputError
            The file is not UTF-8, has no header or no data, `columns` is empty, lacks a named
            column or repeats one, has a row longer than the header, a cell that is not a number, a missing
            or non-increasing time, a date that does not parse, a `time_offset` of the
            wrong kind, an unknown `time_unit`, sigma columns for unobserved states or for
            some value columns only; and
            `Dataset`'s own checks.
        InputTypeError
            `columns` or `sigma` not a mapping, `time` not a string.
        OSError
            The file cannot be opened.

        Examples
        --------
        >>> import os, tempfile, simkit
        >>> path = os.path.join(tempfile.mkdtemp(), "cases.csv")
        >>> with open(path, "w") as f:
        ...     _ = f.write("# daily cases\\nday,cases\\n2020-03-01,1\\n2020-03-03,4\\n2020-03-04,NA\\n")
        >>> data = simkit.Dataset.from_csv(path, time="day", columns={"cases": "I"})
        >>> data.times.tolist(), data.values[:, 0].tolist(), data.name
        ([0.0, 2.0, 3.0], [1.0, 4.0, nan], 'cases.csv')
        >>> with open(path, "w") as f:
        ...     _ = f.write("day,cases\\n1,3\\n2,8\\n")
        >>> simkit.Dataset.from_csv(path, time="day", columns={"cases": "I"}).times.tolist()  # as written
        [1.0, 2.0]
        """
        import csv
        import os

        where = os.fspath(path)
        if not isinstance(time, str):
            raise InputTypeError(f"{where}: time must be the name of the time column (a string), got {time!r}")
        for label, given in (("columns", columns), ("sigma", sigma)):
            if given is not None and not isinstance(given, Mapping):
                raise InputTypeError(f"{where}: {label} must be a dict {{CSV column: state}}, got {given!r:.80}")
        try:
            with open(path, encoding="utf-8-sig", newline="") as fh:
                lines = [(number, line) for number, line in enumerate(fh, start=1)
                         if line.strip() and not line.lstrip().startswith("#")]
        except UnicodeDecodeError as err:
            raise InputError(f"{where}: not UTF-8 text ({err.reason} at byte {err.start})") from None
        if not lines:
            raise InputError(f"{where}: no header line and no data (only comments or blank lines)")
        if delimiter is None:
            sample = "".join(line for _, line in lines[:50])
            try:
                delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
            except csv.Error:
                delimiter = ","  # one column, or nothing to go by
        reader = csv.reader((line for _, line in lines), delimiter=delimiter)
        rows = []
        for row in reader:
            rows.append((lines[reader.line_num - 1][0], row))  # the file's line number of the row's end
        header = [h.strip() for h in rows[0][1]]
        body = rows[1:]
        if not body:
            raise InputError(f"{where}: a header ({header}) but no data lines")
        if not columns:  # (NumPy's "need at least one array to stack" before)
            raise InputError(f"{where}: columns is empty: name at least one value column and the state it observes, "
                             f"e.g. columns={{{next((h for h in header if h != time), 'cases')!r}: 'I'}}; the file "
                             f"has {header}")
        wanted = [time, *columns, *(sigma or {})]
        missing = [c for c in wanted if c not in header]
        if missing:
            raise InputError(f"{where}: no column(s) {missing}; the file has {header} (delimiter {delimiter!r})")
        repeated = [c for c in dict.fromkeys(wanted) if header.count(c) > 1]
        if repeated:
            raise InputError(f"{where}: column(s) {repeated} appear more than once in the header {header}")
        for number, row in body:
            if len(row) > len(header):
                raise InputError(f"{where}, line {number}: {len(row)} fields but the header names {len(header)} "
                                 f"columns (delimiter {delimiter!r})")
        decimal_comma = delimiter != ","

        def cells(column: str) -> list[tuple[int, str]]:
            i = header.index(column)
            return [(number, row[i].strip() if i < len(row) else "") for number, row in body]

        def numbers(column: str) -> np.ndarray:
            out = []
            for number, text in cells(column):
                value = _number(text, decimal_comma)
                if value is None:
                    raise InputError(f"{where}, line {number}, column {column!r}: {text!r} is not a number")
                out.append(value)
            return np.array(out, dtype=float)

        stamps = cells(time)
        times = _times(where, time, stamps, decimal_comma, time_offset, time_format, time_unit)
        for k in np.flatnonzero(~(np.diff(times) > 0))[:1]:
            (before, earlier), (number, text) = stamps[k], stamps[k + 1]
            raise InputError(f"{where}, line {number}, column {time!r}: times must be strictly increasing "
                             f"({text!r} after {earlier!r} on line {before})")
        values = np.stack([numbers(c) for c in columns], axis=1)
        sig = None
        if sigma:
            by_column: dict[str, Any] = {}  # value column -> its standard deviations
            for col, target in sigma.items():
                if target in columns:  # named by its value column
                    owners = [target]
                else:  # named by the state: the value columns observing it
                    owners = [c for c, state in columns.items() if state == target]
                    if not owners:
                        raise InputError(f"{where}: sigma columns for [{target!r}], which no value column observes "
                                         f"(observed: {list(columns.values())})")
                    if len(owners) > 1:  # replicates: the state does not say which (the last one won, silently)
                        raise InputError(f"{where}: sigma column {col!r} is for state {target!r}, which the value "
                                         f"columns {owners} observe: name the value column it belongs to, e.g. "
                                         f"sigma={{{col!r}: {owners[0]!r}}}")
                if owners[0] in by_column:
                    raise InputError(f"{where}: two sigma columns for the value column {owners[0]!r}")
                by_column[owners[0]] = numbers(col)
            bare = [col for col in columns if col not in by_column]
            if bare:  # a sigma of 1 in the data's units would weight them arbitrarily
                raise InputError(f"{where}: sigma columns for some observed states but not for {bare}: give a "
                                 "sigma column for every value column, or none")
            sig = np.stack([by_column[col] for col in columns], axis=1)
        kwargs.setdefault("name", os.path.basename(where))
        return cls(times=times, values=values, observed=tuple(columns.values()), names=tuple(columns), sigma=sig,
                   **kwargs)


def check_observation(data: Dataset, model: Any) -> None:
    """Check a dataset's observation function against ``model`` before anything compiles:
    ``observed(y, params)`` on the model's state and parameters (traced abstractly, by
    ``jax.eval_shape``: nothing runs) must give one value per column of ``values``.

    Parameters
    ----------
    data : Dataset
        A dataset whose `observed` is a function (names are checked by `simkit.fit`).
    model : ODEModel
        The model it observes.

    Raises
    ------
    ShapeError
        The function gives another shape than ``(n_columns,)`` (a wrong shape was found only
        after the whole fit had run).
    InputError
        The function fails on the model's state and parameters (the message says how).

    Examples
    --------
    >>> import numpy as np, simkit
    >>> from simkit.fitting.data import check_observation
    >>> data = simkit.Dataset([1.0, 2.0], [[3.0], [8.0]], observed=lambda y, p: y[1:2] * 763)
    >>> check_observation(data, simkit.models.get("sir"))
    >>> check_observation(simkit.Dataset([1.0, 2.0], [[3.0], [8.0]], observed=lambda y, p: y[1] * 763),
    ...                   simkit.models.get("sir"))
    Traceback (most recent call last):
    ...
    simkit.errors.ShapeError: dataset 'data': observed(y, params) gives shape (), but the dataset has 1 value column(s): it must give shape (1,), one value per column (e.g. y[1:2] rather than y[1])
    """
    import jax

    columns = data.values.shape[1]
    y = jax.ShapeDtypeStruct(np.shape(model.y0), np.asarray(model.y0).dtype)
    params = {k: jax.ShapeDtypeStruct(np.shape(v), np.result_type(v)) for k, v in model.params.items()}
    try:
        out = jax.eval_shape(data.observed, y, params)
    except Exception as err:  # the user's function: any error, named with the dataset
        raise InputError(f"dataset {data.name!r}: observed(y, params) fails on model {model.name!r}'s state "
                         f"(shape {np.shape(model.y0)}) and parameters: {type(err).__name__}: {err}") from err
    shape = getattr(out, "shape", None)
    if shape != (columns,):
        hint = " (e.g. y[1:2] rather than y[1])" if shape == () and columns == 1 else ""
        raise ShapeError(f"dataset {data.name!r}: observed(y, params) gives "
                         f"{'shape ' + str(shape) if shape is not None else type(out).__name__}, but the dataset has "
                         f"{columns} value column(s): it must give shape ({columns},), one value per column{hint}")


_MISSING = {"", "na", "n/a", "nan", "null"}
_SECONDS = {"days": 86400.0, "weeks": 7 * 86400.0, "hours": 3600.0, "minutes": 60.0, "seconds": 1.0}


def _number(text: str, decimal_comma: bool) -> float | None:
    """The value of a cell (NaN if missing), or None if it is not a number."""
    if text.lower() in _MISSING:
        return np.nan
    if decimal_comma and text.count(",") == 1 and "." not in text:
        text = text.replace(",", ".")
    try:
        return float(text)
    except ValueError:
        return None


def _times(where: str, column: str, cells: list[tuple[int, str]], decimal_comma: bool, offset: Any,
           time_format: str | None, unit: str) -> np.ndarray:
    """Numeric times from a column of numbers or of dates (then in ``unit`` since ``offset``,
    default the first date)."""
    import datetime

    for number, text in cells:
        if text.lower() in _MISSING:
            raise InputError(f"{where}, line {number}, column {column!r}: a missing time")
    numeric = time_format is None and _number(cells[0][1], decimal_comma) is not None  # as the first time is
    if numeric:
        times = []
        for number, text in cells:
            value = _number(text, decimal_comma)
            if value is None:
                raise InputError(f"{where}, line {number}, column {column!r}: {text!r} is not a number (the first "
                                 "time is one)")
            times.append(value)
        times = np.array(times, dtype=float)
        if offset is None:  # the file's times, as written
            return times
        if isinstance(offset, str) and offset == "first":
            return times - times[0]
        if isinstance(offset, bool) or not isinstance(offset, (int, float, np.number)):
            raise InputError(f"{where}: time_offset {offset!r} must be a number or 'first': column {column!r} holds "
                             "numbers")
        return times - float(offset)
    if unit not in _SECONDS:
        raise InputError(f"time_unit must be one of {list(_SECONDS)}, got {unit!r}")

    def parse(text: str) -> datetime.datetime:
        if time_format is not None:
            return datetime.datetime.strptime(text, time_format)
        return datetime.datetime.fromisoformat(text)

    dates = []
    for number, text in cells:
        try:
            dates.append(parse(text))
        except ValueError:
            form = (f"a date in the format {time_format!r}" if time_format else
                    "a number or an ISO 8601 date (YYYY-MM-DD[ HH:MM[:SS]]; time_format= reads others)")
            raise InputError(f"{where}, line {number}, column {column!r}: {text!r} is not {form}") from None
    if offset is None or (isinstance(offset, str) and offset == "first"):
        origin = dates[0]
    elif isinstance(offset, str):
        try:
            origin = parse(offset)
        except ValueError:
            raise InputError(f"time_offset {offset!r} is not a date like those in column {column!r}") from None
    elif isinstance(offset, datetime.datetime):
        origin = offset
    elif isinstance(offset, datetime.date):
        origin = datetime.datetime(offset.year, offset.month, offset.day)
    else:
        raise InputError(f"{where}: column {column!r} holds dates, so time_offset must be a date (a datetime or an "
                         f"ISO string), got {offset!r}")
    try:
        return np.array([(d - origin).total_seconds() / _SECONDS[unit] for d in dates])
    except TypeError:
        raise InputError(f"{where}, column {column!r}: dates with and without a time zone are mixed") from None
