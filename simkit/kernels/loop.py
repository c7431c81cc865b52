"""The fused adaptive loop shared by every kernel.

Stepping is one lean ``lax.while_loop`` whose carry holds only the current point, the
last accepted step's dense-output data and counters. Save times are filled by an outer
``fori_loop`` over them: advance until a step covers the next save time, then evaluate
the method's own interpolant there (no extra steps; the large output buffer is touched
once per save time, never copied per step). With ``save_steps`` each accepted step is
recorded instead.

Each attempt measures the error in Hairer's RMS norm
``sqrt(mean((err / (atol + rtol * max(|y|, |y_new|)))**2))``, accepts it when <= 1,
locates event crossings on the interpolant (every crossing recorded, SciPy's direction
and terminal-count semantics; see `simkit.events`), and proposes the next step size. Step sizes
are ``stop_gradient``-ed: differentiating a solve differentiates the discrete scheme
along the step sequence that was taken.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_derivatives import SymbolicZero

from ..events import capacity, event_values, locate_crossings, wanted_crossings
from ..status import Status
from .linalg import writing_by_select

RUNNING = -1


def initial_state(method: Any, rhs, t0, t1, y0, params, rtol, atol, dt0, *, max_steps: int,
                  events: tuple = (), dense_output: bool = False) -> dict[str, Any]:
    """The loop's state before the first step (the ``state`` `adaptive_loop` starts from)."""
    dtype = jnp.real(y0).dtype
    direction = jnp.where(t1 >= t0, 1.0, -1.0).astype(dtype)
    f0 = method.init(rhs, t0, y0, params)
    n_ev, cap = len(events), capacity(events)
    if events:
        g0 = event_values(events, t0, y0, params)
        ev0 = dict(g=g0, sign=jnp.sign(g0), count=jnp.zeros((n_ev,), jnp.int32),
                   ts=jnp.full((n_ev, cap), jnp.inf, dtype), ys=jnp.zeros((n_ev, cap) + y0.shape, y0.dtype))
    else:
        ev0 = {}

    ctrl0 = method.controller_init(y0)
    # every method declares its dense output's shape: tracing an attempt only to learn it
    # cost 50-80 ms of a stiff kernel's first call (a whole step: Jacobian, LU, Newton)
    dense0 = method.dense_zeros(y0)
    # before any step: the first step (size dt0) from t0; a save time at t0 reads it at theta=0
    seg0 = dict(t=t0, hs=direction * jnp.abs(dt0).astype(dtype), kept=method.keep(y0, f0, y0, dense0, f0))

    state0 = dict(
        t=t0, y=y0, f=f0, h=lax.stop_gradient(jnp.abs(dt0)).astype(dtype),
        ctrl=ctrl0, last_rej=jnp.asarray(False),
        n_steps=jnp.asarray(0), n_acc=jnp.asarray(0), n_rhs=jnp.asarray(1),
        # an empty span (t0 == t1, known only at run time under jit or vmap): done, at y0
        status=jnp.where(t1 == t0, int(Status.SUCCESS), RUNNING), seg=seg0, ev=ev0,
        stop_index=jnp.asarray(-1, jnp.int32),
    )
    if dense_output:
        state0["rec"] = dict(t=jnp.zeros((max_steps,), dtype), hs=jnp.zeros((max_steps,), dtype),
                             kept=jax.tree_util.tree_map(lambda a: jnp.zeros((max_steps,) + a.shape, a.dtype),
                                                         seg0["kept"]))
    return state0


def expanded_shape(method: Any, expand, seg: dict[str, Any]) -> Any:
    """The shapes and dtypes of ``expand(seg)``: from the method's ``segment`` (what its
    ``expand`` recomputes: no trace of the step it redoes) where it has one, else traced."""
    if hasattr(method, "segment"):
        y = seg["kept"]["y"]
        return jax.eval_shape(lambda: method.segment(seg["t"], seg["hs"], y, y, method.dense_zeros(y), y))
    return jax.eval_shape(expand, seg)


def segment(method: Any, rhs, params, t, hs, y, f, y_new, dense, f_new, rtol, atol) -> dict[str, Any]:
    """A step's dense data in the form ``method.expand`` gives it, from the step itself:
    the method's ``segment`` when it has one (the explicit methods, whose ``expand`` redoes
    the step), else ``expand`` of what ``keep`` keeps."""
    if hasattr(method, "segment"):
        return method.segment(t, hs, y, y_new, dense, f_new)
    return method.expand(rhs, params, t, hs, method.keep(y, f, y_new, dense, f_new), rtol, atol)


def loop_stats(method: Any, c: dict[str, Any]) -> dict[str, Any]:
    """A finished loop state's counters, as `adaptive_loop` reports them in ``stats``."""
    return dict(num_steps=c["n_steps"], num_accepted_steps=c["n_acc"], num_rejected_steps=c["n_steps"] - c["n_acc"],
                num_rhs=c["n_rhs"], **(method.extra_stats(c["ctrl"]) if hasattr(method, "extra_stats") else {}))


def stepper(method: Any, rhs, t0, t1, params, rtol, atol, max_step, *, max_steps: int, events: tuple = (),
            dense_output: bool = False, dtype: Any = None):
    """The stepping loop's parts for one solve: ``attempt(c, phase=None) -> (c_new,
    accepted, full)`` (one step attempt from the loop state ``c`` with its bookkeeping: error
    test, events, step-size proposal, status; ``full``: the attempted step's dense data, as
    ``expand`` gives it), ``running(c)`` and ``expand(seg)`` (a
    step's dense data). `adaptive_loop` runs them in its loops; `simkit.engines.kernel_queue`
    runs them on the refilled lanes of an ensemble."""
    eps = jnp.finfo(dtype).eps
    direction = jnp.where(t1 >= t0, 1.0, -1.0).astype(dtype)
    n_ev, cap = len(events), capacity(events)
    if events:
        ev_max = jnp.asarray([ev.max_records for ev in events], jnp.int32)  # per event (cap: the largest)
    per_attempt = method.rhs_per_step + (0 if method.fsal else 1)

    def attempt(c, phase=None):
        # ``phase``: for a method with phases (`AutoSwitch`), the statically known active one
        kw = {} if phase is None else {"phase": phase}
        t, y = c["t"], c["y"]
        h = jnp.minimum(c["h"], max_step)
        remaining = jnp.abs(t1 - t)
        h = jnp.minimum(h, remaining)
        hs = direction * h
        # the last step: within 4 ulps of the span left, or one whose end t + hs rounds to
        # t1 (rounding is relative to |t|, not to the span left: a step of max_step = span / k
        # lands there, and was reported as "max_steps reached" at t1)
        last = (h >= remaining * (1 - 4 * eps)) | (direction * (t1 - (t + hs)) <= 0)
        # the step taken is the one time takes (SciPy's ``h = t_new - t``): t + hs rounds
        # relative to |t|, and a state advanced by hs drifted from its time by up to half an
        # ulp of t a step (1e-5 relative error at t0 = 1e9, with status success)
        t_new = jnp.where(last, t1, t + hs)
        hs = t_new - t
        y_new, err_norm, dense, f_new, work = method.attempt(rhs, t, y, c["f"], hs, params, rtol, atol, c["ctrl"],
                                                             **kw)
        evaluated_f = f_new is None  # one more evaluation, counted below (RadauIIA5's were not)
        if evaluated_f:
            f_new = rhs(t + hs, y_new, params)
        # the attempted step's dense data, in the form the method's interpolant reads: for
        # event location here, and for `kernel_queue`, which saves from it at once
        full = segment(method, rhs, params, t, hs, y, c["f"], y_new, dense, f_new, rtol, atol)
        finite = jnp.isfinite(err_norm) & jnp.all(jnp.isfinite(y_new))
        err_norm = jnp.where(finite, err_norm, jnp.inf)
        accepted = err_norm <= 1.0
        t_stop, y_stop, fired, ev, stop_index = t_new, y_new, jnp.asarray(False), c["ev"], c["stop_index"]
        if events:
            t_stop, y_stop, fired, ev, stop_index = crossings(c, t, t_new, y_new, hs, full, accepted)
        h_new, ctrl = method.propose(err_norm, h, c["ctrl"], accepted, c["last_rej"], work, **kw)
        h_new = lax.stop_gradient(h_new)
        # a step too small to move t: relative to |t| as in Hairer's codes
        # (0.1 |h| <= eps |t|), never to the span (a span of 1e11 must still allow tiny
        # steps near t = 0), and a step that is zero or subnormal
        # (or NaN: a NaN first step from a NaN input under a transform, or an overflowing
        # estimate, ran max_steps rejected attempts and blamed the step budget)
        underflow = (0.1 * h_new <= eps * jnp.abs(t)) | ~(h_new > jnp.finfo(dtype).tiny)
        # an implicit method whose Newton iteration failed at the smallest step: its failure
        # (a NaN Jacobian or preconditioner, say), not the step size's
        newton_failed = ~work["converged"] if work is not None and "converged" in work else False
        too_small = jnp.where(newton_failed, int(Status.NONLINEAR_FAILURE), int(Status.STEP_SIZE_UNDERFLOW))
        # a step below the spacing of t (t + hs rounds to t, at t0 = 1e15 say) cannot move:
        # the step size underflowed, whatever the method made of hs = 0 (a Rosenbrock
        # method's 1 / h gave "non-finite", BDF's and Radau's "Newton failed"; SciPy:
        # "step size is less than spacing between numbers")
        stuck = (hs == 0) & ~last
        status = jnp.where(
            fired, int(Status.EVENT),
            jnp.where(accepted & last, int(Status.SUCCESS),
                      jnp.where(stuck, int(Status.STEP_SIZE_UNDERFLOW),
                                jnp.where(~accepted & underflow, jnp.where(finite, too_small, int(Status.NONFINITE)),
                                          RUNNING))))
        if events:  # more crossings than an event can record: stop rather than lose them
            status = jnp.where(jnp.any(ev["count"] > ev_max), int(Status.TOO_MANY_EVENTS), status)
            # an event whose value is NaN (at t0 or the step's end) can never cross: stop
            status = jnp.where(jnp.any(jnp.isnan(ev["g"])), int(Status.EVENT_NONFINITE), status)
        # the last attempt: when a save time is reached, it is the accepted step covering it
        seg = dict(t=t, hs=hs, kept=method.keep(y, c["f"], y_new, dense, f_new))
        new = dict(
            t=jnp.where(accepted, t_stop, t), y=jnp.where(accepted, y_stop, y),
            f=jnp.where(accepted, f_new, c["f"]), h=h_new, ctrl=ctrl, last_rej=~accepted,
            n_steps=c["n_steps"] + 1, n_acc=c["n_acc"] + accepted.astype(c["n_acc"].dtype),
            # rhs evaluations: a fixed count per attempt, or (implicit methods with Newton
            # iterations) the count the attempt reports
            n_rhs=c["n_rhs"] + (per_attempt if work is None else work["num_rhs"].astype(c["n_rhs"].dtype)
                                + int(evaluated_f)),
            status=status.astype(c["status"].dtype), seg=seg, ev=ev, stop_index=stop_index,
        )
        if dense_output:  # the accepted step's dense data, at row n_acc (a rejected one: no write)
            row = jnp.where(accepted, c["n_acc"], max_steps)  # out of bounds: dropped
            new["rec"] = jax.tree_util.tree_map(lambda buf, v: buf.at[row].set(v, mode="drop"), c["rec"],
                                                dict(t=t, hs=hs, kept=seg["kept"]))
        return new, accepted, full

    def crossings(c, t, t_new, y_new, hs, full, accepted):
        """Every event crossing inside an accepted step, located on the interpolant of the
        step's dense data ``full``; the step is cut at the first crossing that completes an
        event's terminal count."""
        ev = c["ev"]

        def interp(theta):  # (the interpolant, its motion with theta along the rhs: `event_state`)
            return event_state(method, rhs, full, params, theta)

        g_new = event_values(events, t_new, y_new, params)
        s = ev["sign"]  # the sign of each event's last non-zero value (0: none yet)
        wanted = wanted_crossings(events, ev, g_new, accepted, dtype)
        found = locate_crossings(events, ev, g_new, wanted, lambda th: t + th * hs, interp, params, dtype)
        theta, keep, fired, theta_stop = found["theta"], found["keep"], found["fired"], found["theta_stop"]
        stop_index = jnp.where(fired, found["stop_index"], c["stop_index"]).astype(jnp.int32)
        t_ev = t + theta * hs
        y_ev = jax.vmap(interp)(theta)
        slot = jnp.minimum(ev["count"], cap - 1)
        rows = jnp.arange(n_ev)
        write = keep & (ev["count"] < ev_max)
        if writing_by_select():  # (one kernel: the same values, selected over the records)
            at = (jnp.arange(cap)[None, :] == slot[:, None]) & write[:, None]
            ts_rec = jnp.where(at, t_ev[:, None], ev["ts"])
            ys_rec = jnp.where(at[:, :, None], y_ev[:, None, :], ev["ys"])
        else:
            ts_rec = ev["ts"].at[rows, slot].set(jnp.where(write, t_ev, ev["ts"][rows, slot]))
            ys_rec = ev["ys"].at[rows, slot].set(jnp.where(write[:, None], y_ev, ev["ys"][rows, slot]))
        count = ev["count"] + keep.astype(jnp.int32)
        t_stop = jnp.where(fired, t + theta_stop * hs, t_new)
        y_stop = jnp.where(fired, interp(jnp.where(fired, theta_stop, 1.0)), y_new)
        g = jnp.where(accepted, g_new, ev["g"])
        sign = jnp.where(accepted & (g_new != 0), jnp.sign(g_new), s)
        return t_stop, y_stop, fired, dict(g=g, sign=sign, count=count, ts=ts_rec, ys=ys_rec), stop_index

    def running(c):
        return (c["status"] == RUNNING) & (c["n_steps"] < max_steps)

    def expand(seg):
        return method.expand(rhs, params, seg["t"], seg["hs"], seg["kept"], rtol, atol)

    return attempt, running, expand


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def event_state(method: Any, rhs, full: dict[str, Any], params, theta) -> Any:
    """The state at an event's crossing, at the fraction ``theta`` of the step whose dense
    data is ``full``: the method's interpolant there. Its derivative follows the step's data
    as the interpolant does, and the crossing's motion (``theta``'s derivative) along the rhs
    at the crossing instead of the interpolant's slope. In a fast phase the slope's error,
    times a large motion, swamped the derivative: found by probing, van der Pol (mu = 20,
    a terminal event at x = 0 going down, where |v'| is about 280): d v_event / d mu was off
    by 1.1e-2 relative with Rodas4 at rtol 1e-6 (finite differences of solves at that rtol:
    1.5e-4; now 5.7e-4), by 7.7e-5 with RadauIIA5 at 1e-8 (5.5e-7; now 1.5e-6). The event
    time's derivative (the Newton steps of `simkit.events.locate_root`) sees the same slope,
    so ``g(t_e, y_e) = 0`` holds to first order, for every kernel
    (benchmarks/experiments/event_derivative.py)."""
    return method.interpolate(rhs, params, full, theta)


def _event_state_jvp(method: Any, rhs, primals: tuple, tangents: tuple) -> tuple:
    # (symbolic zeros: the event's Newton step differentiates in theta alone, every step that
    # has a crossing, where the interpolant's derivative in the step's data is not needed)
    full, params, theta = primals
    d_full, d_params, d_theta = tangents
    leaves, tree = jax.tree_util.tree_flatten((d_full, d_params), is_leaf=lambda x: isinstance(x, SymbolicZero))
    moving = [not isinstance(d, SymbolicZero) for d in leaves]
    if any(moving):
        primal_leaves = jax.tree_util.tree_leaves((full, params))
        d_data = tree.unflatten([d if m else zero_tangent(x) for d, m, x in zip(leaves, moving, primal_leaves)])
        y, dy = jax.jvp(lambda f, p: method.interpolate(rhs, p, f, theta), (full, params), d_data)
    else:
        y = method.interpolate(rhs, params, full, theta)
        dy = jnp.zeros_like(y)
    if isinstance(d_theta, SymbolicZero):
        return y, dy
    slope = rhs(full["t"] + theta * full["hs"], y, params)  # dy/dt of the solution at the crossing
    return y, dy + slope * (full["hs"] * d_theta)


event_state.defjvp(_event_state_jvp, symbolic_zeros=True)


def zero_tangent(x: Any) -> Any:
    """The zero tangent of ``x``: float0 for integers and bools (a method's phase flag, a
    solve's status and counters), zeros of its dtype for floats."""
    if jnp.issubdtype(jnp.result_type(x), jnp.inexact):
        return jnp.zeros(jnp.shape(x), jnp.result_type(x))
    return np.zeros(jnp.shape(x), jax.dtypes.float0)


def perturbs(tangent: Any) -> bool:
    """Whether a tangent (of a ``custom_jvp`` rule with ``symbolic_zeros=True``) perturbs its
    input: not a symbolic zero (an input the caller does not differentiate) nor an integer
    input's ``float0``."""
    return not isinstance(tangent, SymbolicZero) and getattr(tangent, "dtype", None) != jax.dtypes.float0


def jvp_along_moving(fun: Any, primals: list, tangents: list) -> tuple:
    """``jax.jvp(fun, primals, tangents)`` for ``fun(*primals)``, along only the arguments
    whose tangent `perturbs` them: the others enter ``fun`` as constants, so the derivative
    rules inside it see them as symbolic zeros and push no direction for them."""
    moving = [i for i, t in enumerate(tangents) if perturbs(t)]

    def of_moving(*values: Any) -> Any:
        full = list(primals)
        for i, v in zip(moving, values):
            full[i] = v
        return fun(*full)

    return jax.jvp(of_moving, [primals[i] for i in moving], [tangents[i] for i in moving])


def save_at(method: Any, rhs, params, expand, c: dict[str, Any], target, k, n_save: int, full, key, direction):
    """``(value, full, key)``: the state saved at ``target`` (row ``k``) once the loop has
    stopped at or past it (else, a failed solve, the last state). ``full`` is the dense data
    of the step that ``key`` names, recomputed once per step that covers save times (not
    for the final target t1, row ``n_save``, which is not saved)."""
    covered = direction * (target - c["t"]) <= 0
    fresh = covered & (key != c["n_steps"]) & (k < n_save)
    full = lax.cond(fresh, lambda: expand(c["seg"]), lambda: full)
    key = jnp.where(fresh, c["n_steps"], key)
    theta = (target - full["t"]) / jnp.where(full["hs"] == 0, 1.0, full["hs"])  # hs = 0: an empty span
    value = method.interpolate(rhs, params, full, theta)
    # before the first step (a save time at t0) the state is y0 whatever t0 is: y0 + (t - t0) f0,
    # the same value, whose tangent in t0 is -f0 (the implicit methods' segment before any
    # step is a constant, and jax.grad of ys[0] with respect to t0 was -f0 instead of 0)
    f = jnp.where(jnp.isfinite(c["f"]), c["f"], 0)
    value = jnp.where(c["n_steps"] == 0, c["y"] + (target - c["t"]) * f, value)
    value = jnp.where(covered, value, c["y"])
    return value, full, key


def adaptive_loop(
    method: Any,
    rhs,
    t0,
    t1,
    y0,
    params,
    save_ts,
    rtol,
    atol,
    dt0,
    max_step,
    *,
    max_steps: int,
    events: tuple = (),
    save_steps: bool = False,
    dense_output: bool = False,
    state: dict[str, Any] | None = None,
    final: bool = True,
) -> dict[str, Any]:
    """Solve from ``t0`` to ``t1`` with ``method``; ``dt0`` is the first step's magnitude,
    ``max_step`` the largest step (``inf``: none).

    Resumable in pieces (save times only): ``state`` continues from the ``state`` that an
    earlier call returned (default: `initial_state`), and ``final=False`` stops once the
    last of ``save_ts`` is reached instead of going on to ``t1`` (no step is shortened to
    end there, so the pieces take exactly the steps of one whole solve).

    Returns ts, ys, status, t_final, y_final, event_index, event_time, the event records
    (event_ts, event_ys, event_counts) and counters; with `dense_output`, also ``dense``: every
    accepted step's start, signed size and the method's kept data (``max_steps`` rows, the
    first ``num_accepted_steps`` filled), from which `KernelInterpolation` evaluates the
    method's own interpolant anywhere. Recording them changes no computed value.
    """
    dtype = jnp.real(y0).dtype
    direction = jnp.where(t1 >= t0, 1.0, -1.0).astype(dtype)
    if state is None:
        state = initial_state(method, rhs, t0, t1, y0, params, rtol, atol, dt0, max_steps=max_steps,
                              events=events, dense_output=dense_output)
    state0, seg0 = state, state["seg"]
    attempt, running, expand = stepper(method, rhs, t0, t1, params, rtol, atol, max_step, max_steps=max_steps,
                                       events=events, dense_output=dense_output, dtype=dtype)

    if save_steps:
        n_save = max_steps + 1
        ts0 = jnp.full((n_save,), jnp.inf, dtype).at[0].set(t0)
        ys0 = jnp.zeros((n_save,) + y0.shape, y0.dtype).at[0].set(y0)

        def body(carry):
            c, ts, ys = carry
            c, accepted, _ = attempt(c)
            idx = jnp.where(accepted, c["n_acc"], n_save - 1)
            ts = ts.at[idx].set(jnp.where(accepted, c["t"], ts[idx]))
            ys = ys.at[idx].set(jnp.where(accepted, c["y"], ys[idx]))
            return c, ts, ys

        c, ts_out, ys_out = lax.while_loop(lambda carry: running(carry[0]), body, (state0, ts0, ys0))
        reached = jnp.arange(n_save) <= c["n_acc"]
        ts_out = jnp.where(reached, ts_out, jnp.inf)
        ys_out = jnp.where(reached[:, None], ys_out, c["y"])
    else:
        n_save = save_ts.shape[0]

        def advance(c, target):
            def cond(c):
                return running(c) & (direction * (target - c["t"]) > 0)

            n_phases = getattr(method, "num_phases", 0)
            if not n_phases:
                return lax.while_loop(cond, lambda c: attempt(c)[0], c)

            # a method with phases (an explicit and a stiff one): each phase runs in a loop of
            # its own whose steps hold only that phase's code, not a branch between the two
            # (a conditional in the step doubled its thunks: AutoSwitch ran 1.8x Tsit5's time
            # on a non-stiff problem); a switch ends the inner loop, the outer one picks the next
            def phase_loop(k):
                def inner_cond(c):
                    return cond(c) & (method.phase_of(c["ctrl"]) == k)

                return lambda c: lax.while_loop(inner_cond, lambda c: attempt(c, k)[0], c)

            return lax.while_loop(cond, lambda c: lax.switch(method.phase_of(c["ctrl"]),
                                                             [phase_loop(k) for k in range(n_phases)], c), c)

        full0 = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), expanded_shape(method, expand, seg0))

        # one pass over the save times and then t1 itself (the solve always ends at t1, an
        # event or a failure): a single copy of the stepping loop in the compiled program
        targets = jnp.concatenate([save_ts, jnp.reshape(t1, (1,)).astype(save_ts.dtype)]) if final else save_ts

        def save_one(k, carry):
            c, ys, full, key = carry
            target = targets[k]
            c = advance(c, target)
            value, full, key = save_at(method, rhs, params, expand, c, target, k, n_save, full, key, direction)
            # (a dynamic update, not ``.at[k].set``: a scatter, which one XLA:CPU kernel cannot
            # hold; the same values)
            return c, lax.dynamic_update_slice_in_dim(ys, value[None], k, 0), full, key

        n_targets = n_save + int(final)
        ys0 = jnp.zeros((n_targets,) + y0.shape, y0.dtype)
        c, ys_out, _, _ = lax.fori_loop(0, n_targets, save_one, (state0, ys0, full0, jnp.asarray(-1)))
        ys_out = ys_out[:n_save]
        reached = direction * (save_ts - c["t"]) <= 0
        ts_out = jnp.where(reached, save_ts, jnp.inf)
        ys_out = jnp.where(reached[:, None], ys_out, c["y"])

    status = jnp.where(c["status"] == RUNNING, int(Status.MAX_STEPS), c["status"])
    # an empty span (t1 == t0: no step runs) ends at y0, at t1: as y0 + (t1 - t0) f0 (the same
    # value), whose tangents in t1 and t0 are f0 and -f0 (they were 0, and d t_final / d t1 too;
    # found by probing), as `save_at` gives a save time at t0
    empty = (c["n_steps"] == 0) & (t1 == t0)
    f0 = jnp.where(jnp.isfinite(c["f"]), c["f"], 0)
    t_final = jnp.where(empty, t1, c["t"])
    y_final = jnp.where(empty, c["y"] + (t1 - c["t"]) * f0, c["y"])
    if events:
        fired = status == int(Status.EVENT)
        event_index = jnp.where(fired, c["stop_index"], -1)
        event_time = jnp.where(fired, c["t"], jnp.nan)
        records = dict(event_ts=c["ev"]["ts"], event_ys=c["ev"]["ys"], event_counts=c["ev"]["count"])
    else:
        event_index = jnp.asarray(-1)
        event_time = jnp.asarray(jnp.nan, dtype)
        records = dict(event_ts=jnp.zeros((0, 0), dtype), event_ys=jnp.zeros((0, 0) + y0.shape, y0.dtype),
                       event_counts=jnp.zeros((0,), jnp.int32))
    if dense_output:
        records["dense"] = c["rec"]
    if not final:
        # a piece: still running is not a failure; the loop state goes on to the next piece
        status = jnp.where((c["status"] == RUNNING) & (c["n_steps"] < max_steps), RUNNING, status)
    return dict(
        ts=ts_out, ys=ys_out, status=status.astype(jnp.int32), t_final=t_final, y_final=y_final,
        event_index=event_index.astype(jnp.int32), event_time=event_time.astype(dtype), **records,
        stats=loop_stats(method, c),
        **({} if final else {"state": c}),
    )
