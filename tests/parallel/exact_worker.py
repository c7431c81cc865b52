"""Run by test_exact_strict.py in a fresh process: 4 CPU devices, SIMKIT_STRICT_FP=1.
Prints one JSON line: {model: {mesh: max |decomposed - single|}}."""

import json
import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ["SIMKIT_STRICT_FP"] = "1"

import jax  # noqa: E402

from simkit import models  # noqa: E402
from simkit.validation.parallel import agreement  # noqa: E402

assert len(jax.devices()) == 4
# every library model with an explicit stepper (RK4; Cahn-Hilliard too, at its small
# explicit step): IMEX's global inner products sum in another order (test_decompose.py).
# Meshes of 2 and 4 devices; for 2-D grids the 4-device slabs (distinct neighbours on both
# sides) and 2 x 2 blocks, not also 2-device slabs (each program here is a compile of ~1.7 s;
# 8 devices are left out for the suite's time)
MESHES = {1: [(2,), (4,)], 2: [(4, 1), (2, 2)], 3: [(2, 1, 1), (2, 2, 1)]}
print(json.dumps(agreement(models.names("pde"), meshes=MESHES)))
