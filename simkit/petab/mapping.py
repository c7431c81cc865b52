"""Where every number of a PEtab problem comes from: a constant or a PEtab parameter.

PEtab fills a model parameter, an initial state or an observable's placeholder from a
number, from a row of the parameter table (estimated or fixed), or leaves the model's own
value. `Sources` holds many such values as two arrays, so that one gather turns the
vector of PEtab parameter values into all of them inside a JAX program.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

import jax.numpy as jnp
import numpy as np

from ..errors import InputError


@dataclasses.dataclass(frozen=True)
class Sources:
    """Values of some shape, each a constant or the value of a PEtab parameter.

    Attributes
    ----------
    index : np.ndarray of int
        Index into the vector of PEtab parameter values (linear scale), or -1 for a constant.
    constant : np.ndarray of float
        The constant where ``index`` is -1 (ignored elsewhere).
    """

    index: np.ndarray
    constant: np.ndarray

    def values(self, theta: Any) -> Any:
        """The values, given ``theta``: all PEtab parameters on the linear scale, ``(n_theta,)``."""
        if self.index.size == 0:
            return jnp.asarray(self.constant, dtype=jnp.result_type(float))
        picked = jnp.take(theta, np.maximum(self.index, 0), axis=0)
        return jnp.where(self.index >= 0, picked, self.constant)


class SourceTable:
    """Builds `Sources` from PEtab cell values (numbers or parameter ids)."""

    def __init__(self, parameter_ids: list[str]) -> None:
        self.position = {p: i for i, p in enumerate(parameter_ids)}

    def source(self, value: Any, where: str) -> tuple[int, float]:
        """``(index, constant)`` of one cell: a number, or the id of a PEtab parameter."""
        if isinstance(value, numbers.Number) and not isinstance(value, bool):
            return -1, float(value)
        text = str(value).strip()
        try:
            return -1, float(text)
        except ValueError:
            pass
        if text in self.position:
            return self.position[text], 0.0
        raise InputError(f"{where}: {text!r} is neither a number nor a parameter of the PEtab parameter table")

    def build(self, cells: list[list[tuple[int, float]]]) -> Sources:
        """`Sources` of shape ``(len(cells), len(cells[0]))`` from rows of ``(index, constant)``."""
        width = max((len(r) for r in cells), default=0)
        index = np.full((len(cells), width), -1, dtype=np.int32)
        constant = np.zeros((len(cells), width))
        for i, row in enumerate(cells):
            for j, (k, c) in enumerate(row):
                index[i, j], constant[i, j] = k, c
        return Sources(index=index, constant=constant)
