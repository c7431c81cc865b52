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

__all__ = ["float32_on_tpu", "just_below", "lower_nextafter_by_arithmetic_on_tpu", "nextafter_by_arithmetic"]


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


def nextafter_by_arithmetic(x: jax.Array, y: jax.Array) -> jax.Array:
    """``jnp.nextafter(x, y)`` in float arithmetic only (no integer bit operations), for XLA's TPU
    compiler, which rejects ``nextafter`` (JAX 0.10.2: an ``and`` of s32 and u32 operands).

    With IEEE rounding (a CPU, float32 on a TPU) a normal ``x`` moves by ``|x| eps/2 (1 + eps)``,
    which rounds to exactly the neighbouring float; where rounding leaves ``x`` unchanged (float64
    emulated in float32 pairs on a TPU has a shorter significand) the step grows by 2^8 until it
    moves, so the result is always the nearest representable value the arithmetic reaches in the
    direction of ``y`` (a small ``x`` is scaled by a power of two first, so that its step is not
    subnormal). Zero and subnormal ``x`` go to +/- the smallest normal; an infinite ``x``
    to the largest finite value; ``x == y`` gives ``y``; a NaN gives NaN."""
    x, y = jnp.asarray(x), jnp.asarray(y)
    dtype = jnp.result_type(x, y)
    x, y = x.astype(dtype), y.astype(dtype)
    info = jnp.finfo(dtype)
    sign = jnp.where(y > x, 1.0, -1.0).astype(dtype)
    # a small x is scaled up by a power of two (exactly) so that its step is a normal number
    scale = 2.0 ** (2 * (info.nmant + 1))
    small = jnp.abs(x) < info.tiny * scale
    xs = jnp.where(small, x * scale, x)
    size = jnp.abs(xs)
    out = xs
    factor = float(info.eps) / 2 * (1 + float(info.eps))
    for _ in range(6):  # 2^-24 (2^-53) .. 2^16 times that: float32, float64, emulated float64
        moved = xs + sign * (size * jnp.asarray(factor, dtype))
        out = jnp.where((out == xs) & (moved != xs), moved, out)
        factor *= 256.0
    out = jnp.where(small, out / scale, out)
    out = jnp.where(jnp.abs(x) < info.tiny, sign * info.tiny, out)  # zero, subnormal: the smallest normal
    out = jnp.where(jnp.isinf(x), jnp.sign(x) * info.max, out)
    out = jnp.where(x == y, y, out)
    return jnp.where(jnp.isnan(x) | jnp.isnan(y), jnp.nan, out).astype(dtype)


def just_below(x: jax.Array) -> jax.Array:
    """The float just below ``x``: ``jnp.nextafter(x, -inf)``, computed by
    `nextafter_by_arithmetic` in a program compiled for a TPU."""
    x = jnp.asarray(x)
    down = jnp.asarray(-jnp.inf, x.dtype)
    return jax.lax.platform_dependent(x, tpu=lambda x: nextafter_by_arithmetic(x, down),
                                      default=lambda x: jnp.nextafter(x, down))


_TPU_NEXTAFTER: list[bool] = []


def lower_nextafter_by_arithmetic_on_tpu() -> None:
    """Make every program compiled for a TPU in this process lower ``jax.lax.nextafter`` (which
    diffrax's ``diffeqsolve`` calls on its end time) to `nextafter_by_arithmetic`, where XLA's
    own lowering does not compile (JAX 0.10.2). Programs for other platforms are untouched; a
    program that compiled on a TPU before cannot contain ``nextafter``, so none changes. Idempotent."""
    if _TPU_NEXTAFTER:
        return
    from jax.extend.core.primitives import nextafter_p
    from jax.interpreters import mlir

    mlir.register_lowering(nextafter_p, mlir.lower_fun(nextafter_by_arithmetic, multiple_results=False),
                           platform="tpu")
    _TPU_NEXTAFTER.append(True)
