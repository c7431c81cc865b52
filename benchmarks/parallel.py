"""Domain decomposition: 2-D heat (explicit Euler, periodic 5-point Laplacian, float64) on
1, 2 and 4 CPU devices; strong and weak scaling; halo-exchange overhead.

    SIMKIT_CPU_DEVICES=2 python benchmarks/parallel.py [--n 2048] [--steps 200] [--repeats 3]
    SIMKIT_CPU_DEVICES=4 python benchmarks/parallel.py     # adds the 4-device rows

Rows use the devices there are (on a 2-core machine, 4 simulated devices share the cores):
`simkit.stencil.integrate` on one device (plain); `simkit.parallel.integrate` on a 1-device
mesh (the decomposed code path without neighbours: its overhead over plain), on 2 devices
(slabs) and, with 4 devices, 4x1 slabs and 2x2 pencils. Weak scaling: the grid grows with the
device count (n/2 x n per device). Compile time (first call) is reported apart. Writes
benchmarks/results/parallel.json (timings, speed-ups, machine).
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")
os.environ.setdefault("SIMKIT_CPU_DEVICES", "4")

import argparse
import json

import jax
import numpy as np

from simkit import parallel
from simkit import stencil as sk
from simkit._config import configure_own_process
configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it
from stencil import machine  # benchmarks/stencil.py
from timing import interleaved, timed  # benchmarks/timing.py (run as scripts)


def heat_rhs(t, u, p, space):
    return p["diffusivity"] * sk.laplacian(space.pad(u), space.spacing)


def model(nx, ny):
    grid = sk.Grid((nx, ny), 0.0, (nx / ny, 1.0))
    u0 = np.random.default_rng(0).random((1, nx, ny))
    return sk.PDEModel(rhs=heat_rhs, grid=grid, bcs=sk.Periodic(), params={"diffusivity": 1.0}, u0=u0,
                       name=f"heat {nx}x{ny}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "parallel.json"))
    args = parser.parse_args()
    devices = jax.devices()
    n, steps = args.n, args.steps
    m = model(n, n)
    dt = 0.2 * m.grid.spacing[1] ** 2
    kw = dict(dt=dt, steps=steps, stepper=sk.ForwardEuler(), check_stability=False)

    def on(mesh_shape, mm=m):
        k = int(np.prod(mesh_shape))
        mesh = parallel.mesh_for(mm.grid, devices[:k], shape=mesh_shape)
        return lambda: parallel.integrate(mm, mesh=mesh, **kw).us

    before = machine()
    strong = {
        "plain, 1 device": lambda: sk.integrate(m, **kw).us,
        "decomposed, 1 device": on((1, 1)),
    }
    if len(devices) >= 2:
        strong["decomposed, 2 devices (2x1 slabs)"] = on((2, 1))
    if len(devices) >= 4:
        strong["decomposed, 4 devices (4x1 slabs)"] = on((4, 1))
        strong["decomposed, 4 devices (2x2 pencils)"] = on((2, 2))
    compile_s = {k: timed(f) for k, f in strong.items()}
    t = interleaved(strong, args.repeats, warm_up=False)
    plain = t["plain, 1 device"]
    print(f"{len(devices)} CPU devices on {os.cpu_count()} cores; 2-D heat {n}x{n} float64, {steps} Euler steps")
    print("strong scaling (fixed grid):")
    for k, v in t.items():
        print(f"  {k:38s} {v:7.3f} s  {v / steps * 1e3:6.2f} ms/step  speed-up {plain / v:4.2f}x"
              f"   (compile + first {compile_s[k]:.2f} s)")
    print(f"  halo-exchange overhead (decomposed on 1 device / plain): {t['decomposed, 1 device'] / plain:.3f}")
    weak = {}
    for k, shape in [(k, (k, 1)) for k in (1, 2, 4) if k <= len(devices)]:
        mm = model(k * n // 2, n)
        weak[f"{k} device(s), {k * n // 2}x{n}"] = on(shape, mm)
    for f in weak.values():
        timed(f)
    tw = interleaved(weak, args.repeats, warm_up=False)
    base = next(iter(tw.values()))
    print("weak scaling (n/2 x n per device):")
    for k, v in tw.items():
        print(f"  {k:38s} {v:7.3f} s  efficiency {base / v:4.2f}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"strong_s": t, "speed_up": {k: plain / v for k, v in t.items()}, "weak_s": tw,
                   "compile_s": compile_s, "steps": steps, "n": n, "machine": before,
                   "load_average_after": list(os.getloadavg())}, fh, indent=1)
    print(f"  wrote {args.out}")


if __name__ == "__main__":
    main()
