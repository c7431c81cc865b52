"""Two checkouts of simkit on the kernels' hot paths, in alternating fresh processes (session 36).

    git worktree add /tmp/simkit_old <commit>
    python benchmarks/experiments/kernel_chains_ab.py --old /tmp/simkit_old [--pairs 3] [--out FILE]

Written for session 36's changes to the small LU's dependent chains (`simkit.kernels.linalg`)
and the explicit controller's powers (`simkit.kernels.methods.fast_log2`/`fast_exp2`). Each
process imports simkit from one checkout (``PYTHONPATH``), the two alternating for
``--pairs`` pairs, and times:

- single solves inside ``jax.jit`` (a parameter passed in, 20 saves), each the median of 5
  rounds of 50 calls back to back: Robertson (t to 1e5, rtol 1e-6, atol 1e-10) with Rodas5P,
  Rodas4, RadauIIA5 and BDF; HIRES (its span, 1e-8 / 1e-12) with Rodas5P and BDF; van der Pol
  mu = 1000 (its span, 1e-6) with Rodas5P; Lorenz (t 0..100, rtol = atol = 1e-8, 1,000
  saves) with Tsit5 and DOP853;
- `simkit.ensemble` as `benchmarks/ensemble.py` runs it: 10,000 Lorenz members (rho ~ U[10,
  50], t 0..10, 1e-6, the default Tsit5) and 2,500 van der Pol members (mu log-uniform in
  [0.1, 100], t 0..20, 1e-6, Rodas4), solves/s, the median of 7 calls.

Each row also records its steps, so that a change of speed is not a change of work.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def worker() -> dict:
    os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")
    import jax
    import numpy as np

    import simkit
    from simkit import models

    out = {}
    singles = [
        ("robertson", "Rodas5P", 1e-6, 1e-10, 1e5, 20), ("robertson", "Rodas4", 1e-6, 1e-10, 1e5, 20),
        ("robertson", "RadauIIA5", 1e-6, 1e-10, 1e5, 20), ("robertson", "BDF", 1e-6, 1e-10, 1e5, 20),
        ("hires", "Rodas5P", 1e-8, 1e-12, None, 20), ("hires", "BDF", 1e-8, 1e-12, None, 20),
        ("van_der_pol_stiff", "Rodas5P", 1e-6, 1e-6, None, 20),
        ("lorenz", "Tsit5", 1e-8, 1e-8, 100.0, 1000), ("lorenz", "DOP853", 1e-8, 1e-8, 100.0, 1000),
    ]
    for name, solver_name, rtol, atol, t1, saves in singles:
        model = models.get(name)
        span = (model.t_span[0], t1 if t1 else model.t_span[1])
        solver = getattr(simkit, solver_name)()

        def run(p, model=model, span=span, solver=solver, rtol=rtol, atol=atol, saves=saves):
            sol = simkit.solve(model, span, params=p, saveat=saves, solver=solver, rtol=rtol, atol=atol)
            return sol.ys, sol.stats["num_steps"]

        fn, p0 = jax.jit(run), dict(model.params)
        ys, steps = fn(p0)
        jax.block_until_ready(ys)
        rounds = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(50):
                ys, _ = fn(p0)
            jax.block_until_ready(ys)
            rounds.append((time.perf_counter() - start) / 50)
        out[f"{name} {solver_name} in jax.jit [ms]"] = dict(value=1e3 * statistics.median(rounds), steps=int(steps))

    rng = np.random.default_rng(0)
    rhos = rng.uniform(10.0, 50.0, 10_000)
    mus = np.exp(rng.uniform(np.log(0.1), np.log(100.0), 2_500))
    lorenz, vdp = models.get("lorenz"), models.get("van_der_pol")
    ensembles = {
        "lorenz ensemble, 10,000 members [solves/s]": (lambda: simkit.ensemble(
            lorenz, (0.0, 10.0), params={"rho": rhos}, saveat=2, rtol=1e-6, atol=1e-6), len(rhos)),
        "van der Pol ensemble, 2,500 members, Rodas4 [solves/s]": (lambda: simkit.ensemble(
            vdp, (0.0, 20.0), params={"mu": mus}, saveat=2, rtol=1e-6, atol=1e-6, solver=simkit.Rodas4()), len(mus)),
    }
    for key, (fn, members) in ensembles.items():
        sol = fn()
        np.asarray(sol.ys)
        times = []
        for _ in range(7):
            start = time.perf_counter()
            np.asarray(fn().ys)
            times.append(time.perf_counter() - start)
        out[key] = dict(value=members / statistics.median(times), steps=int(np.sum(np.asarray(sol.stats["num_steps"]))))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", help="the other checkout (a git worktree)")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker()))
        return
    if not args.old:
        ap.error("--old is required")
    sys.path.insert(0, os.path.dirname(HERE))
    from stencil import machine  # benchmarks/stencil.py

    def commit(path):
        return subprocess.run(["git", "-C", path, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()

    before = machine()
    runs = {"old": [], "new": []}
    for pair in range(args.pairs):
        for side, path in (("old", os.path.abspath(args.old)), ("new", REPO)):
            env = dict(os.environ, PYTHONPATH=path)
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker"], env=env, cwd="/tmp",
                                  capture_output=True, text=True, check=True)
            runs[side].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"pair {pair + 1} {side} done", flush=True)
    rows = {}
    for key in runs["old"][0]:
        old = [r[key]["value"] for r in runs["old"]]
        new = [r[key]["value"] for r in runs["new"]]
        rows[key] = dict(old=old, new=new, old_median=statistics.median(old), new_median=statistics.median(new),
                         paired_new_over_old=[n / o for o, n in zip(old, new)],
                         steps_old=runs["old"][0][key]["steps"], steps_new=runs["new"][0][key]["steps"])
        print(f"{key:55s} {rows[key]['old_median']:10.4g} -> {rows[key]['new_median']:10.4g}  "
              f"(paired {', '.join(f'{r:.2f}' for r in rows[key]['paired_new_over_old'])}; "
              f"steps {rows[key]['steps_old']} / {rows[key]['steps_new']})")
    result = dict(command=" ".join([os.path.basename(sys.executable)] + sys.argv), old=commit(args.old),
                  new=commit(REPO), machine_before=before, machine_after=machine(), rows=rows)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
