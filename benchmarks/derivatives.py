"""Derivatives through the kernels against the solve itself: the same
speed under ``jax.jvp``/``jax.grad``.

    python benchmarks/derivatives.py [--repeats 15] [--out benchmarks/results/derivatives.json]

A kernel solve's derivative is its forward sensitivity: the JVP rule
(`simkit/kernels/autodiff.py`) pushes one tangent direction per differentiated scalar
through the same loop as the solve. Reported for each workload: the solve and the
derivative (medians of ``--repeats`` interleaved calls of the compiled programs), their
ratio, the number of directions, and each program's compile time (first call minus the
median).

- Lorenz, t 0..10, rtol = atol = 1e-8, 101 saves: ``jax.grad`` of sum(y^2) w.r.t. the 3
  parameters (the loss of `benchmarks/kernels.py`).
- Robertson, t 0..1e5, rtol 1e-6, atol 1e-10, 20 saves: ``jax.jacfwd`` of the saved states
  w.r.t. the 3 rates (Rodas5P).
- Fisher-KPP on 24 cells (no-flux walls; `tests/fitting/test_fit.py`'s PDE inverse problem),
  t 0..2, rtol 1e-8, atol 1e-10, 6 saves: ``jax.jacfwd`` w.r.t. the 2 parameters, and w.r.t.
  the 2 parameters and the 24 initial values.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")  # compile time is measured

import argparse
import json
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import simkit
from simkit import models
from simkit import stencil as sk
from simkit._config import configure_own_process
configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it
from stencil import machine  # benchmarks/stencil.py
from timing import interleaved, timed  # benchmarks/timing.py


def workloads() -> dict:
    """name -> (solve, derivative, argument, directions)."""
    out = {}
    lz = models.get("lorenz")
    p = {k: jnp.asarray(float(v)) for k, v in lz.params.items()}

    def lorenz_loss(params):
        return jnp.sum(simkit.solve(lz, (0.0, 10.0), params=params, saveat=101, rtol=1e-8, atol=1e-8).ys ** 2)

    out["Lorenz: jax.grad w.r.t. 3 parameters"] = (jax.jit(lorenz_loss), jax.jit(jax.grad(lorenz_loss)), p, 3)

    rob = models.get("robertson")
    q = {k: jnp.asarray(float(v)) for k, v in rob.params.items()}

    def rob_states(params):
        return simkit.solve(rob, (0.0, 1e5), params=params, saveat=20, rtol=1e-6, atol=1e-10).ys

    out["Robertson (Rodas5P): jax.jacfwd w.r.t. 3 rates"] = (jax.jit(rob_states), jax.jit(jax.jacfwd(rob_states)), q, 3)

    grid = sk.Grid((24,), 0.0, 1.0)
    x = grid.coordinates()

    def kpp_rhs(t, u, p, space):
        return p["D"] * sk.laplacian(space.pad(u), space.spacing) + p["r"] * u * (1 - u)

    kpp = sk.PDEModel(rhs=kpp_rhs, grid=grid, bcs=sk.Neumann(0.0), params={"D": 0.01, "r": 2.0},
                      u0=(0.9 * np.exp(-((x - 0.3) / 0.1) ** 2))[None], name="fisher_kpp")
    u0 = jnp.asarray(kpp.u0)

    def kpp_states(params, u_init=u0):
        return simkit.solve(kpp, (0.0, 2.0), y0=u_init, params=params, saveat=6, rtol=1e-8, atol=1e-10).ys

    r = {"D": jnp.asarray(0.01), "r": jnp.asarray(2.0)}
    out["Fisher-KPP, 24 cells: jax.jacfwd w.r.t. 2 parameters"] = (
        jax.jit(kpp_states), jax.jit(jax.jacfwd(kpp_states)), r, 2)
    both = jax.jit(lambda a: jax.jacfwd(kpp_states, argnums=(0, 1))(*a))
    out["Fisher-KPP, 24 cells: jax.jacfwd w.r.t. 2 parameters and the 24 initial values"] = (
        jax.jit(lambda a: kpp_states(*a)), both, (r, u0), 26)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "derivatives.json"))
    args = ap.parse_args()
    before = machine()
    start = time.perf_counter()
    rows = {}
    for name, (solve, derivative, arg, directions) in workloads().items():
        first = {"solve": timed(lambda: solve(arg)), "derivative": timed(lambda: derivative(arg))}
        run = interleaved({"solve": lambda: solve(arg), "derivative": lambda: derivative(arg)}, args.repeats)
        rows[name] = dict(directions=directions, solve_ms=run["solve"] * 1e3, derivative_ms=run["derivative"] * 1e3,
                          ratio=run["derivative"] / run["solve"],
                          compile_s={k: first[k] - run[k] for k in first})
        row = rows[name]
        print(f"{name}: solve {row['solve_ms']:.3f} ms, derivative {row['derivative_ms']:.3f} ms "
              f"({row['ratio']:.2f}x, {directions} directions); compile {row['compile_s']['solve']:.2f} s / "
              f"{row['compile_s']['derivative']:.2f} s")
    wall = time.perf_counter() - start
    result = dict(command=" ".join(["python benchmarks/derivatives.py", *sys.argv[1:]]), machine=before,
                  load_average_after=list(os.getloadavg()), wall_s=wall, repeats=args.repeats,
                  simkit=simkit.__version__, rows=rows)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"wall {wall:.0f} s; wrote {args.out}")


if __name__ == "__main__":
    main()
