"""First-call time of a solve with events, by the number of events.

    python benchmarks/experiments/events_compile.py [--events 0,1,2,5,10] [--rounds 2]
        [--old CHECKOUT] [--out FILE]

Each call in a fresh process (no persistent compilation cache): Lorenz, t 0..10, 11 saves,
the default Tsit5, ``n`` events ``x - c`` (``c`` evenly spaced in [-5, 5], recording every
crossing, never stopping); the time of the first `simkit.solve` call, which traces and
compiles. With ``--old``, the same call with that checkout of simkit first on the path,
alternating with this one (a worktree of an earlier commit: ``git worktree add /tmp/old
<commit>``). `simkit.events.locate_crossings` locates every event's crossing in one root-finding loop (a
loop per event, each evaluating the interpolant, compiled slower as events were added).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

CALL = """
import sys, time, numpy as np, simkit
n = int(sys.argv[1])
m = simkit.models.get("lorenz")
evs = [simkit.Event(lambda t, y, p, c=c: y[0] - c, terminal=0) for c in np.linspace(-5, 5, n)] if n else None
start = time.perf_counter()
simkit.solve(m, (0.0, 10.0), saveat=11, events=evs).ys.block_until_ready()
print(time.perf_counter() - start)
"""


def first_call(n: int, checkout: str | None) -> float:
    env = dict(os.environ, SIMKIT_COMPILATION_CACHE="0")
    if checkout:
        env["PYTHONPATH"] = checkout + os.pathsep + env.get("PYTHONPATH", "")
    # (run from a neutral folder: the current one would come first on the path)
    out = subprocess.run([sys.executable, "-c", CALL, str(n)], env=env, cwd="/", capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", default="0,1,2,5,10")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--old", default=None, help="an earlier checkout of simkit, timed alternately")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    from stencil import machine  # benchmarks/stencil.py

    versions = {"this": None} if a.old is None else {"old": os.path.abspath(a.old), "this": None}
    rows: dict = {}
    for _ in range(a.rounds):
        for n in (int(k) for k in a.events.split(",")):
            for label, checkout in versions.items():
                seconds = first_call(n, checkout)
                rows.setdefault(str(n), {}).setdefault(label, []).append(seconds)
                print(f"{n:3d} events  {label:5s} first call {seconds:.2f} s", flush=True)
    summary = {n: {label: statistics.median(v) for label, v in r.items()} for n, r in rows.items()}
    record = {"command": "python benchmarks/experiments/events_compile.py " + " ".join(sys.argv[1:]),
              "machine": machine(), "rounds": a.rounds, "first_call_s": rows, "median_s": summary}
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(record, fh, indent=1)


if __name__ == "__main__":
    main()
