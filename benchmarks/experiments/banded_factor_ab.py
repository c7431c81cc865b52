"""A/B of the banded LU (session 28): the factors without inverses (simkit.kernels.banded)
against the previous form, which formed each block's forward step as one 2m x 2m matrix and
U1^-1 U12 (matrix-vector products in the solve, about 3x the factor's flops).

    python benchmarks/experiments/banded_factor_ab.py [--rounds 5] [--out FILE]

Random diagonally dominant band matrices of the sizes the BDF meets (1-D chains: m = 16; 2-D
grids reordered: m = 62, 94, 126), one factor and one solve per call, interleaved rounds, the
median of each; both checked against NumPy's dense solve.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from jax import lax  # noqa: E402

from simkit.kernels.banded import BandStructure, _blocks, band_structure, banded_factor, banded_solve  # noqa: E402
from simkit.kernels.linalg import lapack_lu, lapack_unit_lower_solve, lapack_upper_solve  # noqa: E402

SIZES = [(512, 62), (1152, 94), (2048, 126), (3200, 8), (16384, 8)]


def old_factor(band, c, s: BandStructure):
    """Factors of ``I - c A`` (``A`` given by its reordered band ``(n, kl + ku + 1)``) for
    `banded_solve`: per block step, the forward elimination as one ``2m x 2m`` matrix
    (row order, ``L^-1``, and ``U^-1`` of the diagonal block) and the back substitution's
    coupling to the next two blocks, ``U1^-1 U12`` (``m x 2m``)."""
    m = s.block
    eye = jnp.zeros((1, s.width), band.dtype).at[0, s.kl].set(1.0)
    B, D, C = _blocks(eye - c * band, s)
    zero = jnp.zeros((m, m), band.dtype)

    eye_m = jnp.eye(m, dtype=band.dtype)

    def step(top, nxt):
        b_next, d_next, c_next = nxt
        rows = jnp.concatenate([jnp.concatenate([top, zero], axis=1),
                                jnp.concatenate([b_next, d_next, c_next], axis=1)])  # (2m, 3m)
        lu, _, perm = lapack_lu(rows[:, :m])
        rows = rows[perm]
        l_inv = lapack_unit_lower_solve(lu[:m], eye_m)
        u_inv = lapack_upper_solve(lu[:m], eye_m)
        u12 = l_inv @ rows[:m, m:]
        top_next = rows[m:, m:] - lu[m:] @ u12
        # the forward step as one matrix, T = [[U1^-1 L1^-1, 0], [-L2 L1^-1, I]] P (columns
        # permuted: T = T0 P), and the backward coupling U1^-1 U12
        forward = jnp.concatenate([jnp.concatenate([u_inv @ l_inv, zero], axis=1),
                                   jnp.concatenate([-lu[m:] @ l_inv, eye_m], axis=1)])
        forward = forward[:, jnp.argsort(perm)]
        return top_next, (forward, u_inv @ u12)

    top0 = jnp.concatenate([D[0], C[0]], axis=1)
    _, factors = lax.scan(step, top0, (B[1:], D[1:], C[1:]))
    return factors


def old_solve(factors, b, s: BandStructure):
    """Solve ``(I - c A) x = b`` from `banded_factor`'s output; ``b`` and ``x`` in the
    model's order, shape ``(n,)``. One small matrix-vector product per block and direction."""
    forward, coupling = factors
    nb, m = forward.shape[0], s.block
    bp = jnp.zeros(((nb + 1) * m,), b.dtype).at[: s.n].set(b[s.perm]).reshape(nb + 1, m)

    def down(top, x):
        t_i, b_next = x
        w = t_i @ jnp.concatenate([top, b_next])
        return w[m:], w[:m]

    _, y = lax.scan(down, bp[0], (forward, bp[1:]))

    def up(after, x):
        h_i, y_i = x
        xi = y_i - h_i @ after
        return jnp.concatenate([xi, after[:m]]), xi

    _, xs = lax.scan(up, jnp.zeros((2 * m,), b.dtype), (coupling, y), reverse=True)
    x = xs.reshape(-1)[: s.n]
    return jnp.zeros_like(x).at[s.perm].set(x)


def timed(f, *args, reps=20):
    jax.block_until_ready(f(*args))
    start = time.perf_counter()
    for _ in range(reps):
        jax.block_until_ready(f(*args))
    return (time.perf_counter() - start) / reps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "results", "banded_factor_ab.json"))
    args = parser.parse_args()
    rows = []
    for n, k in SIZES:
        rng = np.random.default_rng(0)
        s = band_structure(sp.diags([np.ones(n - abs(d)) for d in range(-k, k + 1)], list(range(-k, k + 1))))
        band = jnp.asarray(rng.normal(size=(n, s.width)))
        b = jnp.asarray(rng.normal(size=n))
        c = 0.5 / s.width  # I - c A diagonally dominant in expectation, pivoting still exercised
        impl = {"new": (jax.jit(lambda a: banded_factor(a, c, s)), jax.jit(lambda f, r: banded_solve(f, r, s))),
                "old": (jax.jit(lambda a: old_factor(a, c, s)), jax.jit(lambda f, r: old_solve(f, r, s)))}
        dense = np.eye(n) - c * _dense(np.asarray(band), s)
        ref = np.linalg.solve(dense, np.asarray(b)[s.perm])
        times = {k2: {"factor": [], "solve": []} for k2 in impl}
        errors = {}
        for name, (fa, so) in impl.items():
            x = np.asarray(so(fa(band), b))[s.perm]
            errors[name] = float(np.max(np.abs(x - ref)) / np.max(np.abs(ref)))
        for _ in range(args.rounds):
            for name, (fa, so) in impl.items():
                f = fa(band)
                times[name]["factor"].append(timed(fa, band, reps=5))
                times[name]["solve"].append(timed(so, f, b))
        row = dict(states=n, block=s.block, errors=errors,
                   **{f"{k2}_{part}_ms": statistics.median(v) * 1e3 for k2, d in times.items() for part, v in d.items()})
        rows.append(row)
        print(f"n {n:6d} m {s.block:4d}  factor old {row['old_factor_ms']:8.2f} new {row['new_factor_ms']:8.2f} ms  "
              f"solve old {row['old_solve_ms']:7.3f} new {row['new_solve_ms']:7.3f} ms  errors {errors}", flush=True)
    with open(args.out, "w") as fh:
        json.dump(dict(command="python benchmarks/experiments/banded_factor_ab.py " + " ".join(
            f"--{k} {v}" for k, v in vars(args).items() if k != "out"), rounds=args.rounds, rows=rows,
            load_average_after=list(os.getloadavg())), fh, indent=1)


def _dense(band: np.ndarray, s: BandStructure) -> np.ndarray:
    """The reordered matrix of a band (R[i, d] = A[i, i - kl + d])."""
    n = s.n
    a = np.zeros((n, n))
    for d in range(s.width):
        i = np.arange(n)
        j = i - s.kl + d
        ok = (j >= 0) & (j < n)
        a[i[ok], j[ok]] = band[i[ok], d]
    return a


if __name__ == "__main__":
    main()
