"""`ensemble`: many solves of one model, on refilled lanes or in vmapped chunks, sharded over devices.

The call is prepared once by `simkit._prepare.prepare` (the same checks as `simkit.solve`);
no model is rebuilt per member, and the member axis is split over the local devices by
``jax.shard_map`` so that each device stops when its own members are done. On a device:

* **Refilled lanes** (the default for simkit's kernels saving at given times, without
  events, on CPUs and GPUs): ``chunk_size`` lanes step together and each takes the next member from the
  device's queue when its own is done (`simkit.engines.kernel_queue`).
* **Lockstep chunks** (on a TPU, ``refill=False``, ``balance=True``, events, dense output, every
  step saved, diffrax solvers, stochastic models): ``jax.vmap`` of the engine over chunks
  of a few hundred members (``lax.map`` over chunks keeps a chunk's state in cache); a
  chunk runs until its slowest member is done. With ``balance=True`` a cheap pilot solve
  (tolerance 1e3 looser, no saving) estimates each member's step count and members of
  similar cost share chunks. Measured (benchmarks/ensemble.py, 2 cores): the grouping
  lifts lockstep efficiency from 63% to 89% on Lorenz, but the pilot costs about what it
  saves, so it is off by default.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from . import _config, engines
from . import progress as _progress
from ._prepare import DEFAULT_RTOL, check_count, check_flag, check_rhs, merge_params, prepare
from ._solve import warn_below_normal
from .engines.kernel_queue import queue_eligible, run_queue
from .ensemble_solution import EnsembleSolution
from .errors import InputError, InputTypeError, ParameterError, ShapeError
from .model import ODEModel
from .parallel.agreement import same_call
from .parallel.mesh import MEMBER_AXIS, gather, member_mesh, place
from .placement import prepare_for_platform, warn_if_emulated
from .params import refuse_traced
from .status import Status

MAX_BATCHES = 20  # host-level batches when a progress bar is wanted
DEFAULT_CHUNK = 256  # members per vmapped chunk on CPUs: measured cache-friendly (notes)
ACCELERATOR_CHUNK = 2**17  # lanes per accelerator: a narrow loop is launch-bound there, and a
# refilled queue needs more members than lanes. Measured on an H200 (benchmarks/results/
# gpu_ensemble.json, lane counts interleaved): 1M Lorenz members fastest at 2^17 in float64
# (2^15: 0.82x, 2^20: 0.74x), within 2 % of 2^18 in float32; 100k Robertson members on 100k lanes
REFILL_DEFAULT = {"tpu": False}  # where lockstep chunks are the default (elsewhere refilled
# lanes). Measured on a TPU v5e (benchmarks/results/accelerator_ensemble_schedules.json, Lorenz,
# float32, final state): 10^5 members 0.96 million solves/s refilled (one lane per member)
# against 1.39 million in a chunk; 10^6 members 0.36 million on 2^17 refilled lanes against
# 2.05 million in chunks of 2^17. On an H200, 2^17 refilled lanes ran 10^6 members at 2.4 million/s.
MEMBERS_PER_LANE = 16  # on a CPU, fewer refilled lanes than DEFAULT_CHUNK where a device has
MIN_QUEUE_LANES = 64  # fewer than 16 members per lane (but at least 64 lanes, and only where
MIN_NARROWED = 3  # those get 3 members each or more): once the queue is empty, its last
# members run on a few lanes while the others idle at the loop's full width, a drain of about
# one slow member's steps. Measured (2 cores, 15 interleaved rounds, against
# 256 lanes): van der Pol, mu log-uniform in [0.1, 100]: 500 members 1.27x,
# 2,500 1.07-1.09x; Lorenz, rho in [10, 50]: 500 1.15x, 2,000 1.09-1.11x; 10,000 of either
# 1.00x (256 kept). Below 3 members per lane a second round for a few members cost more:
# van der Pol with 130 members on 64 lanes 0.72x, Lorenz with 300 on 64 0.92x.
ACCELERATOR_LANE_BYTES = 2**31  # on an accelerator, lanes are also capped so that their
# estimated loop state (`lane_state_bytes`) stays within 2 GiB: 2^17 lanes of a 64-state stiff
# kernel would hold about 27 GiB (a Jacobian and its LU per lane). An estimate, not measured on
# a small GPU; the measured 3-state runs (gpu_ensemble.json) are below it at 2^17 lanes.
VECTOR_BYTES = 64  # chunks are a multiple of the CPU's vector width (64 bytes, AVX-512: 8
# doubles, 16 floats, `vector_width`): a member's result is then the same bits whatever the
# chunk size or device count. Lanes that fall into XLA's scalar remainder loop round
# differently (measured: 1e-11 apart after t = 5 on Lorenz, 1e-7 after t = 10). One, two and
# three vectors' worth are avoided too, each measured to round apart from 4, 5, 6, ... 16
# vectors: XLA:CPU's code for 16 doubles rounded lanes 8-11 of every 16 differently (2e-8
# apart after t = 10 on Lorenz, refilled and lockstep); with the kernels' step as t_new -
# t, its code for 24 rounded lanes 12-15 of every 24 apart (1e-14 after t = 3);
# one vector (8 doubles) gave other bits with diffrax's Tsit5 (224 of 256 Lorenz members,
# 1e-9 apart at t = 5; RadauIIA5 and ImplicitEuler as well); and in float32, lockstep chunks
# of 16 floats and of 2, 2.5 and 3 vectors (32, 40, 48 lanes) differed from 64 ... 256 (up to
# 0.23 after t = 5 on Lorenz, with other step counts). So a
# chunk is at least four vectors: 32 lanes in float64, 64 in float32.


def vector_width() -> int:
    """Lanes per CPU vector: `VECTOR_BYTES` over the itemsize of simkit's float dtype."""
    return VECTOR_BYTES // np.dtype(_config.float_dtype()).itemsize


@dataclasses.dataclass(frozen=True)
class EnsembleProgram:
    """Static structure of an ensemble: the members' engine program, chunking and devices."""

    engine: Any  # a KernelProgram or DiffraxProgram (simkit.engines)
    chunk: int  # members per vmapped chunk, or lanes of the refilled queue
    devices: tuple  # the member axis is sharded over these (jax devices are hashable)
    queue: bool = False  # members on refilled lanes (simkit.engines.kernel_queue), not in chunks


def _member_arrays(model: ODEModel, params: dict | None, y0: Any) -> tuple[int, dict, Any]:
    dtype = np.dtype(_config.float_dtype())
    sizes: dict[str, int] = {}
    merged = merge_params(model.params, params, owner=f"model {model.name!r}", batched=True)
    for name in params or {}:
        value = merged[name]
        default_shape = np.shape(model.params[name])
        shape = np.shape(value)
        if shape == default_shape:
            continue
        if shape[1:] != default_shape:
            raise ShapeError(f"parameter {name!r}: expected shape {default_shape} (one value for all "
                             f"members) or (members,) + {default_shape}, got {shape}")
        sizes[f"parameter {name!r}"] = shape[0]
    # complex members are not supported yet (simkit.solve takes a complex y0): refused rather
    # than cast to real, which drops the imaginary part
    complex_params = [name for name in params or {} if np.iscomplexobj(merged[name])]
    if complex_params or (y0 is not None and np.iscomplexobj(y0)) or np.iscomplexobj(model.y0):
        what = f"parameter(s) {complex_params}" if complex_params else "y0"
        raise InputTypeError(f"ensemble(): complex values in {what}: ensembles take real values (solve each "
                             "complex member with simkit.solve, or write the state as real and imaginary parts)")
    try:
        y0_arr = np.asarray(model.y0 if y0 is None else y0, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise InputTypeError(f"ensemble(): y0 must be a numeric array of shape ({model.n_states},) or "
                             f"(members, {model.n_states}), got {y0!r:.80}") from err
    n = model.n_states
    if y0_arr.shape == (n,):
        pass
    elif y0_arr.ndim == 2 and y0_arr.shape[1] == n:
        sizes["y0"] = y0_arr.shape[0]
    else:
        raise ShapeError(f"y0: expected shape ({n},) or (members, {n}), got {y0_arr.shape}")
    if not sizes:
        raise ShapeError("ensemble(): nothing is batched: give params or y0 a leading member "
                         "axis (or use simkit.solve for one member)")
    if len(set(sizes.values())) != 1:
        raise ShapeError(f"ensemble(): member counts disagree: {sizes}")
    members = next(iter(sizes.values()))
    out = {}
    for name, value in merged.items():
        arr = np.asarray(value, dtype=dtype)
        default_shape = np.shape(model.params[name])
        out[name] = np.broadcast_to(arr, (members,) + default_shape) if arr.shape == default_shape else arr
        if not np.all(np.isfinite(out[name])):
            bad = np.flatnonzero(~np.isfinite(out[name]).reshape(members, -1).all(axis=1))
            raise ParameterError(f"parameter {name!r} is not finite for members {bad[:10].tolist()}")
    y0_b = np.broadcast_to(y0_arr, (members, n))
    if not np.all(np.isfinite(y0_b)):
        raise ParameterError("y0 is not finite for some members")
    return members, out, y0_b


def lane_state_bytes(n_states: int, implicit: bool, itemsize: int) -> int:
    """An estimate of one lane's loop state, temporaries included (twice the state): about
    24 vectors of the state (the stages, the error estimate, the saved values) and, for an
    implicit method, three matrices (the Jacobian, its LU, a Newton or stage matrix)."""
    return 2 * itemsize * (24 * n_states + (3 * n_states**2 if implicit else 0))


def lanes_per_device(per_device: int, platform: str, queue: bool, fits: int, chunk_size: int | None = None,
                     lane_bytes: int = 0) -> int:
    """The lanes (refilled queue) or members per vmapped chunk (lockstep) on each device:
    ``chunk_size`` if given (at most ``per_device``), else `DEFAULT_CHUNK` on a CPU (on refilled lanes fewer where a
    device has under `MEMBERS_PER_LANE` members per lane: at least `MIN_QUEUE_LANES`, each
    with `MIN_NARROWED` members or more) and `ACCELERATOR_CHUNK` elsewhere (there at most
    `ACCELERATOR_LANE_BYTES` of ``lane_bytes`` per lane, `lane_state_bytes`), at most
    ``per_device`` members and ``fits`` (the memory budget's); rounded up to a multiple of
    the vector width (`vector_width`), at least four vectors (`VECTOR_BYTES`' note) unless
    ``fits`` allows fewer."""
    width = vector_width()
    cap = DEFAULT_CHUNK if platform == "cpu" else ACCELERATOR_CHUNK
    if platform != "cpu" and lane_bytes:
        cap = min(cap, max(width, ACCELERATOR_LANE_BYTES // lane_bytes))
    if queue and platform == "cpu" and per_device >= MIN_NARROWED * MIN_QUEUE_LANES:
        cap = min(cap, max(MIN_QUEUE_LANES, per_device // MEMBERS_PER_LANE))
    # a chunk_size above the members was taken as it was: 37 members padded to 2e9 lanes (22 GB, killed)
    chunk = int(min(chunk_size, per_device) if chunk_size else min(cap, per_device, fits))
    chunk = width * max(4, math.ceil(chunk / width))
    if chunk > fits and fits < 4 * width:  # members too large for four vectors of them: what fits
        chunk = width * max(1, fits // width)
    return chunk


def _implicit(program: Any) -> bool:
    """Whether the members' engine program builds a Jacobian (unknown: assumed so)."""
    if isinstance(program, engines.KernelProgram):
        return bool(program.solver.method().implicit)
    from .solvers import is_diffrax_solver, is_implicit

    solver = getattr(program, "solver", None)
    return is_implicit(solver) if is_diffrax_solver(solver) else True


def host_batches(chunks: int, batched: bool, queue: bool) -> tuple[int, int]:
    """``(n_batches, chunks per batch)``: the host-level batches a device's ``chunks`` run in
    when a progress bar is wanted (``batched``; else one batch). Lockstep chunks: at most
    `MAX_BATCHES`, padding under one batch. A refilled queue runs each batch as a queue of its
    own, and a batch of one member per lane runs in lockstep (10,000 Lorenz members 1.65x
    slower, 2,500 van der Pol members 1.9x, with a bar), so each batch takes
    `MEMBERS_PER_LANE` chunks or more (no batches under twice that), the count between half
    that allowed and all of it that pads least."""
    if not batched:
        return 1, chunks
    if not queue:
        per_batch = math.ceil(chunks / MAX_BATCHES)
        return math.ceil(chunks / per_batch), per_batch
    most = min(MAX_BATCHES, chunks // MEMBERS_PER_LANE)
    if most < 2:
        return 1, chunks
    n = min(range(max(2, math.ceil(most / 2)), most + 1), key=lambda b: (b * math.ceil(chunks / b) - chunks, -b))
    return n, math.ceil(chunks / n)


def _run_members(program: EnsembleProgram, args, params, y0, keys):
    """All members on one device: on refilled lanes, or lax.map over chunks of the vmapped engine."""
    if program.queue:
        return run_queue(program.engine, args, params, y0, program.chunk)

    def one(p, y, k):
        out = engines.run(program.engine, args._replace(params=p, y0=y, key=k if args.key is not None else None))
        events = (dict(event_ts=out.event_ts, event_ys=out.event_ys, event_counts=out.event_counts)
                  if program.engine.events else {})
        return dict(ts=out.ts, ys=out.ys, status=out.status, stats=out.stats,
                    t_final=out.t_final, y_final=out.y_final, **events)

    count = y0.shape[0]
    chunks = count // program.chunk
    shaped = jax.tree_util.tree_map(lambda a: a.reshape((chunks, program.chunk) + a.shape[1:]),
                                    (params, y0, keys))
    out = jax.lax.map(lambda pc: jax.vmap(one)(*pc), shaped)
    return jax.tree_util.tree_map(lambda a: a.reshape((count,) + a.shape[2:]), out)


@functools.partial(jax.jit, static_argnames=("program",))
def _run(program: EnsembleProgram, args, params, y0, keys):
    run = functools.partial(_run_members, program, args)
    if len(program.devices) == 1:
        return run(params, y0, keys)
    mesh = member_mesh(program.devices)
    spec = PartitionSpec(MEMBER_AXIS)
    sharded = jax.shard_map(lambda p, y, k: run(p, y, k), mesh=mesh, in_specs=(spec, spec, spec),
                            out_specs=spec, check_vma=False)
    return sharded(params, y0, keys)


def _shard_map_fails(engine: Any) -> bool:
    """Whether the members' engine cannot run under ``jax.shard_map``: a diffrax solver with a
    Newton iteration (Kvaerno, implicit Euler...) stops there in lineax with "pytree does not
    match out_structure" (https://github.com/patrick-kidger/lineax/issues/185, open; diffrax
    0.7.2, lineax 0.1.1, JAX 0.10)."""
    return isinstance(engine, engines.DiffraxProgram) and _implicit(engine)


def _dispatch(program: EnsembleProgram, args, params: dict, y0: np.ndarray, keys: np.ndarray) -> Callable:
    """Start the members (host arrays, device-major blocks of equal size) on the program's
    devices (a sharded program returns at once; a single-device one runs before this returns
    when JAX's asynchronous CPU dispatch is off); returns the function that waits and gives
    the host result. One sharded program over the devices, or, where the engine cannot run
    under ``shard_map`` (`_shard_map_fails`) and every device is this process's, one program
    per device. With
    JAX's asynchronous CPU dispatch off (simkit's default, `simkit._config`) those run one
    after another, and that was faster: 512 van der Pol members with diffrax's Kvaerno5 on 2
    CPU devices took 2.17 s, against 3.08 s run side by side (and 3.1 s from one thread each;
    one device: 2.14 s)."""
    devices = list(program.devices)
    local = all(d.process_index == jax.process_index() for d in devices)
    if len(devices) == 1 or not (local and _shard_map_fails(program.engine)):
        out = _run(program, args, _put(params, devices), _put(y0, devices), _put(keys, devices))
        return lambda: jax.tree_util.tree_map(gather, out)
    n = y0.shape[0] // len(devices)
    outs = []
    for i, device in enumerate(devices):
        rows = slice(i * n, (i + 1) * n)
        outs.append(_run(dataclasses.replace(program, devices=(device,)), args,
                         _put({k: v[rows] for k, v in params.items()}, [device]), _put(y0[rows], [device]),
                         _put(keys[rows], [device])))
    return lambda: jax.tree_util.tree_map(lambda *a: np.concatenate([gather(x) for x in a]), *outs)


def _pilot_steps(program: EnsembleProgram, args, params, y0, keys) -> np.ndarray:
    """Estimated step count of each member: a solve 1e3x looser, saving only the end."""
    pilot = dataclasses.replace(program, engine=dataclasses.replace(program.engine, save="linspace", n_save=2))
    loose = args._replace(rtol=jnp.minimum(args.rtol * 1e3, 1e-2), atol=args.atol * 1e3,
                          save_ts=jnp.zeros((0,), args.t0.dtype))
    return _dispatch(pilot, loose, params, y0, keys)()["stats"]["num_steps"]


@_config.simkit_call()
def ensemble(
    model: ODEModel,
    t_span: Sequence[float] | None = None,
    *,
    params: dict[str, Any] | None = None,
    y0: Any = None,
    saveat: Any = None,
    solver: Any = None,
    rtol: float = DEFAULT_RTOL,
    atol: float | jax.typing.ArrayLike = 1e-9,
    max_steps: int = 100_000,
    max_step: float | None = None,
    dt0: float | None = None,
    events: Any = None,
    chunk_size: int | None = None,
    memory_budget: int = 256 * 2**20,
    devices: Sequence[Any] | None = None,
    balance: bool = False,
    refill: bool | None = None,
    key: Any = None,
    progress: bool | None = None,
) -> EnsembleSolution:
    """Solve ``model`` for many members at once.

    The arguments are those of `simkit.solve` listed below (not ``dense`` or ``throw``:
    failed members are reported, never raised), except that `params` values and `y0` may
    carry a leading member axis; unbatched values are shared by all members. Events stop
    members (`EnsembleSolution.t_final`) and are recorded per member
    (`EnsembleSolution.t_events`). A member's
    result equals its own `simkit.solve` to rounding (batched code is vectorised and rounds
    differently in the last bits; on chaotic models that grows along the trajectory like
    any perturbation, and where it tips a step-size decision the member takes other steps
    and differs by about the tolerance: docs/ensembles.md).

    Parameters
    ----------
    model : ODEModel
        The model (deterministic, or stochastic with ``model.diffusion``).
    t_span : (float, float), optional
        ``(t0, t1)``, shared by every member; defaults to ``model.t_span``.
    params : dict, optional
        Parameter overrides by name; a value of shape ``(members,)`` (or ``(members,) +
        shape``) gives each member its own, e.g. ``params={"rho": rhos}``.
    y0 : array_like, optional
        Initial state, ``(n_states,)`` shared or ``(members, n_states)`` per member.
    saveat, solver, rtol, atol, max_steps, max_step, dt0, events
        As in `simkit.solve`, shared by every member (a stochastic model's fixed step is
        ``dt0``, at most ``max_step``).
    chunk_size : int, optional
        Lanes per device of the refilled queue, or members per vmapped chunk in lockstep
        (default 256 on a CPU, 131,072 on an accelerator; fewer for small ensembles or to fit
        ``memory_budget``, and on a CPU's refilled lanes at least 16 members per lane where
        that leaves 64 lanes of 3 members or more; rounded up to a multiple of the vector
        width, at least four vectors: 32 lanes in float64, 64 in float32). A larger value
        than the members per device is taken as the members per device. Results do not
        depend on it, nor on the devices, bit for bit.
    memory_budget : int
        Bytes one chunk's saved trajectories may take (default 256 MiB); the default chunk
        size shrinks to fit it.
    devices : sequence of jax.Device, optional
        Devices to shard members over (default: all local devices; under
        `jax.distributed`, ``jax.devices()`` spans every process: each process passes the
        same arguments and gets the whole result).
    balance : bool
        Group members of similar estimated cost (a pilot solve) into chunks (never for
        stochastic models: their cost is fixed by ``dt0``). Off by default: on the
        benchmarks the pilot costs about what the grouping saves (see the module docstring).
    refill : bool, optional
        Run the members of a device on ``chunk_size`` lanes that take the next member as
        soon as they finish (`simkit.engines.kernel_queue`), for simkit's kernels
        saving at given times without events. ``False``, or ``balance``, events, dense
        output, ``saveat="steps"``, diffrax solvers and stochastic models: chunks of
        ``jax.vmap``-ed solves, each running until its slowest member is done. Default
        (None): refilled lanes on CPUs and GPUs, chunks on a TPU (`REFILL_DEFAULT`).
    key : jax.Array, optional
        For stochastic models, one ``jax.random`` key; member ``i`` gets
        ``jax.random.split(key, members)[i]``: reproducible and independent of chunking.
    progress : bool, optional
        Run in up to 20 host-level batches of chunks and show a ``tqdm`` progress bar of the
        members done (`simkit.progress`; refilled lanes: batches of 16 members per lane or
        more, so a smaller ensemble runs as one batch). ``None`` (default):
        ``SIMKIT_PROGRESS`` (``0`` off, ``1`` on), else when stderr is a terminal or in a
        Jupyter notebook, once the run has taken 3 s. Results are unchanged.

    Returns
    -------
    EnsembleSolution
        ``ys`` of shape ``(members, n_save, n_states)`` and a status per member; failed
        members are reported there (``failures``) and never stop the others.

    Raises
    ------
    InputError, ShapeError, ParameterError, InputTypeError
        Bad inputs, as in `simkit.solve` (also batched values whose member counts differ),
        before compiling; `InputTypeError` too under ``jax.jit``/``grad``/``vmap`` (an
        ensemble is not differentiable: ``jax.vmap`` of `simkit.solve` is).

    Examples
    --------
    >>> import jax.numpy as jnp, simkit
    >>> ens = simkit.ensemble(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11,
    ...                       params={"rho": jnp.linspace(10.0, 50.0, 16)})
    >>> ens.ys.shape, ens.failures
    ((16, 11, 3), {})
    """
    if not isinstance(model, ODEModel):
        raise InputTypeError(f"ensemble() expects an ODEModel, got {type(model).__name__}")
    refuse_traced("simkit.ensemble", "to differentiate or transform many solves, use jax.vmap of simkit.solve",
                  t_span, params, y0, saveat, rtol, atol, max_step, dt0, key)
    balance = check_flag("balance", balance)
    refill = check_flag("refill", refill, allow_none=True)
    members, p_b, y0_b = _member_arrays(model, params, y0)
    if members == 0:
        raise ShapeError("ensemble(): the member axis is empty (0 members)")
    plan = prepare(model, t_span, y0=y0_b, params=p_b, saveat=saveat, solver=solver, rtol=rtol, atol=atol,
                   max_steps=max_steps, max_step=max_step, dt0=dt0, events=events, key=key, batched=True)
    if plan.saveat.dense:  # an EnsembleSolution keeps no interpolant (it was dropped in silence)
        raise InputError("ensemble(): dense output (SaveAt(dense=True)) is not kept per member: save at the "
                         "times you need (saveat=[...]), or call simkit.solve(..., dense=True) for one member")
    check_rhs(model, y0_b[0], {k: v[0] for k, v in p_b.items()}, _config.float_dtype())
    dtype = _config.float_dtype()
    if isinstance(devices, jax.Device):
        raise InputTypeError(f"ensemble(): devices takes a list of devices, e.g. [{devices}], got one device")
    devices = list(jax.local_devices() if devices is None else devices)
    if not devices:
        raise InputError("ensemble(): devices is empty: pass at least one device (default: all local devices)")
    if not all(isinstance(d, jax.Device) for d in devices) or len(set(devices)) != len(devices):
        raise InputError(f"ensemble(): devices must be distinct jax devices, got {devices}")
    n_dev = len(devices)
    prepare_for_platform(plan.solver, devices[0].platform, "simkit.ensemble")
    warn_if_emulated(devices[0].platform, dtype, "simkit.ensemble")
    per_device = math.ceil(members / n_dev)
    if chunk_size is not None:
        check_count("chunk_size", chunk_size)
    check_count("memory_budget", memory_budget)
    n_save = plan.saveat.count if plan.saveat.count is not None else max_steps + 1
    member_bytes = 2 * n_save * model.n_states * np.dtype(dtype).itemsize  # ys + its update
    fits = max(1, int(memory_budget) // member_bytes)
    stochastic = model.diffusion is not None
    if refill is None:
        refill = REFILL_DEFAULT.get(devices[0].platform, True)
    queue = bool(refill) and not balance and not stochastic and queue_eligible(plan.program)
    lane_bytes = lane_state_bytes(model.n_states, _implicit(plan.program), np.dtype(dtype).itemsize)
    chunk = lanes_per_device(per_device, devices[0].platform, queue, fits, chunk_size, lane_bytes)
    chunks_per_device = math.ceil(per_device / chunk)
    n_batches, per_batch = host_batches(chunks_per_device, _progress.active(progress) and chunks_per_device > 1,
                                        queue)
    chunks_per_device = n_batches * per_batch
    padded = n_dev * chunks_per_device * chunk
    program = EnsembleProgram(engine=plan.program, chunk=chunk, devices=tuple(devices), queue=queue)
    if any(d.process_index != jax.process_index() for d in devices):  # across processes: the same call
        a = plan.args
        same_call("simkit.ensemble", model=(model.name, model.rhs), params=p_b, y0=y0_b,
                  span=(a.t0, a.t1), saveat=(plan.saveat.kind, plan.saveat.count, a.save_ts),
                  tolerances=(a.rtol, a.atol, a.max_step, a.dt0), solver=(plan.solver_name, max_steps),
                  events=[(ev.fn, ev.direction, ev.terminal, ev.max_records) for ev in plan.program.events],
                  key=a.key,
                  layout=(chunk, [d.id for d in devices], bool(balance), queue))
    if stochastic:
        member_keys = np.asarray(jax.random.key_data(jax.random.split(key, members)))
    else:
        member_keys = np.zeros((members, 2), np.uint32)
    # pad with copies of the last member (their results are dropped)
    pad = padded - members
    p_pad = {k: np.concatenate([v, np.repeat(v[-1:], pad, axis=0)]) for k, v in p_b.items()}
    y_pad = np.concatenate([y0_b, np.repeat(y0_b[-1:], pad, axis=0)])
    k_pad = np.concatenate([member_keys, np.repeat(member_keys[-1:], pad, axis=0)])
    args = plan.args._replace(params=None, y0=None, key=jnp.zeros((2,), jnp.uint32) if stochastic else None)
    order = np.arange(padded)
    if balance and padded > chunk and not stochastic:
        cost = _pilot_steps(program, args, p_pad, y_pad, k_pad)
        order = np.argsort(cost, kind="stable")
        # deal sorted members to the devices round-robin so every device gets each cost
        # class, then keep them sorted within each device: similar costs share a chunk
        order = order.reshape(-1, n_dev).T.reshape(-1)
    # `order` lays members out device-major (device d holds a contiguous block); batch b
    # takes chunks [b * per_batch, (b + 1) * per_batch) of every device's block
    block = chunks_per_device * chunk
    width = per_batch * chunk
    slots = [(np.arange(n_dev)[:, None] * block + b * width + np.arange(width)).reshape(-1)
             for b in range(n_batches)]
    pending = []
    for positions in slots:  # dispatched asynchronously, all at once
        run_members = order[positions]
        pending.append(_dispatch(program, args, {k: v[run_members] for k, v in p_pad.items()}, y_pad[run_members],
                                 k_pad[run_members]))
    outs = []
    with _progress.bar(members, f"ensemble {model.name}", progress=progress if n_batches > 1 else False,
                       unit="members") as bar:
        for positions, result in zip(slots, pending):
            outs.append(result())
            bar.update(int(np.count_nonzero(order[positions] < members)))  # padding excluded
    inverse = np.argsort(order[np.concatenate(slots)])
    out = jax.tree_util.tree_map(lambda *a: np.concatenate(a)[inverse][:members], *outs)
    if plan.saveat.count is None:  # every step saved: max_steps + 1 columns, inf past each member's last
        used = int(np.max(np.sum(np.isfinite(out["ts"]), axis=1), initial=1))
        out["ts"], out["ys"] = out["ts"][:, :used], out["ys"][:, :used]
    solver_name = plan.solver_name
    # (the members that succeeded, or stopped at an event; see simkit._solve.warn_below_normal)
    warn_below_normal(out["ts"], out["ys"], model, plan.args.rtol, plan.args.atol, owner="simkit.ensemble",
                      ok=out["status"] <= int(Status.EVENT))
    return EnsembleSolution(
        ts=out["ts"], ys=out["ys"], status=out["status"], stats=out["stats"],
        params={k: v[:members] for k, v in p_b.items()}, y0=y0_b, t_final=out["t_final"],
        y_final=out["y_final"], state_names=model.state_names, model_name=model.name,
        solver_name=solver_name, rtol=np.asarray(plan.args.rtol), atol=np.asarray(plan.args.atol),
        model_source=model.source, model_units=model.units,
        event_ts=out.get("event_ts"), event_ys=out.get("event_ys"), event_counts=out.get("event_counts"),
    )


def _put(tree: Any, devices: list) -> Any:
    """Place member arrays along a 1-D mesh of ``devices`` (one device: committed to it). Every
    process passes the same full arrays; each fills its own devices' blocks."""
    if len(devices) == 1:  # so that the program runs there, not on the default device
        return jax.device_put(tree, devices[0])
    mesh = member_mesh(devices)
    return jax.tree_util.tree_map(lambda a: place(a, mesh, PartitionSpec(MEMBER_AXIS)), tree)
