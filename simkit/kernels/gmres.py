"""GMRES for the Newton iterations of the matrix-free stiff kernels.

Right-preconditioned GMRES (Saad & Schultz, SIAM J. Sci. Stat. Comput. 7 (1986) 856-869)
without restarts, as SUNDIALS' SPGMR runs inside CVODE's Newton iteration: Arnoldi with
classical Gram-Schmidt done twice (vectorised over the basis, as stable as modified
Gram-Schmidt; Giraud et al., Numer. Math. 101 (2005) 87-100), Givens rotations so the
residual norm of every iterate is known without forming it, and a stop as soon as it is
below the tolerance. Right preconditioning keeps the residual that is minimised and tested
the true one, ``b - A x``.

Why not ``lineax.GMRES`` (used by the diffrax path, `simkit.solvers.krylov_linear_solver`):
it tests convergence only at the end of each restart cycle and, besides the residual,
requires the change of the iterate between two cycles to be small, so every solve costs at
least two full cycles of matrix-vector products. Inside a Newton iteration whose
preconditioner makes the system nearly the identity, one to five products usually
suffice.

The solve is wrapped in ``lax.custom_linear_solve``: its derivative with respect to ``b``
is the same solve applied to the tangent (the iteration's own derivative through the
Krylov basis is not a linear solve), which is what the kernels' forward sensitivities
need.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from jax import lax

from .linalg import lapack_upper_solve


def _gmres(matvec: Callable, b: Any, precondition: Callable, tol: Any, max_dim: int) -> tuple[Any, Any]:
    n, dtype = b.shape[0], b.dtype
    m = max_dim
    beta = jnp.sqrt(jnp.sum(b * b))
    rows = jnp.arange(m + 1)
    V = jnp.zeros((m + 1, n), dtype).at[0].set(b / jnp.where(beta > 0, beta, 1.0))
    s0 = dict(j=jnp.asarray(0, jnp.int32), V=V, H=jnp.zeros((m + 1, m), dtype), cs=jnp.zeros((m,), dtype),
              sn=jnp.zeros((m,), dtype), g=jnp.zeros((m + 1,), dtype).at[0].set(beta), res=beta)

    def cond(s):
        return (s["j"] < m) & (s["res"] > tol)

    def body(s):
        j, V = s["j"], s["V"]
        w = matvec(precondition(V[j]))
        live = rows <= j
        h = jnp.where(live, V @ w, 0.0)
        w = w - h @ V
        h2 = jnp.where(live, V @ w, 0.0)  # the second pass (CGS2)
        w = w - h2 @ V
        h = h + h2
        hn = jnp.sqrt(jnp.sum(w * w))
        V = V.at[j + 1].set(w / jnp.where(hn > 0, hn, 1.0))
        h = h.at[j + 1].set(hn)

        def rotate(i, h):  # the earlier rotations, on rows i, i + 1 (i < j: j of them, not m)
            a, c = h[i], h[i + 1]
            return h.at[i].set(s["cs"][i] * a + s["sn"][i] * c).at[i + 1].set(-s["sn"][i] * a + s["cs"][i] * c)

        h = lax.fori_loop(0, j, rotate, h)
        r = jnp.sqrt(h[j] ** 2 + h[j + 1] ** 2)
        safe = jnp.where(r > 0, r, 1.0)
        c, sn = jnp.where(r > 0, h[j] / safe, 1.0), jnp.where(r > 0, h[j + 1] / safe, 0.0)
        h = h.at[j].set(r).at[j + 1].set(0.0)
        g = s["g"]
        g = g.at[j + 1].set(-sn * g[j]).at[j].set(c * g[j])
        return dict(j=j + 1, V=V, H=s["H"].at[:, j].set(h), cs=s["cs"].at[j].set(c), sn=s["sn"].at[j].set(sn),
                    g=g, res=jnp.abs(g[j + 1]))

    s = lax.while_loop(cond, body, s0)
    k = s["j"]
    used = jnp.arange(m) < k
    # the k x k triangle of the rotated Hessenberg matrix, the identity beyond it
    R = jnp.where(used[:, None] & used[None, :], s["H"][:m], jnp.eye(m, dtype=dtype))
    R = jnp.where(used[:, None] | ~used[None, :], R, 0.0)
    y = lapack_upper_solve(R, jnp.where(used, s["g"][:m], 0.0))
    # converged, or at least the residual reduced (CVODE's SUNLS_RES_REDUCED)
    return precondition(y @ s["V"][:m]), (k, s["res"] <= tol, s["res"] < beta)


def gmres(matvec: Callable, b: Any, precondition: Callable, *, tol: Any,
          max_dim: int) -> tuple[Any, tuple[Any, Any, Any]]:
    """Solve ``matvec(x) = b`` approximately; returns ``(x, (iterations, converged, reduced))``.

    Parameters
    ----------
    matvec : callable
        ``v -> A v`` on vectors of ``b``'s shape (linear).
    b : array, shape (n,)
        Right-hand side.
    precondition : callable
        ``v -> M^{-1} v`` (linear), ``M`` an approximation of ``A``; the identity for none.
    tol : float
        Stop once ``||b - A x||_2 <= tol``. A tangent solve (under ``jax.jvp``) stops at
        the same reduction of its own right-hand side, ``tol / ||b||``.
    max_dim : int
        The largest Krylov space (static): at most this many products with ``A``; the
        iterate then is the best in that space, whatever its residual.

    Returns
    -------
    x : array, shape (n,)
        The solution estimate.
    iterations : int array
        Products with ``A`` taken (for a tangent solve, those of the primal solve).
    converged : bool array
        Whether the residual reached ``tol`` within ``max_dim`` products (the primal solve's).
    reduced : bool array
        Whether the residual is at least below ``||b||`` (CVODE accepts such an unconverged
        solve in a Newton iteration's first linear solve only).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit.kernels.gmres import gmres
    >>> a = jnp.array([[4.0, 1.0], [2.0, 3.0]])
    >>> x, (k, converged, _) = gmres(lambda v: a @ v, jnp.array([1.0, 2.0]), lambda v: v, tol=1e-12, max_dim=2)
    >>> [round(float(v), 6) for v in x], int(k), bool(converged)
    ([0.1, 0.6], 2, True)
    """
    # the tolerance as a reduction of the residual, so that a tangent solve (whose right-hand
    # side has its own scale) is as accurate, relatively, as the primal one
    bnorm = lax.stop_gradient(jnp.sqrt(jnp.sum(b * b)))
    reduction = lax.stop_gradient(tol) / jnp.where(bnorm > 0, bnorm, 1.0)

    def solve(mv, rhs):
        return _gmres(mv, rhs, precondition, reduction * jnp.sqrt(jnp.sum(rhs * rhs)), max_dim)

    return lax.custom_linear_solve(matvec, b, solve, has_aux=True)
