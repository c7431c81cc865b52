"""`ODEModel`: a right-hand side ``rhs(t, y, params)`` plus its defaults, as data."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

import equinox as eqx
import numpy as np

from .errors import InputTypeError, ParameterError, ShapeError
from .params import merge_params

Params = Mapping[str, Any]
RHS = Callable[[Any, Any, Params], Any]


def _as_params(params: Params) -> dict[str, Any]:
    if not isinstance(params, Mapping):
        raise InputTypeError(f"params must be a dict (a mapping of name -> value), got {type(params).__name__}")
    return {str(k): v for k, v in params.items()}


def _as_state(y0: Any) -> Any:
    # Keep NumPy (not jax) arrays so that building a model never initialises a backend.
    if isinstance(y0, (list, tuple, int, float)):
        y0 = np.asarray(y0, dtype=np.float64)
    return y0


class ODEModel(eqx.Module):
    """An ODE system ``dy/dt = rhs(t, y, params)`` with its defaults.

    A frozen pytree: ``params`` and ``y0`` are leaves (so ``jax.grad`` with respect to
    a model's parameters works), everything else is static metadata.

    **Main fields:**

    - `rhs`: pure function ``rhs(t, y, params) -> dy/dt``; ``t`` a scalar, ``y`` of shape
      ``(n_states,)``, ``params`` a dict of scalars or arrays. Written for one sample; use
      ``jax.vmap`` or ``simkit.ensemble`` for batches.
    - `params`: default parameter values, a dict ``name -> value``.
    - `y0`: default initial state, shape ``(n_states,)``.
    - `state_names`: one name per state component.

    **Other fields:** `name`; `t_span` (default ``(t0, t1)``); `stiff` (hint used to
    choose the default solver); `source` (citation of the model and its constants);
    `description`; `units` (free-text units of time and states); `diffusion`: for a
    stochastic model, ``diffusion(t, y, params) -> g`` of shape ``(n_states,)`` — the Itô
    SDE ``dy = rhs dt + g * dW`` with independent Brownian motions (diagonal noise).
    """

    rhs: RHS = eqx.field(static=True)
    params: dict[str, Any] = eqx.field(converter=_as_params)
    y0: Any = eqx.field(converter=_as_state)
    state_names: tuple[str, ...] = eqx.field(static=True, converter=tuple)
    name: str = eqx.field(static=True, default="model")
    t_span: tuple[float, float] | None = eqx.field(static=True, default=None)
    stiff: bool = eqx.field(static=True, default=False)
    source: str = eqx.field(static=True, default="")
    description: str = eqx.field(static=True, default="")
    units: str = eqx.field(static=True, default="")
    diffusion: RHS | None = eqx.field(static=True, default=None)

    def __check_init__(self) -> None:
        shape = np.shape(self.y0)
        if len(shape) != 1:
            raise ShapeError(
                f"model {self.name!r}: y0 must be a 1-D state vector, got shape {shape}"
            )
        if shape[0] != len(self.state_names):
            raise ShapeError(
                f"model {self.name!r}: y0 has {shape[0]} components but state_names has "
                f"{len(self.state_names)}: {self.state_names}"
            )
        if len(set(self.state_names)) != len(self.state_names):
            raise ShapeError(f"model {self.name!r}: state_names are not unique: {self.state_names}")
        if self.t_span is not None and not (
            len(self.t_span) == 2 and math.isfinite(self.t_span[0]) and math.isfinite(self.t_span[1])
        ):
            raise ShapeError(f"model {self.name!r}: t_span must be (t0, t1), got {self.t_span}")

    @property
    def n_states(self) -> int:
        """Number of state components."""
        return len(self.state_names)

    @property
    def param_names(self) -> tuple[str, ...]:
        """Names of the model's parameters, in definition order."""
        return tuple(self.params)

    def merged_params(self, params: Params | None) -> dict[str, Any]:
        """The defaults overridden by ``params``, checked by simkit's one parameter merge
        (`simkit.params.merge_params`): unknown names raise `ParameterError`, a value that
        is not a number or not finite is refused."""
        return merge_params(self.params, params, owner=f"model {self.name!r}")

    def with_params(self, **params: Any) -> ODEModel:
        """A new model whose default parameters are updated by ``params``."""
        return dataclasses.replace(self, params=self.merged_params(params))

    def replace(self, **fields: Any) -> ODEModel:
        """A new model with some fields replaced (``y0=``, ``t_span=``, ``stiff=``, ...)."""
        return dataclasses.replace(self, **fields)

    def state_index(self, name: str) -> int:
        """Index of the state called ``name``."""
        try:
            return self.state_names.index(name)
        except ValueError:
            raise ParameterError(
                f"model {self.name!r} has no state {name!r}; states are {list(self.state_names)}"
            ) from None

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        return (
            f"ODEModel({self.name!r}, states={list(self.state_names)}, params={{{params}}}, "
            f"stiff={self.stiff})"
        )


def _short(v: Any) -> str:
    try:
        return f"{float(v):.6g}"
    except (TypeError, ValueError):
        return f"array{np.shape(v)}"
