"""Peak memory of a long stencil rollout streamed to a file, against keeping every frame.

    python benchmarks/checkpoint_memory.py [--n 2048] [--steps 1000] [--save-every 10]
        [--chunks 10 2] [--out benchmarks/results/checkpoint_memory.json]

Each run is a fresh subprocess (peak RSS is per process): 2-D periodic heat at n x n, float64,
forward Euler, ``steps`` steps saving every ``save_every``-th field:

- ``stream``: `simkit.stencil.integrate_to_file` to a NetCDF file in a temporary folder,
  ``chunk`` saves per chunk (one row per ``--chunks`` value);
- ``memory``: `simkit.stencil.integrate`, every saved frame held in memory (the result).

Reported: the resident set before the run (after import and building u0), the peak resident
set (``ru_maxrss``) and their difference, in MB, next to the size of one frame, one chunk and
all frames; and the wall time (compile included). The claim checked: a streamed run's
growth stays below two chunks of frames plus the run's working fields (the stepper's
buffers and the compiled program), independent of the run's length.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        line = next(line for line in fh if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def child(mode: str, n: int, steps: int, save_every: int, chunk: int, folder: str) -> dict:
    sys.path.insert(0, HERE)
    from stencil import heat_model

    from simkit import stencil as sk

    model = heat_model(n)
    dt = 0.2 / (n * n)  # stable forward Euler for diffusivity 1 on the unit square
    before = rss_mb()
    start = time.perf_counter()
    if mode == "stream":
        path = sk.integrate_to_file(os.path.join(folder, f"heat-{chunk}.nc"), model, dt=dt, steps=steps,
                                    save_every=save_every, chunk=chunk, stepper=sk.ForwardEuler(),
                                    check_stability=False, progress_bar=False)
        size = os.path.getsize(path)
    else:
        result = sk.integrate(model, dt=dt, steps=steps, save_every=save_every, stepper=sk.ForwardEuler(),
                              check_stability=False)
        size = result.us.nbytes
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"mode": mode, "chunk": chunk, "rss_before_mb": before, "peak_rss_mb": peak,
            "growth_mb": peak - before, "seconds": seconds, "output_mb": size / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--save-every", type=int, default=10)
    parser.add_argument("--chunks", type=int, nargs="+", default=[10, 2])
    parser.add_argument("--out", default=os.path.join(HERE, "results", "checkpoint_memory.json"))
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, n, steps, save_every, chunk, folder = args.child
        print(json.dumps(child(mode, int(n), int(steps), int(save_every), int(chunk), folder)))
        return
    sys.path.insert(0, HERE)
    from stencil import machine

    frame_mb = args.n * args.n * 8 / 2**20
    frames = args.steps // args.save_every + 1
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for mode, chunk in [("stream", c) for c in args.chunks] + [("memory", 0)]:
            out = subprocess.run([sys.executable, __file__, "--child", mode, str(args.n), str(args.steps),
                                  str(args.save_every), str(chunk), folder], capture_output=True, text=True,
                                 check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["chunk_mb"] = chunk * frame_mb
            row["growth_in_chunks"] = row["growth_mb"] / row["chunk_mb"] if chunk else None
            rows.append(row)
            print(json.dumps(row))
    result = {"command": "python benchmarks/checkpoint_memory.py " + " ".join(sys.argv[1:]),
              "n": args.n, "steps": args.steps, "save_every": args.save_every, "frames": frames,
              "frame_mb": frame_mb, "all_frames_mb": frames * frame_mb, "runs": rows, "machine": machine()}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"frame {frame_mb:.1f} MB, all {frames} frames {frames * frame_mb:.0f} MB")
    for r in rows:
        print(f"{r['mode']:>6} chunk {r['chunk']:>3}: growth {r['growth_mb']:.0f} MB "
              f"(peak {r['peak_rss_mb']:.0f} MB), {r['seconds']:.1f} s")


if __name__ == "__main__":
    main()
