"""Streamed runs with checkpoints (simkit.checkpoint): `stencil.integrate_to_file` and
`solve_to_file` write what `integrate`/`solve` return, bit for bit, a chunk at a time; a
subprocess killed mid-run resumes from its restart state to a file bit-identical to an
uninterrupted run's; a restart state of another run is refused by name."""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import simkit
from simkit import _file_integrity as file_integrity
from simkit import checkpoint
from simkit.errors import InputError, SolveError

# the runs, shared verbatim by the test process and the subprocess that gets killed
RUNS = """
import numpy as np
import simkit

HEAT = simkit.models.get("heat_2d")
DIAGNOSTICS = {"total": lambda u, space: space.integral(u[0])}
ROBERTSON = simkit.models.get("robertson")
ROBERTSON_TS = np.geomspace(1e-6, 1e5, 60)


def run(kind, path, resume=True):
    if kind == "stencil":
        return simkit.stencil.integrate_to_file(path, HEAT, dt=1e-4, steps=40, save_every=5, chunk=3,
                                                diagnostics=DIAGNOSTICS, resume=resume)
    return simkit.solve_to_file(path, ROBERTSON, saveat=ROBERTSON_TS, chunk=7, resume=resume)
"""
namespace: dict = {}
exec(RUNS, namespace)
run, HEAT, DIAGNOSTICS, ROBERTSON, ROBERTSON_TS = (namespace[k] for k in
                                                   ("run", "HEAT", "DIAGNOSTICS", "ROBERTSON", "ROBERTSON_TS"))

def _arrays(path):
    ds = simkit.load(path)
    values = {name: ds[name].values for name in ds.variables}
    attrs = {k: np.asarray(v).tolist() for k, v in ds.attrs.items() if k not in ("date_created", "history")}
    return values, attrs


def _same_file(a, b):
    (va, aa), (vb, ab) = _arrays(a), _arrays(b)
    assert va.keys() == vb.keys()
    for name in va:
        assert np.array_equal(va[name], vb[name]), name
    assert aa == ab


def test_stencil_file_holds_what_integrate_returns(tmp_path):
    path = run("stencil", tmp_path / "heat.nc")
    ref = simkit.stencil.integrate(HEAT, dt=1e-4, steps=40, save_every=5, diagnostics=DIAGNOSTICS)
    ds = simkit.load(path)
    assert ds.attrs["checkpoint_complete"] == 1 and not os.path.exists(checkpoint.restart_path(path))
    assert np.array_equal(ds["t"].values, ref.ts) and ds["u"].shape == (9, 64, 64)
    # bit for bit: every chunk is the same compiled step started from the same numbers
    assert np.array_equal(ds["u"].values, ref.us[:, 0])
    assert np.array_equal(ds["diagnostic_total"].values, ref.diagnostics["total"])
    _, ref_attrs = _arrays(ref.save(tmp_path / "ref.nc"))
    _, attrs = _arrays(path)
    assert {k: v for k, v in attrs.items() if not k.startswith("checkpoint_")} == ref_attrs


def test_solve_file_holds_what_solve_returns(tmp_path):
    path = run("ode", tmp_path / "rob.nc")
    ref = simkit.solve(ROBERTSON, saveat=ROBERTSON_TS)
    ds = simkit.load(path)
    ys = np.stack([ds[name].values for name in ROBERTSON.state_names], axis=1)
    # the pieces take exactly the steps of the one solve: same states, same counters
    assert np.array_equal(ds["t"].values, ref.ts) and np.array_equal(ys, ref.ys)
    stats = simkit.io.decode_attrs(ds.attrs)["stats"]
    assert stats == {k: int(v) for k, v in ref.stats.items()}


# -- a run killed at every kind of instant (a real SIGKILL, no sleeps) ---------------------------------
# (kind, suffix, instant, chunks the next call computes: 3 = it starts afresh, fewer = it resumes)
KILL_CASES = [
    ("stencil", ".nc", "before-first", 3),  # nothing written yet
    ("stencil", ".nc", "during-first", 3),  # the first chunk's file torn, not yet renamed into place
    ("stencil", ".zarr", "during-first", 3),
    ("stencil", ".nc", "first-unrestarted", 3),  # the first chunk's file in place, no restart state yet
    ("stencil", ".nc", "between-chunks", 2),  # after a restart state, before the next chunk
    ("stencil", ".nc", "during-append", 2),  # a later chunk's frames on disk, its restart state not
    ("ode", ".nc", "during-append", 2),
    ("stencil", ".nc", "during-restart", 2),  # the restart state torn while being written
    ("stencil", ".nc", "during-last", 1),  # the last frames and the complete flag written, restart not removed
]

# small runs of 3 chunks each, for the kill test
KILL_RUNS = """
import numpy as np
import simkit

HEAT_1D = simkit.models.get("heat_1d")
DECAY = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0, 2.0], state_names=("a", "b"),
                        t_span=(0.0, 2.0), name="decay")


def small_run(kind, path):
    if kind == "stencil":
        return simkit.stencil.integrate_to_file(path, HEAT_1D, dt=1e-5, steps=30, save_every=5, chunk=2,
                                                check_stability=False)  # (dt is 1/40 of RK4's bound)
    return simkit.solve_to_file(path, DECAY, saveat=7, chunk=3, solver=simkit.Tsit5())
"""
exec(KILL_RUNS, namespace)
small_run = namespace["small_run"]

# One process imports simkit (which starts no JAX backend), then forks a child per case; each
# child arms its instant and runs until it SIGKILLs itself there. The first child runs alone
# and fills a compilation cache the others read.
KILLER = KILL_RUNS + r"""
import io, os, signal, sys, traceback

from simkit import _file_integrity as file_integrity
from simkit import checkpoint


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def arm(instant):
    calls = {"append": 0, "commit": 0}
    append, commit, savez, replace = checkpoint.FrameFile.append, checkpoint.FrameFile._commit, np.savez, os.replace

    def append_(self, dataset, restart, complete=False):
        calls["append"] += 1
        if instant == "before-first":
            die()
        if instant == "during-last" and complete:
            self._remove = lambda path: die()  # the restart state is removed after the last frames
        append(self, dataset, restart, complete=complete)
        if instant == "between-chunks" and calls["append"] == 1:
            die()

    def commit_(self, restart, last):
        calls["commit"] += 1
        if (instant, calls["commit"]) in (("first-unrestarted", 1), ("during-append", 2)):
            die()
        commit(self, restart, last)

    def savez_(fh, **arrays):  # the second restart state: half its bytes reach the file
        if instant != "during-restart" or calls["commit"] != 2:
            return savez(fh, **arrays)
        whole = io.BytesIO()
        savez(whole, **arrays)
        fh.write(whole.getvalue()[: len(whole.getvalue()) // 2])
        fh.flush()
        die()

    def replace_(src, dst):  # the first chunk's file, written under its temporary name: torn
        if instant == "during-first":
            if os.path.isdir(src):
                names = sorted(os.listdir(src))
                for name in names[: len(names) // 2]:
                    file_integrity.remove_path(os.path.join(src, name))
            else:
                os.truncate(src, os.path.getsize(src) // 2)
            die()
        return replace(src, dst)

    checkpoint.FrameFile.append, checkpoint.FrameFile._commit, np.savez, os.replace = append_, commit_, savez_, replace_


def child(kind, path, instant):
    try:
        arm(instant)
        small_run(kind, path)
        print(f"{instant}: not killed", file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    os._exit(3)


cases = [line.split() for line in sys.argv[1:]]
pids = []
for i, (kind, path, instant) in enumerate(cases):
    pid = os.fork()
    if pid == 0:
        child(kind, path, instant)
    pids.append(pid)
    if i == 0:  # the first fills the cache
        os.waitpid(pid, 0)
        pids[0] = None
for pid in pids[1:]:
    _, status = os.waitpid(pid, 0)
    if not os.WIFSIGNALED(status) or os.WTERMSIG(status) != signal.SIGKILL:
        raise SystemExit(f"a child ended with status {status}")
"""


def test_a_run_killed_at_any_instant_resumes_or_starts_afresh_to_the_same_file(tmp_path, monkeypatch):
    """Every class of instant: before the first chunk, while it is written, between chunks, while
    a later chunk or the restart state is written, and at the end. The next call with the same
    arguments gives, bit for bit, the file of an uninterrupted run, computing only the chunks
    not yet committed (a run killed while its first file was written was refused before)."""
    pytest.importorskip("zarr")
    killed = {case: str(tmp_path / f"{i}-{case[2]}{case[1]}") for i, case in enumerate(KILL_CASES)}
    # the first child fills the cache, so its kill must come after a compile: a later instant
    order = sorted(KILL_CASES, key=lambda case: case[2] != "between-chunks")
    env = {**os.environ, "SIMKIT_COMPILATION_CACHE": "1", "SIMKIT_CACHE_DIR": str(tmp_path / "cache"),
           "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", KILLER, *(f"{c[0]} {killed[c]} {c[2]}" for c in order)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    whole = {kind: small_run(kind, str(tmp_path / f"whole-{kind}.nc")) for kind in ("stencil", "ode")}
    appended = []
    original = checkpoint.FrameFile.append
    monkeypatch.setattr(checkpoint.FrameFile, "append",
                        lambda self, *a, **k: (appended.append(1), original(self, *a, **k))[1])
    for case in KILL_CASES:
        kind, suffix, instant, chunks = case
        path = killed[case]
        # the state the kill left
        assert os.path.exists(file_integrity.partial_path(path)) == (instant == "during-first"), case
        assert os.path.exists(path) == (instant not in ("before-first", "during-first")), case
        assert os.path.exists(checkpoint.restart_path(path)) == (chunks < 3), case
        if instant == "during-restart":
            assert os.path.getsize(checkpoint.restart_path(path) + checkpoint.PARTIAL_RESTART) > 0
        appended.clear()
        assert small_run(kind, path) == path
        assert len(appended) == chunks, case
        assert not os.path.exists(file_integrity.partial_path(path)), case
        assert not os.path.exists(checkpoint.restart_path(path) + checkpoint.PARTIAL_RESTART), case
        assert not os.path.exists(checkpoint.restart_path(path)), case
        _same_file(path, whole[kind])


class Interrupted(Exception):
    pass


def _interrupt(monkeypatch, kind, path, at, before_commit=False):
    """Stop the run in this process once the ``at``-th chunk's frames are written: after its
    restart state, or before it (the subprocess tests above kill a real process)."""
    original, commit, calls = checkpoint.FrameFile.append, checkpoint.FrameFile._commit, [0]

    def append(self, dataset, restart, complete=False):
        calls[0] += 1
        original(self, dataset, restart, complete=complete)
        if calls[0] == at:
            raise Interrupted

    def maybe_commit(self, restart, last):
        if before_commit and calls[0] == at:
            raise Interrupted
        commit(self, restart, last)

    with monkeypatch.context() as m:
        m.setattr(checkpoint.FrameFile, "append", append)
        m.setattr(checkpoint.FrameFile, "_commit", maybe_commit)
        with pytest.raises(Interrupted):
            run(kind, path)


def test_restart_state_of_another_run_is_refused(tmp_path, monkeypatch):
    path = str(tmp_path / "heat.nc")
    _interrupt(monkeypatch, "stencil", path, 1)
    with pytest.raises(InputError, match=r"another run \(params: .*diffusivity"):
        simkit.stencil.integrate_to_file(path, HEAT, dt=1e-4, steps=40, save_every=5, chunk=3,
                                         diagnostics=DIAGNOSTICS, params={"diffusivity": 0.005})
    with pytest.raises(InputError, match=r"steps: 40 there, 50 now"):
        simkit.stencil.integrate_to_file(path, HEAT, dt=1e-4, steps=50, save_every=5, chunk=3,
                                         diagnostics=DIAGNOSTICS)
    # resume=False starts afresh and replaces the file
    run("stencil", path, resume=False)
    assert simkit.load(path).sizes["t"] == 9


def test_a_changed_rhs_or_dt_rule_is_another_run(tmp_path):
    """The fingerprint held the model's name only: every unnamed model is 'model', so a file
    of -y was handed back for +y (and a killed run could have resumed with another rhs)."""
    decay = simkit.ODEModel(rhs=lambda t, y, p: -y, params={}, y0=[1.0], state_names=("u",))
    growth = simkit.ODEModel(rhs=lambda t, y, p: +y, params={}, y0=[1.0], state_names=("u",))
    path = simkit.solve_to_file(tmp_path / "u.nc", decay, (0.0, 1.0), saveat=3)
    with pytest.raises(InputError, match=r"belongs to another run \(rhs: '[0-9a-f]{16}' there"):
        simkit.solve_to_file(path, growth, (0.0, 1.0), saveat=3)
    again = simkit.ODEModel(rhs=lambda t, y, p: -y, params={}, y0=[1.0], state_names=("u",))  # the same rhs
    assert simkit.solve_to_file(path, again, (0.0, 1.0), saveat=3) == path
    heat = simkit.models.get("heat_1d")
    path = simkit.stencil.integrate_to_file(tmp_path / "h.nc", heat, dt=lambda u, p, s: 1e-5, steps=4, save_every=2)
    with pytest.raises(InputError, match=r"another run \(dt: "):
        simkit.stencil.integrate_to_file(path, heat, dt=lambda u, p, s: 4e-5, steps=4, save_every=2)


def test_finished_run_is_not_recomputed(tmp_path):
    path = run("ode", tmp_path / "rob.nc")
    stamp = os.stat(path).st_mtime_ns
    assert run("ode", path) == path and os.stat(path).st_mtime_ns == stamp


def test_nonfinite_field_stops_the_run_and_keeps_the_frames(tmp_path):
    path = str(tmp_path / "blow.nc")
    # 15x the stable explicit step (dt * lambda_max = 30): the field blows up within the run
    with pytest.raises(SolveError, match=r"non-finite between t = .*blow\.nc"):
        simkit.stencil.integrate_to_file(path, HEAT, dt=0.1, steps=400, save_every=10, chunk=4,
                                         stepper=simkit.stencil.ForwardEuler(), check_stability=False)
    ds = simkit.load(path)
    assert ds.attrs["checkpoint_complete"] == 1 and ds.attrs["status_code"] == int(simkit.Status.NONFINITE)
    assert 0 < ds.sizes["t"] < 41 and np.all(np.isfinite(ds["u"].values[0]))
    # the same call again: the finished, failed run fails again (it returned the truncated file)
    with pytest.raises(SolveError, match=r"blow\.nc' holds this run, which failed: .*non-finite"):
        simkit.stencil.integrate_to_file(path, HEAT, dt=0.1, steps=400, save_every=10, chunk=4,
                                         stepper=simkit.stencil.ForwardEuler(), check_stability=False)


def test_failed_solve_keeps_the_states_reached(tmp_path):
    path = str(tmp_path / "rob.nc")
    with pytest.raises(SolveError, match=r"failed at t = .*max_steps reached.*rob\.nc"):
        simkit.solve_to_file(path, ROBERTSON, saveat=ROBERTSON_TS, chunk=7, max_steps=60)
    ds = simkit.load(path)
    assert ds.attrs["status_code"] == int(simkit.Status.MAX_STEPS) and ds.attrs["checkpoint_complete"] == 1
    ref = simkit.solve(ROBERTSON, saveat=ROBERTSON_TS)
    n = ds.sizes["t"]
    assert 0 < n < len(ROBERTSON_TS) and np.array_equal(ds["y1"].values, ref.ys[:n, 0])
    # the same call again is not recomputed, and fails again (it returned the truncated file)
    with pytest.raises(SolveError, match=r"rob\.nc' holds this run, which failed at t = .*max_steps reached"):
        simkit.solve_to_file(path, ROBERTSON, saveat=ROBERTSON_TS, chunk=7, max_steps=60)
    assert simkit.solve_to_file(path, ROBERTSON, saveat=ROBERTSON_TS, chunk=7, max_steps=60, throw=False) == path


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(InputError, match="chunk must be a positive"):
        simkit.solve_to_file(tmp_path / "a.nc", ROBERTSON, saveat=ROBERTSON_TS, chunk=0)
    with pytest.raises(InputError, match="not 'steps'"):
        simkit.solve_to_file(tmp_path / "a.nc", ROBERTSON, saveat="steps")
    with pytest.raises(InputError, match=r"dense output \(SaveAt\(dense=True\)\) is not written"):  # was ignored
        simkit.solve_to_file(tmp_path / "a.nc", ROBERTSON, saveat=simkit.SaveAt(ts=ROBERTSON_TS, dense=True))
    import diffrax

    with pytest.raises(InputError, match="fused kernels"):
        simkit.solve_to_file(tmp_path / "a.nc", ROBERTSON, saveat=ROBERTSON_TS, solver=diffrax.Kvaerno5())
    with pytest.raises(InputError, match="suffix"):
        simkit.stencil.integrate_to_file(tmp_path / "a.txt", HEAT, dt=1e-4, steps=10)
    assert not os.listdir(tmp_path)
    # a file at the path that is not a run's is left alone (a user's NetCDF file was replaced)
    (tmp_path / "notes.nc").write_text("my notes\n")
    with pytest.raises(InputError, match="not a netcdf file simkit can read.*left alone"):
        simkit.solve_to_file(tmp_path / "notes.nc", ROBERTSON, saveat=ROBERTSON_TS)
    import xarray as xr

    xr.Dataset({"obs": ("i", np.arange(3.0))}).to_netcdf(tmp_path / "mine.nc", engine="h5netcdf")
    with pytest.raises(InputError, match="not the file of a simkit run.*resume=False"):
        simkit.stencil.integrate_to_file(tmp_path / "mine.nc", HEAT, dt=1e-4, steps=10)
    assert list(xr.load_dataset(tmp_path / "mine.nc", engine="h5netcdf").data_vars) == ["obs"]


def test_zarr_store_streams_and_resumes(tmp_path, monkeypatch):
    pytest.importorskip("zarr")
    whole = run("ode", tmp_path / "whole.zarr")
    _same_file(whole, run("ode", tmp_path / "whole.nc"))
    stopped = str(tmp_path / "stopped.zarr")
    # frames written after the last restart state (as a kill between the two leaves them) are dropped
    _interrupt(monkeypatch, "ode", stopped, 4, before_commit=True)
    with np.load(checkpoint.restart_path(stopped)) as z:
        assert simkit.load(stopped).sizes["t"] > int(z["__frames__"])
    run("ode", stopped)
    _same_file(stopped, whole)


def test_decomposed_run_streams_the_single_device_frames(tmp_path):
    import jax

    from simkit import parallel

    mesh = parallel.mesh_for(HEAT.grid, jax.devices()[:2])
    path = simkit.stencil.integrate_to_file(tmp_path / "split.nc", HEAT, dt=1e-4, steps=40, save_every=5, chunk=3,
                                            diagnostics=DIAGNOSTICS, mesh=mesh)
    ref = simkit.stencil.integrate(HEAT, dt=1e-4, steps=40, save_every=5, diagnostics=DIAGNOSTICS)
    ds = simkit.load(path)
    # the decomposed rollout equals the single-device one bit for bit (tests/parallel), chunk by chunk
    assert np.array_equal(ds["u"].values, ref.us[:, 0])
    np.testing.assert_allclose(ds["diagnostic_total"].values, ref.diagnostics["total"], rtol=1e-13)
    if len(jax.devices()) >= 2:  # the mesh is part of the fingerprint: no resuming on another one
        with pytest.raises(InputError, match="mesh"):
            simkit.stencil.integrate_to_file(tmp_path / "split.nc", HEAT, dt=1e-4, steps=40, save_every=5,
                                             chunk=3, diagnostics=DIAGNOSTICS)
