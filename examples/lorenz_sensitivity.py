"""Lorenz attractor: solve, compare with SciPy, and differentiate through the solver.

    python examples/lorenz_sensitivity.py [out.png]

Writes a figure with the trajectory (simkit's DOP853 kernel against SciPy's DOP853) and the
sensitivity of the final state to rho, from jax.jacfwd through simkit.solve.
"""

import sys

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import simkit  # noqa: E402
from simkit import models, reference  # noqa: E402

lorenz = models.get("lorenz")
span, tol = (0.0, 10.0), 1e-10

sol = simkit.solve(lorenz, span, saveat=2001, rtol=tol, atol=tol, solver=simkit.DOP853())
ref = reference.solve_ivp(lorenz, span, saveat=2001, method="DOP853", rtol=1e-13, atol=1e-13)
errors = reference.compare(sol, ref, tol, tol)
print(f"{sol}\nsteps: {int(sol.stats['num_steps'])}, max error / tolerance vs SciPy: "
      f"{max(errors.values()):.2f}")


def final_state(rho):
    return simkit.solve(lorenz, span, params={"rho": rho}, saveat=2, rtol=tol, atol=tol).y_final


rhos = jnp.linspace(20.0, 30.0, 41)
sensitivity = jax.vmap(jax.jacfwd(final_state))(rhos)  # d y(10) / d rho, for 41 values of rho
print("d x(10)/d rho at rho = 28:", float(sensitivity[32, 0]))  # rhos[32] == 28

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
ax1.plot(sol["x"], sol["z"], lw=0.6, label="simkit DOP853")
ax1.plot(ref["x"][::20], ref["z"][::20], ".", ms=2.5, label="SciPy DOP853 (every 20th point)")
ax1.set_xlabel("x")
ax1.set_ylabel("z")
ax1.legend(fontsize="small")
ax1.set_title("Lorenz attractor, t in [0, 10]")
for i, name in enumerate(lorenz.state_names):
    ax2.semilogy(rhos, jnp.abs(sensitivity[:, i]), label=f"|d{name}(10)/drho|")
ax2.set_xlabel("rho")
ax2.set_title("sensitivity of the final state (jax.jacfwd through solve)")
ax2.legend(fontsize="small")
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else "lorenz_sensitivity.png"
fig.savefig(out, dpi=110)
print(f"wrote {out}")
