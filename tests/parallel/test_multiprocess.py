"""Two processes on 127.0.0.1 with 2 CPU devices each run a decomposed model and an ensemble
across the 4 global devices; the gathered results equal a single-process run. Workers run as
subprocesses with short timeouts: a dead peer makes JAX abort the others (it does not raise),
so the test reports a clear failure instead of hanging."""

import os
import pathlib
import socket
import subprocess
import sys

import numpy as np
import pytest

import simkit
from simkit import models, parallel

WORKER = pathlib.Path(__file__).with_name("multiprocess_worker.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(n, out, timeout=240, worker=WORKER):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    procs = [subprocess.Popen([sys.executable, str(worker), str(port), str(i), str(n)] + ([str(out)] if out else []),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
             for i in range(n)]
    results = []
    try:
        for p in procs:
            try:
                results.append((p.communicate(timeout=timeout)[0], p.returncode))
            except subprocess.TimeoutExpired:
                results.append(("timed out", None))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return results


@pytest.mark.slow
def test_two_processes_match_one(tmp_path):
    out = tmp_path / "result.npz"
    results = _launch(2, out)
    for i, (log, rc) in enumerate(results):
        assert rc == 0, f"process {i} failed (rc {rc}):\n{log[-3000:]}"
    got = np.load(out)
    model = models.get("gray_scott")
    mesh = parallel.mesh_for(model.grid, shape=(4, 1))  # the same decomposition, one process
    ref = parallel.integrate(model, mesh=mesh, dt=1.0, steps=20, save_every=10,
                             diagnostics={"mass": lambda u, space: space.integral(u[1])})
    np.testing.assert_array_equal(got["us"], ref.us)
    np.testing.assert_allclose(got["mass"], ref.diagnostics["mass"], rtol=1e-14)
    ens = simkit.ensemble(models.get("lorenz"), (0.0, 2.0), params={"rho": np.linspace(10.0, 50.0, 64)}, saveat=5)
    np.testing.assert_array_equal(got["ys"], ens.ys)
    assert (got["status"] == 0).all()


@pytest.mark.slow
def test_a_dead_peer_fails_clearly(tmp_path):
    """Only process 0 of 2 starts: it must end (JAX aborts it after the initialisation
    timeout) with a non-zero code, not hang."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    code = (f"import simkit; from simkit import parallel; parallel.initialize('127.0.0.1:{port}', 2, 0, "
            "local_device_count=2, bind_loopback=True, initialization_timeout=3, heartbeat_timeout_seconds=3)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode != 0
    assert "DEADLINE_EXCEEDED" in run.stderr or "timed out" in run.stderr.lower() or "Terminating" in run.stderr


@pytest.mark.slow
def test_processes_given_different_inputs_are_told_so():
    """Found by probing: processes given different initial fields were stitched into one field
    in silence, and processes asking for different step counts waited on each other forever.
    Every process now raises, naming the input that differs (`simkit.parallel.agreement`)."""
    results = _launch(2, None, timeout=120, worker=WORKER.with_name("mismatch_worker.py"))
    for i, (log, rc) in enumerate(results):
        assert rc == 0 and f"process {i}: done" in log, f"process {i} failed (rc {rc}):\n{log[-3000:]}"
        assert "processes [1] were given a different u0 from process 0" in log, log[-3000:]
        assert "processes [1] were given a different steps from process 0" in log, log[-3000:]
        assert "processes [1] were given a different params from process 0" in log, log[-3000:]
