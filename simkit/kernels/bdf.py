"""Variable-order BDF / NDF (orders 1-5) as a fused kernel method, after SciPy's ``BDF``.

Shampine & Reichelt, "The MATLAB ODE Suite", SIAM J. Sci. Comput. 18 (1997) 1-22,
section 2: the numerical differentiation formulas (NDFs) in backward-difference form with a
quasi-constant step size, as in MATLAB's ``ode15s`` and SciPy's ``BDF``.

* **History as differences.** The solution's recent past is the array ``D`` of modified
  divided differences ``D[j] = nabla^j y_n`` on an equally spaced grid of the current step
  ``h`` (rows ``0..k+2`` meaningful at order ``k``). The predictor is the interpolating
  polynomial extrapolated one step, ``y0 = sum_{j<=k} D[j]``.
* **The NDF of order k** (the paper's eq. (2)): with ``y_{n+1} = y0 + d``,
  ``(1 - kappa_k) gamma_k d = h f(t_{n+1}, y_{n+1}) - sum_{j=1..k} gamma_j D[j]``,
  ``gamma_k = sum_{j<=k} 1/j``, i.e. ``d = c f(y0 + d) - psi`` with
  ``c = h / alpha_k``, ``alpha_k = (1 - kappa_k) gamma_k``. ``kappa = (-0.1850, -1/9,
  -0.0823, -0.0415, 0)`` (the paper's Table 1: about 26 % larger steps than the BDFs at
  orders 1-4 at the same accuracy, with little loss of stability; order 5 is the BDF).
* **Simplified Newton** on that system with ``(I - c J)``: at most four iterations,
  stopped as SciPy does on the estimated contraction rate (and, as Radau IIA's, taken as
  converged where it stalls at the rhs's rounding: `simkit.kernels.radau.NEWTON_NOISE_NORM`).
  ``J`` (``jax.jacfwd`` of the rhs) is kept across steps and recomputed only when Newton
  fails with a stale ``J``. The iteration matrix's factors are kept while ``c`` stays within ``refactor_ratio`` (30 %)
  of the ``c`` they were made for, the Newton correction scaled by ``2 / (1 + c / c_f)``
  (CVODE, Hindmarsh et al. 2005: its ``dgmax`` and ``gamrat`` rules); a Newton failure with
  stale factors refactors first, then with a stale ``J`` recomputes it. Up to 128 states
  they are refactored whenever ``c`` changes, as SciPy's. With a
  sparsity pattern (``BDF(jac_sparsity=...)``) ``J`` is a band of the reordered states
  (one JVP per band diagonal) and the factors are banded (`simkit.kernels.banded`); large
  systems without one go matrix-free (Newton-Krylov, `simkit.kernels.gmres`).
* **Error estimate** ``(kappa_k gamma_k + 1/(k+1)) nabla^{k+1} y_{n+1}``, and
  ``nabla^{k+1} y_{n+1} = d``: no extra evaluation. Measured in Hairer's RMS norm of the
  other kernels (`simkit.kernels.methods`), so tolerances mean the same everywhere.
* **Step size and order.** A step size change rescales ``D`` to the new spacing (the
  polynomial re-sampled: ``D <- (R U)^T D``, ``ode15s``'s ``difRU``); the step stays
  constant otherwise. After ``k + 1`` steps at a constant size, orders ``k - 1``, ``k`` and
  ``k + 1`` are compared by the step each would allow and the best is taken, with the step
  growth capped at 10 and cut at 0.2 after a rejection.
* **Dense output** is the interpolating polynomial through ``D`` on the accepted step
  (SciPy's ``BdfDenseOutput``), of the step's order.

How this fits `simkit.kernels.loop.adaptive_loop`, which owns ``t``, ``y`` and ``h`` and may
shorten a step (``max_step``, the last step to ``t1``): the controller state records the
step size ``D`` is scaled for, and each attempt rescales ``D`` to the step it is given
(resetting the count of equal steps when that differs). ``propose`` only returns the factor
it wants (1 while the order is not reconsidered); the rescale itself always happens at the
next attempt, so a step the loop shortens is handled by the same code as a step the method
chose. The loop's ``f`` is used once, to start ``D`` (``D[1] = h f(t0, y0)``); afterwards
the derivative lives in ``D`` and ``f`` is passed through unchanged (no evaluation at the
new point, as in SciPy).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..errors import ShapeError
from .banded import BandStructure, banded_factor, banded_jacobian, banded_solve
from .gmres import gmres
from .linalg import factor, factor_zeros, solve
from .methods import _rms, _scale
from .radau import NEWTON_NOISE_NORM, NEWTON_STALL_RATE

MAX_ORDER = 5
NEWTON_MAXITER = 4  # SciPy's BDF (ode15s: 4)
MIN_FACTOR, MAX_FACTOR = 0.2, 10.0
ROWS = MAX_ORDER + 3  # D[0..k+2]: the differences and the two the order test needs
# linear algebra ("auto"): a dense Jacobian and LU up to this many states, matrix-free GMRES
# above; with a preconditioner (a PDE's linear part) from fewer states. Measured at rtol 1e-6
# (benchmarks/bdf_size.py, stiff_mol.py): without a preconditioner the two tie at 100-128
# states and matrix-free is 2.3-2.5x faster at 288-400 (6-21x at 1,600-2,048); with the
# FFT preconditioner dense is 1.3x faster at 72 states and matrix-free 1.6x at 128, 5x at 288.
# A dense Jacobian of 65,536 states would take 34 GB. `BDF(linear_solver=...)` overrides it.
DENSE_MAX_STATES = 256
PRECONDITIONED_DENSE_MAX_STATES = 100
KRYLOV_DIM = 30  # the largest Krylov space of one linear solve (SPGMR's maxl is 5; no restarts)
# I - c J is refactored when c moves by more than REFACTOR_RATIO of the c it was factored for
# (CVODE's dgmax), above REFACTOR_MIN_STATES states; at or below, a factorisation costs about
# what the extra Newton iterations of stale factors do (and their step sizes: SciPy's safety
# factor shrinks with the iterations, +4 % steps at rtol 1e-9), and the factors follow every
# change of c, as SciPy's BDF. Measured (refactor_ratio 0 against 0.3, one process,
# interleaved, two runs; benchmarks/experiments/refactor_ratio_ab.py, benchmarks/measurements.md):
# the 1-D Brusselator dense at 20-100 states 0.88-1.08x, at 150-256 states
# 0.96-1.35x, banded at 3,200 / 6,400 states 1.19-1.32x; the 2-D Brusselator banded at 1,152 /
# 2,048 states 1.13-1.26x; POLLU (20 states) 0.90-1.03x; Robertson, HIRES, van der Pol 0.80-1.11x.
REFACTOR_RATIO = 0.3
REFACTOR_MIN_STATES = 128
KRYLOV_FRACTION = 0.05  # linear residual / Newton tolerance (CVODE's epslin)

# Shampine & Reichelt (1997), Table 1 (index: the order; kappa_0 unused, kappa_5 = 0: BDF5)
KAPPA = np.array([0.0, -0.1850, -1.0 / 9.0, -0.0823, -0.0415, 0.0])
GAMMA = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, MAX_ORDER + 1))])
ALPHA = (1.0 - KAPPA) * GAMMA
# the local error constant of the NDF of order k (one more entry, never used, so that the
# order k + 1 test at k = MAX_ORDER indexes inside the array)
ERROR_CONST = np.concatenate([KAPPA * GAMMA + 1.0 / np.arange(1, MAX_ORDER + 2), [0.0]])


def _u_matrix() -> np.ndarray:
    """``U = R(1)`` of the step-change rule (an involution: ``U @ U = I``)."""
    u = np.zeros((MAX_ORDER + 1, MAX_ORDER + 1))
    u[0] = 1.0
    i = np.arange(1, MAX_ORDER + 1)[:, None]
    j = np.arange(1, MAX_ORDER + 1)[None, :]
    u[1:, 1:] = (i - 1 - j) / i
    return np.cumprod(u, axis=0)


U_MATRIX = _u_matrix()


def _check() -> None:
    """The coefficients, checked when the module loads."""
    if not np.allclose(U_MATRIX @ U_MATRIX, np.eye(MAX_ORDER + 1), atol=0):
        raise ValueError("BDF: U is not an involution")
    # BDF of order k: error constant 1/(k+1) (kappa = 0); the NDFs' from the paper's Table 1
    if abs(ERROR_CONST[5] - 1.0 / 6.0) > 1e-15 or abs(ALPHA[1] - 1.185) > 1e-15:
        raise ValueError("BDF: NDF coefficients are wrong")


_check()


def _masked_sum(weights, rows):
    """``sum_i weights[i] * rows[i]`` for traced scalar weights, unrolled (a member's
    rounding does not depend on its batch)."""
    out = weights[0] * rows[0]
    for i in range(1, len(rows)):
        out = out + weights[i] * rows[i]
    return out


def rescale_differences(D, order, ratio):
    """``D`` re-sampled for a step ``ratio`` times the one it is scaled for: the same
    interpolating polynomial on the new grid (``ode15s``'s ``difRU``; SciPy's ``change_D``).
    Rows ``0..order`` change, the rest are kept.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit.kernels.bdf import ROWS, rescale_differences
    >>> line = jnp.zeros((ROWS, 1)).at[0].set(1.0).at[1].set(0.5)  # y_n = 1, y_n - y_n-1 = 0.5
    >>> float(rescale_differences(line, 1, 0.5)[1, 0])  # half the step, half the difference
    0.25
    """
    dtype = D.dtype
    n1 = MAX_ORDER + 1
    idx = jnp.arange(n1)
    live = idx <= order
    # R(ratio)[i, j] = prod_{m=1..i} (m - 1 - ratio * j) / m, row by row (unrolled cumprod)
    j = jnp.arange(n1, dtype=dtype)
    rows = [jnp.ones((n1,), dtype)]
    for m in range(1, n1):
        rows.append(rows[-1] * jnp.where(j == 0, 0.0, (m - 1 - ratio * j) / m))
    r = jnp.where(live[:, None] & live[None, :], jnp.stack(rows), 0.0)
    u = jnp.where(live[:, None] & live[None, :], jnp.asarray(U_MATRIX, dtype), 0.0)
    ru = _masked_sum([r[:, m:m + 1] for m in range(n1)], [u[m:m + 1, :] for m in range(n1)])
    # row i: sum_l ru[l, i] D[l], the same products added in the same order for every row at
    # once (one term per l, not per (l, i): a sixth of the program's operations here)
    rows = _masked_sum([ru[l][:, None] for l in range(n1)], [D[l][None, :] for l in range(n1)])
    return jnp.concatenate([jnp.where(live[:, None], rows, D[:n1]), D[n1:]])


def _interpolant(y_new, diffs, theta):
    """``y_new + sum_j diffs[j-1] prod_{m<j} x_m``, ``x_m = (theta - 1 + m) / (m + 1)``: the
    backward difference polynomial through the step's end and the ``k`` grid points before
    it, at ``t + theta h`` (rows of ``diffs`` above the order are zero), nested as Horner's
    rule: ``y_new + x_0 (D_1 + x_1 (D_2 + ...))``."""
    last = diffs.shape[0] - 1
    out = diffs[last]
    for m in range(last - 1, -1, -1):
        out = diffs[m] + ((theta + m) * (1.0 / (m + 2.0))) * out
    return y_new + (theta - 1.0) * out


class BDFMethod:
    """One attempt of the variable-order NDF/BDF for `simkit.kernels.loop.adaptive_loop`.

    The controller state carried across attempts: the differences ``D`` (``ROWS x n``), the
    step size they are scaled for, the order, the count of steps at a constant size, the
    Jacobian and the LU factors of ``I - c J`` with the ``c`` they were made for, whether
    the Jacobian is current, and counters (Jacobians, factorisations).
    """

    implicit = True
    fsal = True  # no evaluation at the new point: the loop's f is passed through (see module)
    order = MAX_ORDER
    error_order = MAX_ORDER  # unused by the loop: the step size is this method's own

    def __init__(self, linear_solver: str = "auto", preconditioner=None, krylov_dim: int = KRYLOV_DIM,
                 band: BandStructure | None = None, refactor_ratio: float | None = None):
        self.rhs_per_step = 1  # per Newton iteration; the count travels in ``work``
        self.refactor_ratio = refactor_ratio
        self.linear_solver = linear_solver
        self.preconditioner = preconditioner
        self.krylov_dim = krylov_dim
        self.band = band

    def linear_kind(self, n: int) -> str:
        """How a system of ``n`` states is solved (static): ``"dense"``, ``"banded"`` (a
        sparsity pattern was given) or ``"krylov"`` (matrix-free)."""
        if self.linear_solver != "auto":
            return self.linear_solver
        if self.band is not None:
            return "banded"
        return "krylov" if n > (DENSE_MAX_STATES if self.preconditioner is None else PRECONDITIONED_DENSE_MAX_STATES) \
            else "dense"

    def refactor_ratio_for(self, n: int) -> float:
        """How far ``c`` may move from the ``c`` of the factors before they are remade
        (static): the given ``refactor_ratio``, else `REFACTOR_RATIO` above
        `REFACTOR_MIN_STATES` states and 0 at or below."""
        if self.refactor_ratio is not None:
            return float(self.refactor_ratio)
        return REFACTOR_RATIO if n > REFACTOR_MIN_STATES else 0.0

    def krylov(self, n: int) -> bool:
        """Whether a system of ``n`` states is solved matrix-free (static)."""
        return self.linear_kind(n) == "krylov"

    # -- the Jacobian and the factors of I - c J: dense, or banded (a sparsity pattern) --

    def _jacobian(self, fun, y):
        if self.linear_kind(y.shape[0]) == "banded":
            return banded_jacobian(fun, y, self.band)
        return jax.jacfwd(fun)(y)

    def _jacobian_cost(self, n: int) -> int:
        """rhs evaluations per Jacobian (a JVP counted as one)."""
        return self.band.width if self.linear_kind(n) == "banded" else n

    def _factor(self, jac, c):
        if self.linear_kind(jac.shape[0]) == "banded":
            return banded_factor(jac, c, self.band)
        return factor(jnp.eye(jac.shape[0], dtype=jac.dtype) - c * jac)

    def _solve(self, lu, b):
        if self.linear_kind(b.shape[0]) == "banded":
            return banded_solve(lu, b, self.band)
        return solve(lu, b)

    def init(self, rhs, t0, y0, params):
        return rhs(t0, y0, params)

    def dense_zeros(self, y0):
        """Zeros shaped as a step's dense data (its differences ``D_1..D_MAX_ORDER``)."""
        return jnp.zeros((MAX_ORDER,) + y0.shape, y0.dtype)

    # -- controller state ----------------------------------------------------------------

    def controller_init(self, y0):
        n, dtype = y0.shape[0], y0.dtype
        zero = jnp.asarray(0, jnp.int32)
        if self.krylov(n):
            lin = dict(num_jac=zero, num_lin=zero, num_lin_fail=zero)
        else:
            jac0 = jax.eval_shape(lambda y: self._jacobian(lambda v: v, y), y0)
            if self.linear_kind(n) == "dense":
                lu0 = factor_zeros(n, dtype)
            else:
                lu0 = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype),
                                             jax.eval_shape(self._factor, jac0, jnp.asarray(0.0, dtype)))
            lin = dict(jac=jnp.zeros(jac0.shape, dtype), want_jac=jnp.asarray(True), jac_current=jnp.asarray(False),
                       lu=lu0, lu_c=jnp.asarray(0.0, dtype), num_jac=zero, num_lu=zero)
        return dict(D=jnp.zeros((ROWS, n), dtype), h_D=jnp.asarray(0.0, dtype), order=jnp.asarray(1, jnp.int32),
                    n_equal=zero, first=jnp.asarray(True), lin=lin)

    def extra_stats(self, ctrl) -> dict:
        """For ``Solution.stats``: the order at the end and the Jacobians with the LU
        factorisations (dense) or the linearisations with the GMRES iterations and the Newton
        iterations that an unconverged GMRES solve stopped (matrix-free)."""
        lin = ctrl["lin"]
        if "num_lin" in lin:
            return dict(final_order=ctrl["order"], num_jacobians=lin["num_jac"], num_linear_iterations=lin["num_lin"],
                        num_linear_failures=lin["num_lin_fail"])
        return dict(final_order=ctrl["order"], num_jacobians=lin["num_jac"], num_lu_decompositions=lin["num_lu"])

    # -- one attempt -------------------------------------------------------------------

    def attempt(self, rhs, t, y, f, hs, params, rtol, atol, ctrl):
        n, dtype = y.shape[0], y.dtype
        eps = jnp.finfo(dtype).eps
        k = ctrl["order"]
        h = jnp.abs(hs)
        t_new = t + hs

        # the differences for this step: started from (y0, f0) on the first step, else
        # re-sampled when the loop's step is not the one D is scaled for
        first = ctrl["first"]
        # (a step that differs from D's by the rounding of t + hs, which the loop takes as
        # the step, is D's: re-sampling at every such step kept the order from ever changing)
        resize = ~first & (jnp.abs(h - ctrl["h_D"]) > eps * (jnp.abs(t) + h))
        ratio = h / jnp.where(ctrl["h_D"] > 0, ctrl["h_D"], h)
        D = lax.cond(resize, lambda: rescale_differences(ctrl["D"], k, ratio), lambda: ctrl["D"])
        # (rows stacked, not set by ``.at[].set``: a scatter, which one XLA:CPU kernel cannot hold)
        start = jnp.concatenate([y[None], (hs * f)[None], jnp.zeros((ROWS - 2, n), dtype)])
        D = jnp.where(first, start, D)
        n_equal = jnp.where(first | resize, 0, ctrl["n_equal"])

        live = [jnp.asarray(i, jnp.int32) <= k for i in range(MAX_ORDER + 1)]
        zero = jnp.zeros((), dtype)
        gamma, alpha = jnp.asarray(GAMMA, dtype), jnp.asarray(ALPHA, dtype)
        y_predict = _masked_sum([jnp.where(live[i], 1.0, zero) for i in range(MAX_ORDER + 1)],
                                [D[i] for i in range(MAX_ORDER + 1)])
        psi = _masked_sum([jnp.where(live[i], gamma[i], zero) for i in range(1, MAX_ORDER + 1)],
                          [D[i] for i in range(1, MAX_ORDER + 1)]) / alpha[k]
        c = hs / alpha[k]
        # the iteration matrix's and D's step: D's own when this step differs from it only
        # by the rounding of t + hs (then the factors are kept, as SciPy's BDF keeps them)
        h_ref = jnp.where(first | resize, h, ctrl["h_D"])
        c_lu = lax.stop_gradient(jnp.sign(hs) * h_ref / alpha[k])
        scale = _scale(y_predict, y_predict, rtol, atol)
        newton_tol = jnp.maximum(10 * eps / rtol, jnp.minimum(0.03, jnp.sqrt(rtol)))
        zero_i = jnp.asarray(0, jnp.int32)

        def newton(linsolve):
            """At most NEWTON_MAXITER simplified Newton iterations from the predictor;
            ``linsolve(b) -> (dy, linear iterations, converged, reduced)`` solves with
            ``I - c J``. An iterative solve that did not converge fails the iteration, unless
            it is the first and reduced its residual (CVODE's rule): a correction that does
            not solve the linear system leaves the corrector's convergence test meaningless
            (a matrix-free 300-state chain came out 40x outside its tolerance, status success)."""

            def body(s):
                f_it = rhs(t_new, s["y"], params)
                dy, lin_k, lin_ok, lin_reduced = linsolve(c * f_it - psi - s["d"])
                norm = _rms(dy / scale)
                rate = norm / jnp.where(s["norm_old"] > 0, s["norm_old"], 1.0)
                # diverging, or too slow to converge in the iterations left: give up
                hopeless = (s["k"] > 0) & ((rate >= 1) | (rate ** (NEWTON_MAXITER - s["k"]) / (1 - rate) * norm
                                                          > newton_tol))
                lin_failed = ~(lin_ok | ((s["k"] == 0) & lin_reduced))
                # stalled at the rhs's rounding, far below the error test's unit: converged
                # (`simkit.kernels.radau.NEWTON_NOISE_NORM`)
                at_floor = (s["k"] > 0) & (rate >= NEWTON_STALL_RATE) & (norm <= NEWTON_NOISE_NORM) & ~lin_failed
                bad = ~jnp.isfinite(norm) | (hopeless & ~at_floor) | lin_failed
                converged = ~bad & ((norm == 0) | at_floor | ((s["k"] > 0) & (rate / (1 - rate) * norm < newton_tol)))
                return dict(y=jnp.where(bad, s["y"], s["y"] + dy), d=jnp.where(bad, s["d"], s["d"] + dy),
                            k=s["k"] + 1, norm_old=norm, converged=converged, bad=bad, lin=s["lin"] + lin_k,
                            lin_failed=lin_failed)

            def cond(s):
                return ~s["converged"] & ~s["bad"] & (s["k"] < NEWTON_MAXITER)

            s0 = dict(y=y_predict, d=jnp.zeros_like(y), k=zero_i, norm_old=jnp.asarray(0.0, dtype),
                      converged=jnp.asarray(False), bad=jnp.asarray(False), lin=zero_i, lin_failed=jnp.asarray(False))
            return lax.while_loop(cond, body, s0)

        if self.krylov(n):
            s, lin, num_rhs = self._newton_krylov(newton, rhs, t_new, y_predict, params, c_lu, scale, newton_tol)
        else:
            s, lin, num_rhs = self._newton_dense(newton, rhs, t, y, t_new, y_predict, params, c_lu, ctrl["lin"])
        converged = s["converged"]
        d = s["d"]
        y_new = jnp.where(converged, s["y"], y)

        sc = _scale(y, y_new, rtol, atol)
        err_const = jnp.asarray(ERROR_CONST, dtype)
        err_norm = _rms(err_const[k] * d / sc)
        # a failed Newton iteration: rejected (finite, so that the controller state stays meaningful)
        err_norm = jnp.where(converged, err_norm, jnp.asarray(2.0, dtype))

        # the differences after accepting: nabla^{k+1} y_{n+1} = d, nabla^{k+2} = d - D[k+1],
        # nabla^j y_{n+1} = d + sum_{l=j..k} D[l] for j <= k (SciPy's update, unrolled)
        d_next = D[k + 1]
        rows, suffix = [None] * ROWS, d
        for i in reversed(range(ROWS)):
            if i <= MAX_ORDER:
                suffix = suffix + jnp.where(live[i], D[i], 0.0)
            rows[i] = jnp.where(i <= k, suffix, jnp.where(i == k + 1, d, jnp.where(i == k + 2, d - d_next, D[i])))
        D_acc = jnp.stack(rows)
        # the step errors of orders k - 1 and k + 1 (the order test, used after k + 1 equal steps)
        err_m = jnp.where(k > 1, _rms(err_const[k - 1] * D_acc[k] / sc), jnp.inf)
        err_p = jnp.where(k < MAX_ORDER, _rms(err_const[k + 1] * D_acc[k + 2] / sc), jnp.inf)
        # dense output: the step's polynomial (rows above the order zeroed)
        diffs = jnp.stack([jnp.where(live[j], D_acc[j], 0.0) for j in range(1, MAX_ORDER + 1)])

        work = dict(converged=converged, n_iter=s["k"], D=D_acc, h=h_ref, n_equal=n_equal, err_m=err_m, err_p=err_p,
                    lin=lin, num_rhs=num_rhs)
        return y_new, err_norm, diffs, f, work

    def _newton_dense(self, newton, rhs, t, y, t_new, y_predict, params, c_lu, lin):
        """The Newton solve with the dense ``J`` and LU kept across steps: a new LU when
        ``c`` changed; a failure with a stale Jacobian asks for one more run with a fresh
        one at the predictor (SciPy's BDF). Returns the Newton state, the new linear-algebra
        state and the rhs evaluations (one per Newton iteration; per Jacobian ``n``, or the
        band's width with a sparsity pattern)."""
        n, dtype = y.shape[0], y.dtype
        one, zero = jnp.asarray(1, jnp.int32), jnp.asarray(0, jnp.int32)

        def run(r):
            jac = lax.cond(r["need_jac"],
                           lambda: lax.stop_gradient(self._jacobian(lambda yy: rhs(r["t_jac"], yy, params), r["y_jac"])),
                           lambda: r["jac"])
            lu = lax.cond(r["need_lu"], lambda: jax.tree_util.tree_map(lax.stop_gradient, self._factor(jac, c_lu)),
                          lambda: r["lu"])
            lu_c = jnp.where(r["need_lu"], c_lu, r["lu_c"])
            # factors of I - c' J for this step's c: the correction scaled by 2 / (1 + c / c')
            # (CVODE's gamrat rule; exact for J = 0 and for c |J| >> 1 on average), 1 when c' = c
            gain = 2.0 / (1.0 + c_lu / lu_c)
            s = newton(lambda b: (gain * self._solve(lu, b), zero, True, True))
            # a failure: the factors made for this c first, then (with them) a new Jacobian
            # (a NaN c, from a NaN first step when the rhs is NaN at t0, never matches: counted
            # stale it retried forever, a solve that never returned, whatever max_steps)
            stale_lu = (lu_c != c_lu) & jnp.isfinite(c_lu)
            retry = ~s["converged"] & (~r["jac_current"] | stale_lu)
            new_jac = retry & ~stale_lu
            return dict(
                jac=jac, lu=lu, lu_c=lu_c, jac_current=r["jac_current"] | new_jac,
                need_jac=new_jac, need_lu=retry,
                t_jac=t_new, y_jac=y_predict, done=~retry, s=s, iters=r["iters"] + s["k"],
                num_jac=r["num_jac"] + jnp.where(r["need_jac"], one, 0),
                num_lu=r["num_lu"] + jnp.where(r["need_lu"], one, 0),
            )

        # the first step's Jacobian at (t0, y0), as SciPy's (not "current" for the step)
        need_jac = lin["want_jac"]
        # the factors are kept while c stays within refactor_ratio of theirs (CVODE's rule);
        # 0: refactored whenever c changes, as SciPy's BDF
        old_c = lin["lu_c"]
        kept = (old_c != 0) & (jnp.abs(c_lu - old_c) <= self.refactor_ratio_for(n) * jnp.abs(old_c))
        r0 = dict(jac=lin["jac"], lu=lin["lu"], lu_c=old_c, jac_current=lin["jac_current"], need_jac=need_jac,
                  need_lu=need_jac | ~kept, t_jac=t, y_jac=y, done=jnp.asarray(False),
                  s=dict(y=y, d=jnp.zeros_like(y), k=zero, norm_old=jnp.asarray(0.0, dtype),
                         converged=jnp.asarray(False), bad=jnp.asarray(False), lin=zero, lin_failed=jnp.asarray(False)),
                  iters=zero, num_jac=zero, num_lu=zero)
        r = lax.while_loop(lambda r: ~r["done"], run, r0)
        new = dict(jac=r["jac"], want_jac=jnp.asarray(False), jac_current=r["jac_current"], lu=r["lu"], lu_c=r["lu_c"],
                   num_jac=r["num_jac"], num_lu=r["num_lu"])
        return r["s"], new, r["iters"] + r["num_jac"] * self._jacobian_cost(n)

    def _newton_krylov(self, newton, rhs, t_new, y_predict, params, c_lu, scale, newton_tol):
        """The matrix-free Newton solve: ``J`` linearised at the predictor (one rhs
        evaluation, then one Jacobian-vector product per GMRES iteration), GMRES in the
        variables scaled by ``scale``, preconditioned when a preconditioner is given.
        Returns the Newton state, the counters (this attempt's) and the rhs evaluations
        (Newton iterations plus the linearisation)."""
        n = y_predict.shape[0]
        t_l, y_l, p_l = (lax.stop_gradient(a) for a in (t_new, y_predict, params))
        sc = lax.stop_gradient(scale)
        _, jvp = jax.linearize(lambda yy: rhs(t_l, yy, p_l), y_l)

        def matvec(z):
            v = z * sc
            return (v - c_lu * jvp(v)) / sc

        if self.preconditioner is None:
            def precondition(z):
                return z
        else:
            apply = self.preconditioner(t_l, y_l, p_l, c_lu)
            out = jax.eval_shape(apply, y_l)  # checked when tracing, before anything compiles
            if getattr(out, "shape", None) != y_l.shape:
                raise ShapeError(f"BDF: the preconditioner's function must map a vector of shape {y_l.shape} "
                                 f"to one of that shape, got {getattr(out, 'shape', type(out).__name__)}")

            def precondition(z):
                return apply(z * sc) / sc

        tol = KRYLOV_FRACTION * newton_tol * jnp.sqrt(jnp.asarray(n, y_predict.dtype))

        def linsolve(b):
            z, (k, converged, reduced) = gmres(matvec, b / sc, precondition, tol=tol, max_dim=self.krylov_dim)
            return z * sc, k, converged, reduced

        s = newton(linsolve)
        one = jnp.asarray(1, jnp.int32)
        # each GMRES iteration is one Jacobian-vector product: counted as an rhs evaluation
        return s, dict(num_jac=one, num_lin=s["lin"], num_lin_fail=s["lin_failed"].astype(jnp.int32)), \
            s["k"] + 1 + s["lin"]

    # -- step size and order -----------------------------------------------------------

    def propose(self, err_norm, h, ctrl, accepted, last_rejected, work):
        dtype = h.dtype
        k = ctrl["order"]
        kf = k.astype(dtype)
        safety = 0.9 * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + work["n_iter"].astype(dtype))
        err = err_norm
        # rejected by the error test
        fac_rej = jnp.maximum(MIN_FACTOR, safety * jnp.maximum(err, 1e-10) ** (-1.0 / (kf + 1)))
        # accepted: after k + 1 steps at this size, the order among k - 1, k, k + 1 that
        # allows the largest step (Shampine & Reichelt, section 2.3; SciPy's BDF)
        n_equal = work["n_equal"] + 1
        reconsider = n_equal >= k + 1

        def allowed(e, q):
            return jnp.where(e > 0, e ** (-1.0 / q), jnp.inf)

        f_m = jnp.where(jnp.isfinite(work["err_m"]), allowed(work["err_m"], kf), 0.0)
        f_0 = allowed(err, kf + 1)
        f_p = jnp.where(jnp.isfinite(work["err_p"]), allowed(work["err_p"], kf + 2), 0.0)
        best = jnp.maximum(f_m, jnp.maximum(f_0, f_p))
        delta = jnp.where(f_m >= best, -1, jnp.where(f_0 >= best, 0, 1)).astype(jnp.int32)
        fac_acc = jnp.where(reconsider, jnp.minimum(MAX_FACTOR, safety * best), 1.0)
        order_acc = jnp.where(reconsider, k + delta, k)
        # Newton failed (with a current Jacobian): halve the step
        fac = jnp.where(~work["converged"], 0.5, jnp.where(accepted, fac_acc, fac_rej))
        h_new = h * fac

        def pick(a, b):
            return jnp.where(accepted, a, b)

        new = dict(
            D=pick(work["D"], ctrl["D"]), h_D=pick(work["h"], ctrl["h_D"]), order=pick(order_acc, k),
            n_equal=pick(jnp.where(reconsider, 0, n_equal), 0).astype(jnp.int32),
            first=ctrl["first"] & ~accepted, lin=self._next_lin(ctrl["lin"], work["lin"], accepted),
        )
        return h_new, new

    @staticmethod
    def _next_lin(old, new, accepted):
        """The linear-algebra state after an attempt: the counters summed; the dense
        Jacobian and LU kept, the Jacobian no longer current once a step is accepted."""
        out = {k: old[k] + new[k] for k in ("num_jac", "num_lu", "num_lin", "num_lin_fail") if k in old}
        if "jac" in old:
            out.update(jac=new["jac"], want_jac=new["want_jac"], jac_current=jnp.where(accepted, False, new["jac_current"]),
                       lu=new["lu"], lu_c=new["lu_c"])
        return out

    # -- dense output ------------------------------------------------------------------

    def keep(self, y, f, y_new, dense, f_new):
        return dict(y_new=y_new, diffs=dense)

    def expand(self, rhs, params, t, hs, kept, rtol, atol):
        return dict(t=t, hs=hs, y_new=kept["y_new"], dense=kept["diffs"])

    def interpolate(self, rhs, params, seg, theta):
        return _interpolant(seg["y_new"], seg["dense"], theta)
