"""Free parameters: names, bounds, scales (lin, log, log10) and the maps between the natural
values and the coordinates optimisers work in.

Every optimiser works on the *scaled* value (``log``/``log10`` of a parameter on such a scale,
the value itself on ``lin``), within the scaled bounds. The bounded optimisers (`LBFGSB`,
`BoundedLevenbergMarquardt`) project onto those bounds; the others work on an unconstrained
coordinate ``z`` from a smooth transform of the scaled value (log for one bound, a scaled
logistic for two)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import InputError, InputTypeError, ParameterError

SCALES = ("lin", "log", "log10")


@dataclasses.dataclass(frozen=True)
class ParameterSpace:
    """``names`` of the free parameters (model parameters, ``"y0:<state>"`` initial states,
    the loss's nuisance parameters last), their ``lower``/``upper`` bounds (numpy arrays,
    +-inf where unbounded, natural values), the start ``x0`` (natural values) and each one's
    ``scales`` entry (``"lin"``, ``"log"``, ``"log10"``)."""

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    x0: np.ndarray
    scales: tuple[str, ...] | None = None

    def _scales(self) -> tuple[str, ...]:
        return self.scales if self.scales is not None else ("lin",) * len(self.names)

    def to_scaled(self, theta: Any) -> Any:
        """Natural -> the optimiser's scale (``log``/``log10`` where the scale says so)."""
        sc = self._scales()
        if all(k == "lin" for k in sc):
            return theta
        logs = np.array([k == "log" for k in sc])
        log10s = np.array([k == "log10" for k in sc])
        safe = jnp.where(logs | log10s, jnp.maximum(theta, 1e-300), 1.0)
        return jnp.where(logs, jnp.log(safe), jnp.where(log10s, jnp.log10(safe), theta))

    def from_scaled(self, x: Any) -> Any:
        """The optimiser's scale -> natural."""
        sc = self._scales()
        if all(k == "lin" for k in sc):
            return x
        logs = np.array([k == "log" for k in sc])
        log10s = np.array([k == "log10" for k in sc])
        return jnp.where(logs, jnp.exp(jnp.where(logs, x, 0.0)),
                         jnp.where(log10s, 10.0 ** jnp.where(log10s, x, 0.0), x))

    def scaled_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The bounds on the optimiser's scale (a lower bound of 0 on a log scale: -inf)."""
        sc = np.array(self._scales())
        with np.errstate(divide="ignore", invalid="ignore"):
            lo = np.where(sc == "log", np.log(self.lower), np.where(sc == "log10", np.log10(self.lower), self.lower))
            hi = np.where(sc == "log", np.log(self.upper), np.where(sc == "log10", np.log10(self.upper), self.upper))
        return lo.astype(float), hi.astype(float)

    def _kinds(self) -> tuple:
        """Per parameter: bounded on both sides, below only, above only; finite stand-ins
        (on the optimiser's scale)."""
        lo, hi = self.scaled_bounds()
        both = np.isfinite(lo) & np.isfinite(hi)
        low_only = np.isfinite(lo) & ~np.isfinite(hi)
        high_only = ~np.isfinite(lo) & np.isfinite(hi)
        return both, low_only, high_only, np.where(np.isfinite(lo), lo, 0.0), np.where(np.isfinite(hi), hi, 1.0)

    def to_internal(self, theta: Any) -> Any:
        """Natural -> unconstrained."""
        x = self.to_scaled(theta)
        both, low_only, high_only, safe_lo, safe_hi = self._kinds()
        span = np.where(both, safe_hi - safe_lo, 1.0)
        frac = jnp.clip((x - safe_lo) / span, 1e-300, 1 - 1e-16)
        return jnp.where(both, jnp.log(frac) - jnp.log1p(-frac),
                         jnp.where(low_only, jnp.log(jnp.maximum(x - safe_lo, 1e-300)),
                                   jnp.where(high_only, jnp.log(jnp.maximum(safe_hi - x, 1e-300)), x)))

    def to_natural(self, z: Any) -> Any:
        """Unconstrained -> natural. The logistic is ``jax.nn.sigmoid``, whose derivative is
        finite (0 far out) for every ``z``: ``1 / (1 + exp(-z))`` differentiated gave NaN past
        ``|z| ~ 709``, which stalled a line search for good."""
        both, low_only, high_only, safe_lo, safe_hi = self._kinds()
        x = jnp.where(both, safe_lo + (safe_hi - safe_lo) * jax.nn.sigmoid(z),
                      jnp.where(low_only, safe_lo + jnp.exp(z), jnp.where(high_only, safe_hi - jnp.exp(z), z)))
        return self.from_scaled(x)


def build(model: Any, free: Sequence[str] | None, bounds: Mapping[str, tuple[float, float]] | str | None,
          initial: Mapping[str, float] | None, fit_initial_state: bool, state_names: Sequence[str],
          y0: np.ndarray, nuisance: str | Sequence[str] | None,
          scales: Mapping[str, str] | None = None) -> ParameterSpace:
    """The free parameters of a fit, checked: names, bounds, start and scales (``nuisance``:
    the loss's own estimated parameters, each a positive scale on ``log`` unless ``scales``
    says otherwise)."""
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
    nuisance = [] if nuisance is None else [nuisance] if isinstance(nuisance, str) else list(nuisance)
    for extra in nuisance:
        if extra in params:  # its estimate overwrote the model parameter's in every result (found by probing)
            raise ParameterError(f"model {model.name!r} has a parameter named {extra!r}, the name of the loss's "
                                 f"own fitted {extra!r}: rename the model's parameter")
        names.append(extra)
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
    for extra in nuisance:
        bounds.setdefault(extra, (0.0, np.inf))  # a scale: positive
    lower = np.array([float(bounds.get(n, (-np.inf, np.inf))[0]) for n in names])
    upper = np.array([float(bounds.get(n, (-np.inf, np.inf))[1]) for n in names])
    x0 = np.array(start)
    if np.any(lower >= upper):
        raise InputError(f"bounds: lower must be below upper for {[n for n, a, b in zip(names, lower, upper) if a >= b]}")
    outside = [n for n, v, a, b in zip(names, x0, lower, upper) if not (a < v < b)]
    if outside:
        raise InputError(f"starting values of {outside} are not strictly inside their bounds "
                         f"(give initial={{...}} or widen bounds)")
    if scales is not None and not isinstance(scales, Mapping):
        raise InputTypeError(f"scales must be a dict of name -> 'lin', 'log' or 'log10', got {scales!r}")
    scales = dict(scales or {})
    bad = sorted(set(scales) - set(names))
    if bad:
        raise ParameterError(f"scales given for {bad}, which are not free; free: {names}")
    wrong = {n: k for n, k in scales.items() if k not in SCALES}
    if wrong:
        raise InputError(f"scales must be one of {SCALES}; got {wrong}")
    for extra in nuisance:
        scales.setdefault(extra, "log")
    chosen = tuple(scales.get(n, "lin") for n in names)
    negative = [n for n, k, a in zip(names, chosen, lower) if k != "lin" and not a >= 0]
    if negative:
        raise InputError(f"parameters {negative} are on a log scale but may be negative: give bounds with a lower "
                         "bound >= 0 (e.g. bounds={name: (1e-5, 1e5)}) or scale 'lin'")
    return ParameterSpace(tuple(names), lower, upper, x0, chosen)
