"""`solve_to_file`: a long ODE solve streamed to NetCDF/zarr in chunks of save times, resumable."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from . import _config, checkpoint, io, progress
from ._prepare import DEFAULT_RTOL, check_flag, prepare
from ._solve import _failure_message, finish
from .engines import EngineResult, KernelProgram
from .engines.kernel_engine import kernel_state0, run_kernel_piece
from .errors import InputError, SolveError
from .kernels.loop import RUNNING
from .model import ODEModel, Params
from .save_times import program_save_times
from .status import Status


@_config.simkit_call()
def solve_to_file(
    path: str | os.PathLike,
    model: ODEModel,
    t_span: Sequence[float] | None = None,
    *,
    saveat: Any = None,
    chunk: int = 10_000,
    resume: bool = True,
    y0: Any = None,
    params: Params | None = None,
    solver: Any = None,
    rtol: float = DEFAULT_RTOL,
    atol: float | jax.typing.ArrayLike = 1e-9,
    max_steps: int = 100_000,
    max_step: float | None = None,
    dt0: float | None = None,
    throw: bool = True,
    progress_bar: bool | None = None,
) -> str:
    """`simkit.solve`, writing the saved states to a file as they are computed; resumable.

    The save times are taken ``chunk`` at a time; the adaptive loop runs until it has passed
    the chunk's last save time and stops there *without* shortening a step, keeping its whole
    state (step size, controller, last step's dense output), so the chunks together take
    exactly the steps of one `simkit.solve` call. Each chunk's states are appended to
    ``path`` and dropped (memory bounded by a chunk, not the run), and the loop state is
    written to ``<path>.restart.npz``; a killed run called again with the same arguments
    continues from there to a file bit for bit that of an uninterrupted run.

    Parameters
    ----------
    path : str or os.PathLike
        The output: ``.nc`` (NetCDF-4, ``t`` unlimited) or ``.zarr`` (needs zarr), holding
        what ``Solution.to_xarray()`` holds (one variable per state along ``t``, CF
        attributes, provenance; ``stats`` and ``status`` of the whole run) plus
        ``checkpoint_complete`` and ``checkpoint_fingerprint``.
    model : ODEModel
        The model (solved by one of simkit's kernels: up to 64 states, or ``solver`` a kernel).
    t_span, y0, params, saveat, solver, rtol, atol, max_steps, max_step, dt0
        As for `simkit.solve`; ``saveat`` gives save times (a count or an array; not
        ``"steps"``), ``max_steps`` counts the steps of the whole run.
    chunk : int
        Save times per chunk.
    resume : bool
        Continue a killed run from its restart state (default); when there is none, start
        afresh, replacing an unfinished run's file at ``path`` (any other file there is
        refused, not overwritten: a finished run's file of other arguments too); with
        ``False``, start afresh, replacing any file at ``path``. A finished run with the
        same arguments is not recomputed (one that failed raises `SolveError` again: rerun it,
        e.g. with a larger ``max_steps``, with ``resume=False``).
    throw : bool
        Raise `SolveError` when the solve fails, after the states reached were written (the
        file's ``status`` attribute says what happened).
    progress_bar : bool, optional
        A progress bar over chunks (default: `simkit.progress`'s rule).

    Returns
    -------
    str
        ``path``; read it with ``simkit.load(path)`` or, lazily, ``simkit.load(path, lazy=True)``.

    Raises
    ------
    InputError
        Bad arguments (as `simkit.solve`, before compiling); events, dense output, save at
        steps, a stochastic model or a diffrax solver (not resumable here); a non-positive
        ``chunk``; the restart state of a different run at ``path``, or a finished run of
        other arguments there; a ``path`` in a missing folder, or a folder; a state name
        holding ``/`` (files cannot hold it).
    SolveError
        The solve failed (``throw=True``).

    Examples
    --------
    >>> import simkit
    >>> lorenz = simkit.models.get("lorenz")
    >>> simkit.solve_to_file("lorenz.nc", lorenz, (0.0, 10.0), saveat=1001, chunk=250)
    'lorenz.nc'
    >>> simkit.load("lorenz.nc")["x"].shape
    (1001,)
    """
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise InputError(f"chunk must be a positive whole number of save times, got {chunk!r}")
    if getattr(model, "diffusion", None) is not None:
        raise InputError(f"solve_to_file: model {getattr(model, 'name', '?')!r} is stochastic; "
                         "streamed solves run simkit's ODE kernels (use simkit.solve)")
    check_flag("resume", resume)
    check_flag("throw", throw)
    plan = prepare(model, t_span, y0=y0, params=params, saveat=saveat, solver=solver, rtol=rtol, atol=atol,
                   max_steps=max_steps, max_step=max_step, dt0=dt0, events=None, dense=False, key=None)
    program, args = plan.program, plan.args
    io.check_variable_names(plan.model.state_names, path)  # before compiling (FrameFile checks every name)
    if not isinstance(program, KernelProgram):
        raise InputError(f"solve_to_file runs simkit's fused kernels; this call would use diffrax "
                         f"({plan.solver_name}, {args.y0.shape[0]} states): pass solver=simkit.Tsit5(), "
                         "simkit.Rodas5P(), ... (up to a few hundred states), or use simkit.solve")
    if program.save == "steps":
        raise InputError("solve_to_file needs save times (saveat: a count or an array), not 'steps'")
    if plan.saveat.dense:  # (it was accepted and ignored)
        raise InputError("solve_to_file writes the states at the save times; dense output (SaveAt(dense=True)) "
                         "is not written: use simkit.solve(..., dense=True), or more save times")
    save_ts = np.asarray(program_save_times(program.save, program.n_save, args.t0, args.t1, args.save_ts))
    n_save, chunk = save_ts.shape[0], min(int(chunk), max(save_ts.shape[0], 1))
    fingerprint = dict(
        kind="solve_to_file", model=plan.model.name, solver=plan.solver_name, chunk=chunk,
        # the first chunk writes the variables and their units: a resumed run renaming a state
        # crashed with a bare KeyError, one with new units left the file's units mixed
        state_names=list(plan.model.state_names), units=io.to_jsonable(plan.model.units),
        rhs=checkpoint.function_digest(program.rhs, args.t0, args.y0, args.params),
        t_span=[float(args.t0), float(args.t1)], y0=checkpoint.digest(args.y0),
        params=checkpoint.params_digest(args.params), save_ts=checkpoint.digest(save_ts),
        rtol=float(args.rtol), atol=np.asarray(args.atol, float).tolist(), max_steps=program.max_steps,
        max_step=float(args.max_step), dt0=float(args.dt0), dtype=str(args.y0.dtype))
    out = checkpoint.FrameFile(path, fingerprint, resume=resume)
    if out.complete:
        out.raise_if_failed(throw)
        return out.path
    piece_args = args._replace(save_ts=np.zeros((0,), save_ts.dtype))  # each piece gets its own times
    template = jax.eval_shape(kernel_state0.default, program, piece_args)  # shapes only: either program
    if out.restart is not None:
        leaves = [out.restart[f"s{i}"] for i in range(len(jax.tree_util.tree_leaves(template)))]
        state = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(template), leaves)
        done = int(out.restart["saves"])
    else:
        state, done = kernel_state0(program, piece_args), 0
    n_chunks = max(-(-n_save // chunk), 1)
    code = int(Status.SUCCESS)
    with progress.bar(n_chunks, f"{plan.model.name} -> {os.fspath(path)}", progress=progress_bar,
                      unit="chunk") as bar:
        bar.update(done // chunk)
        while True:
            final = done + chunk >= n_save
            times = save_ts[done:done + chunk]
            piece = run_kernel_piece(program, piece_args, state, times, final)
            code = int(piece["status"])
            stats = {k: np.asarray(v) for k, v in piece["stats"].items()}
            stats["num_rhs"] = stats["num_rhs"] + 2  # the initial-step estimate, as solve counts it
            failed = code not in (RUNNING, int(Status.SUCCESS))
            result = EngineResult(
                ts=np.asarray(piece["ts"]), ys=np.asarray(piece["ys"]), stats=stats,
                status=np.asarray(int(Status.SUCCESS) if code == RUNNING else code, np.int32),
                t_final=piece["t_final"], y_final=piece["y_final"], event_index=np.asarray(-1, np.int32),
                event_time=np.asarray(np.nan), event_ts=np.zeros((0, 0)), event_ys=np.zeros((0, 0)),
                event_counts=np.zeros((0,), np.int32))
            sol = finish(plan, result, throw=False)
            reached = np.isfinite(np.asarray(sol.ts))
            frames = sol.to_xarray().isel(t=np.flatnonzero(reached))
            done += len(times)
            state = None if final or failed else piece["state"]
            restart = {} if state is None else {
                "saves": done, **{f"s{i}": np.asarray(v) for i, v in enumerate(jax.tree_util.tree_leaves(state))}}
            out.append(frames, restart, complete=final or failed)
            bar.update(1)
            if final or failed:
                break
    if failed and throw:
        raise SolveError(_failure_message(plan.model, sol, args.t0, args.t1, plan.solver, code, max_step=args.max_step)
                         + f" The states saved up to then are in {out.path!r}.")
    return out.path
