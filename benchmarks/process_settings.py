"""What each opt-in of `simkit.configure` buys on a CPU: the cost of leaving it off.

    python benchmarks/process_settings.py [--rounds 3] [--repeats 15] [--members 10000]
        [--out benchmarks/results/process_settings.json]

``import simkit`` changes only float64; the settings below are opt-in (simkit/_config.py).
Each is measured in fresh processes, off and on, through its environment variable (the
settings interleaved in every round; each row the median over the rounds of each process's
median of ``--repeats`` calls after the compiling call):

* ``SIMKIT_CPU_DEVICES`` 1 against 2 and one per core: a Lorenz ensemble (rho ~ U[10, 50], t 0..10,
  rtol = atol = 1e-6, saving at the ends, ``--members`` members), solves per second.
* ``SIMKIT_CPU_ASYNC_DISPATCH`` 1 (JAX's default) against 0: a Robertson solve (Rodas5P,
  t 0..1e3, 11 saves), back to back and after a 2 ms pause.
* ``SIMKIT_SMALL_LOOPS``: unset (simkit's one-kernel solves, per program), 131072 (XLA's
  threshold for every program) and 0 (neither): Lorenz with Tsit5 (t 0..100, 1,000 saves,
  rtol = atol = 1e-8), the gradient of a Lorenz loss under ``jax.jit``, Robertson through
  diffrax (Kvaerno5).
* ``SIMKIT_COMPILATION_CACHE`` 0 against 1 (a cache that an earlier process filled): the
  first Lorenz solve of a fresh process, compile included.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORES = min(os.cpu_count() or 1, 32)
# name -> (environment of each setting, rows)
SETTINGS = {
    "cpu_devices": ({str(n): dict(SIMKIT_CPU_DEVICES=str(n)) for n in sorted({1, 2, CORES})}, ("ensemble_lorenz",)),
    "async_dispatch": ({"on (JAX's default)": dict(SIMKIT_CPU_ASYNC_DISPATCH="1"),
                        "off": dict(SIMKIT_CPU_ASYNC_DISPATCH="0")}, ("robertson", "robertson_after_pause")),
    "small_loops": ({"per program (default)": {}, "XLA threshold 131072": dict(SIMKIT_SMALL_LOOPS="131072"),
                     "neither (0)": dict(SIMKIT_SMALL_LOOPS="0")},
                    ("lorenz_tsit5", "lorenz_grad", "robertson_diffrax_kvaerno5")),
    "compilation_cache": ({"off (default)": dict(SIMKIT_COMPILATION_CACHE="0"),
                           "on, filled": dict(SIMKIT_COMPILATION_CACHE="1")}, ("first_lorenz_solve",)),
}


def rows(members: int) -> dict:
    """name -> a function returning the row's result (in the child: imports simkit)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import simkit
    from simkit import models

    lz, rb = models.get("lorenz"), models.get("robertson")
    ts = np.linspace(0.0, 100.0, 1000)
    rhos = np.random.default_rng(0).uniform(10.0, 50.0, members)

    def loss(p):
        sol = simkit.solve(lz, (0.0, 10.0), params={"sigma": p[0], "rho": p[1], "beta": p[2]}, saveat=50,
                           rtol=1e-8, atol=1e-8)
        return jnp.sum(sol.ys ** 2)

    grad, p0 = jax.jit(jax.grad(loss)), jnp.array([10.0, 28.0, 8.0 / 3.0])
    import diffrax

    def robertson():
        return simkit.solve(rb, (0.0, 1e3), saveat=11).ys

    def after_pause():
        time.sleep(0.002)  # (outside the timed call: see `child`)
        return robertson

    return {
        "ensemble_lorenz": lambda: simkit.ensemble(lz, (0.0, 10.0), params={"rho": rhos}, saveat=2, rtol=1e-6,
                                                   atol=1e-6).ys,
        "robertson": robertson,
        "robertson_after_pause": after_pause,
        "lorenz_tsit5": lambda: simkit.solve(lz, (0.0, 100.0), saveat=ts, rtol=1e-8, atol=1e-8).ys,
        "lorenz_grad": lambda: grad(p0),
        "robertson_diffrax_kvaerno5": lambda: simkit.solve(rb, (0.0, 1e5), saveat=11, rtol=1e-6, atol=1e-10,
                                                           solver=diffrax.Kvaerno5()).ys,
        "first_lorenz_solve": lambda: simkit.solve(lz, (0.0, 10.0), saveat=101).ys,
    }


def child(names: list[str], repeats: int, members: int) -> dict:
    import jax

    start = time.perf_counter()
    fns = rows(members)
    out = {"import_s": time.perf_counter() - start, "devices": len(jax.devices())}
    for name in names:
        fn = fns[name]
        start = time.perf_counter()
        jax.block_until_ready(fn() if name != "robertson_after_pause" else fn()())
        out[name + ":first_s"] = time.perf_counter() - start
        samples, cpu = [], []
        for _ in range(repeats):
            call = fn() if name == "robertson_after_pause" else fn  # the pause, then the timed call
            start, start_cpu = time.perf_counter(), time.process_time()
            jax.block_until_ready(call() if name == "robertson_after_pause" else call())
            samples.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        out[name] = statistics.median(samples)
        # cores kept busy: CPU time over wall time (on a shared machine, what the process got)
        out[name + ":cores"] = statistics.median(c / w for c, w in zip(cpu, samples))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--only", default=None, help="comma-separated settings (default: all)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "process_settings.json"))
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child.split(","), args.repeats, args.members)))
        return
    cache = tempfile.mkdtemp(prefix="simkit-cache-")
    base = {k: v for k, v in os.environ.items() if not k.startswith("SIMKIT_") and k != "XLA_FLAGS"}
    base.update(SIMKIT_CACHE_DIR=cache, SIMKIT_PROGRESS="0")

    def run(env: dict, names: tuple) -> dict:
        command = [sys.executable, os.path.abspath(__file__), "--child", ",".join(names),
                   "--repeats", str(args.repeats), "--members", str(args.members)]
        done = subprocess.run(command, env={**base, **env}, capture_output=True, text=True, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    chosen = args.only.split(",") if args.only else list(SETTINGS)
    if "compilation_cache" in chosen:
        run(dict(SIMKIT_COMPILATION_CACHE="1"), ("first_lorenz_solve",))  # fills the cache
    samples: dict = {name: {value: [] for value in SETTINGS[name][0]} for name in chosen}
    for _ in range(args.rounds):
        for name in chosen:
            values, names = SETTINGS[name]
            for value, env in values.items():
                samples[name][value].append(run(env, names))
    report = {}
    for name in chosen:
        names = SETTINGS[name][1]
        report[name] = {}
        for value, runs in samples[name].items():
            keys = [k for k in runs[0] if k.split(":")[0] in names]
            report[name][value] = {k: statistics.median(r[k] for r in runs) for k in keys}
            print(f"{name:18s} {value:24s} " + "  ".join(
                f"{k} {v:.2f}" if k.endswith(":cores") else f"{k} {v * 1e3:.3f} ms" for k, v in report[name][value].items()))
    record = dict(command="python benchmarks/process_settings.py " + " ".join(sys.argv[1:]),
                  date=time.strftime("%Y-%m-%d"), cpu_count=os.cpu_count(), rounds=args.rounds,
                  repeats=args.repeats, members=args.members, medians=report, samples=samples)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
