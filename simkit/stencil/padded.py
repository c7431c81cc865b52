"""`Padded`: a field and its ghost layers, kept apart, read through windows.

A padded field is the array one would get by padding ``core`` with ``width`` ghost layers
along each grid axis in turn (axis 0 first, then axis 1 on the result, ...). That array is
never built: `Padded` holds ``core`` (the unpadded field) and, per grid axis, where that
axis's ghost layers come from (`AbstractGhosts`): computed from the block being read
(boundary conditions, `simkit.stencil.boundary.BoundaryGhosts`: a periodic side copies the far
side's layers, a wall extrapolates the nearest ones) or stored thin slabs (`Slabs`: halo
exchange, or an already padded array). Operators read `window`s of the padded array (a
shifted view is a window of the interior's size); each window is built from slices of
``core`` with the ghost layers selected in at its edges (``lax.pad`` of slices and a
``select`` on an ``iota`` mask), elementwise operations that XLA fuses into the operator's
loop. So filling ghosts, the operator and the update of a time step are one pass over memory
(materialising the padded copy made every stage two passes; benchmarks/measurements.md,
"Stencil step anatomy").

Slab shapes (``w`` the width, ``n_b`` the core's length along grid axis ``b``): the slabs
of grid axis ``a`` have ``w`` layers along ``a``, the padded length ``n_b + 2 w`` along the
axes ``b < a`` (they hold the corners, as padding axis by axis does) and ``n_b`` along the
axes ``b > a``; leading (component) axes as ``core``.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jax import lax

from ..errors import ShapeError

Ranges = Mapping[int, tuple[int, int]]  # grid axis -> [start, stop) in padded coordinates


class AbstractGhosts(eqx.Module):
    """Where the ghost layers of one grid axis come from (the extension contract).

    `layers(block, axis, width, upper, cut)` returns the ``width`` layers beyond the lower
    (``upper=False``) or upper end of array axis ``axis`` of ``block``, in array order.
    ``block`` is the field already windowed along the earlier grid axes and whole along
    ``axis``; ``cut`` maps array axes to the slices that bring stored layers to ``block``'s
    extent (stored layers hold the padded extent of the earlier grid axes).
    """

    @abc.abstractmethod
    def layers(self, block: Any, axis: int, width: int, upper: bool, cut: Mapping[int, slice]) -> Any:
        ...


class Slabs(AbstractGhosts):
    """Stored ghost layers (halo exchange; an already padded array), shapes as in the module
    docstring."""

    lower: Any
    upper: Any
    wall: bool = eqx.field(static=True, default=False)  # the domain's ends are walls (a decomposed run's axis)

    def layers(self, block: Any, axis: int, width: int, upper: bool, cut: Mapping[int, slice]) -> Any:
        slab = self.upper if upper else self.lower
        index = [slice(None)] * slab.ndim
        for a, sl in cut.items():
            index[a] = sl
        return slab[tuple(index)]


class Padded(eqx.Module):
    """A field with ``width`` ghost layers on each side of its last ``ndim`` axes.

    ``Padded(data, width, ndim)`` takes an already padded array ``data`` (shape
    ``lead + (n_b + 2 width for each grid axis)``). ``Padded(core, width, ndim, ghosts=...)``
    takes the unpadded field ``core`` (shape ``lead + (n_b,)``) and, per grid axis, an
    `AbstractGhosts` or a ``(lower, upper)`` pair of slabs (see the module docstring): what
    `simkit.stencil.pad` and halo exchange build, without materialising the padded array.
    Operators (`laplacian`, `derivative`, ...) take a `Padded` field and return the interior.

    Parameters
    ----------
    data : array_like
        The padded array, or with `ghosts` the unpadded field ``core``.
    width : int
        Ghost layers on each side of each grid axis.
    ndim : int
        Number of grid axes (the last ones); the axes before them (``lead``) are carried
        along, e.g. field components.
    ghosts : sequence, optional
        Per grid axis, an `AbstractGhosts` or a ``(lower, upper)`` pair of ghost slabs.

    Attributes
    ----------
    core : jax.Array
        The field without ghosts (as `interior`).
    ghosts : tuple of AbstractGhosts
        Where each grid axis's ghost layers come from.

    Raises
    ------
    ShapeError
        ``data`` is too small for ``ndim`` axes padded by ``width``, or `ghosts` does not
        have one entry per grid axis.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit.stencil import Padded
    >>> p = Padded(jnp.arange(5.0), width=1, ndim=1)  # an already padded 1-D array
    >>> p.interior.tolist(), p.shifted({0: 1}).tolist()
    ([1.0, 2.0, 3.0], [2.0, 3.0, 4.0])
    """

    core: Any
    ghosts: tuple[AbstractGhosts, ...]
    width: int = eqx.field(static=True)
    ndim: int = eqx.field(static=True)

    def __init__(self, data: Any, width: int, ndim: int, ghosts: Sequence[Any] | None = None):
        self.width = int(width)
        self.ndim = int(ndim)
        if ghosts is None:
            data, ghosts = _split(jnp.asarray(data), self.width, self.ndim)
        if len(ghosts) != self.ndim:
            raise ShapeError(f"Padded: {len(ghosts)} ghost sources for {self.ndim} grid axes")
        self.core = data
        self.ghosts = tuple(g if isinstance(g, AbstractGhosts) else Slabs(*g) for g in ghosts)

    @property
    def interior(self) -> Any:
        """The field without ghosts.

        Returns
        -------
        jax.Array
            Shape ``lead + (n_b for each grid axis)``.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Periodic, pad
        >>> p = pad(jnp.arange(6.0).reshape(2, 3), Periodic(), 1, (1.0,), ndim=1)  # 2 components
        >>> p.interior.shape
        (2, 3)
        """
        return self.core

    @property
    def lead(self) -> int:
        """Number of leading (component) axes.

        Returns
        -------
        int
            ``core.ndim - ndim``.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Periodic, pad
        >>> p = pad(jnp.arange(6.0).reshape(2, 3), Periodic(), 1, (1.0,), ndim=1)  # 2 components
        >>> p.lead
        1
        """
        return self.core.ndim - self.ndim

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the padded array.

        Returns
        -------
        tuple of int
            ``lead`` axes as they are, each grid axis ``n + 2 width``.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Periodic, pad
        >>> p = pad(jnp.arange(6.0).reshape(2, 3), Periodic(), 1, (1.0,), ndim=1)  # 2 components
        >>> p.shape
        (2, 5)
        """
        return self.core.shape[: self.lead] + tuple(n + 2 * self.width for n in self.core.shape[self.lead:])

    @property
    def data(self) -> Any:
        """The padded array itself, materialised (for inspection; operators never use it).

        Returns
        -------
        jax.Array
            Shape `shape`.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Periodic, pad
        >>> p = pad(jnp.arange(6.0).reshape(2, 3), Periodic(), 1, (1.0,), ndim=1)  # 2 components
        >>> p.data.tolist()
        [[2.0, 0.0, 1.0, 2.0, 0.0], [5.0, 3.0, 4.0, 5.0, 3.0]]
        """
        return self.window({a: (0, n) for a, n in enumerate(self.shape[self.lead:])})

    def component(self, index: int) -> Padded:
        """The padded field of one component (of the axis just before the grid axes).

        Parameters
        ----------
        index : int
            The component.

        Returns
        -------
        Padded
            That component with its ghost layers (one leading axis fewer).

        Raises
        ------
        IndexError
            No such component.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Periodic, pad
        >>> p = pad(jnp.arange(6.0).reshape(2, 3), Periodic(), 1, (1.0,), ndim=1)  # 2 components
        >>> p.component(1).data.tolist()
        [5.0, 3.0, 4.0, 5.0, 3.0]
        """
        pick = (..., index) + (slice(None),) * self.ndim
        return self.map_fields(lambda x: x[pick])

    def map_fields(self, fn: Any) -> Padded:
        """``fn`` applied to the field and to its stored ghost slabs (the arrays that carry
        the leading axes), e.g. to pick or flatten components.

        Parameters
        ----------
        fn : callable
            ``fn(array) -> array``, acting on the leading axes only (the grid axes must be
            kept); computed ghosts (boundary conditions) are re-derived from the new field.

        Returns
        -------
        Padded
            The mapped field with the same width and grid axes.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Periodic, pad
        >>> p = pad(jnp.arange(6.0).reshape(2, 3), Periodic(), 1, (1.0,), ndim=1)  # 2 components
        >>> p.map_fields(lambda x: 2 * x).data[0].tolist()
        [4.0, 0.0, 2.0, 4.0, 0.0]
        """
        ghosts = tuple(Slabs(fn(g.lower), fn(g.upper)) if isinstance(g, Slabs) else g for g in self.ghosts)
        return Padded(fn(self.core), self.width, self.ndim, ghosts=ghosts)

    def shifted(self, offsets: Mapping[int, int]) -> Any:
        """The interior-sized window moved by ``offsets``: ``u[i + offset]`` at every
        interior point ``i``.

        Parameters
        ----------
        offsets : dict of int to int
            ``{grid axis: offset}`` with ``|offset| <= width``; axes not named are not moved.

        Returns
        -------
        jax.Array
            Shape of `interior`.

        Raises
        ------
        ShapeError
            An offset larger than the width.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Periodic, pad
        >>> p = pad(jnp.arange(6.0).reshape(2, 3), Periodic(), 1, (1.0,), ndim=1)  # 2 components
        >>> p.shifted({0: 1})[0].tolist(), p.shifted({0: -1})[0].tolist()
        ([1.0, 2.0, 0.0], [2.0, 0.0, 1.0])
        """
        w = self.width
        n = self.core.shape[self.lead:]
        return self.window({a: (w + o, w + o + n[a]) for a, o in offsets.items() if o})

    def window(self, ranges: Ranges) -> Any:
        """The block ``[start, stop)`` (padded coordinates) along each grid axis in
        `ranges`, the interior along the others. Built axis by axis in padding order: along
        axis ``a`` from the block so far and axis ``a``'s ghost layers for that block.

        Parameters
        ----------
        ranges : dict of int to (int, int)
            ``{grid axis: (start, stop)}`` in padded coordinates (``0`` is the first ghost
            layer; the interior is ``[width, width + n)``).

        Returns
        -------
        jax.Array
            The block: leading axes, then ``stop - start`` along each named axis and the
            interior length along the others.

        Raises
        ------
        ShapeError
            A range outside the padded axis.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Periodic, pad
        >>> p = pad(jnp.arange(6.0).reshape(2, 3), Periodic(), 1, (1.0,), ndim=1)  # 2 components
        >>> p.window({0: (0, 2)}).tolist()  # the lower ghost and the first point
        [[2.0, 0.0], [5.0, 3.0]]
        """
        lead, w = self.lead, self.width
        out = self.core
        for a in range(self.ndim):
            if a not in ranges:
                continue
            start, stop = ranges[a]
            n = self.core.shape[lead + a]
            if not 0 <= start < stop <= n + 2 * w:
                raise ShapeError(f"Padded.window: [{start}, {stop}) outside the padded axis {a} of "
                                 f"length {n + 2 * w}")
            if w <= start and stop <= w + n:  # inside the core: a slice
                out = lax.slice_in_dim(out, start - w, stop - w, axis=lead + a)
                continue
            cut = {lead + b: slice(*ranges[b]) if b in ranges else slice(w, w + self.core.shape[lead + b])
                   for b in range(a)}
            lo, hi = (self.ghosts[a].layers(out, lead + a, w, upper, cut) for upper in (False, True))
            out = _along(out, lo, hi, lead + a, start, stop, w)
        return out


def _along(x: Any, lo: Any, hi: Any, axis: int, start: int, stop: int, width: int) -> Any:
    """Window ``[start, stop)`` along ``axis`` of ``concatenate([lo, x, hi])``, written as
    zero-padded slices merged by ``select`` on an index mask (fusible: no concatenate)."""
    n = x.shape[axis]
    length = stop - start
    pieces = []
    for part, offset in ((lo, 0), (x, width), (hi, width + n)):
        first, last = max(start, offset), min(stop, offset + part.shape[axis])
        if first < last:
            # the ghosts in the field's dtype (they may come from float64 parameters)
            piece = lax.slice_in_dim(part, first - offset, last - offset, axis=axis).astype(x.dtype)
            pieces.append((piece, first - start, last - start))
    if len(pieces) == 1:
        return pieces[0][0]
    out = None
    for piece, begin, end in pieces:
        config = [(0, 0, 0)] * x.ndim
        config[axis] = (begin, length - end, 0)
        placed = lax.pad(piece, jnp.zeros((), x.dtype), config)
        if out is None:
            out = placed
            continue
        position = lax.broadcasted_iota(jnp.int32, placed.shape, axis)
        out = jnp.where(position >= begin, placed, out)  # pieces come in order along the axis
    return out


def _split(data: Any, width: int, ndim: int) -> tuple[Any, tuple[Slabs, ...]]:
    """``(core, slabs)`` of an already padded array (the inverse of `Padded.data`)."""
    lead = data.ndim - ndim
    if lead < 0 or any(s < 2 * width for s in data.shape[lead:]):
        raise ShapeError(f"Padded: array of shape {data.shape} is too small for {ndim} grid axes "
                         f"padded with {width} ghost layers")
    ghosts = []
    for a in range(ndim - 1, -1, -1):  # peel the last-padded axis first
        n = data.shape[lead + a]
        ghosts.append(Slabs(lax.slice_in_dim(data, 0, width, axis=lead + a),
                            lax.slice_in_dim(data, n - width, n, axis=lead + a)))
        data = lax.slice_in_dim(data, width, n - width, axis=lead + a)
    return data, tuple(ghosts[::-1])


def edge_layers(core: Any, ghosts: Sequence[AbstractGhosts], lead: int, axis: int, start: int,
                stop: int, width: int) -> Any:
    """Layers ``[start, stop)`` (core coordinates) along grid ``axis`` of ``core`` padded
    along the grid axes before it by ``ghosts`` (``len(ghosts) == axis``; ``lead`` leading
    axes): what a neighbour receives in a halo exchange, corners included, without padding
    the whole field. Shape: ``stop - start`` along ``axis``, padded before it."""
    out = lax.slice_in_dim(core, start, stop, axis=lead + axis)
    for b, source in enumerate(ghosts):
        cut = {lead + axis: slice(start, stop)}
        lo, hi = (source.layers(out, lead + b, width, upper, cut) for upper in (False, True))
        out = jnp.concatenate([lo, out, hi], axis=lead + b)
    return out
