"""Dense LU with partial pivoting: masked loops for the smallest systems, LAPACK above.

Written with ``fori_loop`` and masked elementwise operations rather than
``jax.scipy.linalg.lu_factor``: LAPACK's batched LU runs ~3.5x slower inside
``jax.shard_map`` on CPU (measured, jax 0.10.2: 4096 batched 2x2 factor+solve, 200 times:
0.39 s under vmap, 1.34 s under shard_map over 2 devices), which made sharded stiff
ensembles slower than one device. These loops vectorise across a batch like any
elementwise code.

Those loops do O(n^3) masked work per factorisation (every column touches the whole
matrix), so they lose to LAPACK as soon as the system is not tiny. `factor` and `solve`
dispatch on the (static) size: the loops up to `SMALL_SYSTEM` states, LAPACK's
``getrf``/``getrs`` (``jax.scipy.linalg.lu_factor``/``lu_solve``) above. Measured on the
2-core development machine (jax 0.10.2, float64, factor + solve repeated inside one jit,
per call):

====  ==========  ===========  ========================  =============================
n     one, loops  one, LAPACK  vmap 1024: loops/LAPACK  shard_map 2x512: loops/LAPACK
====  ==========  ===========  ========================  =============================
2     0.6 us      1.1 us       0.32                      0.47
4     1.4 us      1.2 us       0.50                      0.36
6     2.0 us      1.4 us       1.49                      0.56
8     2.7 us      1.4 us       2.34                      1.26
16    14.7 us     3.1 us       2.0 (vmap 64)             2.5 (2x32)
64    186 us      27 us        10.7 (vmap 64)            11.4 (2x32)
128   1460 us     101 us       11.3 (vmap 64)            9.6 (2x32)
====  ==========  ===========  ========================  =============================

So the loops pay only for batches of systems of up to about six states (ensembles of
small stiff models, where LAPACK's per-matrix call dominates). Every stiff kernel (Rosenbrock,
Radau IIA, BDF) factors through `factor`/`solve`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jax import lax

SMALL_SYSTEM = 6  # the largest size factored by the masked loops in `factor`


def lu_factor(a):
    """``(lu, perm)`` of a square matrix with partial pivoting: ``a[perm] = L @ U``,
    L unit lower triangular (below the diagonal of ``lu``), U upper triangular."""
    n = a.shape[-1]
    idx = jnp.arange(n)

    def body(k, carry):
        a, perm = carry
        column = jnp.where(idx >= k, jnp.abs(a[:, k]), -1.0)
        p = jnp.argmax(column)
        swap = jnp.where(idx == k, p, jnp.where(idx == p, k, idx))
        a, perm = a[swap, :], perm[swap]
        factors = jnp.where(idx > k, a[:, k] / a[k, k], 0.0)
        a = a - factors[:, None] * jnp.where(idx > k, a[k, :], 0.0)[None, :]
        a = a.at[:, k].set(jnp.where(idx > k, factors, a[:, k]))
        return a, perm

    return lax.fori_loop(0, n, body, (a, idx))


def lu_solve(lu_perm, b):
    """Solve ``a x = b`` from `lu_factor`'s output."""
    lu, perm = lu_perm
    n = lu.shape[-1]
    idx = jnp.arange(n)
    y = b[perm]

    def forward(i, y):
        return y.at[i].set(y[i] - jnp.sum(jnp.where(idx < i, lu[i, :], 0.0) * y))

    y = lax.fori_loop(0, n, forward, y)

    def backward(j, x):
        i = n - 1 - j
        return x.at[i].set((x[i] - jnp.sum(jnp.where(idx > i, lu[i, :], 0.0) * x)) / lu[i, i])

    return lax.fori_loop(0, n, backward, y)


def factor(a):
    """LU factors of a square matrix for `solve`: the masked loops (`lu_factor`) for
    ``n <= SMALL_SYSTEM``, LAPACK (``jax.scipy.linalg.lu_factor``) above. The two
    layouts differ (a permutation or LAPACK's pivot swaps); `solve` tells them apart by
    the same static size."""
    if a.shape[-1] <= SMALL_SYSTEM:
        return lu_factor(a)
    return jsl.lu_factor(a)


def solve(factors, b):
    """Solve ``a x = b`` from `factor`'s output."""
    if factors[0].shape[-1] <= SMALL_SYSTEM:
        return lu_solve(factors, b)
    return jsl.lu_solve(factors, b)


def factor_zeros(n: int, dtype) -> tuple:
    """Zeros shaped as `factor`'s output for an ``n`` x ``n`` matrix of ``dtype`` (a loop
    carry's placeholder before the first factorisation)."""
    shapes = jax.eval_shape(factor, jax.ShapeDtypeStruct((n, n), dtype))
    return jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), shapes)
