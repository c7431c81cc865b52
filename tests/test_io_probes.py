"""Defects found by probing saving, loading and streamed runs (/work/probe/io), each held here:
folders at an output path are left alone, a resumed run refuses a file or restart state that
does not fit it, and a finished failed run's error says how to rerun it."""

import os
import pathlib
import shutil

import numpy as np
import pytest
import xarray as xr

import simkit
from simkit import checkpoint
from simkit.errors import InputError, SolveError

DECAY = simkit.ODEModel(rhs=lambda t, y, p: -p["rate"] * y, params={"rate": 1.0}, y0=[1.0, 2.0],
                        state_names=("a", "b"), name="decay", units="t in s, a in m, b in m, rate in 1/s")


class Killed(Exception):
    pass


def _frames(values, times):
    return xr.Dataset({"u": ("t", np.asarray(values, float))}, coords={"t": np.asarray(times, float)})


def test_a_folder_at_the_output_path_is_left_alone(tmp_path):
    """resume=False removed a folder at a .nc path with shutil.rmtree, and save() to a .zarr
    path replaced a folder that was not a zarr store: everything in them was lost."""
    folder = tmp_path / "results.nc"
    folder.mkdir()
    (folder / "thesis.tex").write_text("years of work")
    with pytest.raises(InputError, match=r"results\.nc' is a folder, not a file; it is left alone"):
        simkit.solve_to_file(folder, DECAY, (0.0, 1.0), saveat=5, resume=False)
    with pytest.raises(InputError, match="is a folder, not a file"):
        checkpoint.FrameFile(folder, {"run": 1}, resume=True)
    store = tmp_path / "data.zarr"
    store.mkdir()
    (store / "notes.txt").write_text("mine")
    dataset = _frames([1.0, 2.0], [0.0, 1.0])
    with pytest.raises(InputError, match=r"data\.zarr' is a folder that is not a zarr store"):
        simkit.io.save(dataset, store)
    with pytest.raises(InputError, match="not a zarr store"):
        checkpoint.FrameFile(store, {"run": 1}, resume=False)
    assert (folder / "thesis.tex").exists() and (store / "notes.txt").exists()
    with pytest.raises(InputError, match=r"folder '.*missing' of .* does not exist"):
        simkit.io.save(dataset, tmp_path / "missing" / "a.nc")  # was h5py's "unable to open file"
    # an empty folder, or a zarr store, at a .zarr path is replaced as before
    pytest.importorskip("zarr")
    (tmp_path / "empty.zarr").mkdir()
    for path in (tmp_path / "empty.zarr", tmp_path / "empty.zarr"):
        simkit.io.save(dataset, path)
        assert simkit.load(path)["u"].values.tolist() == [1.0, 2.0]


def test_a_restart_state_needs_all_its_frames_in_a_readable_file(tmp_path):
    """An older copy of the file put back under a restart state resumed into a finished file
    that lacked frames; a damaged file gave h5py's bare OSError."""
    path = str(tmp_path / "run.nc")
    run = checkpoint.FrameFile(path, {"run": 1})
    run.append(_frames([1.0, 2.0], [0.0, 1.0]), {"u": 2.0})
    shutil.copy(path, tmp_path / "backup.nc")
    run.append(_frames([3.0, 4.0], [2.0, 3.0]), {"u": 4.0})
    assert checkpoint.FrameFile(path, {"run": 1}).frames == 4  # as it was, it resumes
    shutil.copy(tmp_path / "backup.nc", path)
    with pytest.raises(InputError, match=r"holds 2 frames, but its restart state .* follows 4.*resume=False"):
        checkpoint.FrameFile(path, {"run": 1})
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    with pytest.raises(InputError, match=r"run\.nc' cannot be resumed: .*damaged.*resume=False"):
        checkpoint.FrameFile(path, {"run": 1})
    assert checkpoint.FrameFile(path, {"run": 1}, resume=False).frames == 0  # as the message says


def test_a_failed_finished_run_says_how_to_rerun_it(tmp_path):
    """The error said "a new setting, e.g. a larger max_steps, starts a new file anyway": such
    a call is refused (the file holds another run); resume=False reruns it."""
    path = str(tmp_path / "run.nc")
    failed = _frames([1.0], [0.0]).assign_attrs(status="max_steps reached before t1", status_code=2, t_final=0.5)
    checkpoint.FrameFile(path, {"max_steps": 20}).append(failed, {}, complete=True)
    done = checkpoint.FrameFile(path, {"max_steps": 20})
    with pytest.raises(SolveError, match=r"failed at t = 0\.5.*larger max_steps\), pass resume=False") as err:
        done.raise_if_failed()
    assert "starts a new file" not in str(err.value)
    with pytest.raises(InputError, match=r"max_steps: 20 there, 1000 now\); use resume=False"):
        checkpoint.FrameFile(path, {"max_steps": 1000})


def test_resuming_with_renamed_states_or_new_units_is_another_run(tmp_path, monkeypatch):
    """The fingerprint left out the state names and units, which the first chunk writes: a
    resumed run with renamed states crashed with a bare KeyError after computing a chunk."""
    path = str(tmp_path / "decay.nc")
    original = checkpoint.FrameFile.append

    def killed_after_one_chunk(self, dataset, restart, complete=False):
        original(self, dataset, restart, complete=complete)
        raise Killed

    with monkeypatch.context() as m:
        m.setattr(checkpoint.FrameFile, "append", killed_after_one_chunk)
        with pytest.raises(Killed):
            simkit.solve_to_file(path, DECAY, (0.0, 1.0), saveat=5, chunk=2)
    with pytest.raises(InputError, match=r"another run \(state_names: \['a', 'b'\] there, \['x', 'y'\] now\)"):
        simkit.solve_to_file(path, DECAY.replace(state_names=("x", "y")), (0.0, 1.0), saveat=5, chunk=2)
    with pytest.raises(InputError, match=r"another run \(units: "):
        simkit.solve_to_file(path, DECAY.replace(units="t in h, a in m, b in m, rate in 1/h"), (0.0, 1.0),
                             saveat=5, chunk=2)
    simkit.solve_to_file(path, DECAY, (0.0, 1.0), saveat=5, chunk=2)  # the same run resumes
    ds = simkit.load(path)
    assert ds.sizes["t"] == 5 and ds["a"].attrs["units"] == "m" and ds.attrs["checkpoint_complete"] == 1


def test_resuming_a_field_run_with_renamed_components_is_another_run(tmp_path, monkeypatch):
    """The same for `stencil.integrate_to_file`: a renamed component crashed with a bare KeyError."""
    heat, path = simkit.models.get("heat_1d"), str(tmp_path / "heat.nc")
    original = checkpoint.FrameFile.append

    def killed_after_one_chunk(self, dataset, restart, complete=False):
        original(self, dataset, restart, complete=complete)
        raise Killed

    def run(model):
        return simkit.stencil.integrate_to_file(path, model, dt=1e-5, steps=8, save_every=2, chunk=2)

    with monkeypatch.context() as m:
        m.setattr(checkpoint.FrameFile, "append", killed_after_one_chunk)
        with pytest.raises(Killed):
            run(heat)
    with pytest.raises(InputError, match=r"another run \(component_names: \['u'\] there, \['T'\] now\)"):
        run(heat.replace(component_names=("T",)))
    with pytest.raises(InputError, match=r"another run \(units: "):
        run(heat.replace(units="t in s, x in m, u in K, diffusivity in m^2/s"))
    assert simkit.load(run(heat)).sizes["t"] == 5


def test_a_slash_in_a_name_is_refused_before_writing(tmp_path):
    """A state named "N/P" went into a group of a zarr store and was missing from the dataset
    read back (NetCDF raised xarray's ValueError; a streamed run only after its first chunk)."""
    dataset = xr.Dataset({"N/P": ("t", [1.0, 2.0]), "c": ("t", [3.0, 4.0])}, coords={"t": [0.0, 1.0]})
    for name in ("ratio.zarr", "ratio.nc"):
        with pytest.raises(InputError, match=r"cannot write variables \['N/P'\] to .*ratio.*a '/' in a name"):
            simkit.io.save(dataset, tmp_path / name)
    with pytest.raises(InputError, match=r"variables \['N/P'\]"):
        checkpoint.FrameFile(tmp_path / "run.nc", {"run": 1}).append(dataset, {"u": 1.0})
    with pytest.raises(InputError, match=r"variables \['N/P'\]"):
        simkit.solve_to_file(tmp_path / "ratio.nc", DECAY.replace(state_names=("N/P", "c")), (0.0, 1.0), saveat=5)
    assert not os.listdir(tmp_path)


# -- damaged files and the paths that cannot be written: errors that name the cause ---------------
def _field(n=40):
    return xr.Dataset({"u": (("t", "x"), np.arange(n * 30.0).reshape(n, 30))}, coords={"t": np.arange(float(n))})


def test_a_missing_or_damaged_zarr_chunk_is_named_not_read_as_nan(tmp_path):
    """A store with a chunk file lost loaded as NaN values without an error."""
    pytest.importorskip("zarr")
    path = simkit.io.save(_field(), str(tmp_path / "f.zarr"))
    chunk = os.path.join(path, "u", "0.0")
    body = pathlib.Path(chunk).read_bytes()
    pathlib.Path(chunk).write_bytes(body[:40] + bytes([body[40] ^ 0xFF]) + body[41:])  # its checksum fails
    with pytest.raises(InputError, match=r"is damaged: chunk 'u/0.0' of variable 'u' \(.*\) cannot be read"):
        simkit.load(path)
    os.remove(chunk)
    for lazy in (False, True):
        with pytest.raises(InputError, match=r"chunk 'u/0.0' of variable 'u' is missing from .*f.zarr"):
            simkit.load(path, lazy=lazy)


def test_a_damaged_netcdf_file_or_a_netcdf3_file_is_named(tmp_path):
    """Changed bytes in a NetCDF file's data loaded as other numbers; a damaged header gave a
    bare KeyError; a NetCDF-3 file gave HDF5's "file signature not found"."""
    path = simkit.io.save(_field(400), str(tmp_path / "f.nc"))
    body = bytearray(pathlib.Path(path).read_bytes())
    body[len(body) // 2: len(body) // 2 + 64] = bytes(64)
    damaged = str(tmp_path / "damaged.nc")
    pathlib.Path(damaged).write_bytes(body)
    with pytest.raises(InputError, match=r"'.*damaged.nc' is damaged: the chunk of variable 'u' at \[\d+:\d+, \d+:\d+\] \(OSError"):
        simkit.load(damaged)
    truncated = str(tmp_path / "truncated.nc")
    pathlib.Path(truncated).write_bytes(body[: len(body) // 3])
    with pytest.raises(InputError, match=r"is not a netcdf file that can be read, or it is damaged \(.*truncated"):
        simkit.load(truncated, lazy=True)
    classic = str(tmp_path / "classic.nc")
    pathlib.Path(classic).write_bytes(b"CDF\x01" + bytes(60))
    with pytest.raises(InputError, match=r"'.*classic.nc' is a NetCDF-3 \(classic\) file.*nccopy -k nc4"):
        simkit.load(classic)


def test_saving_into_a_folder_that_cannot_be_written(tmp_path, monkeypatch):
    """A KeyError chain from xarray's file cache, naming HDF5's errno 13, before."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    if os.geteuid() == 0:  # root writes anywhere: the check asks the system for permission
        monkeypatch.setattr(simkit.io.os, "access", lambda path, mode: False)
    try:
        with pytest.raises(InputError, match=r"save\(\): the folder .*locked' of .* is not writable"):
            simkit.io.save(_field(), str(folder / "f.nc"))
    finally:
        folder.chmod(0o700)
    monkeypatch.undo()

    def refused(self, *args, **kwargs):  # what the system says when a disk is full or read-only
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", refused)
    with pytest.raises(InputError, match=r"save\(\): cannot write '.*f.nc': Permission denied"):
        simkit.io.save(_field(), str(tmp_path / "f.nc"))
    assert os.listdir(tmp_path) == ["locked"]  # nothing left behind


def test_saving_over_a_file_open_lazily_and_a_damaged_restart_state(tmp_path):
    """h5py's "unable to truncate a file which is already open", and zipfile.BadZipFile for a
    truncated restart state."""
    path = simkit.io.save(_field(), str(tmp_path / "f.nc"))
    with simkit.load(path, lazy=True) as opened:
        simkit.io.save(_field() * 2, path)
        assert float(opened["u"][1, 0]) == 30.0  # the open file keeps what it held
    assert float(simkit.load(path)["u"][1, 0]) == 60.0
    run = str(tmp_path / "run.nc")
    with pytest.raises(Killed):
        original = checkpoint.FrameFile.append

        def append(self, *args, **kwargs):
            original(self, *args, **kwargs)
            raise Killed

        checkpoint.FrameFile.append = append
        try:
            simkit.solve_to_file(run, DECAY, (0.0, 1.0), saveat=6, chunk=2, solver=simkit.Tsit5())
        finally:
            checkpoint.FrameFile.append = original
    state = checkpoint.restart_path(run)
    body = pathlib.Path(state).read_bytes()
    pathlib.Path(state).write_bytes(body[: len(body) // 2])
    with pytest.raises(InputError, match=r"the restart state '.*run.nc.restart.npz' is damaged and cannot be read "
                                         r"\(BadZipFile.*resume=False"):
        simkit.solve_to_file(run, DECAY, (0.0, 1.0), saveat=6, chunk=2, solver=simkit.Tsit5())


def test_a_resumed_run_checks_the_last_chunk_it_builds_on(tmp_path):
    """Frames changed in the file after their restart state was written are named, not built on."""
    run = str(tmp_path / "run.nc")
    original = checkpoint.FrameFile.append
    calls = []

    def append(self, *args, **kwargs):
        original(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == 2:
            raise Killed

    checkpoint.FrameFile.append = append
    try:
        with pytest.raises(Killed):
            simkit.solve_to_file(run, DECAY, (0.0, 1.0), saveat=6, chunk=2, solver=simkit.Tsit5())
    finally:
        checkpoint.FrameFile.append = original
    import h5netcdf

    with h5netcdf.File(run, "a") as f:
        f.variables["a"][3] = 0.5
    with pytest.raises(InputError, match=r"frames 2..3 of '.*run.nc', the last chunk before the restart state, are "
                                         r"not what the run wrote"):
        simkit.solve_to_file(run, DECAY, (0.0, 1.0), saveat=6, chunk=2, solver=simkit.Tsit5())


def test_a_resumed_zarr_run_removes_what_killed_writes_left_in_the_store(tmp_path):
    """zarr writes each file under a temporary name: a run killed mid-write left one, and the
    resumed run, and every load after it, warned "not recognized as a component of a Zarr
    hierarchy" (found by killing runs at random instants)."""
    pytest.importorskip("zarr")
    run = str(tmp_path / "run.zarr")
    original = checkpoint.FrameFile.append

    def append(self, *args, **kwargs):
        original(self, *args, **kwargs)
        raise Killed

    checkpoint.FrameFile.append = append
    try:
        with pytest.raises(Killed):
            simkit.solve_to_file(run, DECAY, (0.0, 1.0), saveat=6, chunk=2, solver=simkit.Tsit5())
    finally:
        checkpoint.FrameFile.append = original
    leftover = os.path.join(run, ".zgroup." + "0123456789abcdef" * 2 + ".partial")
    pathlib.Path(leftover).write_bytes(b'{"zarr_for')  # torn
    simkit.solve_to_file(run, DECAY, (0.0, 1.0), saveat=6, chunk=2, solver=simkit.Tsit5())  # (warnings are errors)
    assert not os.path.exists(leftover)
    assert simkit.load(run).sizes["t"] == 6
