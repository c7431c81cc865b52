"""Forms of the explicit step and its step-size controller, compiled side by side in one process.

    python benchmarks/experiments/explicit_chain_ab.py [--mode single|ensemble] [--variants V0,V1,V3]
        [--rounds 11] [--out FILE]

``--mode single``: Lorenz (t 0..100, rtol = atol = 1e-8, 1,000 saves) with Tsit5 and DOP853
inside ``jax.jit``, one compiled program per variant (`jax.clear_caches` between their
traces, the method's code patched at trace time), the programs then called in interleaved
rounds (20 calls each, alternating the order every round): ns per step, the median over the
rounds. Fresh processes swing by 10 % from one to the next on this machine; side by side,
2-3 %. ``--mode ensemble``: the 10,000-member Lorenz ensemble of `ensemble.py` (rho ~ U[10,
50], t 0..10, 1e-6, Tsit5), recompiled per variant in each round, 3 calls a round: solves/s.

- V0: stage states ``y + h * sum(a_ij k_j)``, the
  controller's new step ``h / fac``, `fast_log2` by its atanh series (one division);
- V1: stage states ``y + sum((h a_ij) k_j)`` (`simkit.kernels.methods._onto`; the code kept);
- V2: V1, the new step as ``h * (0.9 / fac)`` (the factor's reciprocal from `fast_exp2` of the
  negated exponent), `fast_log2` as a degree-6 polynomial in the mantissa (no division);
- V3: V1 and the reciprocal factors, `fast_log2` as in V0 (not kept: single solves 4 % faster a
  step, the ensemble 3.5 % slower);
- V4: V3, and the controller's log taken of the error's sum of squares
  (``log2(err) = (log2(sum) - log2(n)) / 2``: no square root and no division by n on the way
  to the next step; the error test still reads the norm);
- V5: V4 with cheaper powers: `fast_log2` a quadratic in the mantissa (to 8e-3),
  `fast_exp2` a cubic (to 1.5e-4);
- V6: V1 with V5's cheaper powers only: simkit's code (V1 has `fast_log2` by its atanh
  series and `fast_exp2` by a degree-6 series).

``--mode steps``: the 13 non-stiff library models of `benchmarks/explicit_choice.py` over
their spans, 100 saves, rtol = atol in 1e-4, 1e-6, ... 1e-12, Tsit5 and DOP853: each
variant's steps and largest error against SciPy's DOP853 at 1e-13 (no timing).

DOP853's step is the kept one in every variant (only the controller differs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import simkit  # noqa: E402
from simkit import models  # noqa: E402
from simkit.kernels import methods as M  # noqa: E402

new_step, old_propose = M.ExplicitRK.step, M._HairerPI.propose

def old_step(self, rhs, t, y, f, hs, params, rtol, atol):
    tab = self.tableau
    ks = [f]
    for i in range(1, len(tab.c)):
        yi = y + hs * M._combine(tab.a[i, :i], ks)
        ks.append(rhs(t + float(tab.c[i]) * hs, yi, params))
    y_new = y + hs * M._combine(tab.b, ks)
    err = hs * M._combine(tab.e, ks)
    err_norm = M._rms(err / M._scale(y, y_new, rtol, atol))
    return y_new, err_norm, jnp.stack(ks), ks[-1]

def old_log2(x):
    it, nm, bias = M._int_layout(x.dtype)
    bits = jax.lax.bitcast_convert_type(x, it)
    m = jax.lax.bitcast_convert_type((bits & ((1 << nm) - 1)) | (bias << nm), x.dtype)
    u = (m - 1.0) / (m + 1.0); u2 = u * u
    series = u * (2.8853900817779268 + u2 * (0.9617966939259756 + u2 * (0.5770780163555854 + u2 * 0.4121985831111324)))
    return ((bits >> nm) - bias).astype(x.dtype) + series

def new_propose(self, err_norm, h, state, accepted, last_rejected, work=None):  # V2, V3: reciprocal factors
    expo = 1.0 / (self.error_order + 1) - 0.75 * self.beta
    log_err = M.fast_log2(jnp.maximum(err_norm, 1e-10))
    inv11 = 0.9 * M.fast_exp2(-expo * log_err)
    inv = 0.9 * M.fast_exp2(self.beta * state - expo * log_err) if self.beta else inv11
    h_acc = h * jnp.clip(inv, self.fac_min, self.fac_max)
    h_acc = jnp.where(last_rejected, jnp.minimum(h_acc, h), h_acc)
    h_rej = h * jnp.maximum(self.fac_min, inv11)
    h_new = jnp.where(accepted, h_acc, h_rej)
    new_state = jnp.where(accepted, jnp.maximum(log_err, np.log2(1e-4)), state)
    return h_new, new_state

_FIT = (5.065333100184866e-06, 1.4423954826704837, -0.716986874732018, 0.4538562412307819,
        -0.27235315794751347, 0.11790518317342877, -0.024825606613918427)


def poly_log2(x):
    it, nm, bias = M._int_layout(x.dtype)
    bits = jax.lax.bitcast_convert_type(x, it)
    t = jax.lax.bitcast_convert_type((bits & ((1 << nm) - 1)) | (bias << nm), x.dtype) - 1.0
    fit = _FIT[-1]
    for c in reversed(_FIT[:-1]):
        fit = c + t * fit
    return ((bits >> nm) - bias).astype(x.dtype) + fit


kept_attempt, kept_log2, kept_exp2 = M._HairerPI.attempt, M.fast_log2, M.fast_exp2  # simkit's powers (V6)


def sum_squares_attempt(self, rhs, t, y, f, hs, params, rtol, atol, ctrl):  # V4, V5: the sum to the controller
    if not isinstance(self, M.ExplicitRK):
        return kept_attempt(self, rhs, t, y, f, hs, params, rtol, atol, ctrl)
    tab = self.tableau
    ks = [f]
    for i in range(1, len(tab.c)):
        ks.append(rhs(t + float(tab.c[i]) * hs, M._onto(y, tab.a[i, :i], ks, hs), params))
    y_new = M._onto(y, tab.b, ks, hs)
    total = M._sum_squares(hs * M._combine(tab.e, ks) / M._scale(y, y_new, rtol, atol))
    work = dict(num_rhs=jnp.asarray(self.rhs_per_step, jnp.int32), sum_squares=total, n=y.shape[0])
    return y_new, jnp.sqrt(total / y.shape[0]), jnp.stack(ks), ks[-1], work


def sum_squares_propose(self, err_norm, h, state, accepted, last_rejected, work=None):
    if work is None:  # DOP853: its own norm
        return new_propose(self, err_norm, h, state, accepted, last_rejected)
    expo = 1.0 / (self.error_order + 1) - 0.75 * self.beta
    n = work["n"]
    log_err = 0.5 * (M.fast_log2(jnp.maximum(work["sum_squares"], n * 1e-20)) - np.log2(n))
    inv11 = 0.9 * M.fast_exp2(-expo * log_err)
    inv = 0.9 * M.fast_exp2(self.beta * state - expo * log_err) if self.beta else inv11
    h_acc = h * jnp.clip(inv, self.fac_min, self.fac_max)
    h_acc = jnp.where(last_rejected, jnp.minimum(h_acc, h), h_acc)
    h_new = jnp.where(accepted, h_acc, h * jnp.maximum(self.fac_min, inv11))
    return h_new, jnp.where(accepted, jnp.maximum(log_err, np.log2(1e-4)), state)


def old_exp2(z):  # V0-V4's fast_exp2: the degree-6 Taylor series, to 1e-5
    it, nm, _ = M._int_layout(z.dtype)
    z = jnp.clip(z, -120.0, 120.0)
    whole = jnp.floor(z)
    f = z - whole
    p = 1.0 + f * (0.6931471805599453 + f * (0.2402265069591007 + f * (0.05550410866482158 + f * (
        0.009618129107628477 + f * (0.0013333558146428443 + f * 0.00015403530393381606)))))
    return jax.lax.bitcast_convert_type(jax.lax.bitcast_convert_type(p, it) + (whole.astype(it) << nm), z.dtype)


# each variant: (the explicit step, the controller, fast_log2, the attempt, fast_exp2)
VARIANTS = {"V0": (old_step, old_propose, old_log2, kept_attempt, old_exp2),
            "V1": (new_step, old_propose, old_log2, kept_attempt, old_exp2),
            "V2": (new_step, new_propose, poly_log2, kept_attempt, old_exp2),
            "V3": (new_step, new_propose, old_log2, kept_attempt, old_exp2),
            "V4": (new_step, sum_squares_propose, old_log2, sum_squares_attempt, old_exp2),
            "V5": (new_step, sum_squares_propose, kept_log2, sum_squares_attempt, kept_exp2),
            "V6": (new_step, old_propose, kept_log2, kept_attempt, kept_exp2)}


def use(v):
    M.ExplicitRK.step, M._HairerPI.propose, M.fast_log2, M._HairerPI.attempt, M.fast_exp2 = VARIANTS[v]
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--mode", choices=("single", "ensemble", "steps"), default="single")
ap.add_argument("--variants", default="V0,V1,V2,V3,V4,V5,V6")
ap.add_argument("--rounds", type=int, default=11)
ap.add_argument("--out", default=None)
args = ap.parse_args()
names = args.variants.split(",")
if args.mode == "single":
    m = models.get("lorenz")
    compiled = {}
    for v in names:
        use(v)
        jax.clear_caches()
        for sv in ("Tsit5", "DOP853"):
            s = getattr(simkit, sv)()
            f = jax.jit(lambda p, s=s: (lambda sol: (sol.ys, sol.stats["num_steps"]))(simkit.solve(m, (0.0, 100.0), params=p, saveat=1000, solver=s, rtol=1e-8, atol=1e-8)))
            p0 = dict(m.params)
            c = f.lower(p0).compile(); y, n = c(p0)
            compiled[(v, sv)] = (c, p0, int(n))
    res = {k: [] for k in compiled}
    for r in range(args.rounds):
        for k in (list(compiled) if r % 2 == 0 else list(reversed(list(compiled)))):
            c, p0, n = compiled[k]; c(p0)[0].block_until_ready()
            t = time.perf_counter()
            for _ in range(20): y = c(p0)[0]
            y.block_until_ready(); res[k].append((time.perf_counter() - t) / 20)
    rows = {}
    for sv in ("Tsit5", "DOP853"):
        rows[sv] = {v: dict(ns_per_step=1e9 * statistics.median(res[(v, sv)]) / compiled[(v, sv)][2],
                            steps=compiled[(v, sv)][2]) for v in names}
        print(sv, "  ".join(f"{v}: {rows[sv][v]['ns_per_step']:.1f} ns/step ({rows[sv][v]['steps']})" for v in names))
elif args.mode == "steps":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from explicit_choice import MODELS, N_SAVE, reference  # benchmarks/explicit_choice.py

    rows = {}
    for name in MODELS:
        m = models.get(name)
        ref = reference(m, np.linspace(*m.t_span, N_SAVE))
        for v in names:
            use(v)
            jax.clear_caches()
            for sv in ("Tsit5", "DOP853"):
                for rtol in (1e-4, 1e-6, 1e-8, 1e-10, 1e-12):
                    sol = simkit.solve(m, m.t_span, saveat=N_SAVE, rtol=rtol, atol=rtol, solver=getattr(simkit, sv)(),
                                       throw=False)
                    err = float(np.max(np.abs(np.asarray(sol.ys) - ref) / (np.abs(ref) + 1.0)))
                    rows.setdefault(f"{name} {sv} {rtol:g}", {})[v] = dict(
                        steps=int(sol.stats["num_steps"]), error=err, status=int(sol.status))
    for sv in ("Tsit5", "DOP853"):
        mine = {k: r for k, r in rows.items() if f" {sv} " in k}
        steps = {v: sum(r[v]["steps"] for r in mine.values()) for v in names}
        err_ratio = [r[v]["error"] / r[names[0]]["error"] for r in mine.values() for v in names[1:] if r[names[0]]["error"] > 0]
        step_ratio = [r[v]["steps"] / r[names[0]]["steps"] for r in mine.values() for v in names[1:]]
        print(sv, "steps in all", steps, f"per case steps / {names[0]}: {min(step_ratio):.3f}-{max(step_ratio):.3f}, "
              f"error / {names[0]}: {min(err_ratio):.2f}-{max(err_ratio):.2f} "
              f"(geomean {np.exp(np.mean(np.log(err_ratio))):.3f}); failures",
              sum(r[v]["status"] != 0 for r in mine.values() for v in names))
else:
    rng = np.random.default_rng(0)
    rhos = rng.uniform(10.0, 50.0, 10_000)
    lorenz = models.get("lorenz")


    def ensemble_call():
        return simkit.ensemble(lorenz, (0.0, 10.0), params={"rho": rhos}, saveat=2, rtol=1e-6, atol=1e-6)


    rates = {v: [] for v in names}
    for r in range(args.rounds):
        for v in (names if r % 2 == 0 else names[::-1]):
            use(v)
            jax.clear_caches()
            np.asarray(ensemble_call().ys)
            for _ in range(3):
                start = time.perf_counter()
                np.asarray(ensemble_call().ys)
                rates[v].append(10_000 / (time.perf_counter() - start))
    rows = {"lorenz ensemble, 10,000 members [solves/s]": {v: statistics.median(rates[v]) for v in names}}
    print("lorenz ensemble solves/s", "  ".join(f"{v} {statistics.median(rates[v]):.0f}" for v in names))
if args.out:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from stiff import machine, write_result  # benchmarks/stiff.py

    write_result(args.out, dict(command=" ".join(["python"] + sys.argv), machine=machine(), rows=rows))
    print(f"wrote {args.out}")
