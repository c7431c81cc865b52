"""Derivatives of a kernel solve, in forward and reverse mode, through one custom_jvp.

A reverse-mode ``jax.custom_vjp`` would make ``jax.jvp``/``jax.jacfwd`` fail (JAX cannot
push tangents through a custom_vjp), and the kernels must serve both: fitting with few
parameters wants forward mode, losses with many outputs want ``jax.grad``. So the JVP
rule computes the solve's forward sensitivity — the tangents of all outputs with respect
to the inputs among ``(t0, t1, y0, params)`` that the caller differentiates (the others
arrive as symbolic zeros: ``defjvp(..., symbolic_zeros=True)``), one direction per
scalar of those, pushed through the same ``while_loop`` in one batched pass (the primal
runs once, unbatched) — and returns ``J @ tangent``. That is linear in the tangent with
``J`` a primal value, so JAX transposes it for ``jax.grad``; ``jax.hessian`` (forward
over reverse) works too.

Cost: one loop carrying ``1 + d`` state vectors for ``d`` differentiated scalars (at most
``2 + n + p``; within `forward_tangents` ``(k)``, at most ``1 + k``: see there); memory
O(n (1 + d)), independent of the number of steps (no checkpoints), except for the per-step
records of ``dense`` and ``saveat="steps"``, kept per direction (`_check_derivative_memory`).
Derivatives are those of the discrete scheme along the step sequence taken (step sizes are
held constant), which match the exact sensitivities to the solve's tolerance. The
sensitivity to each save time is ``f(t_k, y_k)``; with ``saveat="steps"`` the saved step
times themselves move with ``t0`` (the last with ``t1``, or an event's time).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from .loop import adaptive_loop, perturbs, zero_tangent
from .methods import differentiated_solve

# the number of tangents a caller pushes through its function in one pass, within
# `forward_tangents` (None: unknown, a derivative that may be transposed)
_FORWARD_TANGENTS: contextvars.ContextVar[int | None] = contextvars.ContextVar("simkit_forward_tangents",
                                                                               default=None)


@contextlib.contextmanager
def forward_tangents(directions: int):
    """Trace, within it, derivatives that are taken in forward mode only, ``directions``
    tangents at a time (a ``jax.vmap`` of ``jax.jvp`` over that many, as a Jacobian by
    columns).

    A solve whose differentiated inputs hold more scalars than ``directions`` then pushes
    the caller's tangents themselves through its loop (``directions`` of them under the
    caller's ``vmap``) instead of one direction per input scalar: a PEtab condition whose
    17 model parameters and 7 initial states all move with 13 estimated parameters carries
    13 sensitivities, not 24. Such a derivative is not linear in a primal value, so it cannot
    be transposed: no ``jax.grad``/``jax.vjp``/``jax.linearize`` of a solve within.

    A solve reads it when it is called (`simkit.solve`'s preparation, `declared_tangents`)
    and keeps it in its static program (`KernelLoopProgram.forward_tangents`), so a
    compiled or cached derivative of one kind is never reused for the other."""
    from ..errors import InputError

    if isinstance(directions, bool) or not isinstance(directions, (int, np.integer)) or directions < 1:
        raise InputError(f"forward_tangents: directions must be a positive integer, got {directions!r}")
    token = _FORWARD_TANGENTS.set(int(directions))
    try:
        yield
    finally:
        _FORWARD_TANGENTS.reset(token)


def declared_tangents() -> int | None:
    """The ``directions`` of the innermost `forward_tangents` being traced, else None."""
    return _FORWARD_TANGENTS.get()


_FLOAT_KEYS = ("ys", "t_final", "y_final", "event_time", "event_ts", "event_ys")


@dataclasses.dataclass(frozen=True)
class KernelLoopProgram:
    """Static structure of the fused loop of a kernel solve."""

    solver: Any
    rhs: Any
    events: tuple
    max_steps: int
    save_steps: bool
    dense: bool = False
    forward_tangents: int | None = None  # `forward_tangents`' directions where the solve was called


def _raw(program: KernelLoopProgram, t0, t1, y0, params, save_ts, rtol, atol, dt0, max_step):
    # within a forward-only derivative the loop's values come from its derivative's loop
    # (`_kernel_solve_jvp`): this one is traced (JAX stages a custom_jvp's primal) and rarely
    # run, so it takes the derivative's form, quicker to trace
    form = differentiated_solve() if program.forward_tangents is not None else contextlib.nullcontext()
    with form:
        return adaptive_loop(
            program.solver.method(), program.rhs, t0, t1, y0, params, save_ts, rtol, atol, dt0, max_step,
            max_steps=program.max_steps, events=program.events, save_steps=program.save_steps,
            dense_output=program.dense,
        )


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def kernel_solve(program: KernelLoopProgram, t0, t1, y0, params, save_ts, rtol, atol, dt0, max_step):
    """Run a fused kernel; differentiable in t0, t1, y0, params and the save times."""
    return _raw(program, t0, t1, y0, params, save_ts, rtol, atol, dt0, max_step)


def _as_real(x):
    """A complex array as its real and imaginary parts (a leading axis of 2); others as they are."""
    return jnp.stack([jnp.real(x), jnp.imag(x)]) if jnp.iscomplexobj(x) else x


def _from_real(v, like):
    """`_as_real`'s inverse, to the dtype of ``like``."""
    return (v[0] + 1j * v[1]).astype(jnp.result_type(like)) if jnp.iscomplexobj(like) else v


def _check_derivative_memory(program: KernelLoopProgram, jac: Any) -> None:
    """Refuse, before compiling, derivatives whose per-step records would not fit in memory.

    With ``dense=True`` or ``saveat="steps"`` a solve keeps a row per step up to
    ``max_steps``, and its derivative keeps those rows once per direction (``jac``: the
    traced outputs' tangents, a leading axis of directions): a 70-state BDF solve with
    ``jax.grad`` over 70 parameters needed 41 GiB of buffers and was killed by the
    operating system without a message."""
    from .._prepare import memory_budget, over_budget  # (simkit._prepare imports the kernels)
    from ..errors import InputError

    leaves = jax.tree_util.tree_leaves(jac)
    directions = leaves[0].shape[0]
    rows = sum(np.prod(a.shape[1:]) * np.dtype(a.dtype).itemsize for a in leaves)  # one direction's
    need = (1 + 2 * directions) * rows  # the records and their tangents; XLA double-buffers the loop carry
    if over_budget(need):
        what = "dense=True" if program.dense else 'saveat="steps"'
        raise InputError(
            f"the derivative of a solve with {what} keeps every step's record per direction: {directions} "
            f"directions x {program.max_steps} steps need {need / 2**30:.3g} GiB, above the memory budget of "
            f"{memory_budget() / 2**30:.3g} GiB (SIMKIT_MEMORY_BUDGET): lower max_steps, save at given times, "
            "or differentiate fewer inputs")


def _kernel_solve_jvp(program, primals, tangents):
    t0, t1, y0, params, save_ts, rtol, atol, dt0, max_step = primals
    leaves, treedef = jax.tree_util.tree_flatten((t0, t1, y0, params))
    dleaves = treedef.flatten_up_to(tangents[:4])
    active = [i for i, d in enumerate(dleaves) if perturbs(d)]
    dts_t = tangents[4]
    # only the directions the caller perturbs: a fit of 2 rates on a 24-state model pushes
    # 2 directions through the loop, not 2 + 24 + 2 (inputs not differentiated arrive as
    # symbolic zeros)
    # a complex input (y0) is two real ones: its real and imaginary parts, each a direction
    x, unravel_real = ravel_pytree([_as_real(leaves[i]) for i in active])
    dx, _ = ravel_pytree([_as_real(dleaves[i]) for i in active])

    def unravel(xx):
        return [_from_real(v, leaves[i]) for i, v in zip(active, unravel_real(xx))]

    # the saved step times move with t0 (and the last with t1, or with an event's time):
    # differentiated through the loop like the states
    keys = _FLOAT_KEYS + (("ts",) if program.save_steps else ())

    # y0 not perturbed: its tangent, zero at the start, is not after one step. Given one (of
    # zeros) from the start, the loop's derivative is traced once instead of twice: JAX finds
    # which of a loop's carries have tangents by re-tracing its body until the set settles
    y0_index = len(jax.tree_util.tree_leaves((t0, t1)))
    seed_y0 = y0_index not in active and x.shape[0] > 0

    def floats(xx):
        full = list(leaves)
        for i, v in zip(active, unravel(xx)):
            full[i] = v
        if seed_y0:
            full[y0_index] = full[y0_index] + (0 * xx[0]).astype(jnp.result_type(full[y0_index]))
        tt0, tt1, yy0, pp = jax.tree_util.tree_unflatten(treedef, full)
        out = _raw(program, tt0, tt1, yy0, pp, save_ts, rtol, atol, dt0, max_step)
        return {k: out[k] for k in keys + (("dense",) if program.dense else ())}, out

    forward = program.forward_tangents

    def along(j):  # a tangent from the sensitivities to each input scalar (a leading axis)
        return jnp.tensordot(dx, j, axes=(0, 0))

    if x.shape[0] == 0:  # nothing perturbed but (perhaps) the save times
        values, out = floats(x)
        jac = jax.tree_util.tree_map(lambda v: jnp.zeros((0,) + v.shape, v.dtype), values)
    elif forward is not None and forward < x.shape[0]:  # the caller's own tangent (forward_tangents)
        with differentiated_solve():
            _, jac, out = jax.jvp(floats, (x,), (dx,), has_aux=True)
        if program.dense or program.save_steps:
            _check_derivative_memory(program, jax.tree_util.tree_map(
                lambda v: jax.ShapeDtypeStruct((forward,) + v.shape, v.dtype), jac))

        def along(j):  # already the tangent
            return j
    else:
        basis = jnp.eye(x.shape[0], dtype=x.dtype)
        with differentiated_solve():
            _, jac, out = jax.vmap(
                lambda v: jax.jvp(floats, (x,), (v,), has_aux=True), out_axes=(None, 0, None)
            )(basis)
        if program.dense or program.save_steps:  # traced, not run: the check comes before compiling
            _check_derivative_memory(program, jac)
    tangent = {k: along(jac[k]) for k in keys}
    if program.dense:  # the recorded steps move with the inputs too (their sizes do not)
        # (a record that is not a float, AutoSwitch's phase flags: its tangent is float0, and
        # a tensordot of it stopped every derivative of a dense AutoSwitch solve; found by probing)
        tangent["dense"] = jax.tree_util.tree_map(
            lambda j, v: along(j) if jnp.issubdtype(v.dtype, jnp.inexact) else zero_tangent(v),
            jac["dense"], out["dense"])
    if not program.save_steps and perturbs(dts_t):
        # moving a save time moves the saved state along the solution: dy/dt_k = f(t_k, y_k)
        reached = jnp.isfinite(out["ts"])
        f_at = jax.vmap(lambda t, y: program.rhs(t, y, params))(
            jnp.where(reached, out["ts"], t0), out["ys"]
        )
        tangent["ys"] = tangent["ys"] + jnp.where(reached[:, None], f_at * dts_t[:, None], 0.0)
        tangent["ts"] = jnp.where(reached, dts_t, 0.0)
    elif not program.save_steps:
        tangent["ts"] = jnp.zeros_like(out["ts"])
    tangents_out = {
        "status": zero_tangent(out["status"]),
        "event_index": zero_tangent(out["event_index"]),
        "event_counts": zero_tangent(out["event_counts"]),
        "stats": jax.tree_util.tree_map(zero_tangent, out["stats"]),
        **tangent,
    }
    return out, tangents_out


kernel_solve.defjvp(_kernel_solve_jvp, symbolic_zeros=True)
