"""The accelerator lane in float32 (``SIMKIT_ENABLE_X64=0``), as a float32 user on an
accelerator runs it, in a process of its own (this suite's process computes in float64)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_accelerator_lane_passes_in_float32():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "JAX_ENABLE_X64"))}
    env["SIMKIT_ENABLE_X64"] = "0"
    run = subprocess.run([sys.executable, "-m", "pytest", "-m", "accelerator", "-p", "no:xdist", "-p", "no:cacheprovider",
                          "-q", "tests/test_accelerator.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
