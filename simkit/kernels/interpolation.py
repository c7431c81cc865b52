"""`KernelInterpolation`: a kernel solve's dense output, from its own interpolant.

The fused loop records, for every accepted step, its start, its signed size and the data the
method keeps (`simkit.kernels.loop.adaptive_loop` with ``dense_output``); evaluating at ``t``
finds the step that covers it and evaluates the method's interpolant there (the explicit
methods redo that step's stages from its start, as the save path does). So
``Solution.evaluate(t)`` equals what ``saveat=[t]`` gives, and ``dense=True`` changes neither
the engine nor any saved value.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp


class KernelInterpolation(eqx.Module):
    """Dense output of a kernel solve; ``evaluate(t)`` gives the state at a scalar ``t``.

    Fields: `t0`, `t1` (the solved span: ``t1`` is where the solve stopped), `y0`, the
    recorded steps `t`, `hs`, `kept` (``max_steps`` rows, the first `n` filled; none for an
    empty span, whose state is `y0`), and what evaluating needs: the solver (static), the
    rhs (static), `params`, `rtol`, `atol`.
    """

    t0: Any
    t1: Any
    y0: Any
    t: Any
    hs: Any
    kept: Any
    n: Any
    params: Any
    rtol: Any
    atol: Any
    solver: Any = eqx.field(static=True)
    rhs: Any = eqx.field(static=True)

    def evaluate(self, t: Any) -> Any:
        """The state at time ``t`` (a scalar), shape ``(n_states,)``."""
        forward = self.t1 >= self.t0
        rows = jnp.arange(self.t.shape[0])
        starts = jnp.where(forward, self.t, -self.t)
        starts = jnp.where(rows < self.n, starts, jnp.inf)  # unfilled rows sort last
        key = jnp.where(forward, t, -t)
        index = jnp.clip(jnp.searchsorted(starts, key, side="right") - 1, 0, jnp.maximum(self.n - 1, 0))
        kept = jax.tree_util.tree_map(lambda a: a[index], self.kept)
        t_step, hs = self.t[index], self.hs[index]
        method = self.solver.method()
        full = method.expand(self.rhs, self.params, t_step, hs, kept, self.rtol, self.atol)
        theta = (t - t_step) / jnp.where(hs == 0, 1.0, hs)
        value = method.interpolate(self.rhs, self.params, full, theta)
        value = jnp.where(self.n > 0, value, self.y0)  # no step taken: t0 == t1
        inside = (jnp.minimum(self.t0, self.t1) <= t) & (t <= jnp.maximum(self.t0, self.t1))
        return jnp.where(inside, value, jnp.nan)  # outside the solved span: NaN, as diffrax
