"""Free parameters: names, bounds, and the smooth transforms that keep bounded parameters
inside their bounds for unconstrained solvers (log for a lower bound, a scaled logistic for
two bounds)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np

from ..errors import InputError, InputTypeError, ParameterError


@dataclasses.dataclass(frozen=True)
class ParameterSpace:
    """``names`` of the free parameters (model parameters, ``"y0:<state>"`` initial states,
    the loss's nuisance parameter last), their ``lower``/``upper`` bounds (numpy arrays,
    +-inf where unbounded) and the start ``x0`` (natural values)."""

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    x0: np.ndarray

    def _kinds(self) -> tuple:
        """Per parameter: bounded on both sides, below only, above only; finite stand-ins."""
        lo, hi = self.lower, self.upper
        both = np.isfinite(lo) & np.isfinite(hi)
        low_only = np.isfinite(lo) & ~np.isfinite(hi)
        high_only = ~np.isfinite(lo) & np.isfinite(hi)
        return both, low_only, high_only, np.where(np.isfinite(lo), lo, 0.0), np.where(np.isfinite(hi), hi, 1.0)

    def to_internal(self, theta: Any) -> Any:
        """Natural -> unconstrained."""
        both, low_only, high_only, safe_lo, safe_hi = self._kinds()
        span = np.where(both, safe_hi - safe_lo, 1.0)
        frac = jnp.clip((theta - safe_lo) / span, 1e-300, 1 - 1e-16)
        return jnp.where(both, jnp.log(frac) - jnp.log1p(-frac),
                         jnp.where(low_only, jnp.log(jnp.maximum(theta - safe_lo, 1e-300)),
                                   jnp.where(high_only, jnp.log(jnp.maximum(safe_hi - theta, 1e-300)), theta)))

    def to_natural(self, z: Any) -> Any:
        """Unconstrained -> natural."""
        both, low_only, high_only, safe_lo, safe_hi = self._kinds()
        return jnp.where(both, safe_lo + (safe_hi - safe_lo) * (1 / (1 + jnp.exp(-z))),
                         jnp.where(low_only, safe_lo + jnp.exp(z), jnp.where(high_only, safe_hi - jnp.exp(z), z)))


def build(model: Any, free: Sequence[str] | None, bounds: Mapping[str, tuple[float, float]] | str | None,
          initial: Mapping[str, float] | None, fit_initial_state: bool, state_names: Sequence[str],
          y0: np.ndarray, nuisance: str | None) -> ParameterSpace:
    params = model.params
    if free is None:
        free = [k for k, v in params.items() if np.ndim(v) == 0]
    if isinstance(free, (str, bytes)):
        raise InputTypeError(f"free must be a list of parameter names, e.g. [{free!r}], got the string {free!r}")
    free = list(free)
    if not free and not fit_initial_state:
        raise InputError(f"free is empty: nothing to fit (model {model.name!r} has parameters {list(params)[:20]}; "
                         "or fit the initial state with initial_state='fit')")
    unknown = [n for n in free if n not in params]
    if unknown:
        raise ParameterError(f"model {model.name!r} has no parameter(s) {unknown}; valid names are {list(params)}")
    arrays = [n for n in free if np.ndim(params[n]) != 0]
    if arrays:
        raise ParameterError(f"free parameters must be scalars; {arrays} are arrays")
    names = free + ([f"y0:{s}" for s in state_names] if fit_initial_state else [])
    start = [float(params[n]) for n in free] + ([float(v) for v in y0] if fit_initial_state else [])
    if nuisance is not None:
        if nuisance in params:  # its estimate overwrote the model parameter's in every result (found by probing)
            raise ParameterError(f"model {model.name!r} has a parameter named {nuisance!r}, the name of the loss's "
                                 f"own fitted {nuisance!r}: rename the model's parameter")
        names.append(nuisance)
        start.append(1.0)
    initial = dict(initial or {})
    bad = sorted(set(initial) - set(names))
    if bad:
        raise ParameterError(f"initial values given for {bad}, which are not free; free: {names}")
    start = [float(initial.get(n, s)) for n, s in zip(names, start)]
    if isinstance(bounds, str):
        if bounds != "positive":
            raise InputError(f"bounds must be 'positive' or a dict of name -> (low, high), got {bounds!r}")
        bounds = {n: (0.0, np.inf) for n in names}
    bounds = dict(bounds or {})
    bad = sorted(set(bounds) - set(names))
    if bad:
        raise ParameterError(f"bounds given for {bad}, which are not free; free: {names}")
    if nuisance is not None:
        bounds.setdefault(nuisance, (0.0, np.inf))  # a scale: positive
    lower = np.array([float(bounds.get(n, (-np.inf, np.inf))[0]) for n in names])
    upper = np.array([float(bounds.get(n, (-np.inf, np.inf))[1]) for n in names])
    x0 = np.array(start)
    if np.any(lower >= upper):
        raise InputError(f"bounds: lower must be below upper for {[n for n, a, b in zip(names, lower, upper) if a >= b]}")
    outside = [n for n, v, a, b in zip(names, x0, lower, upper) if not (a < v < b)]
    if outside:
        raise InputError(f"starting values of {outside} are not strictly inside their bounds "
                         f"(give initial={{...}} or widen bounds)")
    return ParameterSpace(tuple(names), lower, upper, x0)
