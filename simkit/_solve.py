"""`solve`: integrate an `ODEModel` — prepare, run an engine, finish.

`simkit._prepare.prepare` validates the call and splits it into a static program and
traced numbers; `simkit.engines` runs it (simkit's fused kernels or diffrax, each one
cached ``jax.jit`` program returning an `EngineResult`); `finish` checks the result code
and builds the `Solution`. Numbers never recompile; no host callbacks run inside the
compiled program, so failures come out as a `Status` code and become a `SolveError` here.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _config, engines
from ._prepare import DEFAULT_RTOL, SolvePlan, check_flag, concrete, prepare
from .errors import InputError, SolveError
from .model import ODEModel, Params
from .placement import prepare_for_platform, placed, platform_of, resolve_device
from .save_times import SaveSteps, program_save_times
from .solution import Solution
from .solvers import is_implicit
from .status import Status, describe

EventFn = Callable[[Any, Any, Params], Any]

__all__ = ["SaveSteps", "solve"]


@_config.simkit_call()
def solve(
    model: ODEModel,
    t_span: Sequence[float] | None = None,
    *,
    y0: Any = None,
    params: Params | None = None,
    saveat: Any = None,
    solver: Any = None,
    rtol: float = DEFAULT_RTOL,
    atol: float | jax.typing.ArrayLike = 1e-9,
    max_steps: int = 100_000,
    max_step: float | None = None,
    dt0: float | None = None,
    events: Any = None,
    dense: bool = False,
    throw: bool = True,
    key: Any = None,
    device: Any = None,
) -> Solution:
    """Integrate ``model`` from ``t0`` to ``t1``.

    A second call that changes only numbers (params, y0, t_span, tolerances, dt0, save
    times of the same count) reuses the compiled program.

    Parameters
    ----------
    model : ODEModel or PDEModel
        The model. A `PDEModel` is integrated by the method of lines on the flattened field:
        ``Solution.ys`` is ``(n_save, components * grid.size)``; ``model.fields(sol.ys)``
        gives ``(n_save, components) + grid.shape``.
    t_span : (float, float), optional
        ``(t0, t1)`` in the model's time unit; defaults to ``model.t_span``. ``t1 < t0``
        integrates backwards; ``t0 == t1`` returns ``y0``; ``t1 = inf`` needs a terminal
        event and explicit save times (or ``"steps"``).
    y0 : array_like, optional
        Initial state, shape ``(n_states,)``; defaults to ``model.y0``. A complex ``y0``
        integrates a complex system (explicit kernels and diffrax).
    params : dict, optional
        Parameter overrides by name (the rest keep the model's defaults).
    saveat : SaveAt, int, array_like or "steps", optional
        A `simkit.SaveAt`, or its shorthands: an int ``n`` (``n`` evenly spaced times from
        ``t0`` to ``t1``, default 101), a 1-D array of times inside ``t_span``, or
        ``"steps"`` / `SaveSteps()` (every accepted step).
    solver : optional
        A simkit kernel (`simkit.Tsit5()`, `simkit.DOPRI5()`, `simkit.DOP853()`,
        `simkit.Rodas4()`, `simkit.Rodas5P()`, `simkit.RadauIIA5()`, `simkit.BDF()`) or any diffrax solver
        object (forces the diffrax engine). Default: up to 64 states, `simkit.Tsit5()` or,
        when ``model.stiff``, `simkit.Rodas5P()` (`simkit.RadauIIA5()` when rtol < 1e-8 is a
        number; ``stiff=None``: `simkit.AutoSwitch()`);
        above, ``diffrax.Tsit5()`` for non-stiff models and `simkit.BDF()` for stiff (or
        unknown) ones: with a dense Jacobian up to 256 states (100 when the model has a
        preconditioner, as a PDE with a ``linear`` part), matrix-free above (Newton-GMRES
        on Jacobian-vector products, preconditioned by the model's ``preconditioner``), so
        large PDE systems never build a dense Jacobian. Complex stiff states above 64 get
        ``diffrax.Kvaerno5()`` (matrix-free above 2,048 states).
    rtol : float
        Relative error tolerance of the adaptive step controller (>= 0; below 100 machine
        epsilons it is raised to that with a warning, as SciPy does; the default, 1e-6, is
        raised to float32's 1.2e-5 without one).
    atol : float or array_like
        Absolute error tolerance (>= 0, not 0 where rtol is): one for every state, or one
        per state, shape ``(n_states,)``, as SciPy's (for states of very different sizes).
    max_steps : int
        Step budget; exhausting it raises `SolveError` (structure: changing it recompiles).
    max_step : float, optional
        The largest step size (default: no limit).
    dt0 : float, optional
        First step's size (its sign is ignored: steps go from t0 towards t1; at most
        ``|t1 - t0|``); default Hairer–Wanner's estimate.
    events : callable, Event or sequence of them, optional
        A condition ``g(t, y, params) -> scalar``, a `simkit.Event` (direction, terminal
        count) or a sequence of them. Every crossing is recorded (``Solution.t_events``,
        ``Solution.y_events``) where the sign differs between an accepted step's ends (two
        crossings inside one step cancel, as in SciPy: bound the step with ``max_step``); a
        terminal event stops the solve at its n-th crossing and the `Solution` records
        ``event_time`` and ``event_index``. A plain callable is
        terminal unless it carries SciPy's ``terminal``/``direction`` attributes.
    dense : bool
        Keep the dense interpolant, for ``Solution.evaluate(t)`` (the chosen engine's own: a
        kernel records every accepted step, up to ``max_steps`` rows; saved values are
        unchanged bit for bit).
    throw : bool
        Raise `SolveError` on failure (default). With ``throw=False`` the failure stays in
        ``Solution.status``. Under a user's ``jit``/``vmap``/``grad`` the check is an
        ``equinox.error_if`` with ``on_error='raise'``.
    key : jax.Array, optional
        A ``jax.random`` key, required for stochastic models (``model.diffusion``): the
        Brownian motion is a deterministic function of it. SDEs use diffrax with fixed steps
        ``dt0`` (default ``(t1 - t0) / 1000``, at most ``max_step``), forwards in time, and
        ``diffrax.Euler()`` (Euler–Maruyama) unless ``diffrax.ItoMilstein()`` is given (the
        model is an Itô SDE: solvers converging to the Stratonovich solution are refused).
    device : jax.Device, "host" or "default", optional
        Where the solve runs. Default: JAX's default device, except that with an accelerator
        as the default a single solve runs on the host's CPU, which answers it sooner
        (`simkit.placement`). Inputs already committed to a device stay there.

    Returns
    -------
    Solution
        Save times ``ts`` ``(n_save,)``, states ``ys`` ``(n_save, n_states)``, solver
        statistics, status and event records.

    Raises
    ------
    InputError, ShapeError, ParameterError
        Bad inputs (``ValueError`` subclasses; `ParameterError` is also a ``KeyError``),
        before compiling.
    InputTypeError
        An input of the wrong type (a ``TypeError``), before compiling.
    SolveError
        The solver failed (``throw=True``): the message names the model, the time reached
        and what to try.

    Examples
    --------
    >>> import simkit
    >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11, params={"rho": 35.0})
    >>> sol.ys.shape, sol.solver_name
    ((11, 3), 'simkit.Tsit5()')
    """
    check_flag("throw", throw)
    where = resolve_device(device, batched=False, owner="simkit.solve", inputs=(t_span, y0, params, rtol, atol))
    with placed(where):
        plan = prepare(model, t_span, y0=y0, params=params, saveat=saveat, solver=solver, rtol=rtol, atol=atol,
                       max_steps=max_steps, max_step=max_step, dt0=dt0, events=events, dense=dense, key=key)
        prepare_for_platform(plan.solver, platform_of(where), "simkit.solve")
        trivial = _trivial(plan)
        result = trivial if trivial is not None else engines.run(plan.program, plan.engine_args)
        return finish(plan, result, throw)


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def raise_if_failed(values: Any, failed: Any, message: str) -> Any:
    """``values`` unchanged; at run time an error with ``message`` where ``failed`` holds, for
    ``values`` and for every derivative of them.

    ``equinox.error_if`` checks the primal values only: under ``jax.jit(jax.grad(loss))`` the
    primal solve's outputs are not part of the result, XLA removed the check with them, and
    the gradient through a failed solve came back finite and wrong. Here the tangents are
    scaled by a factor that the check produces (1, or NaN past a failure that did not raise):
    every derivative depends on the check, so it stays in the program."""
    # (the arrays only: a Python number among the params, as jax.hessian(loss)(1.1) leaves one
    # here, was a static part of equinox's jitted check, compiled again for each new value)
    arrays, rest = eqx.partition(values, eqx.is_array)
    return eqx.combine(eqx.error_if(arrays, failed, message, on_error="raise"), rest)


@raise_if_failed.defjvp
def _raise_if_failed_jvp(message: str, primals: tuple, tangents: tuple) -> tuple:
    values, failed = primals
    scale = jnp.where(eqx.error_if(failed, failed, message, on_error="raise"), jnp.nan, 1.0)

    def scaled(v: Any, t: Any) -> Any:  # linear in the tangent (transposes for jax.grad)
        if getattr(t, "dtype", None) == jax.dtypes.float0:
            return t
        return t * scale.astype(jnp.real(v).dtype)

    return raise_if_failed(values, failed, message), jax.tree_util.tree_map(scaled, values, tangents[0])


def finish(plan: SolvePlan, result: engines.EngineResult, throw: bool) -> Solution:
    """The `Solution` of an engine's result; raises `SolveError` on failure if `throw`."""
    args, model = plan.args, plan.model
    if plan.inputs_ok is not None:  # traced inputs that fail the host checks (`simkit._traced_checks`)
        bad = ~plan.inputs_ok
        # NaN states with NaN derivatives (a where's derivative there was 0: with throw=False the
        # gradient of a loss through them came out finite; found by probing); x * 1 keeps the bits
        nan = jnp.where(bad, jnp.nan, 1.0)
        result = result._replace(
            status=jnp.where(bad, jnp.int32(Status.INVALID_INPUT), result.status),
            ys=result.ys * nan, y_final=result.y_final * nan)
    sol = Solution(
        ts=result.ts, ys=result.ys, stats=result.stats, status=result.status, t_final=result.t_final,
        y_final=result.y_final, event_index=result.event_index, event_time=result.event_time,
        params=args.params, rtol=args.rtol, atol=args.atol, state_names=model.state_names,
        model_name=model.name, solver_name=plan.solver_name, interpolation=result.interpolation,
        event_ts=result.event_ts, event_ys=result.event_ys, event_counts=result.event_counts,
        y0=args.y0, model_source=model.source, model_units=model.units,
    )
    if plan.traced or isinstance(result.ts, jax.core.Tracer):
        if throw:
            sol = raise_if_failed(
                sol, sol.status > int(Status.EVENT),
                f"simkit.solve: model {model.name!r} failed (max_steps reached, a non-finite state "
                "or event value, a Newton failure, or an invalid traced input: save times outside "
                "t_span or unordered, negative tolerances...); call with throw=False and read "
                "Solution.status")
        return sol
    # np.asarray reads a CPU result through the buffer protocol (~6 µs); int() of a jax.Array
    # goes through Array._value, ~35 µs more on a fresh result: a tenth of a small solve's call
    code = int(np.asarray(result.status))
    if throw and code > int(Status.EVENT):
        raise SolveError(_failure_message(model, sol, args.t0, args.t1, plan.solver, code, max_step=args.max_step))
    if code == Status.EVENT or plan.saveat.steps:
        sol = _trim(sol)
    if code <= int(Status.EVENT):
        warn_below_normal(sol.ts, sol.ys, model, args.rtol, args.atol)
    return sol


@functools.cache
def _tiny(dtype: Any) -> float:
    return float(np.finfo(dtype).tiny)


def warn_below_normal(ts: Any, ys: Any, model: ODEModel, rtol: Any, atol: Any, *, owner: str = "simkit.solve",
                      ok: Any = None) -> None:
    """A `UserWarning` where a tolerance below the smallest normal number (``atol = 0``, a
    pure relative tolerance, say) could not hold: XLA:CPU flushes subnormal numbers to zero,
    so the error scale ``atol + rtol |y|`` of a state below ``tiny / rtol`` is at least
    ``tiny`` (2.2e-308 in float64), and the error there is controlled to about ``tiny`` in
    absolute terms, not to rtol of the state. Found by probing: ``y' = -y`` from 1e-300 with
    ``atol = 0`` ended at 2.8e-308 (exact: 2.1e-309) with status success; SciPy, whose
    arithmetic keeps subnormals, follows it down. ``ts`` ``(..., n_save)`` and ``ys``
    ``(..., n_save, n)`` are saved times and states (an ensemble: a leading member axis, and
    ``ok`` the members to look at)."""
    dtype = np.asarray(atol).dtype
    tiny = _tiny(dtype)
    if type(atol) is float or np.ndim(atol) == 0:
        if float(atol) >= tiny:  # (the common case: one comparison)
            return
    elif np.all(np.asarray(atol) >= tiny):  # (one per state)
        return
    limit = tiny / max(float(rtol), float(np.finfo(dtype).eps))
    ts, ys = np.asarray(ts), np.abs(np.asarray(ys))
    rows = np.isfinite(ts) if ok is None else np.isfinite(ts) & np.asarray(ok)[..., None]
    low = (ys < limit) & rows[..., None] & (np.asarray(atol) < tiny)
    if not low.any():
        return
    at = np.unravel_index(int(np.argmax(low)), low.shape)  # the first, in order
    member = f"member {at[0]}: " if low.ndim == 3 else ""
    warnings.warn(
        f"{owner}: model {model.name!r}: {member}state {model.state_names[at[-1]]!r} is {ys[at]:.3g} at "
        f"t = {ts[at[:-1]]:.6g}, below {limit:.3g} (the smallest normal {dtype} number, {tiny:.3g}, over rtol): "
        f"XLA flushes subnormal numbers to zero, so there the error is controlled to about {tiny:.2g} in "
        f"absolute terms, not to rtol = {float(rtol):g} of the state as atol = "
        f"{float(np.broadcast_to(atol, ys.shape[-1:])[at[-1]]):g} asks; give "
        f"atol >= {tiny:.2g}, or rescale the state", UserWarning, stacklevel=5)


def _trivial(plan: SolvePlan) -> engines.EngineResult | None:
    """The result without running an engine: ``t0 == t1`` (SciPy returns y0) or an empty state."""
    args = plan.args
    t0, t1 = concrete(args.t0), concrete(args.t1)
    empty = args.y0.shape[0] == 0
    if not empty and (t0 is None or t1 is None or t0 != t1 or plan.program.dense):
        return None  # (a zero span with dense output: the engine's, whose interpolant gives y0)
    if empty and (plan.program.events or plan.program.dense):
        # (they were ignored: no crossing, status success at t1 = inf; found by probing)
        raise InputError(f"model {plan.model.name!r} has no states, and its solve returns y0 at once: events and "
                         "dense output need states to solve")
    program = plan.program
    if program.save == "steps":
        ts = np.asarray([t0] if t0 == t1 else [t0, t1], dtype=args.t0.dtype)
    else:
        ts = np.asarray(program_save_times(program.save, program.n_save, args.t0, args.t1, args.save_ts))
    y0 = np.asarray(args.y0)
    n_ev = len(program.events)
    cap = max((ev.max_records for ev in program.events), default=0)
    zero = np.asarray(0, np.int64)
    return engines.EngineResult(
        ts=ts, ys=np.broadcast_to(y0, ts.shape + y0.shape).copy(),
        stats=dict(num_steps=zero, num_accepted_steps=zero, num_rejected_steps=zero, num_rhs=zero),
        status=np.asarray(int(Status.SUCCESS), np.int32), t_final=np.asarray(args.t1), y_final=y0,
        event_index=np.asarray(-1, np.int32), event_time=np.asarray(np.nan, args.t0.dtype),
        event_ts=np.full((n_ev, cap), np.inf, args.t0.dtype), event_ys=np.zeros((n_ev, cap) + y0.shape, y0.dtype),
        event_counts=np.zeros((n_ev,), np.int32),
    )


def _trim(sol: Solution) -> Solution:
    """Drop save slots that were never reached (after an event; unused step slots)."""
    ts = np.asarray(sol.ts)
    keep = np.isfinite(ts)
    if keep.all():
        return sol
    # (the mask applied on the host: a JAX boolean index is a gather traced per call, 0.7 ms
    # each, most of a small solve with an event)
    return dataclasses.replace(sol, ts=jnp.asarray(ts[keep]), ys=jnp.asarray(np.asarray(sol.ys)[keep]))


def _rhs_finite_ahead(model: ODEModel, sol: Solution, t1: Any) -> bool:
    """Whether the rhs is finite at the state reached and slightly past its time (where a
    failed solve's last attempts evaluated it): a NaN there made steps shrink until
    max_steps, which read like stiffness. A diagnostic on the failure path only."""
    try:
        y, t = np.asarray(sol.y_final), float(np.asarray(sol.t_final).real)
        ahead = [t + f * (float(t1) - t) for f in (0.0, 1e-12, 1e-9, 1e-6)]
        return all(bool(np.all(np.isfinite(np.asarray(model.rhs(s, y, sol.params))))) for s in ahead)
    except Exception:  # noqa: BLE001 - a diagnostic: an rhs that cannot run here says nothing
        return True


def _failure_message(model: ODEModel, sol: Solution, t0: Any, t1: Any, solver: Any, code: int,
                     max_step: Any = None) -> str:
    t_end = float(sol.t_final)
    steps = int(sol.stats["num_accepted_steps"])
    ends = f"{float(t0):.6g}", f"{float(t1):.6g}"
    if ends[0] == ends[1]:  # (a span such as (1e15, 1e15 + 1) printed as [1e+15, 1e+15])
        ends = repr(float(t0)), repr(float(t1))
    msg = (
        f"simkit.solve: model {model.name!r} failed at t = {t_end:.6g} "
        f"(t_span [{ends[0]}, {ends[1]}]) after {int(sol.stats['num_steps'])} steps "
        f"with {sol.solver_name}: {describe(code)}."
    )
    size = float(np.max(np.abs(np.asarray(sol.y_final)))) if np.size(sol.y_final) else 0.0
    blow_up = (
        f" The state reached max|y| = {size:.3g}: the solution may blow up there."
        if not np.isfinite(size) or size > 1e10 else ""
    )
    span = abs(float(t1) - float(t0))
    nonfinite_ahead = (f" The rhs is not finite just past t = {t_end:.6g} (NaN or inf at the state reached): "
                       "check it there." if code in (Status.MAX_STEPS, Status.STEP_SIZE_UNDERFLOW, Status.NONFINITE,
                                                     Status.NONLINEAR_FAILURE)
                       and not _rhs_finite_ahead(model, sol, t1) else "")
    resolution = float(np.finfo(np.asarray(sol.t_final).dtype).eps) * abs(t_end)
    coarse_time = (f" Times near t = {t_end:.3g} are resolved to {resolution:.2g} in "
                   f"{np.asarray(sol.t_final).dtype} ({resolution / span:.2g} of the span): a step below about "
                   f"{10 * resolution:.2g} cannot move t; measure time from t0 or use a wider float."
                   if span > 0 and resolution > 1e-9 * span else "")
    stalled = int(np.asarray(sol.stats.get("num_linear_failures", 0)))
    linear = (f" {stalled} Newton iterations stopped because GMRES did not converge within krylov_dim = "
              f"{getattr(solver, 'krylov_dim', '?')} products: give a preconditioner (simkit.BDF(preconditioner="
              "...)), the Jacobian's sparsity (simkit.BDF(jac_sparsity=pattern), or linear_solver='banded', "
              "jac_sparsity='detect' for the band read from the rhs however wide) or a dense Jacobian up to a few "
              "thousand states (simkit.BDF(linear_solver='dense')), or raise krylov_dim."
              if stalled and code in (Status.MAX_STEPS, Status.STEP_SIZE_UNDERFLOW, Status.NONLINEAR_FAILURE) else "")
    if code == Status.MAX_STEPS:
        mean_dt = abs(t_end - float(t0)) / max(steps, 1)
        msg += f" The mean accepted step was {mean_dt:.3g} for a span of {span:.3g}." + blow_up + nonfinite_ahead
        implicit = is_implicit(solver) or getattr(solver, "stiff", False)
        cap = float(np.asarray(max_step)) if max_step is not None else math.inf
        if mean_dt >= 0.5 * cap:
            # (the steps were the user's max_step, not a collapse: the stiffness advice misled)
            msg += (f" The steps were capped by max_step = {cap:.3g}: the span needs about {span / cap:.3g} "
                    "steps of that size, or a larger max_step.")
        elif not implicit and mean_dt < 1e-4 * span and not nonfinite_ahead:
            msg += (
                " The step size collapsed, as it does for a stiff problem solved with an "
                "explicit method: try solver=simkit.Rodas5P() or diffrax.Kvaerno5() (or "
                "model.replace(stiff=True))."
            )
        msg += linear + " Raising max_steps allows more steps."
    elif code == Status.STEP_SIZE_UNDERFLOW:
        msg += blow_up or nonfinite_ahead or coarse_time or linear or " Check for a singularity of the model near that time."
    elif code == Status.NONFINITE and np.all(np.isfinite(np.asarray(sol.y_final))) and not np.all(
            np.isfinite(np.asarray(sol.ys))):
        # (`engines.record.nonfinite_saves`: the steps were finite, a saved value between them was not)
        msg += (f" Every step's end was finite, but a saved value between steps was not: the interpolant "
                f"overflowed {np.asarray(sol.ys).dtype}, the states being near its largest number "
                f"(max|y| = {size:.3g}); rescale the model or solve in a wider float.")
    elif code == Status.NONFINITE:
        # (a NaN rhs at a finite state: the rhs's fault, not a blow-up)
        msg += nonfinite_ahead or " Check the parameters and initial state, or whether the solution blows up."
    elif code == Status.NONLINEAR_FAILURE:
        msg += blow_up or nonfinite_ahead or linear or (" The Newton iteration failed at every step size down to the smallest: check the "
                           "Jacobian and preconditioner for NaN, or try tighter tolerances or a smaller dt0.")
    elif code == Status.EVENT_NONFINITE:
        msg += (" Check the event functions there, and their parameters (under jax.jit or jax.vmap a NaN "
                "parameter that only an event reads reaches the solve).")
    elif code == Status.TOO_MANY_EVENTS:
        counts = np.asarray(sol.event_counts)
        msg += (f" Crossings per event: {counts.tolist()}; raise the event's max_records "
                "(simkit.Event(fn, max_records=...)) to keep them all.")
    return msg
