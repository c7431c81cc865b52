"""Device meshes for grids and ensembles, placing and gathering arrays, multi-process start-up.

Meshes use `AxisType.Auto` axes (the notes: an Explicit mesh rejects unsharded inputs and
plain slicing of sharded arrays). A grid's mesh has one axis per grid axis, named ``x``,
``y``, ``z`` (size 1 where that axis is not split); an ensemble's mesh has one axis,
``members``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

from ..errors import InputError, ShapeError

GRID_AXES = ("x", "y", "z")
MEMBER_AXIS = "members"


def _factorisations(n: int, ndim: int) -> list[tuple[int, ...]]:
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    return [f for f in itertools.product(divisors, repeat=ndim) if int(np.prod(f)) == n]


MIN_BLOCK_POINTS = 2
"""Points per axis a device's block needs at least (a `Grid` has at least 2 per axis)."""


def splits(size: int, devices: int) -> bool:
    """Whether an axis of ``size`` points splits over ``devices`` devices: evenly, into blocks
    of at least `MIN_BLOCK_POINTS` points.

    Parameters
    ----------
    size : int
        Points along the axis.
    devices : int
        Devices along the axis.

    Returns
    -------
    bool

    Examples
    --------
    >>> from simkit.parallel.mesh import splits
    >>> splits(8, 4), splits(4, 4), splits(9, 2)
    (True, False, False)
    """
    return size % devices == 0 and (devices == 1 or size // devices >= MIN_BLOCK_POINTS)


def check_split(grid_shape: Sequence[int], mesh_shape: Sequence[int]) -> None:
    """Refuse a decomposition of a grid of ``grid_shape`` over a mesh of ``mesh_shape``
    that does not split every axis (`splits`), with a message in the user's terms: their
    grid, the device count, and the device counts that work.

    Parameters
    ----------
    grid_shape, mesh_shape : sequence of int
        Points per grid axis, and devices along each.

    Raises
    ------
    ShapeError
        An axis that does not split evenly, or that leaves fewer than `MIN_BLOCK_POINTS`
        points per device.

    Examples
    --------
    >>> from simkit.parallel.mesh import check_split
    >>> check_split((8,), (4,))  # 2 points per device: fine
    >>> check_split((4,), (4,))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    simkit.errors.ShapeError: grid of shape (4,) is too small for mesh (4,) (4 devices): axis 0 ...
    """
    grid_shape, mesh_shape = tuple(int(s) for s in grid_shape), tuple(int(d) for d in mesh_shape)
    why = [f"axis {a} ({s} points over {d} devices: " + (f"{s / d:g} each, not a whole number" if s % d else
                                                          f"{s // d} each, fewer than {MIN_BLOCK_POINTS}") + ")"
           for a, (s, d) in enumerate(zip(grid_shape, mesh_shape)) if not splits(s, d)]
    if why:
        uneven = any(s % d for s, d in zip(grid_shape, mesh_shape))
        raise ShapeError(f"grid of shape {grid_shape} " + ("does not split evenly into" if uneven else "is too small for")
                         + f" mesh {mesh_shape} ({int(np.prod(mesh_shape))} devices): {'; '.join(why)}; device "
                         f"counts that work for this grid: {working_counts(grid_shape)}")


def working_counts(shape: Sequence[int], limit: int = 64) -> list[int]:
    """Device counts up to ``limit`` that can decompose a grid of ``shape``.

    Parameters
    ----------
    shape : sequence of int
        Points per grid axis.
    limit : int
        The largest count considered (default 64).

    Returns
    -------
    list of int
        Every ``n <= limit`` with a factorisation over the axes that splits each axis
        (`splits`: evenly, at least `MIN_BLOCK_POINTS` points per device).

    Examples
    --------
    >>> from simkit.parallel import working_counts
    >>> working_counts((8, 8), limit=8)
    [1, 2, 4, 8]
    """
    return [n for n in range(1, limit + 1)
            if any(all(splits(s, d) for s, d in zip(shape, f)) for f in _factorisations(n, len(shape)))]


def mesh_shape_for(shape: Sequence[int], n_devices: int, *, split: Sequence[bool] | None = None) -> tuple[int, ...]:
    """The decomposition of ``n_devices`` over the grid axes with the smallest halo surface
    (sum over split axes of the cross-section it cuts), among those that divide the grid;
    ties go to fewer split axes, then to splitting the first axes (contiguous blocks).

    Parameters
    ----------
    shape : sequence of int
        Points per grid axis.
    n_devices : int
        The number of devices.
    split : sequence of bool, optional
        Which axes may be split (default all).

    Returns
    -------
    tuple of int
        Devices along each grid axis; their product is ``n_devices``.

    Raises
    ------
    ShapeError
        No decomposition divides the grid evenly (the message lists the counts that work).

    Examples
    --------
    >>> from simkit.parallel import mesh_shape_for
    >>> mesh_shape_for((64, 64), 4), mesh_shape_for((64, 16), 4)  # blocks; slabs across the long axis
    ((2, 2), (4, 1))
    """
    shape = tuple(int(s) for s in shape)
    allowed = [True] * len(shape) if split is None else list(split)
    best = None
    for f in _factorisations(n_devices, len(shape)):
        if any(d > 1 and not ok for d, ok in zip(f, allowed)):
            continue
        if not all(splits(s, d) for s, d in zip(shape, f)):
            continue
        surface = sum(int(np.prod(shape)) // s * (d - 1) for s, d in zip(shape, f) if d > 1)
        key = (surface, sum(d > 1 for d in f), tuple(-d for d in f))
        if best is None or key < best[0]:
            best = (key, f)
    if best is None:
        raise ShapeError(f"a grid of shape {shape} cannot be split over {n_devices} devices "
                         f"(each split axis must divide evenly, into at least {MIN_BLOCK_POINTS} points per device); "
                         "device counts that work: "
                         f"{working_counts(shape)}")
    return best[1]


def mesh_for(grid: Any, devices: Sequence[Any] | None = None, *, shape: Sequence[int] | None = None) -> Mesh:
    """A device mesh for ``grid``: one axis per grid axis (``x``, ``y``, ``z``).

    Parameters
    ----------
    grid : Grid
        The grid to decompose.
    devices : sequence of jax.Device, optional
        Default all global devices (every process's, under `jax.distributed`).
    shape : sequence of int, optional
        The number of devices along each grid axis (e.g. ``(4, 1)`` for slabs, ``(2, 2)``
        for pencils); default: `mesh_shape_for`, the smallest halo surface.

    Returns
    -------
    jax.sharding.Mesh
        Axes ``("x",)``, ``("x", "y")`` or ``("x", "y", "z")`` (``Auto`` axis types), size 1
        where an axis is not split.

    Raises
    ------
    ShapeError
        A `shape` with the wrong number of axes, or a decomposition that does not split the
        grid (`check_split`: unevenly, or under 2 points per device; the message names the
        grid, the device count and the device counts that work).
    InputError
        A `shape` whose product is not the number of devices.

    Examples
    --------
    >>> import jax
    >>> from simkit.parallel import mesh_for
    >>> from simkit.stencil import Grid
    >>> mesh = mesh_for(Grid((8, 8)), jax.devices()[:1])
    >>> mesh.axis_names, dict(mesh.shape)
    (('x', 'y'), {'x': 1, 'y': 1})
    """
    devices = list(jax.devices() if devices is None else devices)
    ndim = grid.ndim
    if shape is None:
        shape = mesh_shape_for(grid.shape, len(devices))
    shape = tuple(int(s) for s in shape)
    if len(shape) != ndim:
        raise ShapeError(f"mesh shape {shape} has {len(shape)} axes for a {ndim}-D grid")
    if int(np.prod(shape)) != len(devices):
        raise InputError(f"mesh shape {shape} needs {int(np.prod(shape))} devices, {len(devices)} given")
    check_split(grid.shape, shape)
    return Mesh(np.asarray(devices).reshape(shape), GRID_AXES[:ndim], axis_types=(AxisType.Auto,) * ndim)


def member_mesh(devices: Sequence[Any]) -> Mesh:
    """A 1-D mesh over ``devices`` along the ensemble member axis.

    Parameters
    ----------
    devices : sequence of jax.Device
        The devices, in order.

    Returns
    -------
    jax.sharding.Mesh
        One axis, ``"members"``.

    Examples
    --------
    >>> import jax
    >>> from simkit.parallel import member_mesh
    >>> member_mesh(jax.devices()[:1]).axis_names
    ('members',)
    """
    return Mesh(np.asarray(list(devices)), (MEMBER_AXIS,), axis_types=(AxisType.Auto,))


def field_spec(ndim: int, leading: int = 1) -> PartitionSpec:
    """Partition of a field with ``leading`` unsplit axes (components) before the grid axes.

    Parameters
    ----------
    ndim : int
        Number of grid axes.
    leading : int
        Unsplit axes before them (default 1: the components).

    Returns
    -------
    jax.sharding.PartitionSpec
        ``None`` for each leading axis, then ``"x"``, ``"y"``, ``"z"``: for `place` and
        ``shard_map`` on a `mesh_for` mesh.

    Examples
    --------
    >>> from simkit.parallel import field_spec
    >>> tuple(field_spec(2)), tuple(field_spec(1, leading=2))
    ((None, 'x', 'y'), (None, None, 'x'))
    """
    return PartitionSpec(*([None] * leading), *GRID_AXES[:ndim])


def place(array: Any, mesh: Mesh, spec: PartitionSpec) -> jax.Array:
    """Place a host array (the same full array on every process) on ``mesh`` by ``spec``;
    works across processes (each process fills its own devices' blocks).

    Parameters
    ----------
    array : array_like
        The whole array, on every process.
    mesh : jax.sharding.Mesh
        The device mesh.
    spec : jax.sharding.PartitionSpec
        How its axes split over the mesh axes (e.g. `field_spec`).

    Returns
    -------
    jax.Array
        Sharded by ``NamedSharding(mesh, spec)``.

    Raises
    ------
    ValueError
        An axis that does not split evenly (JAX's error).

    Examples
    --------
    >>> import jax, numpy as np
    >>> from simkit.parallel import field_spec, gather, mesh_for, place
    >>> from simkit.stencil import Grid
    >>> mesh = mesh_for(Grid(8), jax.devices()[:2])  # two devices where there are two
    >>> u = place(np.arange(8.0)[None], mesh, field_spec(1))
    >>> tuple(u.sharding.spec), gather(u).shape
    ((None, 'x'), (1, 8))
    """
    array = np.asarray(array)
    sharding = NamedSharding(mesh, spec)
    return jax.make_array_from_callback(array.shape, sharding, lambda index: array[index])


def gather(array: Any) -> np.ndarray:
    """A (possibly multi-process) array as one host NumPy array. Under `jax.distributed`
    this is a collective: every process must call it, and every process gets the whole
    array (save it from process 0: ``if jax.process_index() == 0``).

    Parameters
    ----------
    array : array_like
        A JAX array (sharded or not, on any processes' devices) or any array.

    Returns
    -------
    numpy.ndarray
        The whole array on the host.

    Examples
    --------
    >>> import jax, numpy as np
    >>> from simkit.parallel import field_spec, gather, mesh_for, place
    >>> from simkit.stencil import Grid
    >>> mesh = mesh_for(Grid(8), jax.devices()[:2])
    >>> gather(place(np.arange(8.0)[None], mesh, field_spec(1))).tolist()
    [[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]
    """
    if isinstance(array, jax.Array) and not array.is_fully_addressable:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(array, tiled=True))
    return np.asarray(array)


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, *, local_device_count: int | None = None,
               bind_loopback: bool = False, initialization_timeout: int = 60,
               heartbeat_timeout_seconds: int = 30) -> None:
    """Start JAX's multi-process runtime (`jax.distributed.initialize`); call it first,
    before any other JAX call.

    Every process runs the same script; afterwards `mesh_for` and `simkit.ensemble` see
    every process's devices, and results are gathered to every process.

    Parameters
    ----------
    coordinator_address : str, optional
        ``"host:port"`` of process 0. Leave this and the next two ``None`` on clusters JAX
        detects (SLURM, Open MPI, Kubernetes, Cloud TPU).
    num_processes : int, optional
        The number of processes (as JAX's).
    process_id : int, optional
        This process's index, ``0 .. num_processes - 1`` (as JAX's).
    local_device_count : int, optional
        CPU devices per process (CPU runs; ignored on GPUs).
    bind_loopback : bool
        Bind the coordinator to 127.0.0.1 only (tests and single-machine runs; JAX's default
        binds every interface).
    initialization_timeout : int
        Seconds to wait for every process to join (default 60).
    heartbeat_timeout_seconds : int
        Seconds without a heartbeat after which a peer counts as dead (default 30). A peer
        that never starts, or dies, ends every process (JAX aborts them) after these.

    Raises
    ------
    InputError
        ``bind_loopback=True`` without a `coordinator_address`.
    RuntimeError
        From JAX: called twice, or after JAX started.

    Examples
    --------
    Two processes on one machine (run once per process, with ``rank`` 0 and 1):

    >>> from simkit import parallel
    >>> parallel.initialize("127.0.0.1:12345", num_processes=2, process_id=rank,
    ...                     local_device_count=2, bind_loopback=True)  # doctest: +SKIP
    """
    if local_device_count is not None:
        jax.config.update("jax_num_cpu_devices", int(local_device_count))
    kwargs: dict[str, Any] = dict(initialization_timeout=initialization_timeout,
                                  heartbeat_timeout_seconds=heartbeat_timeout_seconds)
    if bind_loopback:
        if coordinator_address is None:
            raise InputError("initialize(bind_loopback=True) needs coordinator_address='127.0.0.1:PORT'")
        port = coordinator_address.rsplit(":", 1)[1]
        kwargs["coordinator_bind_address"] = f"127.0.0.1:{port}"
    jax.distributed.initialize(coordinator_address=coordinator_address, num_processes=num_processes,
                               process_id=process_id, **kwargs)
