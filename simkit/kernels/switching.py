"""Automatic stiffness detection and switching: an explicit pair and a Rosenbrock method in
one fused loop (`simkit.AutoSwitch`).

The loop starts with the explicit method (Tsit5). After every accepted explicit step it
estimates ``h * rho`` (``rho`` the dominant eigenvalue's magnitude of the Jacobian) from the
two stages evaluated at ``t + h`` — ``|h| * ||k_7 - k_6|| / ||y_1 - y_6||``, Hairer's test
in DOPRI5 (Hairer & Wanner, *Solving ODEs II*, section IV.2; Shampine 1977) — and compares
it with the explicit method's stability boundary on the negative real axis. The stage test
sees only the directions the step moves in: on badly scaled problems at tight tolerances
(Robertson, the Oregonator at rtol 1e-10: ``h * rho`` read 0.05 where the true value was 3.35)
the stiff mode never shows in ``y_1 - y_6``. So each accepted explicit step also takes one
power-iteration step on the Jacobian at ``(t + h, y_1)`` — one ``jax.jvp`` of the rhs,
``v <- J v / ||J v||`` with ``v`` carried from step to step, ``||J v||`` tending to ``rho`` as
the solution (and ``J``) drifts slowly — and the larger of the two estimates is judged.
At tight tolerances the explicit steps on a stiff problem are limited by accuracy before
stability (Robertson at rtol 1e-12: ``h * rho`` at 0.3 of the boundary; 100,000 explicit
steps reached t = 63), so a step also counts as stiff when ``h * rho / rtol**(1/5)`` — the
stiffness ratio ``rho * tau`` (``tau`` the solution's time scale) estimated from an
accuracy-limited step ``h ~ tau * rtol**(1/5)`` — exceeds `STIFF_RATIO`; at rtol above about
1.5e-7 that bound lies beyond the boundary and Hairer's test alone decides. Fifteen stiff
indications (reset by six non-stiff ones in a row) switch to the stiff method (Rodas5P);
there ``h * ||J||_inf`` (an upper bound of ``h * rho`` from the Jacobian it computes anyway)
below half the boundary for fifteen accepted steps in a row switches back, the step capped
to where the explicit method is stable. A switch that only the stiffness ratio asked for is
a trial: the stiff method must pay for its dearer steps (`TRIAL_STEPS`, `cost_ratio`), else
the loop switches back and that test rests for a while. LSODA switches on the same kind of
evidence, step sizes weighed by cost (Petzold 1983, SIAM J. Sci. Stat. Comput. 4:136-148).

Each method's steps run in a loop of their own (the kernel loop's *phases*: a switch ends
one inner loop and the outer loop enters the other), so an explicit step holds no branch to
the stiff method's code: on Lorenz (rtol 1e-8, 1000 saves) AutoSwitch takes 1.6x Tsit5's time
(the stiffness estimates and their jvp), where a ``lax.cond`` per step took 1.8x. Under
``jax.vmap`` both phase loops run while any member is in them, so ensembles of mixed
stiffness do better with a fixed stiff method. The counts of stiff
steps and switches are in ``Solution.stats`` (``num_stiff_steps``, ``num_switches``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .methods import ExplicitRK, Rosenbrock, _combine, _sum_squares

STIFF_HITS = 15  # stiff indications that switch to the stiff method (Hairer's DOPRI5: 15)
CALM_RESET = 6  # non-stiff indications in a row that forget earlier stiff ones (DOPRI5: 6)
CALM_STEPS = 15  # accepted stiff steps in a row, stable for the explicit method, to switch back
BACK_MARGIN = 0.5  # switch back only where the explicit method is stable with this margin
CHEAP_STIFF_STATES = 6  # up to this size a stiff step costs ~3 explicit ones, above ~10 (`cost_ratio`)
# the stiffness ratio rho * tau (tau: the solution's time scale) that counts as stiff,
# estimated as h * rho / rtol**(1 / (q + 1)) from an accuracy-limited step
# h ~ tau * rtol**(1 / (q + 1)). Tsit5's steps on the non-stiff library models give at most
# 50 (99th percentile over each solve, rtol 1e-4 ... 1e-12), on Robertson, HIRES and the
# Oregonator at rtol 1e-10 ... 1e-12 medians of 90-300 (benchmarks/experiments/stiffness_ratio.py)
STIFF_RATIO = 80.0
# a switch made by that test alone is a trial: after TRIAL_STEPS stiff steps the stiff
# method's step must be at least `cost_ratio` times the explicit step before the switch, or
# the loop switches back and the test rests for TRIAL_WAIT accepted explicit steps, doubled
# for every two switches made so far (HIRES at rtol 1e-12: Rodas5P's steps 3.6x Tsit5's at
# about 8x the cost per step)
TRIAL_STEPS = 15
TRIAL_WAIT = 100


def real_stability_boundary(a: np.ndarray, b: np.ndarray) -> float:
    """The largest ``x`` such that ``|R(-s)| <= 1`` for all ``0 <= s <= x`` (``R`` the
    stability function of the explicit Runge-Kutta method ``(a, b)``). Computed once per
    method (cached): each `AutoSwitchMethod` asks for it, and an `AutoSwitch` ensemble built
    one per call (54 ms a call, when the scan below was a Python loop of 20,001 solves)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return _stability_boundary(a.tobytes(), b.tobytes(), len(b))


@functools.cache
def _stability_boundary(a_bytes: bytes, b_bytes: bytes, n: int) -> float:
    a = np.frombuffer(a_bytes, float).reshape(n, n)
    b = np.frombuffer(b_bytes, float)
    one = np.ones(n)

    def growth(z: float) -> float:
        return abs(1.0 + z * b @ np.linalg.solve(np.eye(n) - z * a, one))

    # the first grid point past the boundary, all points in one batched solve; then bisection
    xs = np.linspace(1e-3, 10.0, 20001)
    rhs = np.broadcast_to(one, (len(xs), n))[..., None]
    stages = np.linalg.solve(np.eye(n)[None] + xs[:, None, None] * a[None], rhs)[..., 0]
    grows = np.abs(1.0 - xs * (stages @ b)) > 1.0 + 1e-12
    if not grows.any():
        raise ValueError("no stability boundary on the negative real axis below 10")
    bad = xs[int(np.argmax(grows))]
    lo, hi = bad - (xs[1] - xs[0]), bad
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if growth(-mid) <= 1.0 + 1e-12 else (lo, mid)
    return float(lo)


def _start_vector(y0):
    """The power iteration's fixed start: unit length, no zero entries, no symmetry."""
    n = y0.shape[0]
    v = 1.0 + 0.5 * jnp.sin(1.7 * jnp.arange(1, n + 1, dtype=jnp.real(y0).dtype))
    return (v / jnp.sqrt(_sum_squares(v))).astype(y0.dtype)


class AutoSwitchMethod:
    """The loop's method interface over an explicit pair and a Rosenbrock method."""

    implicit = True
    fsal = False

    def __init__(self, explicit: ExplicitRK, stiff: Rosenbrock):
        tab = explicit.tableau
        if not (float(tab.c[-1]) == float(tab.c[-2]) == 1.0):
            raise ValueError("stiffness detection needs an explicit pair whose last two stages are at t + h")
        self.e, self.s = explicit, stiff
        self.order = min(explicit.order, stiff.order)
        self.error_order = explicit.error_order
        self.rhs_per_step = explicit.rhs_per_step
        self.boundary = real_stability_boundary(np.asarray(tab.a, float), np.asarray(tab.b, float))
        self._n_stages = len(tab.c)
        self._n_dense_s = len(stiff.tableau.dense)

    # -- state ---------------------------------------------------------------------------------
    def init(self, rhs, t0, y0, params):
        return rhs(t0, y0, params)

    def dense_zeros(self, y0):
        """Zeros shaped as a step's dense data: both methods' and which of them stepped."""
        return dict(e=self.e.dense_zeros(y0), s=self.s.dense_zeros(y0), stiff=jnp.asarray(False))

    def controller_init(self, y0):
        zero = jnp.asarray(0, jnp.int32)
        return dict(stiff=jnp.asarray(False), e=self.e.controller_init(y0), s=self.s.controller_init(y0),
                    hits=zero, calm=zero, run=zero, switches=zero, stiff_steps=zero, v=_start_vector(y0),
                    h_switch=jnp.zeros((), jnp.real(y0).dtype), wait=zero)

    @staticmethod
    def cost_ratio(n: int) -> float:
        """About what a stiff step of ``n`` states costs over an explicit one: 3 up to six
        states, 10 above (measured, benchmarks/results/autoswitch_ab.json: Robertson, 3
        states, 2.3; HIRES, 8 states, 7.9 when its LU was LAPACK's. Again on HIRES with
        both steps one XLA:CPU kernel and the LU straight-line code, rtol 1e-12: Rodas5P
        1.84 µs per step, Tsit5 0.18, so 10 still; with 3 or 10 HIRES ran alike, 1.7 / 4.2 /
        11.8 ms at rtol 1e-8 / 1e-10 / 1e-12)."""
        return 3.0 if n <= CHEAP_STIFF_STATES else 10.0

    def extra_stats(self, ctrl) -> dict:
        """Counters for ``Solution.stats``: accepted stiff steps and switches either way."""
        return dict(num_stiff_steps=ctrl["stiff_steps"], num_switches=ctrl["switches"])

    # -- phases: the loop runs each method's steps in a loop of their own ----------------------
    num_phases = 2  # 0: explicit, 1: stiff

    @staticmethod
    def phase_of(ctrl):
        return ctrl["stiff"].astype(jnp.int32)

    # -- one attempt ---------------------------------------------------------------------------
    def attempt(self, rhs, t, y, f, hs, params, rtol, atol, ctrl, phase=None):
        n = y.shape[0]
        zeros_e = jnp.zeros((self._n_stages, n), y.dtype)
        zeros_s = jnp.zeros((self._n_dense_s, n), y.dtype)
        a = self.e.tableau.a

        def explicit(_):
            y_new, err, ks, f_new = self.e.step(rhs, t, y, f, hs, params, rtol, atol)
            stages = list(ks)
            y_penult = y + hs * _combine(a[-2, :-2], stages[:-2])  # the stage before the last, at t + h
            num, den = _sum_squares(stages[-1] - stages[-2]), _sum_squares(y_new - y_penult)
            hrho = jnp.where(den > 0, jnp.abs(hs) * jnp.sqrt(num / jnp.where(den > 0, den, 1.0)), 0.0)
            # one power-iteration step on J(t + h, y_1): sees stiff modes the step does not excite
            jv = jax.jvp(lambda z: rhs(t + hs, z, params), (y_new,), (ctrl["v"],))[1]
            norm = jnp.sqrt(_sum_squares(jv))
            usable = jnp.isfinite(norm) & (norm > 0)
            v = jnp.where(usable, jv / jnp.where(usable, norm, 1.0), ctrl["v"])
            hrho = jnp.maximum(hrho, jnp.where(usable, jnp.abs(hs) * norm, 0.0))
            by_ratio = STIFF_RATIO * self._accuracy_scale(rtol)
            limit = jnp.where(ctrl["wait"] > 0, 0.98 * self.boundary, jnp.minimum(0.98 * self.boundary, by_ratio))
            work = dict(num_rhs=jnp.asarray(self.e.rhs_per_step + 1, jnp.int32), hrho=hrho, v=v, limit=limit)
            return y_new, err, dict(e=ks, s=zeros_s, stiff=jnp.asarray(False)), f_new, work

        def stiff(_):
            y_new, err, dense, jac = self.s.step_with_jacobian(rhs, t, y, f, hs, params, rtol, atol)
            f_new = rhs(t + hs, y_new, params)
            hrho = jnp.abs(hs) * jnp.max(jnp.sum(jnp.abs(jac), axis=1))
            limit = BACK_MARGIN * self.boundary
            work = dict(num_rhs=jnp.asarray(self.s.rhs_per_step + 1, jnp.int32), hrho=hrho, v=ctrl["v"], limit=limit)
            return y_new, err, dict(e=zeros_e, s=dense, stiff=jnp.asarray(True)), f_new, work

        if phase is not None:  # known statically: only that method's step
            return (stiff if phase else explicit)(None)
        return lax.cond(ctrl["stiff"], stiff, explicit, None)

    def _accuracy_scale(self, rtol):
        """``rtol**(1 / (q + 1))`` (q: the explicit pair's error order), the factor by which an
        accuracy-limited step falls short of the solution's time scale (1 for rtol = 0: then
        only Hairer's test applies). A constant of the solve, so no work per step; where atol
        dominates, steps are longer than it assumes, and a switch it makes is a trial."""
        return jnp.where(rtol > 0, jnp.exp(jnp.log(jnp.where(rtol > 0, rtol, 1.0)) / (self.e.error_order + 1)), 1.0)

    def propose(self, err_norm, h, ctrl, accepted, last_rejected, work, phase=None):
        stiff = ctrl["stiff"] if phase is None else jnp.asarray(bool(phase))
        h_e, c_e = self.e.propose(err_norm, h, ctrl["e"], accepted, last_rejected)
        h_s, c_s = self.s.propose(err_norm, h, ctrl["s"], accepted, last_rejected)
        h_new = jnp.where(stiff, h_s, h_e)
        hrho, one = work["hrho"], jnp.asarray(1, jnp.int32)
        # explicit: Hairer's test after accepted steps
        judged = accepted & ~stiff
        # Hairer's test (the step limited by stability), or at tight tolerances a step that,
        # limited by accuracy, is already long against the stiff mode (rho * tau large)
        stiffish = hrho > work["limit"]
        watched = accepted & stiff
        # ``run``: non-stiff indications in a row (explicit), accepted steps since the switch
        # (stiff); ``hits``: stiff indications (explicit), 1 if the switch was a trial (stiff)
        run = jnp.where(judged, jnp.where(stiffish, 0, ctrl["run"] + one), ctrl["run"] + watched.astype(jnp.int32))
        hits = jnp.where(judged & stiffish, ctrl["hits"] + one, ctrl["hits"])
        hits = jnp.where(judged & (run >= CALM_RESET), 0, hits)
        to_stiff = judged & (hits >= STIFF_HITS)
        # stiff: would the explicit method be stable at this step size, with a margin?
        calm = jnp.where(watched, jnp.where(hrho < work["limit"], ctrl["calm"] + one, 0), ctrl["calm"])
        # a trial (a switch by the stiffness ratio alone) that does not pay: back, and a rest
        failed = (watched & (ctrl["hits"] == 1) & (run == TRIAL_STEPS)
                  & (h < self.cost_ratio(ctrl["v"].shape[0]) * ctrl["h_switch"]))
        to_explicit = watched & ((calm >= CALM_STEPS) | failed)
        switch = to_stiff | to_explicit
        # leaving the stiff method: a step where the explicit one is stable (rho = hrho / h)
        h_stable = BACK_MARGIN * self.boundary * h / jnp.where(hrho > 0, hrho, 1.0)
        h_new = jnp.where(to_explicit & (hrho > 0), jnp.minimum(h_new, h_stable), h_new)
        e_init, s_init = self.e.controller_init(h), self.s.controller_init(h)
        new = dict(
            stiff=jnp.where(switch, ~stiff, stiff),
            # each method's controller moves only while it runs, and starts afresh on a switch
            e=jnp.where(stiff, jnp.where(to_explicit, e_init, ctrl["e"]), c_e),
            s=jnp.where(stiff, c_s, jnp.where(to_stiff, s_init, ctrl["s"])),
            hits=jnp.where(to_stiff, (hrho <= 0.98 * self.boundary).astype(jnp.int32), jnp.where(switch, 0, hits)),
            calm=jnp.where(switch, 0, calm), run=jnp.where(switch, 0, run),
            switches=ctrl["switches"] + switch.astype(jnp.int32),
            h_switch=jnp.where(to_stiff, h, ctrl["h_switch"]),
            # the rest after a failed trial doubles with the switches made so far
            wait=jnp.where(failed, TRIAL_WAIT * 2 ** jnp.minimum(ctrl["switches"] // 2, 20),
                           jnp.maximum(ctrl["wait"] - judged.astype(jnp.int32), 0)),
            stiff_steps=ctrl["stiff_steps"] + watched.astype(jnp.int32),
            v=jnp.where(judged, work["v"], ctrl["v"]),  # the power iteration moves on accepted steps
        )
        return h_new, new

    # -- dense output --------------------------------------------------------------------------
    def keep(self, y, f, y_new, dense, f_new):
        return dict(y=y, f=f, y_new=y_new, s=dense["s"], stiff=dense["stiff"])

    def segment(self, t, hs, y, y_new, dense, f_new):
        # what `expand` recomputes (its stiff branch's f_new is not read by the interpolant)
        return dict(t=t, hs=hs, y=y, y_new=y_new, f_new=f_new, dense=dense)

    def expand(self, rhs, params, t, hs, kept, rtol, atol):
        def explicit(_):
            full = self.e.expand(rhs, params, t, hs, dict(y=kept["y"], f=kept["f"]), rtol, atol)
            return dict(t=t, hs=hs, y=kept["y"], y_new=full["y_new"], f_new=full["f_new"],
                        dense=dict(e=full["dense"], s=kept["s"], stiff=kept["stiff"]))

        def stiff(_):
            zeros_e = jnp.zeros((self._n_stages,) + kept["y"].shape, kept["y"].dtype)
            return dict(t=t, hs=hs, y=kept["y"], y_new=kept["y_new"], f_new=kept["f"],
                        dense=dict(e=zeros_e, s=kept["s"], stiff=kept["stiff"]))

        return lax.cond(kept["stiff"], stiff, explicit, None)

    def interpolate(self, rhs, params, seg, theta):
        dense = seg["dense"]

        def explicit(_):
            return self.e.interpolate(rhs, params, dict(seg, dense=dense["e"]), theta)

        def stiff(_):
            return self.s.interpolate(rhs, params, dict(seg, dense=dense["s"]), theta)

        return lax.cond(dense["stiff"], stiff, explicit, None)
