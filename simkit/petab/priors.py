"""PEtab's objective priors: the negative log-density of an estimated parameter's prior.

A parameter's prior (PEtab 1.0: ``objectivePriorType`` and ``objectivePriorParameters`` in the
parameter table, ``a;b``) is a density of its value on the linear scale, or of its value on
its parameter scale for the ``parameterScale...`` types, with no Jacobian of the scale (as
pyPESTO evaluates them). For a value ``v`` (``u = log v`` for the log types):

- uniform, parameterScaleUniform ``(lower; upper)``: ``log(upper - lower)`` inside, ``inf`` outside
- normal, parameterScaleNormal ``(mean; sd)``:  ``log(2 pi sd^2) / 2 + ((v - mean) / sd)^2 / 2``
- laplace, parameterScaleLaplace ``(location; scale)``: ``log(2 scale) + |v - location| / scale``
- logNormal ``(mean; sd of log v)``: ``log(2 pi sd^2) / 2 + log v + ((u - mean) / sd)^2 / 2``
- logLaplace ``(location; scale of log v)``: ``log(2 scale) + log v + |u - location| / scale``

The objective of a problem with priors is its negative log-likelihood plus these terms: the
negative log-posterior up to a constant. The same types in ``initializationPriorType`` (and
``initializationPriorParameters``) say how starts are drawn (`sample`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax.numpy as jnp
import numpy as np

from ..errors import InputError
from .noise import NORMAL_OFFSET
from .sbml import UnsupportedFeatureError

PRIOR_TYPES = ("uniform", "normal", "laplace", "logNormal", "logLaplace",
               "parameterScaleUniform", "parameterScaleNormal", "parameterScaleLaplace")
# types whose term is a sum of squares (`prior_residuals`); the Laplace types are not smooth
SQUARES = ("uniform", "normal", "logNormal", "parameterScaleUniform", "parameterScaleNormal")


@dataclasses.dataclass(frozen=True)
class Priors:
    """The priors of the estimated parameters: ``types[i]`` ("" for none) and its two
    parameters ``parameters[i]`` ``(n_est, 2)``."""

    types: tuple[str, ...]
    parameters: np.ndarray

    @property
    def any(self) -> bool:
        return any(self.types)

    @property
    def count(self) -> int:
        """The number of priors (estimated parameters with one)."""
        return sum(map(bool, self.types))

    @property
    def squares(self) -> bool:
        """Every prior has a sum-of-squares form (`prior_residuals`)."""
        return all(t in SQUARES for t in self.types if t)


def read_priors(parameter_df: Any, estimated: np.ndarray, missing: Any, use: str = "objective") -> Priors:
    """The `Priors` of the estimated rows of a PEtab parameter table: ``use`` "objective"
    (``objectivePriorType``, ``objectivePriorParameters``) or "initialization" (the
    distribution starts are drawn from). ``missing(cell)``: the cell is empty. Priors of
    parameters that are not estimated are ignored (PEtab); a ``parameterScaleUniform`` without
    parameters spans the bounds."""
    n = len(estimated)
    types, parameters = [""] * n, np.zeros((n, 2))
    type_column, parameter_column = f"{use}PriorType", f"{use}PriorParameters"
    if type_column not in parameter_df.columns:
        return Priors(tuple(types), parameters)
    ids = [str(i) for i in parameter_df.index]
    for k, row in enumerate(estimated):
        kind = parameter_df[type_column].iloc[row]
        if missing(kind):
            continue
        kind, pid = str(kind).strip(), ids[row]
        if kind not in PRIOR_TYPES:
            raise UnsupportedFeatureError(f"parameter {pid!r}: PEtab {type_column} {kind!r} is not supported "
                                          f"(supported: {', '.join(PRIOR_TYPES)})")
        cell = parameter_df[parameter_column].iloc[row] if parameter_column in parameter_df else None
        if kind == "parameterScaleUniform" and missing(cell):
            if use == "initialization":
                continue  # the default start distribution
            from .layout import to_scale  # (layout imports this module)

            scale = str(parameter_df["parameterScale"].iloc[row])
            bounds = parameter_df[["lowerBound", "upperBound"]].iloc[row].to_numpy(dtype=float)
            cell = ";".join(repr(float(b)) for b in to_scale(bounds, (scale, scale)))
        try:
            a, b = (float(v) for v in str(cell).split(";"))
        except ValueError:
            raise InputError(f"parameter {pid!r}: {parameter_column} must be two numbers 'a;b' for "
                             f"{type_column} {kind!r}, got {cell!r}") from None
        if not (math.isfinite(a) and math.isfinite(b)):
            raise InputError(f"parameter {pid!r}: {parameter_column} must be finite, got {cell!r}")
        if "Uniform" in kind or kind == "uniform":
            if not a < b:
                raise InputError(f"parameter {pid!r}: a {kind} prior needs lower < upper, got {cell!r}")
        elif not b > 0:
            raise InputError(f"parameter {pid!r}: a {kind} prior needs a positive second parameter "
                             f"(sd or scale), got {cell!r}")
        if kind.startswith("log") and not float(parameter_df["lowerBound"].iloc[row]) > 0:
            raise InputError(f"parameter {pid!r}: a {kind} prior needs a positive lower bound")
        types[k], parameters[k] = kind, (a, b)
    return Priors(tuple(types), parameters)


def sample(priors: Priors, rng: np.random.Generator, n: int, scales: tuple[str, ...]) -> dict[int, np.ndarray]:
    """``n`` draws of each parameter that has a prior, on its scale: ``{index: (n,)}``."""
    out = {}
    for i, kind in enumerate(priors.types):
        if not kind:
            continue
        a, b = (float(p) for p in priors.parameters[i])
        base = kind.replace("parameterScale", "").replace("log", "").lower()
        w = (rng.uniform(a, b, n) if base == "uniform" else rng.normal(a, b, n) if base == "normal"
             else rng.laplace(a, b, n))
        if not kind.startswith("parameterScale"):  # a value (or for the log types its log) on the linear scale
            v = np.exp(w) if kind.startswith("log") else w
            with np.errstate(divide="ignore", invalid="ignore"):
                w = np.log(v) if scales[i] == "log" else np.log10(v) if scales[i] == "log10" else v
        out[i] = w
    return out


def _value(kind: str, x: Any, v: Any) -> Any:
    """The value a prior is a density of: ``x`` on the parameter scale or ``v`` linear (its
    log for the log types)."""
    if kind.startswith("parameterScale"):
        return x
    return jnp.log(v) if kind.startswith("log") else v


def negative_log_prior(priors: Priors, x: Any, v: Any) -> Any:
    """Sum of the priors' negative log-densities (module docstring) at ``x`` (the estimated
    parameters on their scales, ``(n_est,)``) and ``v`` (the same on the linear scale);
    ``inf`` outside a uniform prior's range."""
    total = jnp.zeros((), jnp.result_type(x))
    for i, kind in enumerate(priors.types):
        if not kind:
            continue
        a, b = (float(p) for p in priors.parameters[i])
        w = _value(kind, x[i], v[i])
        if kind in ("uniform", "parameterScaleUniform"):
            term = jnp.where((w >= a) & (w <= b), math.log(b - a), jnp.inf)
        elif kind in ("normal", "parameterScaleNormal", "logNormal"):
            term = 0.5 * math.log(2.0 * math.pi * b * b) + 0.5 * ((w - a) / b) ** 2
        else:
            term = math.log(2.0 * b) + jnp.abs(w - a) / b
        total = total + term + (w if kind.startswith("log") else 0.0)
    return total


def prior_residuals(priors: Priors, x: Any, v: Any) -> tuple[Any, Any]:
    """The priors as pairs ``(r, c)`` with ``term = (r**2 + c**2) / 2 - NORMAL_OFFSET`` each, as
    `simkit.petab.noise.normal_residuals` (the Laplace types have none: `Priors.squares`).

    Returns
    -------
    tuple of jax.Array
        ``(r, c)``, each ``(n_priors,)``.
    """
    rs, cs = [], []
    for i, kind in enumerate(priors.types):
        if not kind:
            continue
        if kind not in SQUARES:
            raise InputError(f"a {kind} prior has no sum-of-squares form; use method='lbfgsb'")
        a, b = (float(p) for p in priors.parameters[i])
        w = _value(kind, x[i], v[i])
        if kind in ("uniform", "parameterScaleUniform"):
            r, norm = jnp.where((w >= a) & (w <= b), 0.0, jnp.inf), math.log(b - a) + NORMAL_OFFSET
        else:
            r = (w - a) / b
            norm = 0.5 * math.log(2.0 * math.pi * b * b) + NORMAL_OFFSET + (w if kind == "logNormal" else 0.0)
        rs.append(r)
        cs.append(jnp.sqrt(2.0 * jnp.maximum(norm, 1e-12)))
    empty = jnp.zeros((0,), jnp.result_type(x))
    return (jnp.stack(rs), jnp.stack(cs)) if rs else (empty, empty)
