"""simkit's fused kernels against the CPU peers, each run as its users write it.

    python benchmarks/kernels.py [--repeats 9] [--out benchmarks/results/kernels.json]

Peers, each as its own users write it: SciPy's ``solve_ivp`` with a plain NumPy rhs (the
library model's rhs source run with NumPy in place of jax.numpy, `stiff.numpy_rhs`) and, for the
implicit methods, SciPy's own finite-difference Jacobian; numbalsoda (DOP853, LSODA) with numba
cfuncs when installed (`pip install ".[bench]"`, needs a Fortran compiler to build), each timed
in a fresh process of its own with the same settled calls (`own_process`: timed in this
process after the JAX rows, it ran up to 6x slower than in its own, which made simkit's
ratios against it too good). Extra rows,
labelled as such: SciPy with the jitted JAX rhs (`simkit.reference.solve_ivp`, a JAX dispatch per
evaluation and the ``jax.jacfwd`` Jacobian), diffrax through ``simkit.solve``, and simkit's
default inside the user's ``jax.jit`` (a parameter passed in: each call runs the compiled
program alone, without the front door's checks and `Solution`).

Rows: Lorenz t 0..100, rtol = atol = 1e-8, 1000 evenly spaced saves: simkit's default (Tsit5)
and DOP853 against SciPy DOP853 and RK45 and numbalsoda DOP853. Robertson t 0..1e5, rtol 1e-6,
atol 1e-10, 60 log-spaced saves (t = 0, then 1e-5 .. 1e5): simkit's default for a stiff model and
the other Rosenbrock kernel (Rodas4 / Rodas5P) against SciPy LSODA, Radau and BDF and numbalsoda
LSODA. Each row names the kernel that ran and returns its library's array of saved states
(``sol.ys``, numbalsoda's ``usol``, SciPy's ``out.y``), the final state read after the timing
(``sol.ys[-1]``, a JAX indexing operation of 50-200 µs, would fall inside the timing; it is an
extra row). Run time: median over ``--repeats`` interleaved
rounds (one call of each row per round) after a warm-up call, every timed call after the same
~10 ms of untimed Python work (`timing.settled_rounds`); simkit's rows also back to back (a loop of solves).
Compile time apart (simkit: first call minus the median run; numbalsoda: the numba cfunc
compile). Ratios are peer / simkit. Also: compile time of each kernel on a 3-state model, the
reverse-mode gradient over the forward solve, and a ``jax.vmap`` ensemble of 2048 Lorenz members.
"""

from __future__ import annotations

import os

# compile times are measured: no persistent compilation cache in this process
os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import importlib.metadata
import json
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import diffrax as dfx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.integrate

import simkit
from simkit import models, reference
from simkit._config import configure_own_process
configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it
from stencil import machine  # benchmarks/stencil.py
from stiff import numpy_rhs  # benchmarks/stiff.py: the model's rhs source run with NumPy
from own_process import time_in_fresh_process  # benchmarks/own_process.py
from timing import interleaved, settled_rounds, timed  # benchmarks/timing.py

LORENZ = dict(t1=100.0, rtol=1e-8, atol=1e-8, saves=1000)
ROBERTSON = dict(t1=1e5, rtol=1e-6, atol=1e-10, saves=60)
# every row returns its array of saved states; this extra row also indexes it, as
# ``sol.ys[-1]``: a JAX indexing op of its own, 50-200 µs
LAST_ROW = "extra: simkit default, then sol.ys[-1] (a JAX indexing op)"


def numbalsoda_row(method, rhs, y0, t_eval, rtol, atol, repeats):
    """numbalsoda's row, timed in a fresh process of its own (`own_process`: in this process,
    after the JAX rows, it ran up to 6x slower than its users see it). None if not installed."""
    out = time_in_fresh_process(dict(library="numbalsoda", method=method, rhs=rhs, y0=[float(v) for v in y0],
                                     t_eval=[float(v) for v in t_eval], rtol=rtol, atol=atol), repeats)
    if out is None:
        return None
    assert out["success"], "numbalsoda failed"
    return out


def own_process_rows(model, t_eval, rtol, atol, default, repeats, saves=None):
    """simkit's default, plain and inside the user's ``jax.jit``, each timed in a fresh process
    of its own as numbalsoda's rows are (`own_process`), by label."""
    job = dict(library="simkit", model=model, t_eval=[float(v) for v in t_eval], rtol=rtol, atol=atol, saves=saves)
    return {f"simkit default ({default}) (a process of its own)": time_in_fresh_process(job, repeats),
            f"extra: simkit default ({default}) inside the user's jax.jit (a process of its own)":
                time_in_fresh_process(job | dict(jit=True), repeats)}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def scipy_row(rhs, t1, y0, t_eval, method, rtol, atol):
    def call():
        out = scipy.integrate.solve_ivp(rhs, (0.0, t1), y0, method=method, t_eval=t_eval, rtol=rtol, atol=atol)
        assert out.status == 0, out.message
        return out.y.T  # (n_save, n_states), as every row returns (a view: no copy)
    return call


def simkit_row(model, t1, ts, rtol, atol, solver=None, last=False):
    """A plain ``simkit.solve`` call returning the saved states ``sol.ys`` (a ``jax.Array``; every
    row returns its library's array of saved states). ``last``: ``sol.ys[-1]`` instead, which adds
    a JAX indexing operation, dispatched as its own small program (an extra row, labelled)."""
    kw = {} if solver is None else {"solver": solver}
    if last:
        return lambda: simkit.solve(model, (0.0, t1), saveat=ts, rtol=rtol, atol=atol, **kw).ys[-1]
    return lambda: simkit.solve(model, (0.0, t1), saveat=ts, rtol=rtol, atol=atol, **kw).ys


def simkit_jit_row(model, t1, ts, rtol, atol):
    """simkit's default inside the user's ``jax.jit``, one parameter passed in as a number: the
    front door runs once, at tracing, and each call runs the compiled program alone. Returns
    the row and its first call (tracing, compiling and running) in seconds."""
    name = next(iter(model.params))
    fn = jax.jit(lambda v: simkit.solve(model, (0.0, t1), saveat=ts, rtol=rtol, atol=atol, params={name: v}).ys)
    value = float(model.params[name])
    row = lambda: fn(value)  # noqa: E731
    return row, timed(row)


def simkit_first(model, t1, ts, rtol, atol, solver=None):
    """The first call (compile and run): the name of the kernel that ran and the seconds."""
    kw = {} if solver is None else {"solver": solver}
    start = time.perf_counter()
    sol = simkit.solve(model, (0.0, t1), saveat=ts, rtol=rtol, atol=atol, **kw)
    jax.block_until_ready(sol.ys)
    return sol.solver_name.removeprefix("simkit.").removesuffix("()"), time.perf_counter() - start


def problem(title, fns, simkit_rows, first, outside, repeats):
    """Time the rows. Compile time of the JAX rows: their first call (``first``) minus the median
    run. ``outside``: rows timed in processes of their own (`numbalsoda_row` results by label)."""
    t = settled_rounds(fns, repeats)
    back_to_back = {k: interleaved({k: fns[k]}, repeats)[k] for k in simkit_rows}
    final = {k: [float(v) for v in np.atleast_2d(np.asarray(fn()))[-1]] for k, fn in fns.items()}
    compile_s = {k: max(first[k] - t[k]["median"], 0.0) for k in first}
    for k, out in outside.items():
        t[k] = dict(median=out["settled"], samples=out["settled_samples"])
        final[k] = out["usol"][-1]
        compile_s[k] = out["compile"]
        back_to_back[k] = out["back_to_back"]
    refs = simkit_rows + [k for k in outside if "simkit" in k]
    ratios = {ref: {k: v["median"] / t[ref]["median"] for k, v in t.items()} for ref in refs}
    return dict(problem=title, run_s={k: v["median"] for k, v in t.items()},
                samples_s={k: v["samples"] for k, v in t.items()}, compile_s=compile_s, first_call_s=first,
                ratio_peer_over_simkit=ratios, simkit_back_to_back_s=back_to_back, final_state=final)


def print_rows(row: dict) -> None:
    refs = list(row["ratio_peer_over_simkit"])
    print(f"\n{row['problem']}")
    print(f"  {'row':50s} {'run [ms]':>10s} " + " ".join(f"{'/ ' + r[7:]:>22s}" for r in refs) + "  compile [s]")
    for k, v in row["run_s"].items():
        comp = row["compile_s"].get(k)
        ratios = " ".join(f"{row['ratio_peer_over_simkit'][r][k]:22.2f}" for r in refs)
        print(f"  {k:50s} {v * 1e3:10.2f} {ratios}  " + (f"{comp:.2f}" if comp is not None else ""))
    for k, v in row["simkit_back_to_back_s"].items():
        print(f"  {k} back to back (a loop of calls): {v * 1e3:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--no-jax-rhs-scipy", action="store_true",
                        help="leave out the rows of SciPy with the jitted JAX rhs (simkit.reference)")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "kernels.json"))
    args = parser.parse_args()
    before = machine()
    start_all = time.perf_counter()
    rows = {}

    # -- Lorenz: t in [0, 100], rtol = atol = 1e-8, 1000 saved points -------------------
    lz, lc = models.get("lorenz"), LORENZ
    lz_t = np.linspace(0.0, lc["t1"], lc["saves"])
    lz_y0 = np.asarray(lz.y0, float)
    lz_args = (lc["t1"], lc["saves"], lc["rtol"], lc["atol"])
    name, first_default = simkit_first(lz, *lz_args)  # the default: Tsit5 for a non-stiff model
    other = simkit.Tsit5() if name == "DOP853" else simkit.DOP853()
    other_name, first_other = simkit_first(lz, *lz_args, other)
    diffrax_row = "extra: diffrax Tsit5 (via simkit.solve)"
    simkit_rows = [f"simkit default ({name})", f"simkit {other_name}"]
    first = dict(zip(simkit_rows, (first_default, first_other)))
    first[diffrax_row] = simkit_first(lz, *lz_args, dfx.Tsit5())[1]
    fns = {simkit_rows[0]: simkit_row(lz, *lz_args), simkit_rows[1]: simkit_row(lz, *lz_args, other)}
    for m in ("DOP853", "RK45"):
        fns[f"scipy {m} (NumPy rhs)"] = scipy_row(numpy_rhs(lz), lc["t1"], lz_y0, lz_t, m, lc["rtol"], lc["atol"])
    nb = numbalsoda_row("dop853", "lorenz", lz_y0, lz_t, lc["rtol"], lc["atol"], args.repeats)
    outside = own_process_rows("lorenz", lz_t, lc["rtol"], lc["atol"], name, args.repeats, saves=lc["saves"])
    if nb is not None:
        outside["numbalsoda DOP853 (a process of its own)"] = nb
    fns[diffrax_row] = simkit_row(lz, *lz_args, dfx.Tsit5())
    fns[LAST_ROW] = simkit_row(lz, *lz_args, last=True)
    jit_row = f"extra: simkit default ({name}) inside the user's jax.jit"
    fns[jit_row], first[jit_row] = simkit_jit_row(lz, *lz_args)
    if not args.no_jax_rhs_scipy:
        fns["extra: scipy DOP853 with the jitted JAX rhs"] = lambda: reference.solve_ivp(
            lz, (0.0, lc["t1"]), saveat=lc["saves"], method="DOP853", rtol=lc["rtol"], atol=lc["atol"]).ys
    rows["lorenz"] = problem("Lorenz t 0..100, rtol = atol = 1e-8, 1000 saves", fns, simkit_rows, first, outside,
                             args.repeats)

    # -- Robertson: t to 1e5, rtol 1e-6, atol 1e-10, 60 log-spaced saves ---------------
    rob, rc = models.get("robertson"), ROBERTSON
    rob_t = np.logspace(-5.0, 5.0, rc["saves"])
    rob_t[0] = 0.0
    rob_y0 = np.asarray(rob.y0, float)
    rob_args = (rc["t1"], rob_t, rc["rtol"], rc["atol"])
    name, first_default = simkit_first(rob, *rob_args)  # the default for a stiff model
    other = simkit.Rodas4() if name == "Rodas5P" else simkit.Rodas5P()
    other_name, first_other = simkit_first(rob, *rob_args, other)
    diffrax_row = "extra: diffrax Kvaerno5, its default Newton tolerances (via simkit.solve)"
    simkit_rows = [f"simkit default ({name})", f"simkit {other_name}"]
    first = dict(zip(simkit_rows, (first_default, first_other)))
    first[diffrax_row] = simkit_first(rob, *rob_args, dfx.Kvaerno5())[1]
    fns = {simkit_rows[0]: simkit_row(rob, *rob_args), simkit_rows[1]: simkit_row(rob, *rob_args, other)}
    for m in ("LSODA", "Radau", "BDF"):
        fns[f"scipy {m} (NumPy rhs, FD Jacobian)"] = scipy_row(numpy_rhs(rob), rc["t1"], rob_y0, rob_t, m,
                                                               rc["rtol"], rc["atol"])
    nb = numbalsoda_row("lsoda", "robertson", rob_y0, rob_t, rc["rtol"], rc["atol"], args.repeats)
    outside = own_process_rows("robertson", rob_t, rc["rtol"], rc["atol"], name, args.repeats)
    if nb is not None:
        outside["numbalsoda LSODA (a process of its own)"] = nb
    fns[diffrax_row] = simkit_row(rob, *rob_args, dfx.Kvaerno5())
    fns[LAST_ROW] = simkit_row(rob, *rob_args, last=True)
    jit_row = f"extra: simkit default ({name}) inside the user's jax.jit"
    fns[jit_row], first[jit_row] = simkit_jit_row(rob, *rob_args)
    if not args.no_jax_rhs_scipy:
        for m in ("LSODA", "Radau", "BDF"):
            fns[f"extra: scipy {m} with the jitted JAX rhs + jacfwd"] = (lambda m=m: reference.solve_ivp(
                rob, (0.0, rc["t1"]), saveat=rob_t, method=m, rtol=rc["rtol"], atol=rc["atol"]).ys)
    rows["robertson"] = problem("Robertson t 0..1e5, rtol 1e-6, atol 1e-10, 60 log-spaced saves", fns,
                                simkit_rows, first, outside, args.repeats)

    # -- compile time of each kernel on a 3-state model (fresh rhs: no cache) --------
    compile_3 = {}
    for solver in (simkit.Tsit5(), simkit.DOPRI5(), simkit.DOP853(), simkit.Rodas4(), simkit.Rodas5P(),
                   simkit.RadauIIA5(), simkit.BDF(), simkit.AutoSwitch()):
        model = lz.replace(rhs=lambda t, y, p: lz.rhs(t, y, p))  # a new function: a new program
        compile_3[repr(solver)] = timed(lambda: simkit.solve(model, (0.0, 1.0), saveat=11, solver=solver).ys)

    # -- reverse-mode gradient vs forward solve (Lorenz, 3 parameters) -------------
    p = {k: jnp.asarray(v) for k, v in lz.params.items()}

    def loss(params):
        return jnp.sum(simkit.solve(lz, (0.0, 10.0), params=params, saveat=101, rtol=1e-8, atol=1e-8).ys ** 2)

    grad = jax.jit(jax.grad(loss))
    forward = jax.jit(loss)
    grad_t = interleaved({"forward solve": lambda: forward(p), "jax.grad": lambda: grad(p)}, args.repeats)

    # -- ensemble layout: jax.vmap of the kernel over 2048 members (lockstep batching) ---
    rhos = jnp.asarray(np.random.default_rng(0).uniform(10.0, 50.0, 2048))
    ens = {}
    for label, solver in (("simkit Tsit5", simkit.Tsit5()), ("diffrax Tsit5", dfx.Tsit5())):
        f = jax.jit(jax.vmap(lambda r, s=solver: simkit.solve(
            lz, (0.0, 10.0), params={"rho": r}, saveat=2, rtol=1e-6, atol=1e-6, solver=s).ys[-1]))
        ens[label] = f
    ens_t = interleaved({k: (lambda f=f: f(rhos)) for k, f in ens.items()}, max(3, args.repeats // 3))

    for row in rows.values():
        print_rows(row)
    print("\ncompile + first run on a 3-state model (new program)")
    for k, v in compile_3.items():
        print(f"  {k:36s} {v:.2f} s")
    print("\nLorenz t 0..10, 101 saves: reverse-mode gradient w.r.t. 3 parameters")
    print(f"  forward {grad_t['forward solve'] * 1e3:.3f} ms, grad {grad_t['jax.grad'] * 1e3:.3f} ms, "
          f"ratio {grad_t['jax.grad'] / grad_t['forward solve']:.2f}")
    print("\nensemble: jax.vmap over 2048 Lorenz members (rho ~ U[10, 50], t 0..10, 1e-6), one device")
    for k, v in ens_t.items():
        print(f"  {k:36s} {len(rhos) / v:10.0f} solves/s")
    wall = time.perf_counter() - start_all
    print(f"\nwall time {wall:.0f} s")
    versions = dict(scipy=scipy.__version__, simkit=simkit.__version__, diffrax=getattr(dfx, "__version__", ""),
                    numbalsoda=_version("numbalsoda"))
    result = dict(command=" ".join(["python benchmarks/kernels.py", *sys.argv[1:]]), machine=before | versions,
                  load_average_after=list(os.getloadavg()), wall_s=wall, repeats=args.repeats,
                  settings=dict(lorenz=LORENZ, robertson=ROBERTSON | {"save_times": "0, then logspace(-5, 5, 60)[1:]"}),
                  note="final_state: the state at the last save time of one call of each row (Lorenz at "
                       "t = 100 is chaotic: the rows agree there only in the attractor, not the state)",
                  rows=rows, compile_3_state_first_call_s=compile_3,
                  gradient=grad_t | {"ratio": grad_t["jax.grad"] / grad_t["forward solve"]},
                  ensemble_vmap_2048_solves_per_s={k: len(rhos) / v for k, v in ens_t.items()})
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
