"""The PEtab objective as one pure JAX function of the estimated parameters.

``objective(x)``: ``x`` the estimated parameters on their PEtab scales, ``(n_est,)``; returns
the negative log-likelihood of all measurements (`simkit.petab.noise`) plus the negative
log-densities of the parameters' objective priors (`simkit.petab.priors`). Each simulation
condition is one `simkit.solve` with a stiff solver (conditions one after another under
``jax.lax.map``, so the solve compiles once); a condition with a pre-equilibration
condition first integrates that one to steady state and starts from there (species set in
the simulation condition are reset); measurements at time ``inf`` are of the simulation
condition's steady state, the state after integrating it for ``steady_state_time``. A failed
solve gives ``inf``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._solve import solve
from ..errors import InputError
from ..events import Event
from ..model import ODEModel
from ..status import Status
from .noise import negative_log_likelihood, normal_residuals
from .priors import negative_log_prior, prior_residuals
from .layout import Layout, Observable
from .mapping import Sources
from .sbml import SbmlModel, UnsupportedFeatureError, lambdify_vector


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
        Pre-equilibration, and a measurement at time ``inf``, integrate from 0 to this time
        (model time units); the state there is taken as the steady state (it is not checked
        to be one).
    max_event_firings : int
        Firings of the model's state-triggered events in one simulation, all events together;
        a simulation whose events would fire more often fails (its objective is ``inf``).
        Each firing costs one more solve segment, run for every condition.
    """

    rtol: float = 1e-8
    atol: float = 1e-10
    solver: Any = None
    max_steps: int = 100_000
    steady_state_time: float = 1e6
    max_event_firings: int = 2


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


def moving_inputs(sbml: SbmlModel, layout: Layout) -> tuple[np.ndarray, bool]:
    """Which model parameters (a mask over ``sbml.parameter_ids``) and whether any initial
    state may move with the estimated parameters, read from the tables and the SBML initial
    values (without pre-equilibration: with it, every initial state may move).

    The others enter each solve as constants (``stop_gradient``: no tangent), so that a solve's
    forward sensitivity pushes one direction per parameter that moves instead of one per
    model parameter and state (Rahman_MBS2016: 9 instead of 27)."""
    estimated = np.asarray(layout.estimated)

    def moves(sources: Sources) -> np.ndarray:  # per column: any pair's value is an estimated parameter
        return np.isin(sources.index, estimated).any(axis=0) if sources.index.size else np.zeros(0, bool)

    params = np.zeros(len(sbml.parameter_ids), bool)  # the columns of layout.parameters
    for sources in (layout.parameters, layout.pre_parameters):
        m = moves(sources)
        params[:m.size] |= m
    if layout.preequilibrated.any():
        return params, True
    position = {name: k for k, name in enumerate(sbml.parameter_ids)}

    def from_model(expr: Any) -> bool:  # an SBML initial value; a symbol not known may move
        return any(str(s) not in position or params[position[str(s)]] for s in getattr(expr, "free_symbols", ()))

    override = layout.state_override  # (n_pairs, n_states)
    overridden = (moves(layout.state_values) & override.any(axis=0)).any() if override.size else False
    computed = ~override.all(axis=0) if override.size else np.ones(len(sbml.initial), bool)
    model = np.array([from_model(e) for e in sbml.initial], dtype=bool)
    return params, bool(overridden or (model & computed).any())


def build_objective(model: ODEModel, sbml: SbmlModel, layout: Layout, theta_ids: list[str],
                    options: SolverOptions) -> tuple[Callable[[Any], Any], Callable[[Any], Any],
                                                     Callable[[Any], Any] | None, Callable[[Any], Any]]:
    """``(objective, simulate, residuals, prior)``: ``objective(x) -> scalar`` negative
    log-likelihood plus ``prior(x)``, the priors' negative log-density (0 without priors);
    ``simulate(x) -> (ys, P, theta, ok)``: the states at the save times of every condition
    pair ``(n_pairs, n_times, n_states)``, each pair's model parameters ``(n_pairs, n_params)``,
    all PEtab parameters on the linear scale ``(n_theta,)``, and whether every solve succeeded;
    ``residuals(x) -> (2 n_terms,)``, a pair per measurement and per prior, with ``objective =
    sum(residuals**2) / 2 - n_terms * NORMAL_OFFSET`` (`simkit.petab.noise.normal_residuals`,
    `simkit.petab.priors.prior_residuals`), or None where an observable's noise is not normal
    or a prior is a Laplace one."""
    _, initial = sbml.to_jax()
    names = sbml.parameter_ids
    save_times = jnp.asarray(layout.save_times)
    finite = layout.save_times[np.isfinite(layout.save_times)]  # (time inf, sorted last: the steady state)
    steady = finite.size < layout.save_times.size
    t_end = float(finite[-1]) if finite.size else 0.0
    has_pre = bool(layout.preequilibrated.any())
    functions = [observable_function(o, sbml, theta_ids, layout.observables) for o in layout.observables]
    if (sbml.events or sbml.state_events) and has_pre:
        raise UnsupportedFeatureError("SBML events in a PEtab problem with pre-equilibration are not supported")
    if sbml.events and sbml.state_events:
        raise UnsupportedFeatureError(
            "SBML models with both time-triggered and state-triggered events are not supported")
    if sbml.events:
        event_times, assign = sbml.events_to_jax()
        at_start = [e.at_start for e in sbml.events]
    if sbml.state_events:
        roots, assign = sbml.state_events_to_jax()
        conditions = tuple(Event(r, direction=e.direction) for r, e in zip(roots, sbml.state_events))

    def solve_on(params: Any, y0: Any, t0: Any, t1: Any, ts: Any) -> tuple[Any, Any]:
        sol = solve(model, (t0, t1), y0=y0, params=params, saveat=ts, solver=options.solver,
                    rtol=options.rtol, atol=options.atol, max_steps=options.max_steps, throw=False)
        return sol.ys, sol.status <= int(Status.EVENT)

    param_moves, state_moves = moving_inputs(sbml, layout)

    def run(p: Any, y0: Any, t1: float, ts: Any) -> tuple[Any, Any]:
        params = {n: p[k] if param_moves[k] else jax.lax.stop_gradient(p[k]) for k, n in enumerate(names)}
        if t1 == 0.0 and not sbml.events and not sbml.state_events:
            return jnp.broadcast_to(y0, (ts.shape[0], y0.shape[0])), jnp.bool_(True)
        if sbml.state_events:
            return run_with_state_events(params, y0, t1, ts)
        if not sbml.events:
            return solve_on(params, y0, 0.0, t1, ts)
        return run_with_events(params, y0, t1, ts)

    def run_with_state_events(params: Any, y0: Any, t1: float, ts: Any) -> tuple[Any, Any]:
        """Solve until an event's trigger turns true (a terminal event), set its states and go
        on from there, in ``max_event_firings + 1`` segments (one solve in a scan); a save
        time at a firing sees the state after it. A trigger already true at 0 fires there if
        its ``initialValue`` is false; a simulation with more firings than the segments
        allow fails."""
        t0 = jnp.zeros((), y0.dtype)
        for k, event in enumerate(sbml.state_events):  # (document order, as SBML without priorities allows)
            if event.at_start:
                value = roots[k](t0, y0, params)
                y0 = jnp.where(value * event.direction > 0, assign[k](t0, y0, params), y0)

        def segment(carry: Any, _: Any) -> tuple[Any, None]:
            a, y, ys, ok, going = carry
            saves = jnp.concatenate([jnp.clip(ts, a, t1), jnp.asarray([t1], ts.dtype)])
            sol = solve(model, (a, t1), y0=y, params=params, saveat=saves, solver=options.solver,
                        rtol=options.rtol, atol=options.atol, max_steps=options.max_steps, events=conditions,
                        throw=False)
            fired = going & (sol.status == int(Status.EVENT))
            b = jnp.where(fired, sol.event_time, t1)
            inside = going & (ts >= a) & jnp.where(fired, ts < b, ts <= b)
            ys = jnp.where(inside[:, None], sol.ys[:-1], ys)
            which = jnp.clip(sol.event_index, 0, len(assign) - 1)
            after = jax.lax.switch(which, assign, b, sol.y_final, params)
            ok = ok & (~going | (sol.status <= int(Status.EVENT)))
            return (jnp.where(going, b, a), jnp.where(fired, after, y), ys, ok, fired), None

        empty = jnp.zeros((ts.shape[0], y0.shape[0]), y0.dtype)
        carry = (t0, y0, empty, jnp.bool_(True), jnp.bool_(True))
        (_, _, ys, ok, going), _ = jax.lax.scan(segment, carry, None, length=options.max_event_firings + 1)
        return ys, ok & ~going  # still going: the last segment ended at a firing

    def run_with_events(params: Any, y0: Any, t1: float, ts: Any) -> tuple[Any, Any]:
        """Solve from event to event (one solve in a scan), each event setting its states as
        it fires; a save time at an event's time sees the state after it."""
        at = event_times(params)
        at = jnp.where(at <= 0.0, jnp.where(jnp.asarray(at_start), 0.0, jnp.inf), at)
        order = jnp.argsort(at, stable=True)
        ends = jnp.concatenate([jnp.clip(at[order], 0.0, t1), jnp.asarray([t1], at.dtype)])
        starts = jnp.concatenate([jnp.zeros((1,), at.dtype), ends[:-1]])
        last = jnp.arange(ends.shape[0]) == ends.shape[0] - 1

        def segment(carry: Any, piece: Any) -> tuple[Any, None]:
            y, ys, ok = carry
            a, b, k, final = piece
            seg, seg_ok = solve_on(params, y, a, b, jnp.concatenate([jnp.clip(ts, a, b), b[None]]))
            inside = (ts >= a) & jnp.where(final, ts <= b, ts < b)
            ys = jnp.where(inside[:, None], seg[:-1], ys)
            y = seg[-1]
            fired = jax.lax.switch(jnp.minimum(k, len(assign) - 1), assign, b, y, params)
            y = jnp.where(~final & (at[jnp.minimum(k, len(assign) - 1)] <= t1), fired, y)
            return (y, ys, ok & seg_ok), None

        empty = jnp.zeros((ts.shape[0], y0.shape[0]), y0.dtype)
        index = jnp.concatenate([order, jnp.zeros((1,), order.dtype)])
        (_, ys, ok), _ = jax.lax.scan(segment, (y0, empty, jnp.bool_(True)), (starts, ends, index, last))
        return ys, ok

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
        if not state_moves:
            y0 = jax.lax.stop_gradient(y0)
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
        ys, oks = jax.lax.map(lambda a: run(a[0], a[1], t_end, jnp.asarray(finite)), (P, y0))
        if steady:  # measurements at time inf: the state after steady_state_time
            tss = jnp.asarray([options.steady_state_time])
            yss, oks_ss = jax.lax.map(lambda a: run(a[0], a[1], options.steady_state_time, tss), (P, y0))
            ys, oks = jnp.concatenate([ys, yss], axis=1), oks & oks_ss
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

    def prior(x: Any) -> Any:
        x = jnp.asarray(x, dtype=jnp.result_type(float))
        return negative_log_prior(layout.priors, x, unscale(x, layout.scales))

    def residuals(x: Any) -> Any:
        terms, ok = observable_terms(x)
        parts = []
        for j, measured, h_sigma in terms:
            r, c = normal_residuals(measured, h_sigma[:, 0], h_sigma[:, 1], layout.observables[j].transformation)
            parts += [r, c]
        if layout.priors.any:
            x = jnp.asarray(x, dtype=jnp.result_type(float))
            parts += list(prior_residuals(layout.priors, x, unscale(x, layout.scales)))
        out = jnp.concatenate(parts)
        return jnp.where(ok, out, jnp.inf)

    def objective(x: Any) -> Any:
        terms, ok = observable_terms(x)
        total = prior(x) if layout.priors.any else jnp.zeros(())
        for j, measured, h_sigma in terms:
            obs = layout.observables[j]
            total = total + jnp.sum(negative_log_likelihood(measured, h_sigma[:, 0], h_sigma[:, 1], obs.distribution,
                                                            obs.transformation))
        return jnp.where(ok, total, jnp.inf)

    least_squares = all(o.distribution == "normal" for o in layout.observables) and layout.priors.squares
    return objective, simulate, (residuals if least_squares else None), prior
