"""Run a stencil model on a device mesh: the fixed-step rollout of `simkit.stencil.integrate`
inside ``shard_map`` (or ``pmap`` for 1-D decompositions), ghosts by halo exchange.

The per-shard program is the single-device one with one change: its `Space` fills ghosts
with `halo_pad` and reduces with ``psum``/``pmax``. Models and operators are untouched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, PartitionSpec

from .. import _config
from .._prepare import check_flag
from ..errors import InputError, InputTypeError, ShapeError
from ..stencil.field_solution import FieldSolution
from ..stencil.grid import Grid
from ..stencil.pde import PDEModel, Space
from ..stencil.stepping import AbstractStepper, build_program, finish, prepare, rollout_arguments, rollout_body
from .agreement import same_call
from .halo import halo_pad, mesh_max, mesh_sum
from .mesh import field_spec, gather, mesh_for, place

TRANSFORMS = ("shard_map", "pmap")


def local_grid(grid: Grid, mesh_shape: tuple[int, ...]) -> Grid:
    """The block of ``grid`` one shard holds: ``grid.shape[a] // mesh_shape[a]`` points per
    axis, the same spacing (length units) and `lower` as ``grid`` (one static grid for every
    shard; where a block lies is its `Space`'s ``offset``, see `sharded_space`).

    Parameters
    ----------
    grid : Grid
        The whole grid.
    mesh_shape : tuple of int
        Devices along each grid axis (``mesh.devices.shape``).

    Returns
    -------
    Grid
        The block's grid.

    Raises
    ------
    ShapeError
        An axis that does not split evenly, or into blocks under 2 points (`check_split`:
        the message names the grid, the device count and the device counts that work).

    Examples
    --------
    >>> from simkit.parallel import local_grid
    >>> from simkit.stencil import Grid
    >>> local_grid(Grid((8, 8)), (2, 1))
    Grid(4x8 on [0, 0.5] x [0, 1], cell)
    """
    from .mesh import check_split

    check_split(grid.shape, mesh_shape)  # (a block of 1 point failed as a Grid the user never made)
    return grid.block(tuple(s // d for s, d in zip(grid.shape, mesh_shape)))


def sharded_space(grid: Grid, bcs: Any, axes: tuple[tuple[str, int], ...], domain: Grid) -> Space:
    """The `Space` a shard sees: its block ``grid`` (``local_grid(domain, sizes)``), halo-exchange
    ghosts, global reductions, and its position in the whole grid ``domain``: the offset of
    its first point, ``lax.axis_index(name) * grid.shape[a]`` per split axis ``a``, so
    ``space.coordinates()`` are the block's own. Call it inside ``shard_map``/``pmap`` (the
    mesh axis names of ``axes``, ``(name, size)`` per grid axis, bound).

    Parameters
    ----------
    grid : Grid
        The shard's block, ``local_grid(domain, sizes)``.
    bcs : AbstractBoundaryCondition or sequence
        The boundary conditions of the whole domain.
    axes : tuple of (str, int)
        Per grid axis, the mesh axis name and its size.
    domain : Grid
        The whole grid.

    Returns
    -------
    Space
        Ghosts by `halo_pad`, sums and maxima over every shard (``psum``/``pmax``).

    Raises
    ------
    ShapeError
        ``grid`` is not the block of ``domain`` on a mesh of those sizes.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from jax.sharding import PartitionSpec as P
    >>> from simkit.parallel import local_grid, mesh_for, sharded_space
    >>> from simkit.stencil import Grid, Periodic
    >>> domain = Grid(8)
    >>> mesh = mesh_for(domain, jax.devices()[:2])  # two devices where there are two
    >>> axes = (("x", mesh.devices.shape[0]),)
    >>> def total_x(block):
    ...     space = sharded_space(local_grid(domain, mesh.devices.shape), Periodic(), axes, domain)
    ...     return space.sum(space.coordinates()[0])  # global: the same on every shard
    >>> jax.shard_map(total_x, mesh=mesh, in_specs=P("x"), out_specs=P())(jnp.zeros(8)).item()
    4.0
    """
    sizes = tuple(size for _, size in axes)
    block = local_grid(domain, sizes)
    if (block.shape, block.lower, block.upper, block.centering) != (grid.shape, grid.lower, grid.upper, grid.centering):
        raise ShapeError(f"sharded_space: {grid} is not a block of {domain} on a mesh of shape {sizes}")
    grid = block  # (a block built by hand: the domain's spacing, as `local_grid` gives it)
    names = tuple(name for name, size in axes if size > 1)
    offset = tuple(lax.axis_index(name) * n if size > 1 else 0 for (name, size), n in zip(axes, grid.shape))
    return Space(grid, bcs, fill=functools.partial(halo_pad, axes=axes),
                 reduce_sum=mesh_sum(names), reduce_max=mesh_max(names), domain=domain, offset=offset)


def check_mesh(model: PDEModel, mesh: Mesh) -> None:
    """Refuse a mesh that does not fit ``model``'s grid (before any work)."""
    if mesh.axis_names != tuple(("x", "y", "z")[: model.grid.ndim]):
        raise InputError(f"mesh axes {mesh.axis_names} do not match a {model.grid.ndim}-D grid: "
                         "build it with simkit.parallel.mesh_for(grid)")
    local_grid(model.grid, mesh.devices.shape)


@functools.lru_cache(maxsize=64)
def _compiled(program: Any, mesh: Mesh, transform: str) -> Callable:
    axes = tuple(zip(mesh.axis_names, mesh.devices.shape))
    block = local_grid(program.grid, mesh.devices.shape)
    shard_program = program.with_grid(block)

    def per_shard(u0, params, bcs, t0, dt, n0):
        return rollout_body(shard_program, sharded_space(block, bcs, axes, program.grid), u0, params, t0, dt, n0)

    ndim = program.grid.ndim
    if transform == "shard_map":
        spec = field_spec(ndim)
        rep = PartitionSpec()
        f = jax.shard_map(per_shard, mesh=mesh, in_specs=(spec, rep, rep, rep, rep, rep),
                          out_specs=(field_spec(ndim, leading=2), rep, rep, rep), check_vma=False)
        jitted = jax.jit(f)
        return lambda u0, params, bcs, t0, dt, n0=0: jitted(u0, params, bcs, t0, dt, jnp.asarray(n0, jnp.int32))
    split = [a for a, (_, size) in enumerate(axes) if size > 1]
    if len(split) > 1:
        raise InputError(f"transform='pmap' runs 1-D decompositions only (nested pmap is broken in "
                         f"JAX 0.10); mesh {mesh.devices.shape} splits {len(split)} axes: use shard_map")
    axis = split[0] if split else 0
    name, size = axes[axis]
    devices = list(mesh.devices.reshape(-1))
    mapped = jax.pmap(per_shard, axis_name=name, in_axes=(0, None, None, None, None, None), devices=devices)

    def run(u0, params, bcs, t0, dt, n0=0):
        # (c, ..., n, ...) -> (shards, c, ..., n / shards, ...) along the split grid axis
        a = 1 + axis
        blocks = jnp.stack(jnp.split(u0, size, axis=a))
        us, ts, diags, bad = mapped(blocks, params, bcs, t0, dt, jnp.asarray(n0, jnp.int32))
        us = jnp.concatenate(list(us), axis=a + 1)
        return us, ts[0], jax.tree_util.tree_map(lambda d: d[0], diags), bad[0]

    return run


@_config.simkit_call()
def integrate(
    model: PDEModel,
    *,
    dt: float | Callable,
    steps: int,
    mesh: Mesh | None = None,
    save_every: int | None = None,
    stepper: AbstractStepper | None = None,
    params: Mapping[str, Any] | None = None,
    u0: Any = None,
    t0: float = 0.0,
    diagnostics: Mapping[str, Callable] | None = None,
    check_stability: bool = True,
    throw: bool = True,
    transform: str = "shard_map",
) -> FieldSolution:
    """`simkit.stencil.integrate` on a device mesh: the field split into blocks, one per
    device, ghosts exchanged with neighbours every stage.

    The result equals the single-device run bit for bit (diagnostics are global sums and
    agree to rounding) and is gathered to every process (a collective under
    `jax.distributed`).

    Parameters
    ----------
    model : PDEModel
        The model.
    dt : float or callable
        Step size (time units), or a rule ``dt(u, params, space) -> step`` (use
        ``space.max``/``space.sum``: global on the mesh).
    steps : int
        Number of steps (a multiple of `save_every`).
    mesh : jax.sharding.Mesh, optional
        A `mesh_for` mesh (default ``mesh_for(model.grid)`` over all global devices).
    save_every : int, optional
        Save every this many steps (default: only the start and the end).
    stepper : AbstractStepper, optional
        As `simkit.stencil.integrate` (default `simkit.stencil.RK4()`).
    params : dict, optional
        Parameter overrides.
    u0 : array_like, optional
        Initial field, ``(components,) + grid.shape`` (default ``model.u0``).
    t0 : float
        Start time (default 0).
    diagnostics : dict, optional
        ``{name: fn(u, space) -> scalar}`` saved at every save point (``space.sum`` and
        ``space.integral`` are global).
    check_stability : bool
        Refuse a ``dt`` above the stepper's stable bound (estimated at ``u0``; default True).
    throw : bool
        Raise `SolveError` when the field becomes non-finite (default True).
    transform : {"shard_map", "pmap"}
        ``"shard_map"`` (default; any mesh) or ``"pmap"`` (1-D decompositions).

    Returns
    -------
    FieldSolution
        As `simkit.stencil.integrate`, on the host.

    Raises
    ------
    InputTypeError
        ``model`` is not a `PDEModel`, or `stepper` is not a stepper object.
    InputError
        An unknown `transform`, ``"pmap"`` on a mesh that splits several axes, a mesh whose
        axes do not match the grid, or the checks of `simkit.stencil.integrate`: ``dt`` not
        positive or above the stable bound, `steps` not a multiple of `save_every`, a bad
        ``u0``, a stepper that needs the model's linear part.
    ParameterError
        An unknown parameter name.
    ShapeError
        A grid that does not split evenly over the mesh.
    SolveError
        The field became non-finite (``throw=True``).

    Examples
    --------
    >>> import jax, numpy as np
    >>> from simkit import models, parallel, stencil
    >>> heat = models.get("heat_2d")
    >>> mesh = parallel.mesh_for(heat.grid, jax.devices()[:2])  # two devices where there are two
    >>> split = parallel.integrate(heat, dt=1e-3, steps=4, save_every=2, mesh=mesh)
    >>> split.us.shape, np.array_equal(split.us, stencil.integrate(heat, dt=1e-3, steps=4, save_every=2).us)
    ((3, 1, 64, 64), True)
    """
    if transform not in TRANSFORMS:
        raise InputError(f"transform must be one of {TRANSFORMS}, got {transform!r}")
    if not isinstance(model, PDEModel):
        raise InputTypeError(f"parallel.integrate() expects a PDEModel, got {type(model).__name__}")
    mesh = mesh_for(model.grid) if mesh is None else mesh
    check_mesh(model, mesh)
    check_flag("throw", throw)
    program, u_init, params_j, dt_arg = prepare(model, dt=dt, steps=steps, save_every=save_every,
                                                stepper=stepper, params=params, u0=u0, t0=t0,
                                                diagnostics=diagnostics, check_stability=check_stability)
    same_call("parallel.integrate", model=(model.name, repr(model.grid), model.bcs), rhs=model.rhs, u0=u_init,
              params=params_j, dt=dt, steps=steps, save_every=save_every, t0=t0, mesh=mesh.devices.shape,
              stepper=stepper, diagnostics=diagnostics, transform=transform)
    run = _compiled(program, mesh, transform)
    u_dev = place(u_init, mesh, field_spec(model.grid.ndim)) if transform == "shard_map" else jnp.asarray(u_init)
    dtype = u_init.dtype
    us, ts, diags, bad = run(u_dev, params_j, model.bcs, jnp.asarray(t0, dtype), dt_arg)
    return finish(model, program, gather(us), np.asarray(ts), {k: np.asarray(v) for k, v in diags.items()},
                  int(bad), dt, throw, params=params_j)


@_config.simkit_call()
def rollout(model: PDEModel, params: Mapping[str, Any] | None = None, u0: Any = None, *, dt: Any, steps: int,
            mesh: Mesh | None = None, save_every: int | None = None, stepper: AbstractStepper | None = None,
            t0: Any = 0.0, diagnostics: Mapping[str, Callable] | None = None,
            transform: str = "shard_map") -> tuple[Any, Any, dict]:
    """`simkit.stencil.rollout` on a device mesh: a pure JAX function of ``params``, ``u0``,
    ``dt``, ``t0`` (differentiable: ``jax.grad`` flows through the halo exchanges).

    No stability check and no non-finite check (use `integrate` for those).

    Parameters
    ----------
    model : PDEModel
        The model.
    params : dict, optional
        Parameter overrides (may be traced).
    u0 : array_like, optional
        Initial field, ``(components,) + grid.shape`` (default ``model.u0``; may be traced).
    dt : float or callable
        Step size (may be traced), or a step rule as in `integrate`.
    steps : int
        Number of steps (a multiple of `save_every`).
    mesh : jax.sharding.Mesh, optional
        A `mesh_for` mesh (default over all global devices).
    save_every : int, optional
        Save every this many steps (default: only the start and the end).
    stepper : AbstractStepper, optional
        As `simkit.stencil.integrate`.
    t0 : float
        Start time (may be traced).
    diagnostics : dict, optional
        ``{name: fn(u, space) -> scalar}`` at every save point.
    transform : {"shard_map", "pmap"}
        As `integrate`.

    Returns
    -------
    tuple
        ``(us, ts, diagnostics)``: ``us`` of shape ``(saves, components) + grid.shape``
        (sharded over the mesh with ``"shard_map"``), ``ts`` ``(saves,)``, and
        ``{name: (saves,)}``.

    Raises
    ------
    InputError
        An unknown `transform`, or the checks of `simkit.stencil.rollout`.
    ShapeError
        A grid that does not split evenly over the mesh.

    Examples
    --------
    >>> import jax
    >>> from simkit import models, parallel
    >>> heat = models.get("heat_2d")
    >>> mesh = parallel.mesh_for(heat.grid, jax.devices()[:2])
    >>> us, ts, _ = parallel.rollout(heat, dt=1e-3, steps=4, save_every=2, mesh=mesh)
    >>> us.shape, ts.tolist()
    ((3, 1, 64, 64), [0.0, 0.002, 0.004])
    """
    if transform not in TRANSFORMS:
        raise InputError(f"transform must be one of {TRANSFORMS}, got {transform!r}")
    mesh = mesh_for(model.grid) if mesh is None else mesh
    program = build_program(model, dt=dt, steps=steps, save_every=save_every, stepper=stepper,
                            diagnostics=diagnostics)
    us, ts, diags, _ = _compiled(program, mesh, transform)(*rollout_arguments(model, params, u0, dt, t0))
    return us, ts, diags
