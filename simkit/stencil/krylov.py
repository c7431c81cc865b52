"""BiCGStab with a caller-supplied inner product, for the implicit part of IMEX steps.

lineax's iterative solvers (used elsewhere in simkit) take their inner products on the
arrays they are given; on a device mesh each shard holds a block of the field, so inner
products must be reduced over the mesh (``space.sum``). That is the one thing this solver
adds: it is van der Vorst's BiCGStab (SIAM J. Sci. Stat. Comput. 13:631-644, 1992) with
``dot`` passed in, in one ``lax.while_loop``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def bicgstab(matvec: Callable, b: Any, x0: Any, dot: Callable, *, rtol: float, atol: float,
             max_steps: int) -> tuple[Any, Any]:
    """Solve ``matvec(x) = b`` from ``x0``; returns ``(x, converged)``. Stops when
    ``sqrt(dot(r, r)) <= max(atol, rtol * sqrt(dot(b, b)))`` (``converged``, a boolean
    scalar) or after ``max_steps`` iterations (``converged`` False; a non-finite residual,
    from a breakdown, is not converged either)."""
    tol = jnp.maximum(atol, rtol * jnp.sqrt(dot(b, b)))
    r0 = b - matvec(x0)
    one = jnp.ones((), b.dtype)

    def safe(x):
        return jnp.where(x == 0, jnp.finfo(b.dtype).tiny, x)

    def cond(state):
        _, r, *_, k = state
        return (jnp.sqrt(dot(r, r)) > tol) & (k < max_steps)

    def body(state):
        x, r, p, v, rho, alpha, omega, k = state
        rho_new = dot(r0, r)
        beta = (rho_new / safe(rho)) * (alpha / safe(omega))
        p = r + beta * (p - omega * v)
        v = matvec(p)
        alpha = rho_new / safe(dot(r0, v))
        s = r - alpha * v
        t = matvec(s)
        omega = dot(t, s) / safe(dot(t, t))
        x = x + alpha * p + omega * s
        r = s - omega * t
        return x, r, p, v, rho_new, alpha, omega, k + 1

    zeros = jax.tree_util.tree_map(jnp.zeros_like, b)  # b: an array or a pytree with arithmetic
    state = (x0, r0, zeros, zeros, one, one, one, jnp.asarray(0))
    x, r, *_ = jax.lax.while_loop(cond, body, state)
    return x, jnp.sqrt(dot(r, r)) <= tol
