"""One process of test_multiprocess.py's mismatch test: ``python mismatch_worker.py PORT PID NPROC``.

Joins a 2-process JAX runtime on 127.0.0.1 (1 CPU device each), then makes calls whose
inputs differ between the processes: each must raise simkit's InputError on every process,
naming what differs, before any work (they were stitched in silence, or hung)."""

import os
import sys

os.environ.pop("XLA_FLAGS", None)
os.environ["SIMKIT_COMPILATION_CACHE"] = "0"

import numpy as np  # noqa: E402

import simkit  # noqa: E402
from simkit import models, parallel  # noqa: E402

port, pid, nproc = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
parallel.initialize(f"127.0.0.1:{port}", nproc, pid, local_device_count=1, bind_loopback=True,
                    initialization_timeout=30, heartbeat_timeout_seconds=10)

import jax  # noqa: E402

heat = models.get("heat_1d")
mesh = parallel.mesh_for(heat.grid)
calls = {
    "u0": lambda: parallel.integrate(heat, mesh=mesh, dt=1e-5, steps=2, u0=np.asarray(heat.u0) * (1 + pid)),
    "steps": lambda: parallel.integrate(heat, mesh=mesh, dt=1e-5, steps=2 + 2 * pid),
    "params": lambda: simkit.ensemble(models.get("lorenz"), (0.0, 0.1), params={"rho": np.full(4, 28.0 + pid)},
                                      saveat=2, devices=jax.devices()),
}
for name, call in calls.items():
    try:
        call()
    except simkit.InputError as err:
        print(f"{name}: {err}", flush=True)
    else:
        print(f"{name}: NOT RAISED", flush=True)
print(f"process {pid}: done", flush=True)
jax.distributed.shutdown()
