"""A PEtab problem (YAML file and its tables) as arrays: the `Layout` behind the objective.

The tables are read with the ``petab`` library (PEtab 1.0 format), the SBML model with
`simkit.petab.sbml`. Everything PEtab can say about where a value comes from (parameter
table, condition table, measurement-table overrides) becomes index arrays
(`simkit.petab.mapping`), so that `PetabProblem.objective` is one pure JAX function.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DependencyError, InputError
from ..model import ODEModel
from .mapping import SourceTable, Sources
from .noise import check_noise_model
from .priors import Priors, read_priors
from .sbml import SbmlModel, UnsupportedFeatureError, read_sbml

SCALES = ("lin", "log", "log10")


def _petab() -> Any:
    try:
        import petab.v1 as petab
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise DependencyError("simkit.petab needs the petab library: pip install 'simkit-jax[petab]'") from error
    return petab


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip() == ""


def to_scale(value: np.ndarray, scales: tuple[str, ...]) -> np.ndarray:
    """Linear values on their PEtab scales (``lin``, ``log``, ``log10``), elementwise."""
    value = np.asarray(value, dtype=float)
    out = value.copy()
    for i, s in enumerate(scales):
        out[i] = np.log(value[i]) if s == "log" else np.log10(value[i]) if s == "log10" else value[i]
    return out


@dataclasses.dataclass(frozen=True)
class Observable:
    """One PEtab observable: formula and noise formula as SymPy, its noise model, and how
    many ``observableParameter{n}`` / ``noiseParameter{n}`` placeholders each uses."""

    id: str
    formula: Any
    noise_formula: Any
    distribution: str
    transformation: str
    n_observable_parameters: int
    n_noise_parameters: int


@dataclasses.dataclass(frozen=True)
class Layout:
    """The problem as arrays: what `simkit.petab.objective` needs besides the model.

    ``pairs`` are the (pre-equilibration condition or "", simulation condition) pairs that
    have measurements; per pair, the model's parameters (``parameters``), initial-state
    overrides (``state_override`` mask and ``state_values``), and the same for the
    pre-equilibration condition. ``save_times`` is the sorted union of measurement times;
    per observable, its measurements: pair index, time index, measured values, override
    sources.
    """

    theta_nominal: np.ndarray          # (n_theta,) every PEtab parameter, linear scale
    estimated: np.ndarray              # (n_est,) indices into theta of the estimated ones
    scales: tuple[str, ...]            # (n_est,)
    pairs: tuple[tuple[str, str], ...]
    preequilibrated: np.ndarray        # (n_pairs,) bool
    parameters: Sources                # (n_pairs, n_params)
    state_override: np.ndarray         # (n_pairs, n_states) bool
    state_values: Sources              # (n_pairs, n_states)
    pre_parameters: Sources            # (n_pairs, n_params)
    pre_state_override: np.ndarray     # (n_pairs, n_states) bool
    pre_state_values: Sources          # (n_pairs, n_states)
    save_times: np.ndarray             # (n_times,), inf last where a measurement is at steady state
    observables: tuple[Observable, ...]
    measurement_pair: tuple[np.ndarray, ...]   # per observable: (n_meas_j,) pair index
    measurement_time: tuple[np.ndarray, ...]   # per observable: (n_meas_j,) index into save_times
    measurement_value: tuple[np.ndarray, ...]  # per observable: (n_meas_j,)
    observable_overrides: tuple[Sources, ...]  # per observable: (n_meas_j, n_observable_parameters)
    noise_overrides: tuple[Sources, ...]       # per observable: (n_meas_j, n_noise_parameters)
    priors: Priors                     # objective priors of the estimated parameters
    start_priors: Priors               # the distributions starts are drawn from (default: uniform)


def _check_tables(problem: Any, petab: Any) -> None:
    pdf = problem.parameter_df
    for scale in pdf["parameterScale"].unique():
        if scale not in SCALES:
            raise UnsupportedFeatureError(f"PEtab parameterScale {scale!r} is not supported (supported: lin, log, log10)")
    mdf = problem.measurement_df
    times = mdf["time"].to_numpy(dtype=float)
    if np.isnan(times).any() or (times < 0).any():
        raise InputError("PEtab measurement times must be >= 0 or inf (simulations start at t = 0)")
    if getattr(problem, "mapping_df", None) is not None and len(problem.mapping_df):
        raise UnsupportedFeatureError("PEtab mapping tables are not supported")
    for column in ("observableTransformation", "noiseDistribution"):
        if column not in problem.observable_df.columns:
            problem.observable_df[column] = "lin" if column == "observableTransformation" else "normal"


def _sympify(text: Any, sympy: Any, petab_math: Any) -> Any:
    expr = petab_math.sympify_petab(text)
    expr = sympy.sympify(expr)
    return expr.xreplace({s: sympy.Symbol(s.name) for s in expr.free_symbols})


def _observables(problem: Any, sympy: Any) -> tuple[Observable, ...]:
    from petab.v1 import math as petab_math

    out = []
    for oid, row in problem.observable_df.iterrows():
        distribution = row.get("noiseDistribution")
        transformation = row.get("observableTransformation")
        distribution = "normal" if _missing(distribution) else str(distribution)
        transformation = "lin" if _missing(transformation) else str(transformation)
        check_noise_model(str(oid), distribution, transformation)
        formula = _sympify(row["observableFormula"], sympy, petab_math)
        noise = _sympify(row["noiseFormula"], sympy, petab_math)

        def count(expr: Any, stem: str) -> int:
            found = [int(s.name[len(stem):].split("_", 1)[0]) for s in expr.free_symbols
                     if s.name.startswith(stem) and s.name.endswith(f"_{oid}")]
            return max(found, default=0)

        out.append(Observable(str(oid), formula, noise, distribution, transformation,
                              count(formula, "observableParameter"), count(noise, "noiseParameter")))
    return tuple(out)


def build_layout(problem: Any, sbml: SbmlModel) -> Layout:
    """The `Layout` of a ``petab.v1.Problem`` whose model is ``sbml``."""
    import sympy

    petab = _petab()
    _check_tables(problem, petab)
    pdf = problem.parameter_df
    theta_ids = [str(i) for i in pdf.index]
    table = SourceTable(theta_ids)
    theta_nominal = pdf["nominalValue"].to_numpy(dtype=float)
    estimate = pdf["estimate"].to_numpy(dtype=int).astype(bool)
    estimated = np.flatnonzero(estimate)
    scales = tuple(str(s) for s in pdf["parameterScale"].to_numpy()[estimated])

    state_pos = {s: i for i, s in enumerate(sbml.state_ids)}
    param_pos = {p: i for i, p in enumerate(sbml.parameter_ids)}
    default_params = []
    for p in sbml.parameter_ids:
        if p in table.position:
            default_params.append((table.position[p], 0.0))
        else:
            default_params.append((-1, sbml.parameter_values[p]))

    cdf = problem.condition_df
    for column in cdf.columns:
        if column == "conditionName":
            continue
        if column not in param_pos and column not in state_pos:
            target = "an assignment-rule target" if column in sbml.assignments else "no model entity"
            raise UnsupportedFeatureError(
                f"PEtab condition table column {column!r} is {target}: only parameters, "
                "compartments and species (initial values) can be set by a condition")

    def condition(cid: str) -> tuple[list[tuple[int, float]], list[bool], list[tuple[int, float]]]:
        params = list(default_params)
        override = [False] * len(sbml.state_ids)
        values = [(-1, 0.0)] * len(sbml.state_ids)
        if cid == "":
            return params, override, values
        if cid not in cdf.index:
            raise InputError(f"PEtab condition {cid!r} is not in the condition table")
        row = cdf.loc[cid]
        for column in cdf.columns:
            if column == "conditionName" or _missing(row[column]):
                continue
            where = f"condition {cid!r}, column {column!r}"
            if column in param_pos:
                params[param_pos[column]] = table.source(row[column], where)
            else:
                override[state_pos[column]] = True
                values[state_pos[column]] = table.source(row[column], where)
        return params, override, values

    mdf = problem.measurement_df.copy()
    pre_column = "preequilibrationConditionId"
    mdf[pre_column] = mdf[pre_column].map(lambda v: "" if _missing(v) else str(v)) if pre_column in mdf else ""
    pairs = tuple(dict.fromkeys(zip(mdf[pre_column], mdf["simulationConditionId"].astype(str))))
    pair_pos = {p: i for i, p in enumerate(pairs)}
    rows = [condition(sim) for _, sim in pairs]
    pre_rows = [condition(pre) for pre, _ in pairs]

    save_times = np.unique(mdf["time"].to_numpy(dtype=float))
    observables = _observables(problem, sympy)
    obs_pos = {o.id: i for i, o in enumerate(observables)}
    per_pair: list[list[int]] = [[] for _ in observables]
    per_time: list[list[int]] = [[] for _ in observables]
    per_value: list[list[float]] = [[] for _ in observables]
    per_obs: list[list[list[tuple[int, float]]]] = [[] for _ in observables]
    per_noise: list[list[list[tuple[int, float]]]] = [[] for _ in observables]
    for n, row in enumerate(mdf.itertuples(index=False)):
        oid = str(row.observableId)
        if oid not in obs_pos:
            raise InputError(f"PEtab measurement row {n}: observable {oid!r} is not in the observable table")
        j = obs_pos[oid]
        obs = observables[j]
        per_pair[j].append(pair_pos[(getattr(row, pre_column), str(row.simulationConditionId))])
        per_time[j].append(int(np.searchsorted(save_times, float(row.time))))
        per_value[j].append(float(row.measurement))
        for key, need, sink in (("observableParameters", obs.n_observable_parameters, per_obs),
                                ("noiseParameters", obs.n_noise_parameters, per_noise)):
            cell = getattr(row, key, None)
            cells = [] if _missing(cell) else petab.split_parameter_replacement_list(cell)
            if len(cells) < need:
                raise InputError(f"PEtab measurement row {n} (observable {oid!r}): {key} gives "
                                 f"{len(cells)} values, the formula needs {need}")
            sink[j].append([table.source(c, f"measurement row {n}, {key}") for c in cells[:need]])

    return Layout(
        theta_nominal=theta_nominal, estimated=estimated, scales=scales, pairs=pairs,
        preequilibrated=np.array([pre != "" for pre, _ in pairs]),
        parameters=table.build([r[0] for r in rows]),
        state_override=np.array([r[1] for r in rows], dtype=bool).reshape(len(pairs), -1),
        state_values=table.build([r[2] for r in rows]),
        pre_parameters=table.build([r[0] for r in pre_rows]),
        pre_state_override=np.array([r[1] for r in pre_rows], dtype=bool).reshape(len(pairs), -1),
        pre_state_values=table.build([r[2] for r in pre_rows]),
        save_times=save_times, observables=observables,
        measurement_pair=tuple(np.array(v, dtype=np.int32) for v in per_pair),
        measurement_time=tuple(np.array(v, dtype=np.int32) for v in per_time),
        measurement_value=tuple(np.array(v, dtype=float) for v in per_value),
        observable_overrides=tuple(table.build(v) for v in per_obs),
        noise_overrides=tuple(table.build(v) for v in per_noise),
        priors=read_priors(pdf, estimated, _missing),
        start_priors=read_priors(pdf, estimated, _missing, use="initialization"),
    )


def _without_visualization(yaml_path: Path) -> dict:
    """The problem's YAML without its visualization files: plotting specifications, which a fit
    does not read (a problem whose YAML lists a missing one still loads)."""
    import yaml

    with open(yaml_path) as f:
        config = yaml.safe_load(f)
    for entry in config.get("problems", []) if isinstance(config, dict) else []:
        if isinstance(entry, dict):
            entry.pop("visualization_files", None)
    return config


def read_problem(yaml_path: str | Path) -> tuple[Any, SbmlModel]:
    """The ``petab.v1.Problem`` of a PEtab YAML file and its SBML model as an `SbmlModel`."""
    petab = _petab()
    yaml_path = Path(yaml_path)
    if not yaml_path.exists():
        raise InputError(f"PEtab problem file {str(yaml_path)!r} does not exist")
    with warnings.catch_warnings():
        # the petab library uses pandas options that pandas 3 deprecates (warnings attributed to petab)
        warnings.filterwarnings("ignore", message="The 'float_precision' argument is deprecated")
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"petab\.")
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"petab\.")
        problem = petab.Problem.from_yaml(_without_visualization(yaml_path), base_path=str(yaml_path.parent))
    if problem.model is None:
        raise InputError(f"PEtab problem {str(yaml_path)!r} has no model")
    if problem.model.type_id != "sbml":
        raise UnsupportedFeatureError(f"PEtab model language {problem.model.type_id!r} is not supported (SBML only)")
    return problem, read_sbml(problem.model.sbml_document,
                              set_elsewhere=[c for c in problem.condition_df.columns if c != "conditionName"])


def ode_model(sbml: SbmlModel, layout: Layout, name: str) -> ODEModel:
    """The `simkit.ODEModel` of an SBML model, its defaults from the PEtab nominal values."""
    import jax.numpy as jnp

    rhs, initial = sbml.to_jax()
    theta = layout.theta_nominal
    values = {}
    ids = list(sbml.parameter_ids)
    nominal = layout.parameters.values(jnp.asarray(theta))
    first = np.asarray(nominal[0]) if len(layout.pairs) else np.array([sbml.parameter_values[p] for p in ids])
    for k, p in enumerate(ids):
        v = float(first[k])
        values[p] = v if np.isfinite(v) else 0.0
    y0 = np.asarray(initial(values), dtype=float)
    y0 = np.where(np.isfinite(y0), y0, 0.0)
    return ODEModel(rhs=rhs, params=values, y0=y0, state_names=sbml.state_ids, name=name, stiff=True,
                    source="PEtab problem (SBML model)")
