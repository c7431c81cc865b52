"""The SciPy yardstick for fitting: ``scipy.optimize.least_squares`` (trust-region
reflective) with `solve_ivp` inside, on the same residuals as `simkit.fit`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError, InputTypeError, ParameterError
from .scipy_ivp import solve_ivp


def least_squares(model: Any, data: Any, *, free: Sequence[str], initial: Mapping[str, float] | None = None,
                  initial_state: str = "fixed", log: bool = False, bounds: Mapping[str, tuple[float, float]] | None = None,
                  method: str = "DOP853", rtol: float = 1e-12, atol: float = 1e-12,
                  tol: float = 1e-15) -> dict[str, Any]:
    """Fit ``free`` parameters (and the initial states with ``initial_state="fit"``) of
    ``model`` to one `Dataset` (state columns) by SciPy alone.

    Residuals are ``(model - data) / sigma`` (or of their logarithms with ``log=True``, as
    `simkit.LogNormal`) at the masked points, the model from `solve_ivp` at ``rtol``/``atol``.
    Returns ``x`` (by name), ``cost`` (``0.5 sum r^2``), ``nfev`` and SciPy's ``status``."""
    from scipy.optimize import least_squares as scipy_least_squares

    if callable(data.observed):
        raise InputError("reference.least_squares takes datasets of observed states")
    # the checks `simkit.fit` makes (found by probing: a dataset's fixed value of a free
    # parameter replaced it in the residuals, and the "fit" returned its start, converged)
    if isinstance(free, (str, bytes)):
        raise InputTypeError(f"free must be a list of parameter names, e.g. [{free!r}]")
    unknown = [n for n in free if n not in model.params]
    if unknown:
        raise ParameterError(f"model {model.name!r} has no parameter(s) {unknown}; valid names are {list(model.params)}")
    if initial_state not in ("fixed", "fit"):
        raise InputError(f"initial_state must be 'fixed' or 'fit', got {initial_state!r}")
    fixed = sorted(set(free) & set(data.params or {}))
    fixed += sorted(f"y0:{s}" for s in (data.y0 or {}) if initial_state == "fit")
    if fixed:
        raise InputError(f"dataset {data.name!r} fixes {fixed}, which the fit also estimates")
    names = list(free) + ([f"y0:{s}" for s in model.state_names] if initial_state == "fit" else [])
    start = {**{n: float(model.params[n]) for n in free},
             **({f"y0:{s}": float(v) for s, v in zip(model.state_names, model.y0)} if initial_state == "fit" else {}),
             **dict(initial or {})}
    stray = sorted(set(initial or {}) - set(names)) + sorted(set(bounds or {}) - set(names))
    if stray:
        raise ParameterError(f"initial values or bounds given for {stray}, which are not free; free: {names}")
    x0 = np.array([start[n] for n in names])
    b = dict(bounds or {})
    lower = np.array([b.get(n, (-np.inf, np.inf))[0] for n in names])
    upper = np.array([b.get(n, (-np.inf, np.inf))[1] for n in names])
    columns = [model.state_index(s) for s in data.observed]
    mask = data.mask
    sigma = np.ones_like(data.values) if data.sigma is None else data.sigma

    def residuals(x: np.ndarray) -> np.ndarray:
        params = {n: v for n, v in zip(names, x) if not n.startswith("y0:")}
        y0 = np.array(model.y0, dtype=float)
        for n, v in zip(names, x):
            if n.startswith("y0:"):
                y0[model.state_index(n[3:])] = v
        for state, value in (data.y0 or {}).items():
            y0[model.state_index(state)] = value
        ref = solve_ivp(model, (data.t0, float(data.times[-1])), y0=y0, params={**params, **(data.params or {})},
                        saveat=data.times, method=method, rtol=rtol, atol=atol)
        mu = ref.ys[:, columns]
        if log:
            r = (np.log(np.maximum(mu, 1e-300)) - np.log(np.where(mask, data.values, 1.0))) / sigma
        else:
            r = (mu - np.where(mask, data.values, 0.0)) / sigma
        return r[mask]

    out = scipy_least_squares(residuals, x0, method="trf", bounds=(lower, upper), x_scale="jac",
                              ftol=tol, xtol=tol, gtol=tol)
    return {"x": dict(zip(names, map(float, out.x))), "cost": float(out.cost), "nfev": int(out.nfev),
            "status": int(out.status), "message": out.message}
