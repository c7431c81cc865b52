"""The Jacobian's sparsity pattern of a model, read from its program, and the choice it
makes: `simkit.BDF` above 256 states without a preconditioner runs banded where the pattern
(after reordering) is a narrow band, and matrix-free otherwise.

The pattern comes from `simkit.kernels.structure` (abstract interpretation of the rhs's
jaxpr): it holds every entry that may be nonzero for any state, time and parameters, so a
branch of ``jnp.where`` that the current state does not take is in it. Probing the
Jacobian numerically at three states has a blind spot: a ``jnp.where`` coupling that
switched on once a state passed 1 was missed, and the banded BDF then ran 100,000 steps
where the matrix-free one took 33. That is why probing was opt-in; reading the program has
no such blind spot, and is the default.

Cached per (rhs, number of states, parameter shapes).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from .banded import band_structure
from .structure import abstract, jacobian_structure

NARROW = 8  # banded when the band's block is at most n / NARROW ...
# ... and at most MAX_BLOCK: a banded LU costs O(n m^2). Measured (one LU): 1.7 ms
# at 512 states and m = 62, 21 ms at 2,048 and m = 126, 470 ms at 10,368 and m = 290 (a 72 x 72
# grid: about 100 LUs per solve, where unpreconditioned GMRES took 15-32 s in all)
MAX_BLOCK = 128


_PATTERNS: dict = {}  # key -> (pattern or None, narrow, band or None)


def detected_pattern(model: Any) -> tuple[Any, bool, Any]:
    """``model``'s Jacobian pattern read from its rhs (a ``(n, n)`` CSR matrix; None when the
    analysis gave up), whether its band after reordering is narrow enough for the banded
    BDF to pay (block at most n / 8 and at most 128) and that band (`banded.BandStructure`,
    or None), computed once per cached pattern rather than once per solve."""
    n = model.n_states
    dtype = jax.dtypes.canonicalize_dtype(np.float64)  # (float32 where JAX runs without x64)
    params = jax.tree_util.tree_map(abstract, dict(model.params))
    # (the rhs is hashable: `ODEModel` checks it)
    key = (model.rhs, n, str(jax.tree_util.tree_structure(params)),
           tuple((p.shape, str(p.dtype)) for p in jax.tree_util.tree_leaves(params)))
    if key in _PATTERNS:
        return _PATTERNS[key]
    try:
        pattern = jacobian_structure(model.rhs, jax.ShapeDtypeStruct((), dtype), jax.ShapeDtypeStruct((n,), dtype),
                                     params)
    except Exception:  # noqa: BLE001 - Unstructured, or an rhs the analysis trips on: as before (matrix-free)
        pattern = None
    band = None if pattern is None else band_structure(pattern)
    found = pattern, band is not None and band.block <= min(n // NARROW, MAX_BLOCK), band
    if len(_PATTERNS) >= 64:
        _PATTERNS.pop(next(iter(_PATTERNS)))
    _PATTERNS[key] = found
    return found
