"""Where a small stiff step's linear algebra goes: the 8x8 straight-line LU (HIRES's size).

    python benchmarks/experiments/small_lu.py [--out benchmarks/results/small_lu.json]

`simkit.kernels.linalg.lu_factor` (partial pivoting, masked whole-matrix updates per column)
and `lu_solve` on an 8x8 matrix (HIRES's size), each in a ``fori_loop`` of 2,000 dependent
iterations inside one ``jax.jit`` (XLA:CPU compiles such a loop into one kernel: simkit's
small-loop threshold), against other ways of writing the factorisation: no pivoting (the
floor), rows swapped by dynamic slices with updates of the trailing block only, rows never
moved (the pivot order kept, one gather at the end) and every entry a scalar with selects.
Each variant's factors are checked (``L U = A[perm]``). ns per iteration, median of 15 calls.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import simkit  # noqa: E402,F401  (float64, XLA flags)
from simkit.kernels import linalg  # noqa: E402
from stencil import machine  # noqa: E402  (benchmarks/stencil.py)

N, ITERATIONS = 8, 2000


def swap_trailing(a):
    n = a.shape[-1]
    perm = jnp.arange(n)
    for k in range(n):
        p = k + jnp.argmax(jnp.abs(a[k:, k]))
        rk, rp = a[k], a[p]
        a = a.at[p].set(rk).at[k].set(rp)
        pk, pp = perm[k], perm[p]
        perm = perm.at[p].set(pk).at[k].set(pp)
        if k + 1 < n:
            f = a[k + 1:, k] / a[k, k]
            a = a.at[k + 1:, k + 1:].add(-f[:, None] * a[k, k + 1:][None, :])
            a = a.at[k + 1:, k].set(f)
    return a, perm


def rows_kept(a):
    n = a.shape[-1]
    idx = jnp.arange(n)
    used = jnp.zeros(n, bool)
    order = []
    for k in range(n):
        p = jnp.argmax(jnp.where(used, -1.0, jnp.abs(a[:, k])))
        row = a[p]
        used = used | (idx == p)
        if k + 1 < n:
            f = jnp.where(used, 0.0, a[:, k] / row[k])
            a = a - f[:, None] * jnp.where(idx > k, row, 0.0)[None, :]
            a = a.at[:, k].set(jnp.where(used, a[:, k], f))
        order.append(p)
    order = jnp.stack(order)
    return a[order], order


def scalars(a):
    n = a.shape[-1]
    m = [[a[i, j] for j in range(n)] for i in range(n)]
    perm = [jnp.int32(i) for i in range(n)]
    for k in range(n):
        best, pidx = jnp.abs(m[k][k]), jnp.int32(k)
        for r in range(k + 1, n):
            v = jnp.abs(m[r][k])
            better = v > best
            best, pidx = jnp.where(better, v, best), jnp.where(better, r, pidx)
        rowk, pk = list(m[k]), perm[k]
        newk, newpk = list(rowk), pk
        for r in range(k + 1, n):
            s = pidx == r
            newk = [jnp.where(s, m[r][j], newk[j]) for j in range(n)]
            newpk = jnp.where(s, perm[r], newpk)
            m[r] = [jnp.where(s, rowk[j], m[r][j]) for j in range(n)]
            perm[r] = jnp.where(s, pk, perm[r])
        m[k], perm[k] = newk, newpk
        inv = 1.0 / m[k][k]
        for r in range(k + 1, n):
            f = m[r][k] * inv
            m[r] = m[r][:k] + [f] + [m[r][j] - f * m[k][j] for j in range(k + 1, n)]
    return jnp.stack([jnp.stack(row) for row in m]), jnp.stack(perm)


def no_pivoting(a):
    n = a.shape[-1]
    for k in range(n - 1):
        f = a[k + 1:, k] / a[k, k]
        a = a.at[k + 1:, k + 1:].add(-f[:, None] * a[k, k + 1:][None, :])
        a = a.at[k + 1:, k].set(f)
    return a, jnp.arange(n)


def ns_per_iteration(body, init) -> float:
    run = jax.jit(lambda x: lax.fori_loop(0, ITERATIONS, body, x))
    jax.block_until_ready(run(init))
    times = []
    for _ in range(15):
        start = time.perf_counter()
        jax.block_until_ready(run(init))
        times.append(time.perf_counter() - start)
    return 1e9 * statistics.median(times) / ITERATIONS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    before = machine()
    rng = np.random.default_rng(0)
    matrix = jnp.asarray(rng.random((N, N)) - 0.5)
    b0 = jnp.asarray(rng.random(N))
    variants = {"simkit lu_factor": linalg.lu_factor, "rows swapped, trailing updates": swap_trailing,
                "rows kept, one gather": rows_kept, "scalars and selects": scalars,
                "no pivoting (floor)": no_pivoting}
    rows = {}
    for name, factor in variants.items():
        lu, perm = factor(matrix)
        lower = jnp.tril(lu, -1) + jnp.eye(N)
        residual = float(jnp.max(jnp.abs(lower @ jnp.triu(lu) - matrix[perm])))

        def factor_body(i, m, factor=factor):
            return m + 1e-9 * factor(m)[0]

        def step_body(i, b, factor=factor):  # a factorisation and eight dependent solves
            factors = factor(matrix + 1e-9 * b[0])
            for _ in range(8):
                b = linalg.lu_solve(factors, b) + b0
            return b

        rows[name] = {"residual": residual, "factor_ns": ns_per_iteration(factor_body, matrix),
                      "factor_and_8_solves_ns": ns_per_iteration(step_body, b0)}
        print(f"{name:32s} factor {rows[name]['factor_ns']:7.0f} ns, factor + 8 solves "
              f"{rows[name]['factor_and_8_solves_ns']:7.0f} ns (residual {residual:.1e})")
    factors = linalg.lu_factor(matrix)
    solve_ns = ns_per_iteration(lambda i, b: linalg.lu_solve(factors, b) * 0.5 + b0, b0)
    print(f"one lu_solve {solve_ns:.0f} ns")
    record = {"command": "python benchmarks/experiments/small_lu.py " + " ".join(sys.argv[1:]), "machine": before,
              "load_average_after": list(os.getloadavg()), "n": N, "iterations": ITERATIONS, "rows": rows,
              "lu_solve_ns": solve_ns}
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(record, fh, indent=1)


if __name__ == "__main__":
    main()
