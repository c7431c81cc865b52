"""`ODEModel`: a right-hand side ``rhs(t, y, params)`` plus its defaults, as data."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

import equinox as eqx
import numpy as np

from ._traced_checks import wrong_arity
from .errors import InputError, InputTypeError, ParameterError, ShapeError
from .params import check_function, check_value, merge_params

Params = Mapping[str, Any]
RHS = Callable[[Any, Any, Params], Any]


def own_copy(value: Any) -> Any:
    """A NumPy array as a read-only copy of its own (other values as they are): a model keeps
    its defaults, whatever its caller later writes into the array it passed (a model holding
    the caller's array changed with it; found by probing)."""
    if isinstance(value, np.ndarray) and (value.flags.writeable or not value.flags.owndata):
        value = np.array(value, copy=True)  # (a model's own array passes through replace() as it is)
        value.flags.writeable = False
    return value


def _as_params(params: Params) -> dict[str, Any]:
    if not isinstance(params, Mapping):
        raise InputTypeError(f"params must be a dict (a mapping of name -> value), got {type(params).__name__}")
    return {str(k): own_copy(v) for k, v in params.items()}


def _as_names(names: Any) -> tuple[str, ...] | None:
    if names is None:  # (the default: "y0", "y1", ... from y0's length, `ODEModel.__post_init__`)
        return None
    if isinstance(names, str):  # tuple("uv") is ('u', 'v'): a string was split into letters in silence
        raise InputTypeError(f"state_names must be a sequence of names, e.g. ({names!r},) or a list, not the "
                             f"string {names!r}")
    names = tuple(names)
    empty = [i for i, n in enumerate(names) if isinstance(n, str) and not n.strip()]
    if empty:  # an empty name was taken: sol[""], a file variable "" and a plot legend without a label
        raise InputError(f"state_names{empty} are empty in {names}: every state needs a name (it names the state "
                         "in sol['name'], saved files and plots)")
    return names


def _as_state(y0: Any) -> Any:
    # Keep NumPy (not jax) arrays so that building a model never initialises a backend.
    if isinstance(y0, (list, tuple, int, float, complex)):  # complex values stay complex (found by probing)
        y0 = np.asarray(y0)
        y0 = y0.astype(np.complex128 if y0.dtype.kind == "c" else np.float64)
    return own_copy(y0)


class ODEModel(eqx.Module):
    """An ODE system ``dy/dt = rhs(t, y, params)`` with its defaults.

    A frozen pytree: ``params`` and ``y0`` are leaves (so ``jax.grad`` with respect to
    a model's parameters works), everything else is static metadata. The fields below are
    also the model's attributes; `with_params` and `replace` return changed copies.

    Parameters
    ----------
    rhs : callable
        Pure function ``rhs(t, y, params) -> dy/dt``; ``t`` a scalar (the model's time
        unit), ``y`` of shape ``(n_states,)``, ``params`` a dict of scalars or arrays; returns
        an array of shape ``(n_states,)``. Written for one sample; use ``jax.vmap`` or
        `simkit.ensemble` for batches.

        Pure means its result depends on its arguments only. Anything else it reads (a
        global variable, a variable of an enclosing function, an attribute of an object, a
        NumPy array changed in place) is read once, when simkit first compiles the function,
        and is a constant of the compiled program from then on; simkit keeps that program for
        the function, so later changes are not seen, even by a new model built on the same
        function (JAX's rule for impure functions). Pass such values in ``params`` (traced:
        new values need no recompilation). Building a model warns where this is cheap to
        see: an rhs that is a bound method of a mutable object, or one that reads a NumPy
        array (a global or an enclosing variable) changed in place since the first model
        built on it.
    params : dict
        Default parameter values, ``{name: value}`` (scalars or arrays).
    y0 : array_like
        Default initial state, shape ``(n_states,)`` (lists become float64 NumPy arrays).
    state_names : sequence of str, optional
        One unique name per state component; default ``("y0", "y1", ...)``, the components
        ``y[0], y[1], ...`` as a SciPy user numbers them (``sol["y1"]`` is ``y[1]``).
    name : str
        The model's name (in messages, results and saved files); default ``"model"``.
    t_span : (float, float), optional
        Default ``(t0, t1)`` of `simkit.solve` (finite).
    stiff : bool or None
        Hint used to choose the default solver: ``False`` (default) a non-stiff method
        (`simkit.Tsit5`), ``True`` a stiff one (`simkit.Rodas5P`), ``None`` unknown:
        `simkit.AutoSwitch` detects stiffness along the solution and switches between Tsit5
        and Rodas5P (above 64 states, where diffrax runs, ``None`` is taken as stiff).
    source : str
        Citation of the model and its constants.
    description : str
        Free text.
    units : str
        Units of time, states and parameters as phrases ``"<name> in <unit>"`` separated by
        commas or semicolons, ``t`` (or ``time``) naming time and ``"1"`` the unit of a
        dimensionless quantity (e.g. ``"t in days, S in 1, I in 1, R in 1, beta in 1/day"``);
        other phrases are kept as notes. Read by `simkit.io.units_for` for saved results and
        figure labels.
    diffusion : callable, optional
        For a stochastic model, ``diffusion(t, y, params) -> g`` of shape ``(n_states,)``:
        the Itô SDE ``dy = rhs dt + g * dW`` with independent Brownian motions (diagonal
        noise); `simkit.solve` then needs a ``key``.
    preconditioner : callable, optional
        For matrix-free implicit solves of large systems (`simkit.BDF` above 100 states):
        ``preconditioner(t, y, params, c)`` returns ``v -> M^{-1} v`` with ``M`` an
        approximation of ``I - c J`` (``J`` the rhs's Jacobian at ``(t, y)``); traced, and
        hashable (it selects the compiled program). `simkit.stencil.PDEModel.to_ode` sets
        it from the PDE's stiff ``linear`` part (`simkit.stencil.preconditioner`).

    Raises
    ------
    ShapeError
        ``y0`` is not 1-D or does not have one component per state name, state names
        repeat, or ``t_span`` is not two finite numbers.
    InputError
        A state name is empty (or only spaces).
    InputTypeError
        ``params`` is not a mapping of names, a parameter is not a number or a numeric array,
        ``state_names`` is a string, ``stiff`` is not True, False or None, ``rhs``
        (``diffusion``, ``preconditioner``) is not a hashable callable, or ``rhs`` cannot be
        called as ``rhs(t, y, params)`` (a SciPy-style ``f(t, y)``: the message points to
        `simkit.solve_ivp`).
    ParameterError
        A parameter's default value is not finite.

    Examples
    --------
    >>> import jax.numpy as jnp, simkit
    >>> decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 0.5}, y0=[1.0, 2.0],
    ...                         state_names=("a", "b"), name="decay", t_span=(0.0, 2.0))
    >>> decay
    ODEModel('decay', states=['a', 'b'], params={k=0.5}, stiff=False)
    >>> sol = simkit.solve(decay, saveat=3)
    >>> sol.ys[-1].round(4).tolist()
    [0.3679, 0.7358]
    """

    rhs: RHS = eqx.field(static=True)
    params: dict[str, Any] = eqx.field(converter=_as_params)
    y0: Any = eqx.field(converter=_as_state)
    state_names: tuple[str, ...] = eqx.field(static=True, converter=_as_names, default=None)
    name: str = eqx.field(static=True, default="model")
    t_span: tuple[float, float] | None = eqx.field(static=True, default=None)
    stiff: bool | None = eqx.field(static=True, default=False)
    source: str = eqx.field(static=True, default="")
    description: str = eqx.field(static=True, default="")
    units: str = eqx.field(static=True, default="")
    diffusion: RHS | None = eqx.field(static=True, default=None)
    preconditioner: Callable[..., Any] | None = eqx.field(static=True, default=None)

    def __post_init__(self) -> None:
        if self.state_names is None:  # default names, one per component of a 1-D y0
            shape = np.shape(self.y0)
            self.state_names = tuple(f"y{i}" for i in range(shape[0])) if len(shape) == 1 else ()

    def __check_init__(self) -> None:
        check_function(f"model {self.name!r}", "rhs", self.rhs)
        arity = wrong_arity(self.rhs, f"model {self.name!r}")  # (a SciPy-style f(t, y))
        if arity is not None:
            raise arity
        for field in ("diffusion", "preconditioner"):
            if getattr(self, field) is not None:
                check_function(f"model {self.name!r}", field, getattr(self, field))
        shape = np.shape(self.y0)
        if len(shape) != 1:
            raise ShapeError(
                f"model {self.name!r}: y0 must be a 1-D state vector, got shape {shape}"
            )
        if shape[0] != len(self.state_names):
            raise ShapeError(
                f"model {self.name!r}: y0 has {shape[0]} components but state_names has "
                f"{len(self.state_names)}: {self.state_names}"
            )
        for key, value in self.params.items():  # the defaults, as solve(params=...) checks overrides
            check_value(f"model {self.name!r}", key, value)
        if len(set(self.state_names)) != len(self.state_names):
            raise ShapeError(f"model {self.name!r}: state_names are not unique: {self.state_names}")
        if self.t_span is not None and not (
            len(self.t_span) == 2 and math.isfinite(self.t_span[0]) and math.isfinite(self.t_span[1])
        ):
            raise ShapeError(f"model {self.name!r}: t_span must be (t0, t1), got {self.t_span}")
        if self.stiff not in (True, False, None) or isinstance(self.stiff, (int, float)) and not isinstance(
                self.stiff, bool):
            raise InputTypeError(f"model {self.name!r}: stiff must be True, False or None (unknown: detect "
                                 f"stiffness while solving), got {self.stiff!r}")
        from ._purity import warn_if_impure

        warn_if_impure(self.rhs, "rhs", self.name)  # what it reads besides (t, y, params) is compiled in

    @property
    def n_states(self) -> int:
        """Number of state components.

        Returns
        -------
        int
            ``len(state_names)``.

        Examples
        --------
        >>> from simkit import models
        >>> models.get("lorenz").n_states
        3
        """
        return len(self.state_names)

    @property
    def param_names(self) -> tuple[str, ...]:
        """Names of the model's parameters, in definition order.

        Returns
        -------
        tuple of str
            The keys of ``params``.

        Examples
        --------
        >>> from simkit import models
        >>> models.get("lorenz").param_names
        ('sigma', 'rho', 'beta')
        """
        return tuple(self.params)

    def merged_params(self, params: Params | None) -> dict[str, Any]:
        """The defaults overridden by ``params``, checked by simkit's one parameter merge.

        Parameters
        ----------
        params : dict or None
            Overrides by name (None: the defaults); a value has at most the dimensions of its
            default (batches belong to `simkit.ensemble` or ``jax.vmap``).

        Returns
        -------
        dict
            A new dict of every parameter: the defaults with ``params`` applied.

        Raises
        ------
        ParameterError
            An unknown name (the message lists the valid ones), or a value that is not
            finite.
        InputTypeError
            ``params`` is not a mapping, or a value is not a number or an array.
        ShapeError
            A value with more dimensions than its default.

        Examples
        --------
        >>> from simkit import models
        >>> models.get("lorenz").merged_params({"rho": 35.0})
        {'sigma': 10.0, 'rho': 35.0, 'beta': 2.6666666666666665}
        """
        return merge_params(self.params, params, owner=f"model {self.name!r}")

    def with_params(self, **params: Any) -> ODEModel:
        """A new model whose default parameters are updated by ``params``.

        Parameters
        ----------
        **params : float or array_like
            New default values by name (checked as in `merged_params`).

        Returns
        -------
        ODEModel
            A copy with the new defaults (models are immutable).

        Raises
        ------
        ParameterError, InputTypeError, ShapeError
            As `merged_params`: an unknown name, a value that is not a finite number, or
            one with more dimensions than the default.

        Examples
        --------
        >>> from simkit import models
        >>> models.get("lorenz").with_params(rho=35.0).params["rho"]
        35.0
        """
        return dataclasses.replace(self, params=self.merged_params(params))

    def replace(self, **fields: Any) -> ODEModel:
        """A new model with some fields replaced (``y0=``, ``t_span=``, ``stiff=``, ...).

        Parameters
        ----------
        **fields
            New values of any constructor fields (`params` replaces the whole dict, unchecked
            against the old names; use `with_params` to change values).

        Returns
        -------
        ODEModel
            A copy with those fields replaced, checked as a new model.

        Raises
        ------
        ShapeError, InputTypeError
            The new fields make an invalid model (as the constructor).
        TypeError
            An unknown field name.

        Examples
        --------
        >>> from simkit import models
        >>> models.get("lorenz").replace(y0=[1.0, 1.0, 1.0], t_span=(0.0, 5.0)).t_span
        (0.0, 5.0)
        """
        return dataclasses.replace(self, **fields)

    def state_index(self, name: str) -> int:
        """Index of the state called ``name``.

        Parameters
        ----------
        name : str
            A state name, one of `state_names`.

        Returns
        -------
        int
            Its column in ``y0`` and in a `Solution`'s ``ys``.

        Raises
        ------
        ParameterError
            No state of that name (the message lists the names).

        Examples
        --------
        >>> from simkit import models
        >>> models.get("sir").state_index("I")
        1
        """
        try:
            return self.state_names.index(name)
        except ValueError:
            raise ParameterError(
                f"model {self.name!r} has no state {name!r}; states are {list(self.state_names)}"
            ) from None

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        return (
            f"ODEModel({self.name!r}, states={list(self.state_names)}, params={{{params}}}, "
            f"stiff={self.stiff})"
        )


def _short(v: Any) -> str:
    try:
        return f"{float(v):.6g}"
    except (TypeError, ValueError):
        return f"array{np.shape(v)}"
