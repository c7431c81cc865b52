"""The kernel engine: a `KernelProgram` run by simkit's fused adaptive loop."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ..kernels.autodiff import KernelLoopProgram, kernel_solve
from ..kernels.interpolation import KernelInterpolation
from ..solvers import initial_step
from ..save_times import save_grid
from .programs import KernelProgram
from .record import EngineResult


@functools.partial(jax.jit, static_argnames=("program",))
def run_kernel(program: KernelProgram, args) -> EngineResult:
    """One kernel solve; ``args`` is a `simkit._prepare.SolveArgs`."""
    solver = program.solver
    t0, t1, y0, params = args.t0, args.t1, args.y0, args.params
    auto_dt0 = initial_step(program.rhs, t0, t1, y0, params, args.rtol, args.atol, solver.order())
    dt0 = jnp.where(jnp.isnan(args.dt0), auto_dt0, args.dt0)
    save_ts = save_grid(t0, t1, program.n_save) if program.save == "linspace" else args.save_ts
    loop = KernelLoopProgram(solver=solver, rhs=program.rhs, events=program.events,
                             max_steps=program.max_steps, save_steps=program.save == "steps",
                             dense=program.dense)
    out = kernel_solve(loop, t0, t1, y0, params, save_ts, args.rtol, args.atol, dt0, args.max_step)
    stats = dict(out["stats"])
    stats["num_rhs"] = stats["num_rhs"] + 2  # the initial-step estimate
    return EngineResult(
        ts=out["ts"], ys=out["ys"], stats=stats, status=out["status"], t_final=out["t_final"],
        y_final=out["y_final"], event_index=out["event_index"], event_time=out["event_time"],
        event_ts=out["event_ts"], event_ys=out["event_ys"], event_counts=out["event_counts"],
        interpolation=None if not program.dense else KernelInterpolation(
            t0=t0, t1=out["t_final"], t=out["dense"]["t"], hs=out["dense"]["hs"], kept=out["dense"]["kept"],
            n=out["stats"]["num_accepted_steps"], params=params, rtol=args.rtol, atol=args.atol,
            solver=solver, rhs=program.rhs),
    )
