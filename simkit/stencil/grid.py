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

    Grids are frozen and hashable: they are static metadata of a compiled program.

    Parameters
    ----------
    shape : int or tuple of int
        Points per axis, 1 to 3 axes, at least 2 each (e.g. ``(128,)`` or ``(256, 256)``; an
        int is one axis). Whole numbers only (``8.0`` is 8; ``8.7`` is refused).
    lower, upper : float or tuple of float
        The box, a number for every axis or one per axis (length units); finite, with
        ``lower < upper``. Default ``[0, 1]``.
    centering : {"cell", "node"}
        ``"cell"`` (default): one value per cell, at ``lower + (i + 1/2) dx`` with
        ``dx = (upper - lower) / n``; boundaries lie on cell faces, half a cell beyond the
        first and last point. ``"node"``: values at ``lower + i dx``, same ``dx``: the nodes
        of a periodic domain (``upper`` is the image of ``lower``); periodic boundaries only.

    Raises
    ------
    ShapeError
        Not 1 to 3 axes, fewer than 2 points on an axis, or `lower`/`upper` with the wrong
        number of entries.
    InputError
        A box that is not finite with ``lower < upper``, an unknown `centering`, or a
        point count that is not a whole number.
    InputTypeError
        A point count that is not a number.

    Examples
    --------
    >>> from simkit.stencil import Grid
    >>> grid = Grid((4, 2), upper=(1.0, 2.0))
    >>> grid
    Grid(4x2 on [0, 1] x [0, 2], cell)
    >>> grid.spacing, grid.coordinates(0).tolist()
    ((0.25, 1.0), [0.125, 0.375, 0.625, 0.875])
    """

    shape: tuple[int, ...]
    lower: tuple[float, ...] | float = 0.0
    upper: tuple[float, ...] | float = 1.0
    centering: str = "cell"
    # a block of a larger grid (`simkit.parallel.local_grid`) keeps that grid's spacing: its
    # own (upper - lower) / n differed by ulps where |lower| >> extent (2.6e-13 relative
    # between a decomposed run and the single-device one, found by probing)
    _spacing: tuple[float, ...] | None = dataclasses.field(default=None, repr=False)

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
        """Number of axes (1, 2 or 3).

        Returns
        -------
        int
            ``len(shape)``.

        Examples
        --------
        >>> from simkit.stencil import Grid
        >>> Grid((8, 8)).ndim
        2
        """
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of points.

        Returns
        -------
        int
            The product of `shape`.

        Examples
        --------
        >>> from simkit.stencil import Grid
        >>> Grid((8, 4)).size
        32
        """
        return int(np.prod(self.shape))

    @property
    def extent(self) -> tuple[float, ...]:
        """Length of the box along each axis.

        Returns
        -------
        tuple of float
            ``upper - lower`` per axis (length units).

        Examples
        --------
        >>> from simkit.stencil import Grid
        >>> Grid((8, 4), lower=-1.0, upper=(1.0, 3.0)).extent
        (2.0, 4.0)
        """
        return tuple(hi - lo for lo, hi in zip(self.lower, self.upper))  # type: ignore[arg-type]

    @property
    def spacing(self) -> tuple[float, ...]:
        """Grid spacing ``dx`` per axis (length units).

        Returns
        -------
        tuple of float
            ``extent / shape`` per axis (for both centerings).

        Examples
        --------
        >>> from simkit.stencil import Grid
        >>> Grid((4, 8)).spacing
        (0.25, 0.125)
        """
        if self._spacing is not None:
            return self._spacing
        return tuple(length / n for length, n in zip(self.extent, self.shape))

    @property
    def cell_volume(self) -> float:
        """Product of the spacings: the weight of one point in an integral.

        Returns
        -------
        float
            ``prod(spacing)`` (length units to the power `ndim`).

        Examples
        --------
        >>> from simkit.stencil import Grid
        >>> Grid((4, 8)).cell_volume
        0.03125
        """
        return float(np.prod(self.spacing))

    def coordinates(self, axis: int = 0) -> np.ndarray:
        """Coordinates of the points along ``axis``.

        Parameters
        ----------
        axis : int
            The grid axis (0-based; default 0).

        Returns
        -------
        numpy.ndarray
            Shape ``(shape[axis],)`` (length units): cell centres, or nodes for
            ``centering="node"``.

        Raises
        ------
        IndexError
            No such axis.

        Examples
        --------
        >>> from simkit.stencil import Grid
        >>> Grid(4).coordinates().tolist(), Grid(4, centering="node").coordinates().tolist()
        ([0.125, 0.375, 0.625, 0.875], [0.0, 0.25, 0.5, 0.75])
        """
        offset = 0.5 if self.centering == "cell" else 0.0
        lo = self.lower[axis]  # type: ignore[index]
        return lo + (np.arange(self.shape[axis]) + offset) * self.spacing[axis]

    def meshgrid(self) -> tuple[np.ndarray, ...]:
        """Coordinate arrays of every point, one per axis.

        Returns
        -------
        tuple of numpy.ndarray
            `ndim` arrays of shape `shape` (``numpy.meshgrid`` with ``indexing="ij"``).

        Examples
        --------
        >>> from simkit.stencil import Grid
        >>> x, y = Grid((4, 2)).meshgrid()
        >>> x.shape, y[0].tolist()
        ((4, 2), [0.25, 0.75])
        """
        return tuple(np.meshgrid(*(self.coordinates(a) for a in range(self.ndim)), indexing="ij"))

    def mesh(self) -> tuple[np.ndarray, ...]:
        """Deprecated: `meshgrid` (in simkit a "mesh" is a device mesh). Removed after 0.1.

        Returns
        -------
        tuple of numpy.ndarray
            As `meshgrid`.

        Warns
        -----
        DeprecationWarning
            Always.

        Examples
        --------
        >>> import warnings
        >>> from simkit.stencil import Grid
        >>> with warnings.catch_warnings(record=True):
        ...     warnings.simplefilter("always")
        ...     len(Grid((4, 2)).mesh())
        2
        """
        warnings.warn("Grid.mesh() is deprecated: use Grid.meshgrid() (in simkit a mesh is a device mesh)",
                      DeprecationWarning, stacklevel=2)
        return self.meshgrid()

    def with_shape(self, shape: Sequence[int] | int) -> Grid:
        """The same box and centering with another number of points (for refinement).

        Parameters
        ----------
        shape : int or sequence of int
            Points per axis of the new grid (the same number of axes).

        Returns
        -------
        Grid
            A new grid.

        Raises
        ------
        ShapeError, InputError, InputTypeError
            As the constructor (e.g. a different number of axes than `lower` and `upper`
            have).

        Examples
        --------
        >>> from simkit.stencil import Grid
        >>> Grid((4, 4)).with_shape((8, 8))
        Grid(8x8 on [0, 1] x [0, 1], cell)
        """
        return dataclasses.replace(self, shape=tuple(np.atleast_1d(shape)), _spacing=None)

    def block(self, shape: Sequence[int]) -> Grid:
        """A block of this grid: ``shape`` points per axis from this grid's `lower`, with its
        spacing (length units) and centering (a device's share of a decomposed grid; a row
        block of a stencil kernel). Its `upper` is ``lower + shape * spacing``, and it keeps
        this grid's spacing exactly (its own ``(upper - lower) / n`` can differ by ulps).

        Parameters
        ----------
        shape : sequence of int
            Points per axis of the block (the same number of axes).

        Returns
        -------
        Grid
            The block's grid.

        Examples
        --------
        >>> from simkit.stencil import Grid
        >>> Grid((8, 8)).block((4, 8))
        Grid(4x8 on [0, 0.5] x [0, 1], cell)
        """
        shape = tuple(shape)
        upper = tuple(lo + n * h for lo, n, h in zip(self.lower, shape, self.spacing))  # type: ignore[arg-type]
        return Grid(shape, self.lower, upper, self.centering, _spacing=self.spacing)

    def __repr__(self) -> str:
        box = " x ".join(f"[{lo:g}, {hi:g}]" for lo, hi in zip(self.lower, self.upper))  # type: ignore[arg-type]
        return f"Grid({'x'.join(map(str, self.shape))} on {box}, {self.centering})"
