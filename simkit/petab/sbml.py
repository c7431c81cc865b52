"""An SBML model as SymPy expressions, then as pure JAX functions.

`read_sbml` reads a model with python-libsbml and turns its MathML into SymPy (sbmlmath):
species, parameters and compartments, reactions (kinetic laws with their local parameters,
constant stoichiometries), rate rules, assignment rules, initial assignments and function
definitions (expanded), and events that assign states: triggered at a time (``time >= t_e``,
``t_e`` a formula of parameters, `TimedEvent`) or when a formula of the states crosses a value
(``U < 1e-8``, `StateEvent`). SBML features outside that set are refused by name
(`UnsupportedFeatureError`). `SbmlModel.to_jax` turns the expressions into JAX code with
``sympy.lambdify``.

Semantics (SBML Level 3): a species without ``hasOnlySubstanceUnits`` is a concentration;
its rate of change is the sum of ``stoichiometry * rate`` over reactions divided by its
compartment's size (reaction rates are amounts per time). Boundary species change only by
rules. Assignment rules are substituted into every expression that uses their target.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from ..errors import DependencyError, InputError


class UnsupportedFeatureError(InputError):
    """A PEtab or SBML feature that `simkit.petab` does not implement (the message names it).

    Also a ``ValueError``.

    Examples
    --------
    >>> from simkit.petab import UnsupportedFeatureError
    >>> issubclass(UnsupportedFeatureError, ValueError)
    True
    """


def _imports() -> tuple[Any, Any, Any]:
    try:
        import libsbml
        import sbmlmath
        import sympy
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise DependencyError(
            "simkit.petab needs python-libsbml, sbmlmath and sympy: pip install 'simkit-jax[petab]'"
        ) from error
    return libsbml, sbmlmath, sympy


@dataclasses.dataclass(frozen=True)
class TimedEvent:
    """An SBML event triggered when time reaches ``time`` (a formula of parameters).

    At that time it sets the states ``targets`` (indices into ``state_ids``) to ``values``
    (formulas of states, parameters and time, evaluated just before it). ``at_start``: the
    trigger's ``initialValue`` is false, so an event whose time is at or before 0 fires at 0
    (else it never fires).
    """

    id: str
    time: Any
    targets: tuple[int, ...]
    values: tuple[Any, ...]
    at_start: bool


@dataclasses.dataclass(frozen=True)
class StateEvent:
    """An SBML event triggered when a comparison of states, parameters and time turns true.

    ``root`` is ``lhs - rhs`` of the trigger's comparison (``<``, ``<=``, ``>``, ``>=``); the
    event fires when it crosses zero the way that makes the comparison true: ``direction`` -1
    for ``<``/``<=`` (downwards), +1 for ``>``/``>=``. It then sets the states ``targets`` to
    ``values`` (formulas of states, parameters and time, evaluated at the crossing).
    ``at_start``: the trigger's ``initialValue`` is false, so a comparison already true at 0
    fires at 0.
    """

    id: str
    root: Any
    direction: int
    targets: tuple[int, ...]
    values: tuple[Any, ...]
    at_start: bool


@dataclasses.dataclass(frozen=True)
class SbmlModel:
    """An SBML model as SymPy expressions of plain symbols named by SBML ids.

    Attributes
    ----------
    state_ids : tuple of str
        The ODE's states: species not set by assignment rules, and parameters or
        compartments with rate rules, in document order.
    rates : tuple of sympy.Expr
        ``d state / dt`` for each state, in terms of states, ``parameter_ids`` and ``time``.
    initial : tuple of sympy.Expr
        Each state's initial value, in terms of ``parameter_ids``.
    parameter_ids : tuple of str
        Constant parameters and compartments (the ODEModel's ``params``).
    parameter_values : dict
        Their values in the SBML file.
    assignments : dict
        ``target id -> expression`` (assignment rules and initial assignments of constant
        parameters), already substituted into ``rates`` and ``initial``; kept so that other
        formulas (PEtab observables) can use the targets.
    time : sympy.Symbol
        The symbol for time.
    name : str
        The model's id.
    events : tuple of TimedEvent
        Events triggered at a time, in document order.
    state_events : tuple of StateEvent
        Events triggered by the states, in document order.
    """

    state_ids: tuple[str, ...]
    rates: tuple[Any, ...]
    initial: tuple[Any, ...]
    parameter_ids: tuple[str, ...]
    parameter_values: dict[str, float]
    assignments: dict[str, Any]
    time: Any
    name: str
    events: tuple[TimedEvent, ...] = ()
    state_events: tuple[StateEvent, ...] = ()

    def substitute(self, expr: Any) -> Any:
        """``expr`` with assignment-rule targets replaced by their expressions (recursively)."""
        return _substitute(expr, self.assignments)

    def to_jax(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """``(rhs, initial)``: ``rhs(t, y, params) -> (n_states,)`` with ``params`` a dict by
        parameter id, and ``initial(params) -> (n_states,)``; pure JAX."""
        _, _, sympy = _imports()
        ys = [sympy.Symbol(s) for s in self.state_ids]
        ps = [sympy.Symbol(p) for p in self.parameter_ids]
        rates = lambdify_vector([self.time, ys, ps], self.rates)
        init = lambdify_vector([ps], self.initial)
        names = self.parameter_ids

        def rhs(t: Any, y: Any, params: dict[str, Any]) -> Any:
            return rates(t, list(y), [params[n] for n in names])

        def initial(params: dict[str, Any]) -> Any:
            return init([params[n] for n in names])

        return rhs, initial

    def events_to_jax(self) -> tuple[Callable[..., Any], tuple[Callable[..., Any], ...]]:
        """``(times, assign)``: ``times(params) -> (n_events,)`` the events' times, and per
        event ``assign(t, y, params) -> (n_states,)``, the state after it fires; pure JAX."""
        _, _, sympy = _imports()
        ps = [sympy.Symbol(p) for p in self.parameter_ids]
        names = self.parameter_ids
        times = lambdify_vector([ps], [e.time for e in self.events])

        return (lambda params: times([params[n] for n in names])), tuple(self._assigner(e) for e in self.events)

    def state_events_to_jax(self) -> tuple[tuple[Callable[..., Any], ...], tuple[Callable[..., Any], ...]]:
        """``(roots, assign)``: per state event ``root(t, y, params) -> scalar`` (its trigger's
        ``lhs - rhs``) and ``assign(t, y, params) -> (n_states,)``, the state after it fires;
        pure JAX, ``params`` a dict by parameter id."""
        _, _, sympy = _imports()
        ys = [sympy.Symbol(s) for s in self.state_ids]
        ps = [sympy.Symbol(p) for p in self.parameter_ids]
        names = self.parameter_ids

        def root(event: StateEvent) -> Callable[..., Any]:
            value = lambdify_vector([self.time, ys, ps], [event.root])
            return lambda t, y, params: value(t, list(y), [params[n] for n in names])[0]

        return (tuple(root(e) for e in self.state_events), tuple(self._assigner(e) for e in self.state_events))

    def _assigner(self, event: TimedEvent | StateEvent) -> Callable[..., Any]:
        """``assign(t, y, params) -> (n_states,)``: the state after ``event`` fires."""
        import jax.numpy as jnp

        _, _, sympy = _imports()
        ys = [sympy.Symbol(s) for s in self.state_ids]
        ps = [sympy.Symbol(p) for p in self.parameter_ids]
        names = self.parameter_ids
        values = lambdify_vector([self.time, ys, ps], event.values)
        targets = jnp.asarray(event.targets, dtype=jnp.int32)
        return lambda t, y, params: y.at[targets].set(values(t, list(y), [params[n] for n in names]))


def lambdify_vector(args: Sequence[Any], exprs: Sequence[Any]) -> Callable[..., Any]:
    """A JAX function of ``args`` (symbols or lists of symbols) returning the float64 vector
    of ``exprs`` (common subexpressions eliminated)."""
    import jax.numpy as jnp

    _, _, sympy = _imports()
    if not exprs:
        return lambda *a: jnp.zeros((0,))
    fun = sympy.lambdify(args, list(exprs), modules="jax", cse=True, dummify=True)

    def vector(*a: Any) -> Any:
        values = fun(*a)
        dtype = jnp.result_type(float)
        return jnp.stack([jnp.asarray(v, dtype=dtype) for v in values])

    return vector


def _substitute(expr: Any, assignments: dict[str, Any]) -> Any:
    _, _, sympy = _imports()
    table = {sympy.Symbol(k): v for k, v in assignments.items()}
    for _ in range(100):
        new = expr.xreplace(table)
        if new == expr:
            return expr
        expr = new
    raise InputError("SBML assignment rules refer to each other in a cycle")


def _plain(expr: Any, sympy: Any, sbmlmath: Any, time: Any) -> Any:
    """Every symbol as a plain ``sympy.Symbol`` of its name; SBML's time symbol as ``time``."""
    if isinstance(expr, (bool, int, float)):
        return sympy.sympify(expr)
    if expr.has(sbmlmath.RateOf) or expr.has(sbmlmath.Delay):
        raise UnsupportedFeatureError("SBML rateOf or delay in a formula is not supported")
    table = {}
    for s in expr.free_symbols:
        table[s] = time if isinstance(s, sbmlmath.TimeSymbol) else sympy.Symbol(s.name)
    expr = expr.xreplace(table)
    if expr.has(sbmlmath.CSymbol):
        raise UnsupportedFeatureError(f"SBML csymbol in {expr} is not supported")
    return expr


def read_sbml(path_or_document: Any, set_elsewhere: Collection[str] = ()) -> SbmlModel:
    """Read an SBML file (path) or a ``libsbml.SBMLDocument`` into an `SbmlModel`.

    ``set_elsewhere``: ids of constant parameters that something outside the model sets (a
    PEtab condition table). Such a parameter stays a parameter even where an initial
    assignment gives its value, which must then be a number: that number is its value in
    the file.

    Raises
    ------
    UnsupportedFeatureError
        Event triggers other than comparisons, algebraic rules, fast reactions, variable
        stoichiometry, delays, non-constant compartments without rate rules, or a parameter
        in ``set_elsewhere`` whose initial assignment is a formula of others.
    InputError
        The file has SBML errors.
    """
    libsbml, sbmlmath, sympy = _imports()
    if isinstance(path_or_document, libsbml.SBMLDocument):
        doc = path_or_document.clone()
    else:
        doc = libsbml.readSBMLFromFile(str(path_or_document))
    if doc.getNumErrors(libsbml.LIBSBML_SEV_ERROR) + doc.getNumErrors(libsbml.LIBSBML_SEV_FATAL):
        raise InputError(f"SBML file {path_or_document}: {doc.getErrorLog().toString()[:500]}")
    props = libsbml.ConversionProperties()
    props.addOption("expandFunctionDefinitions", True)
    if doc.convert(props) != libsbml.LIBSBML_OPERATION_SUCCESS:
        raise InputError("SBML function definitions could not be expanded")
    model = doc.getModel()
    time = sympy.Symbol("time")

    def math(obj: Any) -> Any:
        if obj.getMath() is None:
            raise InputError(f"SBML element {obj.getId() or obj.getElementName()} has no math")
        return _plain(sbmlmath.sbml_math_to_sympy(obj, floats_as_rationals=False), sympy, sbmlmath, time)

    rate_rules: dict[str, Any] = {}
    assignments: dict[str, Any] = {}
    for rule in model.getListOfRules():
        if rule.isAlgebraic():
            raise UnsupportedFeatureError("SBML algebraic rules are not supported")
        if rule.isRate():
            rate_rules[rule.getVariable()] = math(rule)
        else:
            assignments[rule.getVariable()] = math(rule)
    initial_assignments = {ia.getSymbol(): math(ia) for ia in model.getListOfInitialAssignments()}

    compartments = {c.getId(): c for c in model.getListOfCompartments()}
    for cid in compartments:
        if cid in assignments:
            raise UnsupportedFeatureError(f"SBML compartment {cid!r} set by an assignment rule is not supported")

    parameter_ids: list[str] = []
    values: dict[str, float] = {}
    state_ids: list[str] = []
    initial: dict[str, Any] = {}

    for cid, c in compartments.items():
        size = c.getSize() if c.isSetSize() else 1.0
        if cid in rate_rules:
            state_ids.append(cid)
            initial[cid] = initial_assignments.get(cid, sympy.Float(size))
        elif cid in initial_assignments:
            assignments[cid] = initial_assignments[cid]
        else:
            parameter_ids.append(cid)
            values[cid] = float(size)
    for p in model.getListOfParameters():
        pid = p.getId()
        value = p.getValue() if p.isSetValue() else float("nan")
        if pid in rate_rules:
            state_ids.append(pid)
            initial[pid] = initial_assignments.get(pid, sympy.Float(value))
        elif pid in assignments:
            continue
        elif pid in initial_assignments and pid in set_elsewhere:
            if initial_assignments[pid].free_symbols:
                raise UnsupportedFeatureError(
                    f"SBML parameter {pid!r}: set by a condition and by an initial assignment that is a formula "
                    f"({initial_assignments[pid]}) is not supported")
            parameter_ids.append(pid)
            values[pid] = float(initial_assignments[pid])
        elif pid in initial_assignments:  # constant in time, a function of other parameters
            assignments[pid] = initial_assignments[pid]
        else:
            parameter_ids.append(pid)
            values[pid] = float(value)

    species = list(model.getListOfSpecies())
    species_ids = [s.getId() for s in species]
    for s in species:
        sid = s.getId()
        if sid in assignments:
            continue
        if s.getConversionFactor() or model.getConversionFactor():
            raise UnsupportedFeatureError(f"SBML conversion factors (species {sid!r}) are not supported")
        comp = sympy.Symbol(s.getCompartment())
        amount_units = s.getHasOnlySubstanceUnits()
        if sid in initial_assignments:
            value = initial_assignments[sid]
        elif s.isSetInitialConcentration():
            c = sympy.Float(s.getInitialConcentration())
            value = c * comp if amount_units else c
        elif s.isSetInitialAmount():
            a = sympy.Float(s.getInitialAmount())
            value = a if amount_units else a / comp
        else:
            value = sympy.nan
        state_ids.append(sid)
        initial[sid] = value

    flux: dict[str, Any] = {sid: sympy.Integer(0) for sid in species_ids}
    for reaction in model.getListOfReactions():
        if reaction.isSetFast() and reaction.getFast():
            raise UnsupportedFeatureError(f"SBML fast reactions ({reaction.getId()!r}) are not supported")
        law = reaction.getKineticLaw()
        if law is None or law.getMath() is None:
            raise InputError(f"SBML reaction {reaction.getId()!r} has no kinetic law")
        rate = math(law)
        local = {sympy.Symbol(lp.getId()): sympy.Float(lp.getValue())
                 for lp in list(law.getListOfLocalParameters()) + list(law.getListOfParameters())}
        rate = rate.xreplace(local)
        for sign, refs in ((-1, reaction.getListOfReactants()), (1, reaction.getListOfProducts())):
            for ref in refs:
                sid = ref.getSpecies()
                if ref.isSetId() and (ref.getId() in rate_rules or ref.getId() in assignments
                                      or ref.getId() in initial_assignments):
                    raise UnsupportedFeatureError(
                        f"SBML variable stoichiometry (reaction {reaction.getId()!r}) is not supported")
                stoich = ref.getStoichiometry() if ref.isSetStoichiometry() else 1.0
                if np.isnan(stoich):
                    raise UnsupportedFeatureError(
                        f"SBML stoichiometry without a value (reaction {reaction.getId()!r})")
                flux[sid] = flux[sid] + sign * sympy.Float(stoich) * rate

    rates: dict[str, Any] = {}
    for s in species:
        sid = s.getId()
        if sid in assignments:
            continue
        if sid in rate_rules:
            rates[sid] = rate_rules[sid]
        elif s.getBoundaryCondition() or s.getConstant():
            rates[sid] = sympy.Integer(0)
        elif s.getHasOnlySubstanceUnits():
            rates[sid] = flux[sid]
        else:
            comp = s.getCompartment()
            if comp in state_ids:
                raise UnsupportedFeatureError(
                    f"SBML concentration species {sid!r} in a compartment with a rate rule is not supported")
            rates[sid] = flux[sid] / sympy.Symbol(comp)
    for key in state_ids:
        if key not in rates:
            rates[key] = rate_rules[key]

    # initial values and rates may use assignment-rule targets and other states' initial values
    state_initial = {sympy.Symbol(k): v for k, v in initial.items()}
    init_exprs = []
    for key in state_ids:
        expr = _substitute(initial[key], assignments)
        for _ in range(20):
            new = _substitute(expr.xreplace(state_initial), assignments)
            if new == expr:
                break
            expr = new
        init_exprs.append(expr.xreplace({time: sympy.Integer(0)}))
    rate_exprs = tuple(_substitute(rates[k], assignments) for k in state_ids)
    known = set(state_ids) | set(parameter_ids) | {"time"}
    for expr in (*rate_exprs, *init_exprs):
        unknown = {s.name for s in expr.free_symbols} - known
        if unknown:
            raise InputError(f"SBML model {model.getId()!r}: formula uses undefined symbols {sorted(unknown)}")
    events = [_event(e, math, state_ids, parameter_ids, assignments, time) for e in model.getListOfEvents()]
    return SbmlModel(state_ids=tuple(state_ids), rates=rate_exprs, initial=tuple(init_exprs),
                     parameter_ids=tuple(parameter_ids), parameter_values=values,
                     assignments=assignments, time=time, name=model.getId() or "sbml_model",
                     events=tuple(e for e in events if isinstance(e, TimedEvent)),
                     state_events=tuple(e for e in events if isinstance(e, StateEvent)))


def _event(event: Any, math: Callable[[Any], Any], state_ids: list[str], parameter_ids: list[str],
           assignments: dict[str, Any], time: Any) -> TimedEvent | StateEvent:
    """The `TimedEvent` or `StateEvent` of an SBML event, or `UnsupportedFeatureError` naming
    what it uses."""
    eid = event.getId() or "(no id)"
    if event.isSetDelay() or event.isSetPriority():
        raise UnsupportedFeatureError(f"SBML event {eid!r}: event delays and priorities are not supported")
    trigger = event.getTrigger()
    condition = math(trigger) if trigger is not None and trigger.getMath() is not None else None
    at = None
    if condition is not None and type(condition).__name__ in ("GreaterThan", "StrictGreaterThan") and condition.lhs == time:
        at = condition.rhs
    elif condition is not None and type(condition).__name__ in ("LessThan", "StrictLessThan") and condition.rhs == time:
        at = condition.lhs
    if at is not None:
        at = _substitute(at, assignments)
    root = direction = None
    if at is None or not {s.name for s in at.free_symbols} <= set(parameter_ids):
        at = None
        kind = type(condition).__name__ if condition is not None else ""
        if kind in ("LessThan", "StrictLessThan", "GreaterThan", "StrictGreaterThan"):
            root = _substitute(condition.lhs - condition.rhs, assignments)
            direction = -1 if kind in ("LessThan", "StrictLessThan") else 1
        if root is None or not {s.name for s in root.free_symbols} <= set(state_ids) | set(parameter_ids) | {"time"}:
            raise UnsupportedFeatureError(
                f"SBML event {eid!r}: only triggers that compare two formulas of states, parameters and time "
                f"('<', '<=', '>', '>=') are supported, got trigger {condition}")
        if not trigger.getPersistent():
            raise UnsupportedFeatureError(f"SBML event {eid!r}: non-persistent triggers are not supported")
    targets, values = [], []
    for assignment in event.getListOfEventAssignments():
        variable = assignment.getVariable()
        if variable not in state_ids:
            raise UnsupportedFeatureError(
                f"SBML event {eid!r} assigns {variable!r}: events that assign other than species or "
                "rate-rule variables are not supported")
        targets.append(state_ids.index(variable))
        values.append(_substitute(math(assignment), assignments))
    if root is not None:
        return StateEvent(id=eid, root=root, direction=direction, targets=tuple(targets), values=tuple(values),
                          at_start=not trigger.getInitialValue())
    return TimedEvent(id=eid, time=at, targets=tuple(targets), values=tuple(values),
                      at_start=not trigger.getInitialValue())
