"""Parameter samplers for ensembles: each returns ``{name: (n,) array}`` for `simkit.ensemble`.

``ranges`` maps a parameter name to ``(low, high)`` (uniform, Latin hypercube) or to
``(mean, std)`` (normal). Draws come from ``jax.random`` with the given key: reproducible.
A range may be known only inside ``jax.jit``/``jax.grad``/``jax.vmap`` (the gradient of an
expectation through the draws, say): its checks then run in the program and raise there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _config
from .errors import InputError, InputTypeError
from .kernels.platforms import just_below
from .params import check_key, is_traced


def _check(key: Any, ranges: Mapping[str, tuple[float, float]], n: int, what: str) -> None:
    check_key(key, f"sample.{what}")
    if not isinstance(ranges, Mapping):
        raise InputTypeError(f"sample.{what}: ranges must be a dict of name -> (low, high), got "
                             f"{type(ranges).__name__}")
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise InputTypeError(f"sample.{what}: n must be an int number of members, got {n!r}")
    if n < 1:
        raise InputError(f"sample.{what}: n must be positive, got {n}")
    form = "(mean, std)" if what == "normal" else "(low, high)"
    for name, pair in ranges.items():
        values = list(pair) if isinstance(pair, (tuple, list)) or (isinstance(pair, np.ndarray) and pair.ndim == 1) else None
        if (values is None or len(values) != 2
                or not all(np.ndim(v) == 0 and (v.dtype if is_traced(v) else np.asarray(v).dtype).kind in "iuf"
                        for v in values)):
            raise InputError(f"sample.{what}: {name!r} needs {form} as two real numbers, got {pair!r}")
        if is_traced(values):  # inside the user's jax.jit/grad/vmap: checked in the program (`_checked`)
            continue
        lo, hi = float(values[0]), float(values[1])
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise InputError(f"sample.{what}: {name!r} needs two finite numbers, got {pair!r}")
        if what != "normal" and lo > hi:  # (low, high): never a silent constant
            raise InputError(f"sample.{what}: {name!r} needs low <= high, got (low, high) = {tuple(pair)!r}")
        # the draws scale by the width (or std): one that overflows gave inf members
        if not np.isfinite(lo + 10 * abs(hi) if what == "normal" else hi - lo):
            raise InputError(f"sample.{what}: {name!r}: the range {tuple(pair)!r} overflows float64 "
                             "(its width, or the mean plus ten standard deviations)")


def _checked(draws: dict[str, jax.Array], ranges: Mapping[str, Any], what: str) -> dict[str, jax.Array]:
    """``draws``, with the checks of `_check` on ranges known only inside the user's
    ``jax.jit``/``jax.grad``/``jax.vmap`` run in the program (``equinox.error_if``: a range
    that fails them raises at run time). Found by probing: a traced range (``jax.grad`` of a
    mean through `normal`, the reparameterisation gradient) stopped with JAX's
    ``TracerArrayConversionError``."""
    ok = jnp.asarray(True)
    for a, b in (pair for pair in ranges.values() if is_traced(pair)):
        a, b = jnp.asarray(a), jnp.asarray(b)
        ok &= jnp.isfinite(a) & jnp.isfinite(b) & ((b >= 0) if what == "normal" else (a <= b))
    if not is_traced(ok):
        return draws
    need = "(mean, std) with std >= 0" if what == "normal" else "(low, high) with low <= high"
    return eqx.error_if(draws, ~ok, f"sample.{what}: a range given inside jax.jit/grad/vmap is not {need}, "
                                    "both finite", on_error="raise")


def _just_below(high: jax.Array, dtype: Any) -> jax.Array:
    """The number just below ``high`` (`simkit.kernels.platforms.just_below`), with the
    derivative of ``high`` (``nextafter`` has none)."""
    high = jnp.asarray(high, dtype)
    fixed = jax.lax.stop_gradient(high)
    return just_below(fixed) + (high - fixed)  # (+ 0: the value unchanged)


def uniform(key: jax.Array, ranges: Mapping[str, tuple[float, float]], n: int) -> dict[str, jax.Array]:
    """Independent uniform draws on ``[low, high)`` for each parameter.

    Parameters
    ----------
    key : jax.Array
        A ``jax.random`` key (the draws are a deterministic function of it).
    ranges : dict
        ``{name: (low, high)}``, in the parameters' units.
    n : int
        Number of members.

    Returns
    -------
    dict of str to jax.Array
        ``{name: (n,) array}``, for ``params=`` of `simkit.ensemble`.

    Raises
    ------
    InputTypeError
        ``ranges`` is not a dict, or ``n`` is not an int.
    InputError
        ``n < 1``, or a range that is not two finite numbers, or ``low > high``.

    Examples
    --------
    >>> import jax, simkit
    >>> draws = simkit.sample.uniform(jax.random.key(0), {"rho": (10.0, 50.0), "beta": (1.0, 3.0)}, 8)
    >>> draws["rho"].shape, bool(((draws["rho"] >= 10.0) & (draws["rho"] < 50.0)).all())
    ((8,), True)
    """
    _check(key, ranges, n, "uniform")
    keys = jax.random.split(key, len(ranges))
    dtype = _config.float_dtype()
    return _checked({name: _below(jax.random.uniform(k, (n,), dtype, minval=lo, maxval=hi), hi, dtype)
                     for k, (name, (lo, hi)) in zip(keys, ranges.items())}, ranges, "uniform")


def _below(x: jax.Array, high: float, dtype: Any) -> jax.Array:
    """``x`` with values that rounded up to ``high`` moved to the number just below it: ``lo +
    (hi - lo) u`` rounds to ``hi`` for some ``u < 1`` (in float32, 1 draw in 200,000 on (100,
    101); found by probing), outside the documented ``[low, high)``."""
    return jnp.where(x >= high, _just_below(high, dtype), x)


def normal(key: jax.Array, ranges: Mapping[str, tuple[float, float]], n: int) -> dict[str, jax.Array]:
    """Independent normal draws with the given ``(mean, std)`` for each parameter.

    Parameters
    ----------
    key : jax.Array
        A ``jax.random`` key (the draws are a deterministic function of it).
    ranges : dict
        ``{name: (mean, std)}``, in the parameters' units (``std >= 0``).
    n : int
        Number of members.

    Returns
    -------
    dict of str to jax.Array
        ``{name: (n,) array}``, for ``params=`` of `simkit.ensemble`.

    Raises
    ------
    InputTypeError
        ``ranges`` is not a dict, or ``n`` is not an int.
    InputError
        ``n < 1``, or a range that is not two finite numbers, or a negative standard deviation.

    Examples
    --------
    >>> import jax, simkit
    >>> draws = simkit.sample.normal(jax.random.key(0), {"rho": (28.0, 2.0)}, 1000)
    >>> draws["rho"].shape, abs(float(draws["rho"].mean()) - 28.0) < 0.5
    ((1000,), True)
    """
    _check(key, ranges, n, "normal")
    if any(std < 0 for _, std in ranges.values() if not is_traced(std)):
        raise InputError("sample.normal: standard deviations must be non-negative")
    keys = jax.random.split(key, len(ranges))
    dtype = _config.float_dtype()
    return _checked({name: mean + std * jax.random.normal(k, (n,), dtype)
                     for k, (name, (mean, std)) in zip(keys, ranges.items())}, ranges, "normal")


def latin_hypercube(key: jax.Array, ranges: Mapping[str, tuple[float, float]], n: int) -> dict[str, jax.Array]:
    """Latin hypercube on the box ``ranges``: each parameter's range is cut into ``n`` equal
    strata and every stratum holds exactly one member (McKay, Beckman & Conover 1979).

    Parameters
    ----------
    key : jax.Array
        A ``jax.random`` key (the design is a deterministic function of it).
    ranges : dict
        ``{name: (low, high)}``, in the parameters' units.
    n : int
        Number of members (and of strata per parameter).

    Returns
    -------
    dict of str to jax.Array
        ``{name: (n,) array}``, for ``params=`` of `simkit.ensemble`.

    Raises
    ------
    InputTypeError
        ``ranges`` is not a dict, or ``n`` is not an int.
    InputError
        ``n < 1``, or a range that is not two finite numbers, or ``low > high``.

    Examples
    --------
    >>> import jax, numpy as np, simkit
    >>> design = simkit.sample.latin_hypercube(jax.random.key(0), {"rho": (10.0, 50.0)}, 4)
    >>> sorted(np.floor((np.asarray(design["rho"]) - 10.0) / 10.0).astype(int).tolist())  # one per stratum
    [0, 1, 2, 3]
    """
    _check(key, ranges, n, "latin_hypercube")
    dtype = _config.float_dtype()
    out = {}
    for k, (name, (lo, hi)) in zip(jax.random.split(key, len(ranges)), ranges.items()):
        k_perm, k_pos = jax.random.split(k)
        strata = jax.random.permutation(k_perm, n).astype(dtype)
        u = (strata + jax.random.uniform(k_pos, (n,), dtype)) / n
        # strata + u rounds up to strata + 1 for u near 1 (float32 above a few hundred strata:
        # a stratum left empty and the next one holding two; found by probing): each member
        # is kept inside its own stratum's edges, computed as the values are
        left, right = lo + (hi - lo) * (strata / n), lo + (hi - lo) * ((strata + 1) / n)
        x = jnp.clip(lo + (hi - lo) * u, left, right)
        out[name] = jnp.where((x >= right) & (right > left), jnp.maximum(_just_below(right, dtype), left), x)
    return _checked(out, ranges, "latin_hypercube")


__all__ = ["latin_hypercube", "normal", "uniform"]
