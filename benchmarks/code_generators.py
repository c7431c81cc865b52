"""XLA:CPU's two code generators for simkit's programs: compile time against run time
(the goal: at most 1 s to compile a kernel; and the test suite's time).

    python benchmarks/code_generators.py [--rounds 2] [--repeats 7] [--members 10000]
                                         [--out benchmarks/results/code_generators.json]

Each round runs one fresh process per mode, in turn (each round starting with the next
mode: the third process of a round measured up to 20 % faster runs than the first, even of
the same program): ``default``
(``SIMKIT_FAST_COMPILE=0``: XLA's MLIR fusion emitters everywhere), ``fast``
(``SIMKIT_FAST_COMPILE=1``: its classic code generator everywhere) and ``auto`` (unset,
simkit's default: each solve or fit program of a model with at most 64 states compiles with
the classic generator, the rest with XLA's default; ``simkit/_codegen.py``). Each process
measures, with the persistent compilation cache off:

- compile + first call of each kernel on a new 3-state program (Lorenz's rhs as a new
  function; ``benchmarks/kernels.py``'s measure), and for the stiff kernels on Robertson;
- the first call of the Lorenz ``jax.grad`` program of ``benchmarks/derivatives.py`` (under
  ``jax.jit``: the enclosing program's options apply) and of the README's fit (Lotka-Volterra
  to the lynx-hare data, log-normal loss, 8 starts);
- run time (median of ``--repeats`` calls): Lorenz t 0..100, rtol = atol = 1e-8, 1000 saves
  (Tsit5), Robertson t 0..1e5, 1e-6 / 1e-10, 60 log-spaced saves (Rodas5P), and the
  ``--members`` Lorenz ensemble (rho ~ U[10, 50], t 0..10, 1e-6) in solves/s;
- larger systems, first call and run: BDF on the 1-D Brusselator of ``bdf_size.py`` (400 and
  1,600 states; banded at 1,600), on the 2-D Brusselator of ``stiff_mol.py`` (2,048 and
  10,368 states, rtol 1e-4) and diffrax's Tsit5 on the 64x64 heat equation (4,096 states).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

MODES = {"default": "0", "fast": "1", "auto": None}


def child(repeats: int, members: int) -> dict:
    os.environ["SIMKIT_COMPILATION_CACHE"] = "0"
    import jax
    import jax.numpy as jnp
    import numpy as np

    import simkit
    from simkit import models
    from simkit._config import configure_own_process
    configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it
    from timing import interleaved, timed  # benchmarks/timing.py

    lz, rob = models.get("lorenz"), models.get("robertson")
    out: dict = {"xla_flags": os.environ.get("XLA_FLAGS", "")}
    first = {}
    kernels = [(lz, "lorenz", s) for s in (simkit.Tsit5(), simkit.DOPRI5(), simkit.DOP853(), simkit.Rodas4(),
                                          simkit.Rodas5P(), simkit.RadauIIA5(), simkit.BDF())]
    kernels += [(rob, "robertson", s) for s in (simkit.Rodas5P(), simkit.RadauIIA5(), simkit.BDF())]
    for model, label, solver in kernels:
        fresh = model.replace(rhs=lambda t, y, p, f=model.rhs: f(t, y, p))  # a new function: a new program
        first[f"{solver!r} on {label}"] = timed(lambda: simkit.solve(fresh, (0.0, 1.0), saveat=11, solver=solver).ys)
    p = {k: jnp.asarray(v) for k, v in lz.params.items()}

    def loss(params):
        return jnp.sum(simkit.solve(lz, (0.0, 10.0), params=params, saveat=101, rtol=1e-8, atol=1e-8).ys ** 2)

    first["jax.grad of a Lorenz solve (Tsit5)"] = timed(lambda: jax.jit(jax.grad(loss))(p))
    from simkit import datasets

    first["the README's fit (Lotka-Volterra, 8 starts)"] = timed(lambda: simkit.fit(
        models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(), initial_state="fit",
        bounds="positive").theta)

    # larger systems: BDF on the 1-D Brusselator (benchmarks/bdf_size.py: 400 and 1,600 states,
    # simkit's default and the banded Jacobian) and the 2-D one (benchmarks/stiff_mol.py: 2,048
    # and 10,368 states, matrix-free), diffrax's Tsit5 on the 64x64 heat equation (4,096 states)
    import diffrax
    import stiff_mol
    from bdf_size import brusselator_jax, brusselator_numpy

    sized = {}
    for n in (200, 800):
        sized[f"BDF (default), 1-D Brusselator, {2 * n} states"] = (brusselator_jax(n), (0.0, 10.0), {})
    sized["BDF (banded), 1-D Brusselator, 1600 states"] = (
        brusselator_jax(800), (0.0, 10.0), dict(solver=simkit.BDF(jac_sparsity=brusselator_numpy(800)[1])))
    for n in (32, 72):
        sized[f"BDF (default), 2-D Brusselator, {2 * n * n} states"] = (stiff_mol.model(n), (0.0, 11.5),
                                                                        dict(rtol=1e-4, atol=1e-4))
    sized["diffrax Tsit5, 64x64 heat by the method of lines, 4096 states"] = (
        models.get("heat_2d"), (0.0, 0.2), dict(solver=diffrax.Tsit5()))
    sized_runs = {}
    for key, (model, span, kw) in sized.items():
        kw = dict(dict(saveat=2, rtol=1e-6, atol=1e-6), **kw)
        call = (lambda model, span, kw: lambda: simkit.solve(model, span, **kw).ys)(model, span, kw)
        first[key] = timed(call)
        sized_runs[f"{key} [s]"] = call
    out["compile_and_first_call_s"] = first

    rob_ts = np.concatenate([[0.0], np.logspace(-5, 5, 60)[1:]])
    rhos = jnp.asarray(np.random.default_rng(0).uniform(10.0, 50.0, members))
    runs = {
        "lorenz single solve [s]": lambda: simkit.solve(lz, (0.0, 100.0), saveat=1000, rtol=1e-8, atol=1e-8).ys,
        "robertson single solve [s]": lambda: simkit.solve(rob, (0.0, 1e5), saveat=rob_ts, rtol=1e-6,
                                                           atol=1e-10).ys,
        f"lorenz ensemble of {members} [s]": lambda: simkit.ensemble(lz, (0.0, 10.0), params={"rho": rhos},
                                                                     saveat=2, rtol=1e-6, atol=1e-6).ys,
    }
    out["run_s"] = interleaved(runs | sized_runs, repeats)
    out["ensemble_solves_per_s"] = members / out["run_s"][f"lorenz ensemble of {members} [s]"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "code_generators.json"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.repeats, args.members)))
        return
    from stencil import machine  # benchmarks/stencil.py

    start = time.perf_counter()
    runs: dict[str, list[dict]] = {m: [] for m in MODES}
    for r in range(args.rounds):
        order = list(MODES.items())
        order = order[r % len(order):] + order[:r % len(order)]  # each round starts with another mode
        for mode, flag in order:
            env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "SIMKIT_FAST_COMPILE")}
            if flag is not None:
                env["SIMKIT_FAST_COMPILE"] = flag
            proc = subprocess.run([sys.executable, __file__, "--child", "--repeats", str(args.repeats),
                                   "--members", str(args.members)], env=env, capture_output=True, text=True)
            if proc.returncode:
                raise SystemExit(proc.stderr[-3000:])
            runs[mode].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1}, {mode}: done", flush=True)

    def median(mode, section, key):
        return statistics.median(run[section][key] if section else run[key] for run in runs[mode])

    table = {}
    for section in ("compile_and_first_call_s", "run_s"):
        for key in runs["default"][0][section]:
            d, f, a = (median(m, section, key) for m in MODES)
            table[f"{section}: {key}"] = dict(default=d, fast=f, auto=a, fast_over_default=f / d,
                                             auto_over_default=a / d)
    d, f, a = (median(m, None, "ensemble_solves_per_s") for m in MODES)
    table["ensemble solves/s"] = dict(default=d, fast=f, auto=a, fast_over_default=f / d, auto_over_default=a / d)
    print(f"\n{'':64s} {'default':>9s} {'fast':>9s} {'auto':>9s} {'fast/def':>9s} {'auto/def':>9s}")
    for k, v in table.items():
        print(f"{k:64s} {v['default']:9.4g} {v['fast']:9.4g} {v['auto']:9.4g} {v['fast_over_default']:9.2f} "
              f"{v['auto_over_default']:9.2f}")
    result = dict(command=" ".join(["python benchmarks/code_generators.py", *sys.argv[1:]]), machine=machine(),
                  rounds=args.rounds, repeats=args.repeats, wall_s=time.perf_counter() - start,
                  note="medians over rounds of fresh processes (default = SIMKIT_FAST_COMPILE=0, MLIR fusion "
                       "emitters everywhere; fast = SIMKIT_FAST_COMPILE=1, XLA:CPU's classic code generator "
                       "everywhere; auto = unset, simkit's per-program choice)", table=table, runs=runs)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
