"""Right-hand sides that read mutable Python state: what simkit can see cheaply, and its warning.

simkit compiles a model's functions (``rhs``, a PDE's ``linear`` part) with JAX, and JAX runs a
Python function only while it *traces* it: whatever the function reads besides its arguments
(a global, a variable it closes over, an attribute of an object) becomes a constant of the
compiled program, taken at the first call. simkit keeps compiled programs keyed by the function
itself, so a later change to that state is not seen: not by the same model, and not by a new
model built on the same function (`IMPURE_RHS_RULE`).

Two cases are cheap to see when a model is built, without running anything
(`warn_if_impure`):

- the function is a bound method (or a callable object) of a mutable object: its attributes
  are state the compiled program does not follow; warned at once;
- the function reads a NumPy array (a global or a variable it closes over) that has been
  changed in place since the first model built on this function: warned then. Arrays that
  never change are constants, as intended, and lists or dicts (which tests use to count
  traces) are not followed.

simkit does not look inside the functions the rhs calls: this is a warning for common
mistakes, not a proof of purity.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["IMPURE_RHS_RULE", "mutable_owner", "read_arrays", "warn_if_impure"]

IMPURE_RHS_RULE = (
    "A model's functions must be pure: their result may depend only on their arguments. "
    "Anything else they read (a global variable, a variable of an enclosing function, an "
    "attribute of an object, an array changed in place) is read once, when simkit first compiles "
    "the function, and is a constant of the compiled program; simkit keeps that program for the "
    "function, so later changes are not seen, even by a new model built on the same function. "
    "Pass such values in params (traced: new values need no recompilation), or build a new "
    "function.")
"""The statement on impure right-hand sides, ending `warn_if_impure`'s warnings."""

TRACKED_ARRAY_BYTES = 1 << 20
"""Arrays up to this size (bytes) are followed for changes in place (`warn_if_impure`)."""

_SEEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function -> {array name: digest}


def _frozen(obj: Any) -> bool:
    """An object whose attributes cannot be reassigned: an equinox Module, a frozen dataclass,
    or one without a ``__dict__`` (a cheap test)."""
    import equinox as eqx

    if isinstance(obj, eqx.Module):
        return True
    if dataclasses.is_dataclass(obj) and obj.__dataclass_params__.frozen:  # type: ignore[union-attr]
        return True
    return not hasattr(obj, "__dict__")


def mutable_owner(fn: Callable) -> str | None:
    """The mutable object whose state ``fn`` can read through ``self``: ``fn`` a bound method
    of it, or ``fn`` a callable instance itself; None for a plain function, or an object that
    cannot change (an equinox Module, a frozen dataclass).

    Parameters
    ----------
    fn : callable
        A model's ``rhs`` (or another function simkit compiles).

    Returns
    -------
    str or None
        A phrase naming the object, for a message.

    Examples
    --------
    >>> from simkit._purity import mutable_owner
    >>> class Decay:
    ...     def __init__(self):
    ...         self.rate = 1.0
    ...     def rhs(self, t, y, p):
    ...         return -self.rate * y
    >>> mutable_owner(Decay().rhs)
    'the attributes of a Decay object (the rhs is one of its methods, and they can be reassigned)'
    >>> mutable_owner(lambda t, y, p: -y) is None
    True
    """
    if inspect.ismethod(fn):
        owner = fn.__self__
        if inspect.isclass(owner) or inspect.ismodule(owner) or _frozen(owner):
            return None
        return (f"the attributes of a {type(owner).__name__} object (the rhs is one of its methods, and they can be "
                "reassigned)")
    if not inspect.isfunction(fn) and not inspect.isbuiltin(fn) and callable(fn) and not _frozen(fn):
        return f"the attributes of the callable {type(fn).__name__} object (they can be reassigned)"
    return None


def read_arrays(fn: Callable) -> dict[str, np.ndarray]:
    """The writeable NumPy arrays ``fn`` reads by name: variables it closes over and the
    globals its own code names (not those of the functions it calls).

    Parameters
    ----------
    fn : callable
        A function (a bound method: its function).

    Returns
    -------
    dict of str to numpy.ndarray
        By name.

    Examples
    --------
    >>> import numpy as np
    >>> from simkit._purity import read_arrays
    >>> rates = np.array([1.0, 2.0])
    >>> list(read_arrays(lambda t, y, p: -rates * y))
    ['rates']
    >>> read_arrays(lambda t, y, p: -p["k"] * y)
    {}
    """
    target = fn.__func__ if inspect.ismethod(fn) else fn
    code = getattr(target, "__code__", None)
    if code is None:
        return {}
    found: dict[str, Any] = {}
    for name, cell in zip(code.co_freevars, getattr(target, "__closure__", None) or ()):
        try:
            found[name] = cell.cell_contents
        except ValueError:  # a cell not yet filled
            continue
    module_globals = getattr(target, "__globals__", {})
    found.update({name: module_globals[name] for name in code.co_names if name in module_globals})
    return {name: value for name, value in found.items()
            if isinstance(value, np.ndarray) and value.flags.writeable}


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def warn_if_impure(fn: Callable, role: str, model_name: str) -> None:
    """Warn (``UserWarning``) where a model is built on a function that reads mutable state
    simkit's compiled programs do not follow: a bound method or callable object of a mutable
    object (`mutable_owner`, warned at once), or a NumPy array it reads (`read_arrays`, up to
    `TRACKED_ARRAY_BYTES`) changed in place since the first model built on this function.

    Parameters
    ----------
    fn : callable
        The function.
    role : str
        What it is to the model (``"rhs"``, ``"linear"``), for the message.
    model_name : str
        The model's name, for the message.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from simkit._purity import warn_if_impure
    >>> rates = np.array([1.0, 2.0])
    >>> rhs = lambda t, y, p: -rates * y
    >>> warn_if_impure(rhs, "rhs", "demo")  # the first model on rhs: nothing to say
    >>> rates[0] = 3.0
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_impure(rhs, "rhs", "demo")
    >>> str(caught[0].message).startswith("model 'demo': its rhs reads the NumPy array 'rates', changed in place")
    True
    """
    owner = mutable_owner(fn)
    if owner is not None:
        warnings.warn(f"model {model_name!r}: its {role} reads {owner}. " + IMPURE_RHS_RULE, UserWarning,
                      stacklevel=4)
    try:
        arrays = read_arrays(fn)
    except Exception:  # noqa: BLE001 - an exotic callable: no warning rather than a failed model
        return
    now = {name: _digest(a) for name, a in arrays.items() if a.nbytes <= TRACKED_ARRAY_BYTES}
    if not now:
        return
    key = fn.__func__ if inspect.ismethod(fn) else fn
    try:
        before = _SEEN.get(key)
        _SEEN[key] = now
    except TypeError:  # not weakly referenceable: not followed
        return
    changed = sorted(name for name in now if before is not None and name in before and before[name] != now[name])
    if changed:
        names = ", ".join(repr(n) for n in changed)
        warnings.warn(f"model {model_name!r}: its {role} reads the NumPy array {names}, changed in place since the "
                      f"first model was built on this {role}; a program simkit compiled for it before still holds "
                      "the old values. " + IMPURE_RHS_RULE, UserWarning, stacklevel=4)
