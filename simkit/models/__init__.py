"""The model library: ``get(name)`` returns a fresh `ODEModel`; ``names()`` lists them.

One module per family; each model cites where it and its constants come from.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ParameterError
from ..model import ODEModel
from . import chaos, chemistry, ecology, epidemiology, mechanics, neuro, oscillators, stochastic

_FAMILIES = (chaos, chemistry, ecology, epidemiology, mechanics, neuro, oscillators, stochastic)
_REGISTRY: dict[str, Callable[[], ODEModel]] = {
    name: factory for family in _FAMILIES for name, factory in family.MODELS.items()
}


def names() -> list[str]:
    """Names of every model in the library, sorted."""
    return sorted(_REGISTRY)


def get(name: str, **params: float) -> ODEModel:
    """The library model ``name`` (a new `ODEModel`), with optional parameter overrides."""
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ParameterError(f"no model named {name!r}; available: {names()}") from None
    model = factory()
    return model.with_params(**params) if params else model


__all__ = ["get", "names"]
