"""The Jacobian's sparsity pattern of a model, found by evaluating it:
``simkit.BDF(jac_sparsity="detect")``.

`simkit.BDF` with a sparsity pattern (`simkit.kernels.banded`) takes the dense BDF's steps at
a fraction of its cost and needs no preconditioner, where unpreconditioned GMRES (the
default above 256 states) fails on very stiff problems: a 300-state chain with d = 1e8 ends
at max_steps, and the banded BDF takes 308 steps. A model written as a plain rhs does not
say its pattern, so `detect_pattern` evaluates the dense Jacobian (Jacobian-vector products
on blocks of 512 unit vectors) at the model's own state and parameters and at two random
perturbations of both, and takes every entry that is non-zero (or NaN) at any of them.

Not the default, because a dependence that none of the probes shows is missed: a branch of
``jnp.where`` that none of them took, or a product with a state that is zero at all three.
The Jacobian only shapes the Newton matrix, so a missed entry never costs accuracy, but a
stiff missed coupling can cost every step: a chain with a long-range coupling of 1e5 that
switches on once a state passes 1 ran into max_steps (100,000 steps, 39 s) with the
detected band, where the matrix-free and dense BDF took 33 steps.

Run once per (rhs, number of states) and cached.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .banded import band_structure

DETECT_MAX_STATES = 4096  # the probe's Jacobian of this size is 128 MiB (on the host)
NARROW = 8  # banded when the band's block is at most n / NARROW (else dense or matrix-free)
BLOCK = 512  # Jacobian columns per probe call: memory ~ BLOCK x n per intermediate (16 MiB at 4,096)


@functools.lru_cache(maxsize=64)
def _jacobian(rhs: Any) -> Any:
    def columns(t, y, p, start):  # row j: the Jacobian's column start + j (zero past n)
        basis = (jnp.arange(y.shape[0])[None, :] == start + jnp.arange(BLOCK)[:, None]).astype(y.dtype)
        return jax.vmap(lambda v: jax.jvp(lambda u: rhs(t, u, p), (y,), (v,))[1])(basis)

    jitted = jax.jit(columns)

    def jacobian(t, y, p):  # (columns in blocks: a probe of 4,096 states whole held n x n per op)
        blocks = [np.asarray(jitted(t, y, p, start)) for start in range(0, y.shape[0], BLOCK)]
        return np.concatenate(blocks)[:y.shape[0]].T

    return jacobian


def _perturbed(x: Any, rng: np.random.Generator) -> Any:
    x = np.asarray(x, dtype=float)
    scale = float(np.max(np.abs(x))) if x.size and np.all(np.isfinite(x)) else 1.0
    return x * rng.uniform(0.5, 1.5, x.shape) + 1e-3 * (scale or 1.0) * rng.uniform(0.5, 1.5, x.shape)


def detect_pattern(rhs: Any, t0: float, y0: Any, params: dict) -> np.ndarray:
    """The union of the Jacobian's non-zero (or NaN) entries at ``(t0, y0, params)`` and at
    two random perturbations of ``y0`` and ``params``: an ``(n, n)`` bool array."""
    rng = np.random.default_rng(0)
    jac = _jacobian(rhs)
    probes = [(y0, params)] + [
        (_perturbed(y0, rng), jax.tree_util.tree_map(lambda v: _perturbed(v, rng), params)) for _ in range(2)]
    pattern = None
    dtype = jax.dtypes.canonicalize_dtype(np.float64)  # (float32 where JAX runs without x64)
    for y, p in probes:
        args = (np.asarray(t0, dtype), np.asarray(y, dtype), jax.tree_util.tree_map(lambda v: np.asarray(v, dtype), p))
        try:
            j = np.asarray(jac(*args))
        except jax.errors.TracerArrayConversionError:  # called while a user's jit traces a solve
            with jax.ensure_compile_time_eval():
                j = np.asarray(jac(*args))
        nonzero = (j != 0) | np.isnan(j)
        pattern = nonzero if pattern is None else pattern | nonzero
    return pattern


_PATTERNS: dict = {}  # (rhs, n) -> (pattern or None, narrow); the first model seen with that rhs probes it


def detected_pattern(model: Any) -> tuple[np.ndarray | None, bool]:
    """``model``'s Jacobian pattern found by probing at its own ``y0`` and ``params`` (and
    perturbations), once per (rhs, number of states), and whether its band (after
    reordering) is narrow enough for the banded BDF to pay (block at most n / 8). None for
    a model too large to probe (above 4,096 states) or that cannot be probed."""
    n = model.n_states
    if n > DETECT_MAX_STATES:
        return None, False
    try:
        key = (model.rhs, n)
        if key in _PATTERNS:
            return _PATTERNS[key]
    except TypeError:  # an unhashable rhs
        key = None
    try:
        params = jax.tree_util.tree_map(lambda v: np.asarray(v, float), dict(model.params))
        t0 = float(model.t_span[0]) if model.t_span is not None else 0.0
        pattern = detect_pattern(model.rhs, t0, np.asarray(model.y0, float).reshape(n), params)
    except Exception:  # noqa: BLE001 - a model that cannot be probed gets no pattern
        pattern = None
    found = (pattern, pattern is not None and band_structure(pattern).block <= n // NARROW)
    if key is not None:
        if len(_PATTERNS) >= 64:
            _PATTERNS.pop(next(iter(_PATTERNS)))
        _PATTERNS[key] = found
    return found
