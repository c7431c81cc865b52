"""Banded Jacobians and banded LU for stiff systems with a known sparsity pattern.

For the middle range of `simkit.BDF` (a few hundred to tens of thousands of states), where a
dense ``n x n`` Jacobian and LU cost O(n^2) memory and O(n^3) work and matrix-free GMRES
needs a preconditioner to converge: the user gives the Jacobian's sparsity pattern, as
SciPy's ``jac_sparsity``, and

* `band_structure` reorders the states by reverse Cuthill-McKee (SciPy's
  ``scipy.sparse.csgraph.reverse_cuthill_mckee``, at trace time) so that every nonzero lies
  within ``kl`` diagonals below and ``ku`` above the main one;
* `banded_jacobian` evaluates the band with ``kl + ku + 1`` Jacobian-vector products instead
  of ``n`` (a column colouring: in the reordered matrix, columns ``j`` and ``j'`` with
  ``j = j' mod (kl + ku + 1)`` share no row);
* `banded_factor` and `banded_solve` factor ``I - c J`` with partial pivoting in blocks of
  ``m >= max(kl, ku)`` states: the matrix is then block tridiagonal, and each block step
  factors a ``2m x m`` panel (LAPACK's LU through ``jax.lax.linalg.lu``), which holds every
  row a pivot can come from, so the pivots are those of LAPACK's banded ``gbtrf``. A
  ``lax.scan`` over ``n / m`` blocks: O(n m^2) work and O(n m) memory.

Storage: the band ``R`` of a matrix ``A`` (reordered) is ``(n, kl + ku + 1)`` with
``R[i, d] = A[i, i - kl + d]`` (zero outside the matrix).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..errors import InputError, ShapeError
from .linalg import lapack_lu, lapack_unit_lower_solve, lapack_upper_solve

MIN_BLOCK = 16  # the smallest block: fewer, larger LAPACK calls where the band is narrow


@dataclass(frozen=True, eq=False)
class BandStructure:
    """A sparsity pattern's reordering and band (static: part of the compiled program).

    Attributes
    ----------
    n : int
        Number of states.
    perm : numpy.ndarray
        ``(n,)`` int: the reordered state ``i`` is the model's state ``perm[i]``.
    kl, ku : int
        Diagonals below and above the main one holding every nonzero after reordering.
    block : int
        The block size of `banded_factor`, ``max(kl, ku, MIN_BLOCK)`` but at most ``n``.
    digest : str
        A hash of the order and the band (equality and hashing of the solver that holds it:
        two patterns with the same order and band run the same program).
    """

    n: int
    perm: np.ndarray
    kl: int
    ku: int
    block: int
    digest: str

    @property
    def width(self) -> int:
        """``kl + ku + 1``: the band's width, and the Jacobian-vector products per Jacobian."""
        return self.kl + self.ku + 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BandStructure) and self.digest == other.digest

    def __hash__(self) -> int:
        return hash(self.digest)


def _bandwidths(rows: np.ndarray, cols: np.ndarray, order: np.ndarray) -> tuple[int, int]:
    where = np.empty_like(order)
    where[order] = np.arange(order.size)
    d = where[rows] - where[cols]
    return int(max(d.max(), 0)), int(max(-d.min(), 0))


def band_structure(pattern) -> BandStructure:
    """The reordering and band of a Jacobian sparsity pattern.

    Parameters
    ----------
    pattern : array_like or scipy.sparse matrix, shape (n, n)
        Nonzero (or True) where ``d rhs_i / d y_j`` may be nonzero, as SciPy's
        ``jac_sparsity``. The diagonal is always included.

    Returns
    -------
    BandStructure
        Reverse Cuthill-McKee order of the symmetrised pattern, or the states' own order
        where that band is narrower.

    Raises
    ------
    InputError
        A pattern that is not a square 2-D array.
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    shape = pattern.shape if sp.issparse(pattern) else np.shape(pattern)
    if len(shape) != 2 or shape[0] != shape[1] or shape[0] == 0:
        raise InputError(f"jac_sparsity must be a square (n, n) pattern, got shape {tuple(shape)}")
    a = sp.coo_matrix(pattern) if sp.issparse(pattern) else sp.coo_matrix(np.asarray(pattern))
    n = a.shape[0]
    keep = a.data != 0
    rows = np.concatenate([a.row[keep], np.arange(n)]).astype(np.int64)
    cols = np.concatenate([a.col[keep], np.arange(n)]).astype(np.int64)
    sym = sp.csr_matrix((np.ones(2 * rows.size), (np.concatenate([rows, cols]), np.concatenate([cols, rows]))),
                        shape=(n, n))
    rcm = np.asarray(reverse_cuthill_mckee(sym, symmetric_mode=True), dtype=np.int64)
    natural = np.arange(n)
    kl_r, ku_r = _bandwidths(rows, cols, rcm)
    kl_n, ku_n = _bandwidths(rows, cols, natural)
    perm, kl, ku = (natural, kl_n, ku_n) if kl_n + ku_n <= kl_r + ku_r else (rcm, kl_r, ku_r)
    block = min(n, max(kl, ku, MIN_BLOCK))
    # what the compiled program depends on: the order and the band (not how the pattern was written)
    digest = hashlib.sha1(perm.tobytes() + f"{n} {kl} {ku} {block}".encode()).hexdigest()
    return BandStructure(n=n, perm=perm, kl=kl, ku=ku, block=block, digest=digest)


def _band_index(s: BandStructure) -> tuple[np.ndarray, np.ndarray]:
    """For ``R[i, d]``: the colour of its column ``i - kl + d`` and whether it is inside the matrix."""
    i = np.arange(s.n)[:, None]
    j = i - s.kl + np.arange(s.width)[None, :]
    return np.mod(j, s.width), (j >= 0) & (j < s.n)


def banded_jacobian(fun, y, s: BandStructure):
    """The band ``R`` (reordered, ``(n, kl + ku + 1)``) of the Jacobian of ``fun`` at ``y``,
    by ``kl + ku + 1`` Jacobian-vector products (batched), one per column colour."""
    n, w = s.n, s.width
    colour = np.arange(n) % w  # of the reordered columns
    seeds = np.zeros((w, n))
    seeds[colour, s.perm] = 1.0  # the seed of colour c, in the model's order
    seeds = jnp.asarray(seeds, y.dtype)
    compressed = jax.vmap(lambda v: jax.jvp(fun, (y,), (v,))[1])(seeds)  # (w, n), model's rows
    compressed = compressed[:, s.perm].T  # (n, w): reordered rows
    col, inside = _band_index(s)
    return jnp.where(inside, jnp.take_along_axis(compressed, jnp.asarray(col), axis=1), 0.0)


def _blocks(band, s: BandStructure):
    """``(B, D, C)``: the sub-diagonal, diagonal and super-diagonal ``m x m`` blocks of the
    banded matrix (``nb + 1`` block rows: the last is an identity block, a step's partner
    for the last real one); the states past ``n`` are identity rows."""
    n, m, w = s.n, s.block, s.width
    nb = -(-n // m)
    pad = (nb + 1) * m - n
    eye_rows = jnp.zeros((pad, w), band.dtype).at[:, s.kl].set(1.0)
    rb = jnp.concatenate([band, eye_rows]).reshape(nb + 1, m, w)
    a = np.arange(m)[:, None]
    c = np.arange(m)[None, :]
    out = []
    for offset in (-1, 0, 1):
        d = offset * m + c - a + s.kl
        valid = (d >= 0) & (d < w)
        out.append(jnp.where(valid, rb[:, a, np.clip(d, 0, w - 1)], 0.0))
    return out


def banded_factor(band, c, s: BandStructure):
    """Factors of ``I - c A`` (``A`` given by its reordered band ``(n, kl + ku + 1)``) for
    `banded_solve`, per block step: the ``2m x m`` panel's LU with partial pivoting (its row
    order ``P``, ``L = [L1; L2]`` and ``U1``: LAPACK's ``getrf``), the block row's coupling to
    the next two blocks ``U12 = L1^-1 (P rows)[:m, m:]`` (``m x 2m``), and ``L1^-1``,
    ``U1^-1`` for the solve's matrix-vector products (a triangular solve per block is a
    LAPACK call each, which costs more than the product at these sizes)."""
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
        rest = rows[perm, m:]  # (2m, 2m)
        l_inv = lapack_unit_lower_solve(lu[:m], eye_m)
        u12 = l_inv @ rest[:m]
        return rest[m:] - lu[m:] @ u12, (perm, l_inv, lu[m:], lapack_upper_solve(lu[:m], eye_m), u12)

    top0 = jnp.concatenate([D[0], C[0]], axis=1)
    _, factors = lax.scan(step, top0, (B[1:], D[1:], C[1:]))
    return factors


def banded_solve(factors, b, s: BandStructure):
    """Solve ``(I - c A) x = b`` from `banded_factor`'s output; ``b`` and ``x`` in the
    model's order, shape ``(n,)``. Per block: a row exchange and five ``m``-wide
    matrix-vector products."""
    perm, l_inv, l2, u_inv, u12 = factors
    nb, m = perm.shape[0], s.block
    bp = jnp.zeros(((nb + 1) * m,), b.dtype).at[: s.n].set(b[s.perm]).reshape(nb + 1, m)

    def down(top, x):
        p, l_inv_i, l2_i, b_next = x
        r = jnp.concatenate([top, b_next])[p]
        z = l_inv_i @ r[:m]
        return r[m:] - l2_i @ z, z

    _, z = lax.scan(down, bp[0], (perm, l_inv, l2, bp[1:]))

    def up(after, x):
        u_inv_i, u12_i, z_i = x
        xi = u_inv_i @ (z_i - u12_i @ after)
        return jnp.concatenate([xi, after[:m]]), xi

    _, xs = lax.scan(up, jnp.zeros((2 * m,), b.dtype), (u_inv, u12, z), reverse=True)
    x = xs.reshape(-1)[: s.n]
    return jnp.zeros_like(x).at[s.perm].set(x)


def check_pattern_size(s: BandStructure, n: int, who: str, model_name: str) -> None:
    """Raise `ShapeError` unless the pattern is ``n x n`` (`simkit.solve`'s front door
    calls it before tracing)."""
    if s.n != n:
        raise ShapeError(f"{who}: jac_sparsity is {s.n} x {s.n} but model {model_name!r} has {n} states")
