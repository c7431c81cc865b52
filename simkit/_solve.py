"""`solve`: integrate an `ODEModel` with simkit's fused kernels or with diffrax.

Two engines, one call: `_run_kernel` (small systems, `simkit.kernels`) and `_run` (diffrax),
each a cached ``jax.jit`` program returning the same tuple of outputs.

Numbers (``t0``, ``t1``, ``y0``, ``params``, ``rtol``, ``atol``, ``dt0``) are traced
arguments of one cached ``jax.jit`` program; only structure (the rhs, solver, number of
save points, events, ``max_steps``, ``dense``) selects the program. No host callbacks
run inside it: failures come out as a `Status` code and become a `SolveError` here.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import diffrax as dfx
import equinox as eqx
import lineax as lx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from . import _config
from .errors import InputError, ParameterError, ShapeError, SolveError
from .kernels import AbstractKernel, Rodas4, Tsit5
from .kernels.autodiff import KernelProgram, kernel_solve
from .kernels.integrate import event_values
from .model import ODEModel, Params
from .solution import Solution
from .stencil.pde import PDEModel
from .solvers import default_solver, initial_step, is_implicit, solver_order, with_newton_tolerances
from .status import Status, describe

EventFn = Callable[[Any, Any, Params], Any]
_TSIT5, _KVAERNO5 = default_solver(False), default_solver(True)
DENSE_JACOBIAN_MAX_STATES = 2048  # above this the stiff default is matrix-free Newton-Krylov
_KVAERNO5_KRYLOV = default_solver(True, matrix_free=True)
KERNEL_MAX_STATES = 64  # the fused kernels are the default up to this many states


class SaveSteps:
    """Save every accepted step (``saveat=simkit.SaveSteps()`` or ``saveat="steps"``)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SaveSteps)

    def __hash__(self) -> int:
        return hash("SaveSteps")

    def __repr__(self) -> str:
        return "SaveSteps()"


@dataclasses.dataclass(frozen=True)
class _Program:
    """Static structure of a solve; one compiled program per distinct value."""

    rhs: Callable
    solver: Any
    newton_rule: bool  # replace the solver's root finder by simkit's Newton tolerances
    save: str  # "linspace" | "ts" | "steps"
    n_save: int
    dense: bool
    events: tuple[EventFn, ...]
    max_steps: int
    diffusion: Callable | None = None  # an SDE: fixed steps, Brownian motion from a key


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
def _run(program: _Program, t0, t1, y0, params, save_ts, rtol, atol, dt0, key=None):
    solver = program.solver
    if program.newton_rule:
        solver = with_newton_tolerances(solver, rtol, atol)
    if program.diffusion is None:
        auto_dt0 = initial_step(program.rhs, t0, t1, y0, params, rtol, atol, solver_order(solver))
    else:
        auto_dt0 = (t1 - t0) / 1000  # SDEs take fixed steps: 1000 by default
    dt0 = jnp.where(jnp.isnan(dt0), auto_dt0, dt0)
    if program.save == "linspace":
        main = dfx.SubSaveAt(ts=jnp.linspace(t0, t1, program.n_save))
    elif program.save == "ts":
        main = dfx.SubSaveAt(ts=save_ts)
    else:
        main = dfx.SubSaveAt(t0=True, steps=True)
    saveat = dfx.SaveAt(subs=[main, dfx.SubSaveAt(t1=True)], dense=program.dense)
    event = None
    args: Any = params
    if program.events:
        # One continuous condition, the smallest of the events' values each oriented to
        # start positive: it reaches zero at the *earliest* crossing of any event, even
        # when several change sign inside one step (diffrax's Event, given several
        # conditions, reports the first one in list order in that case).
        signs = event_values(program.events, t0, y0, params)
        signs = jnp.where(signs < 0, -1.0, 1.0).astype(y0.dtype)
        args = (params, signs)
        eps = jnp.finfo(y0.dtype).eps
        scale = jnp.maximum(jnp.maximum(jnp.abs(t0), jnp.abs(t1)), 1.0)
        event = dfx.Event(
            lambda t, y, args, **kw: jnp.min(args[1] * event_values(program.events, t, y, args[0])),
            root_finder=optx.Newton(rtol=100 * eps, atol=100 * eps * scale),
        )
        term = dfx.ODETerm(lambda t, y, args: program.rhs(t, y, args[0]))
    else:
        term = dfx.ODETerm(program.rhs)
    controller: Any = dfx.PIDController(rtol=rtol, atol=atol)
    if program.diffusion is not None:
        brownian = dfx.VirtualBrownianTree(
            t0, t1, tol=jnp.abs(dt0) / 2, shape=y0.shape, key=jax.random.wrap_key_data(key)
        )
        with_events = bool(program.events)

        def noise(t, y, args):
            g = program.diffusion(t, y, args[0] if with_events else args)
            return lx.DiagonalLinearOperator(jnp.broadcast_to(g, y.shape))

        term = dfx.MultiTerm(term, dfx.ControlTerm(noise, brownian))
        controller = dfx.ConstantStepSize()
    sol = dfx.diffeqsolve(
        term,
        solver,
        t0,
        t1,
        dt0,
        y0,
        args=args,
        saveat=saveat,
        stepsize_controller=controller,
        max_steps=program.max_steps,
        event=event,
        throw=False,
    )
    (ts, ys), (t_end, y_end) = (sol.ts[0], sol.ys[0]), (sol.ts[1][0], sol.ys[1][0])
    status = _result_code(sol, y_end)
    if program.events:
        values = args[1] * event_values(program.events, t_end, y_end, params)
        fired = status == int(Status.EVENT)
        event_index = jnp.where(fired, jnp.argmin(values), -1).astype(jnp.int32)
        event_time = jnp.where(fired, t_end, jnp.nan)
    else:
        event_index = jnp.asarray(-1, jnp.int32)
        event_time = jnp.asarray(jnp.nan, t_end.dtype)
    stats = {
        "num_steps": sol.stats["num_steps"],
        "num_accepted_steps": sol.stats["num_accepted_steps"],
        "num_rejected_steps": sol.stats["num_rejected_steps"],
    }
    num_rhs = _num_rhs(program.solver, sol.stats["num_steps"])
    if num_rhs is not None:
        stats["num_rhs"] = num_rhs
    interpolation = sol.interpolation if program.dense else None
    return ts, ys, stats, status, t_end, y_end, event_index, event_time, interpolation


@dataclasses.dataclass(frozen=True)
class _KernelRun:
    kernel: KernelProgram
    save: str  # "linspace" | "ts" | "steps"
    n_save: int


@functools.partial(jax.jit, static_argnames=("program",))
def _run_kernel(program: _KernelRun, t0, t1, y0, params, save_ts, rtol, atol, dt0):
    solver = program.kernel.solver
    auto_dt0 = initial_step(program.kernel.rhs, t0, t1, y0, params, rtol, atol, solver.order())
    dt0 = jnp.where(jnp.isnan(dt0), auto_dt0, dt0)
    if program.save == "linspace":
        save_ts = jnp.linspace(t0, t1, program.n_save)
    out = kernel_solve(program.kernel, t0, t1, y0, params, save_ts, rtol, atol, dt0)
    stats = dict(out["stats"])
    stats["num_rhs"] = stats["num_rhs"] + 2  # the initial-step estimate
    return (out["ts"], out["ys"], stats, out["status"], out["t_final"], out["y_final"],
            out["event_index"], out["event_time"], None)


# -- input checks (before compilation) -------------------------------------------


def _is_traced(*trees: Any) -> bool:
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(trees))


def _concrete(x: Any) -> np.ndarray | None:
    """NumPy value of ``x``, or None when it is traced (inside a user's transform)."""
    return None if _is_traced(x) else np.asarray(x)


def _check_finite(name: str, value: Any, model: ODEModel) -> None:
    arr = _concrete(value)
    if arr is not None and arr.dtype.kind in "fciu" and not np.all(np.isfinite(arr)):
        raise ParameterError(f"model {model.name!r}: {name} is not finite: {arr}")


def _check_positive(name: str, value: Any) -> None:
    arr = _concrete(value)
    if arr is not None and not (np.all(np.isfinite(arr)) and np.all(arr > 0)):
        raise InputError(f"{name} must be positive and finite, got {arr}")


def _time_span(model: ODEModel, t_span: Sequence[float] | None) -> tuple[Any, Any]:
    if t_span is None:
        if model.t_span is None:
            raise InputError(f"model {model.name!r} has no default t_span: pass t_span=(t0, t1)")
        t_span = model.t_span
    if len(t_span) != 2:
        raise InputError(f"t_span must be (t0, t1), got {t_span!r}")
    t0, t1 = t_span
    c0, c1 = _concrete(t0), _concrete(t1)
    if c0 is not None and c1 is not None:
        if not (np.isfinite(c0) and np.isfinite(c1)):
            raise InputError(f"t_span must be finite, got ({c0}, {c1})")
        if c0 == c1:
            raise InputError(f"t_span is empty: t0 == t1 == {c0}")
    return t0, t1


def _save_spec(saveat: Any, t0: Any, t1: Any, dtype: Any) -> tuple[str, int, Any]:
    if saveat is None:
        saveat = 101
    if isinstance(saveat, str):
        if saveat != "steps":
            raise InputError(f"saveat must be an int, an array of times or 'steps'; got {saveat!r}")
        saveat = SaveSteps()
    if isinstance(saveat, SaveSteps):
        return "steps", 0, np.zeros((0,), dtype)
    if isinstance(saveat, (int, np.integer)) and not isinstance(saveat, bool):
        if saveat < 1:
            raise InputError(f"saveat must be at least 1 save point, got {saveat}")
        return "linspace", int(saveat), np.zeros((0,), dtype)
    ts = _as_float(saveat, dtype)
    if ts.ndim != 1 or ts.shape[0] == 0:
        raise ShapeError(f"saveat times must be a non-empty 1-D array, got shape {ts.shape}")
    c, c0, c1 = _concrete(ts), _concrete(t0), _concrete(t1)
    if c is not None and c0 is not None and c1 is not None:
        lo, hi = min(c0, c1), max(c0, c1)
        bad = (c < lo - 1e-12 * abs(hi - lo)) | (c > hi + 1e-12 * abs(hi - lo))
        if np.any(bad):
            raise InputError(
                f"saveat times must lie in t_span [{c0}, {c1}]; got {c[bad][:5]} outside"
            )
        steps = np.diff(c) * np.sign(c1 - c0)
        if np.any(steps < 0):
            raise InputError("saveat times must be ordered from t0 towards t1")
    return "ts", int(ts.shape[0]), ts


def _as_float(value: Any, dtype: Any) -> Any:
    """``value`` as an array of ``dtype``: NumPy for host values (no device round trip
    before the compiled call, ~0.2 us instead of ~30 us), jax for device/traced ones."""
    if isinstance(value, jax.Array):  # includes tracers
        return value if value.dtype == dtype else value.astype(dtype)
    return np.asarray(value, dtype=dtype)


def _to_float(tree: Any, dtype: Any) -> Any:
    return jax.tree_util.tree_map(lambda v: _as_float(v, dtype), tree)


def solve(
    model: ODEModel,
    t_span: Sequence[float] | None = None,
    *,
    y0: Any = None,
    params: Params | None = None,
    saveat: int | Sequence[float] | Any | str | None = None,
    solver: Any = None,
    rtol: float = 1e-6,
    atol: float = 1e-9,
    max_steps: int = 100_000,
    dt0: float | None = None,
    events: EventFn | Sequence[EventFn] | None = None,
    dense: bool = False,
    throw: bool = True,
    key: Any = None,
) -> Solution:
    """Integrate ``model`` from ``t0`` to ``t1``.

    **Main arguments:**

    - `model`: an `ODEModel`, or a `PDEModel` (integrated by the method of lines on the
      flattened field; ``Solution.ys`` is ``(n_save, components * grid.size)``, use
      ``model.fields(sol.ys)`` for ``(n_save, components) + grid.shape``).
    - `t_span`: ``(t0, t1)`` in the model's time unit; defaults to ``model.t_span``.
      ``t1 < t0`` integrates backwards.
    - `y0`: initial state, shape ``(n_states,)``; defaults to ``model.y0``.
    - `params`: parameter overrides by name (the rest keep the model's defaults).
    - `saveat`: an int ``n`` (``n`` evenly spaced times from ``t0`` to ``t1``, default 101),
      a 1-D array of times inside ``t_span``, or ``"steps"`` / `SaveSteps()` (every
      accepted step).

    **Other arguments:**

    - `solver`: a simkit kernel (`simkit.Tsit5()`, `simkit.DOPRI5()`, `simkit.DOP853()`,
      `simkit.Rodas4()`) or any diffrax solver object (forces the diffrax engine). Default:
      up to 64 states and without ``dense``, `simkit.Tsit5()` or, when ``model.stiff``,
      `simkit.Rodas4()`; otherwise ``diffrax.Tsit5()`` or ``diffrax.Kvaerno5()`` with
      simkit's Newton tolerances, its linear solves matrix-free (GMRES on Jacobian-vector
      products) above 2048 states, so large PDE systems never build a dense Jacobian.
    - `rtol`, `atol`: error tolerances of the adaptive step controller (> 0).
    - `max_steps`: step budget; exhausting it raises `SolveError` (structure: changing it
      recompiles).
    - `dt0`: first step; default Hairer–Wanner's estimate.
    - `events`: a condition ``g(t, y, params) -> scalar`` or a sequence of them; the solve
      stops where one changes sign (located by Newton on the dense output). The
      `Solution` records ``event_time`` and ``event_index``.
    - `dense`: keep the dense interpolant, for ``Solution.evaluate(t)`` (diffrax engine).
    - `key`: a ``jax.random`` key, required for stochastic models (``model.diffusion``): the
      Brownian motion is a deterministic function of it. SDEs use diffrax with fixed steps
      ``dt0`` (default ``(t1 - t0) / 1000``) and ``diffrax.Euler()`` (Euler–Maruyama) unless
      another diffrax SDE solver is given.
    - `throw`: raise `SolveError` on failure (default). With ``throw=False`` the failure
      stays in ``Solution.status``. Under a user's ``jit``/``vmap``/``grad`` the check is
      an ``equinox.error_if`` with ``on_error='raise'``.

    **Returns:** a `Solution` with ``ys`` of shape ``(n_save, n_states)``.

    A second call that changes only numbers (params, y0, t_span, tolerances, dt0, save
    times of the same count) reuses the compiled program.
    """
    if isinstance(model, PDEModel):  # the method of lines: the field flattened
        if y0 is not None and np.shape(y0) == np.shape(model.u0):
            y0 = np.reshape(y0, -1)
        model = model.to_ode()
    if not isinstance(model, ODEModel):
        raise TypeError(f"solve() expects an ODEModel or a PDEModel, got {type(model).__name__}")
    dtype = _config.float_dtype()
    t0, t1 = _time_span(model, t_span)
    # unbound call: an equinox Module builds a bound-method object on each method access
    merged = ODEModel.merged_params(model, params)
    n_states = len(model.state_names)
    for name, value in merged.items():
        _check_finite(f"parameter {name!r}", value, model)
    y0 = model.y0 if y0 is None else y0
    if np.shape(y0) != (n_states,):
        extra = " (for a batch of initial states use simkit.ensemble or jax.vmap)" if np.ndim(y0) > 1 else ""
        raise ShapeError(
            f"model {model.name!r}: y0 must have shape ({n_states},) "
            f"for states {list(model.state_names) if n_states <= 20 else 'of the model'}, "
            f"got {np.shape(y0)}{extra}"
        )
    _check_finite("y0", y0, model)
    _check_positive("rtol", rtol)
    _check_positive("atol", atol)
    if not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
        raise InputError(f"max_steps must be a positive int, got {max_steps!r}")
    if dt0 is not None:
        c = _concrete(dt0)
        if c is not None and not (np.isfinite(c) and c != 0):
            raise InputError(f"dt0 must be finite and non-zero, got {c}")
    save_kind, n_save, save_ts = _save_spec(saveat, t0, t1, dtype)
    if events is None:
        events_t: tuple = ()
    elif callable(events):
        events_t = (events,)
    else:
        events_t = tuple(events)
        if not all(callable(g) for g in events_t):
            raise InputError("events must be a callable g(t, y, params) or a sequence of them")

    sde = model.diffusion is not None
    if sde:
        if key is None:
            raise InputError(f"model {model.name!r} is stochastic: pass key=jax.random.key(...)")
        if isinstance(solver, AbstractKernel):
            raise InputError(f"{solver!r} solves ODEs; for the stochastic model {model.name!r} "
                             "use a diffrax SDE solver (default diffrax.Euler())")
        solver = dfx.Euler() if solver is None else solver
    elif key is not None:
        raise InputError(f"model {model.name!r} is deterministic: key is only for stochastic models")
    if solver is None and not dense and n_states <= KERNEL_MAX_STATES:
        solver = Rodas4() if model.stiff else Tsit5()
    newton_rule = solver is None and model.stiff
    stiff_default = _KVAERNO5 if n_states <= DENSE_JACOBIAN_MAX_STATES else _KVAERNO5_KRYLOV
    chosen = (stiff_default if model.stiff else _TSIT5) if solver is None else solver
    if isinstance(chosen, AbstractKernel):
        if dense:
            raise InputError(
                f"{chosen!r} has no dense output over the whole solve: pass save times "
                "(saveat=...) or a diffrax solver (e.g. solver=diffrax.Tsit5()) with dense=True"
            )
        program: Any = _KernelRun(
            kernel=KernelProgram(solver=chosen, rhs=model.rhs, events=events_t,
                                 max_steps=int(max_steps), save_steps=save_kind == "steps"),
            save=save_kind,
            n_save=n_save,
        )
        runner = _run_kernel
        solver_name = repr(chosen)
    elif isinstance(chosen, dfx.AbstractSolver):
        program = _Program(
            rhs=model.rhs,
            solver=chosen,
            newton_rule=newton_rule,
            save=save_kind,
            n_save=n_save,
            dense=bool(dense),
            events=events_t,
            max_steps=int(max_steps),
            diffusion=model.diffusion,
        )
        runner = _run
        solver_name = f"diffrax.{type(chosen).__name__}"
    else:
        raise InputError(
            f"solver must be a simkit kernel (simkit.Tsit5(), simkit.Rodas4(), ...) or a "
            f"diffrax solver object, got {chosen!r}"
        )
    args = (
        _as_float(t0, dtype),
        _as_float(t1, dtype),
        _as_float(y0, dtype),
        _to_float(merged, dtype),
        save_ts,
        _as_float(rtol, dtype),
        _as_float(atol, dtype),
        _as_float(np.nan if dt0 is None else dt0, dtype),
    )
    extra = (_key_data(key),) if sde else ()
    ts, ys, stats, status, t_end, y_end, ev_i, ev_t, interp = runner(program, *args, *extra)
    traced = _is_traced(args, ts)
    sol = Solution(
        ts=ts,
        ys=ys,
        stats=stats,
        status=status,
        t_final=t_end,
        y_final=y_end,
        event_index=ev_i,
        event_time=ev_t,
        params=args[3],
        rtol=args[5],
        atol=args[6],
        state_names=model.state_names,
        model_name=model.name,
        solver_name=solver_name,
        interpolation=interp,
    )
    if traced:
        if throw:
            sol = eqx.error_if(
                sol,
                sol.status > int(Status.EVENT),
                f"simkit.solve: model {model.name!r} failed (max_steps reached, non-finite "
                "state or Newton failure); call with throw=False and read Solution.status",
                on_error="raise",
            )
        return sol
    code = int(status)
    if throw and code > int(Status.EVENT):
        raise SolveError(_failure_message(model, sol, args[0], args[1], chosen, code))
    if code == Status.EVENT or save_kind == "steps":
        return _trim(sol)
    return sol


def _key_data(key: Any) -> Any:
    """Raw key bits (uint32), so that a key is an ordinary traced array argument."""
    if jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return jnp.asarray(key, jnp.uint32)  # a raw key from jax.random.PRNGKey


def _trim(sol: Solution) -> Solution:
    """Drop save slots that were never reached (after an event; unused step slots)."""
    ts = np.asarray(sol.ts)
    keep = np.isfinite(ts)
    if keep.all():
        return sol
    return dataclasses.replace(sol, ts=sol.ts[keep], ys=sol.ys[keep])


def _failure_message(model: ODEModel, sol: Solution, t0: Any, t1: Any, solver: Any, code: int) -> str:
    t_end = float(sol.t_final)
    steps = int(sol.stats["num_accepted_steps"])
    msg = (
        f"simkit.solve: model {model.name!r} failed at t = {t_end:.6g} "
        f"(t_span [{float(t0):.6g}, {float(t1):.6g}]) after {int(sol.stats['num_steps'])} steps "
        f"with {sol.solver_name}: {describe(code)}."
    )
    size = float(np.max(np.abs(np.asarray(sol.y_final))))
    blow_up = (
        f" The state reached max|y| = {size:.3g}: the solution may blow up there."
        if not np.isfinite(size) or size > 1e10 else ""
    )
    if code == Status.MAX_STEPS:
        mean_dt = abs(t_end - float(t0)) / max(steps, 1)
        span = abs(float(t1) - float(t0))
        msg += f" The mean accepted step was {mean_dt:.3g} for a span of {span:.3g}." + blow_up
        implicit = is_implicit(solver) or getattr(solver, "stiff", False)
        if not implicit and mean_dt < 1e-4 * span:
            msg += (
                " The step size collapsed, as it does for a stiff problem solved with an "
                "explicit method: try solver=simkit.Rodas4() or diffrax.Kvaerno5() (or "
                "model.replace(stiff=True))."
            )
        msg += " Raising max_steps allows more steps."
    elif code == Status.STEP_SIZE_UNDERFLOW:
        msg += blow_up or " Check for a singularity of the model near that time."
    elif code == Status.NONFINITE:
        msg += " Check the parameters and initial state, or whether the solution blows up."
    elif code == Status.NONLINEAR_FAILURE:
        msg += " Try tighter tolerances or a smaller dt0."
    return msg
