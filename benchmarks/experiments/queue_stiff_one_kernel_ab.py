"""Stiff kernels' blocks compiled as one kernel, their LU's columns written by selects.

    python benchmarks/experiments/queue_stiff_one_kernel_ab.py [--rounds 6] [--calls 3]
                                                               [--out benchmarks/results/queue_stiff_one_kernel_ab.json]

`simkit.engines.kernel_queue` compiles a block of step attempts as one kernel
(`kernel_queue.block_in_one_kernel`) for every method up to `SMALL_SYSTEM` states; inside
that kernel the straight-line LU writes each column of L with a select (`simkit.kernels.
linalg.lu_columns_by_select`), the same values. It compares that with the Rosenbrock, Radau IIA and
BDF kernels kept as XLA's thunks (the rule `thunks_for_stiff_kernels` below), running both
on van der Pol (2,500 members, mu log-uniform in [0.1, 100], t 0..20, 1e-6, ``saveat=2``, the
`benchmarks/ensemble.py` workload) with Rodas4, Rodas5P, Radau IIA and BDF, and on Robertson
(1,000 members, k1 log-uniform in [0.004, 0.4], t to 1e5, 1e-6 / 1e-10) with Rodas5P, in one
process (the harness of `queue_block_ab.py`: swapped between rounds, compiled anew each round).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import jax  # noqa: E402
import numpy as np  # noqa: E402

import simkit  # noqa: E402
from simkit import models  # noqa: E402
from simkit._codegen import fits_one_kernel  # noqa: E402
from simkit.engines import kernel_queue  # noqa: E402
from simkit.kernels.linalg import SMALL_SYSTEM  # noqa: E402
from queue_block_ab import record  # noqa: E402  (the same harness)


def thunks_for_stiff_kernels(method, rhs, t, y, params) -> bool:
    """The alternative rule: one kernel for the explicit methods and AutoSwitch only."""
    if method.implicit and (type(method).__name__ != "AutoSwitchMethod" or y.shape[-1] > SMALL_SYSTEM):
        return False
    return fits_one_kernel(jax.make_jaxpr(jax.vmap(rhs, in_axes=(None, 0, 0)))(t, y, params))


VARIANTS = {"one kernel": kernel_queue.block_in_one_kernel, "thunks for the stiff kernels": thunks_for_stiff_kernels}


def main() -> None:
    rng = np.random.default_rng(0)
    vdp = (models.get("van_der_pol"), {"mu": np.exp(rng.uniform(np.log(0.1), np.log(100.0), 2500))},
           dict(t_span=(0.0, 20.0), saveat=2, rtol=1e-6, atol=1e-6))
    workloads = {f"van_der_pol {s.__name__}": (*vdp[:2], vdp[2] | {"solver": s()})
                 for s in (simkit.Rodas4, simkit.Rodas5P, simkit.RadauIIA5, simkit.BDF)}
    workloads["robertson Rodas5P"] = (models.get("robertson"),
                                      {"k1": np.exp(rng.uniform(np.log(0.004), np.log(0.4), 1000))},
                                      dict(t_span=(0.0, 1e5), saveat=2, rtol=1e-6, atol=1e-10))
    record(__file__, workloads, VARIANTS, "block_in_one_kernel")


if __name__ == "__main__":
    main()
