"""A stiff ensemble whose kernels call LAPACK (more than eight states) runs to the end on as
many CPU devices as cores.

JAX's batched LAPACK calls wait on XLA:CPU's thread pool, whose threads are the ones
running the devices' programs; batched under ``jax.vmap`` in a sharded ensemble they hung
forever (a 100-state BDF ensemble on 2 devices of a 2-core machine, jax 0.10.2;
`simkit.kernels.linalg.one_at_a_time`). Run in a fresh process on 2 devices with a time
limit, so that a hang fails this test instead of stalling the suite.
"""

import os
import subprocess
import sys

SCRIPT = r"""
import jax, jax.numpy as jnp, numpy as np, simkit
n = 100
ring = np.eye(n, dtype=bool) | np.roll(np.eye(n, dtype=bool), 1, axis=1) | np.roll(np.eye(n, dtype=bool), -1, axis=1)
chain = simkit.ODEModel(rhs=lambda t, y, p: p["d"] * (jnp.roll(y, 1) - 2 * y + jnp.roll(y, -1)) - y ** 3,
                        params={"d": 1e2}, y0=np.sin(np.linspace(0, np.pi, n)),
                        state_names=tuple(f"y{i}" for i in range(n)), stiff=True)
assert len(jax.devices()) == 2
for solver in (simkit.BDF(linear_solver="dense"), simkit.BDF(jac_sparsity=ring)):
    ens = simkit.ensemble(chain, (0.0, 1.0), params={"d": jnp.asarray([1e1, 1e2])}, rtol=1e-4, atol=1e-6,
                          solver=solver, saveat=2, progress=False, refill=False)
    one = simkit.solve(chain, (0.0, 1.0), params={"d": 1e2}, rtol=1e-4, atol=1e-6, solver=solver, saveat=2)
    assert np.all(np.asarray(ens.status) == 0), ens.status
    np.testing.assert_allclose(ens.ys[1], one.ys, rtol=1e-10, atol=1e-12)
print("done")
"""


def test_stiff_ensemble_with_lapack_runs_on_every_core():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(SIMKIT_CPU_DEVICES="2", SIMKIT_COMPILATION_CACHE="0")
    run = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().endswith("done")
