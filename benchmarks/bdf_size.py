"""simkit.BDF on a stiff reaction-diffusion system by the method of lines, at four sizes.

    python benchmarks/bdf_size.py [--repeats 3] [--sizes 50,200,800,1600] [--out FILE]

The 1-D Brusselator with diffusion (Hairer & Wanner II, section IV.1, alpha = 1/50,
u = 1 + sin(2 pi x), v = 3, Dirichlet ends), t in [0, 10], N grid points: 2N states
(default N = 50, 200, 800, 1600: 100, 400, 1600, 3200 states; stiffness ~ alpha (N + 1)^2), rtol = atol =
1e-6. Rows:

* simkit.BDF with the same ``jac_sparsity`` pattern as SciPy's row (reordered into a band,
  Jacobian by one Jacobian-vector product per band diagonal, banded LU:
  `simkit.kernels.banded`);
* simkit.BDF, dense (Jacobian by ``jax.jacfwd``, LAPACK LU above `SMALL_SYSTEM` states);
* simkit.BDF, matrix-free (``linear_solver="krylov"``: GMRES on Jacobian-vector products,
  no preconditioner: this model is a plain `ODEModel`);
* simkit.Rodas5P (dense LU every step, the masked-loop LU of `simkit.kernels.linalg`);
  left out above ``--rodas-max`` states (default 400: the masked LU is O(n^3) per step);
* simkit's default for a stiff model of this size (`simkit._prepare.choose_solver`: BDF,
  dense up to 2048 states, matrix-free above);
* SciPy's BDF with a plain NumPy rhs and ``jac_sparsity`` (the tridiagonal-by-blocks pattern:
  finite differences by column groups and a sparse LU), SciPy's best honest form.

Each row's error is the largest over the components of ``|y - ref| / (atol + rtol |ref|)`` at
t = 10 (``reference.compare``'s measure), ``ref`` from SciPy's Radau at rtol = atol = 1e-10
with ``jac_sparsity``. simkit: the run time is the median over ``repeats`` interleaved rounds
after the first call (a row slower than 5 s: one run); compile time is the first call's extra
time (persistent cache off). The machine is shared: the load average before and after is
recorded with the results.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")  # compile times are measured

import argparse
import json
import statistics
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy  # noqa: E402
import scipy.integrate  # noqa: E402
import scipy.sparse  # noqa: E402

import simkit  # noqa: E402
from simkit.kernels.linalg import SMALL_SYSTEM  # noqa: E402
from simkit._config import configure_own_process  # noqa: E402
configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it
from stencil import machine as stencil_machine  # noqa: E402  (benchmarks/stencil.py, run as scripts)

ALPHA, T1, RTOL, ATOL = 0.02, 10.0, 1e-6, 1e-6
SLOW = 5.0  # seconds: a row slower than this runs once (the script stays within ~3 minutes)


def brusselator_jax(n: int):
    def rhs(t, y, p):
        u, v = y[:n], y[n:]
        c = p["alpha"] * (n + 1) ** 2
        up = jnp.concatenate([jnp.ones(1), u, jnp.ones(1)])
        vp = jnp.concatenate([jnp.full(1, 3.0), v, jnp.full(1, 3.0)])
        return jnp.concatenate([1 + u * u * v - 4 * u + c * (up[:-2] - 2 * u + up[2:]),
                                3 * u - u * u * v + c * (vp[:-2] - 2 * v + vp[2:])])

    x = np.arange(1, n + 1) / (n + 1)
    y0 = np.concatenate([1 + np.sin(2 * np.pi * x), np.full(n, 3.0)])
    return simkit.ODEModel(rhs=rhs, params={"alpha": ALPHA}, y0=y0, stiff=True,
                           state_names=tuple(f"u{i}" for i in range(n)) + tuple(f"v{i}" for i in range(n)))


def brusselator_numpy(n: int):
    """The same rhs as a SciPy user writes it, and its sparsity pattern."""
    c = ALPHA * (n + 1) ** 2

    def rhs(t, y):
        u, v = y[:n], y[n:]
        up = np.concatenate([[1.0], u, [1.0]])
        vp = np.concatenate([[3.0], v, [3.0]])
        return np.concatenate([1 + u * u * v - 4 * u + c * (up[:-2] - 2 * u + up[2:]),
                               3 * u - u * u * v + c * (vp[:-2] - 2 * v + vp[2:])])

    tri = scipy.sparse.diags_array([np.ones(n - 1), np.ones(n), np.ones(n - 1)], offsets=[-1, 0, 1], shape=(n, n))
    eye = scipy.sparse.identity(n)
    pattern = scipy.sparse.bmat([[tri, eye], [eye, tri]]).tocsc()
    return rhs, pattern


def machine() -> dict:
    """`benchmarks/stencil.py`'s machine description with the versions compared here."""
    import diffrax

    return stencil_machine() | dict(scipy=scipy.__version__, diffrax=diffrax.__version__, simkit=simkit.__version__,
                                    load_average_before=list(os.getloadavg()))


def error(y, ref) -> float:
    return float(np.max(np.abs(np.asarray(y) - ref) / (ATOL + RTOL * np.abs(ref))))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="50,200,800,1600", help="grid points N (2N states)")
    parser.add_argument("--dense-max", type=int, default=3200, help="largest state count run with the dense BDF")
    parser.add_argument("--rodas-max", type=int, default=400, help="largest state count run with Rodas5P")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "bdf_size.json"))
    args = parser.parse_args(argv)
    start_all = time.perf_counter()
    info = machine()
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        states = 2 * n
        model = brusselator_jax(n)
        f_np, pattern = brusselator_numpy(n)
        y0 = np.asarray(model.y0, float)
        ref = scipy.integrate.solve_ivp(f_np, (0.0, T1), y0, method="Radau", rtol=1e-10, atol=1e-10,
                                        jac_sparsity=pattern).y[:, -1]

        simkit_rows = {"simkit BDF (banded, jac_sparsity)": simkit.BDF(jac_sparsity=pattern),
                       "simkit BDF (dense)": simkit.BDF(linear_solver="dense"),
                       "simkit BDF (matrix-free, no preconditioner)": simkit.BDF(linear_solver="krylov"),
                       "simkit default": None}
        if states > args.dense_max:
            del simkit_rows["simkit BDF (dense)"]
        if states <= args.rodas_max:
            simkit_rows["simkit Rodas5P"] = simkit.Rodas5P()
        calls, first, sols = {}, {}, {}
        for label, solver in simkit_rows.items():
            kw = {} if solver is None else {"solver": solver}
            calls[label] = lambda kw=kw: simkit.solve(model, (0.0, T1), saveat=1, rtol=RTOL, atol=ATOL, **kw)
            start = time.perf_counter()
            sols[label] = jax.block_until_ready(calls[label]())
            first[label] = time.perf_counter() - start
        calls["scipy BDF (NumPy rhs, jac_sparsity)"] = lambda: scipy.integrate.solve_ivp(
            f_np, (0.0, T1), y0, method="BDF", rtol=RTOL, atol=ATOL, jac_sparsity=pattern)
        times: dict[str, list[float]] = {k: [] for k in calls}
        for _ in range(args.repeats):  # interleaved: one call of each per round
            for label, call in calls.items():
                if times[label] and times[label][0] > SLOW:
                    continue  # a slow row: one run is enough for the median's purpose
                start = time.perf_counter()
                out = jax.block_until_ready(call())
                times[label].append(time.perf_counter() - start)
                if label.startswith("scipy"):
                    sols[label] = out
        row = dict(grid_points=n, states=states, results={})
        for label, ts in times.items():
            run = statistics.median(ts)
            sol = sols[label]
            if label.startswith("scipy"):
                res = dict(time=run, steps=len(sol.t) - 1, nfev=int(sol.nfev), nlu=int(sol.nlu),
                           error=error(sol.y[:, -1], ref), status=int(sol.status))
            else:
                res = dict(time=run, compile=max(first[label] - run, 0.0), steps=int(sol.stats["num_steps"]),
                           error=error(sol.ys[-1], ref), status=int(sol.status), solver=sol.solver_name)
                for key in ("final_order", "num_jacobians", "num_lu_decompositions", "num_linear_iterations"):
                    if key in sol.stats:
                        res[key] = int(sol.stats[key])
            row["results"][label] = res
        rows.append(row)
        print(f"\n1-D Brusselator, {states} states (N = {n}), rtol = atol = {RTOL:g}")
        for label, r in row["results"].items():
            comp = f"compile {r['compile']:6.2f} s" if "compile" in r else " " * 16
            print(f"  {label:38s} {r['time'] * 1e3:10.1f} ms  {comp}  steps {r['steps']:5d}  "
                  f"error {r['error']:8.2f}  {r.get('solver', '')}")
        sys.stdout.flush()
    wall = time.perf_counter() - start_all
    print(f"\nwall time {wall:.0f} s")
    result = dict(command=" ".join(["python benchmarks/bdf_size.py", *(argv if argv is not None else sys.argv[1:])]),
                  machine=info | {"load_average_after": list(os.getloadavg()), "small_system": SMALL_SYSTEM},
                  wall_s=wall, repeats=args.repeats,
                  settings=dict(problem="1-D Brusselator (Hairer & Wanner II, IV.1), alpha 1/50, t 0..10",
                                rtol=RTOL, atol=ATOL, reference="SciPy Radau rtol = atol = 1e-10, jac_sparsity",
                                error="max |y - ref| / (atol + rtol |ref|) at t = 10"),
                  rows=rows)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
