"""simkit.fit against SciPy's least_squares on the lynx-hare fit: the
kernels' speed inside `fit`.

    python benchmarks/fit.py [--repeats 5] [--out benchmarks/results/fit.json]

The problem of `examples/lynx_hare_fit.py`: Lotka-Volterra, the Hudson's Bay pelts
1900-1920, log-normal residuals, the four rates and both initial populations free (six
parameters) within the example's box bounds, from the library model's values; ODE tolerances
rtol 1e-8, atol 1e-10 (`simkit.fit`'s defaults).

- simkit: `simkit.fit(..., bounds=BOUNDS)`: Levenberg-Marquardt on the parameters mapped
  to unbounded ones (a logistic map per box), Jacobian by the kernels' forward sensitivities; 1 start, and 8 starts under ``jax.vmap``.
  First call (compile and run) and the median of ``--repeats`` further calls (the compiled
  programs reused). Compile: first call minus the median.
- SciPy, as its users write it: ``scipy.optimize.least_squares(method="trf", bounds=...)``
  (its way to bounds), ``solve_ivp`` (LSODA, and DOP853) with a plain NumPy rhs at the same tolerances,
  Jacobian by SciPy's finite differences (the default ``"2-point"``); 1 start, and the same
  8 starts one after another.

Reported: seconds, final cost (the same 0.5 sum r^2), SciPy's function evaluations, ratios
SciPy / simkit. The machine description goes into the JSON.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")  # compile time is measured

import argparse
import json
import statistics
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np
import scipy
import scipy.integrate
import scipy.optimize

import simkit
from simkit import datasets, models
from simkit._config import configure_own_process
configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it
from stencil import machine  # benchmarks/stencil.py

RTOL, ATOL = 1e-8, 1e-10
BOUNDS = {"alpha": (0.1, 2.0), "beta": (0.001, 0.2), "gamma": (0.1, 2.0), "delta": (0.001, 0.2),
          "y0:prey": (1.0, 200.0), "y0:predator": (0.5, 100.0)}  # examples/lynx_hare_fit.py's


def simkit_fit(starts: int):
    return simkit.fit(models.get("lotka_volterra"), datasets.lynx_hare(), loss=simkit.LogNormal(),
                      initial_state="fit", bounds=BOUNDS, starts=starts, progress=False)


def scipy_fit(method: str):
    """A SciPy user's fit of the same residuals: ``least_squares(x0) -> (result, seconds)``."""
    model, data = models.get("lotka_volterra"), datasets.lynx_hare()
    names = list(model.params)
    fn = model.rhs  # its source run with NumPy for jax.numpy: a plain NumPy function of (t, y, params)
    f = types.FunctionType(fn.__code__, {**fn.__globals__, "jnp": np}, fn.__name__, fn.__defaults__, fn.__closure__)
    times = np.asarray(data.times, float)
    observed = np.log(np.asarray(data.values, float))

    def residuals(x):
        params = dict(zip(names, x[:4]))
        out = scipy.integrate.solve_ivp(lambda t, y: f(t, y, params), (float(data.t0), times[-1]), x[4:],
                                        method=method, t_eval=times, rtol=RTOL, atol=ATOL)
        if out.status != 0:
            return np.full(observed.size, 1e10)
        return (np.log(np.maximum(out.y.T, 1e-300)) - observed).ravel()

    def run(x0):
        start = time.perf_counter()
        box = np.array(list(BOUNDS.values())).T
        res = scipy.optimize.least_squares(residuals, x0, method="trf", bounds=(box[0], box[1]))
        return res, time.perf_counter() - start

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "fit.json"))
    args = parser.parse_args()
    info = machine() | {"scipy": scipy.__version__, "simkit": simkit.__version__}
    rows = {}
    for starts in (1, 8):
        t = time.perf_counter()
        result = simkit_fit(starts)
        first = time.perf_counter() - t
        runs = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            result = simkit_fit(starts)
            runs.append(time.perf_counter() - t)
        run = statistics.median(runs)
        rows[f"simkit LM, {starts} start(s)"] = dict(
            run_s=run, compile_s=first - run, first_call_s=first, cost=float(result.cost),
            iterations=int(result.iterations), starts=np.asarray(result.starts).tolist())
        print(f"simkit {starts} start(s): first {first:.2f} s, run {run:.3f} s, cost {result.cost:.6g}", flush=True)
    model = models.get("lotka_volterra")
    x_default = np.array(list(model.params.values()) + list(model.y0), float)
    eight = np.asarray(rows["simkit LM, 8 start(s)"]["starts"])
    for method in ("LSODA", "DOP853"):
        run_fit = scipy_fit(method)
        one = [run_fit(x_default) for _ in range(args.repeats)]
        res = one[-1][0]
        seconds = statistics.median(s for _, s in one)
        rows[f"SciPy least_squares + {method}, 1 start"] = dict(run_s=seconds, cost=float(res.cost), nfev=int(res.nfev))
        total, costs, nfev = 0.0, [], 0
        for x0 in eight:
            r, s = run_fit(x0)
            total, nfev = total + s, nfev + int(r.nfev)
            costs.append(float(r.cost))
        rows[f"SciPy least_squares + {method}, 8 starts"] = dict(run_s=total, cost=float(np.nanmin(costs)), nfev=nfev)
        print(f"SciPy {method}: 1 start {seconds:.3f} s (cost {res.cost:.6g}, {res.nfev} evaluations); "
              f"8 starts {total:.2f} s", flush=True)
    ratios = {}
    for starts, label in ((1, "1 start"), (8, "8 starts")):
        ours = rows[f"simkit LM, {starts} start(s)"]
        for method in ("LSODA", "DOP853"):
            peer = rows[f"SciPy least_squares + {method}, {label}"]["run_s"]
            ratios[f"SciPy {method} / simkit run, {label}"] = peer / ours["run_s"]
            ratios[f"SciPy {method} / simkit first call, {label}"] = peer / ours["first_call_s"]
    for k, v in ratios.items():
        print(f"{k}: {v:.1f}x")
    out = dict(command="python benchmarks/fit.py " + " ".join(sys.argv[1:]), machine=info, rows=rows, ratios=ratios,
               rtol=RTOL, atol=ATOL, repeats=args.repeats)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
