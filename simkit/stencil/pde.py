"""`PDEModel`: a model whose state is a field on a `Grid`; `Space`: what its rhs sees.

A PDE right-hand side is a pure function ``rhs(t, u, params, space) -> du/dt`` with ``u`` of
shape ``(components,) + grid.shape``. It pads what it needs with ``space.pad(field, width)``
and applies the operators; it never knows whether ghosts come from boundary conditions or
from neighbouring devices: `Space.fill` is that seam (one device: `boundary.pad`; domain
decomposition swaps in halo exchange). Global sums go through ``space.sum`` for the same
reason.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .. import _config
from ..errors import InputTypeError, ShapeError
from ..model import ODEModel, own_copy
from .boundary import AbstractBoundaryCondition, Padded, check_face_values, normalize, pad
from .grid import Grid
from .preconditioner import SpectralPreconditioner


def _sum_grid(u: Any, ndim: int) -> Any:
    return jnp.sum(u, axis=tuple(range(-ndim, 0)))


def _max_grid(u: Any, ndim: int) -> Any:
    return jnp.max(u, axis=tuple(range(-ndim, 0)))


class Space(eqx.Module):
    """The grid, its boundary conditions and how ghosts are filled, as one argument.

    What a `PDEModel`'s ``rhs(t, u, params, space)`` receives. `pad(field, width=1,
    bcs=None)` returns a `Padded` field (``bcs`` overrides the model's conditions for this
    call, e.g. for a derived quantity); `spacing`; `sum(field)` and `max(field)` over the
    grid axes; `integral(field)` = sum times the cell volume; `coordinates()` of the points
    of `grid`, in the frame of the whole domain.

    On a device mesh (`simkit.parallel.sharded_space`) `grid` is this shard's block (static,
    the same for every shard, its `lower` the domain's), `domain` the whole grid and
    `offset` the index of the block's first point along each grid axis (integers, traced:
    ``lax.axis_index(axis) * block.shape[axis]``), so `coordinates()` gives the block's own
    coordinates on any device count. On one device both are ``None``.

    Parameters
    ----------
    grid : Grid
        The grid (on a device mesh: this shard's block).
    bcs : AbstractBoundaryCondition or sequence
        The boundary conditions, as `PDEModel`'s ``bcs``.
    fill : callable
        The ghost filler, with `simkit.stencil.pad`'s signature (default `pad`; on a mesh
        `simkit.parallel.halo_pad`).
    reduce_sum, reduce_max : callable
        ``reduce(field, ndim)`` over the last ``ndim`` axes (default local sums and
        maxima; on a mesh also across shards).
    domain : Grid, optional
        The whole grid, on a device mesh.
    offset : tuple of int, optional
        Index of the block's first point per grid axis, on a device mesh.

    Raises
    ------
    ShapeError
        Only one of `domain` and `offset`, or a block that does not fit in the domain.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from simkit.stencil import Grid, Periodic, Space
    >>> space = Space(Grid(4), Periodic())
    >>> space.pad(jnp.arange(4.0)).data.tolist(), space.integral(jnp.ones(4)).item()
    ([3.0, 0.0, 1.0, 2.0, 3.0, 0.0], 1.0)
    """

    grid: Grid = eqx.field(static=True)
    bcs: Any
    fill: Callable = eqx.field(static=True, default=pad)
    reduce_sum: Callable = eqx.field(static=True, default=_sum_grid)
    reduce_max: Callable = eqx.field(static=True, default=_max_grid)
    domain: Grid | None = eqx.field(static=True, default=None)
    offset: tuple[Any, ...] | None = None

    def __check_init__(self) -> None:
        if (self.domain is None) != (self.offset is None):
            raise ShapeError("Space: a block of a decomposed grid needs both `domain` (the whole grid) "
                             "and `offset` (its first point's index per axis), or neither")
        if self.domain is not None and (len(self.offset) != self.grid.ndim or self.domain.ndim != self.grid.ndim
                                        or any(n > m for n, m in zip(self.grid.shape, self.domain.shape))):
            raise ShapeError(f"Space: block {self.grid} with an offset of length {len(self.offset)} "
                             f"does not fit in the domain {self.domain}")

    @property
    def spacing(self) -> tuple[float, ...]:
        """Grid spacing per axis (length units), `Grid.spacing`.

        Returns
        -------
        tuple of float
            One spacing per grid axis.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Grid, Periodic, Space
        >>> space = Space(Grid(4), Periodic())
        >>> space.spacing
        (0.25,)
        """
        return self.grid.spacing

    @property
    def ndim(self) -> int:
        """Number of grid axes.

        Returns
        -------
        int
            ``grid.ndim``.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Grid, Periodic, Space
        >>> space = Space(Grid(4), Periodic())
        >>> space.ndim
        1
        """
        return self.grid.ndim

    def pad(self, field: Any, width: int = 1, bcs: Any = None) -> Padded:
        """The field with ``width`` ghost layers: from the boundary conditions on one device,
        by halo exchange on a device mesh.

        Parameters
        ----------
        field : array_like
            Shape ``lead + grid.shape`` (leading axes, e.g. components, carried along).
        width : int
            Ghost layers per side (the operator's radius; default 1).
        bcs : optional
            Conditions for this call instead of the model's (e.g. for a derived quantity).

        Returns
        -------
        Padded
            For the operators (`laplacian`, `gradient`, ...).

        Raises
        ------
        InputError, ShapeError
            As `simkit.stencil.pad`.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Grid, Periodic, Space
        >>> space = Space(Grid(4), Periodic())
        >>> space.pad(jnp.arange(4.0), 2).data.tolist()
        [2.0, 3.0, 0.0, 1.0, 2.0, 3.0, 0.0, 1.0]
        """
        return self.fill(field, self.bcs if bcs is None else bcs, width, self.grid.spacing, ndim=self.grid.ndim)

    def sum(self, field: Any) -> Any:
        """Sum over the grid axes (global on a device mesh).

        Parameters
        ----------
        field : array_like
            Shape ``lead + grid.shape``.

        Returns
        -------
        jax.Array
            Shape ``lead``.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Grid, Periodic, Space
        >>> space = Space(Grid(4), Periodic())
        >>> space.sum(jnp.arange(4.0)).item()
        6.0
        """
        return self.reduce_sum(field, self.grid.ndim)

    def max(self, field: Any) -> Any:
        """Maximum over the grid axes (global on a device mesh: for a CFL time step).

        Parameters
        ----------
        field : array_like
            Shape ``lead + grid.shape``.

        Returns
        -------
        jax.Array
            Shape ``lead``.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Grid, Periodic, Space
        >>> space = Space(Grid(4), Periodic())
        >>> space.max(jnp.array([1.0, 3.0, 2.0, 0.0])).item()
        3.0
        """
        return self.reduce_max(field, self.grid.ndim)

    def integral(self, field: Any) -> Any:
        """Integral over the domain: `sum` times the cell volume (the midpoint rule on a
        cell-centred grid).

        Parameters
        ----------
        field : array_like
            Shape ``lead + grid.shape``.

        Returns
        -------
        jax.Array
            Shape ``lead`` (field units times length units to the power ``ndim``).

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Grid, Periodic, Space
        >>> space = Space(Grid(4), Periodic())
        >>> space.integral(jnp.full(4, 2.0)).item()
        2.0
        """
        return self.sum(field) * self.grid.cell_volume

    def coordinates(self) -> tuple[Any, ...]:
        """Coordinates of this grid's points (length units): one array of shape ``grid.shape``
        per axis (``indexing="ij"``). On one device NumPy arrays (`Grid.meshgrid`); on a device
        mesh JAX arrays: the block's slice of the domain's coordinates, the same values as on
        one device (use ``jnp`` functions on them).

        Returns
        -------
        tuple of array
            `ndim` arrays of shape ``grid.shape``.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import Grid, Periodic, Space
        >>> space = Space(Grid(4), Periodic())
        >>> space.coordinates()[0].tolist()
        [0.125, 0.375, 0.625, 0.875]
        """
        if self.domain is None:
            return self.grid.meshgrid()
        from jax import lax

        axes = [lax.dynamic_slice_in_dim(jnp.asarray(self.domain.coordinates(a)), self.offset[a], n)
                for a, n in enumerate(self.grid.shape)]
        return tuple(jnp.meshgrid(*axes, indexing="ij"))


PDERHS = Callable[[Any, Any, dict, Space], Any]

_CONDITIONS = ("simkit.stencil.Periodic(), Dirichlet(value), Neumann(flux) or "
               "Robin(alpha, beta, value)")
_FOR_NAME = {"periodic": "Periodic()", "dirichlet": "Dirichlet(0.0)", "neumann": "Neumann(0.0)",
             "robin": "Robin(alpha, beta, value)"}


def _check_bcs_are_objects(bcs: Any, name: str) -> None:
    """Boundary conditions are objects (STYLE 1): a string such as ``"periodic"``, at any
    level of the spec, is refused with the object to pass instead."""

    def strings(spec: Any, depth: int) -> list[str]:
        if isinstance(spec, str):
            return [spec]
        if depth < 2 and isinstance(spec, (tuple, list)):
            return [s for item in spec for s in strings(item, depth + 1)]
        return []

    found = strings(bcs, 0)
    if found:
        hint = _FOR_NAME.get(found[0].strip().lower())
        use = f"for {found[0]!r} pass {hint} (the objects: {_CONDITIONS})" if hint else f"pass {_CONDITIONS}"
        raise InputTypeError(f"PDE model {name!r}: bcs takes boundary-condition objects, not strings "
                             f"(got {bcs!r}); {use}")
    if not isinstance(bcs, (AbstractBoundaryCondition, Sequence)):
        raise InputTypeError(f"PDE model {name!r}: bcs must be a boundary condition ({_CONDITIONS}), "
                             f"or per axis a condition or a (lower, upper) pair, got {bcs!r}")


class PDEModel(eqx.Module):
    """A PDE on a grid, discretised in space by its rhs (the method of lines).

    `simkit.solve` integrates it by the method of lines (`to_ode`);
    `simkit.stencil.integrate` with fixed-step steppers. The fields below are also the
    model's attributes; `with_params` and `replace` return changed copies.

    Parameters
    ----------
    rhs : callable
        ``rhs(t, u, params, space) -> du/dt``, ``u`` of shape ``(components,) + grid.shape``,
        ``space`` a `Space`: pad with ``space.pad(u, width)``, then apply the operators.
        Pure, as `simkit.ODEModel`'s rhs: what it reads besides its arguments is compiled in
        at the first call, and later changes are not seen (building the model warns where
        that is cheap to see).
    grid : Grid
        The grid.
    bcs : AbstractBoundaryCondition or sequence
        Boundary conditions: one for all sides, or per axis a condition or a ``(lower,
        upper)`` pair (the same for every component unless the rhs passes its own to
        ``space.pad``). Objects, not strings (``Periodic()``, not ``"periodic"``).
    params : dict
        Default parameters, ``{name: value}``.
    u0 : array_like
        Initial field, shape ``(components,) + grid.shape`` (stored as a NumPy array of the
        working float type).
    component_names : sequence of str
        One name per component (default ``("u",)``).
    name : str
        The model's name (default ``"pde"``).
    t_span : (float, float), optional
        Default time span of `simkit.solve`.
    stiff : bool
        Hint: `simkit.solve` uses an implicit solver with a matrix-free Newton-Krylov
        iteration.
    linear : callable, optional
        The stiff linear part (e.g. diffusion), with the rhs's signature; the IMEX stepper
        treats it implicitly and the rest explicitly.
    source, description, units : str
        Citation, free text, and units (as `ODEModel`: ``"<name> in <unit>"`` phrases for
        ``t``, the components, the grid axes ``x``, ``y``, ``z`` and the parameters).

    Raises
    ------
    ShapeError
        ``u0`` does not have shape ``(components,) + grid.shape``, the number of boundary
        conditions does not match the grid axes, or a node-centred grid with walls.
    InputTypeError
        Boundary conditions given as strings or as something that is not a condition.
    InputError
        A per-axis entry that is not a condition or a pair, or `Periodic` on one side only.

    Examples
    --------
    >>> import numpy as np, simkit
    >>> from simkit.stencil import Dirichlet, Grid, PDEModel, laplacian
    >>> grid = Grid(16)
    >>> heat = PDEModel(rhs=lambda t, u, p, space: p["D"] * laplacian(space.pad(u), space.spacing),
    ...                 grid=grid, bcs=Dirichlet(0.0), params={"D": 0.1},
    ...                 u0=np.sin(np.pi * grid.coordinates())[None], name="heat")
    >>> heat
    PDEModel('heat', Grid(16 on [0, 1], cell), components=('u',))
    >>> simkit.stencil.integrate(heat, dt=1e-3, steps=10).us.shape  # start and end saved
    (2, 1, 16)
    """

    rhs: PDERHS = eqx.field(static=True)
    grid: Grid = eqx.field(static=True)
    bcs: Any
    params: dict[str, Any]
    u0: Any = eqx.field(converter=lambda u: own_copy(np.asarray(u, dtype=_config.float_dtype())))
    component_names: tuple[str, ...] = eqx.field(static=True, converter=tuple, default=("u",))
    name: str = eqx.field(static=True, default="pde")
    t_span: tuple[float, float] | None = eqx.field(static=True, default=None)
    stiff: bool = eqx.field(static=True, default=False)
    linear: PDERHS | None = eqx.field(static=True, default=None)
    source: str = eqx.field(static=True, default="")
    description: str = eqx.field(static=True, default="")
    units: str = eqx.field(static=True, default="")

    def __check_init__(self) -> None:
        expected = (len(self.component_names),) + self.grid.shape
        if np.shape(self.u0) != expected:
            raise ShapeError(f"PDE model {self.name!r}: u0 must have shape (components,) + grid.shape "
                             f"= {expected}, got {np.shape(self.u0)}")
        _check_bcs_are_objects(self.bcs, self.name)
        pairs = normalize(self.bcs, self.grid.ndim)
        check_face_values(pairs, self.grid.shape, f"PDE model {self.name!r}")
        if self.grid.centering == "node" and not all(lo.periodic for lo, _ in pairs):
            raise ShapeError(f"PDE model {self.name!r}: node-centred grids take Periodic boundaries "
                             f"only; use centering='cell' for walls")
        from .._purity import warn_if_impure

        for role in ("rhs", "linear"):  # what they read besides their arguments is compiled in
            if getattr(self, role) is not None:
                warn_if_impure(getattr(self, role), role, self.name)

    @property
    def space(self) -> Space:
        """The single-device `Space` of the model (its grid and boundary conditions).

        Returns
        -------
        Space
            What the rhs receives on one device.

        Examples
        --------
        >>> from simkit import models
        >>> heat = models.get("heat_1d")
        >>> heat.space.grid == heat.grid, heat.space.ndim
        (True, 1)
        """
        return Space(self.grid, self.bcs)

    @property
    def n_components(self) -> int:
        """Number of field components.

        Returns
        -------
        int
            ``len(component_names)``.

        Examples
        --------
        >>> from simkit import models
        >>> models.get("gray_scott").n_components
        2
        """
        return len(self.component_names)

    def with_params(self, **params: Any) -> PDEModel:
        """A new model whose default parameters are updated by ``params``.

        Parameters
        ----------
        **params : float or array_like
            New default values by name.

        Returns
        -------
        PDEModel
            A copy with the new defaults (models are immutable).

        Raises
        ------
        ParameterError
            An unknown name (the message lists the valid ones).

        Examples
        --------
        >>> from simkit import models
        >>> heat = models.get("heat_1d")
        >>> heat.with_params(diffusivity=0.2).params["diffusivity"]
        0.2
        """
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            from ..errors import ParameterError

            raise ParameterError(f"PDE model {self.name!r} has no parameter(s) {unknown}; "
                                 f"valid names are {list(self.params)}")
        return dataclasses.replace(self, params={**self.params, **params})

    def replace(self, **fields: Any) -> PDEModel:
        """A new model with some fields replaced (``u0=``, ``grid=``, ``bcs=``, ...).

        Parameters
        ----------
        **fields
            New values of any constructor fields (a new ``grid`` needs a matching ``u0``).

        Returns
        -------
        PDEModel
            A copy, checked as a new model.

        Raises
        ------
        ShapeError, InputTypeError, InputError
            The new fields make an invalid model (as the constructor).
        TypeError
            An unknown field name.

        Examples
        --------
        >>> from simkit import models
        >>> heat = models.get("heat_1d")
        >>> heat.replace(t_span=(0.0, 0.1)).t_span
        (0.0, 0.1)
        """
        return dataclasses.replace(self, **fields)

    def fields(self, ys: Any) -> Any:
        """Flattened states (a method-of-lines `Solution`'s ``ys``) as fields.

        Parameters
        ----------
        ys : array_like
            Shape ``(..., components * grid.size)``, components first, each grid in C order.

        Returns
        -------
        numpy.ndarray
            Shape ``(..., components) + grid.shape``.

        Raises
        ------
        ValueError
            The last axis does not have ``components * grid.size`` entries.

        Examples
        --------
        >>> from simkit import models
        >>> heat = models.get("heat_1d")
        >>> heat.fields(heat.u0.reshape(1, -1)).shape
        (1, 1, 128)
        """
        return np.reshape(ys, np.shape(ys)[:-1] + (self.n_components,) + self.grid.shape)

    def to_ode(self) -> ODEModel:
        """The semi-discrete system as an `ODEModel` on the flattened field.

        Returns
        -------
        ODEModel
            ``rhs(t, y, params)`` on ``y`` of shape ``(components * grid.size,)`` (C order,
            components first); state names ``"u[i]"`` index the flattened grid; the other
            fields are the PDE model's; with a ``linear`` part, ``preconditioner`` is its FFT
            inverse (`simkit.stencil.preconditioner.SpectralPreconditioner`), which the
            matrix-free `simkit.BDF` uses.

        Examples
        --------
        >>> from simkit import models
        >>> heat = models.get("heat_1d")
        >>> ode = heat.to_ode()
        >>> ode.n_states, ode.state_names[:2]
        (128, ('u[0]', 'u[1]'))
        """
        bcs = _static_bcs(self.bcs)
        mol = MethodOfLines(self.rhs, self.grid, bcs, self.n_components)
        names = _state_names(self.component_names, self.grid.size)
        pre = None if self.linear is None else SpectralPreconditioner(self.linear, self.grid, bcs, self.n_components)
        return ODEModel(rhs=mol, params=self.params, y0=np.asarray(self.u0).reshape(-1),
                        state_names=names, name=self.name, t_span=self.t_span, stiff=self.stiff,
                        source=self.source, description=self.description, units=self.units, preconditioner=pre)

    def __repr__(self) -> str:
        return f"PDEModel({self.name!r}, {self.grid}, components={self.component_names})"


@functools.lru_cache(maxsize=32)
def _state_names(components: tuple[str, ...], size: int) -> tuple[str, ...]:
    return tuple(f"{c}[{i}]" for c in components for i in range(size))


def _static_bcs(bcs: Any) -> Any:
    """Boundary values as Python floats: the method-of-lines rhs is static (hashable)."""
    import jax

    def as_float(x: Any) -> Any:
        return float(x) if np.ndim(x) == 0 else x

    return jax.tree_util.tree_map(as_float, bcs, is_leaf=lambda x: not isinstance(x, AbstractBoundaryCondition) and not isinstance(x, (tuple, list)))


@dataclasses.dataclass(frozen=True)
class MethodOfLines:
    """``rhs(t, y, params)`` on the flattened field: the ODE right-hand side of a PDE."""

    pde_rhs: PDERHS
    grid: Grid
    bcs: Any
    components: int

    def __call__(self, t: Any, y: Any, params: dict) -> Any:
        u = y.reshape((self.components,) + self.grid.shape)
        return self.pde_rhs(t, u, params, Space(self.grid, self.bcs)).reshape(-1)
