"""Robertson to 1e11 with the rhs in two equal forms: how rounding in a conserved direction
drives an implicit method's steps.

    python benchmarks/experiments/conserving_rhs.py [--repeats 3] [--rtols 1e-6,1e-8,1e-10,1e-12]

Robertson's rhs conserves y1 + y2 + y3. Written with the rates, ``f2 = r1 - r2 - r3``, the
three components are rounded apart and ``f1 + f2 + f3`` is rounding of the rates' size; the
library model writes ``f2 = -(f1 + f3)``, the same function, whose sum is
rounding of ``f2``'s size. In a Newton correction ``(I - c J)^-1 (c f - ...)`` the conserved
direction is not damped (``J`` has a zero eigenvalue there), so the rates' rounding reaches
the correction multiplied by ``c ~ h`` (up to 1e9 late in the run), where it meets the Newton
tolerance (``10 eps / rtol`` at tight rtol): Newton failures, Jacobian refreshes, rejected steps.
How large that rounding is depends on how XLA compiled the rhs into the step (which
products it contracted into fused multiply-adds), so each form is run in two processes: with
simkit's default code generator choice (XLA:CPU's classic generator for kernel solves) and
with XLA's default (``SIMKIT_FAST_COMPILE=0``: its MLIR fusion emitters).

Rows: simkit's default, Rodas5P, RadauIIA5 and BDF; atol = rtol x 1e-13 (the stiff suite's
scale for this problem); error against the published test-set value at 1e11 as
`benchmarks/stiff.py` measures it; run time the median of ``repeats`` calls after the first,
compile time the first call's extra time (`stiff.time_simkit`).
Writes ``benchmarks/results/conserving_rhs.json``.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import json
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import jax.numpy as jnp  # noqa: E402

import simkit  # noqa: E402
from simkit import models  # noqa: E402
from stiff import PROBLEMS, error, machine, time_simkit  # noqa: E402  benchmarks/stiff.py

PROBLEM = "robertson_1e11"


def rates_rhs(t, y, p):
    """Robertson as the rates read: f2 = r1 - r2 - r3 (the conserving form is the library model's)."""
    r1 = p["k1"] * y[0]
    r2 = p["k2"] * y[1] * y[1]
    r3 = p["k3"] * y[1] * y[2]
    return jnp.stack([-r1 + r3, r1 - r2 - r3, r2])


def child(rtols: list[float], repeats: int) -> list[dict]:
    """Every row in this process (its code generator set by the environment), timed and
    measured as `benchmarks/stiff.py` does."""
    model_name, t1, scale, published = PROBLEMS[PROBLEM]
    library = models.get(model_name)
    forms = {"conserving (library)": library, "rates": library.replace(rhs=rates_rhs, name="robertson_rates")}
    solvers = {"default": None, "Rodas5P": simkit.Rodas5P(), "RadauIIA5": simkit.RadauIIA5(), "BDF": simkit.BDF()}
    rows = []
    for rtol in rtols:
        for form, model in forms.items():
            for name, solver in solvers.items():
                sol, run, compile_s = time_simkit(model, t1, rtol, rtol * scale, solver, repeats)
                st = sol.stats
                rows.append(dict(
                    rtol=rtol, form=form, solver=name, ran=sol.solver_name, status=int(sol.status),
                    error=error(sol.ys[-1], published, scale),
                    accepted=int(st["num_accepted_steps"]), rejected=int(st["num_rejected_steps"]),
                    jacobians=int(st["num_jacobians"]) if "num_jacobians" in st else None,
                    run_ms=1e3 * run, compile_s=compile_s))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rtols", default="1e-6,1e-8,1e-10,1e-12")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "results", "conserving_rhs.json"))
    args = parser.parse_args()
    rtols = [float(r) for r in args.rtols.split(",")]
    if args.child:
        print(json.dumps(child(rtols, args.repeats)))
        return

    out = dict(command="python benchmarks/experiments/conserving_rhs.py " + " ".join(sys.argv[1:]),
               machine=machine(), runs={})
    for label, setting in (("simkit's choice (classic generator for kernel solves)", None),
                           ("XLA's default (SIMKIT_FAST_COMPILE=0)", "0")):
        env = {k: v for k, v in os.environ.items() if k != "SIMKIT_FAST_COMPILE"}
        if setting is not None:
            env["SIMKIT_FAST_COMPILE"] = setting
        run = subprocess.run([sys.executable, __file__, "--child", "--repeats", str(args.repeats),
                              "--rtols", args.rtols], env=env, capture_output=True, text=True, check=True)
        rows = json.loads(run.stdout.strip().splitlines()[-1])
        out["runs"][label] = rows
        print(f"\n{label}")
        print(f"{'rtol':>7} {'form':<21} {'solver':<10} {'status':>6} {'error':>9} {'accepted':>9} {'rejected':>9} "
              f"{'jacobians':>9} {'ms':>8}")
        for r in rows:
            print(f"{r['rtol']:7.0e} {r['form']:<21} {r['solver']:<10} {r['status']:6d} {r['error']:9.1e} "
                  f"{r['accepted']:9d} {r['rejected']:9d} {str(r['jacobians']):>9} {r['run_ms']:8.2f}")
    out["machine"]["load_average_after"] = list(os.getloadavg())
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
