"""The stepping loop's carry packed into one flat buffer per dtype, against the carry as it is
(a dict of arrays), compiled side by side in one process (session 37; issue 13, item 1).

    python benchmarks/experiments/flat_carry_ab.py [--rounds 7] [--out FILE]

Issue 13 asked for "one flat state buffer in the loop carry". Session 18 tried it while each
step was a sequence of XLA thunks (31 either way: the concatenation and the slices were
thunks of their own). Since then a small solve is one XLA:CPU kernel, so this tries it there:
every ``lax.while_loop`` of `simkit.kernels.loop` (the stepping loops) runs through a wrapper
that concatenates the carry's leaves of each dtype into one vector before the loop, slices
them out at the start of the body and concatenates them again at its end. Lorenz (t 0..100,
1e-8, 1,000 saves) with Tsit5 and DOP853, and with Rodas5P (a stiff kernel on the same
problem), inside ``jax.jit``; ns per attempted step, the median of interleaved rounds of 10
calls.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import types

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import simkit  # noqa: E402
from simkit import models  # noqa: E402
from simkit.kernels import loop  # noqa: E402


def flat_while_loop(cond, body, init):
    """``lax.while_loop`` with the carry's leaves packed into one vector per dtype."""
    leaves, tree = jax.tree_util.tree_flatten(init)
    leaves = [jnp.asarray(x) for x in leaves]
    dtypes = sorted({str(x.dtype) for x in leaves})
    groups = {d: [i for i, x in enumerate(leaves) if str(x.dtype) == d] for d in dtypes}
    shapes = [x.shape for x in leaves]

    def pack(ls):
        return tuple(jnp.concatenate([jnp.ravel(ls[i]) for i in groups[d]]) for d in dtypes)

    def unpack(bufs):
        out = [None] * len(leaves)
        for d, b in zip(dtypes, bufs):
            at = 0
            for i in groups[d]:
                size = int(np.prod(shapes[i], dtype=int))
                out[i] = b[at:at + size].reshape(shapes[i])
                at += size
        return jax.tree_util.tree_unflatten(tree, out)

    return unpack(lax.while_loop(lambda b: cond(unpack(b)), lambda b: pack(jax.tree_util.tree_leaves(body(unpack(b)))),
                                 pack(leaves)))


flat_lax = types.SimpleNamespace(**{k: getattr(lax, k) for k in dir(lax) if not k.startswith("__")})
flat_lax.while_loop = flat_while_loop
VARIANTS = {"dict carry (kept)": lax, "flat carry": flat_lax}
SOLVERS = ("Tsit5", "DOP853", "Rodas5P")

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--rounds", type=int, default=7)
ap.add_argument("--out", default=None)
args = ap.parse_args()
m = models.get("lorenz")
p0 = dict(m.params)
compiled = {}
for v, module in VARIANTS.items():
    loop.lax = module
    jax.clear_caches()
    for name in SOLVERS:
        solver = getattr(simkit, name)()
        f = jax.jit(lambda p, s=solver: (lambda sol: (sol.ys, sol.stats["num_steps"]))(
            simkit.solve(m, (0.0, 100.0), params=p, saveat=1000, solver=s, rtol=1e-8, atol=1e-8)))
        c = f.lower(p0).compile()
        _, steps = c(p0)
        compiled[(v, name)] = (c, int(steps))
loop.lax = lax
times = {k: [] for k in compiled}
for r in range(args.rounds):
    for k in (list(compiled) if r % 2 == 0 else list(compiled)[::-1]):
        c, _ = compiled[k]
        c(p0)[0].block_until_ready()
        start = time.perf_counter()
        for _ in range(10):
            y = c(p0)[0]
        y.block_until_ready()
        times[k].append((time.perf_counter() - start) / 10)
rows = {name: {v: dict(ns_per_step=1e9 * statistics.median(times[(v, name)]) / compiled[(v, name)][1],
                       steps=compiled[(v, name)][1]) for v in VARIANTS} for name in SOLVERS}
for name, row in rows.items():
    print(name, "  ".join(f"{v}: {x['ns_per_step']:.1f} ns/step ({x['steps']} steps)" for v, x in row.items()))
if args.out:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from stiff import machine, write_result  # benchmarks/stiff.py

    write_result(args.out, dict(command=" ".join(["python"] + sys.argv), machine=machine(), rows=rows))
    print(f"wrote {args.out}")
