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

KILLER = RUNS + """
import os, signal, sys
from simkit import checkpoint

kind, path, kill_at, moment = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
original = checkpoint.FrameFile.append
calls = [0]


def append(self, dataset, restart, complete=False):
    calls[0] += 1
    if calls[0] == kill_at and moment == "before-commit":
        # the worst moment: the chunk's frames are on disk, its restart state is not
        self._commit = lambda state: os.kill(os.getpid(), signal.SIGKILL)
    original(self, dataset, restart, complete=complete)
    if calls[0] == kill_at and moment == "after-commit":
        os.kill(os.getpid(), signal.SIGKILL)


checkpoint.FrameFile.append = append
run(kind, path)
raise SystemExit("not killed")
"""


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


@pytest.mark.parametrize("kind, kill_at, moment", [("stencil", 2, "after-commit"), ("ode", 5, "before-commit")])
def test_killed_run_resumes_bit_identical(tmp_path, kind, kill_at, moment):
    whole = run(kind, tmp_path / "whole.nc")
    killed = str(tmp_path / "killed.nc")
    out = subprocess.run([sys.executable, "-c", KILLER, kind, killed, str(kill_at), moment],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == -signal.SIGKILL, out.stderr[-2000:]
    state_file = checkpoint.restart_path(killed)
    assert os.path.exists(state_file)
    with np.load(state_file) as z:
        committed = int(z["__frames__"])
    on_disk = simkit.load(killed)
    assert on_disk.attrs["checkpoint_complete"] == 0
    # before-commit: the last chunk's frames were written after the last restart state
    assert on_disk.sizes["t"] > committed if moment == "before-commit" else on_disk.sizes["t"] == committed
    run(kind, killed)
    assert not os.path.exists(state_file)
    _same_file(killed, whole)


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

    def maybe_commit(self, restart):
        if before_commit and calls[0] == at:
            raise Interrupted
        commit(self, restart)

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
