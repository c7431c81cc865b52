"""XLA:CPU's small-while-loop threshold: simkit's workloads with each setting.

    python benchmarks/small_loops.py [--thresholds xla,32768,100000000] [--rounds 3] [--repeats 7]
        [--workloads lorenz_tsit5,...] [--out benchmarks/results/small_loops.json]

XLA:CPU runs a program as a sequence of thunks (a fusion, a copy, a loop), about 20 ns each
inside a loop on this machine. A while loop whose body accesses fewer bytes than
``xla_cpu_small_while_loop_byte_threshold`` (XLA's cost analysis, each loop body counted
once; XLA's default: 1 kB) is instead compiled into one kernel, with no per-thunk cost. The
threshold is an entry of ``xla_backend_extra_options``, which JAX's per-program
``compiler_options`` cannot set (a map; its cache key cannot hash one), so it is
process-wide, through ``XLA_FLAGS`` before JAX starts: each setting runs in fresh processes
of this script (``--child``), the settings interleaved over ``--rounds`` rounds, and each
row's median over the rounds of each process's median of ``--repeats`` calls (after the
compiling call, timed apart). ``xla``: XLA's default (``SIMKIT_SMALL_LOOPS=0``); a number:
that threshold in bytes (``SIMKIT_SMALL_LOOPS``). Every row records a hash of its result's
bytes (the settings checked bit for bit) and the largest difference from the first setting's
result, relative to the result's largest magnitude.

Rows: single solves (Lorenz t 0..100, rtol = atol = 1e-8, 1000 saves, Tsit5 and DOP853;
Robertson t 0..1e5, rtol 1e-6, atol 1e-10, 60 log-spaced saves, Rodas5P, RadauIIA5 and BDF;
HIRES rtol 1e-8, Rodas5P; POLLU rtol 1e-6, Rodas5P), the reverse-mode gradient of a Lorenz
loss, a diffrax solve through `simkit.solve` (Robertson, Kvaerno5), ensembles (10,000 Lorenz
members and 2,500 van der Pol members, as benchmarks/ensemble.py), stencil rollouts (2-D
heat with Euler at 64^2, 4,000 steps, 128^2, 1,000 steps, and 2048^2, 40 steps; Gray-Scott
128^2, RK4, 400 steps, and 256^2, 100 steps). Writes every sample, the medians, ratios against ``xla`` and the machine.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FLAG = "xla_cpu_small_while_loop_byte_threshold"
USER_FLAGS = os.environ.get("XLA_FLAGS", "")  # before simkit's import adds its own


# the rows, in order (the parent lists them without importing simkit or building the models)
NAMES = ("lorenz_tsit5", "lorenz_dop853", "robertson_rodas5p", "robertson_radau", "robertson_bdf",
         "hires_rodas5p", "pollu_rodas5p", "lorenz_grad", "robertson_diffrax_kvaerno5", "ensemble_lorenz_10000",
         "ensemble_vdp_2500", "heat_64_euler_4000", "heat_128_euler_1000", "heat_2048_euler_40",
         "gray_scott_128_rk4_400", "gray_scott_256_rk4_100")


def workloads() -> dict:
    """name -> a function returning the row's result (imports simkit: call in the child);
    the names are `NAMES`."""
    import jax
    import jax.numpy as jnp

    import simkit
    from simkit import models, stencil
    from simkit._config import configure_own_process
    configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it

    lz, rb = models.get("lorenz"), models.get("robertson")
    lz_ts = np.linspace(0.0, 100.0, 1000)
    rb_ts = np.concatenate([[0.0], np.logspace(-5, 5, 60)[1:]])

    def solve(model, t1, ts, rtol, atol, solver=None, **kw):
        extra = {} if solver is None else {"solver": solver}
        return lambda: simkit.solve(model, (0.0, t1), saveat=ts, rtol=rtol, atol=atol, **extra, **kw).ys

    hires, pollu = models.get("hires"), models.get("pollu")

    def lorenz_loss(p):
        sol = simkit.solve(lz, (0.0, 10.0), params={"sigma": p[0], "rho": p[1], "beta": p[2]}, saveat=50,
                           rtol=1e-8, atol=1e-8)
        return jnp.sum(sol.ys ** 2)

    grad = jax.jit(jax.grad(lorenz_loss))
    p0 = jnp.array([10.0, 28.0, 8.0 / 3.0])
    rng = np.random.default_rng(0)
    rhos = rng.uniform(10.0, 50.0, 10_000)
    vdp = models.get("van_der_pol")
    mus = np.exp(rng.uniform(np.log(0.1), np.log(100.0), 2_500))
    import diffrax

    sys.path.insert(0, HERE)
    from stencil import gray_scott_model, heat_model  # benchmarks/stencil.py

    def rollout(make, steps, stepper):  # the model is built when the row is run (`child`)
        build = functools.cache(make)

        def run():
            model = build()
            h = model.grid.spacing[0]
            dt = 0.2 * h * h / (2e-5 if model.name == "gray_scott" else 1.0)
            return stencil.integrate(model, dt=dt, steps=steps, stepper=stepper, check_stability=False).us

        run.build = build  # (called before the first, timed, call)
        return run

    rows = {
        "lorenz_tsit5": solve(lz, 100.0, lz_ts, 1e-8, 1e-8),
        "lorenz_dop853": solve(lz, 100.0, lz_ts, 1e-8, 1e-8, simkit.DOP853()),
        "robertson_rodas5p": solve(rb, 1e5, rb_ts, 1e-6, 1e-10),
        "robertson_radau": solve(rb, 1e5, rb_ts, 1e-6, 1e-10, simkit.RadauIIA5()),
        "robertson_bdf": solve(rb, 1e5, rb_ts, 1e-6, 1e-10, simkit.BDF()),
        "hires_rodas5p": solve(hires, float(hires.t_span[1]), 20, 1e-8, 1e-12),
        "pollu_rodas5p": solve(pollu, float(pollu.t_span[1]), 20, 1e-6, 1e-10),
        "lorenz_grad": lambda: grad(p0),
        "robertson_diffrax_kvaerno5": solve(rb, 1e5, rb_ts, 1e-6, 1e-10, diffrax.Kvaerno5()),
        "ensemble_lorenz_10000": lambda: simkit.ensemble(lz, (0.0, 10.0), params={"rho": rhos}, saveat=2,
                                                         rtol=1e-6, atol=1e-6).ys,
        "ensemble_vdp_2500": lambda: simkit.ensemble(vdp, (0.0, 20.0), params={"mu": mus}, saveat=2, rtol=1e-6,
                                                     atol=1e-6, solver=simkit.Rodas4()).ys,
        "heat_64_euler_4000": rollout(lambda: heat_model(64), 4000, stencil.ForwardEuler()),
        "heat_128_euler_1000": rollout(lambda: heat_model(128), 1000, stencil.ForwardEuler()),
        "heat_2048_euler_40": rollout(lambda: heat_model(2048), 40, stencil.ForwardEuler()),
        "gray_scott_128_rk4_400": rollout(lambda: gray_scott_model(128), 400, stencil.RK4()),
        "gray_scott_256_rk4_100": rollout(lambda: gray_scott_model(256), 100, stencil.RK4()),
    }
    assert tuple(rows) == NAMES, "NAMES must list the rows in order"
    return rows


def digest(out) -> str:
    """A short hash of a result's bytes (equal hashes: bit-identical results)."""
    import jax

    h = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(out):
        h.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    return h.hexdigest()[:16]


def flat(out):
    """A result's leaves as one float64 vector."""
    import jax

    return np.concatenate([np.ravel(np.asarray(leaf, np.float64)) for leaf in jax.tree_util.tree_leaves(out)])


def child(names: list[str], repeats: int, dump: str | None) -> dict:
    """Run in a process whose environment the parent set: first call and median run of each
    row; with ``dump``, each row's result saved there (``name.npy``) for the parent to compare."""
    import jax

    fns = workloads()
    rows = {}
    for name in names:
        fn = fns[name]
        if hasattr(fn, "build"):
            fn.build()  # a stencil row's model, outside the first call's time
        start = time.perf_counter()
        out = jax.block_until_ready(fn())
        first = time.perf_counter() - start
        if dump:
            np.save(os.path.join(dump, name + ".npy"), flat(out))
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            jax.block_until_ready(fn())
            samples.append(time.perf_counter() - start)
        rows[name] = dict(first_call_s=first, run_s=statistics.median(samples), samples_s=samples,
                          result=digest(out))
    return rows


def run_child(setting: str, names: list[str], repeats: int, dump: str | None) -> dict:
    """One child process with the setting, through simkit's own switch (``SIMKIT_SMALL_LOOPS``;
    ``xla``: 0, XLA's default)."""
    env = dict(os.environ, SIMKIT_COMPILATION_CACHE="0", SIMKIT_SMALL_LOOPS="0" if setting == "xla" else setting,
               XLA_FLAGS=USER_FLAGS)
    if FLAG in USER_FLAGS:
        raise SystemExit(f"XLA_FLAGS sets {FLAG} already: unset it to compare the settings")
    command = [sys.executable, os.path.abspath(__file__), "--child", ",".join(names), "--repeats", str(repeats)]
    out = subprocess.run(command + (["--dump", dump] if dump else []), env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--thresholds", default="xla,32768,100000000",
                        help="comma-separated settings: xla (XLA's default) or a threshold in bytes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--workloads", default=None, help="comma-separated row names (default: all)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--dump", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "small_loops.json"))
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child.split(","), args.repeats, args.dump)))
        return
    import simkit  # noqa: F401  (float64, devices: as the children run)
    from stencil import machine  # benchmarks/stencil.py

    before = machine()
    names = args.workloads.split(",") if args.workloads else list(NAMES)
    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        parser.error(f"unknown workloads {unknown}; the rows are {list(NAMES)}")
    settings = args.thresholds.split(",")
    start_all = time.perf_counter()
    runs: dict[str, list[dict]] = {s: [] for s in settings}
    tmp = tempfile.mkdtemp(prefix="small_loops_")
    dumps = {s: os.path.join(tmp, str(i)) for i, s in enumerate(settings)}
    for r in range(args.rounds):
        for s in settings:
            if r == 0:
                os.makedirs(dumps[s])
            runs[s].append(run_child(s, names, args.repeats, dumps[s] if r == 0 else None))
            print(f"round {r + 1}, {s}: done", file=sys.stderr)
    rows = {}
    for name in names:
        row = {}
        for s in settings:
            per = [run[name] for run in runs[s]]
            row[s] = dict(run_s=statistics.median(p["run_s"] for p in per),
                          first_call_s=statistics.median(p["first_call_s"] for p in per),
                          process_medians_s=[p["run_s"] for p in per], result=per[0]["result"],
                          same_result_every_round=len({p["result"] for p in per}) == 1)
        base = row[settings[0]]
        for s in settings:
            row[s]["speed_up"] = base["run_s"] / row[s]["run_s"]
            row[s]["bit_identical_to_" + settings[0]] = row[s]["result"] == base["result"]
            a, b = (np.load(os.path.join(dumps[k], name + ".npy")) for k in (s, settings[0]))
            # the largest difference, relative to the result's largest magnitude
            row[s]["max_difference_relative"] = float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))
        rows[name] = row
    shutil.rmtree(tmp)
    print(f"\n{'row':30s} " + " ".join(f"{s + ' run ms':>16s} {'first s':>8s} {'x':>5s} {'diff':>7s}"
                                       for s in settings))
    for name, row in rows.items():
        cells = []
        for s in settings:
            c = row[s]
            cells.append(f"{c['run_s'] * 1e3:16.3f} {c['first_call_s']:8.2f} {c['speed_up']:5.2f} "
                         f"{c['max_difference_relative']:7.0e}")
        print(f"{name:30s} " + " ".join(cells))
    result = dict(command="python benchmarks/small_loops.py " + " ".join(sys.argv[1:]),
                  flag=FLAG, settings=settings, rounds=args.rounds, repeats=args.repeats,
                  seconds=time.perf_counter() - start_all, machine=before, load_average_after=list(os.getloadavg()),
                  rows=rows)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
