"""`fit`: estimate model parameters from data through the solvers."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _config
from .._solve import solve
from ..errors import InputError
from ..model import ODEModel
from ..sample import latin_hypercube
from ..stencil.pde import PDEModel
from .data import Dataset
from .drivers import LBFGS, AbstractDriver, LevenbergMarquardt
from .objective import AbstractLoss, as_loss
from .parameters import ParameterSpace, build
from .result import FitResult
from .uncertainty import uncertainty


@dataclasses.dataclass(frozen=True)
class Structure:
    """The static part of a fitting problem: a compiled program's identity. Observations,
    times, sigmas, starting points and parameter values are traced: a second fit of the same
    model to new data of the same shapes reuses every compiled program."""

    rhs: Any
    state_names: tuple[str, ...]
    model_name: str
    stiff: bool
    observed: tuple  # per dataset: a tuple of state indices, or the observation function
    param_overrides: tuple  # per dataset: names of parameters it fixes
    y0_overrides: tuple  # per dataset: indices of initial states it fixes
    loss: AbstractLoss
    names: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    n_model: int
    ode_solver: Any

    @property
    def space(self) -> ParameterSpace:
        return ParameterSpace(self.names, np.array(self.lower), np.array(self.upper), np.zeros(len(self.names)))


def _params_and_y0(structure: Structure, arrays: dict, theta, k: int):
    params = dict(arrays["params"])
    y0 = arrays["y0"]
    for i, name in enumerate(structure.names[: structure.n_model]):
        if name.startswith("y0:"):
            y0 = y0.at[structure.state_names.index(name[3:])].set(theta[i])
        else:
            params[name] = theta[i]
    for name, value in zip(structure.param_overrides[k], arrays["param_values"][k]):
        params[name] = value
    for index, value in zip(structure.y0_overrides[k], arrays["y0_values"][k]):
        y0 = y0.at[index].set(value)
    return params, y0


def predict(structure: Structure, arrays: dict, theta, k: int, times=None):
    """Observed model values for dataset ``k`` at its times (or ``times``) and the solution."""
    params, y0 = _params_and_y0(structure, arrays, theta, k)
    ts = arrays["times"][k] if times is None else times
    model = ODEModel(rhs=structure.rhs, params=params, y0=y0, state_names=structure.state_names,
                     name=structure.model_name, stiff=structure.stiff)
    options = {} if structure.ode_solver is None else {"solver": structure.ode_solver}
    sol = solve(model, (arrays["t0"][k], ts[-1]), saveat=ts, throw=False, rtol=arrays["rtol"], atol=arrays["atol"],
                **options)
    observed = structure.observed[k]
    if callable(observed):
        return jax.vmap(lambda y: observed(y, params))(sol.ys), sol
    return sol.ys[:, jnp.asarray(observed)], sol


def residuals(structure: Structure, arrays: dict, theta):
    parts = []
    for k in range(len(structure.observed)):
        mu, _ = predict(structure, arrays, theta, k)
        r = structure.loss.residuals(mu, arrays["obs"][k], arrays["sigma"][k])
        parts.append(jnp.where(arrays["mask"][k], r, 0.0).reshape(-1))
    return jnp.concatenate(parts)


def nll(structure: Structure, arrays: dict, theta):
    extra = jnp.log(theta[-1]) if structure.loss.nuisance else 0.0
    total = 0.0
    for k in range(len(structure.observed)):
        mu, _ = predict(structure, arrays, theta, k)
        total = total + structure.loss.nll(mu, arrays["obs"][k], arrays["sigma"][k], arrays["mask"][k], extra)
    return total


def cost(structure: Structure, arrays: dict, theta):
    """What the solver minimises: 0.5 sum r^2 (residual losses; masked points give r = 0)
    or the negative log-likelihood."""
    if structure.loss.residual_form:
        r = residuals(structure, arrays, theta)
        return 0.5 * jnp.sum(r * r)
    return nll(structure, arrays, theta)


@functools.partial(jax.jit, static_argnames=("structure", "driver"))
def _run_starts(structure: Structure, driver: AbstractDriver, arrays: dict, starts):
    space = structure.space

    if driver.bounded:
        def one(x0):
            x, iters, ok = driver.run(lambda th: cost(structure, arrays, th), x0, jnp.asarray(space.lower),
                                      jnp.asarray(space.upper))
            return x, iters, ok, cost(structure, arrays, x)
    else:
        fn = (lambda z: residuals(structure, arrays, space.to_natural(z))) if driver.residual else \
            (lambda z: cost(structure, arrays, space.to_natural(z)))

        def one(x0):
            z, iters, ok = driver.run(fn, space.to_internal(x0))
            theta = space.to_natural(z)
            return theta, iters, ok, cost(structure, arrays, theta)

    if starts.shape[0] == 1:  # no vmap: a batched solver turns its branches into selects
        return jax.tree_util.tree_map(lambda a: a[None], one(starts[0]))
    return jax.vmap(one)(starts)


@functools.partial(jax.jit, static_argnames=("structure",))
def jacobian(structure: Structure, arrays: dict, theta):
    """Residuals and their Jacobian (forward mode), masked points included as zeros."""
    fn = functools.partial(residuals, structure, arrays)
    return fn(theta), jax.jacfwd(fn)(theta)


@functools.partial(jax.jit, static_argnames=("structure", "of"))
def hessian(structure: Structure, arrays: dict, theta, of: str = "cost"):
    """Hessian of the cost or of the NLL: forward-over-forward for a few parameters
    (cheaper through the solvers than forward-over-reverse), ``jax.hessian`` for many."""
    fn = functools.partial(cost if of == "cost" else nll, structure, arrays)
    if theta.shape[0] <= 16:
        return jax.jacfwd(jax.jacfwd(fn))(theta)
    return jax.hessian(fn)(theta)


@functools.partial(jax.jit, static_argnames=("structure", "driver", "index"))
def profile_costs(structure: Structure, driver: AbstractDriver, arrays: dict, theta_hat, index: int, values):
    """The cost minimised over the other parameters with parameter ``index`` fixed at each
    of ``values`` (all at once under ``jax.vmap``)."""
    space = structure.space
    others = jnp.asarray([j for j in range(len(structure.names)) if j != index])

    def full(z_other, value):
        z = jnp.zeros_like(theta_hat).at[others].set(z_other)
        return space.to_natural(z).at[index].set(value)

    def one(value):
        z0 = space.to_internal(theta_hat)[others]
        if driver.residual:
            z, _, _ = driver.run(lambda z: residuals(structure, arrays, full(z, value)), z0)
        else:
            z, _, _ = LBFGS().run(lambda z: cost(structure, arrays, full(z, value)), z0)
        return cost(structure, arrays, full(z, value))

    return jax.vmap(one)(values)


class Problem:
    """A fitting problem: its `Structure` (static), its data as arrays (traced), and the
    pure functions of the natural parameter vector ``theta`` built on them."""

    def __init__(self, model: ODEModel, datasets: Sequence[Dataset], space: ParameterSpace, loss: AbstractLoss,
                 rtol: float, atol: float, ode_solver: Any):
        self.model, self.datasets, self.space, self.loss = model, list(datasets), space, loss
        self.n_model = len(space.names) - (1 if loss.nuisance else 0)
        dtype = _config.float_dtype()
        observed = tuple(d.observed if callable(d.observed) else tuple(model.state_index(s) for s in d.observed)
                         for d in self.datasets)
        self.structure = Structure(
            rhs=model.rhs, state_names=model.state_names, model_name=model.name, stiff=model.stiff,
            observed=observed, param_overrides=tuple(tuple(d.params or {}) for d in self.datasets),
            y0_overrides=tuple(tuple(model.state_index(s) for s in (d.y0 or {})) for d in self.datasets),
            loss=loss, names=space.names, lower=tuple(map(float, space.lower)), upper=tuple(map(float, space.upper)),
            n_model=self.n_model, ode_solver=ode_solver)
        self.arrays = {
            "times": [jnp.asarray(d.times, dtype) for d in self.datasets],
            "t0": [jnp.asarray(d.t0, dtype) for d in self.datasets],
            "obs": [jnp.asarray(np.where(d.mask, d.values, 1.0), dtype) for d in self.datasets],
            "mask": [jnp.asarray(d.mask) for d in self.datasets],
            "sigma": [jnp.asarray(np.ones_like(d.values) if d.sigma is None else np.where(d.mask, d.sigma, 1.0), dtype)
                      for d in self.datasets],
            "param_values": [[jnp.asarray(v, dtype) for v in (d.params or {}).values()] for d in self.datasets],
            "y0_values": [[jnp.asarray(v, dtype) for v in (d.y0 or {}).values()] for d in self.datasets],
            "params": {k: jnp.asarray(v, dtype) for k, v in model.params.items()},
            "y0": jnp.asarray(model.y0, dtype),
            "rtol": jnp.asarray(rtol, dtype), "atol": jnp.asarray(atol, dtype),
        }
        self._flat_mask = np.concatenate([d.mask.reshape(-1) for d in self.datasets])

    def predict(self, theta, k: int, times=None):
        return predict(self.structure, self.arrays, theta, k, None if times is None else jnp.asarray(times))

    def params_and_y0(self, theta, k: int):
        return _params_and_y0(self.structure, self.arrays, jnp.asarray(theta), k)

    def residuals(self, theta):
        """Residuals at the observed points (masked ones dropped)."""
        return residuals(self.structure, self.arrays, theta)[self._flat_mask]

    def nll(self, theta):
        return nll(self.structure, self.arrays, theta)

    def cost(self, theta):
        return cost(self.structure, self.arrays, theta)

    def run(self, driver: AbstractDriver, starts) -> tuple:
        return _run_starts(self.structure, driver, self.arrays, starts)


def _starts(space: ParameterSpace, n: int, key: Any) -> np.ndarray:
    """``n`` starting points: the given start first, then a Latin hypercube within the bounds.
    Where a bound is infinite the range is a factor 10 either side of a positive start with a
    non-negative lower bound, and the start +- 10 |start| otherwise."""
    lo, hi = space.lower.copy(), space.upper.copy()
    x0 = space.x0
    ranges = {}
    for i, name in enumerate(space.names):
        a, b = lo[i], hi[i]
        if not np.isfinite(a) or not np.isfinite(b):
            scale = abs(x0[i]) if x0[i] != 0 else 1.0
            a = max(a, x0[i] - 10 * scale) if x0[i] <= 0 or not np.isfinite(a) or a < 0 else max(a, x0[i] / 10)
            b = min(b, x0[i] + 10 * scale) if x0[i] <= 0 else min(b, x0[i] * 10)
        ranges[name] = (float(a), float(b))
    draws = latin_hypercube(key, ranges, max(n - 1, 1))
    sample = np.stack([np.asarray(draws[name]) for name in space.names], axis=1)
    inside = np.clip(sample, np.nextafter(lo, np.inf), np.nextafter(hi, -np.inf))
    return np.concatenate([x0[None], inside])[:n]


def fit(
    model: ODEModel | PDEModel,
    data: Dataset | Sequence[Dataset],
    *,
    free: Sequence[str] | None = None,
    initial: Mapping[str, float] | None = None,
    bounds: Mapping[str, tuple[float, float]] | str | None = None,
    initial_state: str = "fixed",
    loss: AbstractLoss | None = None,
    solver: AbstractDriver | None = None,
    starts: int = 1,
    key: Any = None,
    confidence: float = 0.95,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    ode_solver: Any = None,
) -> FitResult:
    """Estimate parameters of ``model`` from ``data``.

    **Main arguments:**

    - `model`: an `ODEModel` (or a `PDEModel`, fitted through the method of lines).
    - `data`: a `Dataset`, or a list of them (experiments sharing the parameters).
    - `free`: names of the parameters to estimate (default: every scalar parameter); the
      others stay at the model's values (``model.with_params`` to change them).
    - `initial`: starting values by name (default: the model's values); `bounds`:
      ``{name: (low, high)}`` or ``"positive"`` (every free parameter > 0).
    - `initial_state`: ``"fixed"`` (the model's ``y0``, or each dataset's) or ``"fit"``
      (estimate every initial state, named ``"y0:<state>"``, at the data's first time).
    - `loss`: `LeastSquares()` (default), `LogNormal()`, `GaussianNLL()`, `Poisson()`,
      `NegativeBinomial()`.
    - `solver`: `LevenbergMarquardt()` (default for residual losses), `GaussNewton()`,
      `LBFGS()` (default for likelihoods), `LBFGSB()` (bounds enforced by the solver; the
      others use smooth transforms), or `Optimistix(optimistix solver)`.
    - `starts`: number of starting points (the given start and a Latin hypercube within the
      bounds), run together under ``jax.vmap``; the best is returned, every start's final
      cost is kept (`FitResult.start_costs`).

    **Other arguments:** `key` for the start design (default ``jax.random.key(0)``);
    `confidence` of the intervals; `rtol`, `atol`, `ode_solver` for the solves.

    **Returns:** a `FitResult` (estimates, standard errors, intervals, covariance,
    correlation, cost, convergence, fitted solutions; ``print(result)`` for a summary).
    """
    if isinstance(model, PDEModel):
        model = model.to_ode()
    if not isinstance(model, ODEModel):
        raise InputError(f"fit() expects an ODEModel or PDEModel, got {type(model).__name__}")
    datasets = [data] if isinstance(data, Dataset) else list(data)
    if not datasets or not all(isinstance(d, Dataset) for d in datasets):
        raise InputError("data must be a simkit.Dataset or a list of them")
    for d in datasets:
        if not callable(d.observed):
            missing = [s for s in d.observed if s not in model.state_names]
            if missing:
                raise InputError(f"dataset {d.name!r} observes {missing}, not states of {model.name!r} "
                                 f"({list(model.state_names)[:20]})")
    loss = as_loss(loss)
    if initial_state not in ("fixed", "fit"):
        raise InputError(f"initial_state must be 'fixed' or 'fit', got {initial_state!r}")
    solver = solver if solver is not None else (LevenbergMarquardt() if loss.residual_form else LBFGS())
    if not isinstance(solver, AbstractDriver):
        raise InputError(f"solver must be a simkit fitting solver object (LevenbergMarquardt(), LBFGS(), ...), got {solver!r}")
    if solver.residual and not loss.residual_form:
        raise InputError(f"{type(solver).__name__} works on residuals; {type(loss).__name__} is a likelihood: "
                         "use LBFGS() or LBFGSB()")
    for d in datasets:
        loss.check(d.values)
    if int(starts) < 1:
        raise InputError(f"starts must be at least 1, got {starts}")
    space = build(model, free, bounds, initial, initial_state == "fit", model.state_names, np.asarray(model.y0),
                  loss.nuisance)
    problem = Problem(model, datasets, space, loss, rtol, atol, ode_solver)
    dtype = _config.float_dtype()
    points = _starts(space, int(starts), jax.random.key(0) if key is None else key)
    thetas, iters, oks, costs = problem.run(solver, jnp.asarray(points, dtype))
    costs = np.asarray(costs)
    finite = np.isfinite(costs)
    if not finite.any():
        raise InputError("every start failed (non-finite cost): check the data, the bounds and the starting values")
    best = int(np.argmin(np.where(finite, costs, np.inf)))
    theta = np.asarray(thetas[best])
    stats = uncertainty(problem, theta, confidence)
    return FitResult.build(problem, theta, float(costs[best]), int(iters[best]), bool(oks[best]), costs, points,
                           stats, solver, confidence)
