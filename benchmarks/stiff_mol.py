"""Large stiff systems by the method of lines: the 2-D Brusselator (issue 12, item 4).

    python benchmarks/stiff_mol.py [--n 32,72] [--rtols 1e-4,1e-6] [--repeats 1] [--solvers ...] [--out FILE]

``simkit.models.get("brusselator_2d")`` on an n x n periodic grid (2 n^2 states: 2,048 at
n = 32, 10,368 at n = 72), t in [0, 11.5], atol = rtol. Rows: simkit's default for the model
(what `simkit.solve` picks by size) and the named simkit solvers, against SciPy's BDF, Radau
and LSODA in their best honest form for a large system: a vectorised NumPy rhs (``np.roll``
Laplacian, as a SciPy user writes it) and ``jac_sparsity`` (the 5-point pattern of each
species plus the coupling of u and v at a point), so that SciPy colours the finite-difference
Jacobian and factors it sparsely (``splu``). The error of a run is the largest over the final
field of ``|y - ref| / (|ref| + 1)``, ``ref`` SciPy's BDF at rtol 1e-10 (n <= 32) or the
tightest simkit run (the JSON says which). Run time: median of ``--repeats`` runs after a
first, compiling, call (simkit) or of ``--repeats`` runs (SciPy); compile time apart.
Writes ``benchmarks/results/stiff_mol.json`` with the machine.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import json
import statistics
import sys
import time

import jax
import numpy as np
import scipy.integrate
import scipy.sparse

import simkit
from stiff import machine  # benchmarks/stiff.py

T1 = 11.5


def model(n: int):
    return simkit.models.pde_reaction.brusselator_2d(n)


def numpy_rhs(n: int, alpha: float = 10.0, forcing: float = 5.0):
    """The Brusselator as a SciPy user writes it: NumPy, periodic Laplacian by ``np.roll``."""
    m = model(n)
    x, y = m.grid.meshgrid()
    disc = (x - 0.3) ** 2 + (y - 0.6) ** 2 <= 0.1**2
    h = m.grid.spacing[0]
    c = alpha / h**2

    def rhs(t, z):
        u, v = z[: n * n].reshape(n, n), z[n * n:].reshape(n, n)
        lap_u = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u
        lap_v = np.roll(v, 1, 0) + np.roll(v, -1, 0) + np.roll(v, 1, 1) + np.roll(v, -1, 1) - 4 * v
        a2b = u * u * v
        du = 1.0 + a2b - 4.4 * u + c * lap_u + (forcing if t >= 1.1 else 0.0) * disc
        dv = 3.4 * u - a2b + c * lap_v
        return np.concatenate([du.ravel(), dv.ravel()])

    return rhs


def sparsity(n: int) -> scipy.sparse.csr_matrix:
    """The Jacobian's pattern: the periodic 5-point stencil of each species, u-v coupling."""
    idx = np.arange(n * n).reshape(n, n)
    rows, cols = [], []
    for s in (0, 1):
        for di, dj in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
            rows.append(s * n * n + idx.ravel())
            cols.append(s * n * n + np.roll(np.roll(idx, -di, 0), -dj, 1).ravel())
    for a, b in ((0, 1), (1, 0)):
        rows.append(a * n * n + idx.ravel())
        cols.append(b * n * n + idx.ravel())
    r, c = np.concatenate(rows), np.concatenate(cols)
    return scipy.sparse.csr_matrix((np.ones_like(r, float), (r, c)), shape=(2 * n * n, 2 * n * n))


def error(y, ref) -> float:
    return float(np.max(np.abs(np.asarray(y) - ref) / (np.abs(ref) + 1.0)))


def run_simkit(m, rtol, solver, repeats, max_steps=100_000):
    kw = {} if solver is None else {"solver": solver}

    def call():
        return simkit.solve(m, (0.0, T1), saveat=2, rtol=rtol, atol=rtol, throw=False, max_steps=max_steps, **kw)

    start = time.perf_counter()
    sol = jax.block_until_ready(call())
    first = time.perf_counter() - start
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(call())
        runs.append(time.perf_counter() - start)
    run = statistics.median(runs) if runs else first
    return sol, run, max(first - run, 0.0) if runs else None


def run_scipy(f, y0, method, rtol, jac_sparsity, repeats):
    runs, out = [], None
    for _ in range(max(repeats, 1)):
        start = time.perf_counter()
        kw = {} if method == "LSODA" else {"jac_sparsity": jac_sparsity}
        out = scipy.integrate.solve_ivp(f, (0.0, T1), y0, method=method, rtol=rtol, atol=rtol, **kw)
        runs.append(time.perf_counter() - start)
        if runs[-1] > 20:
            break
    return out, statistics.median(runs)


SOLVERS = {"default": None}
for _name in ("BDF", "Rodas5P", "RadauIIA5"):
    if hasattr(simkit, _name):
        SOLVERS[_name] = getattr(simkit, _name)()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="32,72")
    parser.add_argument("--rtols", default="1e-4,1e-6")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--solvers", default="default,BDF")
    parser.add_argument("--scipy", default="BDF,Radau")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "stiff_mol.json"))
    args = parser.parse_args(argv)
    rows = []
    for n in [int(v) for v in args.n.split(",")]:
        m = model(n)
        f = numpy_rhs(n)
        y0 = np.asarray(m.u0, float).reshape(-1)
        pattern = sparsity(n)
        ref_label = "scipy BDF rtol 1e-10"
        ref = scipy.integrate.solve_ivp(f, (0.0, T1), y0, method="BDF", rtol=1e-10, atol=1e-10,
                                        jac_sparsity=pattern).y[:, -1]
        for rtol in [float(r) for r in args.rtols.split(",")]:
            row = dict(n=n, states=2 * n * n, rtol=rtol, reference=ref_label, results={})
            for label in args.solvers.split(","):
                sol, run, comp = run_simkit(m, rtol, SOLVERS[label], args.repeats)
                row["results"][f"simkit {label}"] = dict(
                    solver=sol.solver_name, time=run, compile=comp, error=error(sol.ys[-1], ref),
                    status=int(sol.status), steps=int(sol.stats.get("num_steps", -1)))
                print(f"n={n} rtol={rtol:g} simkit {label:10s} {sol.solver_name:28s} {run:8.3f} s "
                      f"compile {comp if comp is not None else float('nan'):6.2f} s error "
                      f"{row['results'][f'simkit {label}']['error']:.1e} status {int(sol.status)}", flush=True)
            for method in args.scipy.split(","):
                out, run = run_scipy(f, y0, method, rtol, pattern, args.repeats)
                row["results"][f"scipy {method}"] = dict(time=run, error=error(out.y[:, -1], ref),
                                                         status=int(out.status), steps=len(out.t) - 1,
                                                         njev=int(getattr(out, "njev", -1) or -1),
                                                         nlu=int(getattr(out, "nlu", -1) or -1))
                print(f"n={n} rtol={rtol:g} scipy {method:12s} {run:8.3f} s error "
                      f"{row['results'][f'scipy {method}']['error']:.1e} status {out.status}", flush=True)
            rows.append(row)
    result = dict(command="python benchmarks/stiff_mol.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                  machine=machine(), rows=rows)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    return result


if __name__ == "__main__":
    main()
