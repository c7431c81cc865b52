"""Ensembles: simkit.ensemble against the naive jit(vmap) of the same kernel, SciPy and diffrax.

    python benchmarks/ensemble.py [--members 10000] [--repeats 3]

Run in a fresh process: simkit configures one CPU device per core at import (see README).
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import json

import diffrax as dfx
import jax
import jax.numpy as jnp
import numpy as np

import simkit
from simkit import models, reference
from timing import interleaved, timed  # benchmarks/timing.py (run as scripts)


def naive(model, solver, t1, tol, **member_axes):
    names = list(member_axes)

    @jax.jit
    def run(*values):
        def one(*vals):
            return simkit.solve(model, (0.0, t1), params=dict(zip(names, vals)), saveat=2,
                                rtol=tol, atol=tol, solver=solver, throw=False).ys[-1]
        return jax.vmap(one)(*values)

    values = [jnp.asarray(v) for v in member_axes.values()]
    return lambda: run(*values)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="bench-results/ensemble.json")
    args = parser.parse_args()
    n = args.members
    rng = np.random.default_rng(0)
    devices = jax.local_devices()
    print(f"{len(devices)} CPU devices, {os.cpu_count()} cores")
    results = {}

    lorenz = models.get("lorenz")
    rhos = rng.uniform(10.0, 50.0, n)

    def ens(**kw):
        return lambda: simkit.ensemble(lorenz, (0.0, 10.0), params={"rho": rhos}, saveat=2,
                                       rtol=1e-6, atol=1e-6, **kw).ys

    fns = {
        "simkit.ensemble (balanced, all devices)": ens(balance=True),
        "simkit.ensemble (default: unbalanced, all devices)": ens(),
        "simkit.ensemble (default, one device)": ens(devices=devices[:1]),
        "naive jit(vmap(solve)), simkit Tsit5": naive(lorenz, simkit.Tsit5(), 10.0, 1e-6, rho=rhos),
        "naive jit(vmap(solve)), diffrax Tsit5": naive(lorenz, dfx.Tsit5(), 10.0, 1e-6, rho=rhos),
    }
    compile_s = {k: timed(f) for k, f in fns.items()}
    t = interleaved(fns, args.repeats, warm_up=False)
    scipy_n = 50
    scipy_t = interleaved({"scipy": lambda: [reference.solve_ivp(lorenz, (0.0, 10.0), params={"rho": r}, saveat=2, method="RK45", rtol=1e-6, atol=1e-6) for r in rhos[:scipy_n]]}, 1)["scipy"]
    results["lorenz"] = {k: n / v for k, v in t.items()} | {"scipy RK45 loop": scipy_n / scipy_t}
    print(f"\nLorenz, rho ~ U[10, 50], t 0..10, rtol = atol = 1e-6, {n} members: solves/s")
    for k, v in results["lorenz"].items():
        print(f"  {k:44s} {v:10.0f}" + (f"   (compile+first {compile_s[k]:.1f} s)" if k in compile_s else ""))

    vdp = models.get("van_der_pol")
    mus = np.exp(rng.uniform(np.log(0.1), np.log(100.0), n // 4))
    m = len(mus)
    fns = {
        "simkit.ensemble (balanced)": lambda: simkit.ensemble(vdp, (0.0, 20.0), params={"mu": mus}, saveat=2, rtol=1e-6, atol=1e-6, solver=simkit.Rodas4(), balance=True).ys,
        "simkit.ensemble (unbalanced)": lambda: simkit.ensemble(vdp, (0.0, 20.0), params={"mu": mus}, saveat=2, rtol=1e-6, atol=1e-6, solver=simkit.Rodas4(), balance=False).ys,
        "naive jit(vmap(solve)), simkit Rodas4": naive(vdp, simkit.Rodas4(), 20.0, 1e-6, mu=mus),
    }
    for f in fns.values():
        timed(f)
    t = interleaved(fns, args.repeats, warm_up=False)
    results["van_der_pol"] = {k: m / v for k, v in t.items()}
    print(f"\nVan der Pol, mu log-uniform in [0.1, 100], t 0..20, 1e-6, Rodas4, {m} members: solves/s")
    for k, v in results["van_der_pol"].items():
        print(f"  {k:44s} {v:10.0f}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
