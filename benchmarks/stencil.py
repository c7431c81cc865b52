"""Stencils: 2-D heat, explicit Euler, periodic 5-point Laplacian, float64, time per step;
Gray-Scott with RK4, time per stage. One command, about two minutes:

    python benchmarks/stencil.py [--n 2048] [--repeats 7] [--out benchmarks/results/stencil.json]

Rows, interleaved (one call of each per round, medians over rounds; each call runs many
steps inside one compiled program or loop):

- heat n x n: `simkit.stencil.integrate` (ForwardEuler, one compiled rollout); numba, one
  thread (rows with wrapped neighbour rows, edge columns apart: no ``%`` in the inner loop), and
  the same loop with ``prange`` over rows on all threads (XLA runs simkit's loop on all cores);
  NumPy with slices into a ghost-padded array; a plain ``jax.jit`` + ``fori_loop`` with
  ``jnp.roll``; a NumPy triad for the bandwidth.
- roofline: one read and one write of the grid per step at the triad bandwidth measured in
  the same rounds (numba triad ``a = b + s c`` on grid-sized arrays, one thread and all
  threads; NumPy ``add`` if numba is missing). The roofline uses the faster of them.
- Gray-Scott (n/2)^2 with `RK4`: time per stage (step / 4), against the Euler heat step on
  the same grid (two components: twice the heat step's memory traffic per stage).

Also printed: the anatomy of one compiled heat step (fusions and field-sized copies in the
time loop, from the optimised HLO of ``jax.jit(simkit.stencil.rollout)``). The JSON holds
every sample, the medians, the ratios, the anatomy and the machine (CPU model, cores, load
average before and after, versions). Timings are noisy when other work shares the machine:
compare ratios within one run.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import json
import platform
import re
import statistics
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from simkit import models
from simkit import stencil as sk
from simkit._config import configure_own_process
configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it

try:
    import numba
except ImportError:  # optional peer: pip install numba
    numba = None


def heat_rhs(t, u, p, space):
    return p["diffusivity"] * sk.laplacian(space.pad(u), space.spacing)


def heat_model(n: int) -> sk.PDEModel:
    grid = sk.Grid((n, n), 0.0, 1.0)
    u0 = np.random.default_rng(0).random((1, n, n))
    return sk.PDEModel(rhs=heat_rhs, grid=grid, bcs=sk.Periodic(), params={"diffusivity": 1.0}, u0=u0,
                       name=f"heat {n}x{n}")


def gray_scott_model(n: int) -> sk.PDEModel:
    base = models.get("gray_scott")
    grid = sk.Grid((n, n), 0.0, 1.25 * n / base.grid.shape[0])
    rng = np.random.default_rng(1)
    u0 = np.stack([1.0 - 0.5 * rng.random(grid.shape), 0.25 * rng.random(grid.shape)])
    return base.replace(grid=grid, u0=u0)


def roll_heat(c: float, steps: int) -> Callable:
    """The heat step as a user writes it in plain JAX: ``steps`` Euler steps of the periodic
    5-point Laplacian by ``jnp.roll`` over the last two axes, ``c = dt / h^2``, in one
    ``jax.jit`` + ``fori_loop``."""
    @jax.jit
    def roll_loop(u):
        def body(_, u):
            lap = jnp.roll(u, 1, -2) + jnp.roll(u, -1, -2) + jnp.roll(u, 1, -1) + jnp.roll(u, -1, -1) - 4 * u
            return u + c * lap
        return jax.lax.fori_loop(0, steps, body, u)
    return roll_loop


def machine() -> dict:
    from timing import host, provenance  # benchmarks/timing.py

    return provenance() | {"cpu": host()["cpu"], "cores": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "jax": jax.__version__, "numpy": np.__version__,
            "numba": None if numba is None else numba.__version__,
            "devices": [str(d) for d in jax.devices()], "load_average": list(os.getloadavg())}


def numba_kernels() -> dict[str, Callable] | None:
    if numba is None:
        return None

    @numba.njit(cache=False)
    def heat_row(u, out, i, c):
        # one row of the step; the edge columns apart, so no % in the inner loop
        n, m = u.shape
        up = u[i - 1] if i > 0 else u[n - 1]
        down = u[i + 1] if i < n - 1 else u[0]
        row, o = u[i], out[i]
        o[0] = row[0] + c * (up[0] + down[0] + row[m - 1] + row[1] - 4.0 * row[0])
        for j in range(1, m - 1):
            o[j] = row[j] + c * (up[j] + down[j] + row[j - 1] + row[j + 1] - 4.0 * row[j])
        o[m - 1] = row[m - 1] + c * (up[m - 1] + down[m - 1] + row[m - 2] + row[0] - 4.0 * row[m - 1])

    @numba.njit(cache=False)
    def heat(u, out, c, steps):
        for _ in range(steps):
            for i in range(u.shape[0]):
                heat_row(u, out, i, c)
            u, out = out, u
        return u

    @numba.njit(cache=False, parallel=True)
    def heat_threads(u, out, c, steps):
        # the same rows over all threads (XLA runs simkit's loop on both cores too)
        for _ in range(steps):
            for i in numba.prange(u.shape[0]):
                heat_row(u, out, i, c)
            u, out = out, u
        return u

    @numba.njit(cache=False)
    def triad(a, b, c, s):
        for i in range(a.size):
            a[i] = b[i] + s * c[i]

    @numba.njit(cache=False, parallel=True)
    def triad_threads(a, b, c, s):
        for i in numba.prange(a.size):
            a[i] = b[i] + s * c[i]

    return {"heat": heat, "heat_threads": heat_threads, "triad": triad, "triad_threads": triad_threads}


def step_anatomy(model: sk.PDEModel, dt: float) -> dict:
    """Fusions and field-sized copies in the time loop of one compiled heat rollout."""
    u0 = jnp.asarray(model.u0)
    run = jax.jit(lambda u: sk.rollout(model, u0=u, dt=dt, steps=4, stepper=sk.ForwardEuler())[0])
    text = run.lower(u0).compile().as_text()
    field = "f64[" + ",".join(str(s) for s in u0.shape) + "]"
    bodies = re.split(r"\n(?=%|ENTRY)", text)
    loop = [b for b in bodies if re.search(r"->\s*\(s\d+\[\],\s*" + re.escape(field), b.split("\n", 1)[0])
            and " fusion(" in b]
    body = max(loop, key=len) if loop else ""
    count = {"fusions": len(re.findall(r"= \S+ fusion\(", body)),
             "field_fusions": len(re.findall(re.escape(field) + r"\{[^}]*\} fusion\(", body)),
             "field_copies": len(re.findall(re.escape(field) + r"\{[^}]*\} copy\(", body)),
             "gathers": body.count(" gather("), "concatenates": body.count(" concatenate("),
             "transposes": body.count(" transpose(")}
    return count


def sampled(fns: dict[str, Callable], repeats: int) -> dict[str, list[float]]:
    """Seconds per call of each function, ``repeats`` interleaved rounds (after one warm-up)."""
    for fn in fns.values():
        jax.block_until_ready(fn())
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            start = time.perf_counter()
            jax.block_until_ready(fn())
            samples[k].append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "stencil.json"))
    args = parser.parse_args()
    n, half = args.n, args.n // 2
    before = machine()
    heat, heat_half, gs = heat_model(n), heat_model(half), gray_scott_model(half)
    h = heat.grid.spacing[0]
    dt = 0.2 * h * h
    c = dt / (h * h)
    # enough steps per call that a call's fixed cost (fresh output buffers: page faults of
    # ~11 ms per 32 MB on this VM) is a few percent of it
    steps = {"heat": 200, "numpy": 8, "numba": 200, "roll": 40, "heat_half": 400, "gs": 50}
    euler = dict(stepper=sk.ForwardEuler(), check_stability=False)
    u0 = heat.u0[0]

    def numpy_heat():
        u = u0.copy()
        p = np.empty((n + 2, n + 2))
        for _ in range(steps["numpy"]):
            p[1:-1, 1:-1] = u
            p[0, 1:-1], p[-1, 1:-1], p[1:-1, 0], p[1:-1, -1] = u[-1], u[0], u[:, -1], u[:, 0]
            u = u + c * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u)
        return u

    roll_loop = roll_heat(c, steps["roll"])
    u0_j = jnp.asarray(u0)
    gs_dt = 0.2 * gs.grid.spacing[0] ** 2 / 2e-5
    h2 = heat_half.grid.spacing[0]
    fns = {
        "simkit heat": lambda: sk.integrate(heat, dt=dt, steps=steps["heat"], **euler).us,
        "numpy heat": numpy_heat,
        "jax roll heat": lambda: roll_loop(u0_j),
        "simkit heat half": lambda: sk.integrate(heat_half, dt=0.2 * h2 * h2, steps=steps["heat_half"], **euler).us,
        "simkit gray-scott half rk4": lambda: sk.integrate(gs, dt=gs_dt, steps=steps["gs"], stepper=sk.RK4(),
                                                           check_stability=False).us,
    }
    per_call = {"simkit heat": steps["heat"], "numpy heat": steps["numpy"], "jax roll heat": steps["roll"],
                "simkit heat half": steps["heat_half"], "simkit gray-scott half rk4": 4 * steps["gs"]}
    a, b, cc = (np.random.default_rng(k).random((n, n)) for k in range(3))
    kernels = numba_kernels()
    if kernels is not None:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        scratch = np.empty_like(u0)
        fns["numba heat (1 thread)"] = lambda: kernels["heat"](u0.copy(), scratch, c, steps["numba"])
        per_call["numba heat (1 thread)"] = steps["numba"]
        fns["numba heat (all threads)"] = lambda: kernels["heat_threads"](u0.copy(), scratch, c, steps["numba"])
        per_call["numba heat (all threads)"] = steps["numba"]
        fns["triad (1 thread)"] = lambda: kernels["triad"](a.reshape(-1), b.reshape(-1), cc.reshape(-1), 0.5)
        fns["triad (all threads)"] = lambda: kernels["triad_threads"](a.reshape(-1), b.reshape(-1), cc.reshape(-1), 0.5)
    else:
        fns["triad (1 thread)"] = lambda: np.add(b, cc, out=a)
    for k in fns:
        per_call.setdefault(k, 1)
    compile_s = {}
    for k in ("simkit heat", "simkit heat half", "simkit gray-scott half rk4", "jax roll heat"):
        start = time.perf_counter()
        jax.block_until_ready(fns[k]())
        compile_s[k] = time.perf_counter() - start
    samples = sampled(fns, args.repeats)
    median = {k: statistics.median(v) / per_call[k] for k, v in samples.items()}
    bandwidth = {k: 3 * a.nbytes / median[k] for k in median if k.startswith("triad")}
    best_bw = max(bandwidth.values())
    roofline = 2 * a.nbytes / best_bw
    simkit = median["simkit heat"]
    ratios = {
        "simkit / numba (goal <= 1.25)": simkit / median["numba heat (1 thread)"] if kernels else None,
        "simkit / numba all threads": simkit / median["numba heat (all threads)"] if kernels else None,
        "numpy / simkit (goal >= 5)": median["numpy heat"] / simkit,
        "roofline / simkit (goal >= 0.5)": roofline / simkit,
        "gray-scott rk4 stage / heat euler step, same grid (goal <= 1.5)":
            median["simkit gray-scott half rk4"] / median["simkit heat half"],
        "jax roll / simkit": median["jax roll heat"] / simkit,
    }
    anatomy = step_anatomy(heat, dt)
    print(f"2-D heat {n}x{n} float64, explicit Euler, periodic 5-point Laplacian; {args.repeats} interleaved "
          f"rounds, medians; {before['cpu']}, {before['cores']} cores, load {before['load_average'][0]:.2f}")
    for k, v in bandwidth.items():
        print(f"  bandwidth, {k}: {v / 1e9:6.1f} GB/s")
    print(f"  roofline (one read + one write at {best_bw / 1e9:.1f} GB/s): {roofline * 1e3:.2f} ms/step")
    for k, v in median.items():
        if not k.startswith("triad"):
            unit = "ms/stage" if "rk4" in k else "ms/step"
            extra = f"   (compile + first call {compile_s[k]:.2f} s)" if k in compile_s else ""
            print(f"  {k:30s} {v * 1e3:8.2f} {unit}{extra}")
    for k, v in ratios.items():
        if v is not None:
            print(f"  ratio {k}: {v:.2f}")
    print(f"  step anatomy (time loop of the compiled heat rollout): {anatomy}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"n": n, "steps_per_call": per_call, "median_s": median, "samples_s": samples,
                   "bandwidth_Bps": bandwidth, "roofline_s": roofline, "ratios": ratios,
                   "compile_s": compile_s, "step_anatomy": anatomy,
                   "machine": before, "load_average_after": list(os.getloadavg())}, fh, indent=1)
    print(f"  wrote {args.out}")


if __name__ == "__main__":
    main()
