"""Computations whose form depends on the platform a program is compiled for.

XLA's TPU backend emulates float64 and lacks some of its operations there: 64-bit integer
shifts, float64 FFTs, complex128. Where an approximation is all a computation needs (a
step-size factor, a preconditioner), its float64 arguments go through float32 in a program
compiled for a TPU. The choice is made when the program is lowered
(`jax.lax.platform_dependent`): a CPU or GPU program holds the float64 form only, and nothing
depends on a global a later call could change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["float32_on_tpu", "just_below"]


def float32_on_tpu(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, except in a program compiled for a TPU where its float64 (complex128) arguments
    are cast to float32 (complex64) and its outputs back to the dtypes ``fn`` gives in float64.
    Arguments with no float64 leaf call ``fn`` as it is, on every platform."""
    wide = (jnp.dtype(jnp.float64), jnp.dtype(jnp.complex128))

    def narrow(x: Any) -> Any:
        dtype = jnp.result_type(x)
        if dtype == jnp.float64:
            return jnp.asarray(x).astype(jnp.float32)
        if dtype == jnp.complex128:
            return jnp.asarray(x).astype(jnp.complex64)
        return x

    def call(*args: Any) -> Any:
        if not any(jnp.result_type(leaf) in wide for leaf in jax.tree_util.tree_leaves(args)):
            return fn(*args)
        out_types = jax.eval_shape(fn, *args)

        def on_tpu(*xs: Any) -> Any:
            out = fn(*jax.tree_util.tree_map(narrow, xs))
            return jax.tree_util.tree_map(lambda o, t: o.astype(t.dtype), out, out_types)

        return jax.lax.platform_dependent(*args, tpu=on_tpu, default=fn)

    return call


def just_below(x: jax.Array) -> jax.Array:
    """A float just below ``x`` (finite): ``jnp.nextafter(x, -inf)``, except in a program
    compiled for a TPU, whose compiler rejects ``nextafter`` (JAX 0.10.2: an ``and`` of s32 and
    u32 operands), where ``x`` is scaled by 1 - eps/2 (positive: the float before it) or
    1 + eps (negative: one or two spacings below); zero gives minus the smallest normal."""
    x = jnp.asarray(x)
    eps, tiny = jnp.finfo(x.dtype).eps, jnp.finfo(x.dtype).tiny

    def scaled(x: jax.Array) -> jax.Array:
        return jnp.where(x > 0, x * (1 - eps / 2), jnp.where(x < 0, x * (1 + eps), -tiny)).astype(x.dtype)

    return jax.lax.platform_dependent(x, tpu=scaled, default=lambda x: jnp.nextafter(x, jnp.asarray(-jnp.inf, x.dtype)))
