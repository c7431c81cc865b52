"""Ways of writing the small LU, compiled side by side in one process (session 36).

    python benchmarks/experiments/small_lu_variants_ab.py [--mode single|ensemble] [--variants ...] [--out FILE]

`simkit.kernels.linalg.lu_factor` / `lu_solve` replaced at trace time by each variant
(`jax.clear_caches` between them):

- base: the code before session 36 (`argmax` pivot search, the column of L divided by the
  pivot, the back substitution's terms oldest row last, a division per row);
- A: the pivot's row by a tree of comparisons (`linalg._first_max`), the column of L scaled
  by the pivot's reciprocal, the newest row last, a division per row (the code kept);
- H: A with the reciprocals kept on the factor's diagonal and multiplied in the solve;
- C: A with the reciprocals computed at the start of each solve and multiplied;
- H2: A with the reciprocals carried in an array of their own and multiplied (ensemble mode
  only: its factors have another layout, which Radau IIA's carried factors do not take).

``--mode single``: Robertson (t to 1e5, 1e-6 / 1e-10) with Rodas5P, Rodas4 and RadauIIA5,
HIRES (1e-8 / 1e-12) and van der Pol mu = 1000 (1e-6) with Rodas5P, inside ``jax.jit``, one
compiled program per variant and problem, called in 9 interleaved rounds of 50 calls: us per
solve (switching between many programs makes every call slower than back to back; compare
the variants). ``--mode ensemble``: the 2,500-member van der Pol ensemble of `ensemble.py`
(Rodas4), recompiled per variant each round (6 rounds of 3 calls): solves/s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import simkit  # noqa: E402
from simkit import models  # noqa: E402
from simkit.kernels import linalg  # noqa: E402
from simkit.kernels.linalg import _COLUMNS_BY_SELECT, _first_max  # noqa: E402

def make_factor(tree, recip_diag, mult_factor):
    def lu_factor(a):
        n = a.shape[-1]; idx = jnp.arange(n); perm = idx; by_select = _COLUMNS_BY_SELECT.get()
        for k in range(n):
            if tree:
                p = _first_max(jnp.abs(a[k:, k])) + k
            else:
                p = jnp.argmax(jnp.where(idx >= k, jnp.abs(a[:, k]), -1.0))
            swap = jnp.where(idx == k, p, jnp.where(idx == p, k, idx))
            a, perm = a[swap, :], perm[swap]
            if mult_factor or recip_diag:
                inverse = 1.0 / a[k, k]
                factors = jnp.where(idx > k, a[:, k] * inverse, 0.0)
            else:
                factors = jnp.where(idx > k, a[:, k] / a[k, k], 0.0)
            a = a - factors[:, None] * jnp.where(idx > k, a[k, :], 0.0)[None, :]
            column_k = jnp.where(idx > k, factors, jnp.where(idx == k, inverse, a[:, k])) if recip_diag else jnp.where(idx > k, factors, a[:, k])
            a = jnp.where((idx == k)[None, :], column_k[:, None], a) if by_select else a.at[:, k].set(column_k)
        return a, perm
    return lu_factor

def make_solve(recip_diag, new_order, recip_in_solve):
    def lu_solve(lu_perm, b):
        lu, perm = lu_perm; n = lu.shape[-1]; y = b[perm]; rows = [y[i] for i in range(n)]
        inv = [1.0 / lu[i, i] for i in range(n)] if recip_in_solve else None
        for i in range(n):
            for j in range(i):
                rows[i] = rows[i] - lu[i, j] * rows[j]
        for i in reversed(range(n)):
            js = reversed(range(i + 1, n)) if new_order else range(i + 1, n)
            for j in js:
                rows[i] = rows[i] - lu[i, j] * rows[j]
            rows[i] = rows[i] * lu[i, i] if recip_diag else (rows[i] * inv[i] if recip_in_solve else rows[i] / lu[i, i])
        return jnp.stack(rows)
    return lu_solve

def make_h2():
    base_factor = make_factor(True, False, True)
    def lu_factor(a):
        lu, perm = base_factor(a)
        n = a.shape[-1]
        return lu, perm, jnp.stack([1.0 / lu[i, i] for i in range(n)])
    def lu_solve(f, b):
        lu, perm, inv = f; n = lu.shape[-1]; y = b[perm]; rows = [y[i] for i in range(n)]
        for i in range(n):
            for j in range(i):
                rows[i] = rows[i] - lu[i, j] * rows[j]
        for i in reversed(range(n)):
            for j in reversed(range(i + 1, n)):
                rows[i] = rows[i] - lu[i, j] * rows[j]
            rows[i] = rows[i] * inv[i]
        return jnp.stack(rows)
    return lu_factor, lu_solve

VARIANTS = {
    "H2": make_h2(),
    "base": (make_factor(False, False, False), make_solve(False, False, False)),
    "A": (make_factor(True, False, True), make_solve(False, True, False)),
    "H": (make_factor(True, True, True), make_solve(True, True, False)),
    "C": (make_factor(True, False, True), make_solve(False, True, True)),
}
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--mode", choices=("single", "ensemble"), default="single")
ap.add_argument("--variants", default=None, help="default: base,A,H,C (single), base,A,H,C,H2 (ensemble)")
ap.add_argument("--out", default=None)
args = ap.parse_args()
mode = args.mode
names = (args.variants or ("base,A,H,C" if mode == "single" else "base,A,H,C,H2")).split(",")
rows = {}

def use(v):
    linalg.lu_factor, linalg.lu_solve = VARIANTS[v]
    jax.clear_caches()

if mode == "single":
    cases = [("robertson", "Rodas5P", 1e-6, 1e-10, 1e5), ("robertson", "Rodas4", 1e-6, 1e-10, 1e5),
             ("robertson", "RadauIIA5", 1e-6, 1e-10, 1e5), ("hires", "Rodas5P", 1e-8, 1e-12, None),
             ("van_der_pol_stiff", "Rodas5P", 1e-6, 1e-6, None)]
    compiled = {}
    for v in names:
        use(v)
        for name, sv, rtol, atol, t1 in cases:
            m = models.get(name); span = (m.t_span[0], t1 or m.t_span[1]); s = getattr(simkit, sv)()
            f = jax.jit(lambda p, m=m, span=span, s=s, rtol=rtol, atol=atol: simkit.solve(m, span, params=p, saveat=20, solver=s, rtol=rtol, atol=atol).ys)
            p0 = dict(m.params)
            compiled[(v, name, sv)] = (f.lower(p0).compile(), p0)
    res = {k: [] for k in compiled}
    for r in range(9):
        for k in (list(compiled) if r % 2 == 0 else list(reversed(list(compiled)))):
            c, p0 = compiled[k]; c(p0).block_until_ready()
            t = time.perf_counter()
            for _ in range(50): y = c(p0)
            y.block_until_ready(); res[k].append((time.perf_counter() - t) / 50)
    for name, sv, *_ in cases:
        rows[f"{name} {sv} [us]"] = {v: 1e6 * statistics.median(res[(v, name, sv)]) for v in names}
        print(f"{name}/{sv:10s}", "  ".join(f"{v} {rows[f'{name} {sv} [us]'][v]:8.1f}" for v in names))
else:
    rng = np.random.default_rng(0); rng.uniform(10.0, 50.0, 10000)
    mus = np.exp(rng.uniform(np.log(0.1), np.log(100.0), 2500)); vdp = models.get("van_der_pol")
    f = lambda: simkit.ensemble(vdp, (0.0, 20.0), params={"mu": mus}, saveat=2, rtol=1e-6, atol=1e-6, solver=simkit.Rodas4())
    res = {v: [] for v in names}
    for r in range(6):
        for v in (names if r % 2 == 0 else names[::-1]):
            use(v); np.asarray(f().ys)
            for _ in range(3):
                t = time.perf_counter(); np.asarray(f().ys); res[v].append(2500 / (time.perf_counter() - t))
    rows["van der Pol ensemble, 2,500 members, Rodas4 [solves/s]"] = {v: statistics.median(res[v]) for v in names}
    print("vdp ensemble solves/s", "  ".join(f"{v} {statistics.median(res[v]):.0f}" for v in names))
if args.out:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from stiff import machine, write_result  # benchmarks/stiff.py

    write_result(args.out, dict(command=" ".join(["python"] + sys.argv), machine=machine(), rows=rows))
    print(f"wrote {args.out}")
