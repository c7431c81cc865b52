"""Stencils on an accelerator: heat and Gray-Scott at 2048^2 and 8192^2,
float64 and float32, time per step against the memory-bandwidth roofline measured in the same run.

    python benchmarks/gpu_stencil.py [--sizes 2048,8192] [--repeats 5] [--budget-s 200] [--steps-scale 1]
        [--out benchmarks/results/gpu_stencil.json]

Rows, on the default device (the accelerator where one is present), each precision in its
own process (``SIMKIT_ENABLE_X64=0`` for float32), medians of ``--repeats`` interleaved
rounds, each call running many steps inside one compiled program:

- heat n x n: 2-D, explicit Euler, periodic 5-point Laplacian (`benchmarks/stencil.py`'s
  model): `simkit.stencil.rollout` under ``jax.jit`` (the stepping loop, the fields staying
  on the device), `simkit.stencil.integrate` (a whole call: ``u0`` checked on the host and
  sent, the saved fields copied back into NumPy), and a plain ``jax.jit`` + ``fori_loop``
  with ``jnp.roll`` (the JAX a user writes by hand);
- Gray-Scott n x n (two components, the library model on an n x n grid) with `RK4`, through
  ``rollout`` under ``jax.jit`` and ``integrate``: time per step and per stage;
- roofline: the bandwidth of one large elementwise pass (``a * s`` over at least 1 GiB, read
  and written, ``jax.jit``), measured once per process; the heat step's roofline is one read
  and one write of the field at that bandwidth, Gray-Scott's per stage one read and one
  write of both components (a lower bound: an RK4 stage also reads the step's start and
  accumulates; `benchmarks/experiments/gs_rk4_floor.py` counts at least 80 bytes per point
  against the heat step's 16). A field that fits in the GPU's cache (2048^2) can beat it.

The committed run (`results/gpu_stencil.json`) came from an earlier form of this script,
without the ``rollout`` rows and this bandwidth measure: its roofline fractions used a
``fori_loop`` triad that measured too low.

Configurations still to run once ``--budget-s`` seconds have passed in a process are skipped
and listed under ``skipped``; results are written after each size.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import json
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(args) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    sys.path.insert(0, HERE)
    from stencil import gray_scott_model, heat_model, roll_heat  # benchmarks/stencil.py
    from timing import first_and_rounds  # benchmarks/timing.py

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
    big = jnp.ones((max(2**30 // np.dtype(dtype).itemsize, 1024),), dtype)
    scale = jax.jit(lambda a, s: a * s)
    factor = jnp.asarray(1.0000001, dtype)
    jax.block_until_ready(scale(big, factor))
    passes = []
    for _ in range(max(args.repeats, 5)):
        t0 = time.perf_counter()
        jax.block_until_ready(scale(big, factor))
        passes.append(time.perf_counter() - t0)
    bandwidth = 2 * big.nbytes / statistics.median(passes)
    out["copy_bandwidth_GBps"] = bandwidth / 1e9
    del big
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

        roll_loop = roll_heat(c, steps["roll"])
        heat_rollout = jax.jit(lambda u: sk.rollout(heat, u0=u, dt=dt, steps=steps["heat"],
                                                    stepper=sk.ForwardEuler())[0][-1])
        gs_rollout = jax.jit(lambda u: sk.rollout(gs, u0=u, dt=gs_dt, steps=steps["gs"], stepper=sk.RK4())[0][-1])
        u0 = jnp.asarray(heat.u0[0], dtype)
        u0_heat, u0_gs = jnp.asarray(heat.u0, dtype), jnp.asarray(gs.u0, dtype)
        fns = {
            "simkit heat (Euler), rollout under jax.jit": lambda: heat_rollout(u0_heat),
            "simkit heat (Euler), integrate call": lambda: sk.integrate(heat, dt=dt, steps=steps["heat"], **euler).us,
            "jax roll heat (fori_loop)": lambda: roll_loop(u0),
            "simkit gray-scott (RK4), rollout under jax.jit": lambda: gs_rollout(u0_gs),
            "simkit gray-scott (RK4), integrate call": lambda: sk.integrate(gs, dt=gs_dt, steps=steps["gs"],
                                                                            stepper=sk.RK4(),
                                                                            check_stability=False).us,
        }
        per_call = {"simkit heat (Euler), rollout under jax.jit": steps["heat"],
                    "simkit heat (Euler), integrate call": steps["heat"], "jax roll heat (fori_loop)": steps["roll"],
                    "simkit gray-scott (RK4), rollout under jax.jit": steps["gs"],
                    "simkit gray-scott (RK4), integrate call": steps["gs"]}
        first, samples = first_and_rounds(fns, args.repeats, per_call)
        median = {k: statistics.median(v) for k, v in samples.items()}
        heat_s, gs_s = median["simkit heat (Euler), rollout under jax.jit"], median["simkit gray-scott (RK4), rollout under jax.jit"]
        heat_roof = 2 * bytes_field / bandwidth
        gs_stage_roof = 2 * 2 * bytes_field / bandwidth
        final = np.asarray(fns["simkit heat (Euler), integrate call"]())[-1]
        row = dict(n=n, steps_per_call=steps, per_step_s=median, samples_per_step_s=samples,
                   compile_and_first_call_s=first, heat_roofline_s=heat_roof, heat_roofline_fraction=heat_roof / heat_s,
                   roll_over_simkit=median["jax roll heat (fori_loop)"] / heat_s,
                   integrate_call_fixed_s_estimate=(median["simkit heat (Euler), integrate call"] - heat_s) * steps["heat"],
                   gs_per_stage_s=gs_s / 4, gs_stage_roofline_s=gs_stage_roof,
                   gs_stage_roofline_fraction=gs_stage_roof / (gs_s / 4), gs_stage_over_heat_step=gs_s / 4 / heat_s,
                   heat_final_finite=bool(np.all(np.isfinite(final))),
                   heat_mean_drift=float(abs(final.mean() - float(np.mean(heat.u0[0])))))
        out["sizes"][str(n)] = row
        print(f"{out['precision']} {n}^2: heat {heat_s * 1e3:.3f} ms/step under rollout "
              f"({row['heat_roofline_fraction']:.0%} of the roofline at {bandwidth / 1e9:.0f} GB/s; jnp.roll loop "
              f"{median['jax roll heat (fori_loop)'] * 1e3:.3f}; an integrate call's fixed cost about "
              f"{row['integrate_call_fixed_s_estimate']:.2f} s); Gray-Scott RK4 {gs_s * 1e3:.3f} ms/step, "
              f"{row['gs_stage_over_heat_step']:.2f}x the heat step per stage "
              f"({row['gs_stage_roofline_fraction']:.0%} of its stage roofline)", flush=True)
        out["wall_s"] = time.perf_counter() - start
        save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2048,8192")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=200.0,
                        help="per precision: sizes not started by then are skipped")
    parser.add_argument("--steps-scale", type=float, default=1.0,
                        help="steps per call: 100 heat and 10 Gray-Scott steps at 8192^2 times this, "
                             "as many more as the grid has fewer points")
    sys.path.insert(0, HERE)
    from timing import precision_main  # benchmarks/timing.py

    precision_main(parser, child, __file__, os.path.join(HERE, "results", "gpu_stencil.json"))


if __name__ == "__main__":
    main()
