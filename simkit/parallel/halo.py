"""Ghost filling on a device mesh: halo exchange with neighbours by ``lax.ppermute``, the
physical boundary conditions on edge shards only.

`halo_pad` has `simkit.stencil.pad`'s signature plus the mesh axes; `Space.fill` takes
either, so models and operators are the same on one device and on many. It runs inside
``shard_map`` or ``pmap`` (it needs the mesh axis names bound). Per grid axis, in order
(corners as on one device): a shard sends its last ``width`` layers to the next shard and its
first ones to the previous (cyclic for periodic axes); on walls the first and last shards
compute their ghosts from the boundary condition with the same arithmetic as on one device,
so a decomposed run equals the single-device run bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
from jax import lax

from ..errors import ShapeError
from ..stencil.boundary import Padded, boundary_ghosts, ghost_side, pad_plan
from ..stencil.padded import AbstractGhosts, Slabs, edge_layers


def halo_pad(u: Any, bcs: Any, width: int, spacing: Sequence[float], *, ndim: int | None = None,
             axes: Sequence[tuple[str | None, int]] = ()) -> Padded:
    """``width`` ghost layers around this shard's block ``u``; ``axes`` gives, per grid axis,
    the mesh axis name and its size (size 1: filled locally, as on one device).

    Only the thin ghost slabs are exchanged and stored; the block itself is not copied into
    a padded array (operators read fused windows of the `Padded` result). Call it inside
    ``jax.shard_map`` or ``jax.pmap`` (the mesh axis names bound); a model's rhs gets it
    through ``space.pad`` of a `sharded_space`.

    Parameters
    ----------
    u : jax.Array
        This shard's block, ``lead + block shape``.
    bcs : AbstractBoundaryCondition or sequence
        The boundary conditions of the whole domain (as `simkit.stencil.pad`): applied on
        the shards at a wall.
    width : int
        Ghost layers per side.
    spacing : sequence of float
        Grid spacing per axis (length units).
    ndim : int, optional
        Number of grid axes (default all of ``u``'s axes).
    axes : sequence of (str or None, int)
        Per grid axis, the mesh axis name and its size.

    Returns
    -------
    Padded
        The block with its ghost layers, as `simkit.stencil.pad` gives on one device (the
        same values, bit for bit).

    Raises
    ------
    InputError, ShapeError
        As `simkit.stencil.pad`; also `axes` without one entry per grid axis, or a shard
        too thin for the width (use fewer devices along that axis).

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from jax.sharding import PartitionSpec as P
    >>> from simkit.parallel import halo_pad, mesh_for
    >>> from simkit.stencil import Grid, Periodic, laplacian, pad
    >>> grid = Grid(8)
    >>> mesh = mesh_for(grid, jax.devices()[:2])  # two devices where there are two
    >>> axes = (("x", mesh.devices.shape[0]),)
    >>> def lap(block):
    ...     return laplacian(halo_pad(block, Periodic(), 1, grid.spacing, axes=axes), grid.spacing)
    >>> u = jnp.sin(2 * jnp.pi * jnp.asarray(grid.coordinates()))
    >>> split = jax.shard_map(lap, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(u)
    >>> bool(jnp.array_equal(split, laplacian(pad(u, Periodic(), 1, grid.spacing), grid.spacing)))
    True
    """
    pairs, lead = pad_plan(u, bcs, width, spacing, ndim,
                           where="halo_pad (this device's block: an array wall value needs its face whole on "
                                 "each device; decompose along the wall's own axis only)")
    if len(axes) != len(pairs):
        raise ShapeError(f"halo_pad: {len(axes)} mesh axes for {len(pairs)} grid axes")
    ghosts: list[AbstractGhosts] = []
    for i, ((lower, upper), dx, (name, size)) in enumerate(zip(pairs, spacing, axes)):
        if size == 1:
            ghosts.append(boundary_ghosts(u, (lower, upper), lead + i, dx, width))
            continue
        n = u.shape[lead + i]
        if n < (width if lower.periodic else 2 * width - 1):
            raise ShapeError(f"halo_pad: a shard has {n} points along axis {i}, too few for ghost "
                             f"width {width}: use fewer devices along that axis")
        last = edge_layers(u, ghosts, lead, i, n - width, n, width)  # corners included
        first = edge_layers(u, ghosts, lead, i, 0, width, width)
        if lower.periodic:
            forward = [(j, (j + 1) % size) for j in range(size)]
            backward = [(j, (j - 1) % size) for j in range(size)]
        else:
            forward = [(j, j + 1) for j in range(size - 1)]
            backward = [(j, j - 1) for j in range(1, size)]
        from_lower = lax.ppermute(last, name, perm=forward)  # the lower neighbour's last layers
        from_upper = lax.ppermute(first, name, perm=backward)
        if not lower.periodic:
            m = 2 * width - 1
            index = lax.axis_index(name)
            near_lo = edge_layers(u, ghosts, lead, i, 0, m, width)
            near_hi = edge_layers(u, ghosts, lead, i, n - m, n, width)
            # an array wall value meets layers with their corners (every axis before this
            # one padded); `pad_plan` refused one whose face this device does not hold whole
            corners = {lead + b: slice(0, u.shape[lead + b] + 2 * width) for b in range(i)}
            wall_lo = ghost_side(near_lo, lower, lead + i, False, dx, width, corners)
            wall_hi = ghost_side(near_hi, upper, lead + i, True, dx, width, corners)
            from_lower = jnp.where(index == 0, wall_lo, from_lower)
            from_upper = jnp.where(index == size - 1, wall_hi, from_upper)
        ghosts.append(Slabs(from_lower, from_upper, wall=not lower.periodic))
    return Padded(u, width, len(pairs), ghosts=ghosts)


def mesh_sum(names: Sequence[str]):
    """``reduce_sum`` for a sharded `Space`: the local sum over the grid axes, ``psum``-ed."""
    names = tuple(names)

    def reduce(field: Any, ndim: int) -> Any:
        local = jnp.sum(field, axis=tuple(range(-ndim, 0)))
        return lax.psum(local, names) if names else local

    return reduce


def mesh_max(names: Sequence[str]):
    """``reduce_max`` for a sharded `Space`: the local maximum over the grid axes, ``pmax``-ed."""
    names = tuple(names)

    def reduce(field: Any, ndim: int) -> Any:
        local = jnp.max(field, axis=tuple(range(-ndim, 0)))
        return lax.pmax(local, names) if names else local

    return reduce

