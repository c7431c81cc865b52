"""Griffe extension for the API reference: the constructor of an ``equinox.Module``.

An ``equinox.Module`` is a dataclass made by a metaclass, which griffe's static analysis
does not see (its built-in ``dataclasses`` extension looks for the ``@dataclass``
decorator). Without this, the reference shows ``ODEModel()`` with no arguments and griffe
warns that every documented parameter "does not appear in the function signature" (a
failure of the strict build). For each class that derives from ``equinox.Module`` and
defines no ``__init__``, this adds one, as the dataclass machinery would build it: the
annotated attributes of the class and of its Module parents, in definition order (ClassVars
and ``field(init=False)`` left out), with the defaults of ``x: T = value`` and
``eqx.field(default=...)``. Loaded by mkdocs.yml (mkdocstrings ``extensions``).
"""

from __future__ import annotations

from typing import Any

import griffe

MODULE_PATHS = {"equinox.Module", "equinox._module.Module", "equinox._module._module.Module"}
FIELD_PATHS = {"equinox.field", "equinox._module.field", "dataclasses.field"}


def _is_module(cls: griffe.Class, seen: frozenset = frozenset()) -> bool:
    if cls.path in seen:
        return False
    for base in cls.bases:
        if isinstance(base, griffe.Expr) and base.canonical_path in MODULE_PATHS:
            return True
    try:
        parents = cls.resolved_bases
    except Exception:  # an unresolvable base: not ours to judge
        return False
    return any(_is_module(parent, seen | {cls.path}) for parent in parents)


def _field_arguments(value: Any) -> dict[str, Any] | None:
    """The keyword arguments of an ``eqx.field(...)`` call, or None for any other value."""
    if isinstance(value, griffe.ExprCall) and value.canonical_path in FIELD_PATHS:
        return {arg.name: arg.value for arg in value.arguments if isinstance(arg, griffe.ExprKeyword)}
    return None


def _fields(cls: griffe.Class) -> list[griffe.Parameter]:
    out = []
    for member in cls.members.values():
        if member.is_alias or not member.is_attribute or member.annotation is None:
            continue
        if "property" in member.labels or ("class-attribute" in member.labels
                                           and "instance-attribute" not in member.labels):
            continue
        if isinstance(member.annotation, griffe.Expr) and "ClassVar" in str(member.annotation):
            continue
        arguments = _field_arguments(member.value)
        if arguments is None:
            default = member.value
        elif str(arguments.get("init", "True")) == "False":
            continue
        elif "default_factory" in arguments:
            default = griffe.ExprCall(function=arguments["default_factory"], arguments=[])
        else:
            default = arguments.get("default")
        out.append(griffe.Parameter(member.name, annotation=member.annotation,
                                    kind=griffe.ParameterKind.positional_or_keyword, default=default,
                                    docstring=member.docstring))
    return out


def _add_init(cls: griffe.Class) -> None:
    if "__init__" in cls.members or not _is_module(cls):
        return
    try:
        lineage = list(reversed(cls.mro()))
    except ValueError:
        lineage = []
    if any("__init__" in parent.members and "equinox-init" not in parent.members["__init__"].labels
           for parent in lineage):
        return  # a parent's own __init__ is inherited, as equinox does
    parameters: dict[str, griffe.Parameter] = {}
    for parent in [*lineage, cls]:
        for parameter in _fields(parent):
            parameters[parameter.name] = parameter  # a redefinition keeps its first place, as in dataclasses
    init = griffe.Function("__init__", lineno=0, endlineno=0, parent=cls, returns="None",
                           parameters=griffe.Parameters(
                               griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword),
                               *parameters.values()))
    init.labels.add("equinox-init")
    cls.set_member("__init__", init)


def _walk(obj: griffe.Module | griffe.Class, seen: set[str]) -> None:
    if obj.path in seen:
        return
    seen.add(obj.path)
    if isinstance(obj, griffe.Class):
        _add_init(obj)
    for member in list(obj.members.values()):
        if not member.is_alias and (member.is_module or member.is_class):
            _walk(member, seen)


class EquinoxModules(griffe.Extension):
    """Adds the dataclass ``__init__`` of every ``equinox.Module`` of the package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        _walk(pkg, set())
