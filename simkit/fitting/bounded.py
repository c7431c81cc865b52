"""Bounded minimisation from many starts: `minimize_bounded` (projected L-BFGS-B) and
`least_squares_bounded` (projected Levenberg-Marquardt), one compiled program for all starts.

Bounds are kept by projection onto the box ``[lower, upper]`` (``+-inf`` where a side is
open): no change of variables, so nothing saturates at a bound. A start that runs into a bound
stays there, finite, and its result says which bound (`BoundedResult.at_bound`).

Many starts run as ``lanes`` of one ``jax.vmap``: each loop pass evaluates the function (with
its derivatives) once in every lane, and each lane runs its own line search or damping and its
own convergence test. A lane whose start has ended takes the next waiting start, so lanes
stay busy until the starts run out, and a lane with nothing left repeats another lane's point
(the same work, so it never lengthens a pass). A start's trajectory depends on its own
function values only: it gives the same answer alone as in a batch of any size. A run of
``n`` starts compiles for the next power of two (`padded_starts`), so a fit of another number
of starts up to it reuses the program. The added rows never run as starts: one after another
(a CPU) they are never taken; side by side (an accelerator) they are lanes idle from the start,
which repeat another lane's point.

With ``devices=`` (CPU devices that ``simkit.configure(cpu_devices=...)`` made, or several
accelerator chips), the starts are split between the devices in order, each share running
side by side with the others in the program one device runs alone, compiled once
(`simkit.fitting.split`): a device does not wait for another's slowest start, and a start
ends exactly where it ends unsplit.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import placement
from .._codegen import codegen_jit
from .._prepare import check_number
from ..errors import InputError, InputTypeError, ShapeError
from ..kernels.autodiff import forward_tangents
from ..params import is_traced
from .split import array_module, padded_rows, split_starts


class FitStatus(enum.IntEnum):
    """How one start of a fit ended. Only `CONVERGED` is a success.

    An ``enum.IntEnum``: `FitResult.status`, `FitResult.start_status` and
    `BoundedResult.status` hold its codes.

    Attributes
    ----------
    CONVERGED : int
        0: the optimiser's convergence test passed.
    MAX_ITERATIONS : int
        1: stopped at ``max_iterations``.
    MAX_EVALUATIONS : int
        2: stopped at ``max_evaluations`` evaluations of the cost.
    OPTIMIZER_FAILED : int
        3: the optimiser reported a failure (e.g. a failed line search).
    NONFINITE : int
        4: the cost or the point is not finite at the end (a failed ODE solve, NaN).

    Examples
    --------
    >>> from simkit.fitting import FitStatus
    >>> FitStatus(2).name, FitStatus.CONVERGED == 0
    ('MAX_EVALUATIONS', True)
    """

    CONVERGED = 0
    MAX_ITERATIONS = 1
    MAX_EVALUATIONS = 2
    OPTIMIZER_FAILED = 3
    NONFINITE = 4


class BoundedResult(NamedTuple):
    """The end of every start of `minimize_bounded` or `least_squares_bounded`.

    Attributes
    ----------
    x : jax.Array
        ``(n_starts, n)``: each start's final point, inside ``[lower, upper]``.
    cost : jax.Array
        ``(n_starts,)``: the function at ``x`` (``0.5 * sum(r**2)`` for least squares).
    grad_norm : jax.Array
        ``(n_starts,)``: the largest entry of the projected gradient at ``x``,
        ``|x - clip(x - g, lower, upper)|`` (0 at a bounded or unbounded minimum).
    n_iter : jax.Array
        ``(n_starts,)`` int: accepted steps.
    n_eval : jax.Array
        ``(n_starts,)`` int: evaluations of the function with its derivatives (trial points
        included).
    status : jax.Array
        ``(n_starts,)`` int: a `FitStatus` code: 0 converged (projected gradient below
        ``gtol``, or a relative decrease below ``ftol``, or a step below ``xtol``), 1 the
        iteration limit, 2 the evaluation limit, 3 no decrease found along the steepest
        descent (the line search or damping gave up), 4 the function is not finite at the
        start.
    at_bound : jax.Array
        ``(n_starts, n)`` int8: -1 where ``x`` is at its lower bound, +1 at its upper bound,
        0 inside.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit.fitting import least_squares_bounded
    >>> residuals = lambda x: x - jnp.array([3.0, -1.0])  # minimum at (3, -1), outside the box
    >>> out = least_squares_bounded(residuals, jnp.array([[0.5, 0.5]]), jnp.zeros(2), jnp.full(2, 2.0))
    >>> out.x.round(6).tolist(), out.at_bound.tolist(), round(float(out.cost[0]), 6)
    ([[2.0, 0.0]], [[1, -1]], 1.0)
    """

    x: Any
    cost: Any
    grad_norm: Any
    n_iter: Any
    n_eval: Any
    status: Any
    at_bound: Any


# phases of a lane
_START, _TRIAL, _IDLE = 0, 1, 2
_ARMIJO = 1e-4  # sufficient decrease of the line search
_QUIET_STEPS = 3  # least squares: accepted steps in a row below ftol that end a start
_MAX_BACKTRACKS = 30


def value_and_grad(fun: Callable, n: int) -> Callable:
    """``x -> (fun(x), grad)``: forward mode for a few parameters (one pass of ``n``
    tangents, which through an ODE solve is one batched sensitivity solve of at most ``n``
    directions: `simkit.kernels.autodiff.forward_tangents`), reverse mode for many."""
    if n <= 16:
        def both(x):
            with forward_tangents(n):
                value, tangents = jax.vmap(lambda v: jax.jvp(fun, (x,), (v,)), out_axes=(None, 0))(
                    jnp.eye(n, dtype=x.dtype))
            return value, tangents
        return both
    return jax.value_and_grad(fun)


def residuals_and_jacobian(fun: Callable, n: int) -> Callable:
    """``x -> (r, J)``, ``J`` of shape ``(m, n)``, by ``n`` forward tangents in one pass (a
    solve inside ``fun`` pushes at most ``n`` sensitivities: `simkit.kernels.autodiff.forward_tangents`)."""
    def both(x):
        with forward_tangents(n):
            r, columns = jax.vmap(lambda v: jax.jvp(fun, (x,), (v,)), out_axes=(None, 0))(jnp.eye(n, dtype=x.dtype))
        return r, columns.T
    return both


def _project(x, lower, upper):
    return jnp.clip(x, lower, upper)


def projected_gradient(x, g, lower, upper):
    """``x - clip(x - g, lower, upper)``: the gradient with the components that push out of
    the box at a bound removed (zero at a bounded minimum)."""
    return x - _project(x - g, lower, upper)


def _blocked(x, g, lower, upper):
    """Variables at a bound whose gradient pushes outwards: held there this iteration."""
    return ((x <= lower) & (g > 0)) | ((x >= upper) & (g < 0))


def _at_bound(x, lower, upper):
    return jnp.where(x <= lower, -1, jnp.where(x >= upper, 1, 0)).astype(jnp.int8)


def _summary(lane, *, lower, upper):
    """A lane's `BoundedResult`: its point, cost, largest projected-gradient entry, counts,
    status and the bounds it sits at (shared by both methods' lanes)."""
    x, g = lane["x"], lane["g"]
    return BoundedResult(x, lane["f"], jnp.max(jnp.abs(projected_gradient(x, g, lower, upper)), initial=0.0),
                         lane["n_iter"], lane["n_eval"], lane["status"], _at_bound(x, lower, upper))


# the lanes ---------------------------------------------------------------------------------------
def _drive(evaluate: Callable, advance: Callable, fresh: Callable, summary: Callable, x0, lanes: int, count=None):
    """Run the first ``count`` rows of ``x0`` (default: all) to their ends on ``lanes`` lanes
    (see the module docstring); the other rows never run (`padded_starts`).

    ``fresh(x0_row, start_id)`` -> a lane state (a dict) about to evaluate its start;
    ``evaluate(point)`` -> the function's value(s) at a point; ``advance(lane, value)`` ->
    the lane after that evaluation, with ``lane["finished"]`` True on the pass its start
    ends; ``summary(lane)`` -> the per-start record written out then."""
    n_starts = x0.shape[0]
    count = n_starts if count is None else count
    start_ids = jnp.arange(lanes)
    state = jax.vmap(fresh)(x0[:lanes], start_ids)
    state["phase"] = jnp.where(start_ids < count, state["phase"], _IDLE)  # lanes beyond the starts
    record = jax.eval_shape(summary, jax.tree_util.tree_map(lambda a: a[0], state))
    out = jax.tree_util.tree_map(lambda s: jnp.zeros((n_starts,) + s.shape, s.dtype), record)
    batched_eval = evaluate if lanes > 1 else (lambda p: jax.tree_util.tree_map(lambda a: a[None], evaluate(p[0])))
    batched_eval = jax.vmap(evaluate) if lanes > 1 else batched_eval

    def going(carry):
        state, _, _ = carry
        return jnp.any(state["phase"] != _IDLE)

    def body(carry):
        state, out, waiting = carry
        active = state["phase"] != _IDLE
        # an idle lane repeats an active lane's point: the same work, so the pass is no longer
        donor = jnp.argmax(active)
        points = jnp.where(active[:, None], state["point"], state["point"][donor][None, :])
        values = batched_eval(points)
        state = jax.vmap(advance)(state, values)
        finished = state["finished"]
        where = jnp.where(finished, state["start"], n_starts)  # out of range: dropped
        out = jax.tree_util.tree_map(lambda o, v: o.at[where].set(v, mode="drop"), out, jax.vmap(summary)(state))
        # finished lanes take the next waiting starts, in order
        rank = jnp.cumsum(finished) - 1
        next_id = waiting + rank
        take = finished & (next_id < count)
        new = jax.vmap(fresh)(x0[jnp.clip(next_id, 0, n_starts - 1)], next_id)
        idle = dict(state, phase=jnp.where(finished, _IDLE, state["phase"]))
        state = jax.tree_util.tree_map(
            lambda a, b: jnp.where(take.reshape((-1,) + (1,) * (a.ndim - 1)), a, b), new, idle)
        state["finished"] = jnp.zeros_like(finished)
        return state, out, waiting + jnp.sum(finished)

    _, out, _ = jax.lax.while_loop(going, body, (state, out, jnp.asarray(lanes)))
    return out


def as_array(value: Any, dtype: Any = None) -> Any:
    """``value`` as an array, compiling nothing: a JAX array or tracer as it is (converted where
    ``dtype`` differs), anything else a NumPy array of JAX's dtype for it (float32 without
    float64). ``jnp.asarray`` of a NumPy array or a number compiles a copy program once per
    shape and dtype (JAX 0.10): with them and the slices after the run, a 10-start PEtab fit's
    first call compiled twelve small programs beside its own (Rahman et al. 2016, one core:
    5.29 CPU s, 5.10 without them)."""
    if isinstance(value, (jax.Array, jax.core.Tracer)):
        return value if dtype is None or value.dtype == dtype else jnp.asarray(value, dtype)
    value = np.asarray(value, dtype)
    return value.astype(jax.dtypes.canonicalize_dtype(value.dtype), copy=False)


def _check(name: str, x0, lower, upper):
    """Shapes and bounds, before anything compiles (where they are concrete)."""
    x0 = as_array(x0)
    if x0.ndim != 2:
        raise ShapeError(f"{name}: x0 must be (n_starts, n), got shape {x0.shape} (one start: x0[None])")
    if not jnp.issubdtype(x0.dtype, jnp.floating):
        x0 = x0.astype(jnp.result_type(float))
    n = x0.shape[1]
    lower, upper = as_array(lower, x0.dtype), as_array(upper, x0.dtype)
    lower = array_module(lower).broadcast_to(lower, (n,)) if lower.ndim == 0 else lower
    upper = array_module(upper).broadcast_to(upper, (n,)) if upper.ndim == 0 else upper
    if lower.shape != (n,) or upper.shape != (n,):
        raise ShapeError(f"{name}: lower and upper must have shape ({n},) like a row of x0, got {lower.shape} "
                         f"and {upper.shape}")
    if x0.shape[0] < 1:
        raise ShapeError(f"{name}: x0 has no starts (shape {x0.shape})")
    bad = () if is_traced(lower, upper) else np.flatnonzero(~(np.asarray(lower) <= np.asarray(upper)))
    if len(bad):
        raise InputError(f"{name}: lower must not exceed upper; it does (or is NaN) at indices {bad.tolist()}")
    return x0, lower, upper


def _check_counts(name: str, **counts: Any) -> None:
    """Each count a whole number (an int or an integral float; a NumPy or JAX scalar too),
    ``max_iter`` >= 0 and the others >= 1 (host values only; a ``max_eval`` of ``None`` is
    left to the caller's default)."""
    for count_name, value in counts.items():
        if (value is None and count_name == "max_eval") or is_traced(value):
            continue
        least = 0 if count_name == "max_iter" else 1
        message = f"{name}: {count_name} must be a whole number >= {least}, got {value!r}"
        if (isinstance(value, (bool, np.bool_)) or np.ndim(value) != 0
                or not np.issubdtype(np.asarray(value).dtype, np.number)
                or np.issubdtype(np.asarray(value).dtype, np.complexfloating)):
            raise InputTypeError(message)
        if not np.isfinite(value) or int(value) != value or value < least:
            raise InputError(message)


def _check_tolerances(name: str, **tolerances: Any) -> None:
    """Each tolerance finite and >= 0 (0 turns its test off; host values only): a NaN or a
    negative one would turn its test off in silence."""
    for tol_name, value in tolerances.items():
        check_number(f"{name}: {tol_name}", value, nonnegative=True)


def default_lanes(n_starts: int) -> int:
    """Starts side by side by default: all of them on an accelerator; one on a CPU, where a
    pass costs every lane's work and waits for the lane whose ODE solve takes the most steps
    (20 starts of a two-rate fit in the box (1e-4, 1e5) on 2 cores: 31 s side by side, 2.7 s
    one after another; in (1e-4, 1e2), where every solve is cheap, 0.52 s against 0.79 s)."""
    return n_starts if placement.platform_of(None) != "cpu" else 1


def _lanes(lanes: int | None, n_starts: int) -> int:
    if lanes is None:
        return default_lanes(n_starts)
    if isinstance(lanes, bool) or not isinstance(lanes, (int, np.integer)) or lanes < 1:
        raise InputError(f"lanes must be a positive whole number or None, got {lanes!r}")
    return min(int(lanes), n_starts)


def devices_for(devices: Any, n_starts: int, name: str) -> tuple | None:
    """The devices ``devices=`` names for ``n_starts`` starts, at most one per start (None:
    no split); a clear error for anything but a non-empty sequence of distinct devices."""
    if devices is None:
        return None
    if isinstance(devices, jax.Device) or not isinstance(devices, (list, tuple)) or not devices \
            or not all(isinstance(d, jax.Device) for d in devices) or len(set(devices)) != len(devices):
        raise InputError(f"{name}: devices must be a non-empty list of distinct jax devices, e.g. "
                         f"jax.local_devices(), got {devices!r}")
    return tuple(devices[:max(1, n_starts)])


def split_and_lanes(n: int, lanes: int | None, devices: Any, traced: bool,
                    name: str) -> tuple[tuple | None, int]:
    """``(devices, lanes per device)`` of a run of ``n`` starts (devices None: no split);
    no split under a transform of the caller's (the caller's program decides where it runs).
    The lanes follow the platform of the device the run is placed on (`simkit.placement`)."""
    devices = devices_for(devices, n, name)
    devices = None if traced or devices is None or len(devices) == 1 else devices
    share = n if not devices else -(-n // len(devices))
    return devices, _lanes(lanes, share)


def padded_starts(n: int) -> int:
    """The rows a run of ``n`` starts compiles for: the next power of two. A fit of another
    number of starts up to it (and the same lanes) reuses the compiled program; the added rows,
    copies of the last start, never run."""
    return 1 << max(0, n - 1).bit_length()


def _run_padded(run: Callable, fun: Callable, args: tuple, lanes: int | None, devices: tuple | None,
                traced: bool, name: str, **static: Any):
    """``run(fun, *args, lanes=..., **static)``, ``args[0]`` the starts: under a transform of the
    caller's, as they are; otherwise their rows padded to `padded_starts` (the lanes chosen for
    that many) and the results cut back, or, with ``devices``, each device's share so
    (`simkit.fitting.split`)."""
    x0 = args[0]
    n = x0.shape[0]
    devices, share_lanes = split_and_lanes(n, lanes, devices, traced, name)
    if traced:
        return run(fun, *args, lanes=share_lanes, **static)
    if devices:
        share = padded_starts(-(-n // len(devices)))
        return split_starts(run, (fun, *args), devices, static=1, starts=1, rows=padded_starts, counted=True,
                            lanes=_lanes(lanes, share), **static)
    rows = padded_starts(n)
    out = run(fun, padded_rows(x0, rows), *args[1:], lanes=_lanes(lanes, rows), count=np.asarray(n, np.int32), **static)
    return first_rows(out, n)


def first_rows(tree: Any, n: int) -> Any:
    """The first ``n`` rows of each array of ``tree``, cut on the host and placed back where the
    array was (no slicing program compiled for it)."""
    return jax.tree_util.tree_map(
        lambda a: a if a.shape[0] == n else jax.device_put(np.asarray(a)[:n], a.sharding), tree)


# projected L-BFGS-B --------------------------------------------------------------------------------
def _two_loop(g, s_mem, y_mem, rho, count, head, memory):
    """``H g`` of the L-BFGS inverse Hessian (pairs newest first from ``head - 1``)."""
    q = g
    alphas = []
    order = [(head - 1 - i) % memory for i in range(memory)]
    for i, j in enumerate(order):
        use = i < count
        a = jnp.where(use, rho[j] * jnp.dot(s_mem[j], q), 0.0)
        q = q - a * y_mem[j]
        alphas.append(a)
    newest = order[0]
    yy = jnp.dot(y_mem[newest], y_mem[newest])
    gamma = jnp.where(count > 0, jnp.dot(s_mem[newest], y_mem[newest]) / jnp.where(yy > 0, yy, 1.0), 1.0)
    r = gamma * q
    for i, j in reversed(list(enumerate(order))):
        use = i < count
        b = rho[j] * jnp.dot(y_mem[j], r)
        r = r + jnp.where(use, alphas[i] - b, 0.0) * s_mem[j]
    return r


def _lbfgsb_lane(n: int, memory: int, lower, upper, max_iter, max_eval, gtol, ftol, dtype):
    """``fresh`` and ``advance`` of one lane of projected L-BFGS-B."""
    eps = jnp.finfo(dtype).eps

    def fresh(x0, start):
        x0 = _project(x0, lower, upper)
        zeros = jnp.zeros((n,), dtype)
        return {"start": jnp.asarray(start, jnp.int32), "phase": jnp.asarray(_START, jnp.int32),
                "finished": jnp.asarray(False), "point": x0, "x": x0, "f": jnp.asarray(jnp.inf, dtype),
                "g": zeros, "d": zeros, "alpha": jnp.asarray(1.0, dtype), "backtracks": jnp.asarray(0, jnp.int32),
                "s": jnp.zeros((memory, n), dtype), "y": jnp.zeros((memory, n), dtype),
                "rho": jnp.zeros((memory,), dtype), "count": jnp.asarray(0, jnp.int32),
                "head": jnp.asarray(0, jnp.int32), "n_iter": jnp.asarray(0, jnp.int32),
                "n_eval": jnp.asarray(0, jnp.int32), "status": jnp.asarray(0, jnp.int32)}

    def direction(x, g, s_mem, y_mem, rho, count, head):
        """A descent direction at ``x`` (quasi-Newton, else steepest descent), its first
        step length, and whether it is steepest descent."""
        free = ~_blocked(x, g, lower, upper)
        gf = jnp.where(free, g, 0.0)
        d = -_two_loop(gf, s_mem, y_mem, rho, count, head, memory)
        d = jnp.where(free, d, 0.0)
        d = jnp.where(((x <= lower) & (d < 0)) | ((x >= upper) & (d > 0)), 0.0, d)
        descent = (jnp.dot(g, d) < -eps * jnp.linalg.norm(g) * jnp.linalg.norm(d)) & jnp.all(jnp.isfinite(d))
        steepest = ~descent | (count == 0)
        d = jnp.where(descent, d, -gf)
        norm = jnp.linalg.norm(d)
        # a steepest-descent step starts at unit length in x (SciPy's L-BFGS-B: 1 / |d|);
        # the box or the backtracking shortens it
        alpha = jnp.where(steepest, 1.0 / jnp.where(norm > 0, norm, 1.0), 1.0)
        return d, alpha.astype(dtype), steepest

    def advance(lane, value):
        ft, gt = value
        ft = jnp.asarray(ft, dtype)
        idle = lane["phase"] == _IDLE
        starting = lane["phase"] == _START
        n_eval = lane["n_eval"] + jnp.where(idle, 0, 1)
        good = jnp.isfinite(ft) & jnp.all(jnp.isfinite(gt))
        x, f, g = lane["x"], lane["f"], lane["g"]
        step = lane["point"] - x
        accept = starting | (good & (ft <= f + _ARMIJO * jnp.dot(g, step)))
        # an accepted step: the curvature pair, when it is positive enough
        s, y = step, gt - g
        sy = jnp.dot(s, y)
        keep = accept & ~starting & good & (sy > eps * jnp.dot(y, y))
        head = lane["head"]
        s_mem = jnp.where(keep, lane["s"].at[head].set(s), lane["s"])
        y_mem = jnp.where(keep, lane["y"].at[head].set(y), lane["y"])
        rho = jnp.where(keep, lane["rho"].at[head].set(1.0 / jnp.where(keep, sy, 1.0)), lane["rho"])
        count = jnp.where(keep, jnp.minimum(lane["count"] + 1, memory), lane["count"])
        head = jnp.where(keep, (head + 1) % memory, head)
        new_x, new_f, new_g = (jnp.where(accept, xt, xo) for xt, xo in ((lane["point"], x), (ft, f), (gt, g)))
        n_iter = lane["n_iter"] + jnp.where(accept & ~starting, 1, 0)
        pg = jnp.max(jnp.abs(projected_gradient(new_x, new_g, lower, upper)), initial=0.0)
        small_decrease = ~starting & accept & (f - ft <= ftol * jnp.maximum(jnp.maximum(jnp.abs(f), jnp.abs(ft)), 1.0))
        # a rejected trial: shrink (a safeguarded quadratic fit), or restart from steepest descent
        slope = jnp.dot(g, step)
        quadratic = -slope / (2.0 * jnp.where(ft - f - slope > 0, ft - f - slope, 1.0))
        shrink = jnp.where(jnp.isfinite(ft) & (ft - f - slope > 0), jnp.clip(quadratic, 0.1, 0.5), 0.1)
        backtracks = jnp.where(accept, 0, lane["backtracks"] + 1)
        restart = ~accept & (backtracks >= _MAX_BACKTRACKS) & (count > 0)
        gave_up = ~accept & (backtracks >= _MAX_BACKTRACKS) & (count == 0)
        count = jnp.where(restart, 0, count)
        backtracks = jnp.where(restart, 0, backtracks)
        status = jnp.where(
            starting & ~good, int(FitStatus.NONFINITE),
            jnp.where(accept & ((pg <= gtol) | small_decrease), int(FitStatus.CONVERGED),
                      jnp.where(gave_up, int(FitStatus.OPTIMIZER_FAILED),
                                jnp.where(accept & (n_iter >= max_iter), int(FitStatus.MAX_ITERATIONS),
                                          jnp.where(n_eval >= max_eval, int(FitStatus.MAX_EVALUATIONS), -1)))))
        done = ~idle & (status >= 0)
        d_new, alpha_new, _ = direction(new_x, new_g, s_mem, y_mem, rho, count, head)
        d = jnp.where(accept | restart, d_new, lane["d"])
        alpha = jnp.where(accept | restart, alpha_new, lane["alpha"] * shrink)
        point = _project(new_x + alpha * d, lower, upper)
        out = dict(lane, finished=done, phase=jnp.where(idle | done, _IDLE, _TRIAL).astype(jnp.int32),
                   point=jnp.where(done, new_x, point), x=new_x, f=new_f, g=new_g, d=d, alpha=alpha,
                   backtracks=backtracks.astype(jnp.int32), s=s_mem, y=y_mem, rho=rho, count=count.astype(jnp.int32),
                   head=head.astype(jnp.int32), n_iter=n_iter.astype(jnp.int32), n_eval=n_eval.astype(jnp.int32),
                   status=jnp.where(done, status, lane["status"]).astype(jnp.int32))
        return jax.tree_util.tree_map(lambda a, b: jnp.where(idle, a, b), lane, out)

    return fresh, advance, functools.partial(_summary, lower=lower, upper=upper)


# XLA:CPU's classic code generator for these loops of small operations, as for simkit's kernel
# solves and fits (`simkit._codegen`): a 10-start PEtab fit (Bruno et al. 2016, 13 parameters,
# six conditions) took 23 CPU seconds with it against 37, compilation included, same iterations
@codegen_jit(static_argnames=("fun", "method", "memory", "lanes"))
def _minimize_jit(fun, x0, lower, upper, max_iter, max_eval, gtol, ftol, *, method, memory, lanes, count=None):
    return _minimize(fun, x0, lower, upper, max_iter, max_eval, gtol, ftol, method=method, memory=memory, lanes=lanes,
                     count=count)


def _minimize(fun, x0, lower, upper, max_iter, max_eval, gtol, ftol, *, method, memory, lanes, count=None):
    n = x0.shape[1]
    fresh, advance, summary = _lbfgsb_lane(n, memory, lower, upper, max_iter, max_eval, gtol, ftol, x0.dtype)
    return _drive(value_and_grad(fun, n), advance, fresh, summary, x0, lanes, count)


def minimize_bounded(fun: Callable, x0: Any, lower: Any, upper: Any, *, method: str = "lbfgsb",
                     max_iter: int = 500, gtol: float = 1e-6, ftol: float = 2.2e-9, max_eval: int | None = None,
                     memory: int = 10, lanes: int | None = None,
                     devices: Sequence[jax.Device] | None = None) -> BoundedResult:
    """Minimise ``fun`` within the box ``[lower, upper]`` from every row of ``x0``.

    Projected L-BFGS-B: a limited-memory BFGS direction on the variables that are not held
    at a bound, a backtracking line search along the projected path ``clip(x + a d, lower,
    upper)`` (Armijo's sufficient decrease, a safeguarded quadratic fit to shrink; a
    non-finite value counts as a failed trial, so a failed ODE solve backs the step off), and
    a restart from steepest descent when the line search fails. Curvature pairs with
    ``s.y <= eps |y|^2`` are skipped. The method of Byrd, Lu, Nocedal and Zhu (1995) without
    its generalised Cauchy point: projection instead.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> scalar``, ``x`` of shape ``(n,)``: pure JAX (differentiated by forward
        mode for ``n <= 16``, reverse mode above).
    x0 : array_like
        ``(n_starts, n)``: the starts (projected into the box first).
    lower, upper : array_like
        ``(n,)`` (or scalars): the bounds; ``-inf``/``inf`` where open; ``lower == upper``
        fixes a variable.

    Other Parameters
    ----------------
    method : {"lbfgsb"}
        The method (one for now).
    max_iter : int
        Accepted steps per start (default 500).
    gtol : float
        Converged when the largest entry of the projected gradient is at most this (default
        1e-6, in the units of ``fun`` per unit of ``x``).
    ftol : float
        Converged when an accepted step lowers ``fun`` by at most ``ftol * max(|f|, 1)``
        (default 2.2e-9, SciPy's ``factr = 1e7`` times machine epsilon).
    max_eval : int, optional
        Evaluations of ``fun`` with its gradient per start (default ``20 * max_iter``, at least
        1: ``max_iter=0`` evaluates the start only).
    memory : int
        Curvature pairs kept (default 10).
    lanes : int, optional
        Starts run side by side under ``jax.vmap`` on each device (default: all on an
        accelerator, one on a CPU: `default_lanes`). ``lanes=1`` runs them one after another
        in the same compiled program. A start's path depends on its own function values
        only, so it ends where it ends alone, to the rounding of the function itself (a
        vmapped ODE solve can round differently from a single one).
    devices : sequence of jax.Device, optional
        Split the starts in order between these devices, each running its share on its own
        lanes (e.g. ``jax.local_devices()`` after ``simkit.configure(cpu_devices=True)``: the
        10 starts of Rahman_MBS2016's PEtab fit, compilation included, took 6.1 s on two CPU
        cores, 8.7 s on one).
        Default: JAX's default device runs them all; under the caller's ``jax.jit``,
        ``jax.vmap`` or ``jax.grad`` the caller's program decides. Each share runs the
        one-device program, compiled once: a split start ends where it ends unsplit.

    Returns
    -------
    BoundedResult
        ``x``, ``cost``, ``grad_norm``, ``n_iter``, ``n_eval``, ``status`` (`FitStatus`
        codes), ``at_bound``, one row per start.

    Raises
    ------
    ShapeError
        ``x0`` is not 2-d, or the bounds' shape is not ``(n,)``.
    InputError
        ``lower > upper`` somewhere, an unknown ``method``, or bad limits.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit.fitting import minimize_bounded
    >>> fun = lambda x: jnp.sum((x - jnp.array([1.0, 2.0])) ** 2)
    >>> out = minimize_bounded(fun, jnp.zeros((2, 2)), jnp.zeros(2), jnp.array([5.0, 1.5]))
    >>> out.x.round(6).tolist(), out.at_bound.tolist(), out.status.tolist()
    ([[1.0, 1.5], [1.0, 1.5]], [[0, 1], [0, 1]], [0, 0])
    """
    if method != "lbfgsb":
        raise InputError(f"minimize_bounded: method must be 'lbfgsb', got {method!r}")
    x0, lower, upper = _check("minimize_bounded", x0, lower, upper)
    _check_tolerances("minimize_bounded", gtol=gtol, ftol=ftol)
    _check_counts("minimize_bounded", max_iter=max_iter, max_eval=max_eval, memory=memory)
    if max_eval is None:  # (max_iter = 0: the start's own evaluation)
        max_eval = 20 * max_iter if is_traced(max_iter) else max(20 * max_iter, 1)
    args = (x0, lower, upper, as_array(max_iter), as_array(max_eval), as_array(gtol, x0.dtype),
            as_array(ftol, x0.dtype))
    traced = is_traced(args)
    with placement.fit_placed(x0.shape[0], devices, args):  # few starts: the host
        return _run_padded(_minimize if traced else _minimize_jit, fun, args, lanes, devices, traced,
                           "minimize_bounded", method=method, memory=int(memory))


# projected Levenberg-Marquardt --------------------------------------------------------------------
def _cholesky(a):
    """``(lower, ok)``: the Cholesky factor of a symmetric ``a`` (``(n, n)``, small), by
    columns in a ``fori_loop`` of matrix-vector products (no LAPACK call, so it runs in float64
    on every backend: a TPU has no float64 LU), and whether every pivot was positive and finite
    (``a`` positive definite). A pivot that is not is floored to keep the factor finite."""
    n = a.shape[0]
    index = jnp.arange(n)
    tiny = jnp.finfo(a.dtype).tiny

    def column(j, carry):
        lower, ok = carry
        s = a[:, j] - lower @ lower[j, :]  # lower[j, k] is 0 for k >= j so far
        d = jnp.sqrt(jnp.maximum(s[j], tiny))
        lower = lower.at[:, j].set(jnp.where(index > j, s / d, jnp.where(index == j, d, 0.0)))
        return lower, ok & (s[j] > 0) & jnp.isfinite(s[j])

    return jax.lax.fori_loop(0, n, column, (jnp.zeros_like(a), jnp.asarray(True)))


def _spd_solve(a, b):
    """``a^-1 b`` for a symmetric positive definite ``a`` (``(n, n)``, small): `_cholesky` and
    two triangular sweeps in ``fori_loop``s, the same operations on every backend."""
    n = a.shape[0]
    lower, _ = _cholesky(a)

    def forward(i, y):
        return y.at[i].set((b[i] - lower[i, :] @ y) / lower[i, i])

    def backward(k, x):
        i = n - 1 - k
        return x.at[i].set((y[i] - lower[:, i] @ x) / lower[i, i])

    y = jax.lax.fori_loop(0, n, forward, jnp.zeros_like(b))
    return jax.lax.fori_loop(0, n, backward, jnp.zeros_like(b))


# the first step's bound, in widths of the box (Euclidean norm of ``step / (upper - lower)``)
FIRST_STEP_BOUND = 0.25


def _box_norm(v, inv_width):
    """A step's length in widths of the box (a variable with an open bound does not count)."""
    return jnp.sqrt(jnp.sum((v * inv_width) ** 2))


def _lm_trial(x, g, jtj, second, structured, damping, radius, *, lower, upper, inv_width):
    """The damped step of the quadratic model (Gauss-Newton's ``jtj``, or it plus the
    second-order term ``second`` where ``structured``) on the variables not held at a bound,
    projected; the reduction of the cost the model predicts. The damping is scaled by
    ``jtj``'s diagonal; the step is shortened to ``radius`` widths of the box (``inv_width``:
    one over each variable's width, 0 where a bound is open). Where the damped model with the
    second-order term is not positive definite on those variables, the step is Gauss-Newton's,
    whose damped model is (an indefinite model has no minimum: its solve gave steps that were
    not finite, or zero and taken for convergence)."""
    tiny = jnp.finfo(x.dtype).tiny

    def bounded(delta, radius):
        return delta * jnp.minimum(1.0, radius / jnp.maximum(_box_norm(delta, inv_width), tiny))

    free = ~_blocked(x, g, lower, upper)
    scale = jnp.maximum(jnp.diag(jtj), 1e-12 * jnp.max(jnp.diag(jtj), initial=0.0) + tiny)
    damping_term = jnp.diag(damping * scale)

    def on(free, matrix):
        """``matrix`` on the variables ``free``, the identity on the others."""
        return jnp.where(free[:, None] & free[None, :], matrix, 0.0) + jnp.diag(jnp.where(free, 0.0, 1.0))

    _, definite = _cholesky(on(free, jtj + second + damping_term))
    model = jtj + jnp.where(structured & definite, second, 0.0)
    damped = model + damping_term

    def solve_on(free, fixed_step):
        rhs = -(g + damped @ fixed_step)
        return jnp.where(free, _spd_solve(on(free, damped), jnp.where(free, rhs, 0.0)), fixed_step)

    delta = bounded(solve_on(free, jnp.zeros_like(x)), radius)
    # variables the step carries through a bound stop at it; the rest re-solve with them
    # there (else the projected step's coupling to them is lost and the damping climbs)
    clipped = free & ((x + delta < lower) | (x + delta > upper))
    to_bound = jnp.where(clipped, _project(x + delta, lower, upper) - x, 0.0)
    delta = jnp.where(jnp.any(clipped), bounded(solve_on(free & ~clipped, to_bound), radius), delta)
    point = _project(x + delta, lower, upper)
    s = point - x
    return point, -(jnp.dot(g, s) + 0.5 * jnp.dot(s, model @ s)), delta


def _lm_lane(n: int, lower, upper, max_iter, max_eval, gtol, ftol, xtol, dtype):
    """``fresh`` and ``advance`` of one lane of projected Levenberg-Marquardt."""
    tiny = jnp.finfo(dtype).tiny
    # a step's length in widths of the box; a variable with an open bound does not count
    width = jnp.asarray(upper, dtype) - jnp.asarray(lower, dtype)
    inv_width = jnp.where(jnp.isfinite(width) & (width > 0), 1.0 / jnp.where(width > 0, width, 1.0), 0.0)

    def fresh(x0, start):
        x0 = _project(x0, lower, upper)
        zeros = jnp.zeros((n,), dtype)
        return {"start": jnp.asarray(start, jnp.int32), "phase": jnp.asarray(_START, jnp.int32),
                "finished": jnp.asarray(False), "point": x0, "x": x0, "f": jnp.asarray(jnp.inf, dtype),
                "g": zeros, "jtj": jnp.zeros((n, n), dtype), "second": jnp.zeros((n, n), dtype),
                "structured": jnp.asarray(False), "predicted": jnp.asarray(0.0, dtype), "delta": zeros,
                "damping": jnp.asarray(0.0, dtype), "factor": jnp.asarray(2.0, dtype),
                "radius": jnp.asarray(FIRST_STEP_BOUND, dtype),
                "n_iter": jnp.asarray(0, jnp.int32), "n_eval": jnp.asarray(0, jnp.int32),
                "quiet": jnp.asarray(0, jnp.int32), "status": jnp.asarray(0, jnp.int32)}

    trial = functools.partial(_lm_trial, lower=lower, upper=upper, inv_width=inv_width)

    def advance(lane, value):
        r, jac = value
        ft = 0.5 * jnp.dot(r, r)
        idle = lane["phase"] == _IDLE
        starting = lane["phase"] == _START
        n_eval = lane["n_eval"] + jnp.where(idle, 0, 1)
        good = jnp.isfinite(ft) & jnp.all(jnp.isfinite(jac))
        f = lane["f"]
        actual = f - ft
        ratio = actual / jnp.where(lane["predicted"] > 0, lane["predicted"], 1.0)
        accept = starting | (good & (lane["predicted"] > 0) & (ratio > 1e-4))
        gt, jtjt = jac.T @ r, jac.T @ jac
        new_x = jnp.where(accept, lane["point"], lane["x"])
        new_f = jnp.where(accept, ft, f)
        g = jnp.where(accept, gt, lane["g"])
        jtj = jnp.where(accept, jtjt, lane["jtj"])
        # the residuals' second-order term sum_i r_i hess(r_i), by a structured secant update
        # (Dennis, Gay & Welsch 1981, NL2SOL): after each step, the next model is the one of
        # Gauss-Newton and Gauss-Newton plus this term that predicted the step's reduction better
        step = lane["point"] - lane["x"]
        old = lane["second"]
        y = gt - lane["g"]
        y_sharp = y - jtjt @ step
        curvature = jnp.abs(step @ old @ step)
        # NL2SOL's sizing: the old term shrunk to the curvature the step measured
        size = jnp.where(curvature > tiny,
                         jnp.minimum(1.0, jnp.abs(step @ y_sharp) / jnp.where(curvature > tiny, curvature, 1.0)), 1.0)
        scaled = size * old
        w = y_sharp - scaled @ step
        ys = y @ step
        ys_safe = jnp.where(ys > tiny, ys, 1.0)
        updated = scaled + (jnp.outer(w, y) + jnp.outer(y, w)) / ys_safe - (w @ step) * jnp.outer(y, y) / ys_safe**2
        updated = jnp.where(ys > 1e-12 * jnp.sqrt((y @ y) * (step @ step)), updated, scaled)
        gn_error = jnp.abs(-(lane["g"] @ step + 0.5 * step @ lane["jtj"] @ step) - actual)
        full_error = jnp.abs(-(lane["g"] @ step + 0.5 * step @ (lane["jtj"] + old) @ step) - actual)
        moved = accept & ~starting & good
        second = jnp.where(starting, 0.0, jnp.where(moved & jnp.all(jnp.isfinite(updated)), updated, old))
        structured = jnp.where(starting, False, jnp.where(moved, full_error < gn_error, lane["structured"]))
        # Nielsen's damping: down by a factor in [1/3, 1) after a good step, up doubling after a bad one
        start_damping = 1e-3
        damping = jnp.where(starting, start_damping,
                            jnp.where(accept, lane["damping"] * jnp.maximum(1.0 / 3.0, 1.0 - (2.0 * ratio - 1.0) ** 3),
                                      lane["damping"] * lane["factor"]))
        factor = jnp.where(accept, 2.0, 2.0 * lane["factor"])
        # the step bound (a trust region in widths of the box, as MINPACK's step bound): a step
        # that reached it doubles it when the model predicted its decrease well, halves it when not
        reached = _box_norm(step, inv_width) > 0.9 * lane["radius"]
        radius = jnp.where(starting, FIRST_STEP_BOUND,
                           jnp.where(reached & (~accept | (ratio < 0.25)), 0.5 * lane["radius"],
                                     jnp.where(reached & (ratio > 0.75), 2.0 * lane["radius"], lane["radius"])))
        n_iter = lane["n_iter"] + jnp.where(accept & ~starting, 1, 0)
        pg = jnp.max(jnp.abs(projected_gradient(new_x, g, lower, upper)), initial=0.0)
        # accepted steps in a row whose actual and predicted decreases were both below ftol times
        # the cost: one such step may be one kept short by the damping after rejected trials, on a
        # plateau far from a minimum
        threshold = ftol * jnp.maximum(f, tiny)
        small = (actual <= threshold) & (lane["predicted"] <= threshold)
        quiet = jnp.where(accept & ~starting, jnp.where(small, lane["quiet"] + 1, 0), lane["quiet"])
        small_decrease = ~starting & accept & (quiet >= _QUIET_STEPS)
        # the last trial's step before projection (a projected one can vanish at a bound)
        small_step = ~starting & (jnp.max(jnp.abs(lane["delta"]) - xtol * (jnp.abs(lane["x"]) + xtol),
                                          initial=-1.0) <= 0)
        point, predicted, delta = trial(new_x, g, jtj, second, structured, damping, radius)
        # the first test that holds decides (-1: none, the lane goes on); a step shrunk below
        # xtol by trials whose residuals were not finite is no convergence
        tests = [(starting & ~good, FitStatus.NONFINITE),
                 (small_step & ~good, FitStatus.OPTIMIZER_FAILED),
                 ((accept & (pg <= gtol)) | small_decrease | small_step, FitStatus.CONVERGED),
                 (~jnp.isfinite(damping) | (damping > 1e30), FitStatus.OPTIMIZER_FAILED),
                 (accept & (n_iter >= max_iter), FitStatus.MAX_ITERATIONS),
                 (n_eval >= max_eval, FitStatus.MAX_EVALUATIONS)]
        status = jnp.asarray(-1)
        for holds, code in reversed(tests):
            status = jnp.where(holds, int(code), status)
        done = ~idle & (status >= 0)
        out = dict(lane, finished=done, phase=jnp.where(idle | done, _IDLE, _TRIAL).astype(jnp.int32),
                   point=jnp.where(done, new_x, point), x=new_x, f=new_f, g=g, jtj=jtj, second=second,
                   structured=structured, predicted=predicted, delta=delta,
                   damping=damping, factor=factor, radius=radius, n_iter=n_iter.astype(jnp.int32), n_eval=n_eval.astype(jnp.int32),
                   quiet=quiet.astype(jnp.int32),
                   status=jnp.where(done, status, lane["status"]).astype(jnp.int32))
        return jax.tree_util.tree_map(lambda a, b: jnp.where(idle, a, b), lane, out)

    return fresh, advance, functools.partial(_summary, lower=lower, upper=upper)


def _least_squares(residuals, x0, lower, upper, max_iter, max_eval, gtol, ftol, xtol, *, lanes, count=None):
    n = x0.shape[1]
    fresh, advance, summary = _lm_lane(n, lower, upper, max_iter, max_eval, gtol, ftol, xtol, x0.dtype)
    return _drive(residuals_and_jacobian(residuals, n), advance, fresh, summary, x0, lanes, count)


_least_squares_jit = codegen_jit(static_argnames=("residuals", "lanes"))(_least_squares)


def least_squares_bounded(residuals: Callable, x0: Any, lower: Any, upper: Any, *, max_iter: int = 200,
                          gtol: float = 1e-10, ftol: float = 1e-10, xtol: float = 1e-12, max_eval: int | None = None,
                          lanes: int | None = None, devices: Sequence[jax.Device] | None = None) -> BoundedResult:
    """Minimise ``0.5 * sum(residuals(x)**2)`` within the box ``[lower, upper]`` from every row
    of ``x0``: projected Levenberg-Marquardt.

    Each trial step solves the damped Gauss-Newton system ``(J^T J + lambda diag(J^T J)) d =
    -J^T r`` on the variables not held at a bound (Marquardt's scaling); variables the step
    carries through a bound stop there and the others solve again with them held. The step,
    projected into the box, is accepted when the actual decrease is at least 1e-4 of the
    decrease its linear model predicts for it; the damping follows Nielsen (1999). A trust
    region bounds the steps in widths of the box (the norm of ``d / (upper - lower)``, variables
    with an open bound not counted): a start's first step goes at most ``FIRST_STEP_BOUND``
    (0.25), and the bound doubles after a step that reached it with a decrease its model
    predicted well (at least 0.75 of it) and halves after one that fell short (under 0.25), so
    a start far from a minimum crosses the box in several steps instead of jumping to a far
    ridge. Where the
    residuals stay large, ``J^T J`` misses the Hessian's second-order part ``sum_i r_i
    hess(r_i)``: a structured secant update estimates it (Dennis, Gay & Welsch 1981, NL2SOL),
    and a step uses ``J^T J`` plus that estimate when this model predicted the last accepted
    step's decrease better than ``J^T J`` alone (Brown and Dennis's problem: 17-34 steps, 500
    without converging by Gauss-Newton's model alone) and that model, damped, is positive
    definite on the free variables (else it has no minimum, and the step is Gauss-Newton's).
    The Jacobian comes by forward mode (``n`` tangents in one pass) at every trial point.

    Parameters
    ----------
    residuals : callable
        ``residuals(x) -> (m,)``, ``x`` of shape ``(n,)``: pure JAX, e.g. weighted residuals
        ``(model - data) / sigma``.
    x0 : array_like
        ``(n_starts, n)``: the starts (projected into the box first).
    lower, upper : array_like
        ``(n,)`` (or scalars): the bounds; ``-inf``/``inf`` where open.

    Other Parameters
    ----------------
    max_iter : int
        Accepted steps per start (default 200).
    gtol : float
        Converged when the projected gradient's largest entry is at most this (default
        1e-10).
    ftol : float
        Converged when both the actual and the predicted decrease of three accepted steps in a
        row are at most ``ftol`` times the cost (default 1e-10; one such step can be one the
        damping kept short after rejected trials, on a plateau far from a minimum).
    xtol : float
        Converged when a trial step is below ``xtol * (|x| + xtol)`` in every variable
        (default 1e-12).
    max_eval : int, optional
        Evaluations (residuals with their Jacobian) per start (default ``10 * max_iter``, at
        least 1: ``max_iter=0`` evaluates the start only).
    lanes, devices : optional
        As for `minimize_bounded`.

    Returns
    -------
    BoundedResult
        As `minimize_bounded`'s; ``cost`` is ``0.5 * sum(r**2)`` and the gradient ``J^T r``.

    Raises
    ------
    ShapeError, InputError
        As for `minimize_bounded`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit.fitting import least_squares_bounded
    >>> residuals = lambda x: jnp.array([x[0] - 1.0, 10.0 * (x[1] - x[0] ** 2)])
    >>> out = least_squares_bounded(residuals, jnp.array([[-1.0, 1.0]]), jnp.array([-2.0, -2.0]),
    ...                             jnp.array([2.0, 0.5]))
    >>> out.x.round(4).tolist(), out.at_bound.tolist(), out.status.tolist()
    ([[0.7086, 0.5]], [[0, 1]], [0])
    """
    x0, lower, upper = _check("least_squares_bounded", x0, lower, upper)
    _check_tolerances("least_squares_bounded", gtol=gtol, ftol=ftol, xtol=xtol)
    _check_counts("least_squares_bounded", max_iter=max_iter, max_eval=max_eval)
    if max_eval is None:  # (max_iter = 0: the start's own evaluation)
        max_eval = 10 * max_iter if is_traced(max_iter) else max(10 * max_iter, 1)
    args = (x0, lower, upper, as_array(max_iter), as_array(max_eval), as_array(gtol, x0.dtype),
            as_array(ftol, x0.dtype), as_array(xtol, x0.dtype))
    traced = is_traced(args)
    with placement.fit_placed(x0.shape[0], devices, args):  # few starts: the host
        return _run_padded(_least_squares if traced else _least_squares_jit, residuals, args, lanes, devices, traced,
                           "least_squares_bounded")
