"""Precision policy (float32 opt-out) and the optional-dependency error."""

import os
import subprocess
import sys

import pytest

import simkit
from simkit import models

FLOAT32_SCRIPT = """
import numpy as np, simkit
from simkit import models
sol = simkit.solve(models.get("sir"), saveat=5, rtol=1e-5, atol=1e-7)
ref = simkit.reference.solve_ivp(models.get("sir"), saveat=5, rtol=1e-10, atol=1e-12)
err = float(np.max(np.abs(np.asarray(sol.ys, np.float64) - ref.ys)))
print(sol.ys.dtype, err)
"""


def test_float32_opt_out_in_a_fresh_process():
    """About float32: SIMKIT_ENABLE_X64=0 keeps JAX's float32; float32 tolerance 1e-4."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(SIMKIT_ENABLE_X64="0", SIMKIT_COMPILATION_CACHE="0")
    out = subprocess.run([sys.executable, "-c", "import simkit.reference\n" + FLOAT32_SCRIPT],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    dtype, err = out.stdout.split()
    assert dtype == "float32"
    assert float(err) < 1e-4


def test_to_xarray_names_the_extra_when_missing(monkeypatch):
    sol = simkit.solve(models.get("sir"), saveat=3)
    monkeypatch.setitem(sys.modules, "xarray", None)
    with pytest.raises(simkit.DependencyError, match=r"pip install 'simkit\[xarray\]'"):
        sol.to_xarray()
