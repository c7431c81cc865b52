"""`FieldSolution`: saved fields of a fixed-step PDE run, with diagnostics and plots."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .. import io
from ..solution import state_column
from ..status import describe
from .grid import Grid


@dataclasses.dataclass(frozen=True)
class FieldSolution(io.Saveable):
    """Fields saved along a run.

    Returned by `simkit.stencil.integrate` and `simkit.parallel.integrate`, not built by
    hand. ``fields["u"]`` is component ``u`` at every save, shape ``(saves,) + grid.shape``
    (`ParameterError` for an unknown name).

    Attributes
    ----------
    ts : numpy.ndarray
        Save times, ``(saves,)``.
    us : numpy.ndarray
        Saved fields, ``(saves, components) + grid.shape``.
    grid : Grid
        The grid.
    component_names : tuple of str
        One name per component.
    diagnostics : dict
        ``{name: (saves,) + shape array}``, the diagnostics asked for (``shape`` what the
        diagnostic returns: ``()`` for a number, ``(components,)`` for ``space.sum(u)``).
    model_name : str
        The model's name.
    status : int
        `simkit.Status` code: 0 success, 3 the field became non-finite.
    stepper_name : str
        The stepper, e.g. ``"RK4()"``.
    params : dict or None
        The parameter values of the run, when known.
    dt : float or None
        The step (``None`` for a step rule).
    save_every : int or None
        Steps between saves.
    boundary_conditions : str
        The boundary conditions, as text.
    model_source, model_units : str
        The model's citation and units (written by `to_xarray`/`save`).

    Examples
    --------
    >>> from simkit import models, stencil
    >>> fields = stencil.integrate(models.get("heat_2d"), dt=1e-3, steps=4, save_every=2)
    >>> fields.ts.tolist(), fields.us.shape, fields["u"].shape
    ([0.0, 0.002, 0.004], (3, 1, 64, 64), (3, 64, 64))
    """

    ts: np.ndarray
    us: np.ndarray
    grid: Grid
    component_names: tuple[str, ...]
    diagnostics: dict[str, np.ndarray]
    model_name: str = "pde"
    status: int = 0
    stepper_name: str = ""
    params: dict[str, Any] | None = None
    dt: float | None = None
    save_every: int | None = None
    boundary_conditions: str = ""
    model_source: str = ""
    model_units: Any = ""

    def __getitem__(self, name: str) -> np.ndarray:
        """One component at every save, shape (saves,) + grid.shape."""
        return self.us[:, state_column(self.component_names, name, f"PDE {self.model_name!r}")]

    @property
    def final(self) -> np.ndarray:
        """The last saved field.

        Returns
        -------
        numpy.ndarray
            ``us[-1]``, shape ``(components,) + grid.shape``.

        Examples
        --------
        >>> from simkit import models, stencil
        >>> fields = stencil.integrate(models.get("heat_2d"), dt=1e-3, steps=4, save_every=2)
        >>> fields.final.shape
        (1, 64, 64)
        """
        return self.us[-1]

    def plot(self, ax: Any = None, *, frame: int = -1, component: str | None = None, **kwargs: Any) -> Any:
        """One saved field: a line (1-D), an image (2-D) or the middle slice (3-D).

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (a new figure if None).
        frame : int
            Index of the save to draw (default the last).
        component : str, optional
            The component (default the first).
        **kwargs
            Passed to matplotlib's ``plot`` (1-D) or ``imshow`` (2-D, 3-D).

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.

        Raises
        ------
        ParameterError
            `component` is not a component name.
        IndexError
            No save `frame`.
        ImportError
            matplotlib is not installed.

        Examples
        --------
        >>> from simkit import models, stencil
        >>> fields = stencil.integrate(models.get("heat_2d"), dt=1e-3, steps=4, save_every=2)
        >>> ax = fields.plot(frame=0)
        >>> ax.get_title()
        'heat_2d: u, t = 0'
        """
        from ..plot import plot_field

        name = component or self.component_names[0]
        return plot_field(self.grid, self[name][frame], ax=ax, title=f"{self.model_name}: {name}, t = {self.ts[frame]:.4g}", **kwargs)

    def animate(self, path: str, *, component: str | None = None, fps: int = 10, **kwargs: Any) -> str:
        """Write the saved frames of one component as a GIF (matplotlib + Pillow).

        Parameters
        ----------
        path : str
            The file to write (a ``.gif``).
        component : str, optional
            The component (default the first).
        fps : int
            Frames per second (default 10).
        **kwargs
            Passed to matplotlib's ``plot`` (1-D) or ``imshow``.

        Returns
        -------
        str
            ``path``.

        Raises
        ------
        ParameterError
            `component` is not a component name.
        ImportError
            matplotlib or Pillow is not installed.

        Examples
        --------
        >>> import os, tempfile
        >>> from simkit import models, stencil
        >>> fields = stencil.integrate(models.get("heat_2d"), dt=1e-3, steps=4, save_every=2)
        >>> path = fields.animate(os.path.join(tempfile.mkdtemp(), "heat.gif"), fps=2)
        >>> os.path.getsize(path) > 0
        True
        """
        from ..plot import animate_field

        name = component or self.component_names[0]
        return animate_field(self.grid, self[name], self.ts, path, title=f"{self.model_name}: {name}", fps=fps, **kwargs)

    def to_xarray(self) -> Any:
        """The saved fields as an ``xarray.Dataset`` with CF attributes and provenance.

        Returns
        -------
        xarray.Dataset
            One variable per component, named by the component, of dims ``(t, x)``,
            ``(t, x, y)`` or ``(t, x, y, z)``: the time coordinate ``t`` and the grid's point
            coordinates ``x``, ``y``, ``z`` (``axis`` ``X``/``Y``/``Z``; ``units`` where the
            model's ``units`` say, as for the states); each diagnostic as
            ``diagnostic_<name>``, dims ``(t,)`` (a vector per save: ``(t,
            diagnostic_<name>_axis0, ...)``). Global attributes: the provenance of
            `simkit.io.provenance` (model, source, units, parameters, stepper as ``solver``,
            status, versions, date), ``dt``, ``save_every``, the grid (``grid_shape``,
            ``grid_lower``, ``grid_upper``, ``grid_centering``) and ``boundary_conditions``.

        Raises
        ------
        DependencyError
            xarray is not installed.
        InputError
            A component named like a coordinate (``t``, ``x``, ``y``, ``z``) or a diagnostic's
            variable (``diagnostic_<name>``).

        Examples
        --------
        >>> from simkit import models, stencil
        >>> heat = models.get("heat_2d")
        >>> fields = stencil.integrate(heat, dt=1e-3, steps=4, save_every=2)
        >>> fields.to_xarray()["u"].dims
        ('t', 'x', 'y')
        """
        from .. import io

        xr = io.require_xarray("FieldSolution.to_xarray()")
        axes = ("x", "y", "z")[: self.grid.ndim]
        units = self.model_units
        io.check_names(self.component_names, ("t",) + axes + tuple(f"diagnostic_{n}" for n in self.diagnostics),
                       "components")
        us = np.asarray(self.us)
        data: dict[str, Any] = {
            name: (("t",) + axes, us[:, i], io.variable_attrs(f"field {name} of {self.model_name}",
                                                              io.units_for(units, name)))
            for i, name in enumerate(self.component_names)}
        for name, values in self.diagnostics.items():
            values = np.asarray(values)  # (t,) or (t, ...): a vector per save has axes of its own
            dims = ("t",) + tuple(f"diagnostic_{name}_axis{i}" for i in range(values.ndim - 1))
            data[f"diagnostic_{name}"] = (dims, values, io.variable_attrs(f"diagnostic {name}"))
        coords = {"t": ("t", np.asarray(self.ts), io.variable_attrs("time", io.units_for(units, "t"), axis="T"))}
        for a, axis in enumerate(axes):
            coords[axis] = (axis, self.grid.coordinates(a), io.variable_attrs(
                f"{axis} coordinate of the grid points ({self.grid.centering}-centred)", io.units_for(units, axis),
                axis=axis.upper()))
        attrs = io.provenance(
            "FieldSolution", model_name=self.model_name, model_source=self.model_source, model_units=units,
            parameters=self.params, solver=self.stepper_name, status=describe(self.status),
            status_code=self.status,
            extra={"dt": self.dt, "save_every": self.save_every, "grid_shape": np.asarray(self.grid.shape),
                   "grid_lower": np.asarray(self.grid.lower), "grid_upper": np.asarray(self.grid.upper),
                   "grid_centering": self.grid.centering, "boundary_conditions": self.boundary_conditions or None,
                   "component_names": list(self.component_names),
                   "diagnostic_names": list(self.diagnostics)})
        return xr.Dataset(data, coords=coords, attrs=attrs)

    def __repr__(self) -> str:
        return (f"FieldSolution({self.model_name!r}, {self.grid}, saves={len(self.ts)}, "
                f"t=[{self.ts[0]:g}, {self.ts[-1]:g}], {self.stepper_name}, {describe(self.status)})")
