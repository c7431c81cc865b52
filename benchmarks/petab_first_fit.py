"""A PEtab problem's first fit in a fresh process: without and with JAX's persistent
compilation cache (`simkit.configure(compilation_cache=True)`), the cache filled by an earlier
process of the same problem.

    python benchmarks/petab_first_fit.py --collection DIR [--problem Rahman_MBS2016] [--starts 1]
        [--rounds 3] [--out benchmarks/results/petab_first_fit_cache.json]

Each round runs one fresh process without the cache and one with it (in that order, so the
cache a round reads was written by the rounds before, and the first round fills it: that round's
cached process is not counted). Each process loads the problem and times its first
`PetabProblem.fit` of ``--starts`` starts (drawn with seed 0), CPU seconds, with JAX's own
accounting of that call: tracing, lowering to MLIR, XLA's compiling, reading the cache. Rows:
the median over the counted rounds. Pin the process for steady numbers (``taskset -c 1``,
``OMP_NUM_THREADS=1``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "results", "petab_first_fit_cache.json")

CHILD = r"""
import collections, json, sys, time
from jax import monitoring
events = collections.defaultdict(float)
def listen(event, secs, **kw):
    events[event] += secs
monitoring.register_event_duration_secs_listener(listen)
import simkit, simkit.petab
if sys.argv[3] == "1":
    simkit.configure(compilation_cache=True)
start = time.process_time()
problem = simkit.petab.load(sys.argv[1])
load = time.process_time() - start
x0 = problem.sample_starts(int(sys.argv[2]), seed=0)
events.clear()
start = time.process_time()
fit = problem.fit(x0)
first = time.process_time() - start
names = {"trace_s": "/jax/core/compile/jaxpr_trace_duration",
         "lower_s": "/jax/core/compile/jaxpr_to_mlir_module_duration",
         "compile_s": "/jax/core/compile/backend_compile_duration",
         "cache_read_s": "/jax/compilation_cache/cache_retrieval_time_sec"}
print(json.dumps({"load_cpu_s": load, "first_fit_cpu_s": first, "best_cost": float(fit.cost[0]),
                  **{k: events.get(v, 0.0) for k, v in names.items()}}))
"""


def child(yaml: str, starts: int, cache: bool, cache_dir: str) -> dict:
    env = dict(os.environ, SIMKIT_CACHE_DIR=cache_dir, SIMKIT_COMPILATION_CACHE="0")
    out = subprocess.run([sys.executable, "-c", CHILD, yaml, str(starts), "1" if cache else "0"], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", required=True, help="the Benchmark-Models folder of the collection")
    parser.add_argument("--problem", default="Rahman_MBS2016")
    parser.add_argument("--starts", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3, help="counted rounds (one more fills the cache)")
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args()
    yaml = os.path.join(args.collection, args.problem, f"{args.problem}.yaml")
    runs: dict[str, list[dict]] = {"without": [], "with": []}
    with tempfile.TemporaryDirectory() as cache_dir:
        for round_ in range(args.rounds + 1):
            without = child(yaml, args.starts, False, cache_dir)
            cached = child(yaml, args.starts, True, cache_dir)
            if round_ > 0:  # the first round's cached process filled the cache
                runs["without"].append(without)
                runs["with"].append(cached)
            print(round_, "without:", round(without["first_fit_cpu_s"], 2),
                  "with:", round(cached["first_fit_cpu_s"], 2), flush=True)
    rows = {name: {key: statistics.median(r[key] for r in rs) for key in rs[0]} for name, rs in runs.items()}
    document = {
        "what": f"{args.problem}: load and first PetabProblem.fit of {args.starts} start(s) in a fresh process, CPU s, "
                "without and with JAX's persistent compilation cache (filled by an earlier process); medians of "
                f"{args.rounds} rounds; trace/lower/compile/cache_read: JAX's own accounting of that call",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, CPU affinity {sorted(os.sched_getaffinity(0))}, "
                   f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}",
        "rows": rows, "runs": runs,
    }
    with open(args.out, "w") as fh:
        json.dump(document, fh, indent=1)
    for name, row in rows.items():
        print(name, {k: round(v, 2) for k, v in row.items()})


if __name__ == "__main__":
    main()
