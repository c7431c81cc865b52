"""Errors raised by simkit. Every error is a :class:`SimkitError`.

Three tiers (see STYLE.md): structural misuse is raised before compilation
(:class:`ParameterError`, :class:`ShapeError`, :class:`InputError`); numerical failure
travels out of the compiled program as a result code and is raised at top level as a
:class:`SolveError` naming the model, the time reached and what to try.
"""

from __future__ import annotations


class SimkitError(Exception):
    """Base class of every error simkit raises."""


class ParameterError(SimkitError, KeyError):
    """Unknown parameter name, or a parameter value that is not finite."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class ShapeError(SimkitError, ValueError):
    """An array has the wrong shape (e.g. ``y0`` does not match the model's state)."""


class InputError(SimkitError, ValueError):
    """An argument has an invalid value (tolerances, time span, save times, ...)."""


class SolveError(SimkitError, RuntimeError):
    """The solver failed: step budget exhausted, non-finite state, Newton failure."""


class DependencyError(SimkitError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""
