"""simkit's fused kernels against the CPU peers (issue: fast kernels).

    python benchmarks/kernels.py [--repeats 9]

Peers: SciPy (DOP853, RK45, LSODA, Radau, BDF), diffrax (Tsit5, Kvaerno5), and the
numba-compiled numbalsoda (DOP853, LSODA) when installed (`pip install ".[bench]"`, needs a
Fortran compiler to build). Each row: median run time over interleaved repeats after a
warm-up; compile time of simkit's first call reported apart. Ratios are peer / simkit.
"""

from __future__ import annotations

import os

# compile times are measured: no persistent compilation cache in this process
os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import json
import os

import diffrax as dfx
import jax
import jax.numpy as jnp
import numpy as np

import simkit
from timing import interleaved, timed  # benchmarks/timing.py (run as scripts)
from simkit import models, reference


def numbalsoda_peers():
    try:
        import numba as nb
        from numbalsoda import dop853, lsoda, lsoda_sig
    except ImportError:
        return None

    @nb.cfunc(lsoda_sig)
    def lorenz(t, u, du, p):
        du[0] = 10.0 * (u[1] - u[0])
        du[1] = u[0] * (28.0 - u[2]) - u[1]
        du[2] = u[0] * u[1] - (8.0 / 3.0) * u[2]

    @nb.cfunc(lsoda_sig)
    def robertson(t, u, du, p):
        du[0] = -0.04 * u[0] + 1.0e4 * u[1] * u[2]
        du[1] = 0.04 * u[0] - 1.0e4 * u[1] * u[2] - 3.0e7 * u[1] * u[1]
        du[2] = 3.0e7 * u[1] * u[1]

    return dop853, lsoda, lorenz.address, robertson.address


def print_rows(title: str, row: dict) -> None:
    base = row["times"][row["reference"]]
    print(f"\n{title} (peer / {row['reference']})")
    for k, v in row["times"].items():
        comp = row["compile"].get(k)
        extra = f"   compile {comp:.2f} s" if comp is not None else ""
        print(f"  {k:36s} {v * 1e3:10.3f} ms   x{v / base:8.2f}{extra}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out", default="bench-results/kernels.json")
    args = parser.parse_args()
    rows: dict = {}
    peers = numbalsoda_peers()

    # -- Lorenz: t in [0, 100], rtol = atol = 1e-8, 1000 saved points ------------------
    lz = models.get("lorenz")
    t_eval = np.linspace(0.0, 100.0, 1000)
    fns = {}
    compile_s = {}
    for label, solver in (("simkit DOP853", simkit.DOP853()), ("simkit Tsit5", simkit.Tsit5()),
                          ("diffrax Tsit5 (via simkit.solve)", dfx.Tsit5())):
        fn = (lambda s: lambda: simkit.solve(lz, (0.0, 100.0), saveat=1000, rtol=1e-8, atol=1e-8, solver=s).ys)(solver)
        compile_s[label] = timed(fn)
        fns[label] = fn
    if peers:
        dop853, lsoda, lorenz_addr, rob_addr = peers
        u0 = np.ones(3)
        dop853(lorenz_addr, u0, t_eval, rtol=1e-8, atol=1e-8)
        fns["numbalsoda DOP853"] = lambda: dop853(lorenz_addr, u0, t_eval, rtol=1e-8, atol=1e-8)[0]
    lorenz_t = interleaved(fns, args.repeats)
    for m in ("DOP853", "RK45"):
        lorenz_t[f"scipy {m}"] = interleaved(
            {m: lambda m=m: reference.solve_ivp(lz, (0.0, 100.0), saveat=1000, method=m, rtol=1e-8, atol=1e-8).ys}, 3)[m]
    rows["lorenz"] = dict(times=lorenz_t, compile=compile_s, reference="simkit DOP853")

    # -- Robertson: t to 1e5, rtol 1e-6, atol 1e-10 ---------------------------------
    rob = models.get("robertson")
    fns = {}
    compile_s = {}
    fn = lambda: simkit.solve(rob, saveat=100, rtol=1e-6, atol=1e-10, solver=simkit.Rodas4()).ys
    compile_s["simkit Rodas4"] = timed(fn)
    fns["simkit Rodas4"] = fn
    fns["diffrax Kvaerno5 (default)"] = lambda: simkit.solve(rob, saveat=100, rtol=1e-6, atol=1e-10, solver=dfx.Kvaerno5()).ys
    if peers:
        t_rob = np.logspace(-5, 5, 100)
        t_rob[0] = 0.0
        u0 = np.array([1.0, 0.0, 0.0])
        fns["numbalsoda LSODA"] = lambda: lsoda(rob_addr, u0, t_rob, rtol=1e-6, atol=1e-10)[0]
    rob_t = interleaved(fns, args.repeats)
    for m in ("LSODA", "Radau", "BDF"):
        rob_t[f"scipy {m}"] = interleaved(
            {m: lambda m=m: reference.solve_ivp(rob, saveat=100, method=m, rtol=1e-6, atol=1e-10).ys}, 3)[m]
    rows["robertson"] = dict(times=rob_t, compile=compile_s, reference="simkit Rodas4")

    # -- compile time of each kernel on a 3-state model (fresh rhs: no cache) --------
    compile_3 = {}
    for solver in (simkit.Tsit5(), simkit.DOPRI5(), simkit.DOP853(), simkit.Rodas4()):
        model = lz.replace(rhs=lambda t, y, p: lz.rhs(t, y, p))  # a new function: a new program
        compile_3[repr(solver)] = timed(lambda: simkit.solve(model, (0.0, 1.0), saveat=11, solver=solver).ys)

    # -- reverse-mode gradient vs forward solve (Lorenz, 3 parameters) -------------
    p = {k: jnp.asarray(v) for k, v in lz.params.items()}

    def loss(params):
        return jnp.sum(simkit.solve(lz, (0.0, 10.0), params=params, saveat=101, rtol=1e-8, atol=1e-8).ys ** 2)

    grad = jax.jit(jax.grad(loss))
    forward = jax.jit(loss)
    grad_t = interleaved({"forward solve": lambda: forward(p), "jax.grad": lambda: grad(p)}, args.repeats)

    # -- ensemble layout: jax.vmap of the kernel over 2048 members (lockstep batching) ---
    rhos = jnp.asarray(np.random.default_rng(0).uniform(10.0, 50.0, 2048))
    ens = {}
    for label, solver in (("simkit Tsit5", simkit.Tsit5()), ("diffrax Tsit5", dfx.Tsit5())):
        f = jax.jit(jax.vmap(lambda r, s=solver: simkit.solve(
            lz, (0.0, 10.0), params={"rho": r}, saveat=2, rtol=1e-6, atol=1e-6, solver=s).ys[-1]))
        ens[label] = f
    ens_t = interleaved({k: (lambda f=f: f(rhos)) for k, f in ens.items()}, max(3, args.repeats // 3))

    print_rows("Lorenz t 0..100, rtol=atol=1e-8, 1000 saves", rows["lorenz"])
    print_rows("Robertson t 0..1e5, rtol 1e-6, atol 1e-10", rows["robertson"])
    print("\ncompile + first run on a 3-state model (new program)")
    for k, v in compile_3.items():
        print(f"  {k:36s} {v:.2f} s")
    print("\nLorenz t 0..10, 101 saves: reverse-mode gradient w.r.t. 3 parameters")
    print(f"  forward {grad_t['forward solve'] * 1e3:.3f} ms, grad {grad_t['jax.grad'] * 1e3:.3f} ms, "
          f"ratio {grad_t['jax.grad'] / grad_t['forward solve']:.2f}")
    print("\nensemble: jax.vmap over 2048 Lorenz members (rho ~ U[10, 50], t 0..10, 1e-6), one device")
    for k, v in ens_t.items():
        print(f"  {k:36s} {len(rhos) / v:10.0f} solves/s")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"rows": rows, "compile_3_state": compile_3, "gradient": grad_t,
                   "ensemble_solves_per_s": {k: len(rhos) / v for k, v in ens_t.items()}}, fh, indent=1)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
