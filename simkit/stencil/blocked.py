"""Row blocks: the time loop of a large periodic 2-D float32 field on a TPU, several steps per
pass over memory (a Pallas kernel).

Once a field no longer fits on chip (a 8192^2 float32 field is 256 MiB; a TPU v5e keeps up to
about 16 MiB between steps), XLA's loop writes each shifted copy of the field to memory before
the update reads it back: the 8192^2 heat step took 5.6 ms, 16 % of an elementwise pass over
the same field. Here each program instance of one kernel reads a block of ``bm`` rows and the
``HALO`` rows above and below it (periodic), takes ``k`` steps of the model's own stepper and
right-hand side on that extended block in on-chip memory, and writes the block's ``bm`` rows:
one read and one write of the field per ``k`` steps. After ``k`` steps the rows that used the
block's own wrap-around instead of its neighbours' lie within ``k * reach`` rows of its ends,
where ``reach`` is how many rows one step of the model reads on either side, so ``k`` is at
most ``HALO // reach`` and the ``bm`` rows written are exact.

A rollout takes this path when all hold (`plan`), and otherwise XLA's loop, unchanged:

- row blocks are on (`simkit.configure` ``row_blocks``, ``SIMKIT_ROW_BLOCKS``; the default);
- the default device is a TPU (or ``MODE = "always"``: any platform, the kernel interpreted
  off the TPU; the tests use it), and the program is lowered for a TPU
  (``jax.lax.platform_dependent``: a TPU program of a process whose default device is a CPU
  keeps XLA's loop);
- one device (no mesh), a 2-D grid, the model's boundary conditions one `Periodic`, the field
  float32 of shape ``(components, rows, columns)`` with ``rows`` a multiple of 8, ``columns``
  of 128, and at least `MIN_BYTES`;
- a fixed ``dt``, a stepper `ForwardEuler`, `SSPRK3` or `RK4`, every parameter a scalar;
- the right-hand side reads neither ``space.coordinates()`` nor the grid-wide ``sum``,
  ``max`` or ``integral`` (a block is not the whole grid), and one step of it reaches at
  most ``HALO`` rows: the larger of what the step's derivative with respect to one row of an
  extended block shows, measured on the host (an ``rhs`` with its own ``jnp.roll`` counts),
  and the sum of the ghost widths its pads ask for (a stencil chosen by the data shows one
  choice in a derivative). An ``rhs`` that builds arrays from ``space.grid``'s shape sees the
  block's shape there: ``simkit.configure(row_blocks=False)`` for it;
- 8 rows of the field (all components) fit 4 ``BLOCK_BYTES`` (on-chip memory).

Derivatives (``jax.jvp``, ``jax.grad``) take XLA's loop: the kernel has a custom JVP rule that
differentiates the same steps written in plain JAX. Under ``jax.vmap`` the members run one after
another through the kernel (`jax.lax.map`; Mosaic has no batched scalar memory blocks for
per-member parameters).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

MODE = "tpu"
"""``"tpu"``: row blocks when the default device is a TPU (and `simkit.configure`'s
``row_blocks`` is on); ``"always"``: on any platform (the kernel interpreted off the TPU: for
tests); ``"never"``: XLA's loop everywhere."""

HALO = 8
"""Rows read above and below a block (one sublane tile of float32)."""

MIN_BYTES = 32 * 2**20
"""Smallest field (bytes, all components) that takes row blocks: below it XLA's loop keeps the
field on chip and is as fast or faster (a 2048^2 float32 heat step: XLA 0.053 ms, row blocks
of 4 steps 0.062 ms per step, `benchmarks/results/accelerator_stencil_pallas_variants.json`;
4096^2 (64 MiB): XLA 1.09 ms, row blocks 0.16 ms, `accelerator_stencil_f32.json`)."""

BLOCK_BYTES = 4 * 2**20
"""Target size of one block of ``bm`` rows (all components), bytes."""

STEPPERS = ("ForwardEuler", "SSPRK3", "RK4")


def default_platform() -> str:
    """The platform of JAX's default device (``"cpu"``, ``"gpu"``, ``"tpu"``)."""
    return jax.default_backend()


class _BlockOnly(Exception):
    """The rhs read something a block does not have (raised while probing, never seen by a user)."""


@dataclasses.dataclass(frozen=True)
class Plan:
    """How a rollout's steps run in row blocks: ``bm`` rows per block, ``k`` steps per pass."""

    bm: int
    k: int
    reach: int
    interpret: bool


def _block_space(grid: Any, bcs: Any, widths: list | None = None) -> Any:
    """A `Space` for an extended block: its pad wraps the block's rows (the rows that this
    makes wrong are dropped), the whole width is the grid's own. ``widths``: a list that
    each pad's ghost width is appended to."""
    from .boundary import pad
    from .pde import Space

    def fill(field, bcs, width, spacing, *, ndim=None):
        if widths is not None:
            widths.append(width)
        return pad(field, bcs, width, spacing, ndim=ndim)

    class BlockSpace(Space):
        def coordinates(self):
            raise _BlockOnly("coordinates")

        def sum(self, field):
            raise _BlockOnly("sum")

        def max(self, field):
            raise _BlockOnly("max")

        def integral(self, field):
            raise _BlockOnly("integral")

    return BlockSpace(grid, bcs, fill=fill)


def _stepper_fn(program: Any, space: Any) -> Callable:
    """One step ``(t, v, params, dt) -> v`` of the program on the extended block's space."""
    from .stepping import plain_buffers, program_step

    one = program_step(program, space)

    def step(t, v, params, dt):
        with plain_buffers():
            return one(t, v, params, dt)
    return step


def _reach(program: Any, params: dict, grid: Any, bcs: Any, components: int) -> int | None:
    """Rows one step reads on either side, measured on the host: the larger of the rows where
    the step's derivative with respect to the middle row of a random extended block is not
    zero (an ``rhs`` with its own ``jnp.roll``) and the sum of the ghost widths its pads ask
    for (a stencil chosen by the data, whose derivative at one point shows one choice).
    None: the rhs needs the whole grid, or its derivative is not finite."""
    rows = 4 * HALO + 8
    widths: list = []
    space = _block_space(grid.block((rows, grid.shape[1])), bcs, widths)
    step = _stepper_fn(program, space)
    rng = np.random.default_rng(7)
    cpu = jax.devices("cpu")[0]
    with jax.ensure_compile_time_eval(), jax.default_device(cpu):
        v = jnp.asarray(1.0 + 0.1 * rng.random((components, rows, grid.shape[1])), jnp.float32)
        e = jnp.zeros_like(v).at[:, rows // 2, :].set(1.0)
        probe = {k: jnp.asarray(1.0 + 0.1 * rng.random(), jnp.float32) for k in params}
        derivative = jax.jit(lambda v, dt: jax.jvp(lambda w: step(jnp.float32(0.0), w, probe, dt), (v,), (e,))[1])
        # a step small enough that the stages stay finite whatever the grid spacing (a
        # 8192^2 Laplacian is 1e7 per time unit), large enough that no term underflows
        for dt in (1e-3, 1e-6, 1e-9, 1e-12):
            try:
                tangent = np.asarray(derivative(v, jnp.float32(dt)))
            except _BlockOnly:
                return None
            if np.all(np.isfinite(tangent)):
                break
        else:
            return None
    touched = np.nonzero(np.any(tangent != 0, axis=(0, 2)))[0]
    measured = int(np.max(np.abs(touched - rows // 2))) if touched.size else 0
    return max(measured, sum(widths))


def plan(program: Any, space: Any, u0: Any, params: Any) -> Plan | None:
    """The row-block plan of a rollout, or None for XLA's loop (see the module's list)."""
    from .boundary import Periodic

    if MODE == "never" or (MODE == "tpu" and (default_platform() != "tpu" or not program.row_blocks)):
        return None
    grid = program.grid
    if (program.dt_rule is not None or space.domain is not None or grid.ndim != 2 or u0.ndim != 3 or u0.dtype != jnp.float32
            or not isinstance(space.bcs, Periodic)
            or type(program.stepper).__name__ not in STEPPERS):
        return None
    components, rows, columns = u0.shape
    if rows % 8 or columns % 128 or (MODE == "tpu" and u0.size * 4 < MIN_BYTES):
        return None
    leaves = jax.tree_util.tree_leaves(params)
    if not isinstance(params, dict) or any(jnp.shape(a) != () for a in leaves):
        return None
    reach = _reach(program, params, grid, space.bcs, components)
    if reach is None or reach > HALO:
        return None
    k_max = HALO // max(reach, 1)
    k = min(k_max, program.save_every)  # and a last, shorter pass where k does not divide save_every
    per_row = components * columns * 4
    if 8 * per_row > 4 * BLOCK_BYTES:  # the smallest block would not fit on chip with its buffers
        return None
    bm = 8
    while rows % (2 * bm) == 0 and 2 * bm * per_row <= BLOCK_BYTES:
        bm *= 2
    return Plan(bm=bm, k=k, reach=reach, interpret=default_platform() != "tpu")


def _kernel_call(plan: Plan, program: Any, bcs: Any, names: tuple[str, ...], shape: tuple[int, ...]) -> Callable:
    """``(u, times, scalars) -> u`` after ``len(times)`` steps at those times: one
    ``pallas_call`` over the row blocks; ``scalars`` holds the parameters in the order of
    ``names``, then ``dt`` (float32, in scalar memory)."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    components, rows, columns = shape
    bm, H = plan.bm, HALO
    E = bm + 2 * H
    step = _stepper_fn(program, _block_space(program.grid.block((E, columns)), bcs))
    blocks, halo_blocks = rows // bm, rows // H
    per_block = bm // H

    @jax.custom_batching.custom_vmap
    def call(u, times, scalars):
        steps = times.shape[0]

        def kernel(t_ref, s_ref, up_ref, mid_ref, dn_ref, o_ref, ext_ref):
            ext_ref[0, :, 0:H, :] = up_ref[...]
            ext_ref[0, :, H:H + bm, :] = mid_ref[...]
            ext_ref[0, :, H + bm:E, :] = dn_ref[...]
            params = {name: s_ref[i] for i, name in enumerate(names)}
            dt = s_ref[len(names)]

            def body(j, carry):  # int32 throughout: Mosaic has no mixed-width integer arithmetic (JAX's float64 on)
                src = jax.lax.rem(j, jnp.int32(2))
                ext_ref[jnp.int32(1) - src] = step(t_ref[j], ext_ref[src], params, dt)
                return carry
            jax.lax.fori_loop(jnp.int32(0), jnp.int32(steps), body, jnp.int32(0))
            o_ref[...] = ext_ref[steps % 2, :, H:H + bm, :]

        # block indices in int32 (Python's 0 would be int64 with JAX's float64 on: Mosaic
        # refuses an index map that returns int64)
        def whole(n):  # a vector in scalar memory
            return pl.BlockSpec((n,), lambda i: (jnp.int32(0),), memory_space=pltpu.SMEM)

        def rows_at(height, index):
            return pl.BlockSpec((components, height, columns), lambda i: (jnp.int32(0), index(i), jnp.int32(0)))

        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct(shape, u.dtype), grid=(blocks,),
            in_specs=[whole(steps), whole(scalars.shape[0]),
                      rows_at(H, lambda i: (i * per_block - 1 + halo_blocks) % jnp.int32(halo_blocks)),
                      rows_at(bm, lambda i: i),
                      rows_at(H, lambda i: ((i + 1) * per_block) % jnp.int32(halo_blocks))],
            out_specs=rows_at(bm, lambda i: i),
            scratch_shapes=[pltpu.VMEM((2, components, E, columns), jnp.float32)],
            compiler_params=pltpu.CompilerParams(vmem_limit_bytes=100 * 2**20, dimension_semantics=("parallel",)),
            interpret=plan.interpret)(times, scalars, u, u, u)

    @call.def_vmap
    def call_batched(axis_size, in_batched, u, times, scalars):
        # one member after another (each a whole field): Mosaic has no batched scalar memory
        # blocks, which a batched pallas_call over per-member parameters would need
        args = tuple(a if batched else jnp.broadcast_to(a, (axis_size,) + a.shape)
                     for a, batched in zip((u, times, scalars), in_batched))
        return jax.lax.map(lambda member: call(*member), args), True

    return call


def advance(plan: Plan, program: Any, bcs: Any, generic: Callable, u: Any, c: Any, params: dict, t0: Any,
            dt: Any, n: int) -> tuple[Any, Any]:
    """``n`` steps from field ``u`` at step count ``c`` (time ``t0 + c dt``) in row blocks,
    ``plan.k`` steps a pass: ``(u, c + n)``. Its derivative (a custom JVP) is that of
    ``generic(u, c, params, t0, dt) -> (u, c + n)``, the same steps in XLA's loop."""
    names = tuple(sorted(params))
    passes, rest = divmod(n, plan.k)
    call = _kernel_call(plan, program, bcs, names, u.shape)  # a pass's steps: its number of times

    def blocked(u, c, params, t0, dt):
        scalars = jnp.stack([jnp.asarray(params[name], jnp.float32) for name in names]
                            + [jnp.asarray(dt, jnp.float32)])

        def one_pass(k, u, c):
            times = jnp.stack([jnp.asarray(t0 + (c + j) * dt, jnp.float32) for j in range(k)])
            return call(u, times, scalars), c + k

        u, c = jax.lax.fori_loop(0, passes, lambda _, s: one_pass(plan.k, *s), (u, c))
        return one_pass(rest, u, c) if rest else (u, c)

    run = jax.custom_jvp(blocked)
    run.defjvp(lambda primals, tangents: jax.jvp(generic, primals, tangents))
    return run(u, c, params, t0, dt)


__all__ = ["MODE", "HALO", "MIN_BYTES", "BLOCK_BYTES", "Plan", "plan", "advance"]
