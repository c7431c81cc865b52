"""Optimisers as objects, and the one loop that runs them within limits.

jaxopt (a declared dependency) drives `LevenbergMarquardt`, `GaussNewton`, `LBFGS` and
`LBFGSB`; it is imported here only, when a fit runs, with its deprecation notice silenced (it
announces on import that it is no longer maintained). optimistix drives `BFGS` (the default
for likelihoods) and `Optimistix`, which wraps any optimistix least-squares or minimisation
solver.

**The extension contract** (`AbstractDriver`): ``init(fn, x0, lower, upper) -> state``,
``step(fn, state, lower, upper) -> state`` (one iteration), ``params(state)``,
``converged(state)``, ``failed(state)``, ``iterations(state)``, ``evaluations(state)`` (of
``fn``), and ``default_max_iterations()``. ``fn`` returns residuals (``residual = True``) or a
scalar loss. Everything is jittable and vmappable (multi-start runs under ``jax.vmap``).
`minimise` runs the steps in one ``lax.while_loop`` until the optimiser converges or fails, or
a limit on iterations or on evaluations of ``fn`` is reached, and says which (`FitStatus`).
"""

from __future__ import annotations

import enum
import warnings
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp


def _jaxopt():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import jaxopt
    return jaxopt


class FitStatus(enum.IntEnum):
    """How one start of a fit ended. Only `CONVERGED` is a success."""

    CONVERGED = 0
    MAX_ITERATIONS = 1
    MAX_EVALUATIONS = 2
    OPTIMIZER_FAILED = 3
    NONFINITE = 4


def describe(status: int, *, max_iterations: int, max_evaluations: int, max_steps: int) -> str:
    """A sentence for a `FitStatus` code, naming the limit that was reached."""
    status = FitStatus(int(status))
    if status == FitStatus.CONVERGED:
        return "converged"
    if status == FitStatus.MAX_ITERATIONS:
        return (f"stopped at the iteration limit (max_iterations={max_iterations}) before converging: "
                "raise max_iterations, or start closer")
    if status == FitStatus.MAX_EVALUATIONS:
        return (f"stopped at the evaluation limit (max_evaluations={max_evaluations} evaluations of the "
                "cost) before converging: the line search struggled; raise max_evaluations, or start closer")
    if status == FitStatus.OPTIMIZER_FAILED:
        return "the optimiser stopped without converging (it reported a failure, e.g. a failed line search)"
    return (f"the cost is not finite at the end: the ODE solve fails there (max_steps={max_steps} steps per "
            "solve) or the model gives NaN")


class Outcome(NamedTuple):
    """One run of `minimise`: the final point, the iterations and evaluations of ``fn`` it
    took, and its `FitStatus` code."""

    x: Any
    iterations: Any
    evaluations: Any
    status: Any


def minimise(optimizer: AbstractDriver, fn: Callable, x0: Any, lower: Any, upper: Any, *,
             max_iterations: int, max_evaluations: int) -> Outcome:
    """Run ``optimizer`` on ``fn`` from ``x0`` until it converges or fails, or until
    ``max_iterations`` iterations or ``max_evaluations`` evaluations of ``fn`` are spent
    (checked between iterations: one iteration's line search may pass the evaluation limit
    by its own length). Jittable and vmappable."""

    def going(state):
        return (~optimizer.converged(state) & ~optimizer.failed(state)
                & (optimizer.iterations(state) < max_iterations) & (optimizer.evaluations(state) < max_evaluations))

    state = optimizer.init(fn, x0, lower, upper)
    dynamic, static = eqx.partition(state, eqx.is_array)  # the carry: array leaves only

    def body(dynamic):
        new = optimizer.step(fn, eqx.combine(dynamic, static), lower, upper)
        return eqx.partition(new, eqx.is_array)[0]

    dynamic = jax.lax.while_loop(lambda d: going(eqx.combine(d, static)), body, dynamic)
    state = eqx.combine(dynamic, static)
    x = optimizer.params(state)
    iterations, evaluations = optimizer.iterations(state), optimizer.evaluations(state)
    status = jnp.where(
        optimizer.converged(state), int(FitStatus.CONVERGED),
        jnp.where(~jnp.all(jnp.isfinite(x)), int(FitStatus.NONFINITE),
                  jnp.where(optimizer.failed(state), int(FitStatus.OPTIMIZER_FAILED),
                            jnp.where(iterations >= max_iterations, int(FitStatus.MAX_ITERATIONS),
                                      int(FitStatus.MAX_EVALUATIONS)))))
    return Outcome(x, iterations, evaluations, status)


def value_and_grad(fn: Callable, n_params: int) -> Callable:
    """``(value, gradient)``: forward mode for a few parameters (one pass of forward
    sensitivities through the solver, cheaper than reverse's), reverse mode for many."""
    if n_params <= 16:
        def both(x):
            value, tangents = jax.vmap(lambda v: jax.jvp(fn, (x,), (v,)), out_axes=(None, 0))(jnp.eye(x.shape[0], dtype=x.dtype))
            return value, tangents
        return both
    return jax.value_and_grad(fn)


class AbstractDriver(eqx.Module):
    """An optimiser: see the module's docstring for the contract. ``residual``: ``fn``
    returns residuals (else a scalar loss); ``bounded``: the optimiser enforces box bounds
    on the natural parameters itself (else simkit's smooth transforms do)."""

    residual: ClassVar[bool]
    bounded: ClassVar[bool] = False

    def default_max_iterations(self) -> int:
        raise NotImplementedError

    def init(self, fn: Callable, x0: Any, lower: Any, upper: Any) -> Any:
        raise NotImplementedError

    def step(self, fn: Callable, state: Any, lower: Any, upper: Any) -> Any:
        raise NotImplementedError

    def params(self, state: Any) -> Any:
        raise NotImplementedError

    def converged(self, state: Any) -> Any:
        raise NotImplementedError

    def failed(self, state: Any) -> Any:
        return jnp.asarray(False)

    def iterations(self, state: Any) -> Any:
        raise NotImplementedError

    def evaluations(self, state: Any) -> Any:
        raise NotImplementedError

    def run(self, fn: Callable, x0: Any, lower: Any = None, upper: Any = None) -> tuple[Any, Any, Any]:
        """``(x, iterations, converged)`` within the default iteration limit."""
        out = minimise(self, fn, x0, lower, upper, max_iterations=self.default_max_iterations(),
                       max_evaluations=2**31 - 1)
        return out.x, out.iterations, out.status == int(FitStatus.CONVERGED)


# jaxopt ---------------------------------------------------------------------------------------
class _JaxoptDriver(AbstractDriver):
    """The state is ``(x, jaxopt state)``; one iteration is one ``update``."""

    def _solver(self, fn: Callable, n_params: int) -> Any:
        raise NotImplementedError

    def _bounds(self, lower: Any, upper: Any) -> dict:
        return {}

    def init(self, fn, x0, lower, upper):
        solver, bounds = self._solver(fn, x0.shape[0]), self._bounds(lower, upper)
        state = (x0, solver.init_state(x0, **bounds))
        # jaxopt starts some fields as Python numbers that its update returns as arrays of
        # another type: start them as what an iteration returns (one while_loop carry)
        after = jax.eval_shape(lambda s: tuple(solver.update(*s, **bounds)), state)
        return jax.tree_util.tree_map(lambda a, b: jnp.asarray(a, b.dtype), state, after)

    def step(self, fn, state, lower, upper):
        x, inner = state
        return tuple(self._solver(fn, x.shape[0]).update(x, inner, **self._bounds(lower, upper)))

    def params(self, state):
        return state[0]

    def iterations(self, state):
        return state[1].iter_num

    def evaluations(self, state):  # one evaluation (residuals and Jacobian) per iteration, and one to start
        return state[1].iter_num + 1


class LevenbergMarquardt(_JaxoptDriver):
    """jaxopt's Levenberg-Marquardt on residuals (Jacobian by forward mode). Converged: the
    Gauss-Newton model of the cost predicts no decrease above ``ftol`` times the cost
    (``0.5 g^T (J^T J)^+ g <= ftol F``, MINPACK's relative-reduction test, scale-free: it
    stops once the optimum is reached to the accuracy the solves allow), or Madsen-Nielsen's
    tests, a step below ``xtol (|x| + xtol)`` or a gradient below ``gtol`` (largest
    component)."""

    maxiter: int = 200
    xtol: float = 1e-12
    gtol: float = 1e-10
    ftol: float = 1e-10
    residual = True

    def default_max_iterations(self) -> int:
        return self.maxiter

    def _solver(self, fn, n_params):
        return _jaxopt().LevenbergMarquardt(residual_fun=fn, maxiter=self.maxiter, xtol=self.xtol, gtol=self.gtol,
                                            stop_criterion="madsen-nielsen", materialize_jac=True,
                                            solver="cholesky", implicit_diff=False)

    def converged(self, state):
        x, inner = state
        g = inner.gradient
        predicted = 0.5 * g @ (jnp.linalg.pinv(inner.jtj, hermitian=True) @ g)  # the Gauss-Newton step's gain
        small_gain = predicted <= self.ftol * inner.value
        step_bound = self.xtol * (jnp.linalg.norm(x) + self.xtol)
        small_step = (inner.iter_num > 0) & (jnp.linalg.norm(inner.delta) <= step_bound)
        small_gradient = jnp.max(jnp.abs(g)) <= self.gtol
        return small_gain | small_step | small_gradient


class GaussNewton(_JaxoptDriver):
    """jaxopt's Gauss-Newton on residuals (no damping: from a poor start, prefer
    `LevenbergMarquardt`). Converged: a step of norm below ``tol``."""

    maxiter: int = 100
    tol: float = 1e-12
    residual = True

    def default_max_iterations(self) -> int:
        return self.maxiter

    def _solver(self, fn, n_params):
        return _jaxopt().GaussNewton(residual_fun=fn, maxiter=self.maxiter, tol=self.tol, implicit_diff=False)

    def converged(self, state):
        return state[1].error <= self.tol


class LBFGS(_JaxoptDriver):
    """jaxopt's L-BFGS (zoom line search) on a scalar loss. Converged: a gradient of norm
    below ``tol``. Its first step is the unscaled negative gradient, and it keeps curvature
    pairs with ``s.y <= 0`` (then a search direction can point uphill and the line search
    spends its 30 evaluations): `BFGS` is the default for likelihoods."""

    maxiter: int = 300
    tol: float = 1e-7
    residual = False

    def default_max_iterations(self) -> int:
        return self.maxiter

    def _solver(self, fn, n_params):
        return _jaxopt().LBFGS(fun=value_and_grad(fn, n_params), value_and_grad=True, maxiter=self.maxiter,
                               tol=self.tol, implicit_diff=False)

    def converged(self, state):
        return state[1].error <= self.tol

    def evaluations(self, state):
        return state[1].num_fun_eval


class LBFGSB(_JaxoptDriver):
    """jaxopt's L-BFGS-B: a scalar loss with box bounds on the natural parameters.
    Converged: a projected gradient of norm below ``tol``."""

    maxiter: int = 300
    tol: float = 1e-7
    residual = False
    bounded = True

    def default_max_iterations(self) -> int:
        return self.maxiter

    def converged(self, state):
        return state[1].error <= self.tol

    def evaluations(self, state):
        return state[1].num_fun_eval

    def _solver(self, fn, n_params):
        return _jaxopt().LBFGSB(fun=value_and_grad(fn, n_params), value_and_grad=True, maxiter=self.maxiter,
                                tol=self.tol, implicit_diff=False)

    def _bounds(self, lower, upper):
        return {"bounds": (lower, upper)}


# optimistix ------------------------------------------------------------------------------------
class _OptxState(eqx.Module):
    y: Any
    inner: Any  # the optimistix solver's state, array leaves (the rest is static)
    steps: Any
    done: Any
    result: Any


def _optx_fn(fn: Callable) -> Callable:
    return lambda y, args: (fn(y), None)


def _optx_init(solver: Any, fn: Callable, x0: Any) -> Any:
    import optimistix as optx

    f = _optx_fn(fn)
    f_struct = jax.eval_shape(fn, x0)
    inner = solver.init(f, x0, None, {}, f_struct, None, frozenset())
    done, result = solver.terminate(f, x0, None, {}, inner, frozenset())
    return _OptxState(x0, inner, jnp.asarray(0), done, optx.RESULTS.where(jnp.all(jnp.isfinite(x0)), result,
                                                                      optx.RESULTS.nonfinite))


def _optx_step(solver: Any, fn: Callable, state: _OptxState) -> _OptxState:
    import optimistix as optx

    f = _optx_fn(fn)
    y, inner, _ = solver.step(f, state.y, None, {}, state.inner, frozenset())
    done, result = solver.terminate(f, state.y, None, {}, inner, frozenset())
    result = optx.RESULTS.where(jnp.all(jnp.isfinite(y)), result, optx.RESULTS.nonfinite)
    return _OptxState(y, inner, state.steps + 1, done, result)


def _optx_converged(state: _OptxState) -> Any:
    import optimistix as optx

    return state.done & (state.result == optx.RESULTS.successful)


def _optx_failed(state: _OptxState) -> Any:
    import optimistix as optx

    return state.result != optx.RESULTS.successful


class _OptimistixDriver(AbstractDriver):
    """The driver of an optimistix solver, given by `_optx` (one step = one optimistix step)."""

    def _optx(self) -> Any:
        raise NotImplementedError

    def init(self, fn, x0, lower, upper):
        return _optx_init(self._optx(), fn, x0)

    def step(self, fn, state, lower, upper):
        return _optx_step(self._optx(), fn, state)

    def params(self, state):
        return state.y

    def converged(self, state):
        return _optx_converged(state)

    def failed(self, state):
        return _optx_failed(state)

    def iterations(self, state):
        return state.steps

    def evaluations(self, state):
        return state.steps


class BFGS(_OptimistixDriver):
    """optimistix's BFGS on a scalar loss (the default for likelihoods): a backtracking
    Armijo line search, so the first step shrinks until it decreases the loss enough, and
    no update from a curvature pair with ``s.y <= 0``. Converged: successive accepted
    points and losses agree to ``rtol``/``atol`` (optimistix's Cauchy test). An iteration is
    one step of optimistix (one evaluation of the loss and its gradient; a rejected trial
    point counts)."""

    rtol: float = 1e-8
    atol: float = 1e-8
    max_steps: int = 512
    residual = False

    def default_max_iterations(self) -> int:
        return self.max_steps

    def _optx(self) -> Any:
        import optimistix as optx

        return optx.BFGS(rtol=self.rtol, atol=self.atol)


class Optimistix(_OptimistixDriver):
    """Any optimistix solver: a least-squares one (``optimistix.LevenbergMarquardt(rtol,
    atol)``, residuals) or a minimiser (``optimistix.BFGS(rtol, atol)``, scalar loss). An
    iteration is one optimistix step (one evaluation of ``fn``)."""

    solver: Any
    max_steps: int = 256

    @property
    def residual(self) -> bool:  # type: ignore[override]
        import optimistix as optx

        return isinstance(self.solver, optx.AbstractLeastSquaresSolver)

    def default_max_iterations(self) -> int:
        return self.max_steps

    def _optx(self) -> Any:
        return self.solver

