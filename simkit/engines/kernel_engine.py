"""The kernel engine: a `KernelProgram` run by simkit's fused adaptive loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._codegen import codegen_jit, in_one_kernel_if_fits
from ..kernels.autodiff import KernelLoopProgram, kernel_solve
from ..kernels.interpolation import KernelInterpolation
from ..kernels.linalg import SMALL_SYSTEM, lu_columns_by_select
from ..kernels.loop import adaptive_loop, initial_state
from ..solvers import initial_step
from ..save_times import program_save_times
from .programs import KernelProgram
from .record import EngineResult, nonfinite_saves


def first_step(program: KernelProgram, args):
    """The first step's size: ``args.dt0``, or when it is NaN Hairer's estimate.

    A constant to derivatives: a solve's derivative holds its step sizes fixed
    (`simkit.kernels.autodiff`), so the estimate is made from the inputs' values only, and a
    derivative's program carries no tangents of it (two right-hand sides fewer to trace and
    compile with every direction)."""
    t0, t1, y0, params, rtol, atol = jax.lax.stop_gradient((args.t0, args.t1, args.y0, args.params, args.rtol,
                                                             args.atol))
    auto_dt0 = initial_step(program.rhs, t0, t1, y0, params, rtol, atol, program.solver.starting_order())
    return jnp.where(jnp.isnan(args.dt0), auto_dt0, jax.lax.stop_gradient(args.dt0))


def _solve_arrays(program: KernelProgram, args) -> dict:
    """The arrays of one kernel solve: the loop's output (`kernel_solve`) after the first
    step's estimate and the save times."""
    dt0 = first_step(program, args)
    save_ts = program_save_times(program.save, program.n_save, args.t0, args.t1, args.save_ts)
    loop = KernelLoopProgram(solver=program.solver, rhs=program.rhs, events=program.events,
                             max_steps=program.max_steps, save_steps=program.save == "steps",
                             dense=program.dense, forward_tangents=program.forward_tangents)
    return kernel_solve(loop, args.t0, args.t1, args.y0, args.params, save_ts, args.rtol, args.atol, dt0,
                        args.max_step)


@codegen_jit(static_argnames=("program",))
def run_kernel(program: KernelProgram, args) -> EngineResult:
    """One kernel solve; ``args`` is a `simkit._prepare.SolveArgs`. A small solve runs as one
    XLA:CPU kernel, its setup included (`simkit._codegen.in_one_kernel_if_fits`)."""
    solver = program.solver
    t0, y0, params = args.t0, args.y0, args.params
    # (written by selects, the small stiff systems' straight-line LU and the event records
    # suit one kernel)
    by_select = (solver.method().implicit and y0.shape[-1] <= SMALL_SYSTEM) or bool(program.events)
    if program.forward_tangents is None:
        out = in_one_kernel_if_fits(lambda a: _solve_arrays(program, a), args,
                                    trace_context=lu_columns_by_select if by_select else None)
    else:  # a solve within a forward-only derivative: its values come from the derivative's loop
        out = _solve_arrays(program, args)
    stats = dict(out["stats"])
    stats["num_rhs"] = stats["num_rhs"] + 2  # the initial-step estimate
    return EngineResult(
        ts=out["ts"], ys=out["ys"], stats=stats, status=nonfinite_saves(out["status"], out["ys"]),
        t_final=out["t_final"], y_final=out["y_final"], event_index=out["event_index"], event_time=out["event_time"],
        event_ts=out["event_ts"], event_ys=out["event_ys"], event_counts=out["event_counts"],
        interpolation=None if not program.dense else KernelInterpolation(
            t0=t0, t1=out["t_final"], y0=y0, t=out["dense"]["t"], hs=out["dense"]["hs"], kept=out["dense"]["kept"],
            n=out["stats"]["num_accepted_steps"], params=params, rtol=args.rtol, atol=args.atol,
            solver=solver, rhs=program.rhs),
    )


# -- a solve in pieces (`simkit.solve_to_file`): the loop state carried from piece to piece ------
@codegen_jit(static_argnames=("program",))
def kernel_state0(program: KernelProgram, args) -> dict:
    """The loop state before the first step of the solve ``(program, args)``."""
    return initial_state(program.solver.method(), program.rhs, args.t0, args.t1, args.y0, args.params,
                         args.rtol, args.atol, first_step(program, args), max_steps=program.max_steps)


@codegen_jit(static_argnames=("program", "final"))
def run_kernel_piece(program: KernelProgram, args, state: dict, save_ts, final: bool) -> dict:
    """Continue the solve from ``state`` over the save times ``save_ts`` (and on to ``t1`` if
    ``final``): the loop's output with the next ``state`` (when not ``final``). Pieces run
    one after the other take the steps of one whole solve (no events, no dense output)."""
    return adaptive_loop(program.solver.method(), program.rhs, args.t0, args.t1, args.y0, args.params,
                         save_ts, args.rtol, args.atol, state["h"], args.max_step, max_steps=program.max_steps,
                         state=state, final=final)
