"""Stiff chemistry: Robertson's reaction over eleven decades of time, three solvers.

    python examples/stiff_chemistry.py [out.png]

simkit's Rodas5P kernel (the default for stiff models) against SciPy's Radau, with the
conservation of mass y1 + y2 + y3 = 1 checked along the way.
"""

import sys
import time

import jax.numpy as jnp
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import simkit  # noqa: E402
from simkit import models, reference  # noqa: E402

rob = models.get("robertson")
times = jnp.concatenate([jnp.zeros(1), jnp.logspace(-5, 6, 111)])
span = (0.0, 1e6)

start = time.perf_counter()
sol = simkit.solve(rob, span, saveat=times, rtol=1e-8, atol=1e-12)
first = time.perf_counter() - start
start = time.perf_counter()
sol = simkit.solve(rob, span, saveat=times, rtol=1e-8, atol=1e-12)
again = time.perf_counter() - start
ref = reference.solve_ivp(rob, span, saveat=np.asarray(times), method="Radau", rtol=1e-12, atol=1e-16)
drift = float(jnp.max(jnp.abs(jnp.sum(sol.ys, axis=1) - 1.0)))
print(f"{sol.solver_name}: {int(sol.stats['num_steps'])} steps; first call {first:.2f} s "
      f"(with compilation), second {again * 1e3:.2f} ms; mass drift {drift:.1e}")
print("max error / tolerance vs SciPy Radau:", max(reference.compare(sol, ref, 1e-8, 1e-12).values()))

fig, ax = plt.subplots(figsize=(7, 4.2))
scale = {"y1": 1.0, "y2": 1e4, "y3": 1.0}
for name in rob.state_names:
    ax.semilogx(sol.ts[1:], sol[name][1:] * scale[name], label=f"{name} x {scale[name]:g}")
    ax.semilogx(ref.ts[1::6], ref[name][1::6] * scale[name], "k.", ms=3)
ax.set_xlabel("t")
ax.set_ylabel("concentration")
ax.set_title(f"Robertson: {sol.solver_name} (lines), SciPy Radau (dots)")
ax.legend(fontsize="small")
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else "stiff_chemistry.png"
fig.savefig(out, dpi=110)
print(f"wrote {out}")
