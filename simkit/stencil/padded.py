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
(materialising the padded copy made every stage two passes; benchmarks/README.md, "Stencil
step anatomy").

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

    - `interior`: the field without ghosts, shape ``lead + (n_b,)``;
    - `window(ranges)`: a block of the padded array, ``{grid axis: (start, stop)}`` in padded
      coordinates (axes not named: the interior);
    - `shifted(offsets)`: the interior-sized window moved by ``{grid axis: offset}``
      (``|offset| <= width``): ``u[i + offset]`` at every interior point;
    - `component(i)`: the padded field of component ``i`` of the axis before the grid axes;
    - `data`: the padded array itself, materialised (for inspection; operators never use it).
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
        return self.core

    @property
    def lead(self) -> int:
        """Number of leading (component) axes."""
        return self.core.ndim - self.ndim

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the padded array."""
        return self.core.shape[: self.lead] + tuple(n + 2 * self.width for n in self.core.shape[self.lead:])

    @property
    def data(self) -> Any:
        return self.window({a: (0, n) for a, n in enumerate(self.shape[self.lead:])})

    def component(self, index: int) -> Padded:
        pick = (..., index) + (slice(None),) * self.ndim
        return self.map_fields(lambda x: x[pick])

    def map_fields(self, fn: Any) -> Padded:
        """``fn`` applied to the field and to its stored ghost slabs (the arrays that carry
        the leading axes), e.g. to pick or flatten components."""
        ghosts = tuple(Slabs(fn(g.lower), fn(g.upper)) if isinstance(g, Slabs) else g for g in self.ghosts)
        return Padded(fn(self.core), self.width, self.ndim, ghosts=ghosts)

    def shifted(self, offsets: Mapping[int, int]) -> Any:
        w = self.width
        n = self.core.shape[self.lead:]
        return self.window({a: (w + o, w + o + n[a]) for a, o in offsets.items() if o})

    def window(self, ranges: Ranges) -> Any:
        """The block ``[start, stop)`` (padded coordinates) along each grid axis in
        `ranges`, the interior along the others. Built axis by axis in padding order: along
        axis ``a`` from the block so far and axis ``a``'s ghost layers for that block."""
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
            piece = lax.slice_in_dim(part, first - offset, last - offset, axis=axis)
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
