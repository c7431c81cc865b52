"""The diffrax engine: a `DiffraxProgram` run by ``diffrax.diffeqsolve``."""

from __future__ import annotations

import functools
from typing import Any

import diffrax as dfx
import jax
import jax.numpy as jnp
import lineax as lx
import optimistix as optx

from ..events import capacity, event_values
from ..solvers import initial_step, solver_order, with_newton_tolerances
from ..status import Status
from .programs import DiffraxProgram
from .record import EngineResult


def _result_code(sol: Any, y_final: Any) -> Any:
    r = sol.result
    R = dfx.RESULTS
    code = jnp.full((), int(Status.FAILURE), jnp.int32)
    for res, status in (
        (R.successful, Status.SUCCESS),
        (R.event_occurred, Status.EVENT),
        (R.max_steps_reached, Status.MAX_STEPS),
        (R.dt_min_reached, Status.STEP_SIZE_UNDERFLOW),
        (R.nonlinear_max_steps_reached, Status.NONLINEAR_FAILURE),
        (R.nonlinear_divergence, Status.NONLINEAR_FAILURE),
        (R.singular, Status.NONLINEAR_FAILURE),
    ):
        code = jnp.where(r == res, int(status), code)
    finite = jnp.all(jnp.isfinite(y_final))
    return jnp.where(finite, code, int(Status.NONFINITE)).astype(jnp.int32)


def _num_rhs(solver: Any, num_steps: Any) -> Any | None:
    """RHS evaluations of an explicit RK solve, from its Butcher tableau; None otherwise."""
    tableau = getattr(solver, "tableau", None)
    if not isinstance(solver, dfx.AbstractERK) or tableau is None:
        return None
    stages = len(tableau.c) + 1
    fsal = bool(getattr(tableau, "fsal", False))
    per_step = stages - 1 if fsal else stages
    return 2 + (1 if fsal else 0) + per_step * num_steps


@functools.partial(jax.jit, static_argnames=("program",))
def run_diffrax(program: DiffraxProgram, args) -> EngineResult:
    """One diffrax solve; ``args`` is a `simkit._prepare.SolveArgs`."""
    t0, t1, y0, params, rtol, atol = args.t0, args.t1, args.y0, args.params, args.rtol, args.atol
    solver = program.solver
    if program.newton_rule:
        solver = with_newton_tolerances(solver, rtol, atol)
    if program.diffusion is None:
        auto_dt0 = initial_step(program.rhs, t0, t1, y0, params, rtol, atol, solver_order(solver))
    else:
        auto_dt0 = (t1 - t0) / 1000  # SDEs take fixed steps: 1000 by default
    dt0 = jnp.where(jnp.isnan(args.dt0), auto_dt0, args.dt0)
    if program.save == "linspace":
        main = dfx.SubSaveAt(ts=jnp.linspace(t0, t1, program.n_save))
    elif program.save == "ts":
        main = dfx.SubSaveAt(ts=args.save_ts)
    else:
        main = dfx.SubSaveAt(t0=True, steps=True)
    saveat = dfx.SaveAt(subs=[main, dfx.SubSaveAt(t1=True)], dense=program.dense)
    event = None
    extra: Any = params
    events = program.events
    if events:
        # One continuous condition, the smallest of the events' values each oriented to
        # start positive: it reaches zero at the *earliest* crossing of any event, even
        # when several change sign inside one step.
        signs = event_values(events, t0, y0, params)
        signs = jnp.where(signs < 0, -1.0, 1.0).astype(signs.dtype)
        extra = (params, signs)
        eps = jnp.finfo(signs.dtype).eps
        scale = jnp.maximum(jnp.maximum(jnp.abs(t0), jnp.abs(t1)), 1.0)
        event = dfx.Event(
            lambda t, y, a, **kw: jnp.min(a[1] * event_values(events, t, y, a[0])),
            root_finder=optx.Newton(rtol=100 * eps, atol=100 * eps * scale),
        )
        term = dfx.ODETerm(lambda t, y, a: program.rhs(t, y, a[0]))
    else:
        term = dfx.ODETerm(program.rhs)
    controller: Any = dfx.PIDController(rtol=rtol, atol=atol, dtmax=args.max_step)
    if program.diffusion is not None:
        brownian = dfx.VirtualBrownianTree(
            t0, t1, tol=jnp.abs(dt0) / 2, shape=y0.shape, key=jax.random.wrap_key_data(args.key)
        )
        with_events = bool(events)

        def noise(t, y, a):
            g = program.diffusion(t, y, a[0] if with_events else a)
            return lx.DiagonalLinearOperator(jnp.broadcast_to(g, y.shape))

        term = dfx.MultiTerm(term, dfx.ControlTerm(noise, brownian))
        controller = dfx.ConstantStepSize()
    sol = dfx.diffeqsolve(
        term, solver, t0, t1, dt0, y0, args=extra, saveat=saveat, stepsize_controller=controller,
        max_steps=program.max_steps, event=event, throw=False,
    )
    (ts, ys), (t_end, y_end) = (sol.ts[0], sol.ys[0]), (sol.ts[1][0], sol.ys[1][0])
    status = _result_code(sol, y_end)
    n_ev, cap = len(events), capacity(events)
    if events:
        values = extra[1] * event_values(events, t_end, y_end, params)
        fired = status == int(Status.EVENT)
        event_index = jnp.where(fired, jnp.argmin(values), -1).astype(jnp.int32)
        event_time = jnp.where(fired, t_end, jnp.nan)
        hit = fired & (jnp.arange(n_ev) == event_index)
        event_counts = hit.astype(jnp.int32)
        event_ts = jnp.full((n_ev, cap), jnp.inf, t_end.dtype).at[:, 0].set(jnp.where(hit, t_end, jnp.inf))
        event_ys = jnp.zeros((n_ev, cap) + y0.shape, y0.dtype).at[:, 0].set(
            jnp.where(hit[:, None], y_end, 0.0))
    else:
        event_index = jnp.asarray(-1, jnp.int32)
        event_time = jnp.asarray(jnp.nan, t_end.dtype)
        event_counts = jnp.zeros((0,), jnp.int32)
        event_ts = jnp.zeros((0, 0), t_end.dtype)
        event_ys = jnp.zeros((0, 0) + y0.shape, y0.dtype)
    stats = {
        "num_steps": sol.stats["num_steps"],
        "num_accepted_steps": sol.stats["num_accepted_steps"],
        "num_rejected_steps": sol.stats["num_rejected_steps"],
    }
    num_rhs = _num_rhs(program.solver, sol.stats["num_steps"])
    if num_rhs is not None:
        stats["num_rhs"] = num_rhs
    return EngineResult(
        ts=ts, ys=ys, stats=stats, status=status, t_final=t_end, y_final=y_end, event_index=event_index,
        event_time=event_time, event_ts=event_ts, event_ys=event_ys, event_counts=event_counts,
        interpolation=sol.interpolation if program.dense else None,
    )
