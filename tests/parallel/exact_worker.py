"""Run by test_exact_strict.py in a fresh process: 8 CPU devices, SIMKIT_STRICT_FP=1.
Prints one JSON line: {model: {mesh: max |decomposed - single|}}."""

import json
import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["SIMKIT_STRICT_FP"] = "1"

import jax  # noqa: E402
import numpy as np  # noqa: E402

from simkit import models, parallel  # noqa: E402
from simkit import stencil as sk  # noqa: E402

assert len(jax.devices()) == 8
MESHES = {1: [(2,), (4,), (8,)], 2: [(2, 1), (4, 1), (2, 2), (4, 2)], 3: [(2, 1, 1), (2, 2, 1), (2, 2, 2)]}
out = {}
for name in models.names("pde"):
    m = models.get(name)
    if m.name == "cahn_hilliard":  # IMEX: global inner products (see test_decompose.py)
        continue
    rho, _ = sk.spectral_radius(m, m.params, m.u0)
    dt = 1.25 / rho
    base = sk.integrate(m, dt=dt, steps=4, save_every=2)
    out[name] = {}
    for shape in MESHES[m.grid.ndim]:
        n = int(np.prod(shape))
        mesh = parallel.mesh_for(m.grid, jax.devices()[:n], shape=shape)
        run = parallel.integrate(m, mesh=mesh, dt=dt, steps=4, save_every=2)
        out[name][str(shape)] = float(np.abs(run.us - base.us).max())
print(json.dumps(out))
