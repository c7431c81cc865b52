"""Radau IIA of order 5 (three stages) as a fused kernel method, after Hairer & Wanner's RADAU5.

Hairer & Wanner, *Solving Ordinary Differential Equations II*, 2nd ed., Springer 1996,
section IV.8: the collocation method at the Radau points ``c = ((4 - sqrt 6)/10,
(4 + sqrt 6)/10, 1)``, solved by simplified Newton iterations on the transformed system
(``T^-1 A^-1 T`` is one real eigenvalue and one complex pair, so each iteration solves one
real and one complex linear system of the size of the state, not one of three times its
size), with

* the Jacobian kept across steps and recomputed only when Newton converged slowly
  (rate above 1e-3 after more than two iterations) or failed with a stale Jacobian;
* the LU factors kept while the step size does not change (a proposed growth below 1.2x
  keeps the step, and so the factors, as RADAU5 does);
* starting values for Newton from the previous step's collocation polynomial;
* a Newton iteration that stalls at the rhs's own rounding, a tenth of the error test's
  unit or less, taken as converged rather than failed (`NEWTON_NOISE_NORM`);
* the embedded error estimate of order 3, filtered by ``(u1/h - J)^-1`` (stiffly
  accurate: bounded for ``h |lambda| -> inf``), re-filtered through one more rhs
  evaluation after a rejection or on the first step;
* Gustafsson's predictive controller with RADAU5's safety factor (smaller when Newton
  needed many iterations);
* dense output from the collocation polynomial (order 3 uniformly, exact at the stages).

The coefficients are computed here from their definitions (the Radau IIA matrix, its
inverse's eigen-decomposition, the interpolating polynomial through the stages), and
checked when the module loads. Tolerances are used as given, as SciPy's ``Radau`` does
(RADAU5 itself transforms them to ``0.1 rtol^(2/3)``).

The complex system ``(mu/h I - J)(u + i v) = a + i b`` (``mu = alpha + i beta``) is, in real
terms, the ``2n`` system ``[[alpha/h I - J, -beta/h I], [beta/h I, alpha/h I - J]] [u; v] =
[a; b]``. XLA's TPU backend has no complex128, so a float64 program compiled for a TPU
eliminates that system in 2 x 2 blocks, that is, complex numbers held as (real, imaginary)
pairs of float64 (`pair_lu`, `pair_solve`: the pivots by modulus and the eliminations in the
order of the straight-line complex LU, so the two agree to rounding; LAPACK's, above
`linalg.SMALL_SYSTEM` states, pivots on ``|re| + |im|``). Everywhere else (CPU, GPU, and
float32 on any platform) the system is factored and solved in complex arithmetic by
`simkit.kernels.linalg`. The choice is made when the program is lowered
(`jax.lax.platform_dependent`). The factors kept across steps are in the stepping loop's
carry, whose type is the same whichever platform the program is lowered for and which a TPU
program cannot hold in complex128: they are carried as the complex LU's real and imaginary
parts, taken apart after factoring and put together before each solve. That is exact: a CPU
program computes the same bits in the same steps as one carrying complex factors
(Robertson, HIRES and van der Pol at rtol 1e-6 and 1e-9, single solves and an ensemble).
(Factors of the real ``2n`` matrix from `linalg.factor` take twice that storage, which CPU
programs would carry as well.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .linalg import factor as lu_factor
from .linalg import factor_zeros
from .linalg import solve as lu_solve
from .methods import _rms, _scale

# the platforms whose float64 programs solve the complex system in real arithmetic (`pair_lu`)
REAL_ARITHMETIC_PLATFORMS = ("tpu",)

NEWTON_MAXITER = 7  # RADAU5's NIT
MIN_FACTOR, MAX_FACTOR = 0.2, 8.0  # RADAU5's FACR, FACL (1/FACL = 0.2, 1/FACR = 8)
KEEP_STEP_BELOW = 1.2  # RADAU5's QUOT2: a smaller growth keeps h and the LU factors
JACOBIAN_RATE = 1e-3  # RADAU5's THET: slower Newton convergence recomputes the Jacobian
# Newton iterations whose corrections stop shrinking (rate >= NEWTON_STALL_RATE) at a scaled
# size at most NEWTON_NOISE_NORM (a tenth of what the error test accepts) have reached the
# rounding of the rhs itself, and are taken as converged rather than failed. A rhs whose
# terms cancel in a conserved direction (Robertson's rates form, f2 = r1 - r3 - r2) rounds
# there at eps times its rates, and where XLA contracts the products into fused
# multiply-adds that rounding no longer cancels between components: the corrections stall
# at h eps |rates| / (atol + rtol |y|), above the Newton tolerance (1e-4 at rtol 1e-8) for
# large steps and tiny atol, and every such step failed and was halved. Measured on a
# 2-member ensemble (XLA's fusion emitters, whose contractions differ from a single solve's)
# of Robertson's rates form to 1e11 at rtol 1e-8, atol 1e-16: 33,596 attempts (21,352
# rejected) before, 1,833 after (1e-2 here: 4,796), against 1,604 for a single solve and
# 1,625 accepted steps for SciPy's Radau; BDF 11,532 -> 1,838 (SciPy's BDF 1,763). At rtol
# 1e-10, atol 1e-20 that ensemble ran out of 100,000 steps before and ends in 70,971 now
# (SciPy's Radau, without fused multiply-adds: 5,833): there the rounding is about the
# tolerance itself. Where Newton converges normally (every problem of
# benchmarks/stiff_step_counts.py in a single solve) the steps and errors are unchanged.
NEWTON_STALL_RATE = 0.5
NEWTON_NOISE_NORM = 0.1


def _coefficients() -> dict:
    """The Radau IIA (s = 3) coefficients, the transformation that block-diagonalises
    ``A^-1``, the error-estimate weights and the dense-output matrix."""
    s6 = np.sqrt(6.0)
    c = np.array([(4.0 - s6) / 10.0, (4.0 + s6) / 10.0, 1.0])
    # A from the collocation conditions sum_j a_ij c_j^(k-1) = c_i^k / k, k = 1..3
    v = np.stack([c**k for k in range(3)], axis=1)  # v[j, k] = c_j^k
    rhs = np.stack([c ** (k + 1) / (k + 1) for k in range(3)], axis=1)
    a = np.linalg.solve(v.T, rhs.T).T  # a @ v = rhs
    m = np.linalg.inv(a)
    lam, vecs = np.linalg.eig(m)
    real = int(np.argmin(np.abs(lam.imag)))
    cplx = int(np.argmax(lam.imag))  # the eigenvalue alpha + i beta with beta > 0
    t = np.stack([vecs[:, real].real, vecs[:, cplx].real, vecs[:, cplx].imag], axis=1)
    ti = np.linalg.inv(t)
    blocks = ti @ m @ t
    mu_real = blocks[0, 0]
    # on (W2, W3) the block is [[a, -b], [b, a]]: multiplication of W2 + i W3 by a + i b
    mu_complex = blocks[1, 1] + 1j * blocks[2, 1]
    # dense output: y(t + theta h) = y + sum_j q_j theta^(j+1), q = P^T z (interpolates the stages)
    vander = np.stack([c ** (j + 1) for j in range(3)], axis=1)  # vander[i, j] = c_i^(j+1)
    p = np.linalg.inv(vander).T  # q_j = sum_i p[i, j] z_i
    # error estimate weights (Hairer & Wanner IV.8, eq. 8.19-8.20; RADAU5's DD1..DD3)
    dd = np.array([-(13.0 + 7.0 * s6) / 3.0, (-13.0 + 7.0 * s6) / 3.0, -1.0 / 3.0])
    out = dict(c=c, a=a, t=t, ti=ti, mu_real=float(mu_real), mu_complex=complex(mu_complex), p=p, dd=dd)
    _check(out, blocks)
    return out


def _check(k: dict, blocks: np.ndarray) -> None:
    """Order conditions and the transformation, checked when the module loads."""
    a, c = k["a"], k["c"]
    b = a[-1]
    if not np.allclose(a.sum(axis=1), c, atol=1e-14):
        raise ValueError("Radau IIA: rows of A do not sum to c")
    for q in range(1, 6):  # quadrature order 2s - 1 = 5: sum b_i c_i^(q-1) = 1/q
        if abs(b @ c ** (q - 1) - 1.0 / q) > 1e-14:
            raise ValueError(f"Radau IIA: quadrature condition {q} fails")
    if abs(blocks[0, 1]) + abs(blocks[0, 2]) + abs(blocks[1, 0]) + abs(blocks[2, 0]) > 1e-12 or \
            abs(blocks[1, 1] - blocks[2, 2]) > 1e-12 or abs(blocks[1, 2] + blocks[2, 1]) > 1e-12:
        raise ValueError("Radau IIA: T does not block-diagonalise A^-1")
    # RADAU5: u1 = 1 / ((6 + 81^(1/3) - 9^(1/3)) / 30)
    if abs(k["mu_real"] - 30.0 / (6.0 + 81.0 ** (1 / 3) - 9.0 ** (1 / 3))) > 1e-12:
        raise ValueError("Radau IIA: the real eigenvalue of A^-1 is wrong")


RADAU_IIA5 = _coefficients()


def _complex_dtype(dtype):
    return jnp.complex128 if jnp.dtype(dtype) == jnp.float64 else jnp.complex64


def _pivots_zeros(n: int, dtype):
    """Zeros shaped as the pivots of `linalg.factor` for an ``n x n`` complex matrix (shapes
    only: no complex array in the program)."""
    pivots = jax.eval_shape(lambda: factor_zeros(n, _complex_dtype(dtype))[1])
    return jnp.zeros(pivots.shape, pivots.dtype)


def _combine(weights, zs):
    """sum_i weights[i] * zs[i] for trace-time constant weights."""
    out = None
    for w, z in zip(weights, zs):
        term = complex(w) * z if isinstance(w, complex) else float(w) * z
        out = term if out is None else out + term
    return out


# -- complex LU in real arithmetic (float64 on a TPU) -----------------------------------------


def _divide(ar, ai, br, bi):
    """``(ar + i ai) / (br + i bi)`` as a (real, imaginary) pair, by Smith's algorithm (no
    overflow from squaring the divisor)."""
    wide = jnp.abs(br) >= jnp.abs(bi)
    safe_br = jnp.where(wide, br, 1.0)
    safe_bi = jnp.where(wide, 1.0, bi)
    r = jnp.where(wide, bi / safe_br, br / safe_bi)
    d = jnp.where(wide, br + bi * r, br * r + bi)
    return (jnp.where(wide, ar + ai * r, ar * r + ai) / d,
            jnp.where(wide, ai - ar * r, ai * r - ar) / d)


def pair_lu(re, im, perm_dtype=jnp.int32):
    """``(lu_re, lu_im, perm)``: LU with partial pivoting of the complex ``n x n`` matrix
    ``re + i im`` in real arithmetic, ``(re + i im)[perm] = L U`` with L unit lower
    triangular (below the diagonal) and U upper triangular, packed as `linalg.lu_factor`
    packs them. A ``fori_loop`` over the columns (one elimination per iteration, array
    operations only, as `linalg.rolled_lu`): the real ``2n`` system ``[[re, -im], [im, re]]``
    eliminated in 2 x 2 blocks, pivoting on the largest modulus."""
    n = re.shape[-1]
    idx = jnp.arange(n)

    def eliminate(k, carry):
        re, im, perm = carry
        modulus = jnp.hypot(re[:, k], im[:, k])
        p = jnp.argmax(jnp.where(idx >= k, modulus, -1.0))
        swap = jnp.where(idx == k, p, jnp.where(idx == p, k, idx))
        re, im, perm = re[swap, :], im[swap, :], perm[swap]
        inv_r, inv_i = _divide(1.0, 0.0, re[k, k], im[k, k])
        below = idx > k
        fr = jnp.where(below, re[:, k] * inv_r - im[:, k] * inv_i, 0.0)
        fi = jnp.where(below, re[:, k] * inv_i + im[:, k] * inv_r, 0.0)
        ur, ui = jnp.where(below, re[k, :], 0.0), jnp.where(below, im[k, :], 0.0)
        re = re - (fr[:, None] * ur[None, :] - fi[:, None] * ui[None, :])
        im = im - (fr[:, None] * ui[None, :] + fi[:, None] * ur[None, :])
        column = (idx == k)[None, :]
        re = jnp.where(column, jnp.where(below, fr, re[:, k])[:, None], re)
        im = jnp.where(column, jnp.where(below, fi, im[:, k])[:, None], im)
        return re, im, perm

    return lax.fori_loop(0, n, eliminate, (re, im, jnp.arange(n, dtype=perm_dtype)))


def _pair_triangular_solve(lu_re, lu_im, b_re, b_im, *, lower: bool):
    """Solve ``t x = b`` for the unit lower (``lower``) or the upper triangle ``t`` of packed
    complex factors held as pairs: substitution by a ``fori_loop`` over the rows, as
    `linalg.rolled_triangular_solve`."""
    n = lu_re.shape[-1]
    idx = jnp.arange(n)

    def row(step, x):
        xr, xi = x
        i = step if lower else n - 1 - step
        known = (idx < i) if lower else (idx > i)
        cr, ci = jnp.where(known, lu_re[i, :], 0.0), jnp.where(known, lu_im[i, :], 0.0)
        rr = b_re[i] - jnp.sum(cr * xr - ci * xi)
        ri = b_im[i] - jnp.sum(cr * xi + ci * xr)
        if not lower:
            rr, ri = _divide(rr, ri, lu_re[i, i], lu_im[i, i])
        return xr.at[i].set(rr), xi.at[i].set(ri)

    return lax.fori_loop(0, n, row, (jnp.zeros_like(b_re), jnp.zeros_like(b_im)))


def pair_solve(lu_re, lu_im, perm, b_re, b_im):
    """``(x_re, x_im)`` solving ``(re + i im) x = b_re + i b_im`` from `pair_lu`'s factors:
    the two triangular sweeps, in real arithmetic."""
    y_re, y_im = _pair_triangular_solve(lu_re, lu_im, b_re[perm], b_im[perm], lower=True)
    return _pair_triangular_solve(lu_re, lu_im, y_re, y_im, lower=False)


class RadauIIA5Method:
    """One attempt of Radau IIA 5 for `simkit.kernels.loop.adaptive_loop`.

    The controller state carried across attempts holds the Jacobian, both LU
    factorisations (the complex one as its real and imaginary parts and its pivots), the step
    size they were made for, whether the Jacobian is current and whether a new one is wanted,
    the previous accepted step's collocation polynomial (Newton's starting values) and the
    Gustafsson controller's memory.

    ``real_arithmetic_platforms``: the platforms whose float64 programs solve the complex
    system in real arithmetic (`pair_lu`; a TPU, which has no complex128). Any other
    platform, and float32 everywhere, factors it in complex arithmetic.
    """

    implicit = True
    fsal = False  # f(t + h, y_new): one more evaluation per attempt, the next step's f0
    order = 5
    error_order = 3

    def __init__(self, real_arithmetic_platforms: tuple[str, ...] = REAL_ARITHMETIC_PLATFORMS):
        self.real_arithmetic_platforms = tuple(real_arithmetic_platforms)
        k = RADAU_IIA5
        self.c, self.t, self.ti, self.p, self.dd = k["c"], k["t"], k["ti"], k["p"], k["dd"]
        self.mu_real, self.mu_complex = k["mu_real"], k["mu_complex"]
        self.rhs_per_step = 3  # per Newton iteration; the count travels in ``work``

    def init(self, rhs, t0, y0, params):
        return rhs(t0, y0, params)

    def dense_zeros(self, y0):
        """Zeros shaped as a step's dense data (the collocation polynomial's 3 vectors)."""
        return jnp.zeros((3,) + y0.shape, y0.dtype)

    # -- controller state ----------------------------------------------------------------

    def controller_init(self, y0):
        n, dtype = y0.shape[0], y0.dtype
        zeros = jnp.zeros((n, n), dtype)
        return dict(
            jac=zeros, jac_current=jnp.asarray(False), want_jac=jnp.asarray(True),
            lu_real=factor_zeros(n, dtype), lu_complex=(zeros, zeros, _pivots_zeros(n, dtype)),
            lu_hs=jnp.asarray(0.0, dtype),
            prev=dict(t=jnp.asarray(0.0, dtype), hs=jnp.asarray(0.0, dtype), y=y0, q=jnp.zeros((3, n), dtype)),
            have_prev=jnp.asarray(False), first=jnp.asarray(True), rejected=jnp.asarray(False),
            h_old=jnp.asarray(0.0, dtype), err_old=jnp.asarray(1e-2, dtype),
        )

    # -- one attempt -------------------------------------------------------------------

    def attempt(self, rhs, t, y, f, hs, params, rtol, atol, ctrl):
        n, dtype = y.shape[0], y.dtype
        eps = jnp.finfo(dtype).eps
        jac = lax.cond(
            ctrl["want_jac"],
            lambda: lax.stop_gradient(jax.jacfwd(lambda yy: rhs(t, yy, params))(y)),
            lambda: ctrl["jac"],
        )
        jac_current = ctrl["want_jac"] | ctrl["jac_current"]
        # (a step that differs from the factors' by the rounding of t + hs keeps them)
        refactor = ctrl["want_jac"] | (jnp.abs(hs - ctrl["lu_hs"]) > eps * (jnp.abs(t) + jnp.abs(hs)))
        eye = jnp.eye(n, dtype=dtype)

        def factor():
            lu_r = lu_factor((self.mu_real / hs) * eye - jac)
            return lu_r, self._factor_complex(jac, hs, ctrl["lu_complex"][2].dtype)

        lu_real, lu_complex = lax.cond(refactor, factor, lambda: (ctrl["lu_real"], ctrl["lu_complex"]))
        lu_real = jax.tree_util.tree_map(lax.stop_gradient, lu_real)
        lu_complex = jax.tree_util.tree_map(lax.stop_gradient, lu_complex)

        # starting values: the previous step's collocation polynomial at the new stages
        prev = ctrl["prev"]

        def extrapolate(ci):
            theta = (t + ci * hs - prev["t"]) / jnp.where(prev["hs"] == 0, 1.0, prev["hs"])
            return self._poly(prev["y"], prev["q"], theta) - y

        z0 = [jnp.where(ctrl["have_prev"], extrapolate(float(ci)), jnp.zeros_like(y)) for ci in self.c]
        w0 = [_combine(self.ti[i], z0) for i in range(3)]

        scale = _scale(y, y, rtol, atol)
        newton_tol = jnp.maximum(10 * eps / rtol, jnp.minimum(0.03, jnp.sqrt(rtol)))
        mu_r = self.mu_real / hs

        def newton_body(s):
            z, w = s["z"], s["w"]
            fs = [rhs(t + float(ci) * hs, y + z[i], params) for i, ci in enumerate(self.c)]
            g_real = _combine(self.ti[0], fs) - mu_r * w[0]
            dw_real = lu_solve(lu_real, g_real)
            dw = [dw_real, *self._solve_complex(lu_complex, fs, w[1], w[2], hs)]
            norm = _rms(jnp.concatenate(dw) / jnp.concatenate([scale] * 3))
            finite = jnp.isfinite(norm)  # a non-finite stage value makes the norm non-finite
            rate = jnp.where(s["k"] > 0, norm / jnp.where(s["norm_old"] > 0, s["norm_old"], 1.0), s["rate"])
            remaining = NEWTON_MAXITER - s["k"]
            # diverging, or too slow to converge in the iterations left: give up
            hopeless = (s["k"] > 0) & ((rate >= 1) | (rate ** remaining / (1 - rate) * norm > newton_tol))
            # stalled at a correction far below the error test's unit: the rhs's own rounding
            # (`NEWTON_NOISE_NORM`), not a failure
            at_floor = (s["k"] > 0) & (rate >= NEWTON_STALL_RATE) & (norm <= NEWTON_NOISE_NORM)
            failed = ~finite | (hopeless & ~at_floor)
            w_new = [wi + dwi for wi, dwi in zip(w, dw)]
            z_new = [_combine(self.t[i], w_new) for i in range(3)]
            converged = ~failed & ((norm == 0) | at_floor | ((s["k"] > 0) & (rate / (1 - rate) * norm < newton_tol)))
            keep = ~failed
            return dict(
                z=[jnp.where(keep, a, b) for a, b in zip(z_new, z)],
                w=[jnp.where(keep, a, b) for a, b in zip(w_new, w)],
                k=s["k"] + 1, norm_old=norm, rate=rate, converged=converged, failed=failed,
            )

        def newton_cond(s):
            return ~s["converged"] & ~s["failed"] & (s["k"] < NEWTON_MAXITER)

        s0 = dict(z=z0, w=w0, k=jnp.asarray(0), norm_old=jnp.asarray(0.0, dtype),
                  rate=jnp.asarray(1.0, dtype), converged=jnp.asarray(False), failed=jnp.asarray(False))
        s = lax.while_loop(newton_cond, newton_body, s0)
        z, converged, n_iter = s["z"], s["converged"], s["k"]
        y_new = y + z[2]

        # the error estimate, filtered by (u1/h - J)^-1
        ze = _combine(self.dd, z) / hs
        err = lu_solve(lu_real, f + ze)
        sc = _scale(y, y_new, rtol, atol)
        err_norm = _rms(err / sc)
        refilter = (err_norm >= 1) & (ctrl["first"] | ctrl["rejected"]) & converged
        err2 = lax.cond(refilter, lambda: lu_solve(lu_real, rhs(t, y + err, params) + ze), lambda: err)
        err_norm = jnp.where(refilter, _rms(err2 / sc), err_norm)
        # a failed Newton iteration: rejected (finite, so that its state stays meaningful)
        err_norm = jnp.where(converged, err_norm, jnp.asarray(2.0, dtype))
        y_new = jnp.where(converged | ~jnp.all(jnp.isfinite(y_new)), y_new, y)

        q = jnp.stack([_combine(self.p[:, j], z) for j in range(3)])  # (3, n)
        work = dict(
            converged=converged, n_iter=n_iter, rate=s["rate"], jac=jac, jac_current=jac_current,
            lu_real=lu_real, lu_complex=lu_complex, hs=hs, t=t, y=y, q=q,
            num_rhs=3 * n_iter + refilter.astype(n_iter.dtype)
            + ctrl["want_jac"].astype(n_iter.dtype) * n,  # (a Jacobian: n forward-mode evaluations)
        )
        return y_new, err_norm, q, None, work

    # -- the complex system ---------------------------------------------------------------

    def _in_real_arithmetic(self, dtype) -> tuple[str, ...]:
        """The platforms whose programs solve the complex system in real arithmetic for
        ``dtype`` (none in float32)."""
        return self.real_arithmetic_platforms if jnp.dtype(dtype) == jnp.float64 else ()

    def _factor_complex(self, jac, hs, index_dtype):
        """``(lu_re, lu_im, pivots)`` of ``mu_complex / hs I - jac``."""
        eye = jnp.eye(jac.shape[0], dtype=jac.dtype)

        def in_complex(jac, hs):
            lu, pivots = lu_factor((self.mu_complex / hs) * eye.astype(_complex_dtype(jac.dtype)) - jac)
            return jnp.real(lu), jnp.imag(lu), pivots

        def in_pairs(jac, hs):
            mu = self.mu_complex
            return pair_lu((mu.real / hs) * eye - jac, (mu.imag / hs) * eye, index_dtype)

        platforms = self._in_real_arithmetic(jac.dtype)
        if not platforms:
            return in_complex(jac, hs)
        return lax.platform_dependent(jac, hs, **{p: in_pairs for p in platforms}, default=in_complex)

    def _solve_complex(self, lu_complex, fs, w1, w2, hs):
        """The Newton correction ``(dw1, dw2)`` of the complex pair: ``(mu / hs - J)(dw1 +
        i dw2) = (T^-1)_(2 + i 3) f - mu / hs (w1 + i w2)``."""

        def in_complex(lu_re, lu_im, pivots, fs, w1, w2, hs):
            g = _combine(self.ti[1] + 1j * self.ti[2], fs) - (self.mu_complex / hs) * (w1 + 1j * w2)
            dw = lu_solve((lax.complex(lu_re, lu_im), pivots), g)
            return jnp.real(dw), jnp.imag(dw)

        def in_pairs(lu_re, lu_im, perm, fs, w1, w2, hs):
            a, b = self.mu_complex.real / hs, self.mu_complex.imag / hs
            g_re = _combine(self.ti[1], fs) - (a * w1 - b * w2)
            g_im = _combine(self.ti[2], fs) - (a * w2 + b * w1)
            return pair_solve(lu_re, lu_im, perm, g_re, g_im)

        args = (*lu_complex, fs, w1, w2, hs)
        platforms = self._in_real_arithmetic(w1.dtype)
        if not platforms:
            return in_complex(*args)
        return lax.platform_dependent(*args, **{p: in_pairs for p in platforms}, default=in_complex)

    # -- step size --------------------------------------------------------------------

    def propose(self, err_norm, h, ctrl, accepted, last_rejected, work):
        dtype = h.dtype
        converged, n_iter = work["converged"], work["n_iter"]
        err = jnp.maximum(err_norm, 1e-10)
        safety = 0.9 * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + n_iter.astype(dtype))
        # rejected by the error test
        fac_rej = jnp.maximum(MIN_FACTOR, safety * err**-0.25)
        # accepted: the standard and Gustafsson's predictive factors, the smaller
        fac_std = safety * err**-0.25
        gus = safety * (h / jnp.where(ctrl["h_old"] > 0, ctrl["h_old"], h)) * (ctrl["err_old"] / err) ** 0.25 \
            * err**-0.25
        fac_acc = jnp.where(ctrl["h_old"] > 0, jnp.minimum(fac_std, gus), fac_std)
        fac_acc = jnp.clip(fac_acc, MIN_FACTOR, MAX_FACTOR)
        fac_acc = jnp.where(last_rejected, jnp.minimum(fac_acc, 1.0), fac_acc)
        recompute = (n_iter > 2) & (work["rate"] > JACOBIAN_RATE)
        fac_acc = jnp.where(~recompute & (fac_acc >= 1.0) & (fac_acc < KEEP_STEP_BELOW), 1.0, fac_acc)
        # Newton failed: retry the same step with a fresh Jacobian, else halve it
        fac_fail = jnp.where(work["jac_current"], 0.5, 1.0)
        fac = jnp.where(~converged, fac_fail, jnp.where(accepted, fac_acc, fac_rej))
        h_new = h * fac

        new = dict(
            jac=work["jac"], lu_real=work["lu_real"], lu_complex=work["lu_complex"], lu_hs=work["hs"],
            jac_current=jnp.where(accepted, False, work["jac_current"]),
            want_jac=jnp.where(accepted, recompute, ~converged & ~work["jac_current"]),
            prev=jax.tree_util.tree_map(
                lambda a, b: jnp.where(accepted, a, b),
                dict(t=work["t"], hs=work["hs"], y=work["y"], q=work["q"]), ctrl["prev"]),
            have_prev=ctrl["have_prev"] | accepted,
            first=ctrl["first"] & ~accepted, rejected=~accepted,
            h_old=jnp.where(accepted, h, ctrl["h_old"]),
            err_old=jnp.where(accepted, jnp.maximum(err, 1e-2), ctrl["err_old"]),
        )
        return h_new, new

    # -- dense output ------------------------------------------------------------------

    @staticmethod
    def _poly(y, q, theta):
        """``y + sum_j q_j theta^(j+1)`` by Horner's rule."""
        return y + theta * (q[0] + theta * (q[1] + theta * q[2]))

    def keep(self, y, f, y_new, dense, f_new):
        return dict(y=y, dense=dense)

    def expand(self, rhs, params, t, hs, kept, rtol, atol):
        return dict(t=t, hs=hs, **kept)

    def interpolate(self, rhs, params, seg, theta):
        return self._poly(seg["y"], seg["dense"], theta)
