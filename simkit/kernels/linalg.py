"""Dense LU with partial pivoting: straight-line code for the smallest systems, LAPACK above.

For up to `SMALL_SYSTEM` states the factorisation and the triangular solves are written out
at trace time (Python loops over the static size; `lu_factor` keeps masked whole-matrix
updates per column, `lu_solve` is element by element), not ``jax.scipy.linalg.lu_factor``:
LAPACK's batched LU runs ~3.5x slower inside ``jax.shard_map`` on CPU (measured, jax 0.10.2:
4096 batched 2x2 factor+solve, 200 times: 0.39 s under vmap, 1.34 s under shard_map over 2
devices), which made sharded stiff ensembles slower than one device, and the small systems
of a stiff kernel's step should fuse with the step around them. An earlier version used
``fori_loop``s with a traced index (dynamic slices and updates XLA:CPU keeps as loops of
small operations: Rodas4 ran 13 such loops per step). `factor` and `solve` dispatch on the
(static) size. Measured on the 2-core development machine (jax 0.10.2, float64, factor +
solve repeated inside one jit, per call; compile time of that program):

====  ===============  =================  ===========  ========================
n     ``fori_loop``s   straight-line      LAPACK       vmap 1024: straight/LAPACK
====  ===============  =================  ===========  ========================
2     0.36 us          0.12 us (0.10 s)   0.84 us      0.14
3     0.90 us          0.35 us (0.25 s)   0.93 us      0.25
4     1.14 us          0.50 us (0.30 s)   0.95 us      0.31
6     1.75 us          1.46 us (0.50 s)   1.17 us      0.66
8     2.66 us          2.15 us (0.64 s)   1.28 us      0.85
12    9.53 us          5.83 us (1.01 s)   4.85 us      1.06
16    14.6 us          9.76 us (1.39 s)   2.94 us      1.28
====  ===============  =================  ===========  ========================

(The last column is against JAX's batched LAPACK call, which the kernels no longer make:
under ``jax.vmap`` LAPACK now runs one member at a time, `one_at_a_time` below.)
Straight-line code wins for single systems up to 4 states and for batches up to about 10;
it compiles slower as n grows. Robertson (3 states) with Rodas5P went from 0.82 to 0.57 ms
per solve with it, Radau IIA from 1.32 to 1.01, a 2,500-member van der Pol ensemble (Rodas4)
from 75 to 55 ms. `SMALL_SYSTEM` is 8 (HIRES's size): LAPACK's LU is a custom call,
which keeps XLA:CPU from compiling the stepping loop into one kernel (the small-loop
threshold, `simkit._config`); with straight-line code HIRES (8 states, rtol 1e-8) ran
Rodas5P 9.9 -> 2.0 ms, Radau IIA 11.3 -> 1.9, BDF 5.1 -> 1.5, and a 256-member HIRES
ensemble 570 -> 54 ms (LAPACK one member at a time), for 1.0-2.2 s more lowering and
compiling per HIRES kernel (Rodas5P 1.2 -> 2.5 s, AutoSwitch 2.0 -> 4.2 s; with the 128 KiB
threshold, one process each, cache off). Every stiff kernel (Rosenbrock, Radau IIA, BDF)
factors through `factor`/`solve`.
"""

from __future__ import annotations

import contextlib
import contextvars

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jax import lax

SMALL_SYSTEM = 8  # the largest size factored by the straight-line code in `factor`

# LAPACK one matrix at a time under `jax.vmap`. JAX's batched LAPACK calls on CPU
# (``lapack_dgetrf_ffi``, ``lapack_dtrsm_ffi``, ...) split a batch into tasks on XLA:CPU's
# intra-op thread pool and block until they are done (``jax::ParallelBatchMap``). In a
# program running on several CPU devices (an ensemble sharded over the cores:
# `simkit.ensemble`'s default) the pool's threads are the ones executing the devices'
# programs: each blocks in its own LAPACK call waiting for tasks that no free thread will
# run, and the solve hangs forever (seen with gdb: a 100-state BDF ensemble of 2 members
# on 2 CPU devices, jax 0.10.2; on one device, or at 30 states, it ran). One matrix per
# call (`jax.lax.map` over the members) runs inline and cannot wait on the pool.


def one_at_a_time(fn):
    """``fn`` (a LAPACK call on array arguments) mapped sequentially over the members under
    ``jax.vmap`` (``jax.lax.map``): never a batched LAPACK call (see above). Arguments that
    are not batched are shared; with none batched, ``fn`` runs once."""
    f = jax.custom_batching.custom_vmap(fn)

    @f.def_vmap
    def _rule(axis_size, in_batched, *args):
        if not any(in_batched):  # JAX's own sequential_vmap fails here (nothing to map over)
            out = fn(*args)
            return out, jax.tree_util.tree_map(lambda _: False, out)
        members = tuple(a if b else jnp.broadcast_to(a, (axis_size,) + jnp.shape(a)) for a, b in zip(args, in_batched))
        out = jax.lax.map(lambda xs: f(*xs), members)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return f


# every LAPACK call of the kernels (dense LU here, banded panels, GMRES's triangle)
# On a TPU, XLA's LU and triangular solves have no float64 form (float64 is emulated there),
# and under ``jax.vmap`` the LAPACK-style calls above would run one member at a time: there
# the same factorisations and solves are plain loops of array operations (`rolled_lu`,
# `rolled_triangular_solve`), which vectorise over members. Chosen when the program is
# lowered, by the platform it is compiled for (`jax.lax.platform_dependent`): a CPU or GPU
# program holds the LAPACK call only. The two agree to rounding (the same pivots, the same
# eliminations in the same order).


def rolled_lu(a):
    """``(lu, pivots, permutation)`` of an ``m x n`` matrix (``m >= n``) with partial
    pivoting, as ``jax.lax.linalg.lu`` returns them, by a ``fori_loop`` over the columns
    (one elimination per iteration, array operations only: any backend, any float dtype)."""
    m, n = a.shape[-2:]
    rows, cols = jnp.arange(m), jnp.arange(n)

    def eliminate(k, carry):
        a, pivots, perm = carry
        column = a[:, k]
        p = jnp.argmax(jnp.where(rows >= k, jnp.abs(column), -1.0)).astype(pivots.dtype)
        swap = jnp.where(rows == k, p, jnp.where(rows == p, k, rows))
        a, perm = a[swap, :], perm[swap]
        inverse = 1.0 / a[k, k]
        factors = jnp.where(rows > k, a[:, k] * inverse, 0.0)
        a = a - factors[:, None] * jnp.where(cols > k, a[k, :], 0.0)[None, :]
        a = jnp.where((cols == k)[None, :], jnp.where(rows > k, factors, a[:, k])[:, None], a)
        return a, pivots.at[k].set(p), perm

    carry = (a, jnp.zeros((min(m, n),), jnp.int32), jnp.arange(m, dtype=jnp.int32))
    return lax.fori_loop(0, min(m, n), eliminate, carry)


def rolled_triangular_solve(t, b, *, lower: bool, unit_diagonal: bool = False, transpose: bool = False):
    """Solve ``t x = b`` (``t^T x = b`` with ``transpose``) for a triangular ``n x n`` ``t``
    and ``b`` of shape ``(n,)`` or ``(n, k)``: substitution by a ``fori_loop`` over the rows,
    with elementwise products and sums (no matrix unit: float64 exact where it is emulated)."""
    n = t.shape[-1]
    if transpose:
        t, lower = t.T, not lower
    idx = jnp.arange(n)
    b2 = b.reshape(n, -1)

    def row(step, x):
        i = step if lower else n - 1 - step
        known = (idx < i) if lower else (idx > i)
        coeffs = jnp.where(known, t[i, :], 0.0)
        xi = b2[i] - jnp.sum(coeffs[:, None] * x, axis=0)
        if not unit_diagonal:
            xi = xi / t[i, i]
        return x.at[i].set(xi)

    return lax.fori_loop(0, n, row, jnp.zeros_like(b2)).reshape(b.shape)


def _rolled_perm_solve(lu, perm, b):
    """Solve ``a x = b`` from packed LU factors with ``a[perm] = L U``: the two triangular
    sweeps as `rolled_triangular_solve` loops."""
    y = rolled_triangular_solve(lu, b[perm], lower=True, unit_diagonal=True)
    return rolled_triangular_solve(lu, y, lower=False)


def _rolled_lu_solve(lu, piv, b, trans: int = 0):
    """``jax.scipy.linalg.lu_solve((lu, piv), b, trans)`` from `rolled_lu`'s pivots."""
    perm = _permutation(piv, lu.shape[-1])
    if trans == 0:
        return _rolled_perm_solve(lu, perm, b)
    y = rolled_triangular_solve(lu, b, lower=False, transpose=True)
    x = rolled_triangular_solve(lu, y, lower=True, unit_diagonal=True, transpose=True)
    return jnp.zeros_like(x).at[perm].set(x)


def _permutation(pivots, n: int):
    """The row permutation that LAPACK-style ``pivots`` (row ``k`` swapped with
    ``pivots[k]``, in order) apply."""
    def swap(k, perm):
        p = pivots[k]
        pk, pp = perm[k], perm[p]
        return perm.at[k].set(pp).at[p].set(pk)

    return lax.fori_loop(0, pivots.shape[0], swap, jnp.arange(n))


def _rolled_on_tpu(native, rolled):
    """``native`` (a LAPACK-style call, one member at a time under ``jax.vmap``) except in a
    program compiled for a TPU, where ``rolled`` (array operations) runs instead."""
    native = one_at_a_time(native)

    def call(*args):
        return lax.platform_dependent(*args, tpu=rolled, default=native)

    return call


lapack_lu_factor = _rolled_on_tpu(lambda a: tuple(jsl.lu_factor(a)), lambda a: rolled_lu(a)[:2])
lapack_lu = _rolled_on_tpu(lambda a: tuple(lax.linalg.lu(a)), rolled_lu)  # (lu, pivots, permutation); rectangular too
lapack_upper_solve = _rolled_on_tpu(lambda u, b: jsl.solve_triangular(u, b, lower=False),
                                    lambda u, b: rolled_triangular_solve(u, b, lower=False))
lapack_unit_lower_solve = _rolled_on_tpu(
    lambda l, b: jsl.solve_triangular(l, b, lower=True, unit_diagonal=True),
    lambda l, b: rolled_triangular_solve(l, b, lower=True, unit_diagonal=True))
_lapack_lu_solve = _rolled_on_tpu(lambda lu, piv, b: jsl.lu_solve((lu, piv), b),
                                  lambda lu, piv, b: _rolled_lu_solve(lu, piv, b))
_lapack_lu_solve_t = _rolled_on_tpu(lambda lu, piv, b: jsl.lu_solve((lu, piv), b, trans=1),
                                    lambda lu, piv, b: _rolled_lu_solve(lu, piv, b, trans=1))


def lapack_lu_solve(lu, piv, b):
    """Solve ``a x = b`` from LAPACK's factors, one LAPACK call per member under
    ``jax.vmap``. Differentiable in ``b`` in both modes (``jax.lax.custom_linear_solve``:
    the transpose is the transposed solve); the factors are constants (the kernels stop
    their gradients)."""
    lu, piv = lax.stop_gradient(lu), lax.stop_gradient(piv)
    perm = _permutation(piv, lu.shape[-1])

    def matvec(x):  # a x = P^T L U x (only its linearity is used)
        y = jnp.triu(lu) @ x
        y = (jnp.tril(lu, -1) + jnp.eye(lu.shape[-1], dtype=lu.dtype)) @ y
        return y[jnp.zeros_like(perm).at[perm].set(jnp.arange(perm.shape[0], dtype=perm.dtype))]  # P^T y, no sort

    return lax.custom_linear_solve(matvec, b, lambda _, r: _lapack_lu_solve(lu, piv, r),
                                   lambda _, r: _lapack_lu_solve_t(lu, piv, r))


_COLUMNS_BY_SELECT = contextvars.ContextVar("simkit_lu_columns_by_select", default=False)


@contextlib.contextmanager
def lu_columns_by_select():
    """While tracing in this context, `lu_factor` writes each column of L with a select over
    the whole matrix instead of a column update (a scatter): the same values, bit for bit.
    Inside one XLA:CPU kernel (`simkit._codegen.one_kernel`: an ensemble's block of stiff
    steps) the select is faster (a van der Pol ensemble with Rodas4: 1.27x, select against
    scatter, in one process); in XLA's thunks (a single solve) the scatter is (Robertson
    with Rodas5P 1.35x slower with selects). A solve's event records are written the same way
    in this context (`writing_by_select`): a scatter cannot be in such a kernel."""
    token = _COLUMNS_BY_SELECT.set(True)
    try:
        yield
    finally:
        _COLUMNS_BY_SELECT.reset(token)


def writing_by_select() -> bool:
    """Whether the code being traced is for one XLA:CPU kernel (`lu_columns_by_select`):
    updates at traced positions are then written by selects, not scatters."""
    return _COLUMNS_BY_SELECT.get()


def _first_max(v):
    """``jnp.argmax(v)`` of a short vector as a tree of pairwise comparisons (static size):
    ``log2 n`` dependent selects instead of a reduction's chain of ``n``. Ties go to the
    lower index, as ``argmax``'s."""
    items = [(v[i], jnp.asarray(i)) for i in range(v.shape[0])]
    while len(items) > 1:
        merged = []
        for j in range(0, len(items) - 1, 2):
            (va, ia), (vb, ib) = items[j], items[j + 1]
            left = va >= vb
            merged.append((jnp.where(left, va, vb), jnp.where(left, ia, ib)))
        if len(items) % 2:
            merged.append(items[-1])
        items = merged
    return items[0][1]


def lu_factor(a):
    """``(lu, perm)`` of a square matrix with partial pivoting: ``a[perm] = L @ U``,
    L unit lower triangular (below the diagonal of ``lu``), U upper triangular. Straight-line
    code: a Python loop over the static size, masked whole-matrix updates per column (the
    column of L by a scatter, or a select in `lu_columns_by_select`), the column of L scaled
    by the pivot's reciprocal (as LAPACK's ``dgetf2``), the pivot's row found by
    `_first_max`.

    (Tried and not kept: the reciprocals kept on the diagonal for `lu_solve` to
    multiply by. Single small solves inside ``jax.jit`` ran 10-15 % faster, Robertson with
    Rodas5P 63 -> 55 us, but under ``jax.vmap`` the multiplications ran slower than the
    divisions they replaced: a 2,500-member van der Pol ensemble with Rodas4 fell from 47-50k
    to 38-40k solves/s, in one process or in fresh ones; reciprocals computed in the solve, or
    kept in an array of their own, did the same.)"""
    n = a.shape[-1]
    idx = jnp.arange(n)
    perm = idx
    by_select = _COLUMNS_BY_SELECT.get()
    for k in range(n):
        p = _first_max(jnp.abs(a[k:, k])) + k
        swap = jnp.where(idx == k, p, jnp.where(idx == p, k, idx))
        a, perm = a[swap, :], perm[swap]
        inverse = 1.0 / a[k, k]
        factors = jnp.where(idx > k, a[:, k] * inverse, 0.0)
        a = a - factors[:, None] * jnp.where(idx > k, a[k, :], 0.0)[None, :]
        column_k = jnp.where(idx > k, factors, a[:, k])
        if by_select:
            a = jnp.where((idx == k)[None, :], column_k[:, None], a)
        else:
            a = a.at[:, k].set(column_k)
    return a, perm


def lu_solve(lu_perm, b):
    """Solve ``a x = b`` from `lu_factor`'s output: the two triangular sweeps written out
    element by element (static indices: XLA fuses them)."""
    lu, perm = lu_perm
    n = lu.shape[-1]
    y = b[perm]
    rows = [y[i] for i in range(n)]
    for i in range(n):
        for j in range(i):
            rows[i] = rows[i] - lu[i, j] * rows[j]
    for i in reversed(range(n)):
        for j in reversed(range(i + 1, n)):  # the newest row last: a chain of n, not n^2 / 2
            rows[i] = rows[i] - lu[i, j] * rows[j]
        rows[i] = rows[i] / lu[i, i]
    return jnp.stack(rows)


# On a TPU the straight-line code is used up to this size, `rolled_lu` and rolled triangular
# solves above it (the straight-line program grows as n^3 operations, each emulated in float64
# there, and a TPU compiles long straight-line loop bodies slowly).
TPU_STRAIGHT_LINE = 0


def _small_rolled(a):
    lu, _, perm = rolled_lu(a)
    return lu, perm.astype(jnp.arange(1).dtype)  # `lu_factor`'s index type


def factor(a):
    """LU factors of a square matrix for `solve`: the straight-line code (`lu_factor`) for
    ``n <= SMALL_SYSTEM``, LAPACK (``jax.scipy.linalg.lu_factor``) above; on a TPU, `rolled_lu`
    wherever the straight-line code is not used (`TPU_STRAIGHT_LINE`). The two layouts
    differ (a permutation or LAPACK's pivot swaps); `solve` tells them apart by the same
    static size."""
    n = a.shape[-1]
    if n <= SMALL_SYSTEM:
        if n <= TPU_STRAIGHT_LINE:
            return lu_factor(a)
        return lax.platform_dependent(a, tpu=_small_rolled, default=lu_factor)
    return lapack_lu_factor(a)


def solve(factors, b):
    """Solve ``a x = b`` from `factor`'s output."""
    n = factors[0].shape[-1]
    if n <= SMALL_SYSTEM:
        if n <= TPU_STRAIGHT_LINE:
            return lu_solve(factors, b)
        return lax.platform_dependent(*factors, b, tpu=_rolled_perm_solve,
                                      default=lambda lu, perm, b: lu_solve((lu, perm), b))
    return lapack_lu_solve(factors[0], factors[1], b)


def factor_zeros(n: int, dtype) -> tuple:
    """Zeros shaped as `factor`'s output for an ``n`` x ``n`` matrix of ``dtype`` (a loop
    carry's placeholder before the first factorisation). The straight-line layout is written
    out (`lu_factor`'s ``(lu, perm)``): tracing a factorisation only for its shapes cost a
    stiff kernel's first call 10-40 ms."""
    if n <= SMALL_SYSTEM:
        return jnp.zeros((n, n), dtype), jnp.zeros((n,), jnp.arange(n).dtype)
    shapes = jax.eval_shape(factor, jax.ShapeDtypeStruct((n, n), dtype))
    return jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), shapes)
