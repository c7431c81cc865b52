"""Domain-decomposition validation: decomposed runs on 1/2/4/8 simulated devices against the
single-device run (expected difference: exactly 0 with FMA contraction off), a scaling table
on simulated devices, and a figure of a decomposed 2-D run with the shard boundaries.

The device counts need a fresh process (XLA fixes them at start-up): `run_in_subprocess`
starts one with ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` and
``SIMKIT_STRICT_FP=1`` and calls `agreement` and `scaling` there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import numpy as np

MESHES = {1: [(2,), (4,), (8,)], 2: [(2, 1), (4, 1), (2, 2), (4, 2)], 3: [(2, 1, 1), (2, 2, 1), (2, 2, 2)]}


def agreement(names: list[str], steps: int = 4, meshes: dict[int, list[tuple[int, ...]]] | None = None
              ) -> dict[str, dict[str, float]]:
    """``{model: {mesh shape: max |decomposed - single device|}}`` for explicit models
    (RK4 at a quarter of the stable step), on every mesh of `meshes` (by grid dimension;
    default `MESHES`) the devices allow."""
    import jax

    from .. import models, parallel
    from ..stencil import integrate, spectral_radius

    out: dict[str, dict[str, float]] = {}
    for name in names:
        m = models.get(name)
        rho, _ = spectral_radius(m, m.params, m.u0)
        dt = 0.25 * 2.5 / rho
        base = integrate(m, dt=dt, steps=steps, save_every=steps // 2)
        out[name] = {}
        for shape in (meshes or MESHES)[m.grid.ndim]:
            count = int(np.prod(shape))
            if count > len(jax.devices()):
                continue
            mesh = parallel.mesh_for(m.grid, jax.devices()[:count], shape=shape)
            run = parallel.integrate(m, mesh=mesh, dt=dt, steps=steps, save_every=steps // 2)
            out[name][str(shape)] = float(np.abs(run.us - base.us).max())
    return out


def scaling(n: int = 1024, steps: int = 50, repeats: int = 3) -> dict[str, float]:
    """Seconds per step of 2-D heat (Euler, periodic) on 1, 2, 4 devices: strong (n x n)
    and weak (n/2 x n per device) scaling, median of `repeats`."""
    import jax

    from .. import parallel
    from ..stencil import ForwardEuler, Grid, Periodic, PDEModel, laplacian

    def heat(nx, ny):
        grid = Grid((nx, ny), 0.0, (nx / ny, 1.0))
        return PDEModel(rhs=lambda t, u, p, s: p["d"] * laplacian(s.pad(u), s.spacing), grid=grid,
                        bcs=Periodic(), params={"d": 1.0}, u0=np.random.default_rng(0).random((1, nx, ny)))

    def per_step(model, shape):
        mesh = parallel.mesh_for(model.grid, jax.devices()[: int(np.prod(shape))], shape=shape)
        kw = dict(mesh=mesh, dt=0.2 / n**2, steps=steps, stepper=ForwardEuler(), check_stability=False)
        parallel.integrate(model, **kw)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            parallel.integrate(model, **kw)
            times.append(time.perf_counter() - start)
        return float(np.median(times)) / steps

    out = {}
    for k, shape in [(1, (1, 1)), (2, (2, 1)), (4, (4, 1)), (4, (2, 2))]:
        out[f"strong {n}x{n}, {k} device(s) {shape}"] = per_step(heat(n, n), shape)
    for k in (1, 2, 4):
        out[f"weak {k * n // 2}x{n}, {k} device(s)"] = per_step(heat(k * n // 2, n), (k, 1))
    return out


def run_in_subprocess(names: list[str], timeout: int = 900) -> dict[str, Any]:
    """`agreement` and `scaling` in a fresh process with 8 simulated devices of the host's CPU
    and strict FP (on an accelerator's machine too: this process may hold the accelerator)."""
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "SIMKIT_CPU_DEVICES")}
    env.update(XLA_FLAGS="--xla_force_host_platform_device_count=8", SIMKIT_STRICT_FP="1",
               SIMKIT_COMPILATION_CACHE="0", JAX_PLATFORMS="cpu")
    code = ("import json; from simkit.validation import parallel as p; "
            f"print(json.dumps({{'agreement': p.agreement({names!r}), 'scaling': p.scaling()}}))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env)
    if run.returncode:
        raise RuntimeError(f"parallel validation subprocess failed:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def cases() -> tuple[list[dict[str, Any]], dict[str, float]]:
    """One case per model: the largest difference over all meshes (bound 0: bit for bit)."""
    names = ["heat_2d", "gray_scott", "burgers", "wave", "heat_3d", "kuramoto_sivashinsky"]
    data = run_in_subprocess(names)
    results = []
    for name, per_mesh in data["agreement"].items():
        worst = max(per_mesh.values())
        results.append(dict(name=f"{name} on {', '.join(per_mesh)} devices", kind="devices", metric=worst,
                            bound=0.0, passed=worst == 0.0,
                            note="max abs(decomposed - single device) over 4 RK4 steps; SIMKIT_STRICT_FP=1"))
    return results, data["scaling"]


def figure_decomposed(path: str) -> None:
    """Gray-Scott decomposed over the local devices (2x2 pencils when there are 4), with the
    shard boundaries drawn."""
    import jax
    import matplotlib.pyplot as plt

    from .. import models, parallel
    from .stencils import label_field

    m = models.get("gray_scott")
    count = 4 if len(jax.devices()) >= 4 else len(jax.devices())
    shape = (2, 2) if count == 4 else (count, 1)
    mesh = parallel.mesh_for(m.grid, jax.devices()[:count], shape=shape)
    sol = parallel.integrate(m, mesh=mesh, dt=1.0, steps=3000, save_every=3000)
    fig, ax = plt.subplots(figsize=(5.2, 4.6), layout="constrained")
    sol.plot(ax, component="v")
    label_field(ax, sol.model_units, "v")
    lo, hi = m.grid.lower, m.grid.upper
    for axis, parts in enumerate(shape):
        for k in range(1, parts):
            edge = lo[axis] + k * (hi[axis] - lo[axis]) / parts
            if axis == 0:
                ax.axhline(edge, color="w", lw=1.2, ls="--")
            else:
                ax.axvline(edge, color="w", lw=1.2, ls="--")
    ax.set_title(f"Gray-Scott v, t = {float(sol.ts[-1]):g}, on a {shape[0]}x{shape[1]} device mesh\n"
                 "(dashed: shard edges)", fontsize=9)
    fig.savefig(path, dpi=100)
    plt.close(fig)
