"""simkit on an accelerator (GPU or TPU): compile time per kernel, ensembles, stencils, a
multi-start fit. Run on the accelerator machine, one process per precision:

    python benchmarks/accelerator.py compile --out results.json            # float64
    SIMKIT_ENABLE_X64=0 python benchmarks/accelerator.py compile --out ...  # float32
    python benchmarks/accelerator.py ensemble|stencil|fit --out ...
    python benchmarks/accelerator.py size --compile-results results.json --lines 8 --out ...  # anywhere

Every figure is the median of several repetitions after a first call; the first call (trace,
lower, compile, run) is reported apart. Agreement is against the same call on the host's CPU
in the same process.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import re
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import simkit
from simkit import _config, models
from simkit.kernels import linalg

HOST = jax.devices("cpu")[0]
DEVICE = jax.devices()[0]


def _timed(fn, *args, repeats=5):
    out = jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return out, statistics.median(times)


def _kernel_cases(selected=()):
    """``(problem, model, t_span, solver)`` of every kernel case, or of those whose
    ``'Solver:problem'`` contains one of ``selected`` (``--cases``)."""
    lorenz, rob, hires = models.get("lorenz"), models.get("robertson"), models.get("hires")
    cases = []
    for solver in (simkit.Tsit5(), simkit.DOPRI5(), simkit.DOP853()):
        cases.append(("lorenz", lorenz, (0.0, 10.0), solver))
    for solver in (simkit.Rodas5P(), simkit.Rodas4(), simkit.RadauIIA5(), simkit.BDF(), simkit.AutoSwitch()):
        cases.append(("robertson", rob, (0.0, 1e5), solver))
        cases.append(("hires", hires, (0.0, 321.8122), solver))
    return [case for case in cases
            if not selected or any(c in f"{type(case[3]).__name__}:{case[0]}" for c in selected)]


def _program(model, t_span, solver, rtol):
    def run(y0, params):
        sol = simkit.solve(model, t_span, y0=y0, params=params, solver=solver, saveat=11, rtol=rtol,
                           atol=rtol * 1e-3, throw=False, max_steps=200_000)
        return sol.ys, sol.status

    return run


def compile_times(args):
    """Trace and lower every kernel's program for the default device (in this thread), then
    compile them `--threads` at a time, then run each: first-call parts and run times."""
    dtype = _config.float_dtype()
    rtol = 1e-8 if dtype == jnp.float64 else 1e-5
    variants = [("rolled", 0)]
    if args.variants:
        variants.append(("straight-line", linalg.SMALL_SYSTEM))
    lowered = []
    for name, model, t_span, solver in _kernel_cases(args.cases):
        for variant, straight in variants:
            if variant != "rolled" and name == "lorenz":
                continue
            linalg.TPU_STRAIGHT_LINE = straight
            fn = jax.jit(_program(model, t_span, solver, rtol))
            y0 = jnp.asarray(model.y0, dtype)
            params = {k: jnp.asarray(v, dtype) for k, v in model.params.items()}
            start = time.perf_counter()
            row = dict(case=name, solver=str(solver), variant=variant, fn=fn, y0=y0, params=params)
            try:
                row["low"] = fn.trace(y0, params).lower()
            except simkit.SimkitError as error:  # refused before compiling on this platform
                row["error"] = f"{type(error).__name__}: {str(error)[:300]}"
            row["lower_s"] = time.perf_counter() - start
            lowered.append(row)
    linalg.TPU_STRAIGHT_LINE = 0

    def build(row):
        if "low" not in row:
            return row
        start = time.perf_counter()
        try:
            row["exe"] = row["low"].compile()
            row["compile_s"] = time.perf_counter() - start
        except Exception as error:  # noqa: BLE001  (a row per failure)
            row["error"] = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
        print(json.dumps({k: row[k] for k in ("case", "solver", "variant", "lower_s", "compile_s", "error")
                          if k in row}), flush=True)  # (kept if the run is cut short)
        return row

    with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
        rows = list(pool.map(build, lowered))
    out = []
    for row in rows:
        record = {k: row[k] for k in ("case", "solver", "variant", "lower_s") if k in row}
        record.update({k: row[k] for k in ("compile_s", "error") if k in row})
        if "exe" in row:
            start = time.perf_counter()
            ys, status = jax.block_until_ready(row["exe"](row["y0"], row["params"]))
            record["first_run_s"] = time.perf_counter() - start
            _, record["run_s"] = _timed(row["exe"], row["y0"], row["params"], repeats=3)
            with jax.default_device(HOST):
                ref, ref_status = jax.jit(row["fn"])(jax.device_put(row["y0"], HOST), jax.device_put(row["params"], HOST))
                _, record["host_run_s"] = _timed(jax.jit(row["fn"]), jax.device_put(row["y0"], HOST),
                                                 jax.device_put(row["params"], HOST), repeats=3)
            ys, ref = np.asarray(ys, np.float64), np.asarray(ref, np.float64)
            record["status"], record["host_status"] = int(status), int(ref_status)
            record["max_rel_diff_vs_host"] = float(np.max(np.abs(ys - ref) / np.maximum(np.abs(ref), 1e-6)))
            record["first_call_s"] = record["lower_s"] + record["compile_s"] + record["first_run_s"]
        out.append(record)
        print(json.dumps(record), flush=True)
    return out


# a StableHLO operation in a lowered program's text, and one whose result is float64
_STABLEHLO_OP = re.compile(r"= \"?stablehlo\.")
_FLOAT64_RESULT = re.compile(r"-> tensor<[0-9x]*f64>|: tensor<[0-9x]*f64>$")


def program_sizes(args):
    """Each kernel's program (the compile part's) lowered for ``--platform`` from this machine
    (JAX lowers for another platform without its device): StableHLO operations in all and
    those with a float64 result, beside the float64 compile times of ``--compile-results``
    (a run of the compile part on that platform) and their ratio."""
    compiled = {}
    if args.compile_results:
        with open(args.compile_results) as f:
            compiled = {(r["case"], r["solver"]): r.get("compile_s") for r in json.load(f)["rows"]
                        if r.get("variant", "rolled") == "rolled"}
    dtype = _config.float_dtype()
    out = []
    for name, model, t_span, solver in _kernel_cases(args.cases):
        fn = jax.jit(_program(model, t_span, solver, 1e-8 if dtype == jnp.float64 else 1e-5))
        y0 = jnp.asarray(model.y0, dtype)
        params = {k: jnp.asarray(v, dtype) for k, v in model.params.items()}
        lowered = fn.trace(y0, params).lower(lowering_platforms=(args.platform,))
        text = lowered.as_text()
        lines = [line for line in text.splitlines() if _STABLEHLO_OP.search(line)]
        row = dict(case=name, solver=str(solver), platform=args.platform, ops=len(lines),
                   float64_ops=sum(bool(_FLOAT64_RESULT.search(line)) for line in lines))
        if args.lines:
            row["float64_ops_by_line"] = _float64_ops_by_line(lowered.as_text(debug_info=True), args.lines)
        seconds = compiled.get((name, str(solver)))
        if seconds:
            row.update(compile_s=seconds, compile_ms_per_float64_op=1e3 * seconds / max(row["float64_ops"], 1))
        out.append(row)
        print(json.dumps(row), flush=True)
    return out


def _float64_ops_by_line(text: str, top: int) -> list:
    """The ``top`` source lines (simkit's or the model's innermost frame) that the StableHLO
    operations with a float64 result come from, with their counts: where a program's size is."""
    import collections

    locations = dict(re.findall(r"^(#loc\d+) = loc\((.*)\)$", text, re.M))

    def innermost(loc, depth=0):
        found = re.search(r'"[^"]*?(simkit/[^"]+)":(\d+)', locations.get(loc, loc))
        if found:
            return f"{found.group(1)}:{found.group(2)}"
        for inner in re.findall(r"#loc\d+", locations.get(loc, "")) if depth < 30 else []:
            where = innermost(inner, depth + 1)
            if where:
                return where
        return None

    counts = collections.Counter()
    for line in text.splitlines():
        loc = re.search(r"loc\((#loc\d+)\)\s*$", line)
        if loc and _STABLEHLO_OP.search(line) and _FLOAT64_RESULT.search(line.split(" loc(")[0]):
            counts[innermost(loc.group(1)) or "?"] += 1
    return [[where, n] for where, n in counts.most_common(top)]


def lorenz_ensemble(args):
    """Lorenz, rho ~ U[10, 50], t 0..10, rtol = atol = 1e-6, final state only: simkit.ensemble
    against diffrax's own jax.vmap of the same problem (Tsit5, PID controller)."""
    import diffrax

    dtype = _config.float_dtype()
    lorenz = models.get("lorenz")
    out = []
    rtol = 1e-6 if dtype == jnp.float64 else 2e-5  # float32: at least 100 machine epsilons
    # saveat=2 (t0 and t1): refilled lanes step in blocks with no save pass between (the fast
    # path); `--save-times` gives the time as an array, which runs a save pass after every step
    saveat = jnp.asarray([10.0], dtype) if args.save_times else 2
    for n in args.members:
        rho = jnp.asarray(np.random.default_rng(0).uniform(10, 50, n), dtype)
        row = dict(workload="lorenz_ensemble", members=n, dtype=jnp.dtype(dtype).name, rtol=rtol)
        for mode in args.modes:
            def call():
                if mode == "naive":
                    return naive(rho)
                refill = dict(default=None, refilled=True, lockstep=False)[mode]
                return simkit.ensemble(lorenz, (0.0, 10.0), params={"rho": rho}, saveat=saveat,
                                       rtol=rtol, atol=1e-6, refill=refill)

            naive = jax.jit(jax.vmap(lambda r: simkit.solve(lorenz, (0.0, 10.0), params={"rho": r},
                                                            saveat=saveat, rtol=rtol, atol=1e-6,
                                                            throw=False).ys[-1]))
            start = time.perf_counter()
            ens = jax.block_until_ready(call())
            row[f"simkit_{mode}_first_call_s"] = time.perf_counter() - start
            times = []
            for _ in range(3):
                start = time.perf_counter()
                result = call()
                jax.block_until_ready(getattr(result, "ys", result))
                times.append(time.perf_counter() - start)
            row[f"simkit_{mode}_run_s"] = statistics.median(times)
            row[f"simkit_{mode}_solves_per_s"] = n / statistics.median(times)
            if mode != "naive":
                row["failed"] = int(np.sum(np.asarray(ens.status) != 0))
            print(json.dumps(row), flush=True)

        term = diffrax.ODETerm(lambda t, y, r: jnp.stack([10.0 * (y[1] - y[0]), y[0] * (r - y[2]) - y[1],
                                                           y[0] * y[1] - 8.0 / 3.0 * y[2]]))

        @jax.jit
        def peer(rho):
            def one(r):
                sol = diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 10.0, None, jnp.ones(3, dtype), args=r,
                                          stepsize_controller=diffrax.PIDController(rtol=rtol, atol=1e-6),
                                          saveat=diffrax.SaveAt(t1=True), max_steps=100_000)
                return sol.ys[-1]
            return jax.vmap(one)(rho)

        if n <= args.peer_max:
            start = time.perf_counter()
            ref = jax.block_until_ready(peer(rho))
            row["diffrax_first_call_s"] = time.perf_counter() - start
            _, row["diffrax_run_s"] = _timed(peer, rho, repeats=3)
            row["diffrax_solves_per_s"] = n / row["diffrax_run_s"]
            if hasattr(ens, "status"):
                ok = np.asarray(ens.status) == 0
                row["median_abs_diff_vs_diffrax_at_t10"] = float(
                    np.median(np.abs(np.asarray(ens.ys)[ok, -1] - np.asarray(ref)[ok])))
        out.append(row)
        print(json.dumps(row), flush=True)
    return out


def stencils(args):
    """Heat (forward Euler, periodic 5-point Laplacian) and Gray-Scott (RK4) steps through
    simkit.stencil.rollout, against a plain-JAX jnp.roll loop and a large elementwise pass
    (the bandwidth reference measured in the same run)."""
    from simkit import stencil as sk

    dtype = _config.float_dtype()
    itemsize = jnp.dtype(dtype).itemsize
    out = []

    x = jnp.ones((8192, 8192), dtype)
    triad = jax.jit(lambda a: a * 1.0001 + 0.5)
    _, t = _timed(triad, x, repeats=10)
    bandwidth = 2 * x.size * itemsize / t
    out.append(dict(workload="elementwise_pass", n=8192, dtype=jnp.dtype(dtype).name, run_s=t, bytes_per_s=bandwidth))
    print(json.dumps(out[-1]), flush=True)

    for n in args.sizes:
        grid = sk.Grid((n, n), 0.0, 1.0)
        heat = simkit.PDEModel(rhs=lambda t, u, p, space: p["d"] * sk.laplacian(space.pad(u), space.spacing),
                               grid=grid, bcs=sk.Periodic(), params={"d": 1.0},
                               u0=np.zeros((1, n, n)) + np.sin(2 * np.pi * np.asarray(grid.coordinates()[0]))[None],
                               name="heat")
        dt = 0.2 / n**2
        steps = 200
        u0 = jnp.asarray(heat.u0, dtype)
        first, t, fields = _rollout_both(lambda u: sk.rollout(heat, u0=u, dt=dt, steps=steps, stepper=sk.ForwardEuler())[0][-1], u0)

        def plain(u):
            def body(_, u):
                lap = (jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4 * u) * n**2
                return u + dt * lap
            return jax.lax.fori_loop(0, steps, body, u)

        plain = jax.jit(plain)
        _, tp = _timed(plain, u0[0], repeats=3)
        per_step = t["default"] / steps
        row = dict(workload="heat_euler", n=n, dtype=jnp.dtype(dtype).name, first_call_s=first["default"], step_s=per_step,
                   bytes_per_s=2 * n * n * itemsize / per_step, fraction_of_elementwise=2 * n * n * itemsize / per_step / bandwidth,
                   plain_roll_step_s=tp / steps, plain_over_simkit=tp / t["default"], **_schedules(first, t, fields, steps))
        out.append(row)
        print(json.dumps(row), flush=True)

    gs = models.get("gray_scott")
    for n in args.sizes:
        grid = sk.Grid((n, n), gs.grid.lower if hasattr(gs.grid, "lower") else 0.0, 2.5)
        model = gs.replace(grid=grid, u0=np.concatenate([np.ones((1, n, n)), np.zeros((1, n, n))]) + 0.01 * np.random.default_rng(0).random((2, n, n)))
        steps = 20
        u0 = jnp.asarray(model.u0, dtype)
        # within RK4's stability limit (dt |lambda| <= 2.78, |lambda| <= 8 D / dx^2): a blown-up
        # field would leave nothing to compare
        gs_dt = min(0.5, 2.0 * min(grid.spacing) ** 2 / (8 * max(model.params["diffusivity_u"], model.params["diffusivity_v"])))
        first, t, fields = _rollout_both(lambda u: sk.rollout(model, u0=u, dt=gs_dt, steps=steps)[0][-1], u0)
        step_s = t["default"] / steps
        out.append(dict(workload="gray_scott_rk4", n=n, dtype=jnp.dtype(dtype).name, dt=gs_dt, first_call_s=first["default"], step_s=step_s,
                        bytes_per_s=2 * model.u0.size * itemsize / step_s,
                        fraction_of_elementwise=2 * model.u0.size * itemsize / step_s / bandwidth,
                        **_schedules(first, t, fields, steps)))
        print(json.dumps(out[-1]), flush=True)
    return out


def _rollout_both(fn, u0):
    """First call and run time of a rollout with simkit's default schedule (row blocks where
    `simkit.stencil.blocked` takes them) and with XLA's loop; the final fields of both."""
    from simkit.stencil import blocked

    first, t, fields = {}, {}, {}
    default_mode = blocked.MODE
    for name, mode in (("default", default_mode), ("xla_loop", "never")):
        blocked.MODE = mode
        jax.clear_caches()
        roll = jax.jit(fn)
        start = time.perf_counter()
        jax.block_until_ready(roll(u0))
        first[name] = time.perf_counter() - start
        fields[name], t[name] = _timed(roll, u0, repeats=3)
    blocked.MODE = default_mode
    return first, t, fields


def _schedules(first, t, fields, steps):
    diff = float(jnp.max(jnp.abs(fields["default"] - fields["xla_loop"])))
    return dict(xla_loop_step_s=t["xla_loop"] / steps, xla_loop_first_call_s=first["xla_loop"],
                max_abs_diff_default_vs_xla_loop=diff)


def multistart_fit(args):
    """Lotka-Volterra on the Hudson Bay lynx-hare pelts, `--starts` starts (one run for each
    number given), on the default device (batched) and on the host's CPU (one start after
    another), each place chosen with ``devices=`` (which overrides the placement rule)."""
    from simkit import datasets

    data = datasets.lynx_hare()
    model = models.get("lotka_volterra")
    out = []
    for starts in args.starts:
        for where in args.where:
            dev = DEVICE if where == "default" else HOST
            with jax.default_device(dev):
                start = time.perf_counter()
                result = simkit.fit(model, data, loss=simkit.LogNormal(), starts=starts, devices=[dev])
                first = time.perf_counter() - start
                start = time.perf_counter()
                result = simkit.fit(model, data, loss=simkit.LogNormal(), starts=starts, devices=[dev])
                run = time.perf_counter() - start
            out.append(dict(workload="lynx_hare_multistart", starts=starts, where=where, platform=dev.platform,
                            first_call_s=first, run_s=run, cost=float(result.cost)))
            print(json.dumps(out[-1]), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["compile", "size", "ensemble", "stencil", "fit"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--threads", type=int, default=6)
    parser.add_argument("--variants", action="store_true", help="also the straight-line small LU on a TPU")
    parser.add_argument("--cases", nargs="+", default=[],
                        help="compile, size: only the cases whose 'Solver:problem' (e.g. 'Rodas5P:hires') contains one of these")
    parser.add_argument("--platform", default="tpu", help="size: the platform to lower for")
    parser.add_argument("--lines", type=int, default=0,
                        help="size: also the N source lines with the most float64 operations, per case")
    parser.add_argument("--compile-results", default=None,
                        help="size: a compile part's JSON whose compile times go beside the sizes")
    parser.add_argument("--members", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--peer-max", type=int, default=100_000)
    parser.add_argument("--save-times", action="store_true", help="save at t1 given as an array of times")
    parser.add_argument("--modes", nargs="+", default=["default"], choices=["default", "refilled", "lockstep", "naive"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2048, 8192])
    parser.add_argument("--starts", type=int, nargs="+", default=[1024], help="fit: numbers of starts, each run apart")
    parser.add_argument("--where", nargs="+", default=["default", "host"], choices=["default", "host"],
                        help="fit: on JAX's default device, on the host's CPU, or both")
    args = parser.parse_args()
    parts = {"compile": compile_times, "size": program_sizes, "ensemble": lorenz_ensemble, "stencil": stencils, "fit": multistart_fit}
    rows = parts[args.part](args)
    meta = dict(device=str(DEVICE), platform=DEVICE.platform, jax=jax.__version__, python=sys.version.split()[0],
                host=platform.processor() or platform.machine(), cpu_count=os.cpu_count(),
                dtype=jnp.dtype(_config.float_dtype()).name, date=time.strftime("%Y-%m-%d"),
                optimization_level=jax.config.jax_optimization_level,
                exec_time_optimization_effort=jax.config.jax_exec_time_optimization_effort)
    with open(args.out, "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
