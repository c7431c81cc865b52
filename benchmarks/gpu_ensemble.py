"""Large ensembles on an accelerator, float64 and float32, and the same on a CPU.

    python benchmarks/gpu_ensemble.py [--lorenz 1000000] [--robertson 100000]
        [--lanes-lorenz 65536,1048576] [--lanes-robertson 32768]
        [--repeats 5] [--budget-s 480] [--out benchmarks/results/gpu_ensemble.json]

Lorenz (rho ~ U[10, 50], t 0..10, rtol = atol = 1e-6, float32 2e-5, Tsit5, ``--lorenz`` members) and
Robertson (k1 log-uniform in [0.01, 0.1], t 0..1e5, Rodas5P; float64 rtol 1e-6, atol 1e-10,
float32 rtol 1e-4, atol 1e-8: float32 has 7 digits), each saving the state at t0 and t1, in
solves per second of `simkit.ensemble` on the default device (the accelerator where one is
present, else the CPU devices), for the default lane count and each ``--lanes-*`` value
(``chunk_size``: lanes per device of the refilled queue; the default is 256 on a CPU,
2^17 on an accelerator, fewer for smaller ensembles), with whether each lane count's results are the
default's bit for bit. Compile + first call and the median of ``--repeats`` rounds (each
round runs every lane count once, interleaved) are reported apart. Each precision runs in its own process
(``SIMKIT_ENABLE_X64=0`` for float32). On an accelerator, the first 256 members are also
solved on the host's CPU device in the same process, and the largest relative difference
of the final states is reported (Lorenz at t = 10 is chaotic: rounding differences grow
along the trajectory; Robertson's are the solver's own).

Configurations still to run once ``--budget-s`` seconds have passed in a process are
skipped and listed under ``skipped``; results are written after each configuration.
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


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def workloads(args, x64: bool):
    import numpy as np

    from simkit import models

    rng = np.random.default_rng(0)
    lorenz = dict(model=models.get("lorenz"), t_span=(0.0, 10.0), params={"rho": rng.uniform(10.0, 50.0, args.lorenz)},
                  rtol=1e-6 if x64 else 2e-5, atol=1e-6 if x64 else 2e-5, lanes=_ints(args.lanes_lorenz))
    k1 = np.exp(rng.uniform(np.log(0.01), np.log(0.1), args.robertson))
    robertson = dict(model=models.get("robertson"), t_span=(0.0, 1e5), params={"k1": k1},
                     rtol=1e-6 if x64 else 1e-4, atol=1e-10 if x64 else 1e-8,
                     lanes=_ints(args.lanes_robertson), solver="Rodas5P")
    return dict(lorenz=lorenz, robertson=robertson)


def child(args) -> None:
    """One precision, in this process: the rows of every workload."""
    import jax
    import numpy as np

    import simkit

    x64 = bool(jax.config.jax_enable_x64)
    start = time.perf_counter()
    device = jax.devices()[0]
    out = dict(precision="float64" if x64 else "float32", backend=jax.default_backend(),
               device=getattr(device, "device_kind", str(device)), n_devices=len(jax.devices()),
               jax=jax.__version__, rows=[], skipped=[])

    def save():
        with open(args.child_out, "w") as fh:
            json.dump(out, fh, indent=1)

    def run(w, lanes, devices=None, params=None):
        solver = getattr(simkit, w["solver"])() if "solver" in w else None
        sol = simkit.ensemble(w["model"], w["t_span"], params=params or w["params"], saveat=2, rtol=w["rtol"],
                              atol=w["atol"], solver=solver, chunk_size=lanes, devices=devices, progress=False)
        return sol, np.asarray(sol.ys)

    for name, w in workloads(args, x64).items():
        members = len(next(iter(w["params"].values())))
        configs, rows, reference = [], {}, None
        for lanes in [None, *w["lanes"]]:  # compile + first call of each lane count
            label = f"{name}, lanes={lanes or 'default'}"
            if time.perf_counter() - start > args.budget_s:
                out["skipped"].append(label)
                save()
                continue
            t0 = time.perf_counter()
            sol, ys = run(w, lanes)
            first = time.perf_counter() - t0
            row = dict(workload=name, members=members, lanes=lanes, rtol=w["rtol"], atol=w["atol"],
                       solver=sol.solver_name, compile_and_first_call_s=first, runs_s=[],
                       failures=int(np.sum(~np.asarray(sol.ok))), mean_steps=float(np.mean(sol.stats["num_steps"])),
                       max_steps=int(np.max(sol.stats["num_steps"])))
            if reference is None:
                reference = ys
            else:
                row["bit_identical_to_default_lanes"] = bool(np.array_equal(ys, reference, equal_nan=True))
                row["max_abs_diff_vs_default_lanes"] = float(np.nanmax(np.abs(ys - reference)))
            if lanes is None and jax.default_backend() != "cpu":
                cpu = jax.devices("cpu")[:1]
                sub = {k: v[:256] for k, v in w["params"].items()}
                sol_cpu, ys_cpu = run(w, None, devices=cpu, params=sub)
                row["same_step_counts_as_cpu_first_256"] = bool(np.array_equal(
                    np.asarray(sol_cpu.stats["num_steps"]), np.asarray(sol.stats["num_steps"])[:256]))
                scale = np.maximum(np.abs(ys_cpu[:, -1]), w["atol"] / w["rtol"])
                row["max_rel_diff_vs_cpu_first_256"] = float(np.max(np.abs(ys[:256, -1] - ys_cpu[:, -1]) / scale))
            configs.append(lanes)
            rows[lanes] = row
        for _ in range(args.repeats):  # interleaved rounds: one run of each lane count per round
            for lanes in configs:
                t0 = time.perf_counter()
                run(w, lanes)
                rows[lanes]["runs_s"].append(time.perf_counter() - t0)
        for lanes in configs:
            row = rows[lanes]
            row["run_s"] = statistics.median(row["runs_s"])
            row["solves_per_s"] = members / row["run_s"]
            print(f"{out['precision']} {name}, lanes={lanes or 'default'}: {row['solves_per_s']:,.0f} solves/s "
                  f"(run {row['run_s']:.3f} s, compile + first call {row['compile_and_first_call_s']:.1f} s, "
                  f"failures {row['failures']}, mean steps {row['mean_steps']:.0f})", flush=True)
            out["rows"].append(row)
        out["wall_s"] = time.perf_counter() - start
        save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lorenz", type=int, default=1_000_000)
    parser.add_argument("--robertson", type=int, default=100_000)
    parser.add_argument("--lanes-lorenz", default="65536,1048576")
    parser.add_argument("--lanes-robertson", default="32768")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=480.0,
                        help="per precision: configurations not started by then are skipped")
    sys.path.insert(0, HERE)
    from timing import precision_main  # benchmarks/timing.py

    precision_main(parser, child, __file__, os.path.join(HERE, "results", "gpu_ensemble.json"))


if __name__ == "__main__":
    main()
