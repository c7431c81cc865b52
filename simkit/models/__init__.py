"""The model library: ``get(name)`` returns a fresh `ODEModel` or `PDEModel`; ``names()``
lists them (``names("ode")``, ``names("pde")`` by kind).

One module per family; each model cites where it and its constants come from.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ParameterError
from ..model import ODEModel
from ..stencil.pde import PDEModel
from . import (chaos, chemistry, ecology, epidemiology, mechanics, neuro, oscillators, pde_reaction,
               pde_transport, stochastic)

_FAMILIES = (chaos, chemistry, ecology, epidemiology, mechanics, neuro, oscillators, stochastic,
             pde_transport, pde_reaction)
_REGISTRY: dict[str, Callable[[], ODEModel | PDEModel]] = {
    name: factory for family in _FAMILIES for name, factory in family.MODELS.items()
}


_PDE_FAMILIES = {pde_transport, pde_reaction}
_KINDS = {"ode": {n for f in _FAMILIES if f not in _PDE_FAMILIES for n in f.MODELS},
          "pde": {n for f in _PDE_FAMILIES for n in f.MODELS}}


def names(kind: str | None = None) -> list[str]:
    """Names of the models in the library, sorted: all, or of one kind (``"ode"``, ``"pde"``).

    Parameters
    ----------
    kind : {"ode", "pde"}, optional
        Only `ODEModel` (``"ode"``) or `PDEModel` (``"pde"``) names; default all.

    Returns
    -------
    list of str
        Names for `get`, sorted.

    Raises
    ------
    ParameterError
        Another `kind`.

    Examples
    --------
    >>> from simkit import models
    >>> "lorenz" in models.names("ode"), models.names("pde")[:3]
    (True, ['advection', 'advection_diffusion', 'allen_cahn'])
    """
    if kind is None:
        return sorted(_REGISTRY)
    if kind not in _KINDS:
        raise ParameterError(f"names(): kind must be 'ode' or 'pde', got {kind!r}")
    return sorted(_KINDS[kind])


def get(name: str, **params: float) -> ODEModel | PDEModel:
    """The library model ``name``, with optional parameter overrides.

    Parameters
    ----------
    name : str
        A library name, one of `names()` (``names("ode")``, ``names("pde")``).
    **params : float
        Parameter overrides by name (``model.with_params``: unknown names are refused).

    Returns
    -------
    ODEModel or PDEModel
        A new model (models are immutable): its ``rhs``, default ``params``, ``y0``,
        ``state_names``, ``t_span``, ``stiff`` hint, ``units`` and ``source`` (the
        citation of the model and its constants).

    Raises
    ------
    ParameterError
        No model of that name (the message lists the names), or an unknown parameter.

    Examples
    --------
    >>> from simkit import models
    >>> lorenz = models.get("lorenz", rho=35.0)
    >>> lorenz.state_names, lorenz.params["rho"]
    (('x', 'y', 'z'), 35.0)
    """
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ParameterError(f"no model named {name!r}; available: {names()}") from None
    model = factory()
    return model.with_params(**params) if params else model


__all__ = ["get", "names"]
