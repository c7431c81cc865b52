"""How close to the Euler heat step can a Gray-Scott RK4 stage get? numba's answer.

    python benchmarks/experiments/gs_rk4_floor.py [--n 1024] [--repeats 7]

The goal was a Gray-Scott RK4 stage within 1.5x of the heat Euler step on the same grid.
This times the same pair written by hand in numba, the classical RK4 with each stage
fused into one pass over the grid (the stage input ``u + a dt k`` formed at the five stencil
points, the Laplacians, the reaction, the new ``k`` and the running sum of the weighted
``k``s; the edge columns apart, no ``%`` in the inner loop), and the Euler heat step of
`benchmarks/stencil.py`, on one thread and with ``prange`` over every thread, beside
simkit's own rows (`simkit.stencil.integrate`). Memory traffic per grid point: the heat
step reads and writes one value; an RK4 stage reads ``u``, the previous ``k`` and the sum
(two components each) and writes the new ``k`` and the sum: five times as much. Medians of
interleaved rounds, one process; writes ``benchmarks/results/gs_rk4_floor.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numba  # noqa: E402
import numpy as np  # noqa: E402

import simkit.stencil as sk  # noqa: E402
from stencil import gray_scott_model, heat_model, machine, numba_kernels  # noqa: E402


@numba.njit(cache=False, inline="always")
def _stage_point(u, v, ku, kv, a, i_up, i, i_dn, jl, j, jr, cu, cv, feed, kill):
    """The stage's rhs at (i, j): the stage input u + a k formed at the five points."""
    uc = u[i, j] + a * ku[i, j]
    vc = v[i, j] + a * kv[i, j]
    lap_u = (u[i_up, j] + a * ku[i_up, j] + u[i_dn, j] + a * ku[i_dn, j] + u[i, jl] + a * ku[i, jl]
             + u[i, jr] + a * ku[i, jr] - 4.0 * uc)
    lap_v = (v[i_up, j] + a * kv[i_up, j] + v[i_dn, j] + a * kv[i_dn, j] + v[i, jl] + a * kv[i, jl]
             + v[i, jr] + a * kv[i, jr] - 4.0 * vc)
    r = uc * vc * vc
    return cu * lap_u - r + feed * (1.0 - uc), cv * lap_v + r - (feed + kill) * vc


@numba.njit(cache=False, inline="always")
def _stage_row(u, v, ku, kv, nu, nv, su, sv, a, w, i, cu, cv, feed, kill):
    n, m = u.shape
    i_up = i - 1 if i > 0 else n - 1
    i_dn = i + 1 if i < n - 1 else 0
    fu, fv = _stage_point(u, v, ku, kv, a, i_up, i, i_dn, m - 1, 0, 1, cu, cv, feed, kill)
    nu[i, 0], nv[i, 0] = fu, fv
    su[i, 0] += w * fu
    sv[i, 0] += w * fv
    for j in range(1, m - 1):
        fu, fv = _stage_point(u, v, ku, kv, a, i_up, i, i_dn, j - 1, j, j + 1, cu, cv, feed, kill)
        nu[i, j], nv[i, j] = fu, fv
        su[i, j] += w * fu
        sv[i, j] += w * fv
    fu, fv = _stage_point(u, v, ku, kv, a, i_up, i, i_dn, m - 2, m - 1, 0, cu, cv, feed, kill)
    nu[i, m - 1], nv[i, m - 1] = fu, fv
    su[i, m - 1] += w * fu
    sv[i, m - 1] += w * fv


def _make_rk4(parallel: bool):
    rows = numba.prange if parallel else range

    @numba.njit(cache=False, parallel=parallel)
    def rk4(u, v, steps, dt, cu, cv, feed, kill):
        ku, kv = np.zeros_like(u), np.zeros_like(u)
        nu, nv = np.empty_like(u), np.empty_like(u)
        su, sv = np.empty_like(u), np.empty_like(u)
        n = u.shape[0]
        for _ in range(steps):
            su[:] = 0.0
            sv[:] = 0.0
            for s in range(4):
                a = 0.0 if s == 0 else (0.5 * dt if s < 3 else dt)
                w = 1.0 if s == 0 or s == 3 else 2.0
                for i in rows(n):
                    _stage_row(u, v, ku, kv, nu, nv, su, sv, a, w, i, cu, cv, feed, kill)
                ku, nu = nu, ku
                kv, nv = nv, kv
            for i in rows(n):
                for j in range(u.shape[1]):
                    u[i, j] += dt / 6.0 * su[i, j]
                    v[i, j] += dt / 6.0 * sv[i, j]
        return u, v

    return rk4


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "results", "gs_rk4_floor.json"))
    a = ap.parse_args()
    before = machine()
    heat, gs = heat_model(a.n), gray_scott_model(a.n)
    h = heat.grid.spacing[0]
    c = 0.2
    hg = gs.grid.spacing[0]
    dt = 0.2 * hg * hg / 2e-5
    p = gs.params
    cu, cv = p["diffusivity_u"] / hg**2, p["diffusivity_v"] / hg**2
    steps = {"heat": 100, "gs": 10}
    kernels = numba_kernels()
    rk4_one, rk4_all = _make_rk4(False), _make_rk4(True)
    u0 = np.ascontiguousarray(gs.u0[0])
    v0 = np.ascontiguousarray(gs.u0[1])
    h0 = np.ascontiguousarray(heat.u0[0])
    scratch = np.empty_like(h0)
    euler = dict(stepper=sk.ForwardEuler(), check_stability=False)
    fns = {
        "numba heat Euler, one thread": (lambda: kernels["heat"](h0.copy(), scratch, c, steps["heat"]), steps["heat"]),
        "numba heat Euler, all threads": (lambda: kernels["heat_threads"](h0.copy(), scratch, c, steps["heat"]),
                                          steps["heat"]),
        "numba Gray-Scott RK4 stage, one thread": (
            lambda: rk4_one(u0.copy(), v0.copy(), steps["gs"], dt, cu, cv, p["feed"], p["kill"]), 4 * steps["gs"]),
        "numba Gray-Scott RK4 stage, all threads": (
            lambda: rk4_all(u0.copy(), v0.copy(), steps["gs"], dt, cu, cv, p["feed"], p["kill"]), 4 * steps["gs"]),
        "simkit heat Euler": (lambda: np.asarray(sk.integrate(heat, dt=c * h * h, steps=steps["heat"], **euler).us),
                              steps["heat"]),
        "simkit Gray-Scott RK4 stage": (
            lambda: np.asarray(sk.integrate(gs, dt=dt, steps=steps["gs"], stepper=sk.RK4(), check_stability=False).us),
            4 * steps["gs"]),
    }
    # the numba RK4 against simkit's, after one step: the same arithmetic up to rounding
    mine = rk4_one(u0.copy(), v0.copy(), 1, dt, cu, cv, p["feed"], p["kill"])
    ref = np.asarray(sk.integrate(gs, dt=dt, steps=1, stepper=sk.RK4(), check_stability=False).us)[-1]
    agreement = float(max(np.max(np.abs(mine[0] - ref[0])), np.max(np.abs(mine[1] - ref[1]))))
    for fn, _ in fns.values():
        fn()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(a.repeats):
        for k, (fn, per) in fns.items():
            start = time.perf_counter()
            fn()
            samples[k].append((time.perf_counter() - start) / per)
    ms = {k: 1e3 * statistics.median(v) for k, v in samples.items()}
    ratios = {
        "numba, one thread: RK4 stage / heat step": ms["numba Gray-Scott RK4 stage, one thread"]
        / ms["numba heat Euler, one thread"],
        "numba, all threads: RK4 stage / heat step": ms["numba Gray-Scott RK4 stage, all threads"]
        / ms["numba heat Euler, all threads"],
        "simkit: RK4 stage / heat step": ms["simkit Gray-Scott RK4 stage"] / ms["simkit heat Euler"],
    }
    for k, v in ms.items():
        print(f"{k:45s} {v:8.3f} ms")
    for k, v in ratios.items():
        print(f"{k:45s} {v:8.2f}")
    print(f"numba RK4 step vs simkit's, largest difference: {agreement:.2e}")
    record = {"command": "python benchmarks/experiments/gs_rk4_floor.py " + " ".join(sys.argv[1:]),
              "machine": before, "load_average_after": list(os.getloadavg()), "n": a.n, "repeats": a.repeats,
              "numba_threads": numba.config.NUMBA_NUM_THREADS, "ms_per_step_or_stage": ms, "ratios": ratios,
              "numba_vs_simkit_one_step_max_abs_difference": agreement}
    with open(a.out, "w") as fh:
        json.dump(record, fh, indent=1)


if __name__ == "__main__":
    main()
