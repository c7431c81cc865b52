"""Stencils on an accelerator (issue 14, item 6): heat and Gray-Scott at 2048^2 and 8192^2,
float64 and float32, time per step against the memory-bandwidth roofline measured in the same run.

    python benchmarks/gpu_stencil.py [--sizes 2048,8192] [--repeats 5] [--budget-s 200] [--steps-scale 1]
        [--out benchmarks/results/gpu_stencil.json]

Rows, on the default device (the accelerator where one is present), each precision in its
own process (``SIMKIT_ENABLE_X64=0`` for float32), medians of ``--repeats`` interleaved
rounds, each call running many steps inside one compiled program:

- heat n x n: 2-D, explicit Euler, periodic 5-point Laplacian (`benchmarks/stencil.py`'s
  model), `simkit.stencil.integrate`; and a plain ``jax.jit`` + ``fori_loop`` with
  ``jnp.roll`` (the JAX a user writes by hand);
- Gray-Scott n x n (two components, the library model on an n x n grid) with `RK4`: time
  per step and per stage;
- roofline: a triad ``a = b + s a`` on n x n arrays, repeated in a ``fori_loop`` under
  ``jax.jit`` (one launch per pass, as the steps), its bandwidth counting 3 arrays; the heat step's roofline is one read and one write of the field at that bandwidth,
  Gray-Scott's per stage one read and one write of both components (a lower bound: an RK4
  stage also reads the step's start and accumulates; `benchmarks/experiments/gs_rk4_floor.py`
  counts at least 80 bytes per point against the heat step's 16).

Configurations still to run once ``--budget-s`` seconds have passed in a process are skipped
and listed under ``skipped``; results are written after each size.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(args) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    sys.path.insert(0, HERE)
    from stencil import gray_scott_model, heat_model  # benchmarks/stencil.py

    from simkit import stencil as sk

    x64 = bool(jax.config.jax_enable_x64)
    dtype = np.float64 if x64 else np.float32
    start = time.perf_counter()
    device = jax.devices()[0]
    out = dict(precision="float64" if x64 else "float32", backend=jax.default_backend(),
               device=getattr(device, "device_kind", str(device)), jax=jax.__version__, sizes={}, skipped=[])

    def save():
        with open(args.child_out, "w") as fh:
            json.dump(out, fh, indent=1)

    euler = dict(stepper=sk.ForwardEuler(), check_stability=False)
    for n in (int(s) for s in args.sizes.split(",")):
        if time.perf_counter() - start > args.budget_s:
            out["skipped"].append(n)
            save()
            continue
        heat, gs = heat_model(n), gray_scott_model(n)
        h = heat.grid.spacing[0]
        dt = 0.2 * h * h
        c = dt / (h * h)
        gs_dt = 0.2 * gs.grid.spacing[0] ** 2 / 2e-5
        bytes_field = n * n * np.dtype(dtype).itemsize
        # tens of milliseconds per call on an H200 whatever the size (the same number of points)
        scale = args.steps_scale * (8192 / n) ** 2
        steps = dict(heat=max(2, round(100 * scale)), gs=max(1, round(10 * scale)))
        steps["roll"] = steps["heat"]

        @jax.jit
        def roll_loop(u):
            def body(_, u):
                lap = jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4 * u
                return u + c * lap
            return jax.lax.fori_loop(0, steps["roll"], body, u)

        @jax.jit
        def triad_loop(a, b):  # a = b + s a, as many times as the heat rows step: 3 arrays per pass
            return jax.lax.fori_loop(0, steps["heat"], lambda _, a: b + 0.5 * a, a)

        rng = np.random.default_rng(0)
        b, cc = (jnp.asarray(rng.random((n, n)), dtype) for _ in range(2))
        u0 = jnp.asarray(heat.u0[0], dtype)
        fns = {
            "simkit heat (Euler)": lambda: sk.integrate(heat, dt=dt, steps=steps["heat"], **euler).us,
            "jax roll heat (fori_loop)": lambda: roll_loop(u0),
            "simkit gray-scott (RK4)": lambda: sk.integrate(gs, dt=gs_dt, steps=steps["gs"], stepper=sk.RK4(),
                                                            check_stability=False).us,
            "triad": lambda: triad_loop(cc, b),
        }
        per_call = {"simkit heat (Euler)": steps["heat"], "jax roll heat (fori_loop)": steps["roll"],
                    "simkit gray-scott (RK4)": steps["gs"], "triad": steps["heat"]}
        first = {}
        for k, f in fns.items():
            t0 = time.perf_counter()
            jax.block_until_ready(f())
            first[k] = time.perf_counter() - t0
        samples = {k: [] for k in fns}
        for _ in range(args.repeats):
            for k, f in fns.items():
                t0 = time.perf_counter()
                jax.block_until_ready(f())
                samples[k].append((time.perf_counter() - t0) / per_call[k])
        median = {k: statistics.median(v) for k, v in samples.items()}
        bandwidth = 3 * bytes_field / median["triad"]
        heat_roof = 2 * bytes_field / bandwidth
        gs_stage_roof = 2 * 2 * bytes_field / bandwidth
        final = np.asarray(fns["simkit heat (Euler)"]())[-1]
        row = dict(n=n, steps_per_call=steps, per_step_s=median, samples_per_step_s=samples,
                   compile_and_first_call_s=first, triad_bandwidth_GBps=bandwidth / 1e9,
                   heat_roofline_s=heat_roof, heat_roofline_fraction=heat_roof / median["simkit heat (Euler)"],
                   roll_over_simkit=median["jax roll heat (fori_loop)"] / median["simkit heat (Euler)"],
                   gs_per_stage_s=median["simkit gray-scott (RK4)"] / 4,
                   gs_stage_roofline_s=gs_stage_roof,
                   gs_stage_roofline_fraction=gs_stage_roof / (median["simkit gray-scott (RK4)"] / 4),
                   gs_stage_over_heat_step=median["simkit gray-scott (RK4)"] / 4 / median["simkit heat (Euler)"],
                   heat_final_finite=bool(np.all(np.isfinite(final))),
                   heat_mean_drift=float(abs(final.mean() - float(np.mean(heat.u0[0])))))
        out["sizes"][str(n)] = row
        print(f"{out['precision']} {n}^2: heat {median['simkit heat (Euler)'] * 1e3:.3f} ms/step "
              f"({row['heat_roofline_fraction']:.0%} of the roofline at {row['triad_bandwidth_GBps']:.0f} GB/s; "
              f"jnp.roll loop {median['jax roll heat (fori_loop)'] * 1e3:.3f}); Gray-Scott RK4 "
              f"{median['simkit gray-scott (RK4)'] * 1e3:.3f} ms/step, {row['gs_stage_over_heat_step']:.2f}x the "
              f"heat step per stage ({row['gs_stage_roofline_fraction']:.0%} of its stage roofline)", flush=True)
        out["wall_s"] = time.perf_counter() - start
        save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2048,8192")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=200.0,
                        help="per precision: sizes not started by then are skipped")
    parser.add_argument("--precisions", default="float64,float32")
    parser.add_argument("--steps-scale", type=float, default=1.0,
                        help="steps per call: 100 heat and 10 Gray-Scott steps at 8192^2 times this, "
                             "as many more as the grid has fewer points")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "gpu_stencil.json"))
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_out:
        child(args)
        return
    start = time.perf_counter()
    result = dict(command=" ".join(["python benchmarks/gpu_stencil.py", *sys.argv[1:]]),
                  machine=dict(platform=platform.platform(), python=platform.python_version(), cores=os.cpu_count()),
                  runs={})
    for precision in args.precisions.split(","):
        env = dict(os.environ, SIMKIT_ENABLE_X64="1" if precision == "float64" else "0")
        part = f"{args.out}.{precision}.part"
        code = subprocess.call([sys.executable, __file__, *sys.argv[1:], "--child-out", part], env=env)
        try:
            with open(part) as fh:
                result["runs"][precision] = json.load(fh)
            os.remove(part)
        except OSError:
            result["runs"][precision] = dict(error=f"exit code {code}, no results")
        if code:
            result["runs"][precision]["exit_code"] = code
        result["wall_s"] = time.perf_counter() - start
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)
    print(f"wrote {args.out} ({result['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()
