"""A fitting problem as compiled programs: its static `FitProgram`, its data as traced
arrays, and the pure functions of the natural parameter vector ``theta`` built on them
(predictions, residuals, cost), with the jitted runs (starts, Jacobian, Hessian, profiles)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _config
from .._codegen import SMALL_STATE_LIMIT, codegen_jit
from .._prepare import rtol_floor
from .._solve import solve
from ..model import ODEModel
from ..status import Status
from .bounded import as_array
from .split import split_starts
from .data import Dataset
from .drivers import AbstractDriver, minimise
from .objective import AbstractLoss
from .parameters import ParameterSpace


@dataclasses.dataclass(frozen=True)
class FitProgram:
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
    max_steps: int
    kernel: bool = False  # its solves run simkit's kernels (`simkit._prepare.choose_solver`)
    scales: tuple[str, ...] | None = None  # per free parameter: "lin", "log", "log10"
    y0_function: Any = None  # y0_function(params) -> the initial state, or None
    noise_index: tuple = ()  # per dataset: the index in theta of each column's noise, or () for one noise

    @property
    def space(self) -> ParameterSpace:
        return ParameterSpace(self.names, np.array(self.lower), np.array(self.upper), np.zeros(len(self.names)),
                              self.scales)


def _params_and_y0(program: FitProgram, arrays: dict, theta, k: int):
    params = dict(arrays["params"])
    y0 = arrays["y0"]
    for i, name in enumerate(program.names[: program.n_model]):
        if name.startswith("y0:"):
            y0 = y0.at[program.state_names.index(name[3:])].set(theta[i])
        else:
            params[name] = theta[i]
    for name, value in zip(program.param_overrides[k], arrays["param_values"][k]):
        params[name] = value
    if program.y0_function is not None:  # the initial state as a function of the (dataset's) parameters
        y0 = jnp.asarray(program.y0_function(params), y0.dtype).reshape(y0.shape)
    for index, value in zip(program.y0_overrides[k], arrays["y0_values"][k]):
        y0 = y0.at[index].set(value)
    return params, y0


def predict(program: FitProgram, arrays: dict, theta, k: int, times=None):
    """Observed model values for dataset ``k`` at its times (or ``times``) and the solution
    (its ``status`` says whether the solve reached the last time)."""
    params, y0 = _params_and_y0(program, arrays, theta, k)
    ts = arrays["times"][k] if times is None else times
    model = ODEModel(rhs=program.rhs, params=params, y0=y0, state_names=program.state_names,
                     name=program.model_name, stiff=program.stiff)
    options = {} if program.ode_solver is None else {"solver": program.ode_solver}
    sol = solve(model, (arrays["t0"][k], ts[-1]), saveat=ts, throw=False, rtol=arrays["rtol"], atol=arrays["atol"],
                max_steps=program.max_steps, **options)
    observed = program.observed[k]
    if callable(observed):
        return jax.vmap(lambda y: observed(y, params))(sol.ys), sol
    return sol.ys[:, jnp.asarray(observed)], sol


def _failed(sol) -> Any:
    """A solve that did not reach the last time (max_steps, non-finite state, ...): its
    values are not the model's, so the cost there is infinite and optimisers back off."""
    return sol.status > int(Status.EVENT)


def residuals(program: FitProgram, arrays: dict, theta):
    parts = []
    for k in range(len(program.observed)):
        mu, sol = predict(program, arrays, theta, k)
        r = program.loss.residuals(mu, arrays["obs"][k], arrays["sigma"][k])
        r = jnp.where(_failed(sol), jnp.inf, r)
        parts.append(jnp.where(arrays["mask"][k], r, 0.0).reshape(-1))
    return jnp.concatenate(parts)


def nll(program: FitProgram, arrays: dict, theta):
    extra = jnp.log(theta[-1]) if program.loss.nuisance else 0.0
    total, failed = 0.0, False
    for k in range(len(program.observed)):
        mu, sol = predict(program, arrays, theta, k)
        if program.noise_index:  # one noise per observable: each column its own
            extra = jnp.broadcast_to(jnp.log(theta[jnp.asarray(program.noise_index[k])])[None, :], mu.shape)
        total = total + program.loss.nll(mu, arrays["obs"][k], arrays["sigma"][k], arrays["mask"][k], extra)
        failed = failed | _failed(sol)
    return jnp.where(failed, jnp.inf, total)


def cost(program: FitProgram, arrays: dict, theta):
    """What the optimiser minimises: 0.5 sum r^2 (residual losses; masked points give r = 0)
    or the negative log-likelihood; infinite where a solve fails."""
    if program.loss.residual_form:
        r = residuals(program, arrays, theta)
        return 0.5 * jnp.sum(r * r)
    return nll(program, arrays, theta)


def _suits_classic(program: FitProgram, *args, **kwargs) -> bool:
    """Whether XLA:CPU's classic code generator suits a fit program (`simkit._codegen`): its
    solves run simkit's kernels, or diffrax on at most 64 states."""
    return program.kernel or len(program.state_names) <= SMALL_STATE_LIMIT


def _objective(program: FitProgram, optimizer: AbstractDriver, arrays: dict, to_theta):
    """The function of the optimiser's variables that it works on: residuals or the cost."""
    if optimizer.residual:
        return lambda z: residuals(program, arrays, to_theta(z))
    # scalar optimisers' tolerances are absolute: the cost in units of the data's scale
    # (`AbstractLoss.data_power`; 1 for likelihoods and with sigma)
    return lambda z: cost(program, arrays, to_theta(z)) / arrays["cost_scale"]


def _at_bound(space: ParameterSpace, theta):
    """-1 / +1 where ``theta`` is at its lower / upper bound (to 1e-12 of the bound's size, as
    a transform reaches it), else 0: ``(..., n_params)`` int8."""
    lo, hi = (jnp.broadcast_to(jnp.asarray(b, theta.dtype), theta.shape) for b in (space.lower, space.upper))
    near = lambda bound: jnp.isfinite(bound) & (jnp.abs(theta - bound) <= 1e-12 * jnp.maximum(jnp.abs(bound), 1.0))
    return jnp.where(near(lo) | (theta <= lo), -1, jnp.where(near(hi) | (theta >= hi), 1, 0)).astype(jnp.int8)


@codegen_jit(_suits_classic, static_argnames=("program", "optimizer", "lanes"))
def run_starts(program: FitProgram, optimizer: AbstractDriver, arrays: dict, starts, max_iterations, max_evaluations,
               lanes: int | None = None):
    """Every start (rows of ``starts``, natural values) run to its own end: final points,
    iterations, evaluations, `FitStatus` codes, costs, where the optimiser keeps them
    (`AbstractDriver.residuals_and_jacobian`) the residuals and their Jacobian in the
    natural parameters (else None), and which bound each parameter ended at (-1, 0, +1);
    one row per start. The limits are traced: changing them does not recompile. The
    bounded optimisers run all starts in one call on ``lanes`` lanes (`minimize_bounded`);
    the others under ``jax.vmap``."""
    return _run_starts(program, optimizer, arrays, starts, max_iterations, max_evaluations, lanes)


def _run_starts(program: FitProgram, optimizer: AbstractDriver, arrays: dict, starts, max_iterations,
                max_evaluations, lanes: int | None):
    space = program.space
    limits = {"max_iterations": max_iterations, "max_evaluations": max_evaluations}
    if getattr(optimizer, "solve_starts", None) is not None:
        lower, upper = (jnp.asarray(b, starts.dtype) for b in space.scaled_bounds())
        fn = _objective(program, optimizer, arrays, space.from_scaled)
        out = optimizer.solve_starts(fn, jax.vmap(space.to_scaled)(starts), lower, upper, lanes=lanes, **limits)
        thetas = jax.vmap(space.from_scaled)(out.x)
        costs = out.cost if optimizer.residual else out.cost * arrays["cost_scale"]
        return thetas, out.n_iter, out.n_eval, out.status, costs, None, out.at_bound

    def finish(theta, out, slope):
        """``slope``: d theta / d x, elementwise (the transforms act per parameter)."""
        if out.jacobian is None or not optimizer.residual:
            return theta, out.iterations, out.evaluations, out.status, cost(program, arrays, theta), None
        r = out.residuals  # residuals(theta) itself: the cost without another solve
        return (theta, out.iterations, out.evaluations, out.status, 0.5 * jnp.sum(r * r),
                (r, out.jacobian / slope[None, :]))  # chain rule; not finite where a transform saturates

    if optimizer.bounded:
        def one(x0):
            out = minimise(optimizer, _objective(program, optimizer, arrays, lambda th: th), x0,
                           jnp.asarray(space.lower), jnp.asarray(space.upper), **limits)
            return finish(out.x, out, jnp.ones_like(out.x))
    else:
        def one(x0):
            out = minimise(optimizer, _objective(program, optimizer, arrays, space.to_natural),
                           space.to_internal(x0), None, None, **limits)
            theta, slope = jax.jvp(space.to_natural, (out.x,), (jnp.ones_like(out.x),))
            return finish(theta, out, slope)

    if starts.shape[0] == 1:  # no vmap: a batched solver turns its branches into selects
        out = jax.tree_util.tree_map(lambda a: a[None], one(starts[0]))
    else:
        out = jax.vmap(one)(starts)
    return (*out, _at_bound(space, out[0]))


@codegen_jit(_suits_classic, static_argnames=("program",))
def jacobian(program: FitProgram, arrays: dict, theta):
    """Residuals and their Jacobian (forward mode), masked points included as zeros."""
    fn = functools.partial(residuals, program, arrays)
    return fn(theta), jax.jacfwd(fn)(theta)


@codegen_jit(_suits_classic, static_argnames=("program", "of"))
def hessian(program: FitProgram, arrays: dict, theta, of: str = "cost"):
    """Hessian of the cost or of the NLL: forward-over-forward for a few parameters
    (cheaper through the solvers than forward-over-reverse), ``jax.hessian`` for many."""
    fn = functools.partial(cost if of == "cost" else nll, program, arrays)
    if theta.shape[0] <= 16:
        return jax.jacfwd(jax.jacfwd(fn))(theta)
    return jax.hessian(fn)(theta)


@codegen_jit(_suits_classic, static_argnames=("program", "optimizer"))
def profile_costs(program: FitProgram, optimizer: AbstractDriver, arrays: dict, theta_hat, index, values,
                  max_iterations, max_evaluations):
    """The cost minimised over the other parameters with parameter ``index`` fixed at each
    of ``values`` (all at once under ``jax.vmap``; ``optimizer`` works in the transformed,
    unconstrained coordinates). ``index`` is traced, so the profiles of all parameters share
    one compiled program: the minimisation runs over every coordinate, the fixed one pinned
    (its gradient is exactly zero, so the optimiser never moves it)."""
    space = program.space
    if theta_hat.shape[0] == 1:  # nothing to minimise over: the profile is the cost itself
        return jax.vmap(lambda value: cost(program, arrays, jnp.reshape(value, (1,)).astype(theta_hat.dtype)))(values)
    pinned = jnp.arange(theta_hat.shape[0]) == index

    def full(z, value):
        return jnp.where(pinned, value, space.to_natural(z))

    def one(value):
        z0 = space.to_internal(theta_hat)
        out = minimise(optimizer, _objective(program, optimizer, arrays, lambda z: full(z, value)), z0, None, None,
                       max_iterations=max_iterations, max_evaluations=max_evaluations)
        return cost(program, arrays, full(out.x, value))

    return jax.vmap(one)(values)


def _runs_kernels(model: ODEModel, ode_solver: Any) -> bool:
    """Whether the fit's solves (`predict`: the model's rhs, names and stiffness, the
    ``ode_solver``) run simkit's kernels: `solve`'s own choice of method."""
    from .._prepare import choose_solver
    from ..kernels import AbstractKernel

    bare = ODEModel(rhs=model.rhs, params=dict(model.params), y0=model.y0, state_names=model.state_names,
                    name=model.name, stiff=model.stiff)
    chosen = choose_solver(bare, ode_solver, len(model.state_names), bool(np.iscomplexobj(model.y0)))
    return isinstance(chosen, AbstractKernel)


def _cost_scale(loss: AbstractLoss, datasets: Sequence[Dataset]) -> float:
    """What the scalar optimisers divide the cost by (`AbstractLoss.data_power`): the
    observed values' root mean square (over every dataset) to the loss's power of the data
    unit, when the data have no sigma; else 1 (a likelihood, chi-square or unit-free loss).
    One number for all datasets: the estimate does not change."""
    if loss.data_power == 0 or any(d.sigma is not None for d in datasets):
        return 1.0
    given = np.concatenate([np.asarray(d.values)[d.mask] for d in datasets])
    rms = float(np.sqrt(np.mean(given ** 2))) if given.size else 0.0
    return rms ** loss.data_power if np.isfinite(rms) and rms > 0 else 1.0


# the fits' default relative tolerance of the solves (one object: a fit that leaves it gets 100
# machine epsilons where that is larger, in float32, without the warning a given rtol gets)
FIT_RTOL: float = 1e-8


class Problem:
    """A fitting problem: its `FitProgram` (static), its data as arrays (traced), and the
    pure functions of the natural parameter vector ``theta`` built on them."""

    def __init__(self, model: ODEModel, datasets: Sequence[Dataset], space: ParameterSpace, loss: AbstractLoss,
                 rtol: float, atol: float, ode_solver: Any, max_steps: int, *, y0_function: Any = None,
                 noise_index: tuple = ()):
        self.model, self.datasets, self.space, self.loss = model, list(datasets), space, loss
        n_noise = len({i for columns in noise_index for i in columns}) if noise_index else (1 if loss.nuisance else 0)
        self.n_model = len(space.names) - n_noise
        dtype = _config.float_dtype()
        observed = tuple(d.observed if callable(d.observed) else tuple(model.state_index(s) for s in d.observed)
                         for d in self.datasets)
        self.program = FitProgram(
            rhs=model.rhs, state_names=model.state_names, model_name=model.name, stiff=model.stiff,
            observed=observed, param_overrides=tuple(tuple(d.params or {}) for d in self.datasets),
            y0_overrides=tuple(tuple(model.state_index(s) for s in (d.y0 or {})) for d in self.datasets),
            loss=loss, names=space.names, lower=tuple(map(float, space.lower)), upper=tuple(map(float, space.upper)),
            n_model=self.n_model, ode_solver=ode_solver, max_steps=int(max_steps),
            kernel=_runs_kernels(model, ode_solver), scales=space.scales, y0_function=y0_function,
            noise_index=tuple(tuple(self.n_model + int(i) for i in columns) for columns in noise_index))
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
            "rtol": jnp.asarray(max(rtol, rtol_floor(dtype)) if rtol is FIT_RTOL else rtol, dtype),
            "atol": jnp.asarray(atol, dtype),
            "cost_scale": jnp.asarray(_cost_scale(loss, self.datasets), dtype),
        }
        self._flat_mask = np.concatenate([d.mask.reshape(-1) for d in self.datasets])

    def predict(self, theta, k: int, times=None):
        return predict(self.program, self.arrays, theta, k, None if times is None else jnp.asarray(times))

    def params_and_y0(self, theta, k: int):
        return _params_and_y0(self.program, self.arrays, jnp.asarray(theta), k)

    def residuals(self, theta):
        """Residuals at the observed points (masked ones dropped)."""
        return residuals(self.program, self.arrays, theta)[self._flat_mask]

    def nll(self, theta):
        return nll(self.program, self.arrays, theta)

    def cost(self, theta):
        return cost(self.program, self.arrays, theta)

    def run(self, optimizer: AbstractDriver, starts, *, max_iterations: int, max_evaluations: int,
            lanes: int | None = None, devices: tuple | None = None) -> tuple:
        """`run_starts` of these starts; with ``devices``, split between them (`simkit.fitting.split`)."""
        args = (self.program, optimizer, self.arrays, as_array(starts), as_array(max_iterations),
                as_array(max_evaluations))
        if devices:
            return split_starts(run_starts, args, devices, static=2, starts=3, rows=lambda share: share,
                                counted=False, lanes=lanes)
        return run_starts(*args, lanes=lanes)
