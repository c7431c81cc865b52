"""Where a simkit stencil step's time goes on an accelerator.

    python benchmarks/experiments/gpu_stencil_anatomy.py [--sizes 2048,8192] [--steps 20]
        [--repeats 5] [--out-dir DIR]

The 2-D heat step of `benchmarks/stencil.py` (explicit Euler, periodic 5-point Laplacian,
float64), each variant a ``jax.jit`` program of ``--steps`` steps (per-step medians of
``--repeats`` interleaved calls): (A) `simkit.stencil.integrate`; (B) the model's rhs (simkit's
operators on ``space.pad``) stepped by a plain ``fori_loop``, one step per iteration; (C) the
same step through `simkit.stencil.stepping.repeat_in_two_buffers` (two steps per iteration,
the first in its own buffer by a ``lax.cond``: simkit's loop); (D) ``jnp.roll`` in a plain
``fori_loop``. Writes the rows as JSON and the optimised HLO of (A) and (B) at the largest size
into ``--out-dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from simkit import stencil as sk  # noqa: E402
from simkit.stencil.pde import Space  # noqa: E402
from simkit.stencil.stepping import repeat_in_two_buffers  # noqa: E402
from stencil import heat_model, roll_heat  # noqa: E402  (benchmarks/stencil.py)
from timing import first_and_rounds  # noqa: E402  (benchmarks/timing.py)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2048,8192")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out-dir", default=".")
    args = parser.parse_args()
    out = dict(command=" ".join(["python benchmarks/experiments/gpu_stencil_anatomy.py", *sys.argv[1:]]),
               backend=jax.default_backend(), device=getattr(jax.devices()[0], "device_kind", ""),
               jax=jax.__version__, rows={})
    steps = args.steps
    sizes = [int(s) for s in args.sizes.split(",")]
    for n in sizes:
        heat = heat_model(n)
        h = heat.grid.spacing[0]
        dt = 0.2 * h * h
        c = dt / (h * h)
        space = Space(heat.grid, heat.bcs)
        params = {k: jnp.asarray(v) for k, v in heat.params.items()}
        u0 = jnp.asarray(heat.u0)

        def step(u):
            return u + dt * heat.rhs(0.0, u, params, space)

        @jax.jit
        def plain(u):
            return jax.lax.fori_loop(0, steps, lambda _, u: step(u), u)

        @jax.jit
        def two_buffers(u):
            return repeat_in_two_buffers(lambda s: (step(s[0]),), steps, (u,))[0]

        roll = roll_heat(c, steps)
        fns = {
            "A simkit integrate": lambda: sk.integrate(heat, dt=dt, steps=steps, stepper=sk.ForwardEuler(),
                                                       check_stability=False).us[-1],
            "B simkit rhs, plain fori_loop": lambda: plain(u0),
            "C simkit rhs, two buffers (lax.cond)": lambda: two_buffers(u0),
            "D jnp.roll, plain fori_loop": lambda: roll(u0),
        }
        first, samples = first_and_rounds(fns, args.repeats, dict.fromkeys(fns, steps))
        results = {k: np.asarray(f()) for k, f in fns.items()}
        median = {k: statistics.median(v) for k, v in samples.items()}
        ref = results["D jnp.roll, plain fori_loop"].reshape(-1)
        agree = {k: float(np.max(np.abs(v.reshape(-1) - ref))) for k, v in results.items()}
        out["rows"][str(n)] = dict(per_step_s=median, samples=samples, first_call_s=first, max_abs_diff_vs_roll=agree)
        print(f"{n}^2: " + "; ".join(f"{k} {v * 1e3:.3f} ms" for k, v in median.items()), flush=True)
        if n == max(sizes):
            for name, fn in (("A", jax.jit(lambda u: sk.rollout(heat, u0=u, dt=dt, steps=steps,
                                                                stepper=sk.ForwardEuler())[0])),
                             ("B", plain), ("C", two_buffers)):
                with open(os.path.join(args.out_dir, f"heat_{n}_{name}.hlo.txt"), "w") as fh:
                    fh.write(fn.lower(u0).compile().as_text())
        with open(os.path.join(args.out_dir, "gpu_stencil_anatomy.json"), "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
