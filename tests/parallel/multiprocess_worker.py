"""One process of test_multiprocess.py: ``python multiprocess_worker.py PORT PID NPROC OUT``.

Joins a 2-process JAX runtime on 127.0.0.1 (2 CPU devices each: 4 global devices), runs a
decomposed Gray-Scott model across all 4 and an ensemble across all 4, gathers both, and
process 0 saves them to OUT (.npz)."""

import os
import sys

os.environ.pop("XLA_FLAGS", None)
os.environ["SIMKIT_COMPILATION_CACHE"] = "0"

import numpy as np  # noqa: E402

import simkit  # noqa: E402
from simkit import models, parallel  # noqa: E402

port, pid, nproc, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
parallel.initialize(f"127.0.0.1:{port}", nproc, pid, local_device_count=2, bind_loopback=True,
                    initialization_timeout=30, heartbeat_timeout_seconds=10)

import jax  # noqa: E402

assert len(jax.devices()) == 2 * nproc and len(jax.local_devices()) == 2
model = models.get("gray_scott")
mesh = parallel.mesh_for(model.grid, shape=(2 * nproc, 1))  # the x axis crosses processes
field = parallel.integrate(model, mesh=mesh, dt=1.0, steps=20, save_every=10,
                           diagnostics={"mass": lambda u, space: space.integral(u[1])})
lorenz = models.get("lorenz")
rhos = np.linspace(10.0, 50.0, 64)
ens = simkit.ensemble(lorenz, (0.0, 2.0), params={"rho": rhos}, saveat=5, devices=jax.devices())
if jax.process_index() == 0:
    np.savez(out, us=field.us, mass=field.diagnostics["mass"], ys=ens.ys, status=ens.status)
print(f"process {pid}: done", flush=True)
jax.distributed.shutdown()
