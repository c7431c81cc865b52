"""Parameter samplers for ensembles: each returns ``{name: (n,) array}`` for `simkit.ensemble`.

``ranges`` maps a parameter name to ``(low, high)`` (uniform, Latin hypercube) or to
``(mean, std)`` (normal). Draws come from ``jax.random`` with the given key: reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import numpy as np

from . import _config
from .errors import InputError, InputTypeError


def _check(ranges: Mapping[str, tuple[float, float]], n: int, what: str) -> None:
    if not isinstance(ranges, Mapping):
        raise InputTypeError(f"sample.{what}: ranges must be a dict of name -> (low, high), got "
                             f"{type(ranges).__name__}")
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise InputTypeError(f"sample.{what}: n must be an int number of members, got {n!r}")
    if n < 1:
        raise InputError(f"sample.{what}: n must be positive, got {n}")
    for name, pair in ranges.items():
        if len(pair) != 2 or not all(np.isfinite(pair)):
            raise InputError(f"sample.{what}: {name!r} needs two finite numbers, got {pair!r}")
        if what != "normal" and pair[0] > pair[1]:  # (low, high): never a silent constant
            raise InputError(f"sample.{what}: {name!r} needs low <= high, got (low, high) = {tuple(pair)!r}")


def uniform(key: jax.Array, ranges: Mapping[str, tuple[float, float]], n: int) -> dict[str, jax.Array]:
    """Independent uniform draws on ``[low, high)`` for each parameter."""
    _check(ranges, n, "uniform")
    keys = jax.random.split(key, len(ranges))
    dtype = _config.float_dtype()
    return {name: jax.random.uniform(k, (n,), dtype, minval=lo, maxval=hi)
            for k, (name, (lo, hi)) in zip(keys, ranges.items())}


def normal(key: jax.Array, ranges: Mapping[str, tuple[float, float]], n: int) -> dict[str, jax.Array]:
    """Independent normal draws with the given ``(mean, std)`` for each parameter."""
    _check(ranges, n, "normal")
    if any(std < 0 for _, std in ranges.values()):
        raise InputError("sample.normal: standard deviations must be non-negative")
    keys = jax.random.split(key, len(ranges))
    dtype = _config.float_dtype()
    return {name: mean + std * jax.random.normal(k, (n,), dtype)
            for k, (name, (mean, std)) in zip(keys, ranges.items())}


def latin_hypercube(key: jax.Array, ranges: Mapping[str, tuple[float, float]], n: int) -> dict[str, jax.Array]:
    """Latin hypercube on the box ``ranges``: each parameter's range is cut into ``n`` equal
    strata and every stratum holds exactly one member (McKay, Beckman & Conover 1979)."""
    _check(ranges, n, "latin_hypercube")
    dtype = _config.float_dtype()
    out = {}
    for k, (name, (lo, hi)) in zip(jax.random.split(key, len(ranges)), ranges.items()):
        k_perm, k_pos = jax.random.split(k)
        strata = jax.random.permutation(k_perm, n)
        u = (strata + jax.random.uniform(k_pos, (n,), dtype)) / n
        out[name] = lo + (hi - lo) * u
    return out


__all__ = ["latin_hypercube", "normal", "uniform"]
