"""The first call (trace, lower, compile and run) of `simkit.solve` with each kernel on a new
3-state program (Lorenz, t 0..1, 11 saves), wall and process CPU seconds, in this process.

    python benchmarks/experiments/first_call.py [Tsit5,DOP853,...]

To compare two versions of the code, run it in alternating fresh processes, one of them
importing the other checkout (``PYTHONPATH=/path/to/checkout python
benchmarks/experiments/first_call.py``); it prints one JSON line naming the simkit it imported.
"""

import json
import os
import sys
import time

os.environ["SIMKIT_COMPILATION_CACHE"] = "0"  # compile times are measured

import jax  # noqa: E402

import simkit  # noqa: E402
from simkit import models  # noqa: E402

KERNELS = "Tsit5,DOPRI5,DOP853,Rodas4,Rodas5P,RadauIIA5,BDF,AutoSwitch"


def main() -> None:
    names = (sys.argv[1] if len(sys.argv) > 1 else KERNELS).split(",")
    lorenz = models.get("lorenz")
    simkit.solve(lorenz, (0.0, 1.0), saveat=11, solver=simkit.Tsit5())  # JAX's own first-use costs
    out = {}
    for name in names:
        model = lorenz.replace(rhs=lambda t, y, p: lorenz.rhs(t, y, p))  # a new function: a new program
        wall, cpu = time.perf_counter(), time.process_time()
        jax.block_until_ready(simkit.solve(model, (0.0, 1.0), saveat=11, solver=getattr(simkit, name)()).ys)
        out[name] = dict(wall_s=time.perf_counter() - wall, cpu_s=time.process_time() - cpu)
    print(json.dumps({"simkit": os.path.dirname(simkit.__file__), "first_call": out}))


if __name__ == "__main__":
    main()
