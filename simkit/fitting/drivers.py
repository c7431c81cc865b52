"""Optimisers as objects, and the one loop that runs them within limits.

`LBFGSB` and `BoundedLevenbergMarquardt` run `simkit.fitting.bounded` (projected bounds,
every start of a fit in one call). jaxopt (a declared dependency) drives `LevenbergMarquardt`,
`GaussNewton` and `LBFGS`; it is imported here only, when a fit runs, with its deprecation notice silenced (it
announces on import that it is no longer maintained). optimistix drives `BFGS` (the default
for likelihoods) and `Optimistix`, which wraps any optimistix least-squares or minimisation
solver.

**The extension contract** (`AbstractDriver`): ``init(fn, x0, lower, upper) -> state``,
``step(fn, state, lower, upper) -> state`` (one iteration), ``params(state)``,
``converged(state)``, ``failed(state)``, ``iterations(state)``, ``evaluations(state)`` (of
``fn``), and ``default_max_iterations()``; optionally ``residuals_and_jacobian(state)``
(what a least-squares optimiser keeps at its point, which spares `simkit.fit` compiling the
Jacobian again for the uncertainties). ``fn`` returns residuals (``residual = True``) or a
scalar loss. Everything is jittable and vmappable (multi-start runs under ``jax.vmap``).
`minimise` runs the steps in one ``lax.while_loop`` until the optimiser converges or fails, or
a limit on iterations or on evaluations of ``fn`` is reached, and says which (`FitStatus`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp

from .bounded import BoundedResult, least_squares_bounded, minimize_bounded
from .bounded import FitStatus as FitStatus
from .bounded import value_and_grad as value_and_grad


def _jaxopt():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import jaxopt
    return jaxopt


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
    took, its `FitStatus` code, and where the optimiser keeps them (see
    `AbstractDriver.residuals_and_jacobian`), the residuals and their Jacobian at ``x``
    (else None)."""

    x: Any
    iterations: Any
    evaluations: Any
    status: Any
    residuals: Any = None
    jacobian: Any = None


def minimise(optimizer: AbstractDriver, fn: Callable, x0: Any, lower: Any, upper: Any, *,
             max_iterations: int, max_evaluations: int) -> Outcome:
    """Run ``optimizer`` on ``fn`` from ``x0`` until it converges or fails, or until
    ``max_iterations`` iterations or ``max_evaluations`` evaluations of ``fn`` are spent
    (checked between iterations: one iteration's line search may pass the evaluation limit
    by its own length). A start where ``fn`` is not finite (a failed solve) is not
    iterated: nothing to descend (`FitStatus.MAX_ITERATIONS` after 0 iterations). Jittable
    and vmappable."""

    def going(state):
        return (~optimizer.converged(state) & ~optimizer.failed(state)
                & (optimizer.iterations(state) < max_iterations) & (optimizer.evaluations(state) < max_evaluations))

    fn = _once_per_value(fn)
    state = optimizer.init(fn, x0, lower, upper)
    # most optimisers evaluate fn at x0 in init: the same value, not another solve
    max_iterations = jnp.where(jnp.all(jnp.isfinite(fn(x0))), max_iterations, 0)
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
    kept = optimizer.residuals_and_jacobian(state)
    return Outcome(x, iterations, evaluations, status, *(kept if kept is not None else (None, None)))


def _once_per_value(fn: Callable) -> Callable:
    """``fn`` traced once per argument: a second call with the same array or tracer, in the
    same trace, returns the first call's result instead of tracing, compiling and running
    another copy of the solves inside ``fn``. jaxopt's Levenberg-Marquardt evaluates the
    residuals at an accepted point twice per iteration (to test the step, then again after
    accepting it); with this, once. Where JAX's current trace cannot be read (its module
    moved), nothing is shared."""
    from jax._src import core

    def current():
        return getattr(getattr(core, "trace_ctx", None), "trace", None)

    memo: list = []

    def once(x):
        trace = current()
        for arg, at, out in memo:
            if trace is not None and arg is x and at is trace:
                return out
        out = fn(x)
        memo[:] = [(x, trace, out)] + memo[:3]  # the last four calls
        return out

    return once


class AbstractDriver(eqx.Module):
    """An optimiser for `simkit.fit` (``optimizer=``), and the contract a new one implements.

    ``init(fn, x0, lower, upper) -> state``, ``step(fn, state, lower, upper) -> state`` (one
    iteration), ``params(state)``, ``converged(state)``, ``failed(state)``,
    ``iterations(state)``, ``evaluations(state)`` (of ``fn``) and
    ``default_max_iterations()``; everything jittable and vmappable (multi-start fits run
    under ``jax.vmap``). simkit runs the steps in one ``lax.while_loop`` until the
    optimiser converges or fails, or a limit on iterations or evaluations is reached.

    Attributes
    ----------
    residual : bool
        ``fn`` returns residuals (cost ``0.5 * sum(r**2)``); else a scalar loss.
    bounded : bool
        The optimiser enforces box bounds on the natural parameters itself (else simkit's
        smooth transforms do).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> residuals = lambda x: x - jnp.array([1.0, 2.0])
    >>> from simkit.fitting import LevenbergMarquardt
    >>> x, iterations, converged = LevenbergMarquardt().run(residuals, jnp.zeros(2))
    >>> x.round(6).tolist(), bool(converged)
    ([1.0, 2.0], True)
    """

    residual: ClassVar[bool]
    bounded: ClassVar[bool] = False

    def default_max_iterations(self) -> int:
        """The iteration limit of a fit that gives no ``max_iterations``.

        Returns
        -------
        int
            The optimiser's own limit (e.g. ``maxiter``, ``max_steps``).

        Raises
        ------
        NotImplementedError
            On the abstract class.

        Examples
        --------
        >>> from simkit.fitting import BFGS, LevenbergMarquardt
        >>> LevenbergMarquardt().default_max_iterations(), BFGS().default_max_iterations()
        (200, 512)
        """
        raise NotImplementedError

    def init(self, fn: Callable, x0: Any, lower: Any, upper: Any) -> Any:
        """The optimiser's state at the start (evaluates ``fn`` once).

        Parameters
        ----------
        fn : callable
            ``fn(x)``: residuals (`residual`) or a scalar loss, of ``x`` of shape
            ``(n_params,)``.
        x0 : jax.Array
            The start, ``(n_params,)``.
        lower, upper : jax.Array or None
            Box bounds on ``x`` (used by `bounded` optimisers only).

        Returns
        -------
        pytree
            The state; its array leaves are the ``while_loop`` carry.

        Raises
        ------
        NotImplementedError
            On the abstract class.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.fitting import LevenbergMarquardt
        >>> opt, fn = LevenbergMarquardt(), lambda x: x - jnp.array([1.0, 2.0])  # residuals
        >>> state = opt.init(fn, jnp.zeros(2), None, None)
        >>> int(opt.iterations(state)), bool(opt.converged(state))
        (0, False)
        """
        raise NotImplementedError

    def step(self, fn: Callable, state: Any, lower: Any, upper: Any) -> Any:
        """One iteration.

        Parameters
        ----------
        fn : callable
            As for `init`.
        state : pytree
            The current state.
        lower, upper : jax.Array or None
            Box bounds, as for `init`.

        Returns
        -------
        pytree
            The next state (the same structure and dtypes).

        Raises
        ------
        NotImplementedError
            On the abstract class.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.fitting import LevenbergMarquardt
        >>> opt, fn = LevenbergMarquardt(), lambda x: x - jnp.array([1.0, 2.0])  # residuals
        >>> state = opt.init(fn, jnp.zeros(2), None, None)
        >>> state = opt.step(fn, state, None, None)
        >>> opt.params(state).round(3).tolist(), int(opt.iterations(state))
        ([1.0, 2.0], 1)
        """
        raise NotImplementedError

    def params(self, state: Any) -> Any:
        """The current point.

        Parameters
        ----------
        state : pytree
            A state of `init`/`step`.

        Returns
        -------
        jax.Array
            ``x``, shape ``(n_params,)``.

        Raises
        ------
        NotImplementedError
            On the abstract class.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.fitting import LevenbergMarquardt
        >>> opt, fn = LevenbergMarquardt(), lambda x: x - jnp.array([1.0, 2.0])  # residuals
        >>> state = opt.init(fn, jnp.zeros(2), None, None)
        >>> opt.params(state).tolist()
        [0.0, 0.0]
        """
        raise NotImplementedError

    def converged(self, state: Any) -> Any:
        """Whether the optimiser's convergence test passes.

        Parameters
        ----------
        state : pytree
            A state of `init`/`step`.

        Returns
        -------
        jax.Array
            A boolean scalar.

        Raises
        ------
        NotImplementedError
            On the abstract class.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.fitting import LevenbergMarquardt
        >>> opt, fn = LevenbergMarquardt(), lambda x: x - jnp.array([1.0, 2.0])  # residuals
        >>> state = opt.init(fn, jnp.zeros(2), None, None)
        >>> for _ in range(3):
        ...     state = opt.step(fn, state, None, None)
        >>> bool(opt.converged(state))
        True
        """
        raise NotImplementedError

    def failed(self, state: Any) -> Any:
        """Whether the optimiser reported a failure (default: never).

        Parameters
        ----------
        state : pytree
            A state of `init`/`step`.

        Returns
        -------
        jax.Array
            A boolean scalar.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.fitting import LevenbergMarquardt
        >>> opt, fn = LevenbergMarquardt(), lambda x: x - jnp.array([1.0, 2.0])  # residuals
        >>> state = opt.init(fn, jnp.zeros(2), None, None)
        >>> bool(opt.failed(state))
        False
        """
        return jnp.asarray(False)

    def iterations(self, state: Any) -> Any:
        """Iterations done so far.

        Parameters
        ----------
        state : pytree
            A state of `init`/`step`.

        Returns
        -------
        jax.Array
            An integer scalar.

        Raises
        ------
        NotImplementedError
            On the abstract class.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.fitting import LevenbergMarquardt
        >>> opt, fn = LevenbergMarquardt(), lambda x: x - jnp.array([1.0, 2.0])  # residuals
        >>> state = opt.init(fn, jnp.zeros(2), None, None)
        >>> int(opt.iterations(opt.step(fn, state, None, None)))
        1
        """
        raise NotImplementedError

    def evaluations(self, state: Any) -> Any:
        """Evaluations of ``fn`` (with its derivatives) so far, for ``max_evaluations``.

        Parameters
        ----------
        state : pytree
            A state of `init`/`step`.

        Returns
        -------
        jax.Array
            An integer scalar.

        Raises
        ------
        NotImplementedError
            On the abstract class.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.fitting import LevenbergMarquardt
        >>> opt, fn = LevenbergMarquardt(), lambda x: x - jnp.array([1.0, 2.0])  # residuals
        >>> state = opt.init(fn, jnp.zeros(2), None, None)
        >>> int(opt.evaluations(state))  # the one of init
        1
        """
        raise NotImplementedError

    def residuals_and_jacobian(self, state: Any) -> tuple[Any, Any] | None:
        """The residuals and their Jacobian at `params` (``state``), where the optimiser
        keeps them; None (the default) where it does not.

        Parameters
        ----------
        state : pytree
            A state of `init`/`step`.

        Returns
        -------
        tuple or None
            ``(r, J)``: ``r`` of shape ``(m,)`` and ``J`` of shape ``(m, n_params)``, both at
            ``params(state)``; or None.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.fitting import BFGS, LevenbergMarquardt
        >>> opt, fn = LevenbergMarquardt(), lambda x: 2.0 * x - jnp.array([1.0, 2.0])  # residuals
        >>> r, jac = opt.residuals_and_jacobian(opt.init(fn, jnp.zeros(2), None, None))
        >>> r.tolist(), jac.tolist()
        ([-1.0, -2.0], [[2.0, 0.0], [0.0, 2.0]])
        >>> BFGS().residuals_and_jacobian(None) is None
        True
        """
        return None

    def run(self, fn: Callable, x0: Any, lower: Any = None, upper: Any = None) -> tuple[Any, Any, Any]:
        """Minimise ``fn`` from ``x0`` within the default iteration limit.

        Parameters
        ----------
        fn : callable
            Residuals (`residual`) or a scalar loss of ``x`` of shape ``(n_params,)``.
        x0 : jax.Array
            The start (floating point).
        lower, upper : jax.Array, optional
            Box bounds (for `bounded` optimisers: required by `LBFGSB`).

        Returns
        -------
        tuple
            ``(x, iterations, converged)``: the final point, the iterations done and
            whether it converged (JAX scalars).

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> loss = lambda x: jnp.sum((x - jnp.array([1.0, 2.0])) ** 2)
        >>> from simkit.fitting import BFGS
        >>> x, iterations, converged = BFGS().run(loss, jnp.zeros(2))
        >>> x.round(6).tolist(), bool(converged)
        ([1.0, 2.0], True)
        """
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


def residual_cosines(gradient: Any, jtj: Any, residual_norm: Any) -> Any:
    """MINPACK's gradient measure: for each parameter the cosine between the residuals and
    its Jacobian column, ``|J_j^T r| / (|J_j| |r|)`` (0 where either is 0), from the gradient
    ``J^T r``, ``J^T J`` and ``|r|``: free of the data's and the parameters' scales."""
    denom = jnp.sqrt(jnp.clip(jnp.diag(jtj), 0.0, None)) * residual_norm
    return jnp.where(denom > 0, jnp.abs(gradient) / jnp.where(denom > 0, denom, 1.0), 0.0)


class LevenbergMarquardt(_JaxoptDriver):
    """jaxopt's Levenberg-Marquardt on residuals (Jacobian by forward mode). Converged: the
    Gauss-Newton model of the cost predicts no decrease above ``ftol`` times the cost
    (``0.5 g^T (J^T J)^+ g <= ftol F``, MINPACK's relative-reduction test, scale-free: it
    stops once the optimum is reached to the accuracy the solves allow; ``J^T J`` scaled to a
    unit diagonal first), or Madsen-Nielsen's tests, a step below ``xtol (|x| + xtol)`` in
    every parameter or a gradient below ``gtol`` (MINPACK's form:
    the largest cosine between the residuals and a Jacobian column, ``|J_j^T r| / (|J_j|
    |r|)``, free of the data's scale). The default optimiser of `simkit.fit` for residual
    losses.

    Parameters
    ----------
    maxiter : int
        Iteration limit when the fit gives no ``max_iterations`` (default 200).
    xtol : float
        Relative step tolerance (default 1e-12).
    gtol : float
        Gradient tolerance, on the largest residual-column cosine (default 1e-10).
    ftol : float
        Relative predicted-reduction tolerance (default 1e-10).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> residuals = lambda x: x - jnp.array([1.0, 2.0])
    >>> from simkit.fitting import LevenbergMarquardt
    >>> x, iterations, converged = LevenbergMarquardt().run(residuals, jnp.zeros(2))
    >>> x.round(6).tolist(), bool(converged)
    ([1.0, 2.0], True)
    """

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

    def step(self, fn, state, lower, upper):
        # jaxopt evaluates the trial point whether or not it is taken and blends the two
        # outcomes by multiplying with 0 and 1: a trial point where the solve fails (an
        # infinite residual, a NaN Jacobian) made the kept state NaN (0 * inf), so the fit
        # ended as "every start failed" from a good start (du/dt = r u^2 beyond its blow-up
        # time) instead of backing off. Such a step is taken here as a rejected one: the
        # state kept, the damping raised as jaxopt raises it.
        x, inner = state
        new_x, new = super().step(fn, state, lower, upper)
        ok = jnp.all(jnp.isfinite(new_x)) & jnp.isfinite(new.value) & jnp.all(jnp.isfinite(new.jtj))
        rejected = inner._replace(iter_num=new.iter_num, damping_factor=inner.damping_factor * inner.increase_factor,
                                  increase_factor=2.0 * inner.increase_factor, delta=new.delta)  # the trial step
        return jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), (new_x, new), (x, rejected))

    def residuals_and_jacobian(self, state):
        return state[1].residual, state[1].jac  # both at state[0]: jaxopt updates them together

    def converged(self, state):
        x, inner = state
        g = inner.gradient
        # the Gauss-Newton step's gain, with J^T J scaled to a unit diagonal: pinv's relative
        # cutoff had dropped the directions of parameters of small sensitivity (a logistic
        # fit's K ~ 1e6 beside r ~ 1e-3: diagonal 3e18 and 4), so a fit "converged" at its
        # start value of K with 200x the optimum's cost (found by probing)
        d = jnp.sqrt(jnp.clip(jnp.diag(inner.jtj), 0.0, None))
        d = jnp.where(d > 0, d, 1.0)
        scaled_g = g / d
        predicted = 0.5 * scaled_g @ (jnp.linalg.pinv(inner.jtj / jnp.outer(d, d), hermitian=True) @ scaled_g)
        small_gain = predicted <= self.ftol * inner.value
        # each parameter's step relative to its own size (one norm over all let a parameter of
        # 1e6 hide the steps of one of 1e-3)
        step_bound = self.xtol * (jnp.abs(x) + self.xtol)
        small_step = (inner.iter_num > 0) & jnp.all(jnp.abs(inner.delta) <= step_bound)
        # MINPACK's gtol, scale-free (the gradient itself, J^T r, is ~1e-12 for data of
        # 1e-6: a fit "converged" at its start)
        small_gradient = jnp.max(residual_cosines(g, inner.jtj, jnp.linalg.norm(inner.residual))) <= self.gtol
        return small_gain | small_step | small_gradient


class GaussNewton(_JaxoptDriver):
    """jaxopt's Gauss-Newton on residuals (no damping: from a poor start, prefer
    `LevenbergMarquardt`). Converged: a step of norm below ``tol``.

    Parameters
    ----------
    maxiter : int
        Iteration limit when the fit gives no ``max_iterations`` (default 100).
    tol : float
        Step-norm tolerance (default 1e-12).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> residuals = lambda x: x - jnp.array([1.0, 2.0])
    >>> from simkit.fitting import GaussNewton
    >>> x, iterations, converged = GaussNewton().run(residuals, jnp.zeros(2))
    >>> x.round(6).tolist(), bool(converged)
    ([1.0, 2.0], True)
    """

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
    spends its 30 evaluations): `BFGS` is the default for likelihoods.

    Parameters
    ----------
    maxiter : int
        Iteration limit when the fit gives no ``max_iterations`` (default 300).
    tol : float
        Gradient-norm tolerance (default 1e-7).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> loss = lambda x: jnp.sum((x - jnp.array([1.0, 2.0])) ** 2)
    >>> from simkit.fitting import LBFGS
    >>> x, iterations, converged = LBFGS().run(loss, jnp.zeros(2))
    >>> x.round(6).tolist(), bool(converged)
    ([1.0, 2.0], True)
    """

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


class _ProjectedDriver(AbstractDriver):
    """A bounded optimiser of `simkit.fitting.bounded`: every start of a fit runs in one call
    (`solve_starts`), on the optimiser's scale of each parameter within its bounds (projected,
    no transform). ``init``/``step`` are not used."""

    bounded = True

    def solve_starts(self, fn: Callable, x0: Any, lower: Any, upper: Any, *, max_iterations: Any,
                     max_evaluations: Any, lanes: int | None) -> BoundedResult:
        """Every row of ``x0`` (``(n_starts, n)``) to its end: a `BoundedResult`."""
        raise NotImplementedError

    def run(self, fn, x0, lower=None, upper=None):
        lower = jnp.full(x0.shape, -jnp.inf, x0.dtype) if lower is None else lower
        upper = jnp.full(x0.shape, jnp.inf, x0.dtype) if upper is None else upper
        out = self.solve_starts(fn, jnp.asarray(x0)[None], lower, upper, max_iterations=self.default_max_iterations(),
                                max_evaluations=2**31 - 1, lanes=1)
        return out.x[0], out.n_iter[0], out.status[0] == int(FitStatus.CONVERGED)

    def _unused(self, *args):
        raise NotImplementedError(f"{type(self).__name__} runs every start at once (solve_starts), not step by step")

    init = step = params = converged = iterations = evaluations = _unused


class LBFGSB(_ProjectedDriver):
    """Projected L-BFGS-B on a scalar loss with box bounds (`simkit.fitting.minimize_bounded`):
    the bounds of `simkit.fit` (``bounds=``) are kept by projection on each parameter's scale
    (``scales=``), never by a transform, so a start that runs into a bound stays finite there
    and `FitResult.start_at_bound` says which bound. Converged: the projected gradient's
    largest entry below ``tol``, or an accepted step that lowers the loss by at most ``ftol``
    of it. The default for likelihoods when a parameter has two finite bounds or a log scale.

    Parameters
    ----------
    maxiter : int
        Iteration limit when the fit gives no ``max_iterations`` (default 500).
    tol : float
        Projected-gradient tolerance (default 1e-6).
    ftol : float
        Relative decrease tolerance (default 2.2e-9, SciPy's).
    memory : int
        Curvature pairs kept (default 10).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> loss = lambda x: jnp.sum((x - jnp.array([1.0, 2.0])) ** 2)
    >>> from simkit.fitting import LBFGSB
    >>> x, iterations, converged = LBFGSB().run(loss, jnp.zeros(2), jnp.zeros(2), jnp.full(2, 1.5))
    >>> x.round(6).tolist(), bool(converged)  # the second coordinate stops at its bound
    ([1.0, 1.5], True)
    """

    maxiter: int = 500
    tol: float = 1e-6
    ftol: float = 2.2e-9
    memory: int = 10
    residual = False

    def default_max_iterations(self) -> int:
        return self.maxiter

    def solve_starts(self, fn, x0, lower, upper, *, max_iterations, max_evaluations, lanes):
        return minimize_bounded(fn, x0, lower, upper, max_iter=max_iterations, max_eval=max_evaluations,
                                gtol=self.tol, ftol=self.ftol, memory=self.memory, lanes=lanes)


class BoundedLevenbergMarquardt(_ProjectedDriver):
    """Projected Levenberg-Marquardt on residuals with box bounds
    (`simkit.fitting.least_squares_bounded`): Gauss-Newton steps on the weighted residuals,
    damped, bounded in length (a quarter of the box at first, on each parameter's scale) and
    projected onto the bounds on each parameter's scale. Converged: the projected
    gradient below ``gtol``, actual and predicted relative decrease below ``ftol`` for three
    accepted steps in a row, or a step below ``xtol``.

    Parameters
    ----------
    maxiter : int
        Iteration limit when the fit gives no ``max_iterations`` (default 200).
    gtol, ftol, xtol : float
        Tolerances (defaults 1e-10, 1e-10, 1e-12).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> residuals = lambda x: x - jnp.array([1.0, 2.0])
    >>> from simkit.fitting import BoundedLevenbergMarquardt
    >>> x, iterations, converged = BoundedLevenbergMarquardt().run(residuals, jnp.zeros(2), jnp.zeros(2),
    ...                                                            jnp.full(2, 1.5))
    >>> x.round(6).tolist(), bool(converged)
    ([1.0, 1.5], True)
    """

    maxiter: int = 200
    gtol: float = 1e-10
    ftol: float = 1e-10
    xtol: float = 1e-12
    residual = True

    def default_max_iterations(self) -> int:
        return self.maxiter

    def solve_starts(self, fn, x0, lower, upper, *, max_iterations, max_evaluations, lanes):
        return least_squares_bounded(fn, x0, lower, upper, max_iter=max_iterations, max_eval=max_evaluations,
                                     gtol=self.gtol, ftol=self.ftol, xtol=self.xtol, lanes=lanes)


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
    point counts).

    Parameters
    ----------
    rtol, atol : float
        Relative and absolute tolerances of the Cauchy test (default 1e-8).
    max_steps : int
        Iteration limit when the fit gives no ``max_iterations`` (default 512).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> loss = lambda x: jnp.sum((x - jnp.array([1.0, 2.0])) ** 2)
    >>> from simkit.fitting import BFGS
    >>> x, iterations, converged = BFGS().run(loss, jnp.zeros(2))
    >>> x.round(6).tolist(), bool(converged)
    ([1.0, 2.0], True)
    """

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
    iteration is one optimistix step (one evaluation of ``fn``).

    Parameters
    ----------
    solver : optimistix solver
        An ``optimistix.AbstractLeastSquaresSolver`` (gets residuals) or an
        ``optimistix.AbstractMinimiser`` (gets a scalar loss), with its tolerances.
    max_steps : int
        Iteration limit when the fit gives no ``max_iterations`` (default 256).

    Examples
    --------
    >>> import optimistix as optx
    >>> import jax.numpy as jnp
    >>> residuals = lambda x: x - jnp.array([1.0, 2.0])
    >>> from simkit.fitting import Optimistix
    >>> opt = Optimistix(optx.LevenbergMarquardt(rtol=1e-8, atol=1e-8))
    >>> x, iterations, converged = opt.run(residuals, jnp.zeros(2))
    >>> opt.residual, x.round(6).tolist(), bool(converged)
    (True, [1.0, 2.0], True)
    """

    solver: Any
    max_steps: int = 256

    @property
    def residual(self) -> bool:  # type: ignore[override]
        """Whether `solver` is a least-squares solver (then ``fn`` returns residuals).

        Returns
        -------
        bool
            ``isinstance(solver, optimistix.AbstractLeastSquaresSolver)``.

        Examples
        --------
        >>> import optimistix as optx
        >>> from simkit.fitting import Optimistix
        >>> Optimistix(optx.BFGS(rtol=1e-8, atol=1e-8)).residual
        False
        """
        import optimistix as optx

        return isinstance(self.solver, optx.AbstractLeastSquaresSolver)

    def default_max_iterations(self) -> int:
        return self.max_steps

    def _optx(self) -> Any:
        return self.solver

