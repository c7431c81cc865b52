"""Solver choice for the diffrax engine: defaults, initial step, Newton tolerances.

Solvers are diffrax solver objects (``diffrax.Tsit5()``, ``diffrax.Kvaerno5()``, ...).
This module holds the two pieces simkit adds around them:

* `initial_step`: Hairer–Wanner's starting step-size estimate (Hairer, Nørsett & Wanner,
  *Solving ODEs I*, 2nd ed., §II.4, "Starting step size"), computed inside the compiled
  program so that it follows traced ``t0``, ``y0``, ``params`` and tolerances.
* `newton_tolerances`: tolerances for an implicit solver's Newton iteration, kept apart
  from the step controller's (see its docstring).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np

if TYPE_CHECKING:  # imported where used: `import simkit` does not pay for them (0.12 s)
    import diffrax as dfx
    import lineax as lx


def diffrax_module():
    """diffrax, imported on first use: `import simkit` does not pay for it (0.14 s) until a
    diffrax solver is chosen."""
    import diffrax

    return diffrax


def is_diffrax_solver(obj: Any, *, cls: bool = False) -> bool:
    """Whether ``obj`` is a diffrax solver object (with ``cls``, a solver class), without
    importing diffrax: an object of a diffrax class exists only once diffrax is imported."""
    dfx = sys.modules.get("diffrax")
    if dfx is None:
        return False
    if cls:
        return isinstance(obj, type) and issubclass(obj, dfx.AbstractSolver)
    return isinstance(obj, dfx.AbstractSolver)


def krylov_linear_solver() -> lx.AbstractLinearSolver:
    """GMRES on Jacobian-vector products: the Newton linear solve without forming ``J``."""
    import lineax as lx

    return lx.GMRES(rtol=1e-8, atol=1e-12, restart=30, stagnation_iters=30, max_steps=300)


def default_solver(stiff: bool, matrix_free: bool = False) -> dfx.AbstractSolver:
    """The solver simkit picks from a model's stiffness hint: Tsit5 or Kvaerno5; with
    ``matrix_free``, Kvaerno5 whose Newton iteration solves with `krylov_linear_solver`
    (for large systems: a method-of-lines PDE on a 256x256 grid has 65,536 states and a
    dense Jacobian of 34 GB)."""
    if not stiff:
        return diffrax_module().Tsit5()
    if matrix_free:
        import optimistix as optx

        # Newton, not diffrax's VeryChord: a chord iteration keeps a factorisation, and a
        # Krylov solver's state (the linearised function) cannot be carried that way
        return diffrax_module().Kvaerno5(root_finder=optx.Newton(rtol=1e-3, atol=1e-6, norm=optx.rms_norm,
                                                                 linear_solver=krylov_linear_solver()))
    return diffrax_module().Kvaerno5()


def is_implicit(solver: Any) -> bool:
    """True for diffrax solvers that run a nonlinear (Newton) solve each step."""
    return is_diffrax_solver(solver) and isinstance(solver, diffrax_module().AbstractImplicitSolver)


def solver_order(solver: Any) -> int:
    """Order of the solver's main method (used by the initial-step formula)."""
    try:
        return int(solver.order(diffrax_module().ODETerm(lambda t, y, a: y)))
    except Exception:  # solvers without a declared order (rare): a safe middle value
        return 4


def _rms(x: Any) -> Any:
    # entries whose squares could overflow are scaled by the largest first (a state at 0 with
    # a slope of 1e200 and atol 1e-10: the squares overflowed, the first step was NaN and the
    # solve stopped at t0 as "non-finite" where SciPy's RK45 starts); otherwise the same bits
    n = x.shape[0]
    biggest = jnp.max(jnp.abs(x))
    s = jnp.where((biggest > jnp.sqrt(jnp.finfo(jnp.real(x).dtype).max) / n) & jnp.isfinite(biggest), biggest, 1.0)
    x = x / s.astype(x.dtype)
    if n <= 64:  # unrolled adds: rounding independent of the batch (see kernels)
        total = x[0] * x[0]
        for i in range(1, n):
            total = total + x[i] * x[i]
        return s * jnp.sqrt(total / n)
    return s * jnp.sqrt(jnp.mean(jnp.square(x)))


def initial_step(rhs, t0, t1, y0, params, rtol, atol, order: int) -> Any:
    """Hairer–Wanner starting step, signed like ``t1 - t0`` and at most ``|t1 - t0|`` (when
    that is not zero).

    Two right-hand-side evaluations. With ``sc = atol + rtol*|y0|``:
    ``h0 = 0.01 * ||y0/sc|| / ||f0/sc||``; an explicit Euler step of ``h0`` estimates the
    second derivative ``d2``; ``h1 = (0.01 / max(||f0/sc||, d2))**(1/(order+1))``;
    the step is ``min(100*h0, h1)``.
    """
    # an empty span (t0 == t1, known only at run time under jit or vmap) gets the estimate
    # without the clip: a solver given a zero step (diffrax) fails or differentiates to NaN
    span = jnp.abs(t1 - t0)
    span = jnp.where(span > 0, span, jnp.inf)
    direction = jnp.where(t1 >= t0, 1.0, -1.0).astype(span.dtype)
    # the fallback steps when the state or its slope is ~0 are Hairer's absolute 1e-6 (never
    # relative to the span: a span of 1e11 must not start with a step of 1e5), raised to
    # what still moves t at |t0| (100 eps |t0|); the step is clipped to the span below
    ref = jnp.maximum(1.0, 100 * jnp.finfo(span.dtype).eps * jnp.abs(t0) / 1e-6)
    f0 = rhs(t0, y0, params)
    scale = atol + rtol * jnp.abs(y0)
    d0 = _rms(y0 / scale)
    d1 = _rms(f0 / scale)
    tiny = (d0 < 1e-5) | (d1 < 1e-5)
    h0 = jnp.where(tiny, 1e-6 * ref, 0.01 * d0 / jnp.where(tiny, 1.0, d1))
    h0 = jnp.minimum(h0, span)
    f1 = rhs(t0 + direction * h0, y0 + direction * h0 * f0, params)
    d2 = _rms((f1 - f0) / scale) / h0
    dmax = jnp.maximum(d1, d2)
    h1 = jnp.where(
        dmax <= 1e-15,
        jnp.maximum(1e-6 * ref, h0 * 1e-3),
        (0.01 / jnp.where(dmax <= 1e-15, 1.0, dmax)) ** (1.0 / (order + 1)),
    )
    h = jnp.minimum(jnp.minimum(100 * h0, h1), span)
    return direction * h


def newton_tolerances(rtol: Any, atol: Any) -> tuple[Any, Any]:
    """Tolerances for an implicit solver's Newton iteration, from the step tolerances.

    diffrax's implicit Runge–Kutta methods solve for the stage *derivatives* and, by
    default, test Newton convergence with the step controller's ``rtol``/``atol``. At
    tight tolerances that test sits at the rounding noise of ``f`` on problems with large
    cancelling terms (quasi-steady species): Newton fails to "converge", steps are
    rejected and the step size collapses. But a Newton iterate only has to be accurate to
    a fraction of what the step's error control accepts (Hairer & Wanner, *Solving ODEs
    II*, §IV.8), and a stage-derivative error ``df`` moves the state by only
    ``h * gamma * df``. We use Radau5's stopping fraction
    ``fnewt = max(10*eps/rtol, min(0.03, sqrt(rtol)))`` as the Newton *relative*
    tolerance and keep the controller's ratio of absolute to relative tolerance:
    ``rtol_N = fnewt``, ``atol_N = fnewt * atol / rtol``.

    Measured with Kvaerno5 (the validation matrix's models and tolerances, rtol 1e-10, 41
    save points, SciPy Radau rtol 1e-12 reference), default Newton tolerances against these:
    Robertson 5,108 -> 465 steps but max error 17.6 -> 365 x tol; Oregonator 56,275 ->
    4,283 steps, 180 x tol either way; van der Pol mu = 1000 23,658 -> 2,834 steps, 427 ->
    751 x tol. Far fewer steps, not the same accuracy: where accuracy matters use simkit's
    stiff kernels (Rodas5P: 3.3, 1.5 and 2.0 x tol on these three), which simkit picks for
    real states.
    """
    if isinstance(rtol, (int, float)) and isinstance(atol, (int, float)):
        # host numbers give host numbers, so the solver object stays hashable (static)
        fnewt = max(10 * float(np.finfo(np.float64).eps) / rtol, min(0.03, rtol**0.5))
        return fnewt, fnewt * atol / rtol
    eps = jnp.finfo(jnp.result_type(rtol, float)).eps
    fnewt = jnp.maximum(10 * eps / rtol, jnp.minimum(0.03, jnp.sqrt(rtol)))
    return fnewt, fnewt * atol / rtol


def with_newton_tolerances(solver: Any, rtol: Any, atol: Any) -> Any:
    """``solver`` with its root finder replaced by a VeryChord using `newton_tolerances`."""
    import optimistix as optx

    n_rtol, n_atol = newton_tolerances(rtol, atol)
    old = getattr(solver, "root_finder", None)
    if isinstance(old, optx.Newton):  # matrix-free default: keep Newton and its linear solver
        root_finder = optx.Newton(rtol=n_rtol, atol=n_atol, norm=optx.rms_norm, linear_solver=old.linear_solver)
    else:
        root_finder = diffrax_module().VeryChord(rtol=n_rtol, atol=n_atol, norm=optx.rms_norm)
    return eqx.tree_at(lambda s: s.root_finder, solver, root_finder)
