"""One step of each fused method: explicit RK pairs, DOP853, Rosenbrock (Rodas).

A method provides ``init``, ``step`` (proposed state, scaled error norm, the data its
dense output needs, and ``f(t + h, y_new)`` when the step produces it) and
``interpolate``; the step-size controller belongs to the method (Hairer's controllers
from DOPRI5, DOP853 and RODAS). Tableau loops are Python loops: unrolled at trace time,
so a step is one straight-line block of XLA code, except in float64 on a TPU, where the
stages run in a ``fori_loop`` (`ROLLED_STAGES`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math

import jax
import jax.numpy as jnp
from jax import lax

from .linalg import factor, solve
from .loop import jvp_along_moving, perturbs
from .platforms import float32_on_tpu
from .tableaus import DOP853Tableau, ExplicitTableau, RosenbrockTableau


def _combine(coeffs, ks):
    """sum_i coeffs[i] * ks[i], skipping zero coefficients (trace-time constants)."""
    out = None
    for c, k in zip(coeffs, ks):
        c = float(c)
        if c == 0.0:
            continue
        term = c * k
        out = term if out is None else out + term
    return out


def _onto(base, coeffs, ks, hs):
    """``base + hs * sum_i coeffs[i] * ks[i]`` as ``base + sum_i (hs coeffs[i]) ks[i]``, in
    the stages' order, skipping zero coefficients: the products ``hs * coeffs[i]`` do not wait
    for the stages, so after the newest stage one multiply-add remains (not the sum's last
    term, a product with ``hs`` and an add). The same accuracy; other rounding. Measured
    (`benchmarks/experiments/explicit_chain_ab.py`): a Lorenz solve 6-7 % faster a step
    (Tsit5), a 10,000-member Lorenz ensemble 0-5 % slower (more products per lane)."""
    out = base
    for c, k in zip(coeffs, ks):
        c = float(c)
        if c == 0.0:
            continue
        out = out + (hs * c) * k
    return out


# In float64 on a TPU the stages go through a loop (`_stages`): XLA's TPU backend emulates
# float64 and compiles slowly, 12-21 ms per float64 operation of these programs
# (benchmarks/results/accelerator_program_size_f64.json; not every smaller program compiled
# sooner: accelerator_compile_f64_smaller_programs.json); written out, the stages and their
# sums are about half of an explicit kernel's program (Tsit5 on Lorenz: 563 of 1,141
# operations), twice over (the step, and its redo for dense output). Elsewhere they stay
# written out: a loop over them is slower on a CPU and in float32 on a TPU. `ROLLED_STAGES`
# ("always") takes the loop on every platform, for tests.
ROLLED_STAGES = "tpu-float64"

# A differentiated solve (`simkit.kernels.autodiff`: the loop carries the forward sensitivities)
# takes a Rosenbrock method's stages in a loop on every platform: each stage then holds a
# second-order jvp and a solve per direction besides its own work, and written out the program
# took long to compile. Measured on a CPU (Rahman_MBS2016's least-squares fit, 10 starts, one
# core): tracing 3.6 -> 2.1 s, XLA 6.2 -> 4.0 s, the fit itself 2.9 -> 3.2 s.
_DIFFERENTIATED = contextvars.ContextVar("simkit_differentiated_solve", default=False)


@contextlib.contextmanager
def differentiated_solve():
    """Trace, within it, the loop of a differentiated solve (`_DIFFERENTIATED`)."""
    token = _DIFFERENTIATED.set(True)
    try:
        yield
    finally:
        _DIFFERENTIATED.reset(token)


def _rolled_stages(rhs, t, y, ks, hs, params, c, a, last):
    """Stages ``len(ks) .. last - 1`` of an explicit tableau (``c``, lower-triangular ``a``)
    in a ``fori_loop``: stage ``i`` is ``rhs(t + c_i h, y + sum_j (h a_ij) k_j)``; all the
    stages, ``ks`` first, stacked."""
    first = len(ks)
    shape = (last,) + y.shape
    stages = jnp.zeros(shape, y.dtype).at[:first].set(jnp.stack(ks))
    a = jnp.asarray(a[:last, :last], y.dtype)
    c = jnp.asarray(c[:last], y.dtype)

    def stage(i, stages):
        weights = (hs * a[i]).reshape((last,) + (1,) * y.ndim)
        return stages.at[i].set(rhs(t + c[i] * hs, y + jnp.sum(weights * stages, axis=0), params))

    return jax.lax.fori_loop(first, last, stage, stages)


def _written_out_stages(rhs, t, y, ks, hs, params, c, a, last):
    ks = list(ks)
    for i in range(len(ks), last):
        ks.append(rhs(t + float(c[i]) * hs, _onto(y, a[i, :i], ks, hs), params))
    return ks


def _stages_by_platform(written, rolled, rhs, params, *arrays, roll_differentiated: bool = False):
    """``written(rhs, params, *arrays)`` or ``rolled(...)`` (each the stages as one stacked
    array): the rolled form in float64 on a TPU (`ROLLED_STAGES`), chosen when the program is
    lowered, and with ``roll_differentiated`` in a differentiated solve (`_DIFFERENTIATED`),
    else the written-out one."""
    if ROLLED_STAGES == "always" or (roll_differentiated and _DIFFERENTIATED.get()):
        return rolled(rhs, params, *arrays)
    if jnp.result_type(arrays[1]) != jnp.float64:  # (t, y, ...): the state's precision
        return written(rhs, params, *arrays)
    flat, tree = jax.tree_util.tree_flatten((params, arrays))

    def on(form):
        def run(*leaves):
            params, arrays = jax.tree_util.tree_unflatten(tree, leaves)
            return form(rhs, params, *arrays)
        return run

    return jax.lax.platform_dependent(*flat, tpu=on(rolled), default=on(written))


def _stages(rhs, t, y, ks, hs, params, c, a, last):
    """``ks`` extended to stages ``0 .. last - 1`` of an explicit tableau: written out, or
    in float64 on a TPU (`ROLLED_STAGES`) in a loop."""
    def written(rhs, params, t, y, ks, hs):
        return jnp.stack(_written_out_stages(rhs, t, y, ks, hs, params, c, a, last))

    def rolled(rhs, params, t, y, ks, hs):
        return _rolled_stages(rhs, t, y, ks, hs, params, c, a, last)

    stacked = _stages_by_platform(written, rolled, rhs, params, t, y, list(ks), hs)
    return [stacked[i] for i in range(last)]


def _scale(y, y_new, rtol, atol):
    # at least the smallest normal number: XLA:CPU flushes subnormals to zero, so with atol = 0
    # a state below ~2e-308 / rtol had a zero scale, a NaN error and a false "non-finite" stop
    scale = atol + rtol * jnp.maximum(jnp.abs(y), jnp.abs(y_new))
    return jnp.maximum(scale, jnp.finfo(scale.dtype).tiny)


CHAIN_MAX = 64  # up to this many entries `_sum_squares` adds in a chain, above in a pairwise tree


def _sum_squares(x):
    """sum(x**2) with a fixed order of adds, so that a member's rounding does not depend on
    the batch it runs in (a vectorised reduction associates differently for different batch
    widths; measured: chunked ensembles then differ from unchunked ones at 1e-13): a chain
    up to `CHAIN_MAX` entries, above a pairwise tree of elementwise adds (``log2 n``
    operations in the compiled program instead of ``n``: a chain of some 5,500 adds
    overflowed the stack of XLA:CPU's compiler and killed Python with a segfault, found by
    probing with an explicit kernel on 10,000 states). A complex ``x`` contributes ``|x|**2``."""
    if jnp.iscomplexobj(x):
        x = jnp.abs(x)
    n = x.shape[0]
    if n <= CHAIN_MAX:
        total = x[0] * x[0]
        for i in range(1, n):
            total = total + x[i] * x[i]
        return total
    sq = x * x
    m = 1 << (n - 1).bit_length()
    sq = jnp.concatenate([sq, jnp.zeros((m - n,), sq.dtype)])
    while m > 1:
        m //= 2
        sq = sq[:m] + sq[m:]
    return sq[0]


def _rms(x):
    return jnp.sqrt(_sum_squares(x) / x.shape[0])


# The explicit controller's powers from the floats' bits (`fast_log2`, `fast_exp2`): a
# controller needs its factor to a few digits, and XLA:CPU's exp and log, accurate to the
# last bit, were a tenth of a vmapped Lorenz step. Measured (alternating fresh processes,
# 2 runs each): 10,000 Lorenz members 96-101k -> 107-109k solves/s with the same steps to 4
# in 3.6 million; one Lorenz solve inside jax.jit (1,000 saves, 1e-8) Tsit5 1.16 -> 1.08 ms,
# DOP853 0.62 -> 0.57. Shorter polynomials (log2 to 8e-3, exp2 to 1.5e-4: the
# factor to about 0.1 %, against the safety factor's 10 %): Lorenz inside jax.jit 107 -> 95
# ns a Tsit5 step, 196 -> 185 DOP853, the ensemble 1.02x; over the 13 non-stiff library
# models at rtol 1e-4 ... 1e-12 the same steps in all (68,211 -> 68,261 Tsit5, 16,213 ->
# 16,201 DOP853) and errors 1.01x and 0.99x (geometric means; each case moves with its step
# sequence, as a 0.3 % change of the factor moves it). In the stiff controllers (Rosenbrock,
# Radau IIA, BDF) they gained nothing (Robertson, a van der Pol ensemble) and made HIRES with
# Rodas5P 9% slower: those keep exp and log. (OrdinaryDiffEq.jl's controllers use such a
# ``fastpow``.)


def _int_layout(dtype):
    """(integer type, mantissa bits, exponent bias) of float64 or float32."""
    return (jnp.int64, 52, 1023) if dtype == jnp.float64 else (jnp.int32, 23, 127)


# On a TPU in float64 the bit tricks go through float32's bits (`float32_on_tpu`: XLA's TPU
# backend has no 64-bit integer shifts). The two agree to float32's rounding (1e-7 relative),
# far inside the approximations' own 1e-4 ... 8e-3; both inputs' ranges (the error norm floored
# at 1e-10, the exponent clipped to +-120) lie inside float32's.


def _log2_bits(x):
    it, nm, bias = _int_layout(x.dtype)
    bits = jax.lax.bitcast_convert_type(x, it)
    t = jax.lax.bitcast_convert_type((bits & ((1 << nm) - 1)) | (bias << nm), x.dtype) - 1.0  # [0, 1)
    return ((bits >> nm) - bias).astype(x.dtype) + t * (1.3466 - 0.3466 * t)


def _exp2_bits(z):
    it, nm, _ = _int_layout(z.dtype)
    whole = jnp.floor(z)
    f = z - whole
    p = 1.0 + f * (0.6958 + f * (0.2262 + f * 0.0780))
    return jax.lax.bitcast_convert_type(jax.lax.bitcast_convert_type(p, it) + (whole.astype(it) << nm), z.dtype)


def fast_log2(x):
    """``log2(x)`` to 8e-3 for positive normal ``x``: the exponent, and the mantissa's log
    by a quadratic exact at 1 and 2 (continuous and increasing across octaves); ``+inf``
    gives 1024 in float64 (128 in float32, and on a TPU). NaN is not handled: the loop hands
    the controller ``+inf`` for a non-finite error. (An atanh series to 2e-5, with a
    division, was a longer chain before every step: `benchmarks/experiments/explicit_chain_ab.py`,
    V1 against V6.)"""
    if x.dtype not in (jnp.float64, jnp.float32):
        return jnp.log2(x)
    return float32_on_tpu(_log2_bits)(x)


def fast_exp2(z):
    """``2**z`` to 1.5e-4 (relative), for ``z`` clipped to [-120, 120] (float32's range
    too): the integer part into the exponent, ``2**f`` on [0, 1) by a cubic exact at 0 and 1."""
    if z.dtype not in (jnp.float64, jnp.float32):
        return jnp.exp2(z)
    return float32_on_tpu(_exp2_bits)(jnp.clip(z, -120.0, 120.0))


class _Stateless:
    """The loop's interface for a method whose steps share nothing but the controller's
    state: ``attempt`` is ``step`` (``work``, what the attempt tells ``propose``, is None).
    A method that keeps more across steps (Radau IIA: its Jacobian and LU factors) keeps
    it in the same controller state and overrides ``attempt``."""

    def attempt(self, rhs, t, y, f, hs, params, rtol, atol, ctrl):
        return (*self.step(rhs, t, y, f, hs, params, rtol, atol), None)


class _HairerPI(_Stateless):
    """Hairer's step-size controller (DOPRI5/DOP853): ``fac = err**expo / facold**beta``,
    safety 0.9, ``fac_min <= h_new/h <= fac_max``; no growth right after a rejection.

    The powers are taken as ``exp2(expo * log2(err) - beta * log2(facold))`` with
    ``log2(facold)`` carried: one log and two exps per step instead of two ``pow`` calls,
    which XLA:CPU does not vectorise (measured on 1024 vmapped lanes: 9 ns per ``pow`` per
    lane, 3 ns per exp + log; the controller was a fifth of a Lorenz ensemble's step), and
    those from the floats' bits (`fast_log2`, `fast_exp2` above)."""

    beta = 0.04
    fac_min, fac_max = 0.2, 10.0

    def controller_init(self, y0):
        return jnp.log2(jnp.asarray(1e-4, jnp.real(y0).dtype))  # log2(facold)

    def propose(self, err_norm, h, state, accepted, last_rejected, work=None):
        expo = 1.0 / (self.error_order + 1) - 0.75 * self.beta
        log_err = fast_log2(jnp.maximum(err_norm, 1e-10))
        fac11 = fast_exp2(expo * log_err)
        fac = fast_exp2(expo * log_err - self.beta * state) if self.beta else fac11
        fac = jnp.clip(fac / 0.9, 1.0 / self.fac_max, 1.0 / self.fac_min)
        # (h times the factor's reciprocal, with no division before the next step: single
        # solves 4 % faster a step, a 10,000-member Lorenz ensemble 3.5 % slower; not kept)
        h_acc = h / fac
        h_acc = jnp.where(last_rejected, jnp.minimum(h_acc, h), h_acc)
        h_rej = h / jnp.minimum(1.0 / self.fac_min, fac11 / 0.9)
        h_new = jnp.where(accepted, h_acc, h_rej)
        # facold = max(err, 1e-4), as a log (1e-4 > the 1e-10 floor above)
        new_state = jnp.where(accepted, jnp.maximum(log_err, math.log2(1e-4)), state)  # (a Python float: weak)
        return h_new, new_state


class _RecomputeDense:
    """Explicit methods carry only the step's start ``(y, f)`` through the loop and redo
    the step when a save time needs its dense output: storing all stages every step costs
    more (measured: +60% per step for DOP853) than redoing the few steps that cover a
    save time."""

    def keep(self, y, f, y_new, dense, f_new):
        return dict(y=y, f=f)

    def expand(self, rhs, params, t, hs, kept, rtol, atol):
        y_new, _, dense, f_new = self.step(rhs, t, kept["y"], kept["f"], hs, params, rtol, atol)
        if f_new is None:
            f_new = rhs(t + hs, y_new, params)
        return dict(t=t, y=kept["y"], y_new=y_new, dense=dense, hs=hs, f_new=f_new)

    def segment(self, t, hs, y, y_new, dense, f_new):
        return dict(t=t, y=y, y_new=y_new, dense=dense, hs=hs, f_new=f_new)  # what `expand` recomputes


class ExplicitRK(_HairerPI, _RecomputeDense):
    """Explicit FSAL Runge–Kutta pair with its own interpolant (DOPRI5, Tsit5)."""

    implicit = False
    fsal = True

    def __init__(self, tableau: ExplicitTableau):
        self.tableau = tableau
        self.order = tableau.order
        self.error_order = tableau.error_order
        self.rhs_per_step = len(tableau.b) - 1

    def init(self, rhs, t0, y0, params):
        return rhs(t0, y0, params)

    def dense_zeros(self, y0):
        """Zeros shaped as a step's dense data (its stages), for the loop's first state."""
        return jnp.zeros((len(self.tableau.c),) + y0.shape, y0.dtype)

    def step(self, rhs, t, y, f, hs, params, rtol, atol):
        tab = self.tableau
        ks = _stages(rhs, t, y, [f], hs, params, tab.c, tab.a, len(tab.c))
        y_new = _onto(y, tab.b, ks, hs)
        err = hs * _combine(tab.e, ks)
        err_norm = _rms(err / _scale(y, y_new, rtol, atol))
        return y_new, err_norm, jnp.stack(ks), ks[-1]

    def interpolate(self, rhs, params, seg, theta):
        dense = self.tableau.dense
        powers = [theta ** (j + 1) for j in range(dense.shape[1])]
        out = seg["y"]
        for i in range(dense.shape[0]):  # unrolled like the step (no batch-dependent dot)
            w = _combine(dense[i], powers)
            if w is None:
                continue
            # y + sum((h w_i) k_i), as the step's `_onto`: a sum of the bare stages overflowed
            # where the step's own sums did not (the slopes near the largest float)
            out = out + (seg["hs"] * w) * seg["dense"][i]
        return out


class DOP853Method(_HairerPI, _RecomputeDense):
    """Hairer's DOP853 with its two-estimator error norm and 7th-order dense output."""

    implicit = False
    fsal = False  # f(t+h, y1) is one more evaluation after the 12 stages
    beta = 0.0
    fac_min, fac_max = 1.0 / 3.0, 6.0

    def __init__(self, tableau: DOP853Tableau):
        self.tableau = tableau
        self.order = tableau.order
        self.error_order = tableau.error_order
        self.rhs_per_step = 11  # stages 2..12 (stage 1 is f from the previous step)

    def init(self, rhs, t0, y0, params):
        return rhs(t0, y0, params)

    def dense_zeros(self, y0):
        """Zeros shaped as a step's dense data (its 12 stages), for the loop's first state."""
        return jnp.zeros((12,) + y0.shape, y0.dtype)

    def step(self, rhs, t, y, f, hs, params, rtol, atol):
        tab = self.tableau
        ks = _stages(rhs, t, y, [f], hs, params, tab.c, tab.a, 12)
        increment = _combine(tab.b, ks)
        y_new = y + hs * increment
        sk = _scale(y, y_new, rtol, atol)
        # Hairer's |h| S5 / sqrt(n (S5 + 0.01 S3)) with the sums of squares taken of the error
        # estimates themselves (h times the stage combinations): the same number, but the
        # squares of the bare combinations overflowed for a slope of 1e200 beside a state
        # at 0, and every step was rejected as non-finite
        err5 = _sum_squares(jnp.abs(hs) * _combine(tab.er, ks) / sk)
        err3 = _sum_squares(jnp.abs(hs) * (increment - _combine(tab.bhh, ks)) / sk)
        deno = err5 + 0.01 * err3
        deno = jnp.where(deno > 0, deno, 1.0)
        err_norm = err5 * jnp.sqrt(1.0 / (y.shape[0] * deno))
        return y_new, err_norm, jnp.stack(ks), None

    def interpolate(self, rhs, params, seg, theta):
        tab = self.tableau
        t, y, y_new, hs = seg["t"], seg["y"], seg["y_new"], seg["hs"]
        ks = list(seg["dense"]) + [seg["f_new"]]
        # the stages' sums as the step forms them (`_onto`: each stage times h first): the
        # sums of bare stages with DOP853's large coefficients overflowed in float32 where
        # the step's did not, and every save after t0 was NaN with status success (a state
        # of 1e37, found by probing)
        ks = _stages(rhs, t, y, ks, hs, params, tab.c, tab.a, 16)  # the three only the dense output needs
        ydiff = y_new - y
        bspl = hs * ks[0] - ydiff
        r4 = ydiff - hs * ks[12] - bspl
        r5, r6, r7, r8 = (_onto(jnp.zeros_like(y), tab.d[j], ks, hs) for j in range(4))
        th1 = 1.0 - theta
        tmp = r5 + theta * (r6 + th1 * (r7 + theta * r8))
        return y + theta * (ydiff + th1 * (bspl + theta * (r4 + th1 * tmp)))


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _stage_solve(rhs, gamma: float, t, y, params, inv_h, lu, b):
    """A Rosenbrock stage ``k = W^-1 b`` with ``W = I / (h gamma) - J(t, y; params)``, given
    ``lu``, the factors of ``W`` (which carry no tangent)."""
    return solve(lu, b)


def _stage_solve_jvp(rhs, gamma, primals, tangents):
    # d k = W^-1 (d b - d W k), d W = d(1/h) / gamma I - d J, and d J k is the derivative
    # of J(t, y; params) k along (d t, d y, d params) with k held: a jvp of a jvp of the rhs,
    # along the inputs that move (the others arrive as symbolic zeros)
    t, y, params, inv_h, lu, b = primals
    dt, dy, dparams, dinv_h, _, db = tangents
    # (both solves through `_stage_solve` again: differentiated once more, for a second
    # derivative, each carries the tangent of W that the factors do not. Steps are
    # differentiated forward only: a solve's reverse mode transposes the Jacobian that
    # `simkit.kernels.autodiff` computes forward, never these stages)
    k = _stage_solve(rhs, gamma, t, y, params, inv_h, lu, b)
    leaves, tree = jax.tree_util.tree_flatten((t, y, params))
    dleaves = tree.flatten_up_to((dt, dy, dparams))
    out = db if perturbs(db) else jnp.zeros_like(k)
    if any(perturbs(d) for d in dleaves):
        def j_times_k(*values):
            tt, yy, pp = jax.tree_util.tree_unflatten(tree, values)
            return jax.jvp(lambda v: rhs(tt, v, pp), (yy,), (k,))[1]

        out = out + jvp_along_moving(j_times_k, leaves, dleaves)[1]
    if perturbs(dinv_h):
        out = out - (dinv_h / gamma) * k
    return k, _stage_solve(rhs, gamma, t, y, params, inv_h, lu, out)


_stage_solve.defjvp(_stage_solve_jvp, symbolic_zeros=True)


def _rosenbrock_written(tab, rhs, params, t, y, f, hs, inv_h, jac_t, lu):
    """A Rosenbrock step's stages ``k_i``, written out (trace-time zero terms skipped)."""
    ks = []
    for i in range(len(tab.m)):
        fi = f if i == 0 else rhs(t + float(tab.alpha[i]) * hs, y + _combine(tab.a[i, :i], ks), params)
        rhs_i = fi
        if jac_t is not None and float(tab.d[i]) != 0.0:
            rhs_i = rhs_i + (hs * float(tab.d[i])) * jac_t
        coupling = _combine(tab.c[i, :i], ks) if i > 0 else None
        if coupling is not None:
            rhs_i = rhs_i + coupling * inv_h
        ks.append(_stage_solve(rhs, float(tab.gamma), t, y, params, inv_h, lu, rhs_i))
    return jnp.stack(ks)


def _rosenbrock_rolled(tab, rhs, params, t, y, f, hs, inv_h, jac_t, lu):
    """`_rosenbrock_written` with stages 1 .. s - 1 in a ``fori_loop`` (one rhs and one
    solve in the program instead of s)."""
    s = len(tab.m)
    a, c = jnp.asarray(tab.a[:s, :s], y.dtype), jnp.asarray(tab.c[:s, :s], y.dtype)
    alpha, d = jnp.asarray(tab.alpha[:s], y.dtype), jnp.asarray(tab.d[:s], y.dtype)
    column = (s,) + (1,) * y.ndim

    def rhs_of(i, fi, ks):
        out = fi + jnp.sum((c[i] * inv_h).reshape(column) * ks, axis=0)
        return out if jac_t is None else out + (hs * d[i]) * jac_t

    def solve_stage(b):
        return _stage_solve(rhs, float(tab.gamma), t, y, params, inv_h, lu, b)

    ks = jnp.zeros((s,) + y.shape, y.dtype).at[0].set(solve_stage(rhs_of(0, f, jnp.zeros((s,) + y.shape, y.dtype))))

    def stage(i, ks):
        fi = rhs(t + alpha[i] * hs, y + jnp.sum(a[i].reshape(column) * ks, axis=0), params)
        return ks.at[i].set(solve_stage(rhs_of(i, fi, ks)))

    return jax.lax.fori_loop(1, s, stage, ks)


class Rosenbrock(_Stateless):
    """Rosenbrock method (Rodas4, Rodas5P) with the Jacobian from ``jax.jacfwd`` and a
    dense LU per step (`simkit.kernels.linalg`). Differentiated, each stage's solve carries
    the tangent (`_stage_solve`): a step's forward sensitivity costs, per direction, s
    second-order jvps of the rhs and 2 s triangular solves, not the tangent of the
    Jacobian and of its factors."""

    implicit = True
    fsal = False  # f(t_new, y_new) costs one more evaluation per attempt

    def __init__(self, tableau: RosenbrockTableau):
        self.tableau = tableau
        self.order = tableau.order
        self.error_order = tableau.order - 1
        self.rhs_per_step = len(tableau.m) - 1  # stages 2..s (+ the Jacobian, n jvps)

    def init(self, rhs, t0, y0, params):
        return rhs(t0, y0, params)

    def dense_zeros(self, y0):
        """Zeros shaped as a step's dense data (the interpolant's vectors), for the loop's first state."""
        return jnp.zeros((len(self.tableau.dense),) + y0.shape, y0.dtype)

    def step(self, rhs, t, y, f, hs, params, rtol, atol):
        return (*self.step_with_jacobian(rhs, t, y, f, hs, params, rtol, atol)[:3], None)

    def step_with_jacobian(self, rhs, t, y, f, hs, params, rtol, atol):
        """`step`, returning the Jacobian ``df/dy`` at ``(t, y)`` in place of ``f_new``."""
        tab = self.tableau
        n = y.shape[0]
        from .structure import depends_on_time  # (on first use: SciPy's sparse matrices, 60 ms of import)

        # The Jacobian and the LU factors carry no tangent: `_stage_solve` differentiates
        # the stage equations exactly with a second-order jvp per stage and direction
        # instead (the tangent of a dense Jacobian and of its LU factors would be n
        # second-order jvps and O(n^3) work per direction)
        t_c, y_c, params_c = (lax.stop_gradient(v) for v in (t, y, params))
        if depends_on_time(rhs, t, y, params):
            jac_y = jax.jacfwd(lambda yy: rhs(t_c, yy, params_c))(y_c)
            jac_t = jax.jvp(lambda tt: rhs(tt, y, params), (t,), (jnp.ones_like(t),))[1]
        else:
            # an autonomous rhs (read from its program, `structure.depends_on_time`): no
            # d f / d t, which was one more of the Jacobian's jvps and a term in every stage.
            # The same values to rounding; measured (alternating variants in one process,
            # `benchmarks/experiments/autonomous_ab.py`): a 2,500-member van der Pol ensemble
            # with Rodas4 1.05x the solves per second (its naive jax.vmap 1.10x), single
            # solves (Robertson, HIRES) unchanged
            jac_y, jac_t = jax.jacfwd(lambda yy: rhs(t_c, yy, params_c))(y_c), None
        # one division by the step, then products: a division of a vector by a lane's step
        # was compiled as a division in one program and as a product with the reciprocal in
        # another (one device against several), and an ensemble's members differed across
        # device counts by up to 5e-14 (van der Pol, Rodas5P)
        inv_h = 1.0 / hs
        w = jnp.eye(n, dtype=y.dtype) * (lax.stop_gradient(inv_h) / tab.gamma) - jac_y
        lu = factor(w)
        stacked = _stages_by_platform(functools.partial(_rosenbrock_written, tab), functools.partial(_rosenbrock_rolled, tab),
                                      rhs, params, t, y, f, hs, inv_h, jac_t, lu, roll_differentiated=True)
        ks = [stacked[i] for i in range(len(tab.m))]
        y_new = y + _combine(tab.m, ks)
        err_norm = _rms(ks[-1] / _scale(y, y_new, rtol, atol))
        dense = jnp.stack([_combine(row, ks) for row in tab.dense])
        return y_new, err_norm, dense, jac_y

    def keep(self, y, f, y_new, dense, f_new):
        return dict(y=y, y_new=y_new, dense=dense)  # two or three vectors: cheaper than a new LU

    def expand(self, rhs, params, t, hs, kept, rtol, atol):
        return dict(t=t, hs=hs, **kept)

    def interpolate(self, rhs, params, seg, theta):
        s1 = 1.0 - theta
        dense = seg["dense"]
        inner = dense[-1]
        for j in range(dense.shape[0] - 2, -1, -1):  # h_1 + theta (h_2 + theta h_3 ...)
            inner = dense[j] + theta * inner
        return s1 * seg["y"] + theta * (seg["y_new"] + s1 * inner)

    def controller_init(self, y0):
        dtype = jnp.real(y0).dtype
        return jnp.stack([jnp.asarray(0.0, dtype), jnp.log(jnp.asarray(1e-2, dtype))])  # h_acc, log(err_acc)

    def propose(self, err_norm, h, state, accepted, last_rejected, work=None):
        # Hairer's RODAS: 1/5 <= h_new/h <= 6, safety 0.9, exponent 1/(error order + 1)
        # (RODAS: 1/4); on acceptance the predictive (Gustafsson) step from the previous
        # accepted step, when there is one.
        # (powers as exp/log, the previous accepted error carried as its log: see _HairerPI)
        expo = 1.0 / (self.error_order + 1)
        log_err = jnp.log(jnp.maximum(err_norm, 1e-10))
        fac = jnp.clip(jnp.exp(expo * log_err) / 0.9, 1.0 / 6.0, 5.0)
        h_acc_prev, log_err_acc_prev = state[0], state[1]
        gus = jnp.clip((h_acc_prev / h) * jnp.exp(expo * (2 * log_err - log_err_acc_prev)) / 0.9, 1.0 / 6.0, 5.0)
        fac_acc = jnp.where(h_acc_prev != 0, jnp.maximum(fac, gus), fac)
        h_acc = h / fac_acc
        h_acc = jnp.where(last_rejected, jnp.minimum(h_acc, h), h_acc)
        h_new = jnp.where(accepted, h_acc, h / fac)
        # err_acc_prev = max(1e-2, err), as a log
        new_state = jnp.where(accepted, jnp.stack([h, jnp.maximum(jnp.log(1e-2), log_err)]), state)
        return h_new, new_state
