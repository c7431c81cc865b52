"""The diffrax engine: a `DiffraxProgram` run by ``diffrax.diffeqsolve``.

**Events** follow the kernel engine's semantics (`simkit.events`; `simkit.kernels.loop`'s
``crossings`` is the reference), inside one ``diffeqsolve``:

- `_EventSolver` wraps the solver: each step locates the crossings inside it on the
  solver's own interpolant (`simkit.events.locate_crossings`, shared with the kernels); its solver state
  carries each event's last value, sign and count, which diffrax keeps only for accepted
  steps. What it found travels to the controller with the step's error estimate.
- `_EventController` wraps the step-size controller: its state carries the records
  (written in place for accepted steps only), and an accepted step that completes a
  terminal count, or overflows a record buffer, ends the solve (``event_occurred``). The
  solve ends at that step's end; `run_diffrax` then reports the crossing as the final point.

Non-terminal events leave the step sequence untouched: the trajectory is the one without
events, bit for bit. No host callbacks, no restarts.

**The rhs never sees a time outside** ``[t0, t1]``: Kvaerno5 (and Kvaerno4) have a stage
abscissa above 1 (``c = 1.2303``), so their last step evaluated the rhs about 0.23 h past
``t1``. For an rhs that reads ``t``, `_EventController` shortens the steps near ``t1`` so
that ``t + c_max h <= t1`` (about 16 extra, geometrically shrinking steps at the end); the
time handed to the rhs is also clamped to the span, which is exact for an autonomous rhs
and covers the last rounding-level overshoot.
"""

from __future__ import annotations

from typing import Any

import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
from jax import lax

from .._codegen import SMALL_STATE_LIMIT, codegen_jit
from ..events import capacity, event_values, locate_crossings, wanted_crossings
from ..save_times import program_save_times
from ..solvers import initial_step, solver_order, with_newton_tolerances
from ..status import Status
from .programs import DiffraxProgram
from .record import EngineResult, nonfinite_saves

# diffrax's marker for "use the step-size controller's tolerances" in an implicit solver's
# root finder, read off a default solver (public API) rather than imported from a private module
use_stepsize_tol = dfx.Kvaerno5().root_finder.rtol


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


def _max_stage(solver: Any) -> float:
    """The largest stage abscissa ``c`` of a Runge-Kutta solver (1.0 when it has none)."""
    tableau = getattr(solver, "tableau", None)
    tableaus = getattr(tableau, "tableaus", (tableau,)) if tableau is not None else ()
    return max([1.0] + [float(max(tab.c, default=0.0)) for tab in tableaus if hasattr(tab, "c")])


def _uses_time(fn: Any, t: Any, y: Any, params: Any) -> bool:
    """Whether ``fn(t, y, params)`` reads ``t`` (conservatively: any use in its jaxpr)."""
    spec = lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x))  # noqa: E731
    try:
        jaxpr = jax.make_jaxpr(fn)(spec(t), spec(y), jax.tree_util.tree_map(spec, params)).jaxpr
    except Exception:  # noqa: BLE001 - when in doubt, assume it does
        return True
    t_var = jaxpr.invars[0]
    return any(v is t_var for eqn in jaxpr.eqns for v in eqn.invars) or any(v is t_var for v in jaxpr.outvars)


def _max_records(events: tuple) -> Any:
    return jnp.asarray([ev.max_records for ev in events], jnp.int32)


class _EventSolver(dfx.AbstractWrappedSolver):
    """``solver`` plus the detection half of simkit's event semantics (`simkit.kernels.loop`'s
    ``crossings`` is the reference): each step locates the crossings inside it on the
    solver's interpolant. The solver state carries each event's last value, sign and count
    (diffrax keeps it only for accepted steps); the step's error estimate becomes
    ``(error, crossings)``, for `_EventController` to record and to stop on."""

    solver: dfx.AbstractSolver
    events: tuple = eqx.field(static=True)
    direction: Any  # +1.0 / -1.0: diffrax integrates in the time direction * t

    @property
    def term_structure(self):
        return self.solver.term_structure

    @property
    def interpolation_cls(self):  # pyright: ignore
        return self.solver.interpolation_cls

    @property
    def term_compatible_contr_kwargs(self):
        return self.solver.term_compatible_contr_kwargs

    @property
    def root_finder(self):  # read by diffeqsolve for an implicit solver (already filled)
        return self.solver.root_finder

    @property
    def root_find_max_steps(self):
        return self.solver.root_find_max_steps

    def order(self, terms):
        return self.solver.order(terms)

    def strong_order(self, terms):
        return self.solver.strong_order(terms)

    def error_order(self, terms):
        return self.solver.error_order(terms)

    def func(self, terms, t0, y0, args):
        return self.solver.func(terms, t0, y0, args)

    def init(self, terms, t0, t1, y0, args):
        g0 = event_values(self.events, self.direction * t0, y0, args)
        ev = dict(g=g0, sign=jnp.sign(g0), count=jnp.zeros((len(self.events),), jnp.int32))
        return self.solver.init(terms, t0, t1, y0, args), ev

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        inner, ev = solver_state
        y1, y_error, dense_info, inner, result = self.solver.step(terms, t0, t1, y0, args, inner, made_jump)
        interp = self.solver.interpolation_cls(t0=t0, t1=t1, **dense_info)
        ev, found = self._crossings(ev, t0, t1 - t0, y1, interp, args)
        return y1, (y_error, found), dense_info, (inner, ev), result

    def _crossings(self, ev, t0, h, y1, interp, params):
        """Every crossing inside the step ``[t0, t0 + h]`` (diffrax's direction-normalised
        time; event functions see ``direction * t``); the step is cut at the first crossing
        that completes an event's terminal count. Returns the new event state and what
        was found: ``keep`` (crossings to record), their times and states, the stop."""
        events, d = self.events, self.direction
        n_ev, dtype = len(events), jnp.real(y1).dtype

        def t_at(theta):
            return d * (t0 + theta * h)

        def y_at(theta):
            return interp.evaluate(t0 + theta * h)

        g_new = event_values(events, d * (t0 + h), y1, params)
        s = ev["sign"]  # the sign of each event's last non-zero value (0: none yet)
        wanted = wanted_crossings(events, ev, g_new, True, dtype)

        def located():
            f = locate_crossings(events, ev, g_new, wanted, t_at, y_at, params, dtype)
            theta = f["theta"]
            theta_cut = jnp.where(f["fired"], f["theta_stop"], 1.0)
            return dict(keep=f["keep"], t=t_at(theta), y=jax.vmap(y_at)(theta), fired=f["fired"],
                        stop_index=f["stop_index"], t_stop=t_at(theta_cut), y_stop=y_at(theta_cut))

        def quiet():
            return dict(keep=wanted & False, t=jnp.zeros((n_ev,), dtype), y=jnp.zeros((n_ev,) + y1.shape, y1.dtype),
                        fired=jnp.asarray(False), stop_index=jnp.asarray(0, jnp.int32),
                        t_stop=d * (t0 + h), y_stop=y1)

        found = lax.cond(jnp.any(wanted), located, quiet)
        count = ev["count"] + found["keep"].astype(jnp.int32)
        found["slot"] = ev["count"]
        found["count"] = count
        # an event whose value is NaN (at t0 or the step's end) can never cross: stop
        found["nan"] = jnp.any(jnp.isnan(g_new)) | jnp.any(jnp.isnan(ev["g"]))
        found["stop"] = found["fired"] | jnp.any(count > _max_records(events)) | found["nan"]
        ev = dict(g=g_new, sign=jnp.where(g_new != 0, jnp.sign(g_new), s), count=count)
        return ev, found


def _records_init(events: tuple, t0: Any, y0: Any) -> dict:
    n_ev, cap, dtype = len(events), capacity(events), jnp.real(y0).dtype
    return dict(ts=jnp.full((n_ev, cap), jnp.inf, dtype), ys=jnp.zeros((n_ev, cap) + y0.shape, y0.dtype),
                count=jnp.zeros((n_ev,), jnp.int32), fired=jnp.asarray(False), nan=jnp.asarray(False), stop_index=jnp.asarray(-1, jnp.int32),
                t_stop=jnp.asarray(jnp.nan, dtype), y_stop=jnp.zeros_like(y0))


def _records_update(events: tuple, rec: dict, found: dict, keep_step: Any) -> tuple[dict, Any]:
    """Record an accepted step's crossings (written in place, one slot per event, as the
    kernel loop does) and whether the solve stops there. ``found`` went through diffrax's
    error-estimate clean-up (NaN -> inf, which makes every leaf a float): cast back."""
    n_ev, cap = len(events), capacity(events)
    keep = keep_step & (found["keep"] != 0)
    slot = found["slot"].astype(jnp.int32)
    write = keep & (slot < _max_records(events))
    rows, col = jnp.arange(n_ev), jnp.minimum(slot, cap - 1)
    ts = rec["ts"].at[rows, col].set(jnp.where(write, found["t"], rec["ts"][rows, col]))
    ys = rec["ys"].at[rows, col].set(jnp.where(write[:, None], found["y"], rec["ys"][rows, col]))
    stop = keep_step & (found["stop"] != 0)
    fired = keep_step & (found["fired"] != 0)

    def pick(new, old):
        return jnp.where(keep_step, new, old)

    rec = dict(ts=ts, ys=ys, count=pick(found["count"].astype(jnp.int32), rec["count"]), fired=fired,
               nan=rec["nan"] | (keep_step & (found["nan"] != 0)),
               stop_index=pick(found["stop_index"].astype(jnp.int32), rec["stop_index"]),
               t_stop=pick(found["t_stop"], rec["t_stop"]), y_stop=pick(found["y_stop"], rec["y_stop"]))
    return rec, stop


class _EventController(dfx.AbstractAdaptiveStepSizeController):
    """``controller`` (a `diffrax.PIDController`) plus two duties:

    - with `events`, the error estimate is `_EventSolver`'s ``(error, crossings)``: the
      controller state carries the records (written only for accepted steps), and an
      accepted step that completes a terminal count or overflows a record buffer ends the
      solve (``RESULTS.event_occurred``);
    - with `c_max` > 1 (a stage evaluated past the step's end), steps near the end ``t_end``
      (diffrax's direction-normalised time) are shortened so that ``t + c_max h <= t_end``
      until that overshoot is below rounding (``64 eps * scale``, ``scale = max(|t0|, |t1|)``;
      the rhs's clamped time covers the rest)."""

    controller: dfx.AbstractStepSizeController
    t_end: Any
    scale: Any
    events: tuple = eqx.field(static=True)
    c_max: float = eqx.field(static=True)

    @property
    def rtol(self):
        return self.controller.rtol

    @property
    def atol(self):
        return self.controller.atol

    @property
    def norm(self):
        return self.controller.norm

    def wrap(self, direction):
        return _EventController(self.controller.wrap(direction), self.t_end, self.scale, self.events, self.c_max)

    def _guard(self, t0, tnext):
        if self.c_max <= 1.0:
            return tnext
        t_end, c = self.t_end, self.c_max
        remaining = t_end - t0
        over = t0 + c * (jnp.minimum(tnext, t_end) - t0) > t_end
        significant = (c - 1.0) * remaining > 64 * jnp.finfo(jnp.result_type(t_end)).eps * self.scale
        return jnp.where(over & significant, t0 + remaining / c, tnext)

    def init(self, terms, t0, t1, y0, dt0, args, func, error_order):
        tnext, state = self.controller.init(terms, t0, t1, y0, dt0, args, func, error_order)
        if self.events:
            state = (state, _records_init(self.events, t0, y0))
        return self._guard(t0, tnext), state

    def adapt_step_size(self, t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state):
        if self.events:
            y_error, found = y_error
            controller_state, rec = controller_state
        keep, next_t0, next_t1, made_jump, state, result = self.controller.adapt_step_size(
            t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state)
        if self.events:
            rec, stop = _records_update(self.events, rec, found, keep)
            result = dfx.RESULTS.where(stop, dfx.RESULTS.event_occurred, result)
            state = (state, rec)
        return keep, next_t0, self._guard(next_t0, next_t1), made_jump, state, result


class _FixedEventController(dfx.AbstractStepSizeController):
    """`_EventController`'s event duty for a fixed-step controller (SDEs)."""

    controller: dfx.AbstractStepSizeController
    events: tuple = eqx.field(static=True)

    def wrap(self, direction):
        return _FixedEventController(self.controller.wrap(direction), self.events)

    def init(self, terms, t0, t1, y0, dt0, args, func, error_order):
        tnext, state = self.controller.init(terms, t0, t1, y0, dt0, args, func, error_order)
        return tnext, (state, _records_init(self.events, t0, y0))

    def adapt_step_size(self, t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state):
        (y_error, found), (controller_state, rec) = y_error, controller_state
        keep, next_t0, next_t1, made_jump, state, result = self.controller.adapt_step_size(
            t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state)
        rec, stop = _records_update(self.events, rec, found, keep)
        result = dfx.RESULTS.where(stop, dfx.RESULTS.event_occurred, result)
        return keep, next_t0, next_t1, made_jump, (state, rec), result


def _fill_newton_tolerances(solver: Any, controller: Any) -> Any:
    """What diffeqsolve does for an implicit solver whose root finder takes the step
    controller's tolerances, done here because the solver is wrapped."""
    if not isinstance(solver, dfx.AbstractImplicitSolver):
        return solver
    names = [n for n in ("rtol", "atol", "norm") if getattr(solver.root_finder, n, None) is use_stepsize_tol]
    if not names:
        return solver
    return eqx.tree_at(lambda s: tuple(getattr(s.root_finder, n) for n in names), solver,
                       tuple(getattr(controller, n) for n in names))


@codegen_jit(lambda program, args: args.y0.size <= SMALL_STATE_LIMIT, static_argnames=("program",))
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
    if program.diffusion is not None:  # fixed steps: max_step bounds them (it was dropped with the controller)
        dt0 = jnp.sign(dt0) * jnp.minimum(jnp.abs(dt0), args.max_step)
    if program.save in ("linspace", "ts"):
        save_ts = program_save_times(program.save, program.n_save, t0, t1, args.save_ts)
        main = dfx.SubSaveAt(ts=save_ts)
    else:
        save_ts = None
        main = dfx.SubSaveAt(t0=True, steps=True)
    events = program.events
    saveat = dfx.SaveAt(subs=[main, dfx.SubSaveAt(t1=True)], dense=program.dense, controller_state=bool(events))
    # the rhs never sees a time outside [t0, t1] (see the module docstring)
    lo, hi = jnp.minimum(t0, t1), jnp.maximum(t0, t1)
    rhs = program.rhs
    term = dfx.ODETerm(lambda t, y, p: rhs(jnp.clip(t, lo, hi), y, p))
    direction = jnp.where(t0 < t1, 1, -1)  # diffrax's: it integrates direction * t forwards
    controller: Any = dfx.PIDController(rtol=rtol, atol=atol, dtmax=args.max_step)
    if program.diffusion is not None:
        brownian = dfx.VirtualBrownianTree(
            t0, t1, tol=jnp.abs(dt0) / 2, shape=y0.shape, key=jax.random.wrap_key_data(args.key)
        )
        diffusion = program.diffusion

        def noise(t, y, p):
            g = diffusion(jnp.clip(t, lo, hi), y, p)
            return lx.DiagonalLinearOperator(jnp.broadcast_to(g, y.shape))

        term = dfx.MultiTerm(term, dfx.ControlTerm(noise, brownian))
        controller = dfx.ConstantStepSize()
        if events:
            controller = _FixedEventController(controller, events)
    else:
        c_max = _max_stage(solver) if _uses_time(rhs, t0, y0, params) else 1.0
        if events or c_max > 1.0:
            solver = _fill_newton_tolerances(solver, controller)
            scale = jnp.maximum(jnp.maximum(jnp.abs(t0), jnp.abs(t1)), jnp.finfo(jnp.result_type(t1)).tiny)
            controller = _EventController(controller, t1 * direction, scale, events, c_max)
    if events:
        solver = _EventSolver(solver, events, direction.astype(jnp.real(y0).dtype))
    sol = dfx.diffeqsolve(
        term, solver, t0, t1, dt0, y0, args=params, saveat=saveat, stepsize_controller=controller,
        max_steps=program.max_steps, throw=False,
    )
    (ts, ys), (t_end, y_end) = (sol.ts[0], sol.ys[0]), (sol.ts[1][0], sol.ys[1][0])
    status = _result_code(sol, y_end)
    if events:
        ev = sol.controller_state[1]  # see _EventController
        fired = ev["fired"] & (status == int(Status.EVENT))
        # more crossings than an event can record: it stopped rather than lose them
        status = jnp.where(jnp.any(ev["count"] > _max_records(events)), int(Status.TOO_MANY_EVENTS), status)
        status = jnp.where(ev["nan"], int(Status.EVENT_NONFINITE), status)
        t_end = jnp.where(fired, ev["t_stop"], t_end)
        y_end = jnp.where(fired, ev["y_stop"], y_end)
        if save_ts is None:  # every step: the last one ends at the terminal crossing
            last = sol.stats["num_accepted_steps"]
            ts = ts.at[last].set(jnp.where(fired, t_end, ts[last]))
            ys = ys.at[last].set(jnp.where(fired, y_end, ys[last]))
        event_index = jnp.where(fired, ev["stop_index"], -1).astype(jnp.int32)
        event_time = jnp.where(fired, t_end, jnp.nan)
        event_counts = ev["count"]
        event_ts, event_ys = ev["ts"], ev["ys"]
    else:
        event_index = jnp.asarray(-1, jnp.int32)
        event_time = jnp.asarray(jnp.nan, t_end.dtype)
        event_counts = jnp.zeros((0,), jnp.int32)
        event_ts = jnp.zeros((0, 0), t_end.dtype)
        event_ys = jnp.zeros((0, 0) + y0.shape, y0.dtype)
    # an empty span (t1 == t0) ends at y0, at t1, as y0 + (t1 - t0) f0 (the same value, whose
    # tangents in t1 and t0 are f0 and -f0; they were 0, found by probing), as the kernels end
    empty = (sol.stats["num_steps"] == 0) & (t1 == t0)
    f0 = program.rhs(t0, y0, params)
    t_end = jnp.where(empty, t1, t_end)
    y_end = jnp.where(empty, y_end + (t1 - t0) * jnp.where(jnp.isfinite(f0), f0, 0), y_end)
    # rows not reached (a failure, or past an event): ts inf and the state where the solve
    # stopped, as the kernels fill them (diffrax left the states inf after a failure)
    if save_ts is None:
        reached = jnp.arange(ts.shape[0]) <= sol.stats["num_accepted_steps"]
    else:
        reached = direction * (save_ts - t_end) <= 0
    ts = jnp.where(reached, ts, jnp.inf)
    ys = jnp.where(jnp.reshape(reached, reached.shape + (1,) * (ys.ndim - 1)), ys, y_end)
    if save_ts is not None:  # a state saved at t0 is y0 + (t_k - t0) f0 likewise (its tangents were 0)
        at_t0 = (save_ts == t0)[:, None]
        ys = jnp.where(at_t0, y0[None] + (save_ts - t0)[:, None] * jnp.where(jnp.isfinite(f0), f0, 0)[None], ys)
    stats = {
        "num_steps": sol.stats["num_steps"],
        "num_accepted_steps": sol.stats["num_accepted_steps"],
        "num_rejected_steps": sol.stats["num_rejected_steps"],
    }
    num_rhs = _num_rhs(program.solver, sol.stats["num_steps"])
    if num_rhs is not None:
        stats["num_rhs"] = num_rhs
    return EngineResult(
        ts=ts, ys=ys, stats=stats, status=nonfinite_saves(status, ys), t_final=t_end, y_final=y_end,
        event_index=event_index,
        event_time=event_time, event_ts=event_ts, event_ys=event_ys, event_counts=event_counts,
        interpolation=sol.interpolation if program.dense else None,
    )
