"""simkit benchmarks: run time and compile time against named peers, as ratio tables.

    python benchmarks/run.py [--repeats 7] [--out benchmarks/results/run.json]

simkit.solve with diffrax solvers against the same solve written by hand against diffrax (the
overhead of the front door), and SciPy with a plain NumPy rhs (`stiff.numpy_rhs`: the model's rhs
source run with NumPy; the implicit methods with SciPy's finite-difference Jacobian); start-up
in fresh processes. Every timing is the median of ``--repeats`` runs in this one process,
interleaved (peer, simkit, peer, simkit, ...; the slower SciPy rows in rounds of their own, at
least 3), after a warm-up call; compile time (first call) is reported apart. Absolute times drift ~30% between runs on a shared 2-core machine: read
the ratios.
"""

from __future__ import annotations

import os

# compile times are measured: no persistent compilation cache in this process
os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import diffrax as dfx
import jax
import jax.numpy as jnp
import numpy as np
import scipy
import scipy.integrate

import simkit
from simkit import models
from simkit.solvers import with_newton_tolerances
from simkit._config import configure_own_process
configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it
from stencil import machine  # benchmarks/stencil.py
from stiff import numpy_rhs  # benchmarks/stiff.py: the model's rhs source run with NumPy
from timing import interleaved, timed  # benchmarks/timing.py


def scipy_call(model, t1, n_save, method, rtol, atol):
    """SciPy's solve_ivp as its users write it: a NumPy rhs, n_save evenly spaced saves."""
    f, y0, t_eval = numpy_rhs(model), np.asarray(model.y0, float), np.linspace(0.0, t1, n_save)

    def call():
        out = scipy.integrate.solve_ivp(f, (0.0, t1), y0, method=method, t_eval=t_eval, rtol=rtol, atol=atol)
        assert out.status == 0, out.message
        return out.y
    return call


def hand_diffrax(model, solver, t1, rtol, atol, n_save, with_stats=False):
    """The same solve written directly against diffrax (default throw=True checks).

    ``with_stats`` also returns the step counters and the result, as simkit does: keeping
    them alive costs loop-carry work that a solve returning only ``ys`` does not pay.
    """
    f = model.rhs

    @jax.jit
    def run(y0, p):
        sol = dfx.diffeqsolve(
            dfx.ODETerm(f), solver, 0.0, t1, None, y0, args=p,
            saveat=dfx.SaveAt(ts=jnp.linspace(0.0, t1, n_save)),
            stepsize_controller=dfx.PIDController(rtol=rtol, atol=atol), max_steps=100_000,
        )
        return (sol.ys, sol.stats, sol.result == dfx.RESULTS.successful) if with_stats else sol.ys

    p = {k: jnp.asarray(v, jnp.float64) for k, v in model.params.items()}
    y0 = jnp.asarray(model.y0, jnp.float64)
    return lambda: run(y0, p)


def bench_solves(repeats: int) -> list[dict]:
    rows = []
    lorenz = models.get("lorenz")
    t1, tol, n = 100.0, 1e-8, 1000
    # the overhead of simkit.solve over the same diffrax solve: force the diffrax engine
    compile_s = timed(lambda: simkit.solve(lorenz, (0.0, t1), saveat=n, rtol=tol, atol=tol, solver=dfx.Tsit5()).ys)
    hand = hand_diffrax(lorenz, dfx.Tsit5(), t1, tol, tol, n)
    hand_compile = timed(hand)
    hand_stats = hand_diffrax(lorenz, dfx.Tsit5(), t1, tol, tol, n, with_stats=True)
    timed(hand_stats)
    fns = {
        "simkit": lambda: simkit.solve(lorenz, (0.0, t1), saveat=n, rtol=tol, atol=tol, solver=dfx.Tsit5()).ys,
        "diffrax Tsit5 (hand-written)": hand,
        "diffrax Tsit5 (hand-written, returning stats+result)": hand_stats,
    }
    t = interleaved(fns, repeats)
    scipy_t = interleaved({m: scipy_call(lorenz, t1, n, m, tol, tol) for m in ("DOP853", "RK45")},
                          max(3, repeats // 2))
    rows.append({"problem": "Lorenz t 0..100, rtol=atol=1e-8, 1000 saves (simkit.solve with diffrax.Tsit5)", "simkit_s": t["simkit"],
                 "simkit_compile_s": compile_s,
                 "peers": {"diffrax Tsit5 (hand-written)": t["diffrax Tsit5 (hand-written)"],
                           "diffrax Tsit5 (hand-written, returning stats+result)":
                               t["diffrax Tsit5 (hand-written, returning stats+result)"],
                           "scipy DOP853 (NumPy rhs)": scipy_t["DOP853"], "scipy RK45 (NumPy rhs)": scipy_t["RK45"]},
                 "peer_compile_s": {"diffrax Tsit5 (hand-written)": hand_compile}})

    rob = models.get("robertson")
    t1, rtol, atol, n = 1e5, 1e-6, 1e-10, 100
    default_kvaerno5 = with_newton_tolerances(dfx.Kvaerno5(), rtol, atol)  # what simkit builds
    compile_s = timed(lambda: simkit.solve(rob, saveat=n, rtol=rtol, atol=atol, solver=default_kvaerno5).ys)
    same = with_newton_tolerances(dfx.Kvaerno5(), rtol, atol)
    hand_same = hand_diffrax(rob, same, t1, rtol, atol, n)
    hand_default = hand_diffrax(rob, dfx.Kvaerno5(), t1, rtol, atol, n)
    hand_same_stats = hand_diffrax(rob, same, t1, rtol, atol, n, with_stats=True)
    hand_compile = timed(hand_same)
    timed(hand_default)
    timed(hand_same_stats)
    fns = {
        "simkit": lambda: simkit.solve(rob, saveat=n, rtol=rtol, atol=atol, solver=default_kvaerno5).ys,
        "diffrax Kvaerno5, same Newton tolerances (hand-written)": hand_same,
        "  the same, returning stats+result": hand_same_stats,
        "diffrax Kvaerno5, default Newton tolerances": hand_default,
    }
    t = interleaved(fns, repeats)
    peers = {k: v for k, v in t.items() if k != "simkit"}
    scipy_t = interleaved({m: scipy_call(rob, t1, n, m, rtol, atol) for m in ("Radau", "BDF", "LSODA")},
                          max(3, repeats // 2))
    peers |= {f"scipy {m} (NumPy rhs, FD Jacobian)": v for m, v in scipy_t.items()}
    rows.append({"problem": "Robertson t 0..1e5, rtol 1e-6, atol 1e-10 (simkit.solve with diffrax.Kvaerno5)", "simkit_s": t["simkit"],
                 "simkit_compile_s": compile_s, "peers": peers,
                 "peer_compile_s": {"diffrax Kvaerno5, same Newton tolerances (hand-written)": hand_compile}})
    return rows


_FRESH = """
import time; t = time.perf_counter()
import simkit
t_import = time.perf_counter() - t
from simkit import models
t = time.perf_counter()
sol = simkit.solve(models.get("lorenz"), (0.0, 100.0), saveat=1000, rtol=1e-8, atol=1e-8)  # kernel
sol.ys.block_until_ready()
print(t_import, time.perf_counter() - t)
"""


def bench_startup(repeats: int) -> dict:
    """Fresh processes: import time, first result with a cold and a warm persistent cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "EQX_ON_ERROR"}
        env.update(SIMKIT_CACHE_DIR=cache, SIMKIT_COMPILATION_CACHE="1")

        def once():
            out = subprocess.run([sys.executable, "-c", _FRESH], env=env, capture_output=True, text=True, check=True)
            return [float(x) for x in out.stdout.split()]

        cold = once()
        warm = [once() for _ in range(repeats)]
    return {
        "import_s": statistics.median(w[0] for w in warm),
        "first_result_cold_cache_s": cold[1],
        "first_result_warm_cache_s": statistics.median(w[1] for w in warm),
    }


def print_table(rows: list[dict], startup: dict) -> None:
    for row in rows:
        print(f"\n{row['problem']}")
        print(f"  {'solver':58s} {'run [ms]':>10s} {'peer/simkit':>12s} {'compile [s]':>12s}")
        print(f"  {'simkit':58s} {row['simkit_s'] * 1e3:10.3f} {'1.00':>12s} {row['simkit_compile_s']:12.2f}")
        for name, sec in row["peers"].items():
            comp = row["peer_compile_s"].get(name)
            comp_s = f"{comp:12.2f}" if comp is not None else f"{'':12s}"
            print(f"  {name:58s} {sec * 1e3:10.3f} {sec / row['simkit_s']:12.2f} {comp_s}")
    print("\nstart-up (fresh processes)")
    for k, v in startup.items():
        print(f"  {k:32s} {v:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "run.json"))
    args = parser.parse_args()
    before = machine()
    start = time.perf_counter()
    rows = bench_solves(args.repeats)
    startup = bench_startup(max(3, args.repeats // 2))
    print_table(rows, startup)
    wall = time.perf_counter() - start
    print(f"\nwall time {wall:.0f} s")
    versions = dict(scipy=scipy.__version__, simkit=simkit.__version__, diffrax=getattr(dfx, "__version__", ""))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"command": " ".join(["python benchmarks/run.py", *sys.argv[1:]]), "machine": before | versions,
                   "load_average_after": list(os.getloadavg()), "wall_s": wall, "repeats": args.repeats,
                   "solves": rows, "startup": startup}, fh, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
