"""Results out of Python: provenance attributes, CF units, and NetCDF/zarr `save`/`load`.

Every result type (`Solution`, `EnsembleSolution`, `FieldSolution`, `FitResult`) builds its
``xarray.Dataset`` with `to_xarray()`; this module holds what they share:

- `provenance`: the global attributes that say where a result came from (simkit, jax and
  diffrax versions, model name, source and parameters, solver, tolerances, status, y0, the
  creation date in ISO 8601 UTC), encoded for NetCDF (`encode_attrs`: dicts and lists become
  JSON strings; NetCDF attributes hold only strings, numbers and 1-D numeric arrays).
- `units_for`: CF ``units`` of a variable from a model's ``units``.
- `save` / `load`: NetCDF through h5netcdf (``.nc``), zarr (``.zarr``) when it is installed.
"""

from __future__ import annotations

import datetime
import json
import os
import re
from collections.abc import Mapping
from importlib import metadata
from typing import Any

import numpy as np

from ._file_integrity import check_zarr_chunks, describe_unreadable, find_damaged_chunk, write_new
from .errors import DependencyError, InputError, InputTypeError

CONVENTIONS = "CF-1.10"
NETCDF_SUFFIXES = (".nc", ".nc4", ".netcdf")
ZARR_SUFFIX = ".zarr"
JSON_ATTRS = ("parameters", "state_names", "stats", "hints", "model_units", "varied_parameters",
              "component_names", "diagnostic_names", "limits", "y0", "y_final", "dataset_overrides",
              "grid_shape", "grid_lower", "grid_upper")
"""Global attributes written as JSON strings (decode them with `decode_attrs`)."""


def require_xarray(owner: str) -> Any:
    """The ``xarray`` module, imported on first use; a clear error when it is missing.

    Parameters
    ----------
    owner : str
        What needs xarray (e.g. ``"Solution.to_xarray()"``), named in the error message.

    Returns
    -------
    module
        ``xarray``.

    Raises
    ------
    DependencyError
        xarray is not installed (it is a dependency of simkit-jax, so only a broken
        environment lacks it); the message names ``owner`` and the ``pip install`` that fixes it.

    Examples
    --------
    >>> from simkit.io import require_xarray
    >>> xr = require_xarray("my_result.to_xarray()")
    >>> xr.__name__
    'xarray'
    """
    try:
        import xarray
    except ImportError:
        raise DependencyError(f"{owner} needs xarray, a dependency of simkit-jax that is missing here: "
                              "pip install xarray") from None
    return xarray


# -- attributes ----------------------------------------------------------------------------------
def to_jsonable(value: Any) -> Any:
    """``value`` with NumPy/JAX arrays and scalars turned into lists and Python numbers,
    ready for ``json.dumps``.

    Mappings become dicts with string keys and tuples become lists, recursively; strings,
    bools, ints, floats (``numpy.float64`` is one) and ``None`` are kept; other boolean,
    integer and real arrays and scalars (NumPy or JAX) become Python numbers or (nested)
    lists of them; complex ones become ``{"real": ..., "imag": ...}``; anything else
    becomes its ``str``.

    Parameters
    ----------
    value : object
        A parameter value, a state, a nested dict or list of them, ...

    Returns
    -------
    object
        The same structure made of dicts, lists, strings, numbers, bools and ``None``. Never
        raises: what NumPy cannot turn into a numeric array is written as its text.

    Examples
    --------
    >>> import numpy as np
    >>> from simkit.io import to_jsonable
    >>> to_jsonable({"n": np.int64(3), "y0": np.array([0.5, 2.0]), "z": (1j, None)})
    {'n': 3, 'y0': [0.5, 2.0], 'z': [{'real': 0.0, 'imag': 1.0}, None]}
    """
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    try:
        arr = np.asarray(value)
    except Exception:  # an object NumPy cannot hold: its text
        return str(value)
    if arr.dtype.kind == "c":
        return {"real": to_jsonable(arr.real), "imag": to_jsonable(arr.imag)}
    if arr.dtype.kind in "biuf":
        return arr.tolist()
    return str(value)


def encode_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes NetCDF can store: ``None`` dropped, bools as 0/1, strings and real numbers
    as they are, 1-D real arrays of two or more values as arrays, everything else (dicts,
    lists, nested arrays, an array of one value, which NetCDF would give back as a number)
    as a JSON string.

    Parameters
    ----------
    attrs
        Attribute names and values.

    Returns
    -------
    dict
        The encoded attributes.

    Examples
    --------
    >>> encode_attrs({"rtol": 1e-6, "parameters": {"rho": 28.0}, "ok": True, "gone": None})
    {'rtol': 1e-06, 'parameters': '{"rho": 28.0}', 'ok': 1}
    """
    out: dict[str, Any] = {}
    for name, value in attrs.items():
        if value is None:
            continue
        if isinstance(value, (bool, np.bool_)):
            out[name] = int(value)
        elif isinstance(value, str):
            out[name] = value
        elif isinstance(value, (int, float, np.integer, np.floating)):
            out[name] = value.item() if isinstance(value, np.generic) else value
        elif isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "iuf" and value.size > 1:
            out[name] = value
        else:
            out[name] = json.dumps(to_jsonable(value))
    return out


def decode_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes of a loaded result with the JSON ones (`JSON_ATTRS`) decoded.

    Parameters
    ----------
    attrs
        ``dataset.attrs`` of a dataset written by simkit.

    Returns
    -------
    dict
        A copy of ``attrs``; ``parameters``, ``state_names``, ``stats``, ... as Python objects.

    Examples
    --------
    >>> decode_attrs({"parameters": '{"rho": 28.0}', "solver": "simkit.Tsit5()"})
    {'parameters': {'rho': 28.0}, 'solver': 'simkit.Tsit5()'}
    """
    out = dict(attrs)
    for name in JSON_ATTRS:
        value = out.get(name)
        if isinstance(value, str):
            try:
                out[name] = json.loads(value)
            except json.JSONDecodeError:
                pass  # free text (e.g. a model's units sentence)
    return out


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def utc_now() -> str:
    """The present as ISO 8601 UTC, to the second: the ``date_created`` of a result.

    Returns
    -------
    str
        ``YYYY-MM-DDThh:mm:ssZ``, e.g. ``2026-01-31T12:00:00Z``.

    Examples
    --------
    >>> import datetime
    >>> from simkit.io import utc_now
    >>> now = utc_now()
    >>> len(now), now[10], now[-1]
    (20, 'T', 'Z')
    >>> datetime.datetime.strptime(now, "%Y-%m-%dT%H:%M:%SZ").year >= 2024
    True
    """
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def provenance(kind: str, *, model_name: str, model_source: str = "", model_units: Any = "",
               parameters: Mapping[str, Any] | None = None, solver: str = "", rtol: Any = None,
               atol: Any = None, status: str = "", status_code: Any = None, y0: Any = None,
               extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Global attributes of a result dataset: where it came from, encoded for NetCDF.

    Parameters
    ----------
    kind
        The result type (``"Solution"``, ``"EnsembleSolution"``, ``"FieldSolution"``,
        ``"FitResult"``), stored as ``simkit_result``.
    model_name, model_source, model_units
        The model's ``name``, ``source`` (citation) and ``units``.
    parameters
        Parameter values by name (stored as a JSON string).
    solver, rtol, atol
        The method and its tolerances (``None``: not applicable, omitted).
    status, status_code
        The outcome in words and its code.
    y0
        The initial state, where one applies.
    extra
        More attributes of this result type.

    Returns
    -------
    dict
        Attributes: ``Conventions``, ``title``, ``history``, ``simkit_result``,
        ``simkit_version``, ``jax_version``, ``diffrax_version``, ``model``, ``model_source``,
        ``model_units``, ``parameters``, ``solver``, ``rtol``, ``atol``, ``status``,
        ``status_code``, ``y0``, ``date_created`` and ``extra``'s.

    Examples
    --------
    >>> attrs = provenance("Solution", model_name="lorenz", parameters={"rho": 28.0}, rtol=1e-6)
    >>> attrs["parameters"], attrs["simkit_result"]
    ('{"rho": 28.0}', 'Solution')
    """
    from . import __version__

    created = utc_now()
    if y0 is not None:
        y0 = np.asarray(y0)
        y0 = y0 if y0.dtype.kind in "iuf" and y0.ndim == 1 else to_jsonable(y0)
    attrs: dict[str, Any] = {
        "Conventions": CONVENTIONS,
        "title": f"simkit {kind} of model {model_name!r}",
        "history": f"{created}: created by simkit {__version__}",
        "simkit_result": kind,
        "simkit_version": __version__,
        "jax_version": _version("jax"),
        "diffrax_version": _version("diffrax"),
        "model": model_name,
        "model_source": model_source or "",
        "model_units": model_units if isinstance(model_units, str) else to_jsonable(model_units),
        "parameters": dict(parameters) if parameters is not None else None,
        "solver": solver,
        "rtol": None if rtol is None else float(np.asarray(rtol)),
        # (one per state: a 1-D array; a single state's, a number)
        "atol": None if atol is None else (float(np.asarray(atol)) if np.size(atol) == 1
                                           else np.asarray(atol, float)),
        "status": status,
        "status_code": None if status_code is None else int(np.asarray(status_code)),
        "y0": y0,
        "date_created": created,
    }
    attrs.update(extra or {})
    return encode_attrs(attrs)


# -- units ---------------------------------------------------------------------------------------
_TIME_NAMES = ("t", "time")


def parse_units(units: Any) -> dict[str, str]:
    """A model's ``units`` as ``{name: unit}``.

    A mapping is taken as it is; free text of the library's form ``"time in days, V in mV"``
    is read phrase by phrase (``<name> in <unit>``, separated by commas or semicolons);
    anything else gives no entry.

    Parameters
    ----------
    units
        ``model.units``: a string or a mapping ``name -> unit``.

    Returns
    -------
    dict
        Units by variable name (``"time"`` for the time axis).

    Examples
    --------
    >>> parse_units("V in mV, time in ms")
    {'V': 'mV', 'time': 'ms'}
    """
    if isinstance(units, Mapping):
        return {str(k): str(v) for k, v in units.items()}
    found: dict[str, str] = {}
    if isinstance(units, str):
        for phrase in re.split(r"[,;]", units):
            match = re.fullmatch(r"\s*(\S+) in (.+?)\s*", phrase)
            if match:
                found[match.group(1)] = match.group(2)
    return found


def units_for(units: Any, name: str) -> str | None:
    """The CF ``units`` of variable ``name`` from a model's ``units`` (see `parse_units`).

    Parameters
    ----------
    units : str or mapping
        ``model.units``: free text such as ``"time in days, V in mV"`` or a mapping
        ``name -> unit``.
    name : str
        A state, component or coordinate name; ``"t"`` and ``"time"`` both name the time
        axis (whichever of the two the model's ``units`` use).

    Returns
    -------
    str or None
        The unit as the model writes it, or ``None`` when the model does not say (a unit
        is never guessed).

    Examples
    --------
    >>> units_for("time in days, states as fractions of the population", "t")
    'days'
    >>> units_for({"V": "mV"}, "V"), units_for({"V": "mV"}, "m")
    ('mV', None)
    """
    table = parse_units(units)
    if name in _TIME_NAMES:
        return next((table[k] for k in _TIME_NAMES if k in table), None)
    return table.get(name)


def variable_attrs(long_name: str, units: str | None = None, **more: Any) -> dict[str, Any]:
    """CF attributes of one variable: ``long_name``, and ``units`` where known.

    Parameters
    ----------
    long_name : str
        What the variable is, in words (CF ``long_name``).
    units : str, optional
        Its CF ``units`` (e.g. from `units_for`); ``None`` or ``""``: omitted, since an
        unknown unit is not written.
    **more
        Further attributes (``standard_name``, ``axis``, ...); those that are ``None`` are
        omitted.

    Returns
    -------
    dict
        ``{"long_name": ..., "units": ..., **more}`` without the omitted entries, for an
        ``xarray`` variable's ``attrs``.

    Examples
    --------
    >>> from simkit.io import variable_attrs
    >>> variable_attrs("time", "days", axis="T", standard_name=None)
    {'long_name': 'time', 'units': 'days', 'axis': 'T'}
    >>> variable_attrs("state x")
    {'long_name': 'state x'}
    """
    attrs: dict[str, Any] = {"long_name": long_name}
    if units:
        attrs["units"] = units
    attrs.update({k: v for k, v in more.items() if v is not None})
    return attrs


def check_names(names: Any, reserved: Any, what: str) -> None:
    """Refuse variable names that clash with a coordinate or another variable of the dataset.

    What a result's ``to_xarray()`` checks before it builds its dataset, so that a state
    named like a coordinate (``t``, ``x``, ...) fails with a message instead of silently
    replacing it.

    Parameters
    ----------
    names : iterable of str
        The names about to become variables (e.g. the model's state names).
    reserved : iterable of str
        The names already taken (coordinates, other variables).
    what : str
        What ``names`` are, for the message (e.g. ``"state names"``).

    Returns
    -------
    None
        When no name clashes.

    Raises
    ------
    InputError
        Some of ``names`` are in ``reserved``; the message lists them.

    Examples
    --------
    >>> from simkit.io import check_names
    >>> check_names(["S", "I", "R"], ["t"], "state names")  # no clash: nothing happens
    >>> check_names(["t", "x"], ["t"], "state names")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    simkit.errors.InputError: to_xarray(): state names ['t'] clash with the dataset's ...
    """
    clash = sorted(set(names) & set(reserved))
    if clash:
        raise InputError(f"to_xarray(): {what} {clash} clash with the dataset's coordinates or variables "
                         f"{sorted(reserved)}; rename them in the model to export")


# -- files ---------------------------------------------------------------------------------------
def _format(path: str | os.PathLike) -> str:
    text = os.fspath(path)
    lower = text.rstrip("/\\").lower()
    if lower.endswith(ZARR_SUFFIX):
        return "zarr"
    if lower.endswith(NETCDF_SUFFIXES):
        return "netcdf"
    suffix = os.path.splitext(lower)[1] or "(none)"
    raise InputError(f"cannot tell the file format of {text!r} from its suffix {suffix}: use "
                     f"{', '.join(NETCDF_SUFFIXES)} for NetCDF or {ZARR_SUFFIX} for zarr")


ZARR_MARKERS = (".zgroup", ".zarray", "zarr.json")
"""Files at the top of a zarr store (format 2: ``.zgroup``/``.zarray``; format 3: ``zarr.json``)."""


def check_target(path: str | os.PathLike, kind: str, owner: str) -> None:
    """Refuse, before any work, a path that a result cannot be written to without harm.

    Writing replaces what is at the path: a file, or for zarr a whole folder. A folder at a
    NetCDF path, or a non-empty folder that is not a zarr store at a ``.zarr`` path, is
    someone's data (it was deleted with everything in it; found by probing), and a missing
    folder gave HDF5's own message.

    Parameters
    ----------
    path : str or os.PathLike
        Where the result is to be written.
    kind : str
        ``"netcdf"`` or ``"zarr"`` (from the suffix).
    owner : str
        What is writing (e.g. ``"save()"``), named in the message.

    Raises
    ------
    InputError
        The folder the path lies in does not exist or is not writable; a folder at a NetCDF
        path; a non-empty folder that is not a zarr store at a zarr path.

    Examples
    --------
    >>> import os, tempfile
    >>> from simkit.io import check_target
    >>> folder = tempfile.mkdtemp()
    >>> check_target(os.path.join(folder, "run.nc"), "netcdf", "save()")  # fine: nothing happens
    >>> check_target(os.path.join(folder, "runs", "run.nc"), "netcdf", "save()")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    simkit.errors.InputError: save(): the folder '.../runs' of '.../runs/run.nc' does not exist; create it first
    >>> check_target(folder, "netcdf", "save()")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    simkit.errors.InputError: save(): '...' is a folder, not a file; it is left alone (choose a file name)
    """
    text = os.fspath(path).rstrip("/\\") or os.fspath(path)
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise InputError(f"{owner}: the folder {folder!r} of {text!r} does not exist; create it first")
    if not os.access(folder, os.W_OK | os.X_OK):  # h5py's PermissionError came wrapped in xarray's KeyError
        raise InputError(f"{owner}: the folder {folder!r} of {text!r} is not writable (permission denied); "
                         "choose a folder you can write to")
    if not os.path.isdir(text):
        return
    if kind == "netcdf":
        raise InputError(f"{owner}: {text!r} is a folder, not a file; it is left alone (choose a file name)")
    if os.listdir(text) and not any(os.path.exists(os.path.join(text, m)) for m in ZARR_MARKERS):
        raise InputError(f"{owner}: {text!r} is a folder that is not a zarr store; it is left alone (writing "
                         "a store there would replace everything in it): choose another path")


def check_variable_names(names: Any, path: str | os.PathLike) -> None:
    """Refuse variable names that a file cannot hold: a ``/`` separates groups in NetCDF-4
    (HDF5) and zarr, so a state named ``"N/P"`` went into a group ``N`` of a zarr store and
    was missing from the dataset read back (found by probing; NetCDF raised xarray's error).

    Parameters
    ----------
    names : iterable of str
        The names about to be written (a dataset's variables and dimensions, a model's
        state names).
    path : str or os.PathLike
        Where (named in the message).

    Raises
    ------
    InputError
        A variable or dimension name holds ``/``; the message lists them.

    Examples
    --------
    >>> from simkit.io import check_variable_names
    >>> check_variable_names(["N", "P", "t"], "run.nc")  # fine: nothing happens
    >>> check_variable_names(["N/P", "t"], "run.zarr")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    simkit.errors.InputError: cannot write variables ['N/P'] to 'run.zarr': a '/' in a name separates ...
    """
    bad = sorted({str(n) for n in names if "/" in str(n)})
    if bad:
        raise InputError(f"cannot write variables {bad} to {os.fspath(path)!r}: a '/' in a name separates groups "
                         "in NetCDF-4 and zarr files; rename them (e.g. the model's state_names)")


def _require_zarr() -> None:
    try:
        import zarr  # noqa: F401
    except ImportError:
        raise DependencyError("a .zarr path needs the zarr package, which is not installed: pip install zarr "
                              "(or save to a .nc file: NetCDF through h5netcdf needs nothing more)") from None


def save(dataset: Any, path: str | os.PathLike) -> str:
    """Write a result's dataset to ``path``: NetCDF-4 (``.nc``, ``.nc4``, ``.netcdf``, through
    h5netcdf) or zarr (``.zarr``, when zarr is installed). An existing file is replaced.

    The file is written under a temporary name (``<path>.partial``) and renamed when complete,
    so a crash leaves the old file or the new one, never half of one (a zarr store replacing
    another: the new one, whole, at ``<path>.partial`` in a crash between removing the old
    one and the rename), and a file open from
    ``load(path, lazy=True)`` keeps reading its old contents. Every chunk carries a checksum,
    so damage is found when the file is read (`simkit._file_integrity`).

    Parameters
    ----------
    dataset
        An ``xarray.Dataset`` (a result's ``to_xarray()``).
    path
        Where to write; the suffix chooses the format.

    Returns
    -------
    str
        ``path``.

    Raises
    ------
    InputError
        The suffix is not one of the formats above, the data are complex (NetCDF has no
        complex type: save the real and imaginary parts), a name holds ``/``
        (`check_variable_names`), or the path cannot be written
        without harm (`check_target`: its folder is missing; a folder is at a ``.nc`` path,
        or a folder that is not a zarr store at a ``.zarr`` path; its folder is not
        writable), or the operating system refuses the write (the message gives its reason).
    DependencyError
        A ``.zarr`` path without zarr installed.

    Examples
    --------
    >>> import simkit
    >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11)
    >>> simkit.io.save(sol.to_xarray(), "lorenz.nc")  # the same as sol.save("lorenz.nc")
    'lorenz.nc'
    """
    xr = require_xarray("saving a result")
    if not isinstance(dataset, xr.Dataset):
        raise InputTypeError(f"save() expects an xarray.Dataset (a result's to_xarray()), got "
                             f"{type(dataset).__name__}")
    kind = _format(path)
    check_target(path, kind, "save()")
    check_variable_names([*dataset.variables, *dataset.dims], path)
    complex_vars = [name for name, v in dataset.variables.items() if v.dtype.kind == "c"]
    if complex_vars:
        raise InputError(f"cannot save complex variables {complex_vars} to {os.fspath(path)!r}: NetCDF has no "
                         "complex type; save the real and imaginary parts as variables of their own")
    if kind == "zarr":
        _require_zarr()
    write_new(dataset, path, kind, "save()")
    return os.fspath(path)


def load(path: str | os.PathLike, *, lazy: bool = False) -> Any:
    """Read a result written by ``save`` (of any result type) into memory.

    Parameters
    ----------
    path
        A NetCDF file (``.nc``, ``.nc4``, ``.netcdf``) or a zarr store (``.zarr``).
    lazy
        Open the file and read values only when they are used (for results larger than
        memory, such as a long run of `simkit.stencil.integrate_to_file`); close the dataset
        (``ds.close()`` or ``with simkit.load(path, lazy=True) as ds:``) when done.

    Returns
    -------
    xarray.Dataset
        The values as they were saved, bit for bit (times are not decoded into dates),
        with the provenance in ``.attrs``: ``simkit_result`` (which result type),
        ``simkit_version``, ``jax_version``, ``diffrax_version``, ``model``,
        ``model_source``, ``model_units``, ``parameters``, ``solver``, ``rtol``, ``atol``,
        ``status``, ``date_created``, ... JSON-valued attributes (``parameters``,
        ``state_names``, ...) are strings: `decode_attrs` turns them into Python objects.

    Raises
    ------
    FileNotFoundError
        Nothing at ``path``.
    InputError
        A suffix that names no supported format; a file that is not of that format, or a
        NetCDF-3 file (the message says how to convert it); a zarr store with a chunk missing
        (it would read as NaN values); a chunk that fails its checksum or does not decode
        (the message names the variable and the chunk; with ``lazy=True``, found when the
        values are read, as the codec's own error).
    DependencyError
        A ``.zarr`` store without zarr installed.

    Examples
    --------
    >>> import simkit
    >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11)
    >>> sol.save("lorenz.nc")
    'lorenz.nc'
    >>> ds = simkit.load("lorenz.nc")
    >>> ds["x"].shape, ds.attrs["model"]
    ((11,), 'lorenz')
    """
    xr = require_xarray("simkit.load")
    kind = _format(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"simkit.load: no such file or directory: {os.fspath(path)!r}")
    options = {"decode_times": False, "decode_timedelta": False}
    if kind == "zarr":
        _require_zarr()
    try:
        if kind == "zarr":
            ds = xr.open_zarr(os.fspath(path), consolidated=False, **options)
        else:
            ds = xr.open_dataset(os.fspath(path), engine="h5netcdf", **options)
    # h5py's "file signature not found" named neither file nor cause; a damaged header raised a bare
    # KeyError ("bad object header version number")
    except (OSError, ValueError, KeyError, RuntimeError, TypeError) as err:
        raise InputError(describe_unreadable(path, kind, err, "simkit.load")) from None
    if kind == "zarr":
        try:
            check_zarr_chunks(path, "simkit.load")  # a missing chunk read as NaN values
        except BaseException:
            ds.close()
            raise
    if lazy:
        return ds
    with ds:
        try:
            return ds.load()
        except Exception as err:  # noqa: BLE001 - a failed checksum or a torn block, from any codec
            where = find_damaged_chunk(path, kind) or f"a chunk ({type(err).__name__}: {err})"
            raise InputError(f"simkit.load: {os.fspath(path)!r} is damaged: {where} cannot be read") from None


class Saveable:
    """``save(path)`` for a result type with a ``to_xarray()``: one implementation for
    `Solution`, `EnsembleSolution`, `FieldSolution` and `FitResult`.

    A mixin: it takes no arguments. A subclass defines ``to_xarray()`` (returning an
    ``xarray.Dataset``) and inherits `save`, which writes that dataset with
    `simkit.io.save` (NetCDF or zarr, chosen by the suffix); `simkit.load` reads it back.

    Examples
    --------
    >>> import xarray as xr
    >>> import simkit
    >>> from simkit.io import Saveable
    >>> class Table(Saveable):
    ...     def to_xarray(self):
    ...         return xr.Dataset({"v": ("i", [1.0, 2.0])}, attrs={"title": "a table"})
    >>> Table().save("table.nc")
    'table.nc'
    >>> simkit.load("table.nc")["v"].values.tolist()
    [1.0, 2.0]
    """

    def save(self, path: Any) -> str:
        """Write `to_xarray` to ``path``: NetCDF (``.nc``) or zarr (``.zarr``, when installed).

        Parameters
        ----------
        path
            The file; its suffix chooses the format (`simkit.io.save`).

        Returns
        -------
        str
            ``path``. Read it back with `simkit.load`.

        Raises
        ------
        InputError
            An unknown suffix. `DependencyError`: a ``.zarr`` path without zarr.

        Examples
        --------
        >>> import simkit
        >>> simkit.solve(simkit.models.get("sir"), saveat=11).save("sir.nc")
        'sir.nc'
        """
        return save(self.to_xarray(), path)
