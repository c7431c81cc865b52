"""Ensembles: simkit.ensemble against the naive jit(vmap) of the same kernel, SciPy and diffrax.

    python benchmarks/ensemble.py [--members 10000] [--repeats 3] [--scipy-members 200]
        [--out benchmarks/results/ensemble.json]

Lorenz (rho ~ U[10, 50], t 0..10, rtol = atol = 1e-6, Tsit5, ``--members`` members) and van der
Pol (mu log-uniform in [0.1, 100], t 0..20, 1e-6, Rodas4, a quarter as many members), in solves
per second: simkit.ensemble (default: refilled lanes, all devices and one; lockstep chunks,
plain and balanced) and the naive ``jax.jit(jax.vmap(solve))`` (medians of ``--repeats``
interleaved rounds; compile + first call apart), against numbalsoda (DOP853 for Lorenz, LSODA
for van der Pol; numba cfunc rhs) in a numba loop over the members, one thread and
``prange`` over every core (``NUMBA_NUM_THREADS``), and a SciPy loop with a plain NumPy rhs
(`stiff.numpy_rhs`: RK45 for Lorenz, LSODA for van der Pol), one ``solve_ivp`` per member. The SciPy loop runs on the first
``--scipy-members`` members only (10,000 would take minutes) and its rate is extrapolated per
member: solves/s = members run / time.

Run in a fresh process: simkit configures one CPU device per core at import (see README).
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")

import argparse
import json
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import diffrax as dfx
import jax
import jax.numpy as jnp
import numpy as np
import scipy
import scipy.integrate

import simkit
from simkit import models
from simkit.engines.kernel_queue import BLOCK
from simkit._config import configure_own_process
configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it
from stencil import machine  # benchmarks/stencil.py
from stiff import numpy_rhs  # benchmarks/stiff.py: the model's rhs source run with NumPy
from timing import interleaved, timed  # benchmarks/timing.py


def naive(model, solver, t1, tol, **member_axes):
    names = list(member_axes)

    @jax.jit
    def run(*values):
        def one(*vals):
            return simkit.solve(model, (0.0, t1), params=dict(zip(names, vals)), saveat=2,
                                rtol=tol, atol=tol, solver=solver, throw=False).ys[-1]
        return jax.vmap(one)(*values)

    values = [jnp.asarray(v) for v in member_axes.values()]
    return lambda: run(*values)


def scipy_loop(model, name, values, t1, method, tol):
    """Seconds for one ``solve_ivp`` per member value, with a plain NumPy rhs (built per member)."""
    y0 = np.asarray(model.y0, float)
    start = time.perf_counter()
    for v in values:
        f = numpy_rhs(model.replace(params={**model.params, name: float(v)}))
        out = scipy.integrate.solve_ivp(f, (0.0, t1), y0, method=method, t_eval=[t1], rtol=tol, atol=tol)
        assert out.status == 0, out.message
    return time.perf_counter() - start


def numbalsoda_loops():
    """numbalsoda's DOP853 (Lorenz) and LSODA (van der Pol) over the members in numba: one
    thread (``njit``) and every core (``njit(parallel=True)`` with ``prange``); None when
    numbalsoda is not installed. Each member's parameter reaches the cfunc rhs as ``p[0]``."""
    try:
        import numba as nb
        from numbalsoda import dop853, lsoda, lsoda_sig
    except ImportError:
        return None

    @nb.cfunc(lsoda_sig)
    def lorenz(t, u, du, p):
        du[0] = 10.0 * (u[1] - u[0])
        du[1] = u[0] * (p[0] - u[2]) - u[1]
        du[2] = u[0] * u[1] - (8.0 / 3.0) * u[2]

    @nb.cfunc(lsoda_sig)
    def vdp(t, u, du, p):
        du[0] = u[1]
        du[1] = p[0] * (1.0 - u[0] * u[0]) * u[1] - u[0]

    def members_loop(solver, rhs_ptr):  # one numbalsoda solve per member; the state at the end
        def loop(values, u0, t_eval, tol):
            out = np.empty((values.shape[0], u0.shape[0]))
            for i in nb.prange(values.shape[0]):
                usol, ok = solver(rhs_ptr, u0, t_eval, data=np.array([values[i]]), rtol=tol, atol=tol)
                out[i] = usol[-1]
                if not ok:
                    out[i] = np.nan
            return out

        return nb.njit(loop), nb.njit(parallel=True)(loop)

    return dict(lorenz=members_loop(dop853, lorenz.address), van_der_pol=members_loop(lsoda, vdp.address))


def lane_efficiency(steps, n_devices, lanes=256, refill_fraction=16, block=None, queue_lanes=None):
    """Useful lane-iterations over all lane-iterations, from each member's step attempts
    (``stats["num_steps"]``) and the schedule of each ensemble mode, per device (members in
    contiguous blocks): lockstep chunks of ``lanes`` run each chunk for its slowest member;
    refilled lanes (``queue_lanes`` of them, default ``lanes``) are simulated as
    `simkit.engines.kernel_queue` runs them (a refill once 1/16 of the lanes, or the last
    ones, are done): with ``block=None`` one attempt per
    iteration and a member's first iteration saving at t0; with ``block`` (members saving at
    t0 and t1 only: `kernel_queue.BLOCK`) ``block`` attempts between refills, a member's t0
    saved when it starts."""
    steps = np.asarray(steps, int)
    queue_lanes = queue_lanes or lanes
    out = dict(lockstep=[], refilled=[])
    extra = 1 if block is None else 0
    every = 1 if block is None else block
    for part in np.array_split(steps, n_devices):
        work = part.sum()
        lock = sum(part[i:i + lanes].max() for i in range(0, len(part), lanes))
        out["lockstep"].append(work / (lanes * lock))
        queue = list(part + extra)[::-1]
        left = np.array([queue.pop() for _ in range(min(queue_lanes, len(part)))])
        live = np.ones(len(left), bool)
        iterations = 0
        while live.any():
            iterations += every
            left = np.where(live, left - every, left)
            done = live & (left <= 0)
            if done.sum() >= max(1, queue_lanes // refill_fraction) or (done.any() and (done.sum() == live.sum()
                                                                                or not queue)):
                for i in np.flatnonzero(done):
                    if queue:
                        left[i] = queue.pop()
                    else:
                        live[i] = False
        out["refilled"].append(work / (len(left) * iterations))
    return {k: float(np.mean(v)) for k, v in out.items()}


def default_lanes(members, n_devices):
    """The refilled lanes per CPU device that `simkit.ensemble` takes by default."""
    from simkit._ensemble import lanes_per_device

    return lanes_per_device(-(-members // n_devices), "cpu", True, fits=10**9)


def report(title, n, t, compile_s, scipy_row=None):
    rates = {k: n / v for k, v in t.items()}
    print(f"\n{title}, {n} members: solves/s")
    for k, v in rates.items():
        print(f"  {k:52s} {v:10.0f}   (compile + first call {compile_s[k]:.1f} s)")
    row = dict(members=n, solves_per_s=rates, run_s=t, compile_and_first_call_s=compile_s)
    if scipy_row:
        label, members, seconds = scipy_row
        rate = members / seconds
        print(f"  {label:52s} {rate:10.0f}   ({members} members in {seconds:.2f} s, extrapolated per member)")
        row["solves_per_s"][label] = rate
        row["scipy_subset"] = dict(label=label, members_run=members, seconds=seconds,
                                   note="SciPy timed on the first members only; solves/s = members_run / seconds")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scipy-members", type=int, default=200,
                        help="members of the SciPy loop (timed on these, extrapolated per member)")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "ensemble.json"))
    args = parser.parse_args()
    before = machine()
    start_all = time.perf_counter()
    n = args.members
    rng = np.random.default_rng(0)
    devices = jax.local_devices()
    print(f"{len(devices)} CPU devices, {os.cpu_count()} cores")
    results = {}
    peers = numbalsoda_loops()
    nb_threads = None
    if peers:
        import numba

        nb_threads = numba.get_num_threads()
        print(f"numbalsoda with numba, {nb_threads} threads")

    lorenz = models.get("lorenz")
    rhos = rng.uniform(10.0, 50.0, n)

    def ens(**kw):
        return lambda: simkit.ensemble(lorenz, (0.0, 10.0), params={"rho": rhos}, saveat=2,
                                       rtol=1e-6, atol=1e-6, **kw).ys

    fns = {
        "simkit.ensemble (default: refilled lanes, all devices)": ens(),
        "simkit.ensemble (default, one device)": ens(devices=devices[:1]),
        "simkit.ensemble (lockstep chunks: refill=False)": ens(refill=False),
        "simkit.ensemble (lockstep chunks, balanced)": ens(balance=True),
        "naive jit(vmap(solve)), simkit Tsit5": naive(lorenz, simkit.Tsit5(), 10.0, 1e-6, rho=rhos),
        "naive jit(vmap(solve)), diffrax Tsit5": naive(lorenz, dfx.Tsit5(), 10.0, 1e-6, rho=rhos),
    }
    if peers:
        u0, t_eval = np.asarray(lorenz.y0, float), np.array([0.0, 10.0])
        serial, parallel = peers["lorenz"]
        fns[f"numbalsoda DOP853, numba prange ({nb_threads} threads)"] = lambda: parallel(rhos, u0, t_eval, 1e-6)
        fns["numbalsoda DOP853, numba one thread"] = lambda: serial(rhos, u0, t_eval, 1e-6)
    compile_s = {k: timed(f) for k, f in fns.items()}
    for k, f in fns.items():  # a failed numbalsoda member would be a NaN row
        assert not k.startswith("numbalsoda") or np.all(np.isfinite(f())), f"{k}: a member failed"
    t = interleaved(fns, args.repeats, warm_up=False)
    k = min(args.scipy_members, n)
    scipy_s = scipy_loop(lorenz, "rho", rhos[:k], 10.0, "RK45", 1e-6)
    effs = lane_efficiency(simkit.ensemble(lorenz, (0.0, 10.0), params={"rho": rhos}, saveat=2, rtol=1e-6,
                                           atol=1e-6).stats["num_steps"], len(devices), block=BLOCK,
                           queue_lanes=default_lanes(n, len(devices)))
    print(f"lane efficiency (from the members' step counts): {effs}")
    results["lorenz"] = report("Lorenz, rho ~ U[10, 50], t 0..10, rtol = atol = 1e-6", n, t, compile_s,
                               ("scipy RK45 loop (NumPy rhs)", k, scipy_s))
    results["lorenz"]["lane_efficiency"] = effs

    vdp = models.get("van_der_pol")
    mus = np.exp(rng.uniform(np.log(0.1), np.log(100.0), n // 4))
    m = len(mus)

    def vdp_ens(**kw):
        return lambda: simkit.ensemble(vdp, (0.0, 20.0), params={"mu": mus}, saveat=2, rtol=1e-6, atol=1e-6,
                                       solver=simkit.Rodas4(), **kw).ys

    fns = {
        "simkit.ensemble (default: refilled lanes)": vdp_ens(),
        "simkit.ensemble (lockstep chunks: refill=False)": vdp_ens(refill=False),
        "simkit.ensemble (lockstep chunks, balanced)": vdp_ens(balance=True),
        "naive jit(vmap(solve)), simkit Rodas4": naive(vdp, simkit.Rodas4(), 20.0, 1e-6, mu=mus),
    }
    if peers:
        u0, t_eval = np.asarray(vdp.y0, float), np.array([0.0, 20.0])
        serial, parallel = peers["van_der_pol"]
        fns[f"numbalsoda LSODA, numba prange ({nb_threads} threads)"] = lambda: parallel(mus, u0, t_eval, 1e-6)
        fns["numbalsoda LSODA, numba one thread"] = lambda: serial(mus, u0, t_eval, 1e-6)
    compile_s = {k: timed(f) for k, f in fns.items()}
    for k, f in fns.items():  # a failed numbalsoda member would be a NaN row
        assert not k.startswith("numbalsoda") or np.all(np.isfinite(f())), f"{k}: a member failed"
    t = interleaved(fns, args.repeats, warm_up=False)
    k = min(args.scipy_members, m)
    scipy_s = scipy_loop(vdp, "mu", mus[:k], 20.0, "LSODA", 1e-6)
    effs_vdp = lane_efficiency(simkit.ensemble(vdp, (0.0, 20.0), params={"mu": mus}, saveat=2, rtol=1e-6, atol=1e-6,
                                               solver=simkit.Rodas4()).stats["num_steps"], len(devices),
                               block=BLOCK, queue_lanes=default_lanes(m, len(devices)))
    print(f"lane efficiency (from the members' step counts): {effs_vdp}")
    results["van_der_pol"] = report("Van der Pol, mu log-uniform in [0.1, 100], t 0..20, 1e-6, Rodas4", m, t,
                                    compile_s, ("scipy LSODA loop (NumPy rhs)", k, scipy_s))
    results["van_der_pol"]["lane_efficiency"] = effs_vdp
    wall = time.perf_counter() - start_all
    print(f"\nwall time {wall:.0f} s")
    result = dict(command=" ".join(["python benchmarks/ensemble.py", *sys.argv[1:]]),
                  machine=before | dict(scipy=scipy.__version__, simkit=simkit.__version__, numba_threads=nb_threads),
                  load_average_after=list(os.getloadavg()), wall_s=wall, repeats=args.repeats, **results)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
