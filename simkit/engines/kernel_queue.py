"""Ensemble members on refilled lanes: one stepping loop over a queue of members.

``jax.vmap`` of a whole adaptive solve runs in lockstep: a chunk of lanes steps until its
slowest member is done, and the finished lanes idle (Lorenz, rho in [10, 50]: members take
250-590 steps, a 256-lane chunk runs about as many iterations as its slowest member).
Here the lanes take members from a queue instead. The loop runs at the level of the
chunk, and each iteration does three things:

1. one step attempt in every lane still stepping towards its next save time
   (`simkit.kernels.loop.stepper`, vmapped);
2. the save times the lanes have reached, interpolated in the step just taken (from its
   stages, which XLA fuses with the step) and written straight into the device's output;
   a step that covers several save times takes further passes, which redo its dense
   output (rare unless the save times are denser than the steps);
3. when 1/16 of the lanes (or the last ones) are done, a refill: their results are
   written out and the next members start there. The first-step estimate and the initial
   loop state cost about half a step at full width, hence the batching: a done lane waits
   for the refill.

Measured (`benchmarks/ensemble.py`, 2 cores): the lanes do useful work 92 % of the time on
Lorenz with rho in [10, 50] (lockstep chunks of 256: 61 %) and 80 % on van der Pol with mu
log-uniform in [0.1, 100] (54 %), but an iteration costs about a quarter more than a
lockstep one (the saves and the refill test run in every iteration): 1.0-1.25x the
solves per second of lockstep chunks, across runs.

Members that save at t0 and t1 only (``saveat=2``, or ``1``: the final state; `ends_only`)
skip that per-iteration work: the loop runs `BLOCK` attempts with nothing else, a lane that
reaches t1 waiting out the block, then the saves and the refill (whose new members save at
t0 at once). The same steps, counters and values as above, a lane idle for half a block per
member on average; Lorenz as above 1.13-1.18x the solves per second of the per-iteration
loop, van der Pol 1.04-1.06x (`benchmarks/experiments/queue_block_ab.py`: one process, the
two swapped between rounds; two runs). Denser save times would keep lanes waiting at every
save (1,000 saves: 4.5x slower), so they keep the loop above.

A block's loop is compiled as one kernel (`block_in_one_kernel`, `simkit._codegen.
one_kernel`) instead of XLA:CPU's sequence of about 30 thunks per attempt
(`benchmarks/experiments/queue_one_kernel_ab.py`, two runs: Lorenz with Tsit5 1.15x both
times, DOPRI5 1.00-1.26x, DOP853 1.06-1.09x, AutoSwitch 1.08-1.12x; van der Pol with Tsit5
1.22-1.23x, AutoSwitch 1.18-1.27x; the stiff kernels up to 8 states,
`queue_stiff_one_kernel_ab.py`: van der Pol 1.05-1.23x, Robertson 0.96x in the committed
run). The same bits as the thunks with Tsit5 and DOPRI5; DOP853's and the stiff kernels'
values differ from them in the last bits (the same steps and counters): their blocks and
their per-attempt loop round differently.

A member takes the same steps, with the same arithmetic, as it would in its own
`simkit.solve` (to the last bits, which differ between programs). In an ensemble, every
member's result is the same bits whatever its lane, the number of lanes or the device
count, because the lane counts are multiples of the CPU's vector width.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from .._codegen import fits_one_kernel, one_kernel
from ..kernels.linalg import SMALL_SYSTEM, lu_columns_by_select
from ..kernels.loop import RUNNING, initial_state, loop_stats, stepper
from ..save_times import program_save_times
from ..status import Status
from .kernel_engine import first_step
from .programs import KernelProgram
from .record import nonfinite_saves

REFILL_FRACTION = 16  # a refill waits for 1/16 of the lanes (or the last ones) to be done
BLOCK = 32  # attempts between save passes when members save at t0 and t1 only (`ends_only`)
NUM_RHS_FIRST_STEP = 2  # rhs evaluations of the first-step estimate (as `run_kernel` counts them)


def ends_only(program: KernelProgram) -> bool:
    """Whether the members save at t0 and t1 only (``saveat=2``, or ``1``: t1), the case
    `run_queue` steps in blocks of `BLOCK` attempts."""
    return program.save == "linspace" and program.n_save <= 2


def block_in_one_kernel(method: Any, rhs, t, y, params: dict) -> bool:
    """Whether a block's attempts compile as one kernel (`simkit._codegen.one_kernel`):
    when the vmapped rhs uses only operations that kernel takes (`fits_one_kernel`; others
    keep XLA's thunks), for every method up to `simkit.kernels.linalg.SMALL_SYSTEM` states
    (a stiff method above calls LAPACK, which such a kernel cannot hold). Measured as one
    kernel (the module's docstring): explicit methods and AutoSwitch 1.0-1.27x; the stiff
    kernels on van der Pol, with the LU's columns written by selects inside the kernel
    (`simkit.kernels.linalg.lu_columns_by_select`), in the committed run Rodas4 1.05x,
    Rodas5P 1.13x, Radau IIA 1.17x, BDF 1.23x (three runs: 0.92-1.32x, BDF 1.11x and more
    in each), Robertson with Rodas5P 0.96x (0.96-1.04x), and a faster first call in all
    but the last (compiling and running: 3.2-4.5 s against 3.4-5.3 s)."""
    if method.implicit and y.shape[-1] > SMALL_SYSTEM:
        return False
    jaxpr = jax.make_jaxpr(jax.vmap(rhs, in_axes=(None, 0, 0)))(t, y, params)
    return fits_one_kernel(jaxpr)


def queue_eligible(program: Any) -> bool:
    """Whether `run_queue` runs ``program``: a kernel solve saving at given times (no
    events, no dense output, not every step)."""
    return (isinstance(program, KernelProgram) and not program.events and not program.dense
            and program.save in ("linspace", "ts"))


def run_queue(program: KernelProgram, args, params: dict, y0: jax.Array, lanes: int) -> dict[str, Any]:
    """Solve every member (the leading axis of ``y0``, shape ``(members, n)``, and of each
    ``params`` value) on ``lanes`` refilled lanes; ``args`` holds the shared settings (a
    `simkit._prepare.SolveArgs`). ``lanes`` should be as `simkit._ensemble.lanes_per_device`
    gives them (a multiple of the CPU's vector width, at least four vectors), for results
    that do not depend on the lanes. Returns ts, ys, status,
    stats, t_final and y_final with a leading member axis, as ``jax.vmap`` of
    `simkit.engines.run_kernel` would.

    With at least as many lanes as members (no queue), lane ``i`` holds member ``i`` to its
    end: results are written in place (selects, not scatters) when the loop ends, and a
    lane that ends computes no new member (a restart at full width, at every iteration once
    the first lane ended: on a TPU v5e, 10^5 Lorenz members on 10^5 lanes ran at 36,000
    solves/s before, 0.96 million after)."""
    method = program.solver.method()
    rhs = program.rhs
    members = y0.shape[0]
    lanes = min(lanes, members)
    in_place = lanes == members  # lane i holds member i: no queue
    batch = max(1, lanes // REFILL_FRACTION)  # done lanes a refill waits for
    dtype = jnp.real(y0).dtype
    t0, t1, rtol, atol = args.t0, args.t1, args.rtol, args.atol
    direction = jnp.where(t1 >= t0, 1.0, -1.0).astype(dtype)
    save_ts = program_save_times(program.save, program.n_save, t0, t1, args.save_ts)
    n_save = save_ts.shape[0]
    targets = jnp.concatenate([save_ts, jnp.reshape(t1, (1,)).astype(save_ts.dtype)])
    n_targets = n_save + 1  # the save times, then t1

    def parts(p):
        return stepper(method, rhs, t0, t1, p, rtol, atol, args.max_step, max_steps=program.max_steps,
                       dtype=dtype)

    def start(y, p):  # a member's loop state before its first step, as `run_kernel` builds it
        dt0 = first_step(program, args._replace(y0=y, params=p))
        return initial_state(method, rhs, t0, t1, y, p, rtol, atol, dt0, max_steps=program.max_steps)

    def target_of(k):
        return targets[jnp.minimum(k, n_targets - 1)]

    def covered(c, k):  # the lane's next save time (or t1) is reached
        return direction * (target_of(k) - c["t"]) <= 0

    def lane_step(c, p, k):
        attempt, running, _ = parts(p)
        new, _, full = attempt(c)
        go = running(c) & ~covered(c, k)
        return jax.tree_util.tree_map(lambda a, b: jnp.where(go, a, b), new, c), full

    def take(tree, index):
        return jax.tree_util.tree_map(lambda a: a[index], tree)

    def put(tree, index, value):  # rows ``index`` of every leaf (out of range: dropped)
        if in_place:  # ``index`` is the lane's own row, or out of range
            keep = index == jnp.arange(lanes)
            return jax.tree_util.tree_map(
                lambda a, v: jnp.where(keep.reshape(keep.shape + (1,) * (a.ndim - 1)), v, a), tree, value)
        return jax.tree_util.tree_map(lambda a, v: a.at[index].set(v, mode="drop"), tree, value)

    first = jnp.arange(lanes, dtype=jnp.int32)
    p0 = take(params, first)
    c0 = jax.vmap(start)(y0[:lanes], p0)
    stats_shape = jax.eval_shape(lambda c: loop_stats(method, c), take(c0, 0))
    out0 = dict(
        ys=jnp.zeros((members, n_save) + y0.shape[1:], y0.dtype),
        status=jnp.zeros((members,), jnp.int32), t_final=jnp.zeros((members,), dtype),
        y_final=jnp.zeros_like(y0),
        stats=jax.tree_util.tree_map(lambda s: jnp.zeros((members,), s.dtype), stats_shape),
    )
    s0 = dict(c=c0, p=p0, m=first, k=jnp.zeros((lanes,), jnp.int32), next=jnp.asarray(lanes, jnp.int32),
              out=out0)

    def active(s):  # a lane still holding a member (in place: one with targets left)
        return s["k"] < n_targets if in_place else s["m"] < members

    def saves_due(s):  # a reached save time not yet written, or a member that stopped early
        due = jax.vmap(lambda c, p, k: (k < n_targets) & (covered(c, k) | ~parts(p)[1](c)))(s["c"], s["p"], s["k"])
        return active(s) & due

    def save_pass(s, full=None):
        # the save time each due lane has reached, interpolated in the step just taken
        # (``full``: this iteration's step, as it came out of the attempt; None: redone
        # from the loop state, for a step that covers several save times); a member that
        # has not stepped yet is at t0 and saves its state (as `adaptive_loop` does, at
        # theta = 0); a member that stopped early saves its last state
        due = saves_due(s)

        def value(c, p, k, full):
            if full is None:
                full = parts(p)[2](c["seg"])
            theta = (target_of(k) - full["t"]) / full["hs"]
            interp = method.interpolate(rhs, p, full, theta)
            return jnp.where(covered(c, k) & (c["n_steps"] > 0), interp, c["y"])

        values = jax.vmap(value)(s["c"], s["p"], s["k"], full)
        row = jnp.where(due & (s["k"] < n_save), s["m"], members)  # out of range: dropped
        if in_place:  # distinct rows in order (out of range: a save index past the end)
            col = jnp.where(row < members, s["k"], n_save)
            ys = s["out"]["ys"].at[first, col].set(values, mode="drop", indices_are_sorted=True,
                                                   unique_indices=True)
        else:
            ys = s["out"]["ys"].at[row, jnp.minimum(s["k"], n_save - 1)].set(values, mode="drop")
        return s | dict(k=s["k"] + due.astype(jnp.int32), out=s["out"] | dict(ys=ys))

    def results(s, done):  # the out arrays with the results of the ``done`` lanes at their members' rows
        c = s["c"]
        row = jnp.where(done, s["m"], members)
        status = jnp.where(c["status"] == RUNNING, int(Status.MAX_STEPS), c["status"]).astype(jnp.int32)
        stats = jax.vmap(lambda c: loop_stats(method, c))(c)
        stats["num_rhs"] = stats["num_rhs"] + NUM_RHS_FIRST_STEP
        return s["out"] | put(dict(status=s["out"]["status"], t_final=s["out"]["t_final"],
                                   y_final=s["out"]["y_final"], stats=s["out"]["stats"]), row,
                              dict(status=status, t_final=c["t"], y_final=c["y"], stats=stats))

    def refill(s):
        done = active(s) & (s["k"] == n_targets)
        c, out = s["c"], results(s, done)
        # the next members start there, in the order of the lanes; once the queue is
        # empty, the lanes left over go idle. The new states are computed at full width
        # and selected (gathering the done lanes and scattering into every leaf of the
        # loop state measured no faster)
        member = s["next"] + jnp.cumsum(done, dtype=jnp.int32) - 1
        fill = done & (member < members)
        src = jnp.where(fill, member, 0)
        p_new = take(params, src)
        c_new = jax.vmap(start)(y0[src], p_new)

        def pick(new, old):
            return jnp.where(fill.reshape(fill.shape + (1,) * (new.ndim - 1)), new, old)

        return s | dict(c=jax.tree_util.tree_map(pick, c_new, c), p=jax.tree_util.tree_map(pick, p_new, s["p"]),
                        m=jnp.where(fill, member, jnp.where(done, members, s["m"])),
                        k=jnp.where(fill, 0, s["k"]), next=s["next"] + jnp.sum(fill, dtype=jnp.int32), out=out)

    def refill_due(s):
        done = active(s) & (s["k"] == n_targets)
        n_done = jnp.sum(done, dtype=jnp.int32)
        # a full batch, or every active lane done, or the queue empty (they retire)
        return (n_done >= batch) | ((n_done > 0) & ((n_done == jnp.sum(active(s), dtype=jnp.int32))
                                                    | (s["next"] >= members)))

    def pass_t1(s):
        # t1 itself, the last target, saves nothing: passed over at once (a member that
        # saves at t1, as most do, would otherwise need a second pass when it ends)
        return s | dict(k=s["k"] + (saves_due(s) & (s["k"] == n_save)).astype(jnp.int32))

    def save_rest(s):
        # passes that redo a step's dense output, while saves are due (behind a
        # conditional: XLA would hoist that loop-invariant work out of a bare while loop,
        # into every iteration)
        return lax.cond(jnp.any(saves_due(s)),
                        lambda s: lax.while_loop(lambda s: jnp.any(saves_due(s)), save_pass, s), lambda s: s, s)

    def maybe_refill(s, fill):
        if in_place:  # nothing queued: a lane that ends keeps its state until the loop ends
            return s
        return lax.cond(refill_due(s), fill, lambda s: s, s)

    def body(s):
        c, full = jax.vmap(lane_step)(s["c"], s["p"], s["k"])
        s = s | dict(c=c)
        # one pass straight from the step's stages (XLA fuses it with them), then, when a
        # step covered several save times, more passes
        s = save_rest(pass_t1(save_pass(s, full)))
        return maybe_refill(s, refill)

    def block_body(s):
        # members saving at t0 and t1 only: `BLOCK` attempts with nothing else, a lane that
        # reaches t1 waiting out the block; then its saves, and a refill whose new members
        # save at t0 before the next block
        def steps(c, p, k):
            return lax.fori_loop(0, BLOCK, lambda _, c: jax.vmap(lane_step)(c, p, k)[0], c)

        if whole:
            with lu_columns_by_select():  # a stiff phase's LU, inside the kernel
                c = one_kernel(steps, s["c"], s["p"], s["k"])
        else:
            c = steps(s["c"], s["p"], s["k"])
        s = pass_t1(save_rest(s | dict(c=c)))
        return maybe_refill(s, lambda s: save_rest(refill(s)))

    if ends_only(program):
        s0 = save_rest(s0)  # the first members' saves at t0
        whole = block_in_one_kernel(method, rhs, t0, y0[:lanes], p0)
        body = block_body
    s = lax.while_loop(lambda s: jnp.any(active(s)), body, s0)
    out = results(s, jnp.full((lanes,), True)) if in_place else s["out"]
    reached = direction * (save_ts[None, :] - out["t_final"][:, None]) <= 0
    ts = jnp.where(reached, save_ts[None, :], jnp.inf)
    ys = jnp.where(reached[..., None], out["ys"], out["y_final"][:, None, :])
    return dict(ts=ts, ys=ys, status=nonfinite_saves(out["status"], ys), stats=out["stats"],
                t_final=out["t_final"], y_final=out["y_final"])
