"""Large stiff systems by the method of lines: the 2-D Brusselator.

    python benchmarks/stiff_mol.py [--n 32,72,182] [--rtols 1e-4,1e-6] [--repeats 1]
                                   [--solvers default,dense,unpreconditioned] [--scipy BDF,Radau] [--out FILE]

``simkit.models.get("brusselator_2d")`` on an n x n periodic grid (2 n^2 states: 2,048 at
n = 32, 10,368 at n = 72, 66,248 at n = 182), alpha = 10 (the diffusion: c |lambda_max| of
10^5-10^6 at the steps taken), t in [0, 11.5], atol = rtol. Rows:

* simkit's default for the model (what `simkit.solve` picks: `simkit.BDF`, dense up to 2,048
  states, matrix-free Newton-Krylov above with the FFT inverse of the diffusion as the
  preconditioner, `simkit.stencil.preconditioner`);
* ``dense``: `simkit.BDF(linear_solver="dense")` (n <= 32 only: a dense Jacobian of 10,368
  states is 0.9 GB and its LU minutes);
* ``krylov``: `simkit.BDF(linear_solver="krylov")` (matrix-free with the model's
  preconditioner, at every size);
* ``unpreconditioned``: `simkit.BDF(linear_solver="krylov", preconditioner=None)` (n <= 72:
  at n = 182, rtol 1e-4, one run had not finished after 5.5 minutes);
* ``plain``: the same rhs as a plain `simkit.ODEModel` (no preconditioner), simkit's default
  for it: `simkit.BDF` with the Jacobian's pattern read from the rhs
  (`simkit.kernels.structure`), banded where that band is narrow, as a user who writes the
  model by hand gets it;
* SciPy's BDF (and Radau, n <= 32: minutes beyond) in their best honest form for a large
  system: a vectorised NumPy rhs (``np.roll`` Laplacian, as a SciPy user writes it) and
  ``jac_sparsity`` (the 5-point pattern of each species plus the coupling of u and v at a
  point), so that SciPy colours the finite-difference Jacobian and factors it sparsely
  (``splu``).

Every row runs in a process of its own, which reports its run time, its peak resident
memory (the whole process: Python, JAX's runtime and compiler included) and its final
state. simkit: the median of ``--repeats`` runs after a first, compiling, call (compile
time apart); SciPy: ``--repeats`` runs (one if a run takes over 20 s). The error of a run
is the largest over the final field of ``|y - ref| / (|ref| + 1)``, ``ref`` SciPy's BDF at
rtol 1e-10 for n <= 32; above, SciPy's BDF at 1e-10 takes hours, and ``ref`` is
simkit's matrix-free BDF at rtol 1e-10, whose agreement with SciPy's reference at n = 32 is
recorded (``reference_check``). Writes ``benchmarks/results/stiff_mol.json`` with the
machine.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import jax
import numpy as np
import scipy.integrate
import scipy.sparse

import simkit
from simkit._config import configure_own_process
configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it
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


SOLVERS = {"default": None, "dense": simkit.BDF(linear_solver="dense"), "krylov": simkit.BDF(linear_solver="krylov"),
           "unpreconditioned": simkit.BDF(linear_solver="krylov", preconditioner=None), "plain": None}


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def plain(n: int) -> simkit.ODEModel:
    """The model's rhs as a plain ODEModel: no preconditioner, nothing but the rhs."""
    ode = model(n).to_ode()
    return simkit.ODEModel(rhs=ode.rhs, params=ode.params, y0=ode.y0, state_names=ode.state_names, name="plain",
                           t_span=ode.t_span, stiff=True)


def row(kind: str, label: str, n: int, rtol: float, repeats: int, out: str) -> None:
    """One row, in this process: writes its final state to ``out`` (.npy) and prints a JSON line."""
    m = model(n)
    if kind == "simkit":
        if label == "plain":
            m = plain(n)
        kw = {} if SOLVERS[label] is None else {"solver": SOLVERS[label]}

        def call():
            return jax.block_until_ready(simkit.solve(m, (0.0, T1), saveat=2, rtol=rtol, atol=rtol, throw=False,
                                                      max_steps=100_000, **kw))

        start = time.perf_counter()
        sol = call()
        first = time.perf_counter() - start
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            call()
            runs.append(time.perf_counter() - start)
        run = statistics.median(runs) if runs else first
        res = dict(solver=sol.solver_name, time=run, compile=max(first - run, 0.0) if runs else None,
                   status=int(sol.status), steps=int(sol.stats["num_steps"]),
                   **{k: int(sol.stats[k]) for k in ("num_jacobians", "num_lu_decompositions", "num_linear_iterations",
                                                       "num_rhs") if k in sol.stats})
        y = np.asarray(sol.ys[-1])
    else:
        f, y0, pattern = numpy_rhs(n), np.asarray(m.u0, float).reshape(-1), sparsity(n)
        runs = []
        for _ in range(max(repeats, 1)):
            start = time.perf_counter()
            kw = {} if label == "LSODA" else {"jac_sparsity": pattern}
            sol = scipy.integrate.solve_ivp(f, (0.0, T1), y0, method=label, rtol=rtol, atol=rtol, **kw)
            runs.append(time.perf_counter() - start)
            if runs[-1] > 20:
                break
        res = dict(time=statistics.median(runs), status=int(sol.status), steps=len(sol.t) - 1,
                   njev=int(getattr(sol, "njev", -1) or -1), nlu=int(getattr(sol, "nlu", -1) or -1), nfev=int(sol.nfev))
        y = sol.y[:, -1]
    np.save(out, y)
    res["peak_memory_mb"] = peak_mb()
    print("ROW " + json.dumps(res), flush=True)


def run_row(kind: str, label: str, n: int, rtol: float, repeats: int) -> tuple[dict, np.ndarray]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "y.npy")
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--row", kind, label, str(n), repr(rtol),
                               str(repeats), out], capture_output=True, text=True, cwd=os.path.dirname(__file__))
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("ROW ")]
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"row {kind} {label} n={n} rtol={rtol} failed:\n{proc.stderr[-3000:]}")
        return json.loads(lines[-1][4:]), np.load(out)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="32,72,182")
    parser.add_argument("--rtols", default="1e-4,1e-6")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--solvers", default="default,dense,unpreconditioned")
    parser.add_argument("--scipy", default="BDF,Radau", help="SciPy methods, comma-separated (\"\" for none)")
    parser.add_argument("--dense-max", type=int, default=32, help="largest n run with the dense BDF")
    parser.add_argument("--radau-max", type=int, default=32, help="largest n run with SciPy's Radau")
    parser.add_argument("--unpreconditioned-max", type=int, default=72,
                        help="largest n run without a preconditioner (at n = 182, rtol 1e-4 it ran over 5 minutes)")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "stiff_mol.json"))
    args = parser.parse_args(argv)
    rows, check = [], None
    for n in [int(v) for v in args.n.split(",")]:
        if n <= 32:
            ref_label = "scipy BDF rtol 1e-10 (jac_sparsity)"
            _, ref = run_row("scipy", "BDF", n, 1e-10, 0)
            if check is None:  # how well simkit's own reference (used above n = 32) agrees with it
                info, ours = run_row("simkit", "krylov", n, 1e-10, 0)
                check = {"n": n, "error of simkit krylov at 1e-10": error(ours, ref), "simkit time": info["time"]}
        else:
            ref_label = "simkit.BDF(linear_solver='krylov') rtol 1e-10"
            _, ref = run_row("simkit", "krylov", n, 1e-10, 0)
        for rtol in [float(r) for r in args.rtols.split(",")]:
            row_out = dict(n=n, states=2 * n * n, rtol=rtol, reference=ref_label, results={})
            todo = [("simkit", s) for s in args.solvers.split(",") if not (s == "dense" and n > args.dense_max)
                    and not (s == "unpreconditioned" and n > args.unpreconditioned_max)]
            todo += [("scipy", s) for s in args.scipy.split(",") if s and not (s == "Radau" and n > args.radau_max)]
            for kind, label in todo:
                res, y = run_row(kind, label, n, rtol, args.repeats)
                res["error"] = error(y, ref)
                row_out["results"][f"{kind} {label}"] = res
                print(f"n={n} ({2 * n * n} states) rtol={rtol:g} {kind} {label:16s} {res.get('solver', ''):50s} "
                      f"{res['time']:8.3f} s compile {res['compile'] if res.get('compile') is not None else float('nan'):6.2f} s "
                      f"error {res['error']:.1e} peak {res['peak_memory_mb']:6.0f} MB status {res['status']}",
                      flush=True)
            rows.append(row_out)
    result = dict(command="python benchmarks/stiff_mol.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                  machine=machine(), reference_check=check, rows=rows)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    return result


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--row":
        kind, label, n, rtol, repeats, out = sys.argv[2:8]
        row(kind, label, int(n), float(rtol), int(repeats), out)
    else:
        main()
