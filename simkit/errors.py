"""Errors raised by simkit. Every error is a :class:`SimkitError`.

Three tiers (see STYLE.md): structural misuse is raised before compilation
(:class:`ParameterError`, :class:`ShapeError`, :class:`InputError`); numerical failure
travels out of the compiled program as a result code and is raised at top level as a
:class:`SolveError` naming the model, the time reached and what to try.
"""

from __future__ import annotations


class SimkitError(Exception):
    """Base class of every error simkit raises.

    Catch it to handle any simkit failure; each subclass is also the built-in error a Python
    or SciPy user expects (``ValueError``, ``KeyError``, ``TypeError``, ``RuntimeError``,
    ``ImportError``).

    Examples
    --------
    >>> import simkit
    >>> try:
    ...     simkit.models.get("no such model")
    ... except simkit.SimkitError as error:
    ...     print(type(error).__name__)
    ParameterError
    """


class ParameterError(SimkitError, KeyError, ValueError):
    """Unknown parameter name, or a parameter value that is not finite.

    Also a ``KeyError`` (a name that is not there) and a ``ValueError`` (a bad value), so
    that the built-in error a SciPy user catches works. The message lists the valid names.

    Examples
    --------
    >>> import simkit
    >>> try:
    ...     simkit.models.get("lorenz", rhoo=35.0)
    ... except KeyError as error:  # a ParameterError is a KeyError
    ...     print(type(error).__name__)
    ParameterError
    """

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class ShapeError(SimkitError, ValueError):
    """An array has the wrong shape (e.g. ``y0`` does not match the model's state).

    Also a ``ValueError``. Raised before anything compiles.

    Examples
    --------
    >>> import simkit
    >>> try:
    ...     simkit.ODEModel(rhs=lambda t, y, p: -y, params={}, y0=[1.0, 2.0], state_names=("x",))
    ... except simkit.ShapeError as error:
    ...     print(error)
    model 'model': y0 has 2 components but state_names has 1: ('x',)
    """


class InputError(SimkitError, ValueError):
    """An argument has an invalid value (tolerances, time span, save times, ...).

    Also a ``ValueError``. Raised before anything compiles.

    Examples
    --------
    >>> import simkit
    >>> try:
    ...     simkit.SaveAt(ts=0)
    ... except ValueError as error:  # an InputError is a ValueError
    ...     print(type(error).__name__, error)
    InputError saveat must be at least 1 save point, got 0
    """


class InputTypeError(SimkitError, TypeError):
    """An argument has the wrong type (params given as a list, an rhs returning a list, a
    model that is not a model, ...).

    Also a ``TypeError``. Raised before anything compiles.

    Examples
    --------
    >>> import simkit
    >>> try:
    ...     simkit.ODEModel(rhs=lambda t, y, p: -y, params=[1.0], y0=[1.0], state_names=("x",))
    ... except TypeError as error:  # an InputTypeError is a TypeError
    ...     print(type(error).__name__)
    InputTypeError
    """


class SolveError(SimkitError, RuntimeError):
    """The solver failed: step budget exhausted, non-finite state, Newton failure.

    Also a ``RuntimeError``. Numerical failure leaves the compiled program as a `Status`
    code; `simkit.solve` (with ``throw=True``, the default), `simkit.stencil.integrate` and
    the other top-level calls raise it with a message that names the model, the time reached
    and what to try. With ``throw=False`` the code stays in the result's ``status``.

    Examples
    --------
    >>> import simkit
    >>> try:
    ...     simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11, max_steps=5)
    ... except simkit.SolveError as error:
    ...     print(type(error).__name__)
    SolveError
    """


class DependencyError(SimkitError, ImportError):
    """An optional dependency is missing; the message names the extra to install.

    Also an ``ImportError``. Raised when a feature that needs it is used (e.g.
    ``to_xarray()`` without xarray, a ``.zarr`` path without zarr), not at import.

    Examples
    --------
    >>> import simkit
    >>> issubclass(simkit.DependencyError, ImportError)
    True
    """
