"""The stiff suite: work-precision of simkit's stiff kernels against SciPy and numbalsoda.

    python benchmarks/stiff.py [--repeats 3] [--rtols 1e-4,1e-6,1e-8,1e-10] [--out FILE]

Problems (Hairer & Wanner II, section IV.10; Mazzia & Magherini's Test Set for IVP Solvers):
Robertson to 1e5 and to 1e11, HIRES, POLLU, van der Pol mu = 1000 on [0, 3000] and the
Oregonator on [0, 360]. Each problem's atol is ``rtol * scale`` with ``scale`` its smallest
significant component (below). The error of a run is the largest over the components of
``|y - ref| / (|ref| + scale)`` at the final time (a relative error for every significant
component): ``ref`` is the published test-set value where one exists (ROBER at 1e11,
HIRES, POLLU), else SciPy's Radau at rtol 1e-13 (van der Pol: the committed
`VAN_DER_POL_STIFF_REFERENCE`; Robertson to 1e5, the Oregonator: computed here).

Peers, each in its best honest form: SciPy's Radau, BDF and LSODA with a plain NumPy rhs (the
model's own rhs source run with NumPy in place of jax.numpy) and its finite-difference
Jacobian, as a SciPy user writes it; numbalsoda's LSODA with numba cfuncs (Robertson, HIRES,
van der Pol) when installed, timed in a fresh process of its own with the same settled calls
(`own_process`; in this process, after the JAX rows, it ran up to 6x slower than in its
own). Run time: per problem and rtol, every other row (simkit's, SciPy's) is called once per
round over ``max(repeats, 5)`` interleaved rounds, each call after the same ~10 ms of untimed
Python work (`timing.settled_rounds`, as `kernels.py`), the median reported; a row slower than
5 s runs once. (Each row's calls back to back after the rows before it, SciPy's included,
read simkit's HIRES program 2x slow at rtol 1e-4.) simkit's compile time is its first call's extra time. The defaults
(`simkit.solve` without ``solver=``) are measured as their own row.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")  # compile times are measured

import argparse
import json
import statistics
import sys
import types

import jax
import numpy as np
import scipy
import scipy.integrate

import simkit
from simkit import models
from simkit.models.chemistry import HIRES_REFERENCE_T321, POLLU_REFERENCE_T60, ROBERTSON_REFERENCE_T1E11
from simkit.models.oscillators import VAN_DER_POL_STIFF_REFERENCE
from simkit._config import configure_own_process
configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it
from stencil import machine as stencil_machine  # benchmarks/stencil.py (run as scripts)
from own_process import time_in_fresh_process  # benchmarks/own_process.py
from timing import settled_rounds, timed  # benchmarks/timing.py

PROBLEMS = {
    # name: (model, t1, scale: the smallest significant component, published reference)
    "robertson_1e5": ("robertson", 1e5, 1e-10, None),
    "robertson_1e11": ("robertson", 1e11, 1e-13, ROBERTSON_REFERENCE_T1E11),
    "hires": ("hires", 321.8122, 1e-5, HIRES_REFERENCE_T321),
    "pollu": ("pollu", 60.0, 1e-8, POLLU_REFERENCE_T60),
    "van_der_pol_1000": ("van_der_pol_stiff", 3000.0, 1e-3, VAN_DER_POL_STIFF_REFERENCE[-1]),
    "oregonator": ("oregonator", 360.0, 1e-4, None),
}
# the problems numbalsoda runs, by the name of its numba rhs (`own_process.cfuncs`)
NUMBALSODA_RHS = {"robertson_1e5": "robertson", "robertson_1e11": "robertson", "hires": "hires",
                  "van_der_pol_1000": "van_der_pol_1000"}
KERNELS = {"Rodas4": simkit.Rodas4(), "Rodas5P": simkit.Rodas5P(), "RadauIIA5": simkit.RadauIIA5(),
           "AutoSwitch": simkit.AutoSwitch(), "BDF": simkit.BDF()}


def numpy_rhs(model):
    """The model's rhs source run with NumPy for jax.numpy: a plain NumPy function."""
    fn = model.rhs
    plain = types.FunctionType(fn.__code__, {**fn.__globals__, "jnp": np}, fn.__name__, fn.__defaults__,
                               fn.__closure__)
    p = {k: float(v) for k, v in model.params.items()}
    return lambda t, y: plain(t, y, p)


def reference_state(name: str) -> np.ndarray:
    model_name, t1, scale, published = PROBLEMS[name]
    if published is not None:
        return np.asarray(published, float)
    m = models.get(model_name)
    out = scipy.integrate.solve_ivp(numpy_rhs(m), (0.0, t1), np.asarray(m.y0, float), method="Radau",
                                    rtol=1e-13, atol=1e-13 * scale)
    return out.y[:, -1]


def error(y, ref, scale) -> float:
    return float(np.max(np.abs(np.asarray(y) - ref) / (np.abs(ref) + scale)))


def simkit_call(m, t1, rtol, atol, solver):
    """A plain ``simkit.solve`` call of the problem (``solver`` None: the default), returning
    the `Solution`."""
    kw = {} if solver is None else {"solver": solver}
    return lambda: simkit.solve(m, (0.0, t1), saveat=1, rtol=rtol, atol=atol, throw=False, **kw)


def simkit_jit_call(m, t1, rtol, atol):
    """simkit's default inside the user's ``jax.jit``, one parameter passed in as a number (as
    `kernels.py`'s row): each call runs the compiled program alone, without the front door's
    checks and `Solution`, i.e. the method's own time. ``throw=True``, the default, as users
    write it (a failure raises; with ``throw=False`` XLA:CPU runs the program on its worker
    thread: 0.2 ms more after a pause on Robertson). Returns the final state."""
    name = next(iter(m.params))
    fn = jax.jit(lambda v: simkit.solve(m, (0.0, t1), saveat=1, rtol=rtol, atol=atol, params={name: v}).ys[-1])
    value = float(m.params[name])
    return lambda: fn(value)


def time_simkit(m, t1, rtol, atol, solver, repeats):
    """``(Solution, run, compile)`` seconds of `simkit_call`, its calls back to back."""
    call = simkit_call(m, t1, rtol, atol, solver)
    first = timed(call)
    runs = [timed(call) for _ in range(repeats)]
    run = statistics.median(runs)
    return call(), run, max(first - run, 0.0)


def at_equal_error(rows: list[dict], peer: str, of: str = "simkit default") -> list[dict]:
    """Per problem and rtol: ``peer``'s time at the error of ``of`` (interpolated log-log
    between the peer's own runs at the problem's rtols; None outside their error range) and
    the ratios ``peer / of`` for ``of``'s plain call and for its program inside ``jax.jit``
    (0.5 is "within 2x")."""
    out = []
    for name in dict.fromkeys(r["problem"] for r in rows):
        mine = [r for r in rows if r["problem"] == name and peer in r["results"]]
        runs = [r["results"][peer] for r in mine if r["results"][peer]["status"] == 0 and r["results"][peer]["error"] > 0]
        if len(runs) < 2:
            continue
        errors = np.log([r["error"] for r in runs])
        times = np.log([r["time"] for r in runs])
        order = np.argsort(errors)
        for row in mine:
            own = row["results"][of]
            e = own["error"]
            peer_t = None
            if own["status"] == 0 and e > 0 and errors.min() <= np.log(e) <= errors.max():
                peer_t = float(np.exp(np.interp(np.log(e), errors[order], times[order])))
            jit = row["results"].get(f"extra: {of} inside jax.jit")
            out.append(dict(problem=name, rtol=row["rtol"], error=e, time=own["time"], peer_time=peer_t,
                            ratio=None if peer_t is None else peer_t / own["time"],
                            jit_time=None if jit is None else jit["time"],
                            jit_ratio=None if peer_t is None or jit is None else peer_t / jit["time"]))
    return out


def machine() -> dict:
    """`benchmarks/stencil.py`'s machine description with the versions this suite depends on."""
    return stencil_machine() | dict(scipy=scipy.__version__, simkit=simkit.__version__)


def write_result(path: str, result: dict) -> dict:
    """Write a script's result as indented JSON to ``path`` (its folder made if missing)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(result, fh, indent=1)
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rtols", default="1e-4,1e-6,1e-8,1e-10")
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    parser.add_argument("--no-scipy", action="store_true")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "stiff.json"))
    args = parser.parse_args(argv)
    rtols = [float(r) for r in args.rtols.split(",")]
    rows = []
    for name in args.problems.split(","):
        model_name, t1, scale, _ = PROBLEMS[name]
        m = models.get(model_name)
        ref = reference_state(name)
        f_np = numpy_rhs(m)
        y0 = np.asarray(m.y0, float)
        for rtol in rtols:
            atol = rtol * scale
            row = dict(problem=name, rtol=rtol, atol=atol, results={})
            fns, labels = {}, {}
            for label, solver in [("simkit default", None), *KERNELS.items()]:
                key = label if solver is None else f"simkit {label}"
                fns[key], labels[key] = simkit_call(m, t1, rtol, atol, solver), label
            jit_key = "extra: simkit default inside jax.jit"
            fns[jit_key] = simkit_jit_call(m, t1, rtol, atol)
            if not args.no_scipy:
                for method in ("Radau", "BDF", "LSODA"):
                    fns[f"scipy {method}"] = (lambda method=method: scipy.integrate.solve_ivp(
                        f_np, (0.0, t1), y0, method=method, rtol=rtol, atol=atol))
            # simkit's first calls compile; then every row once per round, each call after
            # the same untimed Python work
            first = {k: timed(fns[k]) for k in [*labels, jit_key]}
            t = settled_rounds(fns, max(args.repeats, 5))
            for key, label in labels.items():
                sol, run = fns[key](), t[key]["median"]
                row["results"][key] = dict(
                    time=run, compile=max(first[key] - run, 0.0), error=error(sol.ys[-1], ref, scale),
                    status=int(sol.status), steps=int(sol.stats["num_steps"]),
                    solver=sol.solver_name if hasattr(sol, "solver_name") else label)
            out, run = fns[jit_key](), t[jit_key]["median"]
            row["results"][jit_key] = dict(time=run, compile=max(first[jit_key] - run, 0.0),
                                           error=error(out, ref, scale),
                                           status=row["results"]["simkit default"]["status"])
            for method in ("Radau", "BDF", "LSODA"):
                if f"scipy {method}" in fns:
                    out = fns[f"scipy {method}"]()
                    row["results"][f"scipy {method}"] = dict(
                        time=t[f"scipy {method}"]["median"], error=error(out.y[:, -1], ref, scale),
                        status=int(out.status), steps=len(out.t) - 1)
            job = dict(library="numbalsoda", method="lsoda", rhs=NUMBALSODA_RHS.get(name), y0=y0.tolist(),
                       t_eval=[0.0, t1], rtol=rtol, atol=atol)
            nb = None if job["rhs"] is None else time_in_fresh_process(job, max(args.repeats, 5))
            if nb is not None:  # (in a process of its own: `own_process`)
                row["results"]["numbalsoda LSODA"] = dict(time=nb["settled"], back_to_back=nb["back_to_back"],
                                                          error=error(nb["usol"][-1], ref, scale),
                                                          status=0 if nb["success"] else -1)
            rows.append(row)
            print(f"\n{name}  rtol {rtol:g}  atol {atol:g}")
            for label, r in row["results"].items():
                comp = f"  compile {r['compile']:.2f} s" if "compile" in r else ""
                print(f"  {label:22s} {r['time'] * 1e3:10.2f} ms  error {r['error']:9.2e}  "
                      f"status {r['status']}{comp}")
            sys.stdout.flush()
    equal = at_equal_error(rows, "numbalsoda LSODA")
    if equal:
        print("\nnumbalsoda LSODA's time at the default's error over the default's (0.5: within 2x): "
              "plain call / the program inside jax.jit")
        for e in equal:
            ratio = "-" if e["ratio"] is None else f"{e['ratio']:.2f} / {e['jit_ratio']:.2f}"
            print(f"  {e['problem']:18s} rtol {e['rtol']:7.0e}  error {e['error']:8.1e}  {ratio}")
    return write_result(args.out, dict(command="python benchmarks/stiff.py " + " ".join(
        argv if argv is not None else sys.argv[1:]), machine=machine(), rows=rows,
        numbalsoda_at_equal_error=equal))


if __name__ == "__main__":
    main()
