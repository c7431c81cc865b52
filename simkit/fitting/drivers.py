"""Optimisers as objects. jaxopt (the declared dependency) drives the default ones; it is
imported here only, when a fit runs, with its deprecation notice silenced (it announces on
import that it is no longer maintained). `Optimistix` wraps any optimistix least-squares or
minimisation solver instead, through the same interface.

Each driver: ``run(fn, x0, lower=None, upper=None) -> (x, iterations, converged)``, where
``fn`` returns residuals (``residual = True``) or a scalar loss. Runs are jittable and
vmappable (multi-start runs them under ``jax.vmap``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp


def _jaxopt():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import jaxopt
    return jaxopt


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
    residual: ClassVar[bool]
    bounded: ClassVar[bool] = False

    def run(self, fn: Callable, x0: Any, lower: Any = None, upper: Any = None) -> tuple[Any, Any, Any]:
        raise NotImplementedError


class LevenbergMarquardt(AbstractDriver):
    """jaxopt's Levenberg-Marquardt on residuals (Jacobian by forward mode)."""

    maxiter: int = 200
    xtol: float = 1e-12
    gtol: float = 1e-10
    residual = True

    def run(self, fn, x0, lower=None, upper=None):
        # Madsen-Nielsen stopping: a relative step below xtol or a gradient below gtol
        solver = _jaxopt().LevenbergMarquardt(residual_fun=fn, maxiter=self.maxiter, xtol=self.xtol, gtol=self.gtol,
                                              stop_criterion="madsen-nielsen", materialize_jac=True,
                                              solver="cholesky", implicit_diff=False)
        x, state = solver.run(x0)
        return x, state.iter_num, state.iter_num < self.maxiter


class GaussNewton(AbstractDriver):
    """jaxopt's Gauss-Newton on residuals."""

    maxiter: int = 100
    tol: float = 1e-12
    residual = True

    def run(self, fn, x0, lower=None, upper=None):
        solver = _jaxopt().GaussNewton(residual_fun=fn, maxiter=self.maxiter, tol=self.tol, implicit_diff=False)
        x, state = solver.run(x0)
        return x, state.iter_num, state.iter_num < self.maxiter


class LBFGS(AbstractDriver):
    """jaxopt's L-BFGS on a scalar loss."""

    maxiter: int = 300
    tol: float = 1e-7
    residual = False

    def run(self, fn, x0, lower=None, upper=None):
        solver = _jaxopt().LBFGS(fun=value_and_grad(fn, x0.shape[0]), value_and_grad=True, maxiter=self.maxiter,
                                 tol=self.tol, implicit_diff=False)
        x, state = solver.run(x0)
        return x, state.iter_num, state.error <= self.tol


class LBFGSB(AbstractDriver):
    """jaxopt's L-BFGS-B: a scalar loss with box bounds on the natural parameters."""

    maxiter: int = 300
    tol: float = 1e-7
    residual = False
    bounded = True

    def run(self, fn, x0, lower=None, upper=None):
        solver = _jaxopt().LBFGSB(fun=value_and_grad(fn, x0.shape[0]), value_and_grad=True, maxiter=self.maxiter,
                                  tol=self.tol, implicit_diff=False)
        x, state = solver.run(x0, bounds=(lower, upper))
        return x, state.iter_num, state.error <= self.tol


class Optimistix(AbstractDriver):
    """Any optimistix solver: a least-squares one (``optimistix.LevenbergMarquardt(rtol,
    atol)``, residuals) or a minimiser (``optimistix.BFGS(rtol, atol)``, scalar loss)."""

    solver: Any
    max_steps: int = 256

    @property
    def residual(self) -> bool:  # type: ignore[override]
        import optimistix as optx

        return isinstance(self.solver, optx.AbstractLeastSquaresSolver)

    def run(self, fn, x0, lower=None, upper=None):
        import optimistix as optx

        if self.residual:
            sol = optx.least_squares(lambda x, _: fn(x), self.solver, x0, max_steps=self.max_steps, throw=False)
        else:
            sol = optx.minimise(lambda x, _: fn(x), self.solver, x0, max_steps=self.max_steps, throw=False)
        return sol.value, sol.stats["num_steps"], sol.result == optx.RESULTS.successful
