"""Stencils: 2-D heat, explicit Euler, periodic 5-point Laplacian, float64, time per step.

    python benchmarks/stencil.py [--n 2048] [--steps 100] [--repeats 5]

Rows: simkit.stencil.integrate (ForwardEuler, one compiled rollout); NumPy with slices into
a ghost-padded array; a plain jax.jit + fori_loop with jnp.roll. The roofline is one read and
one write of the grid per step at the bandwidth measured here (a NumPy triad on the same
array size). Compile time (first call) is reported apart.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from simkit import stencil as sk
from timing import interleaved, timed  # benchmarks/timing.py (run as scripts)


def heat_rhs(t, u, p, space):
    return p["diffusivity"] * sk.laplacian(space.pad(u), space.spacing)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="bench-results/stencil.json")
    args = parser.parse_args()
    n, steps = args.n, args.steps
    grid = sk.Grid((n, n), 0.0, 1.0)
    h = grid.spacing[0]
    dt = 0.2 * h * h
    u0 = np.random.default_rng(0).random((1, n, n))
    model = sk.PDEModel(rhs=heat_rhs, grid=grid, bcs=sk.Periodic(), params={"diffusivity": 1.0}, u0=u0)

    def simkit_run():
        return sk.integrate(model, dt=dt, steps=steps, stepper=sk.ForwardEuler(), check_stability=False).us

    def numpy_run():
        u = u0[0].copy()
        p = np.empty((n + 2, n + 2))
        c = dt / (h * h)
        for _ in range(steps):
            p[1:-1, 1:-1] = u
            p[0, 1:-1], p[-1, 1:-1], p[1:-1, 0], p[1:-1, -1] = u[-1], u[0], u[:, -1], u[:, 0]
            u = u + c * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u)
        return u

    c = dt / (h * h)

    @jax.jit
    def roll_loop(u):
        def body(_, u):
            lap = jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4 * u
            return u + c * lap
        return jax.lax.fori_loop(0, steps, body, u)

    u0_j = jnp.asarray(u0[0])
    fns = {"simkit.stencil.integrate": simkit_run, "NumPy, ghost-padded slices": numpy_run,
           "jax.jit fori_loop + jnp.roll": lambda: roll_loop(u0_j)}
    compile_s = {k: timed(f) for k, f in fns.items() if k != "NumPy, ghost-padded slices"}
    t = interleaved(fns, args.repeats, warm_up=False)
    a, b = np.random.random((n, n)), np.random.random((n, n))
    out = np.empty_like(a)
    triad = []
    for _ in range(5):
        start = time.perf_counter()
        np.add(a, b, out=out)
        triad.append(time.perf_counter() - start)
    bandwidth = 3 * a.nbytes / min(triad)
    roofline = 2 * a.nbytes / bandwidth
    results = {k: v / steps for k, v in t.items()}
    print(f"2-D heat {n}x{n} float64, explicit Euler, periodic, {steps} steps; {len(jax.devices())} device(s)")
    print(f"  roofline (one read + one write at {bandwidth / 1e9:.1f} GB/s): {roofline * 1e3:.2f} ms/step")
    for k, v in results.items():
        extra = f"   (compile + first run {compile_s[k]:.2f} s)" if k in compile_s else ""
        print(f"  {k:34s} {v * 1e3:7.2f} ms/step  {v / results['simkit.stencil.integrate']:5.2f}x simkit's time"
              f"  {roofline / v:5.0%} of roofline{extra}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"per_step_s": results, "roofline_s": roofline, "compile_s": compile_s}, fh, indent=1)


if __name__ == "__main__":
    main()
