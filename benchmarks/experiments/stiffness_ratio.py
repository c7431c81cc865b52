"""The stiffness ratio along explicit steps: what `simkit.AutoSwitch` can tell stiff from
non-stiff by at tight tolerances.

    python benchmarks/experiments/stiffness_ratio.py [--out FILE]   # about 2 minutes

Tsit5 (`saveat="steps"`, at most 20,000 steps) on non-stiff library models and on stiff ones
(Robertson to 1e5, HIRES, the Oregonator, van der Pol mu = 1000), rtol 1e-4 ... 1e-12, atol
= rtol x each model's smallest significant component. At every accepted step: ``h rho``
(rho the spectral radius of the Jacobian at the step's end, from its eigenvalues) over the
stability boundary B of Tsit5 on the negative real axis (Hairer's test: stiff near 1), and
``h rho / rtol**(1/5)``, an estimate of the stiffness ratio ``rho tau`` (tau the solution's
time scale: an accuracy-limited step of an order-4 error estimate is about
``tau rtol**(1/5)``). Percentiles (50, 90, 99) over each solve.

What it showed: on the stiff problems at rtol 1e-10 ... 1e-12 Tsit5's steps are
limited by accuracy, not stability (h rho / B 0.1-0.6), so Hairer's test stays silent and
AutoSwitch ran 30,000-100,000 explicit steps; the ratio ``h rho / rtol**(1/5)`` separates
them (non-stiff: at most about 50 at the 99th percentile; stiff: medians 89-300).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

import simkit
from simkit import models

NON_STIFF = ("lorenz", "arenstorf", "kepler", "rossler", "hodgkin_huxley", "fitzhugh_nagumo", "van_der_pol",
             "brusselator", "double_pendulum")
STIFF = {"robertson": (1e5, 1e-10), "hires": (None, 1e-5), "oregonator": (None, 1e-4),
         "van_der_pol_stiff": (None, 1e-3)}  # t1 (None: the model's), smallest significant component
RTOLS = (1e-4, 1e-6, 1e-8, 1e-10, 1e-12)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "results",
                                                      "stiffness_ratio.json"))
    args = parser.parse_args(argv)
    boundary = simkit.AutoSwitch().method().boundary
    rows = []
    for name in NON_STIFF + tuple(STIFF):
        m = models.get(name)
        t1, scale = STIFF.get(name, (None, 1.0))
        span = (m.t_span[0], m.t_span[1] if t1 is None else t1)
        jac = jax.jit(jax.vmap(lambda t, y: jax.jacfwd(lambda z: m.rhs(t, z, m.params))(y)))
        for rtol in RTOLS:
            sol = simkit.solve(m, span, saveat="steps", rtol=rtol, atol=rtol * scale, solver=simkit.Tsit5(),
                               max_steps=20_000, throw=False)
            ts, ys = np.asarray(sol.ts), np.asarray(sol.ys)
            ok = np.isfinite(ts)
            ts, ys = ts[ok], ys[ok]
            h = np.diff(ts)
            rho = np.max(np.abs(np.linalg.eigvals(np.asarray(jac(jnp.asarray(ts[1:]), jnp.asarray(ys[1:]))))),
                         axis=1)
            hrho = h * rho
            row = dict(model=name, stiff=name in STIFF, rtol=rtol, steps=int(h.size), status=int(sol.status),
                       t_reached=float(ts[-1]),
                       hrho_over_boundary=[float(q) for q in np.percentile(hrho / boundary, [50, 90, 99])],
                       stiffness_ratio=[float(q) for q in np.percentile(hrho / rtol ** 0.2, [50, 90, 99])])
            rows.append(row)
            print(f"{name:20s} rtol {rtol:7.0e} steps {row['steps']:6d} status {row['status']}  h rho / B "
                  + " ".join(f"{q:6.3f}" for q in row["hrho_over_boundary"]) + "   h rho / rtol^(1/5) "
                  + " ".join(f"{q:7.1f}" for q in row["stiffness_ratio"]))
            sys.stdout.flush()
    result = dict(command="python benchmarks/experiments/stiffness_ratio.py "
                  + " ".join(argv if argv is not None else sys.argv[1:]),
                  boundary=boundary, percentiles=[50, 90, 99], rows=rows,
                  versions=dict(jax=jax.__version__, simkit=simkit.__version__))
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    return result


if __name__ == "__main__":
    main()
