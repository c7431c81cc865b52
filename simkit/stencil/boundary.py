"""Boundary conditions as objects, applied by filling ghost cells: `pad`.

`pad(u, bcs, width, spacing)` returns a `Padded` field: ``u`` with ``width`` ghost layers
on every side of every grid axis. Every operator reads a `Padded` field and returns the
interior, so boundary handling lives here and only here (the seam that domain
decomposition swaps for halo exchange). The padded array is not built: `Padded` keeps
``u`` and a `BoundaryGhosts` per axis, and operators read windows of it whose ghost layers
are computed where they are read, fused into the operator's loop (padded.py).

Ghost values of a non-periodic side come from one polynomial of degree ``2 width - 1``
through the boundary condition at the face and the ``2 width - 1`` nearest interior points,
evaluated at the ghost points: width 1 gives the classic ``2 g - u_0`` (Dirichlet) and
``u_0 + q dx`` (Neumann); width 2 (4th-order operators) is exact for cubics. The weights are
computed once, with NumPy, when the program is traced.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..errors import InputError, ShapeError
from ..model import own_copy
from .padded import AbstractGhosts, Padded


class AbstractBoundaryCondition(eqx.Module):
    """The contract of a boundary condition on one side of one axis.

    A subclass either is periodic (``periodic = True``: ghosts are copied from the far
    side) or implements `constraint`: the polynomial condition at the face that, together
    with the nearest interior values, determines the ghost values (see `pad`). Conditions
    are ``equinox`` modules: their values are pytree leaves (traced, differentiable), so a
    new value does not recompile.

    Attributes
    ----------
    periodic : bool
        True for `Periodic` (a class attribute).

    Examples
    --------
    >>> from simkit.stencil import AbstractBoundaryCondition, Dirichlet, pad
    >>> class Cold(AbstractBoundaryCondition):  # a wall held at u = -1
    ...     def constraint(self, dx):
    ...         return 1.0, 0.0, -1.0
    >>> u = [1.0, 2.0, 3.0]
    >>> pad(u, Cold(), 1, (1.0,)).data.tolist() == pad(u, Dirichlet(-1.0), 1, (1.0,)).data.tolist()
    True
    """

    periodic = False

    @abc.abstractmethod
    def constraint(self, dx: float) -> tuple[float, float, Any]:
        """The condition at the face: ``alpha u + beta du/dn = value``.

        Parameters
        ----------
        dx : float
            The grid spacing normal to the face (length units), for conditions that need it.

        Returns
        -------
        tuple
            ``(alpha, beta, value)``, with ``n`` the outward normal; ``value`` a number or
            an array of the face's shape.

        Raises
        ------
        TypeError
            For `Periodic`, which has no face condition.

        Examples
        --------
        >>> from simkit.stencil import Robin
        >>> Robin(alpha=2.0, beta=1.0, value=0.5).constraint(0.1)
        (2.0, 1.0, 0.5)
        """


class Periodic(AbstractBoundaryCondition):
    """The domain wraps around this axis (set on both sides).

    Ghost layers are copies of the far side's layers. Takes no arguments; on a
    ``centering="node"`` `Grid` the only condition allowed.

    Examples
    --------
    >>> from simkit.stencil import Periodic, pad
    >>> pad([0.0, 1.0, 2.0, 3.0], Periodic(), 2, (1.0,)).data.tolist()
    [2.0, 3.0, 0.0, 1.0, 2.0, 3.0, 0.0, 1.0]
    """

    periodic = True

    def constraint(self, dx: float) -> tuple[float, float, Any]:
        """Not defined: a periodic side has no face condition.

        Parameters
        ----------
        dx : float
            Ignored.

        Raises
        ------
        TypeError
            Always: its ghosts copy the far side.

        Examples
        --------
        >>> from simkit.stencil import Periodic
        >>> Periodic().constraint(0.1)
        Traceback (most recent call last):
        ...
        TypeError: Periodic has no face constraint: its ghosts copy the far side
        """
        raise TypeError("Periodic has no face constraint: its ghosts copy the far side")


class Dirichlet(AbstractBoundaryCondition):
    """``u = value`` on the boundary face.

    Parameters
    ----------
    value : float or array_like
        The boundary value (the field's units; default 0): a number, or an array of the
        face's shape (the other grid axes' points). A leaf: changing it does not recompile.

    Examples
    --------
    >>> from simkit.stencil import Dirichlet, pad
    >>> pad([1.0, 2.0, 3.0], Dirichlet(0.0), 1, (1.0,)).data.tolist()  # ghost and first point average to 0
    [-1.0, 1.0, 2.0, 3.0, -3.0]
    """

    value: Any = eqx.field(default=0.0, converter=own_copy)  # (a NumPy array: its own read-only copy)

    def constraint(self, dx: float) -> tuple[float, float, Any]:
        """``(1, 0, value)``: ``u = value`` (see `AbstractBoundaryCondition.constraint`).

        Parameters
        ----------
        dx : float
            Unused.

        Returns
        -------
        tuple
            ``(1.0, 0.0, value)``.

        Examples
        --------
        >>> from simkit.stencil import Dirichlet
        >>> Dirichlet(2.0).constraint(0.1)
        (1.0, 0.0, 2.0)
        """
        return 1.0, 0.0, self.value


class Neumann(AbstractBoundaryCondition):
    """``du/dn = flux`` on the face (``n`` the outward normal; 0 is a no-flux wall).

    Parameters
    ----------
    flux : float or array_like
        The outward normal derivative (field units per length unit; default 0): a number,
        or an array of the face's shape. A leaf: changing it does not recompile.

    Examples
    --------
    >>> from simkit.stencil import Neumann, pad
    >>> pad([1.0, 2.0, 3.0], Neumann(0.0), 1, (1.0,)).data.tolist()
    [1.0, 1.0, 2.0, 3.0, 3.0]
    >>> pad([1.0, 2.0, 3.0], Neumann(1.0), 1, (1.0,)).data.tolist()  # u rises outwards on both sides
    [2.0, 1.0, 2.0, 3.0, 4.0]
    """

    flux: Any = eqx.field(default=0.0, converter=own_copy)  # (a NumPy array: its own read-only copy)

    def constraint(self, dx: float) -> tuple[float, float, Any]:
        """``(0, 1, flux)``: ``du/dn = flux`` (see `AbstractBoundaryCondition.constraint`).

        Parameters
        ----------
        dx : float
            Unused.

        Returns
        -------
        tuple
            ``(0.0, 1.0, flux)``.

        Examples
        --------
        >>> from simkit.stencil import Neumann
        >>> Neumann(0.5).constraint(0.1)
        (0.0, 1.0, 0.5)
        """
        return 0.0, 1.0, self.flux


class Robin(AbstractBoundaryCondition):
    """``alpha u + beta du/dn = value`` on the face (``n`` the outward normal).

    Parameters
    ----------
    alpha : float
        Weight of ``u`` (default 1). A number fixed in the compiled program (it sets the
        ghosts' weights): a new `alpha` or `beta` compiles anew, a new `value` does not.
    beta : float
        Weight of the outward normal derivative (length units; default 1).
    value : float or array_like
        Right-hand side (default 0): a number, or an array of the face's shape.

    Raises
    ------
    InputError
        `alpha` and `beta` both zero.

    Examples
    --------
    >>> from simkit.stencil import Robin, pad
    >>> [round(v, 6) for v in pad([1.0, 2.0, 3.0], Robin(1.0, 1.0, 0.0), 1, (1.0,)).data.tolist()]
    [0.333333, 1.0, 2.0, 3.0, 1.0]
    """

    # static: they set the ghosts' weights (NumPy, at trace time); a compiled rollout takes
    # the walls as arguments, and traced weights failed there
    alpha: float = eqx.field(default=1.0, static=True, converter=float)
    beta: float = eqx.field(default=1.0, static=True, converter=float)
    value: Any = eqx.field(default=0.0, converter=own_copy)  # (a NumPy array: its own read-only copy)

    def __check_init__(self) -> None:
        if self.alpha == 0 and self.beta == 0:
            raise InputError("Robin: alpha and beta cannot both be zero")

    def constraint(self, dx: float) -> tuple[float, float, Any]:
        """``(alpha, beta, value)`` (see `AbstractBoundaryCondition.constraint`).

        Parameters
        ----------
        dx : float
            Unused.

        Returns
        -------
        tuple
            ``(alpha, beta, value)``.

        Examples
        --------
        >>> from simkit.stencil import Robin
        >>> Robin(2.0, 0.5, 1.0).constraint(0.1)
        (2.0, 0.5, 1.0)
        """
        return self.alpha, self.beta, self.value


BoundarySpec = Any  # one condition, or per axis: a condition or a (lower, upper) pair


def normalize(bcs: BoundarySpec, ndim: int) -> tuple[tuple[AbstractBoundaryCondition, AbstractBoundaryCondition], ...]:
    """One ``(lower, upper)`` pair of conditions per axis; checks periodic pairs."""
    if isinstance(bcs, AbstractBoundaryCondition):
        per_axis: Sequence[Any] = [bcs] * ndim
    else:
        per_axis = list(bcs)
        if len(per_axis) != ndim:
            raise ShapeError(f"boundary conditions: {len(per_axis)} given for {ndim} axes")
    out = []
    for axis, spec in enumerate(per_axis):
        pair = (spec, spec) if isinstance(spec, AbstractBoundaryCondition) else tuple(spec)
        if len(pair) != 2 or not all(isinstance(b, AbstractBoundaryCondition) for b in pair):
            raise InputError(f"boundary conditions on axis {axis}: expected a condition or a "
                             f"(lower, upper) pair of conditions, got {spec!r}")
        if pair[0].periodic != pair[1].periodic:
            raise InputError(f"axis {axis}: Periodic must be set on both sides, got {pair}")
        out.append(pair)
    return tuple(out)


def check_face_values(pairs: Sequence[tuple[AbstractBoundaryCondition, AbstractBoundaryCondition]],
                      grid_shape: Sequence[int], where: str) -> None:
    """Each wall's value (a `Dirichlet` value, a `Neumann` flux, a `Robin` right-hand side)
    must be a number or an array of its face's shape: the other grid axes' points (a point,
    ``()``, on a 1-D grid). Any other shape broadcast against the wrong axis."""
    for axis, pair in enumerate(pairs):
        face = tuple(grid_shape[:axis]) + tuple(grid_shape[axis + 1:])
        for side, bc in zip(("lower", "upper"), pair):
            if bc.periodic:
                continue
            value = bc.constraint(1.0)[2]
            shape = np.shape(value)
            if not isinstance(value, jax.core.Tracer) and not np.all(np.isfinite(np.asarray(value))):
                # the run failed later as "the field became non-finite ... unstable or blew up"
                raise InputError(f"{where}: the {side} wall of grid axis {axis} has a non-finite "
                                 f"{type(bc).__name__} value")
            if shape not in ((), face):
                raise ShapeError(f"{where}: the {side} wall of grid axis {axis} has a {type(bc).__name__} value of "
                                 f"shape {shape}; it must be a number or an array of the face's shape {face} "
                                 "(the other grid axes' points)")


def ghost_weights(alpha: float, beta: float, dx: float, width: int) -> np.ndarray:
    """Weights ``W`` (width, m + 1): ghost ``k`` (``k = 0`` nearest the face) is
    ``W[k, :m] @ u_near + W[k, m] * value``, with ``u_near`` the ``m = 2 width - 1`` interior
    values nearest the face (nearest first).

    The polynomial ``p(s)`` (``s`` in cells from the face, inward) has
    ``p(j + 1/2) = u_j`` and ``alpha p(0) - beta p'(0) / dx = value``."""
    m = 2 * width - 1
    powers = np.arange(m + 1)
    rows = [(j + 0.5) ** powers for j in range(m)]
    face = np.zeros(m + 1)
    face[0] = alpha
    face[1] = -beta / dx
    matrix = np.array(rows + [face])
    if not np.linalg.cond(matrix) < 1e10:
        # alpha p(0) = beta p'(0) / dx with p the polynomial through the cells: no ghost
        # satisfies it (beta = -alpha dx / 2 at width 1); NumPy's bare "Singular matrix" before
        raise InputError(f"Robin(alpha={alpha:g}, beta={beta:g}) on a grid of spacing {dx:g}: the wall "
                         "condition does not determine the ghost layers (beta / dx is too close to a root of "
                         "the extrapolating polynomial's condition, e.g. -alpha / 2 at width 1); check "
                         "the sign of beta (the outward normal derivative)")
    ghosts = np.array([(-(k + 0.5)) ** powers for k in range(width)])
    return ghosts @ np.linalg.inv(matrix)


def _extrapolation_weights(points: int, width: int) -> np.ndarray:
    """Lagrange weights ``(width, points)``: the polynomial through values at cell centres
    ``0 .. points - 1`` evaluated at ``-1, -2, ... -width`` (the ghost centres beyond 0)."""
    x = np.arange(points, dtype=float)
    weights = np.ones((width, points))
    for k in range(width):
        for j in range(points):
            others = np.delete(x, j)
            weights[k, j] = np.prod((-(k + 1) - others) / (x[j] - others))
    return weights


def _extrapolated(value: Any, axis: int, width: int) -> Any:
    """``value`` continued by ``width`` points on both ends of ``axis``, each side by the
    polynomial through its ``2 width`` nearest values (the degree of the ghosts themselves;
    fewer where the axis is shorter): a wall value that varies along the face meets the
    corner ghosts as a smooth field would (extending it by its edge value put O(1) errors
    there, which the biharmonic's mixed term divides by h^4)."""
    n = value.shape[axis]
    weights = jnp.asarray(_extrapolation_weights(min(2 * width, n), width), value.dtype)
    q = weights.shape[1]

    def side(near):  # near: the q values nearest the end, nearest first -> ghosts, nearest first
        return jnp.moveaxis(jnp.tensordot(weights, jnp.moveaxis(near, axis, 0), axes=(1, 0)), 0, axis)

    low = side(lax.slice_in_dim(value, 0, q, axis=axis))
    high = side(lax.rev(lax.slice_in_dim(value, n - q, n, axis=axis), (axis,)))
    return jnp.concatenate([lax.rev(low, (axis,)), value, high], axis=axis)


def face_value(value: Any, axis: int, lead: int, width: int, cut: Mapping[int, slice] | None) -> Any:
    """A wall's array value (the face's shape: the other grid axes' interior points, as
    `check_face_values` requires) laid out as the block it meets: along each grid axis
    padded before ``axis`` (``cut``: array axis -> the block's range in padded coordinates,
    ghost layers included) continued into the ghost layers (`_extrapolated`) and cut to the
    block's range, and the wall's own axis inserted."""
    nd = value.ndim + 1
    dims = [b for b in range(nd) if b != axis - lead]  # the grid axis of each of the value's axes
    for i, b in enumerate(dims):
        if cut is not None and lead + b in cut:
            sl = cut[lead + b]
            value = lax.slice_in_dim(_extrapolated(value, i, width), sl.start, sl.stop, axis=i)
    value = jnp.expand_dims(value, axis - lead)
    return value.reshape((1,) * lead + value.shape)  # the leading (component) axes: explicit ranks


def ghost_side(u: Any, bc: AbstractBoundaryCondition, axis: int, upper: bool, dx: float, width: int,
               cut: Mapping[int, slice] | None = None) -> Any:
    """The ``width`` ghost layers of one non-periodic side of ``axis``, in array order;
    ``cut`` as in `face_value` (for an array value)."""
    n = u.shape[axis]
    m = 2 * width - 1
    if n < m:
        raise ShapeError(f"axis with {n} points is too short for ghost width {width} (needs {m})")
    alpha, beta, value = bc.constraint(dx)
    weights = ghost_weights(alpha, beta, dx, width)
    value = jnp.asarray(value, u.dtype)
    if value.ndim:
        value = face_value(value, axis, u.ndim - value.ndim - 1, width, cut)
    layers = []
    for k in range(width):  # nearest the face first; sums unrolled in a fixed order, so a
        # shard at a wall rounds exactly as the single-device run does
        total = value * weights[k, m]
        for j in range(m):
            near = lax.index_in_dim(u, n - 1 - j if upper else j, axis=axis, keepdims=True)
            total = total + weights[k, j] * near
        layers.append(total)
    return jnp.concatenate(layers if upper else layers[::-1], axis=axis)


class BoundaryGhosts(AbstractGhosts):
    """Ghost layers of one grid axis from its boundary conditions, computed from the block
    being read (no stored copy): a periodic side's ghosts are the far side's layers, a wall's
    extrapolate the nearest ``2 width - 1`` layers (`ghost_side`)."""

    lower: AbstractBoundaryCondition
    upper: AbstractBoundaryCondition
    dx: float = eqx.field(static=True)

    @property
    def wall(self) -> bool:
        """Whether the ghosts extrapolate a wall condition (not periodic)."""
        return not self.lower.periodic

    def layers(self, block: Any, axis: int, width: int, upper: bool, cut: Any) -> Any:
        n = block.shape[axis]
        if self.lower.periodic:
            start, stop = (0, width) if upper else (n - width, n)
            return lax.slice_in_dim(block, start, stop, axis=axis)
        m = 2 * width - 1
        start, stop = (n - m, n) if upper else (0, m)
        near = lax.slice_in_dim(block, start, stop, axis=axis)
        return ghost_side(near, self.upper if upper else self.lower, axis, upper, self.dx, width, cut)


def boundary_ghosts(u: Any, pair: tuple[AbstractBoundaryCondition, AbstractBoundaryCondition], axis: int,
                    dx: float, width: int) -> BoundaryGhosts:
    """`BoundaryGhosts` for array axis ``axis`` of ``u``, after checking it is long enough."""
    n = u.shape[axis]
    if pair[0].periodic and n < width:
        raise ShapeError(f"pad: an axis has {n} points, fewer than the ghost width {width}")
    if not pair[0].periodic and n < 2 * width - 1:
        raise ShapeError(f"axis with {n} points is too short for ghost width {width} (needs {2 * width - 1})")
    return BoundaryGhosts(pair[0], pair[1], float(dx))


def pad_plan(u: Any, bcs: BoundarySpec, width: int, spacing: Sequence[float], ndim: int | None,
             where: str = "pad") -> tuple:
    """Checks shared by every ghost filler (`pad`, halo exchange): the ``(lower, upper)``
    conditions per grid axis and the number of leading (component) axes."""
    if width < 1:
        raise InputError(f"pad: width must be at least 1, got {width}")
    nd = u.ndim if ndim is None else ndim
    pairs = normalize(bcs, nd)
    if len(spacing) != nd:
        raise ShapeError(f"pad: {len(spacing)} spacings for {nd} axes")
    # on a shard of a decomposed run this is the block's face: an array value must then
    # cover the face whole on each device
    check_face_values(pairs, np.shape(u)[u.ndim - nd:], where)
    return pairs, u.ndim - nd


def pad(u: Any, bcs: BoundarySpec, width: int, spacing: Sequence[float], *, ndim: int | None = None) -> Padded:
    """Fill ``width`` ghost layers around the last ``ndim`` axes of ``u`` (default: all of
    them; leading axes, e.g. field components, are carried along).

    Axes are padded in order, each on the already padded array, so corner ghosts are filled
    consistently (periodic corners are exact). The padded array is not built: the result
    computes ghosts where an operator reads them. In a `PDEModel`'s rhs use
    ``space.pad(u, width)``, which also works on a device mesh.

    Parameters
    ----------
    u : array_like
        The field, shape ``lead + grid.shape``.
    bcs : AbstractBoundaryCondition or sequence
        One condition for every side, or per grid axis a condition or a ``(lower, upper)``
        pair of conditions (for 1-D, ``[(lower, upper)]``).
    width : int
        Ghost layers per side (at least 1; the operator's radius: 1 for 2nd-order, 2 for
        4th-order operators and `biharmonic`).
    spacing : sequence of float
        The grid spacing per axis (length units), for Neumann and Robin conditions.
    ndim : int, optional
        Number of grid axes (the last ones of ``u``); default all of ``u``'s axes.

    Returns
    -------
    Padded
        The field and its ghost layers, shape ``lead + (n + 2 width for each grid axis)``.

    Raises
    ------
    InputError
        ``width < 1``, an entry of `bcs` that is not a condition or a pair of them, or
        `Periodic` on one side of an axis only.
    ShapeError
        The number of conditions or of spacings does not match the grid axes, or an axis
        is too short for the width (``2 width - 1`` points at a wall, ``width`` periodic).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit.stencil import Dirichlet, Neumann, pad
    >>> padded = pad(jnp.array([1.0, 2.0, 3.0]), [(Dirichlet(1.0), Neumann(0.0))], 1, (0.5,))
    >>> padded.shape, padded.data.tolist()
    ((5,), [1.0, 1.0, 2.0, 3.0, 3.0])
    """
    u = jnp.asarray(u)
    pairs, lead = pad_plan(u, bcs, width, spacing, ndim)
    ghosts = [boundary_ghosts(u, pair, lead + i, dx, width) for i, (pair, dx) in enumerate(zip(pairs, spacing))]
    return Padded(u, width, len(pairs), ghosts=ghosts)
