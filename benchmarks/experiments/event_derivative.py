"""Accuracy of the derivative of the state at an event.

    python benchmarks/experiments/event_derivative.py [--out benchmarks/results/event_derivative.json]

Van der Pol, mu = 20, y0 = (2, 0), stopped where x crosses 0 going down (t_e = 16.92, in the
fast phase: v' = -281). For each stiff kernel and rtol 1e-6 / 1e-8 / 1e-10 (atol = rtol /
1000): the relative error of ``jax.jacfwd`` of (t_e, v_e) with respect to mu, and of central
finite differences of solves at the same rtol, against central differences of RadauIIA5
solves at rtol 1e-12. Accuracy, not time: one run. The state at a crossing moves with the event time along the
rhs (`simkit.kernels.loop.event_state`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import simkit  # noqa: E402
from stencil import machine  # noqa: E402  (benchmarks/stencil.py)

MU, H = 20.0, 1e-4
VDP = simkit.ODEModel(rhs=simkit.models.get("van_der_pol").rhs, y0=[2.0, 0.0], params={"mu": MU},
                      state_names=("x", "v"), name="vdp_event", stiff=True)
EVENT = simkit.Event(lambda t, y, p: y[0], direction=-1, terminal=1)
KERNELS = {"Rodas4": simkit.Rodas4(), "Rodas5P": simkit.Rodas5P(), "RadauIIA5": simkit.RadauIIA5(),
           "BDF": simkit.BDF(), "AutoSwitch": simkit.AutoSwitch()}


def at_event(mu, solver, rtol):
    sol = simkit.solve(VDP, (0.0, 100.0), saveat=jnp.array([1.0]), params={"mu": mu}, solver=solver, rtol=rtol,
                       atol=rtol * 1e-3, events=EVENT)
    return jnp.stack([sol.event_time, sol.y_final[1]])


def central(solver, rtol):
    return (at_event(MU + H, solver, rtol) - at_event(MU - H, solver, rtol)) / (2 * H)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    ref = np.asarray(central(simkit.RadauIIA5(), 1e-12))
    rows = {}
    for name, solver in KERNELS.items():
        for rtol in (1e-6, 1e-8, 1e-10):
            ad = np.asarray(jax.jacfwd(lambda m: at_event(m, solver, rtol))(MU))
            fd = np.asarray(central(solver, rtol))
            rows[f"{name} rtol={rtol:g}"] = {
                "jacfwd_relative_error": {"t_event": float(abs(ad[0] / ref[0] - 1)), "v_event": float(abs(ad[1] / ref[1] - 1))},
                "finite_differences_relative_error": {"t_event": float(abs(fd[0] / ref[0] - 1)),
                                                      "v_event": float(abs(fd[1] / ref[1] - 1))},
            }
            print(name, rtol, rows[f"{name} rtol={rtol:g}"], flush=True)
    out = {"command": "python benchmarks/experiments/event_derivative.py " + " ".join(sys.argv[1:]),
           "machine": machine(), "reference_d_dmu": {"t_event": float(ref[0]), "v_event": float(ref[1])}, "rows": rows}
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
