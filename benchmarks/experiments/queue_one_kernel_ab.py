"""A block of step attempts compiled as one kernel against XLA's thunks.

    python benchmarks/experiments/queue_one_kernel_ab.py [--rounds 6] [--calls 4]
                                                         [--out benchmarks/results/queue_one_kernel_ab.json]

`simkit.engines.kernel_queue` runs members that save at t0 and t1 only (``saveat=2``) in
blocks of `kernel_queue.BLOCK` step attempts; for explicit methods whose rhs allows it
(`kernel_queue.block_in_one_kernel`) the block's loop is compiled as one kernel
(`simkit._codegen.one_kernel`), else as XLA's sequence of thunks. This script runs both on
the `benchmarks/ensemble.py` Lorenz workload (10,000 members, rho ~ U[10, 50], t 0..10,
1e-6, ``saveat=2``, all devices) with Tsit5 (the default), DOPRI5, DOP853 and AutoSwitch (the
same model as a user's own, ``stiff=None``), and on van der Pol with Tsit5 (2,500 members, mu
log-uniform in [0.1, 3], t 0..20) and AutoSwitch (mu in [0.1, 100]) in one process:
the choice is swapped between rounds, each round compiling its program again
(``jax.clear_caches``) and timing ``--calls`` calls; reported: solves per second from the
median over rounds of each round's fastest call, the median of the paired ratios, the
first call (compile and run), and whether the two gave the same values, steps and counters.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import numpy as np  # noqa: E402

import simkit  # noqa: E402
from simkit import models  # noqa: E402
from simkit.engines import kernel_queue  # noqa: E402
from queue_block_ab import record  # noqa: E402  (the same harness)

VARIANTS = {"one kernel": kernel_queue.block_in_one_kernel, "thunks": lambda *args: False}


def main() -> None:
    rng = np.random.default_rng(0)
    lorenz = (models.get("lorenz"), {"rho": rng.uniform(10.0, 50.0, 10000)},
              dict(t_span=(0.0, 10.0), saveat=2, rtol=1e-6, atol=1e-6))
    workloads = {
        "lorenz Tsit5": lorenz,
        "lorenz DOPRI5": (*lorenz[:2], lorenz[2] | {"solver": simkit.DOPRI5()}),
        "lorenz DOP853": (*lorenz[:2], lorenz[2] | {"solver": simkit.DOP853()}),
        "van_der_pol Tsit5": (models.get("van_der_pol"), {"mu": np.exp(rng.uniform(np.log(0.1), np.log(3.0), 2500))},
                              dict(t_span=(0.0, 20.0), saveat=2, rtol=1e-6, atol=1e-6, solver=simkit.Tsit5())),
        # a user's own model (stiff=None): AutoSwitch, the default there
        "lorenz AutoSwitch": (simkit.ODEModel(rhs=lorenz[0].rhs, params=lorenz[0].params, y0=lorenz[0].y0,
                                              state_names=lorenz[0].state_names, name="user_lorenz"), *lorenz[1:]),
        "van_der_pol AutoSwitch": (models.get("van_der_pol"),
                                   {"mu": np.exp(rng.uniform(np.log(0.1), np.log(100.0), 2500))},
                                   dict(t_span=(0.0, 20.0), saveat=2, rtol=1e-6, atol=1e-6, solver=simkit.AutoSwitch())),
    }
    record(__file__, workloads, VARIANTS, "block_in_one_kernel")


if __name__ == "__main__":
    main()
