"""Bit-for-bit: every library model (explicit RK4) decomposed over 2 and 4 simulated devices,
on 1-D and 2-D (and 3-D) meshes, equals the single-device run exactly (float64), with XLA's
FMA contraction off (SIMKIT_STRICT_FP=1; see simkit/_config.py for why)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_decomposed_runs_are_bit_identical_on_2_and_4_devices():
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "SIMKIT_STRICT_FP")}
    env["SIMKIT_COMPILATION_CACHE"] = "0"
    script = pathlib.Path(__file__).with_name("exact_worker.py")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    diffs = json.loads(run.stdout.strip().splitlines()[-1])
    from simkit import models

    assert sorted(diffs) == models.names("pde")  # every library PDE model
    assert all(len(per_mesh) >= 2 for per_mesh in diffs.values())
    nonzero = {model: d for model, per_mesh in diffs.items() for mesh, d in per_mesh.items() if d != 0.0}
    assert not nonzero, nonzero
