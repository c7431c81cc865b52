"""Errors raised by simkit. Every error is a :class:`SimkitError`.

Three tiers (see STYLE.md): structural misuse is raised before compilation
(:class:`ParameterError`, :class:`ShapeError`, :class:`InputError`); numerical failure
travels out of the compiled program as a result code and is raised at top level as a
:class:`SolveError` naming the model, the time reached and what to try.
"""

from __future__ import annotations


class SimkitError(Exception):
    """Base class of every error simkit raises."""


class ParameterError(SimkitError, KeyError, ValueError):
    """Unknown parameter name, or a parameter value that is not finite.

    Also a ``KeyError`` (a name that is not there) and a ``ValueError`` (a bad value), so
    that the built-in error a SciPy user catches works."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class ShapeError(SimkitError, ValueError):
    """An array has the wrong shape (e.g. ``y0`` does not match the model's state)."""


class InputError(SimkitError, ValueError):
    """An argument has an invalid value (tolerances, time span, save times, ...)."""


class InputTypeError(SimkitError, TypeError):
    """An argument has the wrong type (params given as a list, an rhs returning a list, a
    model that is not a model, ...)."""


class SolveError(SimkitError, RuntimeError):
    """The solver failed: step budget exhausted, non-finite state, Newton failure."""


class DependencyError(SimkitError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""
