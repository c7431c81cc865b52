"""Files that survive a crash and damage that is named: how simkit writes and checks its files.

- `write_new`: a file (or zarr store) is written under a temporary name (`partial_path`) and
  renamed when whole, so a crash leaves the old file or the new one, never part of one; every
  chunk carries a checksum (`with_checksums`: HDF5's Fletcher-32 in NetCDF, CRC-32 in zarr) and
  zarr writes every chunk, even one holding only NaN.
- `check_zarr_chunks`: a zarr store with a chunk missing is refused (zarr reads a missing
  chunk as its fill value, NaN); `find_damaged_chunk` names a chunk that fails to read.
- `describe_unreadable`: the message for a file that cannot be opened (a NetCDF-3 file named
  as such, with the conversion that makes it readable).

`simkit.io.save`/`simkit.io.load` and the streamed runs of `simkit.checkpoint` use them.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import numpy as np

from .errors import InputError

PARTIAL_SUFFIX = ".partial"
"""What a file or zarr store is called while it is being written (`write_new`)."""

NETCDF3_MAGIC = (b"CDF\x01", b"CDF\x02", b"CDF\x05")
"""The first bytes of a NetCDF-3 (classic, 64-bit offset, CDF-5) file."""


def partial_path(path: str | os.PathLike) -> str:
    """The temporary name ``<path>.partial`` under which `write_new` writes ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        A NetCDF file or zarr store (a trailing slash is ignored).

    Returns
    -------
    str
        ``path`` with ``.partial`` appended, in the same folder (so that renaming it is atomic).

    Examples
    --------
    >>> from simkit._file_integrity import partial_path
    >>> partial_path("runs/heat.zarr/")
    'runs/heat.zarr.partial'
    """
    return os.fspath(path).rstrip("/\\") + PARTIAL_SUFFIX


def remove_path(path: str | os.PathLike) -> None:
    """Remove the file or folder (a zarr store) at ``path``; nothing there is fine.

    Parameters
    ----------
    path : str or os.PathLike
        What to remove.

    Examples
    --------
    >>> from simkit._file_integrity import remove_path
    >>> remove_path("no-such-file.nc")  # nothing there: nothing happens
    """
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def with_checksums(dataset: Any, kind: str) -> Any:
    """A shallow copy of ``dataset`` whose numeric variables are written with a checksum of
    every chunk: HDF5's Fletcher-32 filter (NetCDF) or a CRC-32 filter (zarr). A damaged
    chunk then fails to read (`load` names it) instead of reading as other numbers.

    Parameters
    ----------
    dataset : xarray.Dataset
        What is about to be written.
    kind : str
        ``"netcdf"`` or ``"zarr"``.

    Returns
    -------
    xarray.Dataset
        The same variables (no copy of their values), with the filter in their ``encoding``.

    Examples
    --------
    >>> import xarray as xr
    >>> from simkit._file_integrity import with_checksums
    >>> ds = with_checksums(xr.Dataset({"u": ("t", [1.0, 2.0])}), "netcdf")
    >>> ds["u"].encoding["fletcher32"]
    True
    """
    out = dataset.copy(deep=False)
    for name, var in out.variables.items():
        if var.ndim == 0 or var.dtype.kind not in "biuf":
            continue  # a scalar has no chunks; strings take no filter
        encoding = dict(var.encoding)
        if kind == "zarr":
            from numcodecs import CRC32

            encoding["filters"] = [CRC32()]
        else:
            encoding.pop("contiguous", None)  # a checksum needs chunked storage
            encoding["fletcher32"] = True
        out.variables[name].encoding = encoding
    return out


def write_new(dataset: Any, path: str | os.PathLike, kind: str, owner: str, *,
              unlimited_dims: Any = ()) -> None:
    """Write ``dataset`` to ``path`` so that a crash at any moment leaves either the old
    contents of ``path`` (or nothing) or the whole new file, never a part of it: written
    under `partial_path` and renamed when complete, with a checksum per chunk
    (`with_checksums`; zarr chunks are all written, even those holding only NaN, so that a
    missing one is an error, `check_zarr_chunks`). A folder cannot be renamed over a full
    one, so an existing zarr store is removed just before the rename: a crash between the two
    leaves nothing at ``path`` and the whole new store at `partial_path`.

    Parameters
    ----------
    dataset : xarray.Dataset
        What to write.
    path : str or os.PathLike
        The file or zarr store; what is there is replaced.
    kind : str
        ``"netcdf"`` (NetCDF-4 through h5netcdf) or ``"zarr"`` (format 2).
    owner : str
        What is writing, named in an error.
    unlimited_dims : sequence of str
        NetCDF dimensions that can grow (a streamed run's ``t``).

    Raises
    ------
    InputError
        The operating system refused to write (permission denied, disk full, ...); the
        message gives its reason. Nothing is left at the temporary name.

    Examples
    --------
    >>> import os, tempfile, xarray as xr
    >>> from simkit._file_integrity import write_new
    >>> path = os.path.join(tempfile.mkdtemp(), "u.nc")
    >>> write_new(xr.Dataset({"u": ("t", [1.0, 2.0])}), path, "netcdf", "save()")
    >>> sorted(os.listdir(os.path.dirname(path)))
    ['u.nc']
    """
    target = os.fspath(path).rstrip("/\\") or os.fspath(path)
    tmp = partial_path(target)
    remove_path(tmp)
    dataset = with_checksums(dataset, kind)
    try:
        if kind == "zarr":
            # zarr format 2: its string type is specified (format 3 warns that fixed-width strings and
            # consolidated metadata are not), and every zarr reader understands it
            dataset.to_zarr(tmp, mode="w", zarr_format=2, consolidated=False, write_empty_chunks=True)
        else:
            dataset.to_netcdf(tmp, engine="h5netcdf", unlimited_dims=list(unlimited_dims))
        if os.path.isdir(target):  # a zarr store (a folder cannot be renamed over a full one)
            shutil.rmtree(target)
        os.replace(tmp, target)  # a file opened by load(lazy=True) keeps its contents
    except OSError as err:
        remove_path(tmp)
        reason = os.strerror(err.errno) if err.errno else str(err)  # h5py's text names the temporary file
        raise InputError(f"{owner}: cannot write {target!r}: {reason}") from None


def describe_unreadable(path: str | os.PathLike, kind: str, err: BaseException, owner: str) -> str:
    """The message for a file at ``path`` that cannot be opened as ``kind``: a NetCDF-3 file
    is named as such (with the conversion that makes it readable), anything else as not a
    ``kind`` file or a damaged one, with the reader's own reason.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    kind : str
        ``"netcdf"`` or ``"zarr"``.
    err : BaseException
        What the reader raised.
    owner : str
        Who is reading, named in the message.

    Returns
    -------
    str
        The message.

    Examples
    --------
    >>> from simkit._file_integrity import describe_unreadable
    >>> describe_unreadable("x.nc", "netcdf", OSError("file signature not found"), "simkit.load")
    "simkit.load: 'x.nc' is not a netcdf file that can be read, or it is damaged (OSError: file signature not found)"
    """
    text = os.fspath(path)
    head = b""
    if os.path.isfile(text):
        with open(text, "rb") as fh:
            head = fh.read(4)
    if head in NETCDF3_MAGIC:
        return (f"{owner}: {text!r} is a NetCDF-3 (classic) file; simkit reads NetCDF-4 files (HDF5). Convert it, "
                f"e.g. xarray.open_dataset({text!r}, engine='scipy').to_netcdf('new.nc', engine='h5netcdf') "
                "or `nccopy -k nc4 old.nc new.nc`")
    return f"{owner}: {text!r} is not a {kind} file that can be read, or it is damaged ({type(err).__name__}: {err})"


def _zarr_arrays(path: str) -> Any:
    import zarr

    return zarr.open_group(path, mode="r", zarr_format=2).arrays()


def _chunk_keys(array: Any) -> Any:
    """(chunk index, key) of every chunk of a zarr format-2 array."""
    grid = [-(-size // chunk) for size, chunk in zip(array.shape, array.chunks)]
    separator = getattr(array.metadata, "dimension_separator", ".") or "."
    for index in np.ndindex(*grid):
        yield index, (separator.join(str(i) for i in index) if index else "0")


def check_zarr_chunks(path: str | os.PathLike, owner: str) -> None:
    """Refuse a zarr store that lacks a chunk of one of its arrays: zarr reads a missing
    chunk as the fill value (NaN), so a store with a file lost read as NaN values, silently.
    simkit writes every chunk (`write_new`), so none is missing from a store it wrote.

    Parameters
    ----------
    path : str or os.PathLike
        A zarr store (format 2, as `save` writes it).
    owner : str
        Who is reading, named in the message.

    Raises
    ------
    InputError
        A chunk is missing; the message names the variable and the chunk's file.

    Examples
    --------
    >>> import os, tempfile, xarray as xr
    >>> from simkit._file_integrity import check_zarr_chunks
    >>> from simkit.io import save
    >>> path = save(xr.Dataset({"u": ("t", [1.0, 2.0])}), os.path.join(tempfile.mkdtemp(), "u.zarr"))
    >>> check_zarr_chunks(path, "simkit.load")  # all there: nothing happens
    >>> os.remove(os.path.join(path, "u", "0"))
    >>> check_zarr_chunks(path, "simkit.load")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    simkit.errors.InputError: simkit.load: chunk 'u/0' of variable 'u' is missing from '...u.zarr' ...
    """
    root = os.fspath(path)
    for name, array in _zarr_arrays(root):
        for _, key in _chunk_keys(array):
            if not os.path.exists(os.path.join(root, name, *key.split("/"))):
                raise InputError(f"{owner}: chunk '{name}/{key}' of variable {name!r} is missing from {root!r} "
                                 "(a file of the store was lost or removed); its values are not in the store")


def find_damaged_chunk(path: str | os.PathLike, kind: str) -> str | None:
    """Which chunk of the file at ``path`` fails to read (a failed checksum, a torn
    compressed block, ...), in words; None when every chunk reads.

    Parameters
    ----------
    path : str or os.PathLike
        A NetCDF-4 file or a zarr store.
    kind : str
        ``"netcdf"`` or ``"zarr"``.

    Returns
    -------
    str or None
        E.g. ``"chunk 'u/1.0' of variable 'u'"`` (zarr) or ``"the chunk of variable 'u' at
        [0:50, 0:40]"`` (NetCDF), with the reader's reason.

    Examples
    --------
    >>> import os, tempfile, xarray as xr
    >>> from simkit._file_integrity import find_damaged_chunk
    >>> from simkit.io import save
    >>> find_damaged_chunk(save(xr.Dataset({"u": ("t", [1.0])}), os.path.join(tempfile.mkdtemp(), "u.nc")), "netcdf")
    """
    root = os.fspath(path)
    if kind == "zarr":
        for name, array in _zarr_arrays(root):
            for index, key in _chunk_keys(array):
                try:
                    array.blocks[index]
                except Exception as err:  # noqa: BLE001 - a codec's own error: named with its chunk
                    return f"chunk '{name}/{key}' of variable {name!r} ({type(err).__name__}: {err})"
        return None
    import h5py

    with h5py.File(root, "r") as f:
        found: list[str] = []

        def visit(name: str, obj: Any) -> None:
            if found or not isinstance(obj, h5py.Dataset) or obj.shape is None:
                return
            regions = obj.iter_chunks() if obj.chunks else [tuple(slice(0, n) for n in obj.shape)]
            for region in regions:
                try:
                    obj[region]
                except Exception as err:  # noqa: BLE001 - HDF5's own error: named with its chunk
                    where = ", ".join(f"{r.start}:{r.stop}" for r in region)
                    found.append(f"the chunk of variable {name!r} at [{where}] ({type(err).__name__}: {err})")
                    return

        f.visititems(visit)
    return found[0] if found else None
