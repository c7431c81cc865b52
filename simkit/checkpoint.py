"""Streaming saved frames to a file in chunks, with a restart state to resume a killed run.

A long run (`simkit.stencil.integrate_to_file`, `simkit.solve_to_file`) computes its saves a
chunk at a time: each chunk is one compiled call, its frames are appended along ``t`` to a
NetCDF file (``.nc``, through h5netcdf, ``t`` an unlimited dimension) or a zarr store
(``.zarr``), and then dropped from memory, so a run holds at most about two chunks of frames.

After each chunk the run's *restart state* (what the next chunk starts from: the field and
time of a stencil run, the whole loop state of an adaptive ODE solve) is written beside the
file, to ``<path>.restart.npz``, atomically (a temporary file renamed over the old one), after
the frames it follows are on disk. A killed run started again with ``resume=True`` (the
default) finds it, checks that it belongs to the same run (the *fingerprint*: model, what
its functions compute (`function_digest`), parameters, initial state, steps, tolerances, chunk
size...; a difference is an error that names it), drops frames written after the last restart
state, and continues: the frames of the resumed run are bit for bit those of the
uninterrupted run, since every chunk is the same compiled program started from the same
numbers. When the run completes, the file's
``checkpoint_complete`` attribute is set and the restart state is removed.

A run killed at any instant leaves either a run that resumes or nothing to resume:

- before or while its first chunk is written: the file is written under ``<path>.partial``
  and renamed when whole, so nothing is at ``path`` (the next call starts afresh and removes
  the partial file);
- after the rename, before the first restart state: a file of an unfinished run with no
  restart state, which the next call replaces (starting afresh);
- while a later chunk is appended, or while the restart state is written (under
  ``<path>.restart.npz.partial``, renamed when whole): the previous restart state stands, and
  the frames after it are dropped on resume;
- between chunks: the run resumes from the last restart state.

On resume the last chunk the restart state follows is read back and compared with its
digest (`frames_digest`), and a zarr store's chunks must all be there: a chunk lost or
damaged since is an error that names it. A restart state that cannot be read is an error that
says so (it is written whole or not at all, so only later damage truncates it). Writes are not
synced to the disk: the guarantees hold for a killed process, not for a power cut.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import _file_integrity as file_integrity
from . import io
from .errors import InputError, SolveError

__all__ = ["FrameFile", "digest", "frames_digest", "params_digest", "restart_path"]

RESTART_SUFFIX = ".restart.npz"
PARTIAL_RESTART = ".partial"
"""Appended to the restart state's name while it is being written (renamed when whole)."""
FINGERPRINT_ATTR = "checkpoint_fingerprint"
COMPLETE_ATTR = "checkpoint_complete"


def digest(*arrays: Any) -> str:
    """A short SHA-256 of arrays' dtypes, shapes and bytes: the fingerprint of a run's inputs.

    What a streamed run records of its initial state and save times (instead of the arrays
    themselves), so that a restart state of a run from other inputs is refused.

    Parameters
    ----------
    *arrays : array_like
        Any number of arrays (or scalars), of any shape; each is hashed as a contiguous
        NumPy array, so a value, its dtype and its shape all change the digest.

    Returns
    -------
    str
        The first 16 hexadecimal digits of the SHA-256 (64 bits).

    Raises
    ------
    ValueError
        An argument NumPy cannot make an array of (e.g. a ragged nested list). Numeric
        arrays only: an object array is hashed by its pointers, not its contents.

    Examples
    --------
    >>> import numpy as np
    >>> from simkit.checkpoint import digest
    >>> len(digest(np.zeros(3))), digest(np.zeros(3)) == digest(np.zeros(3, np.float32))
    (16, False)
    """
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a))
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def function_digest(fn: Callable, *args: Any) -> str:
    """A short SHA-256 of what ``fn`` computes at arguments like ``args``: the text of its
    jaxpr and its constants (values closed over). A streamed run records its rhs (and a
    PDE's linear part, dt rule and diagnostics) this way: an unnamed model is called
    ``'model'``, so its name alone let a changed rhs reuse, or resume, another run's file.

    Parameters
    ----------
    fn : callable
        A JAX-traceable function.
    *args : array_like or pytree
        Example arguments (only their shapes and dtypes are used).

    Returns
    -------
    str
        The first 16 hexadecimal digits of the SHA-256 (64 bits).

    Examples
    --------
    >>> import numpy as np
    >>> from simkit.checkpoint import function_digest
    >>> y = np.ones(2)
    >>> function_digest(lambda y: -y, y) == function_digest(lambda z: -z, y) != function_digest(lambda y: y, y)
    True
    """
    import jax

    closed = jax.make_jaxpr(fn)(*args)
    return digest(np.frombuffer(str(closed.jaxpr).encode(), np.uint8), *closed.consts)


def params_digest(params: Mapping[str, Any] | None) -> dict[str, str]:
    """Each parameter's `digest` by name: the parameters' entry of a run's fingerprint.

    Parameters
    ----------
    params : dict or None
        Parameter values by name (scalars or arrays); None is no parameters.

    Returns
    -------
    dict of str to str
        ``{name: digest(value)}`` with the names sorted (a restart refused for a changed
        parameter names it).

    Raises
    ------
    ValueError
        As `digest`.

    Examples
    --------
    >>> from simkit.checkpoint import params_digest
    >>> d = params_digest({"sigma": 10.0, "beta": 8 / 3})
    >>> list(d), len(d["sigma"]), params_digest(None)
    (['beta', 'sigma'], 16, {})
    """
    return {k: digest(v) for k, v in sorted((params or {}).items())}


def frames_digest(dataset: Any) -> str:
    """The `digest` of a chunk of frames: the values of every numeric variable along ``t``
    (the first dimension), by name, as float64. A resumed run compares the last chunk read
    back from its file with the digest committed with its restart state.

    Parameters
    ----------
    dataset : xarray.Dataset
        Frames (variables whose first dimension is ``t``; others are ignored).

    Returns
    -------
    str
        16 hexadecimal digits.

    Examples
    --------
    >>> import xarray as xr
    >>> from simkit.checkpoint import frames_digest
    >>> a = xr.Dataset({"u": ("t", [1.0, 2.0])}, coords={"t": [0.0, 1.0]}, attrs={"note": "a"})
    >>> frames_digest(a) == frames_digest(a.assign_attrs(note="b")) != frames_digest(a * 2)
    True
    """
    names = sorted(str(n) for n, v in dataset.variables.items()
                   if v.dims and v.dims[0] == "t" and v.dtype.kind in "biuf")
    h = hashlib.sha256(json.dumps(names).encode())
    h.update(digest(*(np.asarray(dataset.variables[n].values, np.float64) for n in names)).encode())
    return h.hexdigest()[:16]


def restart_path(path: str | os.PathLike) -> str:
    """Where the restart state of the run writing ``path`` lives.

    A streamed run (`simkit.solve_to_file`, `simkit.stencil.integrate_to_file`) keeps its
    restart state beside its output, ``<path>.restart.npz`` (a trailing slash of a zarr
    store's path dropped); it is removed when the run completes. Delete it (or pass
    ``resume=False``) to start a run afresh.

    Parameters
    ----------
    path : str or os.PathLike
        The output file (``.nc``) or store (``.zarr``).

    Returns
    -------
    str
        The path of the restart state.

    Raises
    ------
    TypeError
        `path` is not a string or path-like (from ``os.fspath``).

    Examples
    --------
    >>> from simkit.checkpoint import restart_path
    >>> restart_path("runs/heat.nc"), restart_path("runs/heat.zarr/")
    ('runs/heat.nc.restart.npz', 'runs/heat.zarr.restart.npz')
    """
    return os.fspath(path).rstrip("/\\") + RESTART_SUFFIX


def _remove_interrupted_writes(store: str) -> None:
    """Remove what a killed run's zarr writes left inside ``store``: zarr writes each file
    under ``<name>.<32 hex digits>.partial`` and renames it when whole, so a kill leaves such
    a file behind, and opening the store warned about it ever after ("not recognized as a
    component of a Zarr hierarchy"; found by killing runs at random instants)."""
    for folder, _, names in os.walk(store):
        for name in names:
            if re.fullmatch(r".+\.[0-9a-f]{32}\.partial", name):
                os.remove(os.path.join(folder, name))


class FrameFile:
    """A file that frames are appended to along ``t``, with a run's restart state.

    Parameters
    ----------
    path : str or os.PathLike
        ``.nc`` (NetCDF-4 through h5netcdf) or ``.zarr`` (zarr format 2).
    fingerprint : dict
        What identifies the run (JSON-serialisable; arrays as their `digest`); a restart
        state of another run is refused.
    resume : bool
        Continue from the restart state beside ``path`` if there is one; else take a
        finished run's file of the same fingerprint as it is (`complete`), or start afresh,
        replacing an unfinished run's file at ``path`` (a finished run's file of another
        fingerprint, and a file that is not a run's, are refused). With False, start afresh,
        replacing any file at ``path``. Default True.

    Attributes
    ----------
    restart : dict of str to numpy.ndarray or None
        The restart state found (what the next chunk starts from), else None.
    frames : int
        Frames in the file that a restart state follows (the frames to keep).
    complete : bool
        The file holds a completed run of the same fingerprint (nothing left to compute).

    Raises
    ------
    InputError
        An unknown suffix, a restart state whose fingerprint differs (the message names
        the differing entries), a restart state whose file is missing, unreadable or short
        of the frames it follows, (``resume``) a file at ``path`` that is not a run's or
        the finished run of another fingerprint, or a path `simkit.io.check_target` refuses
        (a missing folder; a folder that is not a zarr store).
    DependencyError
        A ``.zarr`` path without zarr installed.

    Examples
    --------
    >>> import os, tempfile, xarray as xr
    >>> from simkit.checkpoint import FrameFile
    >>> path = os.path.join(tempfile.mkdtemp(), "run.nc")
    >>> run = FrameFile(path, {"model": "demo", "chunk": 2})
    >>> run.append(xr.Dataset({"u": ("t", [1.0, 2.0])}, coords={"t": [0.0, 1.0]}), {"u": 2.0})
    >>> resumed = FrameFile(path, {"model": "demo", "chunk": 2})  # as after a crash
    >>> resumed.frames, resumed.restart
    (2, {'u': array(2.)})
    >>> resumed.append(xr.Dataset({"u": ("t", [3.0])}, coords={"t": [2.0]}), {}, complete=True)
    >>> xr.load_dataset(path).u.values.tolist(), resumed.complete
    ([1.0, 2.0, 3.0], True)
    """

    def __init__(self, path: str | os.PathLike, fingerprint: Mapping[str, Any], *, resume: bool = True) -> None:
        self.path = os.fspath(path)
        self.kind = io._format(self.path)
        if self.kind == "zarr":
            io._require_zarr()
        io.check_target(self.path, self.kind, "a streamed run")  # a folder there was deleted with resume=False
        self.fingerprint = json.loads(json.dumps(io.to_jsonable(dict(fingerprint))))
        self.restart: dict[str, np.ndarray] | None = None
        self.frames = 0  # frames committed (followed by a restart state)
        self.complete = False
        self.attrs: dict[str, Any] = {}  # a complete file's global attributes (its outcome)
        if resume:
            self._find_restart()
        if self.restart is None and not self.complete:
            self._remove(self.path)
            self._remove(restart_path(self.path))
        # what a run killed while writing left under temporary names (never read back)
        self._remove(file_integrity.partial_path(self.path))
        self._remove(restart_path(self.path) + PARTIAL_RESTART)

    # -- resuming ----------------------------------------------------------------------------
    def _find_restart(self) -> None:
        state_file = restart_path(self.path)
        if os.path.exists(state_file):
            try:
                with open(state_file, "rb") as fh, np.load(fh, allow_pickle=False) as z:  # (closed on BadZipFile)
                    state = {k: z[k] for k in z.files}
                found = json.loads(str(state.pop("__fingerprint__")))
                frames = int(state.pop("__frames__"))
            except Exception as err:  # noqa: BLE001 - zipfile.BadZipFile, EOFError, KeyError, ...
                raise InputError(f"the restart state {state_file!r} is damaged and cannot be read "
                                 f"({type(err).__name__}: {err}); simkit writes it whole or not at all, so it "
                                 "was cut short or changed afterwards (a full disk, a partial copy?): pass "
                                 "resume=False to start afresh, or put back an intact copy") from None
            self._check(found, state_file)
            self.frames = frames
            last = state.pop("__last_chunk__", None)  # (first frame, digest) of the last chunk committed
            if not os.path.exists(self.path):
                raise InputError(f"{state_file!r} is the restart state of frames that are missing: "
                                 f"{self.path!r} does not exist (remove the restart state to start afresh)")
            if self.kind == "zarr":
                _remove_interrupted_writes(self.path)
            try:
                held = self._truncate(self.frames)
            except Exception as err:  # noqa: BLE001 - h5py's bare OSError ("truncated file: eof = ...")
                raise InputError(f"{self.path!r} cannot be resumed: it is not a {self.kind} file simkit can read "
                                 f"({type(err).__name__}: {err}); it may have been damaged when the run was "
                                 "stopped: pass resume=False to start afresh") from err
            if held < self.frames:  # an older copy put back: the run went on and left a gap (found by probing)
                raise InputError(f"{self.path!r} holds {held} frames, but its restart state {state_file!r} follows "
                                 f"{self.frames}: the file is not the one the run wrote (an older copy?); "
                                 "pass resume=False to start afresh")
            if last is not None:
                self._check_last_chunk(int(last[0]), str(last[1]))
            self.restart = state
        elif os.path.exists(self.path):
            keep = "it is left alone: remove it, choose another path, or pass resume=False to replace it"
            try:
                attrs = self._attrs()
            except Exception as err:  # noqa: BLE001 - any unreadable file: a user's, not a run's
                raise InputError(f"{self.path!r} exists and is not a {self.kind} file simkit can read "
                                 f"({type(err).__name__}: {err}); {keep}") from err
            if FINGERPRINT_ATTR not in attrs:  # every file of a run has it from its first frame
                raise InputError(f"{self.path!r} exists and is not the file of a simkit run (it has no "
                                 f"{FINGERPRINT_ATTR!r} attribute); {keep}")
            if attrs.get(COMPLETE_ATTR) == 1:
                self._check(json.loads(attrs[FINGERPRINT_ATTR]), self.path)
                self.complete = True
                self.attrs = attrs

    def _check_last_chunk(self, start: int, expected: str) -> None:
        """Read back the frames of the last chunk the restart state follows and compare them
        with their digest: a chunk lost or changed since (a missing zarr chunk reads as NaN)
        is an error that names it, not frames the resumed run builds on."""
        xr = io.require_xarray("resuming a checkpointed run")
        where = f"frames {start}..{self.frames - 1} of {self.path!r}"
        try:
            if self.kind == "zarr":
                file_integrity.check_zarr_chunks(self.path, "resuming a streamed run")
                opened = xr.open_zarr(self.path, consolidated=False, decode_times=False)
            else:
                opened = xr.open_dataset(self.path, engine="h5netcdf", decode_times=False)
            with opened as ds:
                found = frames_digest(ds.isel(t=slice(start, self.frames)).load())
        except InputError:
            raise
        except Exception as err:  # noqa: BLE001 - a codec's or HDF5's error on a damaged chunk
            raise InputError(f"{self.path!r} cannot be resumed: {where} cannot be read ({type(err).__name__}: "
                             f"{err}); pass resume=False to start afresh") from None
        if found != expected:
            raise InputError(f"{self.path!r} cannot be resumed: {where}, the last chunk before the restart state, "
                             "are not what the run wrote (changed or damaged since); pass resume=False to start "
                             "afresh")

    def raise_if_failed(self, throw: bool = True) -> None:
        """For a complete file (`complete`) whose run failed (``status_code`` not 0): raise
        `SolveError` when ``throw``. A finished run is not recomputed, and one that failed
        would fail again the same way: a rerun must not return its truncated frames as if
        they were the run's.

        Raises
        ------
        SolveError
            The run failed (the message gives where and why, as stored in the file).
        """
        code = int(self.attrs.get("status_code", 0))
        if throw and self.complete and code != 0:
            where = self.attrs.get("t_final")
            where = f" at t = {where:.6g}" if isinstance(where, (int, float)) else ""
            raise SolveError(f"{self.path!r} holds this run, which failed{where}: {self.attrs.get('status', '?')}. "
                             "The states saved up to then are in it. To run it again, with these settings or "
                             "new ones (e.g. a larger max_steps), pass resume=False, which replaces the file, "
                             "or choose another path")

    def _check(self, found: Mapping[str, Any], where: str) -> None:
        keys = sorted(set(found) | set(self.fingerprint))
        differ = [k for k in keys  # compared as JSON text: NaN (an automatic dt0) equals NaN
                  if json.dumps(found.get(k), sort_keys=True) != json.dumps(self.fingerprint.get(k), sort_keys=True)]
        if differ:
            detail = "; ".join(f"{k}: {found.get(k)!r} there, {self.fingerprint.get(k)!r} now" for k in differ)
            raise InputError(f"{where!r} belongs to another run ({detail}); use resume=False to start "
                             "afresh (it replaces the file), or another path")

    def _attrs(self) -> dict[str, Any]:
        xr = io.require_xarray("reading a checkpointed run")
        if self.kind == "zarr":
            with xr.open_zarr(self.path, consolidated=False, decode_times=False) as ds:
                return dict(ds.attrs)
        with xr.open_dataset(self.path, engine="h5netcdf", decode_times=False) as ds:
            return dict(ds.attrs)

    def _truncate(self, n: int) -> int:
        """Drop frames after the first ``n`` (written after the last restart state); return
        the frames left (fewer than ``n`` when the file lacks some)."""
        if self.kind == "zarr":
            import zarr

            group = zarr.open_group(self.path, mode="r+", zarr_format=2)
            held = n
            for _, array in group.arrays():
                dims = array.attrs.get("_ARRAY_DIMENSIONS", [])
                if dims and dims[0] == "t":
                    if array.shape[0] > n:
                        array.resize((n,) + array.shape[1:])
                    held = min(held, array.shape[0])
            return held
        import h5netcdf

        with h5netcdf.File(self.path, "a") as f:
            if f.dimensions["t"].size > n:
                f.resize_dimension("t", n)
            return f.dimensions["t"].size

    # -- writing -------------------------------------------------------------------------------
    def append(self, dataset: Any, restart: Mapping[str, Any], *, complete: bool = False) -> None:
        """Append ``dataset``'s frames, then commit ``restart`` as the state that follows them.

        The frames are on disk before the restart state is replaced (atomically), so a run
        killed at any point resumes from a state whose frames are all in the file.

        Parameters
        ----------
        dataset : xarray.Dataset
            The new frames: its variables along ``t`` (first dimension) are appended; the
            rest (coordinates, time-independent variables) are written with the first frames.
        restart : dict of str to array_like
            The state the next chunk starts from (saved with ``numpy.savez``).
        complete : bool
            The run is done: mark the file complete and remove the restart state instead of
            writing `restart` (default False).

        Examples
        --------
        >>> import os, tempfile, xarray as xr
        >>> from simkit.checkpoint import FrameFile, restart_path
        >>> path = os.path.join(tempfile.mkdtemp(), "run.nc")
        >>> run = FrameFile(path, {"chunk": 1})
        >>> run.append(xr.Dataset({"u": ("t", [1.0])}, coords={"t": [0.0]}), {"u": 1.0})
        >>> run.frames, os.path.exists(restart_path(path))
        (1, True)
        """
        n_new = int(dataset.sizes["t"])
        dataset = dataset.assign_attrs({FINGERPRINT_ATTR: json.dumps(self.fingerprint),
                                        COMPLETE_ATTR: int(complete)})
        start = self.frames
        if self.frames == 0:
            io.check_variable_names([*dataset.variables, *dataset.dims], self.path)  # zarr dropped "N/P"
            # under a temporary name, renamed when whole: a run killed while writing its first chunk
            # left a half-written file that the next call refused
            file_integrity.write_new(dataset, self.path, self.kind, "a streamed run", unlimited_dims=["t"])
        elif self.kind == "zarr":
            dataset[[v for v in dataset.data_vars if "t" in dataset[v].dims]].drop_vars(
                [c for c in dataset.coords if c != "t"]).to_zarr(
                self.path, mode="a", append_dim="t", zarr_format=2, consolidated=False, write_empty_chunks=True)
            import zarr

            zarr.open_group(self.path, mode="r+", zarr_format=2).attrs.update(
                {k: io.to_jsonable(v) for k, v in dataset.attrs.items()})
        else:
            import h5netcdf

            with h5netcdf.File(self.path, "a") as f:
                start = f.dimensions["t"].size
                f.resize_dimension("t", start + n_new)
                for name, var in dataset.variables.items():
                    if var.dims and var.dims[0] == "t":
                        f.variables[name][start:start + n_new] = np.asarray(var.values)
                f.attrs.update(dataset.attrs)
        self.frames += n_new
        if complete:
            self._remove(restart_path(self.path))
            self.complete = True
        else:
            self._commit(restart, (start, frames_digest(dataset)))

    def _commit(self, restart: Mapping[str, Any], last_chunk: tuple[int, str]) -> None:
        target = restart_path(self.path)
        tmp = target + PARTIAL_RESTART
        with open(tmp, "wb") as fh:  # a file object: numpy.savez appends ".npz" to a name without it
            np.savez(fh, __fingerprint__=np.asarray(json.dumps(self.fingerprint)),
                     __frames__=np.asarray(self.frames), __last_chunk__=np.asarray([str(v) for v in last_chunk]),
                     **{k: np.asarray(v) for k, v in restart.items()})
        os.replace(tmp, target)

    @staticmethod
    def _remove(path: str) -> None:
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
