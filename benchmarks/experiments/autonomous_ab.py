"""Rosenbrock steps without d f / d t for an autonomous rhs, against the steps with it, in one
process.

    python benchmarks/experiments/autonomous_ab.py [--rounds 5] [--out FILE]

A Rosenbrock step (Rodas4, Rodas5P, AutoSwitch's stiff phase) built ``jax.jacfwd`` over
``(y, t)``: one more jvp direction for ``d f / d t`` and a term ``h d_i f_t`` in each stage.
Now `simkit.kernels.structure.depends_on_time` reads from the rhs's program whether ``t``
can move it, and an autonomous rhs skips both. Variants: ``with f_t`` (the check patched to
always answer True: the code before) and ``kept``. Each round recompiles both
(`jax.clear_caches`, in alternating order) and times: the 2,500-member van der Pol ensemble
of `benchmarks/ensemble.py` (mu log-uniform in [0.1, 100], t 0..20, 1e-6, Rodas4) with
`simkit.ensemble` and as the naive ``jax.jit(jax.vmap(solve))``, 3 calls each, solves/s;
and single solves inside ``jax.jit`` (Robertson as in `kernels.py` with Rodas5P and Rodas4,
HIRES at 1e-8 with Rodas5P), 20 calls back to back, ms. Medians over the rounds; the
largest difference of the saved states between the variants.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")
import jax  # noqa: E402
import numpy as np  # noqa: E402

import simkit  # noqa: E402
from simkit import models  # noqa: E402
from simkit.kernels import structure  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ensemble import naive  # noqa: E402  benchmarks/ensemble.py
from stiff import machine, write_result  # noqa: E402  benchmarks/stiff.py

kept_check = structure.depends_on_time
VARIANTS = {"with f_t": lambda *a: True, "kept": kept_check}

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--out", default=None)
args = ap.parse_args()

rob, hires, vdp = models.get("robertson"), models.get("hires"), models.get("van_der_pol")
save_ts = np.concatenate([[0.0], np.logspace(-5, 5, 60)[1:]])
mus = np.exp(np.random.default_rng(0).uniform(np.log(0.1), np.log(100.0), 2500))
SINGLE = {
    "Robertson, Rodas5P": (rob, (0.0, 1e5), dict(saveat=save_ts, rtol=1e-6, atol=1e-10, solver=simkit.Rodas5P())),
    "Robertson, Rodas4": (rob, (0.0, 1e5), dict(saveat=save_ts, rtol=1e-6, atol=1e-10, solver=simkit.Rodas4())),
    "HIRES, Rodas5P, 1e-8": (hires, (0.0, 321.8122), dict(saveat=20, rtol=1e-8, atol=1e-12, solver=simkit.Rodas5P())),
}
ENSEMBLES = {
    "van der Pol ensemble, simkit.ensemble": lambda: simkit.ensemble(
        vdp, (0.0, 20.0), params={"mu": mus}, saveat=2, rtol=1e-6, atol=1e-6, solver=simkit.Rodas4()).ys,
    "van der Pol ensemble, naive jit(vmap(solve))": naive(vdp, simkit.Rodas4(), 20.0, 1e-6, mu=mus),
}
names = list(VARIANTS)
single_ms = {(v, k): [] for v in names for k in SINGLE}
rates = {(v, k): [] for v in names for k in ENSEMBLES}
values = {}
for r in range(args.rounds):
    for v in (names if r % 2 == 0 else names[::-1]):
        structure.depends_on_time = VARIANTS[v]
        jax.clear_caches()
        for k, (m, span, kw) in SINGLE.items():
            f = jax.jit(lambda p, m=m, span=span, kw=kw: simkit.solve(m, span, params=p, **kw).ys)
            p0 = dict(m.params)
            values[(v, k)] = np.asarray(f(p0))
            start = time.perf_counter()
            for _ in range(20):
                y = f(p0)
            y.block_until_ready()
            single_ms[(v, k)].append(1e3 * (time.perf_counter() - start) / 20)
        for k, g in ENSEMBLES.items():
            values[(v, k)] = np.asarray(g())
            for _ in range(3):
                start = time.perf_counter()
                np.asarray(g())
                rates[(v, k)].append(2500 / (time.perf_counter() - start))
structure.depends_on_time = kept_check
rows = {}
for k in SINGLE:
    rows[k + " [ms]"] = {v: statistics.median(single_ms[(v, k)]) for v in names}
for k in ENSEMBLES:
    rows[k + " [solves/s]"] = {v: statistics.median(rates[(v, k)]) for v in names}
deviation = {k: float(np.max(np.abs(values[("kept", k)] - values[("with f_t", k)]))) for k in list(SINGLE) + list(ENSEMBLES)}
for k, row in rows.items():
    print(f"{k:58s}", "  ".join(f"{v}: {x:.4g}" for v, x in row.items()))
print("largest difference of the saved states:", deviation)
if args.out:
    write_result(args.out, dict(command=" ".join(["python"] + sys.argv), machine=machine(), rounds=args.rounds,
                                rows=rows, deviation=deviation))
    print(f"wrote {args.out}")
