"""The PEtab objective as one pure JAX function of the estimated parameters.

``objective(x)``: ``x`` the estimated parameters on their PEtab scales, ``(n_est,)``; returns
the negative log-likelihood of all measurements (`simkit.petab.noise`). Each simulation
condition is one `simkit.solve` with a stiff solver (conditions one after another under
``jax.lax.map``, so the solve compiles once); a condition with a pre-equilibration
condition first integrates that one to steady state and starts from there (species set in
the simulation condition are reset). A failed solve gives ``inf``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from .._solve import solve
from ..errors import InputError
from ..model import ODEModel
from ..status import Status
from .noise import negative_log_likelihood, normal_residuals
from .layout import Layout, Observable
from .sbml import SbmlModel, lambdify_vector


@dataclasses.dataclass(frozen=True)
class SolverOptions:
    """How each condition is solved.

    Attributes
    ----------
    rtol, atol : float
        Tolerances of `simkit.solve`.
    solver : optional
        A simkit solver; default the model's stiff default (`simkit.Rodas5P` up to 64 states).
    max_steps : int
        Step budget per solve.
    steady_state_time : float
        Pre-equilibration integrates from 0 to this time (model time units); the state there
        is taken as the steady state (it is not checked to be one).
    """

    rtol: float = 1e-8
    atol: float = 1e-10
    solver: Any = None
    max_steps: int = 100_000
    steady_state_time: float = 1e6


def observable_function(obs: Observable, sbml: SbmlModel, theta_ids: list[str],
                        observables: tuple[Observable, ...] = ()) -> Callable[..., Any]:
    """``f(t, y, p, theta, op, np) -> (h, sigma)`` for one observable (all arrays 1-D).

    A noise formula may name an observable (``observables``): its formula is used."""
    import sympy

    states = [sympy.Symbol(s) for s in sbml.state_ids]
    params = [sympy.Symbol(p) for p in sbml.parameter_ids]
    model_ids = set(sbml.state_ids) | set(sbml.parameter_ids)
    thetas = [sympy.Symbol(t) if t not in model_ids else sympy.Dummy(t) for t in theta_ids]
    ops = [sympy.Symbol(f"observableParameter{k + 1}_{obs.id}") for k in range(obs.n_observable_parameters)]
    nps = [sympy.Symbol(f"noiseParameter{k + 1}_{obs.id}") for k in range(obs.n_noise_parameters)]
    others = {sympy.Symbol(o.id): o.formula for o in observables if o.id not in model_ids}
    exprs = [sbml.substitute(obs.formula), sbml.substitute(obs.noise_formula.xreplace(others))]
    known = {s.name for s in (*states, *params, *thetas, *ops, *nps)} | {"time"}
    for expr in exprs:
        unknown = {s.name for s in expr.free_symbols} - known
        if unknown:
            raise InputError(f"PEtab observable {obs.id!r}: formula uses undefined symbols {sorted(unknown)}")
    fun = lambdify_vector([sbml.time, states, params, thetas, ops, nps], exprs)

    def evaluate(t: Any, y: Any, p: Any, theta: Any, op: Any, np_: Any) -> Any:
        return fun(t, list(y), list(p), list(theta), list(op), list(np_))

    return evaluate


def unscale(x: Any, scales: tuple[str, ...]) -> Any:
    """Parameters on their PEtab scales back on the linear scale, elementwise ``(n,)``."""
    out = []
    for i, s in enumerate(scales):
        out.append(jnp.exp(x[i]) if s == "log" else 10.0 ** x[i] if s == "log10" else x[i])
    return jnp.stack(out) if out else jnp.zeros((0,))


def build_objective(model: ODEModel, sbml: SbmlModel, layout: Layout, theta_ids: list[str],
                    options: SolverOptions) -> tuple[Callable[[Any], Any], Callable[[Any], Any], Callable[[Any], Any] | None]:
    """``(objective, simulate, residuals)``: ``objective(x) -> scalar`` negative log-likelihood;
    ``simulate(x) -> (ys, P, theta, ok)``: the states at the save times of every condition
    pair ``(n_pairs, n_times, n_states)``, each pair's model parameters ``(n_pairs, n_params)``,
    all PEtab parameters on the linear scale ``(n_theta,)``, and whether every solve succeeded;
    ``residuals(x) -> (2 n_measurements,)`` with ``objective = sum(residuals**2) / 2 -
    n_measurements * NORMAL_OFFSET`` (`simkit.petab.noise.normal_residuals`), or None where an
    observable's noise is not normal."""
    _, initial = sbml.to_jax()
    names = sbml.parameter_ids
    save_times = jnp.asarray(layout.save_times)
    t_end = float(layout.save_times[-1])
    has_pre = bool(layout.preequilibrated.any())
    functions = [observable_function(o, sbml, theta_ids, layout.observables) for o in layout.observables]

    def run(p: Any, y0: Any, t1: float, ts: Any) -> tuple[Any, Any]:
        params = {n: p[k] for k, n in enumerate(names)}
        if t1 == 0.0:
            return jnp.broadcast_to(y0, (ts.shape[0], y0.shape[0])), jnp.bool_(True)
        sol = solve(model, (0.0, t1), y0=y0, params=params, saveat=ts, solver=options.solver,
                    rtol=options.rtol, atol=options.atol, max_steps=options.max_steps, throw=False)
        return sol.ys, sol.status <= int(Status.EVENT)

    def initial_state(p: Any, override: Any, values: Any) -> Any:
        return jnp.where(override, values, initial({n: p[k] for k, n in enumerate(names)}))

    def simulate(x: Any) -> tuple[Any, Any, Any]:
        x = jnp.asarray(x, dtype=jnp.result_type(float))
        theta = jnp.asarray(layout.theta_nominal)
        if layout.estimated.size:
            theta = theta.at[layout.estimated].set(unscale(x, layout.scales))
        P = layout.parameters.values(theta)
        V = layout.state_values.values(theta)
        override = jnp.asarray(layout.state_override)
        y0 = jax.vmap(initial_state)(P, override, V)
        ok_pre = jnp.bool_(True)
        if has_pre:
            Pp = layout.pre_parameters.values(theta)
            y0p = jax.vmap(initial_state)(Pp, jnp.asarray(layout.pre_state_override),
                                          layout.pre_state_values.values(theta))
            tss = jnp.asarray([options.steady_state_time])

            def equilibrate(args: Any) -> Any:
                p, y, pre = args
                ys, ok = run(p, y, options.steady_state_time, tss)
                return jnp.where(pre, ys[-1], y), ok | ~pre

            yss, oks = jax.lax.map(equilibrate, (Pp, y0p, jnp.asarray(layout.preequilibrated)))
            pre = jnp.asarray(layout.preequilibrated)[:, None]
            y0 = jnp.where(pre & ~override, yss, y0)
            ok_pre = jnp.all(oks)
        ys, oks = jax.lax.map(lambda a: run(a[0], a[1], t_end, save_times), (P, y0))
        return ys, P, theta, ok_pre & jnp.all(oks)

    def observable_terms(x: Any) -> tuple[list[tuple[int, Any, Any]], Any]:
        """Per observable with measurements: ``(j, measured, (h, sigma))``, and whether every solve succeeded."""
        ys, P, theta, ok = simulate(x)
        terms = []
        for j in range(len(layout.observables)):
            pair, time = layout.measurement_pair[j], layout.measurement_time[j]
            if pair.size == 0:
                continue
            op = layout.observable_overrides[j].values(theta)
            nps = layout.noise_overrides[j].values(theta)
            h_sigma = jax.vmap(functions[j], in_axes=(0, 0, 0, None, 0, 0))(save_times[time], ys[pair, time],
                                                                             P[pair], theta, op, nps)
            terms.append((j, jnp.asarray(layout.measurement_value[j]), h_sigma))
        return terms, ok

    def residuals(x: Any) -> Any:
        terms, ok = observable_terms(x)
        parts = []
        for j, measured, h_sigma in terms:
            r, c = normal_residuals(measured, h_sigma[:, 0], h_sigma[:, 1], layout.observables[j].transformation)
            parts += [r, c]
        out = jnp.concatenate(parts)
        return jnp.where(ok, out, jnp.inf)

    def objective(x: Any) -> Any:
        terms, ok = observable_terms(x)
        total = jnp.zeros(())
        for j, measured, h_sigma in terms:
            obs = layout.observables[j]
            total = total + jnp.sum(negative_log_likelihood(measured, h_sigma[:, 0], h_sigma[:, 1], obs.distribution,
                                                            obs.transformation))
        return jnp.where(ok, total, jnp.inf)

    least_squares = all(o.distribution == "normal" for o in layout.observables)
    return objective, simulate, (residuals if least_squares else None)
