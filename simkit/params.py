"""Parameters: the one function that merges and checks a call's parameters, `merge_params`.

Used by `simkit._prepare.prepare` (solve, ensemble), `ODEModel.merged_params`/`with_params`,
the stencil and parallel rollouts and `simkit.reference`. A leaf module (it imports only
`simkit.errors`), so that the model and the front door both use it without an import cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from .errors import InputTypeError, ParameterError, ShapeError


def is_traced(*trees: Any) -> bool:
    """True when any leaf is a JAX tracer (inside a user's transform)."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(trees))


def refuse_traced(what: str, instead: str, *trees: Any) -> None:
    """`InputTypeError` when any leaf of ``trees`` is a JAX tracer: ``what`` (an entry point
    that picks devices and returns host arrays, e.g. ``"simkit.ensemble"``) runs outside
    ``jax.jit``/``jax.grad``/``jax.vmap``; ``instead`` names what to transform."""
    if is_traced(*trees):
        raise InputTypeError(f"{what} cannot run under jax.jit, jax.grad or jax.vmap (it places its work on "
                             f"devices and returns host arrays): {instead}")


_HOST = (int, float, complex, np.ndarray, np.generic)


def concrete(x: Any) -> np.ndarray | None:
    """NumPy value of ``x``, or None when it is traced."""
    if isinstance(x, _HOST):  # the common case, without walking a pytree
        return np.asarray(x)
    return None if is_traced(x) else np.asarray(x)


def check_function(owner: str, name: str, fn: Any) -> None:
    """An `InputTypeError` naming ``owner`` and ``name`` unless ``fn`` is callable and
    hashable: simkit compiles a program per function (a static argument of ``jax.jit``),
    and an unhashable one (an object whose class sets ``__hash__ = None``, an equinox module
    holding arrays) failed later with JAX's "Non-hashable static arguments are not
    supported", naming simkit's internal program instead of the function."""
    if not callable(fn):
        raise InputTypeError(f"{owner}: {name} must be a callable, got {fn!r:.80}")
    try:
        hash(fn)
    except TypeError as err:
        raise InputTypeError(
            f"{owner}: {name} must be hashable (a function, or an object whose class defines __hash__): "
            f"simkit compiles one program per function and finds it again by its hash; got a "
            f"{type(fn).__name__} ({err}). Wrap it in a function defined once and reused (a new function "
            f"compiles again), e.g. f = lambda t, y, p: obj(t, y, p)") from None


def check_key(key: Any, owner: str) -> Any:
    """``key`` if it is a ``jax.random`` key: a typed key (``jax.random.key(seed)``) or the raw
    ``uint32`` bits of one (``jax.random.PRNGKey(seed)``); else an `InputTypeError` that
    names ``owner`` (an int seed gave JAX's "invalid PRNG key data" deep inside)."""
    dtype = getattr(key, "dtype", None)
    typed = dtype is not None and jax.numpy.issubdtype(dtype, jax.dtypes.prng_key)
    if typed or (dtype == np.uint32 and np.ndim(key) >= 1):
        if np.ndim(key) > (0 if typed else 1):  # JAX's "split accepts a single key ... use jax.vmap"
            raise InputTypeError(f"{owner}: key must be one jax.random key (simkit splits it per member or "
                                 f"sample), got an array of keys of shape {np.shape(key)[:np.ndim(key) - (not typed)]}")
        return key
    raise InputTypeError(f"{owner}: key must be a jax.random key, e.g. jax.random.key(0), got {key!r:.60}")


def merge_params(defaults: Mapping[str, Any], given: Any, *, owner: str, batched: bool = False) -> dict[str, Any]:
    """The one place parameters are merged: ``defaults`` overridden by ``given``.

    Refuses what is not a mapping of names (a list, an array, a string), unknown names
    (listing the valid ones), non-finite host values and, unless `batched`, values with
    more dimensions than the default (a batch belongs to `simkit.ensemble` or ``jax.vmap``).
    With `batched`, a leading member axis is allowed (shapes are checked by the ensemble)."""
    if given is None:
        return dict(defaults)
    if not isinstance(given, Mapping):
        raise InputTypeError(
            f"{owner}: params must be a dict of name -> value (e.g. {{{next(iter(defaults), 'k')!r}: 1.0}}), "
            f"got {type(given).__name__}")
    unknown = sorted(str(k) for k in given if k not in defaults)
    if unknown:
        raise ParameterError(f"{owner} has no parameter(s) {unknown}; valid names are {list(defaults)}")
    merged = dict(defaults)
    for name, value in given.items():
        check_value(owner, name, value, batched and np.ndim(value) > np.ndim(defaults[name]))
        if not batched and np.ndim(value) > np.ndim(defaults[name]):
            raise ShapeError(
                f"{owner}: parameter {name!r} has shape {np.shape(value)}, the default {np.shape(defaults[name])}; "
                "for a batch of parameter values use simkit.ensemble or jax.vmap")
        merged[name] = value
    return merged


def check_value(owner: str, name: str, value: Any, batched: bool = False) -> None:
    """One parameter value is a number or a numeric array, finite where its value is known.

    Parameters
    ----------
    owner : str
        Who takes it, for the message (e.g. ``"model 'sir'"``).
    name : str
        The parameter's name.
    value : Any
        A Python number, NumPy or JAX array (traced values are not inspected).
    batched : bool
        ``value`` has a leading member axis: the message names the members that are not finite.

    Raises
    ------
    InputTypeError
        A string, None or another non-numeric value.
    ParameterError
        A value (or a member's value) that is NaN or infinite.
    """
    if isinstance(value, (str, bytes)) or value is None:
        raise InputTypeError(f"{owner}: parameter {name!r} must be a number or an array, got {value!r}")
    arr = concrete(value)
    if arr is None:
        return
    if arr.dtype.kind not in "fciub":
        raise InputTypeError(f"{owner}: parameter {name!r} must be numeric, got {value!r}")
    if not np.all(np.isfinite(arr)):
        if batched:
            bad = np.flatnonzero(~np.isfinite(arr).reshape(arr.shape[0], -1).all(axis=1))
            raise ParameterError(f"{owner}: parameter {name!r} is not finite for members {bad[:10].tolist()}")
        raise ParameterError(f"{owner}: parameter {name!r} is not finite: {arr if arr.size < 10 else '...'}")
