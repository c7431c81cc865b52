"""`integrate_to_file`: a stencil rollout streamed to NetCDF/zarr in chunks, resumable."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any

import jax.numpy as jnp
import numpy as np

from .. import _config, checkpoint, io, progress
from .._prepare import check_flag
from ..errors import InputError, SolveError
from .pde import PDEModel
from .stepping import AbstractStepper, _rollout, failure_message, finish, prepare


@_config.simkit_call()
def integrate_to_file(
    path: str | os.PathLike,
    model: PDEModel,
    *,
    dt: float | Callable,
    steps: int,
    save_every: int | None = None,
    chunk: int = 10,
    resume: bool = True,
    stepper: AbstractStepper | None = None,
    params: Mapping[str, Any] | None = None,
    u0: Any = None,
    t0: float = 0.0,
    diagnostics: Mapping[str, Callable] | None = None,
    check_stability: bool = True,
    throw: bool = True,
    progress_bar: bool | None = None,
    mesh: Any = None,
) -> str:
    """`integrate`, writing the saved frames to a file as they are computed; resumable.

    The run goes ``chunk`` saves at a time (one compiled program, reused for every chunk);
    each chunk's frames are appended to ``path`` and dropped, so memory holds about two
    chunks of frames whatever the length of the run. After each chunk the field and time
    that the next chunk starts from are written to ``<path>.restart.npz``; a run that was
    killed continues from there when called again with the same arguments, and its file
    is then bit for bit the file of an uninterrupted run (`simkit.checkpoint`).

    Parameters
    ----------
    path : str or os.PathLike
        The output: ``.nc`` (NetCDF-4, ``t`` an unlimited dimension) or ``.zarr`` (needs
        zarr). Its contents are those of ``FieldSolution.to_xarray()`` (one variable per
        component, ``(t, x[, y[, z]])``, the diagnostics, CF attributes and provenance), plus
        ``checkpoint_complete`` (1 once the run has finished) and ``checkpoint_fingerprint``.
    model : PDEModel
        The model.
    dt, steps, save_every, stepper, params, u0, t0, diagnostics, check_stability
        As for `simkit.stencil.integrate` (``steps`` a multiple of ``save_every``).
    chunk : int
        Saves per chunk (frames held in memory at once, and the granularity of restarts).
    resume : bool
        Continue a killed run from its restart state (default); when there is none, start
        afresh, replacing an unfinished run's file at ``path`` (any other file there is
        refused, not overwritten: a finished run's file of other arguments too); with
        ``False``, start afresh, replacing any file at ``path``. A finished run with the
        same arguments is not recomputed.
    throw : bool
        Raise `SolveError` once the field has become non-finite (the run stops after that
        chunk; the frames up to it are in the file, whose ``status`` attribute says so).
    progress_bar : bool, optional
        Show a progress bar over chunks (default: `simkit.progress`'s rule).
    mesh : jax.sharding.Mesh, optional
        Run each chunk decomposed over this device mesh (`simkit.parallel.mesh_for`), as
        `simkit.parallel.integrate` does; the frames are gathered to the host chunk by chunk.
        Part of the run's fingerprint (a run resumes on the mesh it started on).

    Returns
    -------
    str
        ``path``. Read it with ``simkit.load(path)`` (into memory) or lazily with
        ``simkit.load(path, lazy=True)``.

    Raises
    ------
    InputError
        Bad arguments (as `integrate`, before compiling); a non-positive ``chunk``; a restart
        state of a different run at ``path`` (the message names what differs).
    SolveError
        The field became non-finite (``throw=True``), after its frames were written.

    Examples
    --------
    >>> import simkit
    >>> heat = simkit.models.get("heat_2d")
    >>> simkit.stencil.integrate_to_file("heat.nc", heat, dt=1e-4, steps=40, save_every=10, chunk=2)
    'heat.nc'
    >>> simkit.load("heat.nc")["u"].shape[0]  # the initial field and 4 saves
    5
    """
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise InputError(f"chunk must be a positive whole number of saves, got {chunk!r}")
    check_flag("resume", resume)
    check_flag("throw", throw)
    program, u_init, params_j, dt_arg = prepare(model, dt=dt, steps=steps, save_every=save_every,
                                                stepper=stepper, params=params, u0=u0, t0=t0,
                                                diagnostics=diagnostics, check_stability=check_stability)
    n_saves, chunk = program.n_saves, min(int(chunk), program.n_saves)
    # what the run's functions compute, not only their names (`checkpoint.function_digest`)
    code, space, time = checkpoint.function_digest, model.space, np.asarray(t0, u_init.dtype)
    fingerprint = dict(
        kind="stencil.integrate_to_file", model=model.name, grid=repr(model.grid), bcs=repr(model.bcs),
        # written with the first frames: a resumed run renaming a component crashed (bare KeyError)
        component_names=list(model.component_names), units=io.to_jsonable(model.units),
        rhs=code(lambda t, u, p: model.rhs(t, u, p, space), time, u_init, params_j),
        linear=None if model.linear is None else code(lambda t, u, p: model.linear(t, u, p, space), time, u_init,
                                                      params_j),
        stepper=repr(program.stepper),
        dt=code(lambda u, p: dt(u, p, space), u_init, params_j) if callable(dt) else float(dt), steps=int(steps),
        save_every=program.save_every, chunk=chunk, t0=float(t0), u0=checkpoint.digest(u_init),
        params=checkpoint.params_digest(params_j),
        diagnostics={name: code(lambda u, fn=fn: fn(u, space), u_init) for name, fn in program.diagnostics},
        dtype=str(u_init.dtype), **({} if mesh is None else {"mesh": list(mesh.devices.shape)}))
    run_chunk = _chunk_runner(model, mesh)
    out = checkpoint.FrameFile(path, fingerprint, resume=resume)
    if out.complete:
        out.raise_if_failed(throw)
        return out.path
    if out.restart is not None:
        u, t = jnp.asarray(out.restart["u"]), jnp.asarray(out.restart["t"])
        done, bad = int(out.restart["saves"]), int(out.restart["bad"])
    else:
        u, t, done, bad = jnp.asarray(u_init), jnp.asarray(t0, u_init.dtype), 0, -1
    why = ""  # a resumed run that had already failed is complete
    n_chunks = -(-n_saves // chunk)
    with progress.bar(n_chunks, f"{model.name} -> {os.fspath(path)}", progress=progress_bar,
                      unit="chunk") as bar:
        bar.update(done // chunk)
        while done < n_saves and bad < 0:
            size = min(chunk, n_saves - done)
            part = dataclasses.replace(program, n_saves=size)
            # fixed steps: the run's t0 and the steps taken before (each time is t0 + n dt,
            # as in `integrate`); a dt rule's steps go on from the time reached
            fixed = program.dt_rule is None
            start = (jnp.asarray(t0, u_init.dtype), done * program.save_every) if fixed else (t, 0)
            us, ts, diags, part_bad = run_chunk(part, u, params_j, start[0], dt_arg, start[1])
            first = 0 if done == 0 else 1  # a later chunk's first frame is the last one written
            part_bad = int(part_bad)
            if part_bad >= 0:
                bad = done + part_bad
                why = failure_message(model, program, (ts[part_bad], ts[part_bad + 1]), bad, dt)
            done += size
            u, t = us[-1], ts[-1]
            frames = finish(model, part, np.asarray(us)[first:], np.asarray(ts)[first:],
                            {k: np.asarray(v)[first:] for k, v in diags.items()},
                            part_bad, dt, False, params=params_j)
            out.append(frames.to_xarray(), dict(u=np.asarray(u), t=np.asarray(t), saves=done, bad=bad),
                       complete=done >= n_saves or bad >= 0)
            del us, ts, diags, frames
            bar.update(1)
    if bad >= 0 and throw:
        raise SolveError(f"{why}. The frames up to then are in {out.path!r} (throw=False returns quietly)")
    return out.path


def _chunk_runner(model: PDEModel, mesh: Any) -> Callable:
    """``run(program, u, params, t, dt, n0) -> (us, ts, diagnostics, bad)`` for one chunk (``n0``:
    the steps before it, `rollout_body`): the single-device rollout, or the decomposed one on
    ``mesh`` (frames gathered to the host)."""
    if mesh is None:
        return lambda part, u, params, t, dt, n0: _rollout(part, u, params, model.bcs, t, dt,
                                                           jnp.asarray(n0, jnp.int32))
    from ..parallel.decompose import _compiled, check_mesh
    from ..parallel.mesh import field_spec, gather, place

    check_mesh(model, mesh)

    def run(part, u, params, t, dt, n0):
        us, ts, diags, bad = _compiled(part, mesh, "shard_map")(
            place(u, mesh, field_spec(model.grid.ndim)), params, model.bcs, t, dt, n0)
        return gather(us), ts, diags, bad

    return run
