"""`Grid`: a uniform Cartesian grid in 1, 2 or 3 dimensions (static, hashable metadata)."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InputError, InputTypeError, ShapeError

CENTERINGS = ("cell", "node")


def whole_number(value: Any, what: str) -> int:
    """``value`` as an ``int`` where it is a whole number (``8``, ``np.int64(8)``, ``8.0``).

    Never truncates: ``8.7`` (or NaN) raises `InputError`, a non-number (a string, a bool)
    `InputTypeError`; ``what`` names the argument in the message."""
    arr = np.asarray(value)
    if arr.ndim != 0 or arr.dtype.kind not in "iuf":  # bools (kind "b") are refused too
        raise InputTypeError(f"{what} must be a whole number, got {value!r} ({type(value).__name__})")
    if arr.dtype.kind == "f" and not float(arr).is_integer():
        raise InputError(f"{what} must be a whole number, got {value!r} (not truncated)")
    return int(arr)


def _per_axis(value: float | Sequence[float], ndim: int, what: str) -> tuple[float, ...]:
    values = (value,) * ndim if np.ndim(value) == 0 else tuple(value)  # type: ignore[arg-type]
    if len(values) != ndim:
        raise ShapeError(f"Grid: {what} has {len(values)} entries for a {ndim}-D grid")
    return tuple(float(v) for v in values)


@dataclasses.dataclass(frozen=True)
class Grid:
    """A uniform grid on the box ``[lower, upper]`` with ``shape`` points.

    **Arguments:**

    - `shape`: points per axis, 1 to 3 axes (e.g. ``(128,)`` or ``(256, 256)``).
    - `lower`, `upper`: the box, a number for every axis or one per axis (length units).
    - `centering`: ``"cell"`` (default): one value per cell, at ``lower + (i + 1/2) dx`` with
      ``dx = (upper - lower) / n``; boundaries lie on cell faces, half a cell beyond the first
      and last point. ``"node"``: values at ``lower + i dx``, same ``dx``: the nodes of a
      periodic domain (``upper`` is the image of ``lower``); periodic boundaries only.

    Grids are frozen and hashable: they are static metadata of a compiled program.
    """

    shape: tuple[int, ...]
    lower: tuple[float, ...] | float = 0.0
    upper: tuple[float, ...] | float = 1.0
    centering: str = "cell"

    def __post_init__(self) -> None:
        given = (self.shape,) if np.ndim(self.shape) == 0 else tuple(self.shape)  # type: ignore[arg-type]
        shape = tuple(whole_number(n, f"Grid: shape {given}: a number of points") for n in given)
        if not 1 <= len(shape) <= 3:
            raise ShapeError(f"Grid: 1 to 3 axes, got shape {shape}")
        if any(n < 2 for n in shape):
            raise ShapeError(f"Grid: at least 2 points per axis, got shape {shape}")
        lower = _per_axis(self.lower, len(shape), "lower")
        upper = _per_axis(self.upper, len(shape), "upper")
        bad = [i for i, (lo, hi) in enumerate(zip(lower, upper)) if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo)]
        if bad:
            raise InputError(f"Grid: need finite lower < upper on every axis; axes {bad} have "
                             f"lower {[lower[i] for i in bad]}, upper {[upper[i] for i in bad]}")
        if self.centering not in CENTERINGS:
            raise InputError(f"Grid: centering must be one of {CENTERINGS}, got {self.centering!r}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def extent(self) -> tuple[float, ...]:
        return tuple(hi - lo for lo, hi in zip(self.lower, self.upper))  # type: ignore[arg-type]

    @property
    def spacing(self) -> tuple[float, ...]:
        """Grid spacing ``dx`` per axis (length units)."""
        return tuple(length / n for length, n in zip(self.extent, self.shape))

    @property
    def cell_volume(self) -> float:
        """Product of the spacings: the weight of one point in an integral."""
        return float(np.prod(self.spacing))

    def coordinates(self, axis: int = 0) -> np.ndarray:
        """Coordinates of the points along ``axis``, shape ``(shape[axis],)``."""
        offset = 0.5 if self.centering == "cell" else 0.0
        lo = self.lower[axis]  # type: ignore[index]
        return lo + (np.arange(self.shape[axis]) + offset) * self.spacing[axis]

    def meshgrid(self) -> tuple[np.ndarray, ...]:
        """Coordinate arrays of shape ``self.shape`` (``indexing="ij"``), one per axis."""
        return tuple(np.meshgrid(*(self.coordinates(a) for a in range(self.ndim)), indexing="ij"))

    def mesh(self) -> tuple[np.ndarray, ...]:
        """Deprecated: `meshgrid` (in simkit a "mesh" is a device mesh). Removed after 0.1."""
        warnings.warn("Grid.mesh() is deprecated: use Grid.meshgrid() (in simkit a mesh is a device mesh)",
                      DeprecationWarning, stacklevel=2)
        return self.meshgrid()

    def with_shape(self, shape: Sequence[int] | int) -> Grid:
        """The same box and centering with another number of points (for refinement)."""
        return dataclasses.replace(self, shape=tuple(np.atleast_1d(shape)))

    def __repr__(self) -> str:
        box = " x ".join(f"[{lo:g}, {hi:g}]" for lo, hi in zip(self.lower, self.upper))  # type: ignore[arg-type]
        return f"Grid({'x'.join(map(str, self.shape))} on {box}, {self.centering})"
