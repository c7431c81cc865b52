"""The SciPy yardstick for fitting: ``scipy.optimize.least_squares`` (trust-region
reflective) with `solve_ivp` inside, on the same residuals as `simkit.fit`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError
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
    # simkit.fit's own checks and start (`fitting.parameters.build`, `_check_dataset_inputs`;
    # found by probing: a dataset's fixed value of a free parameter replaced it in the
    # residuals, the "fit" returned its start, converged, and unknown names passed silently)
    from ..fitting._fit import _check_dataset_inputs
    from ..fitting.parameters import build

    if initial_state not in ("fixed", "fit"):
        raise InputError(f"initial_state must be 'fixed' or 'fit', got {initial_state!r}")
    space = build(model, free, bounds, initial, initial_state == "fit", model.state_names, np.asarray(model.y0), None)
    _check_dataset_inputs(model, [data], space.names)
    names, x0, lower, upper = list(space.names), space.x0, space.lower, space.upper
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
