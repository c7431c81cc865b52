"""`EnsembleSolution`: many members' trajectories, their statuses and statistics."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import numpy as np

from . import io
from .errors import InputError, InputTypeError
from .solution import state_column
from .status import Status, describe


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["ts", "ys", "status", "stats", "params", "y0", "t_final", "y_final", "rtol", "atol",
                 "event_ts", "event_ys", "event_counts"],
    meta_fields=["state_names", "model_name", "solver_name", "model_source", "model_units"],
)
@dataclasses.dataclass(frozen=True)
class EnsembleSolution(io.Saveable):
    """Trajectories of an ensemble of solves.

    Returned by `simkit.ensemble`, not built by hand. ``ens["x"]`` is state ``x`` of every
    member, shape ``(member, time)`` (`ParameterError` for an unknown name).

    Statistics (`mean`, `std`, `quantile`) run over the members that succeeded and reached
    each save time; failed members are listed by `failures`, never averaged in.

    Attributes
    ----------
    ts : numpy.ndarray or jax.Array
        Save times, ``(member, time)``; ``inf`` where a member stopped earlier (event or
        failure). `times` gives the common ones.
    ys : numpy.ndarray or jax.Array
        States, ``(member, time, state)``.
    status : numpy.ndarray or jax.Array
        `simkit.Status` code of each member, ``(member,)``.
    stats : dict
        Solver counters (as `Solution.stats`), each ``(member,)``.
    params : dict
        Parameter values of each member, ``(member, ...)``.
    y0 : numpy.ndarray or jax.Array
        Initial states, ``(member, state)``.
    t_final, y_final : numpy.ndarray or jax.Array
        Where each member stopped: ``(member,)`` and ``(member, state)``.
    state_names : tuple of str
        Names of the state columns.
    model_name, solver_name : str
        The model's name and the solver's.
    rtol, atol : float or numpy.ndarray
        The tolerances of every member (``atol`` a scalar or one per state).
    model_source, model_units : str
        The model's citation and units.
    event_ts, event_ys, event_counts : numpy.ndarray or None
        With ``events=``: every member's fixed-size event records (as `simkit.Solution`'s),
        ``(member, event, capacity)``, ``(member, event, capacity, state)`` and
        ``(member, event)``; `t_events` and `y_events` give them as SciPy does.

    Examples
    --------
    >>> import numpy as np, simkit
    >>> ens = simkit.ensemble(simkit.models.get("lorenz"), (0.0, 1.0), saveat=5,
    ...                       params={"rho": np.linspace(10.0, 30.0, 4)})
    >>> ens.ys.shape, ens.n_members, ens["x"].shape
    ((4, 5, 3), 4, (4, 5))
    """

    ts: Any
    ys: Any
    status: Any
    stats: dict[str, Any]
    params: dict[str, Any]
    y0: Any
    t_final: Any
    y_final: Any
    state_names: tuple[str, ...]
    model_name: str = "model"
    solver_name: str = ""
    rtol: Any = None
    atol: Any = None
    model_source: str = ""
    model_units: Any = ""
    event_ts: Any = None
    event_ys: Any = None
    event_counts: Any = None

    @property
    def t_events(self) -> list:
        """Times of every recorded event crossing, per member: a list (member) of lists
        (event, in the order of ``events=``) of ``(crossings,)`` arrays (SciPy's
        ``t_events`` for each member); an empty list without events.

        Examples
        --------
        >>> import jax.numpy as jnp, numpy as np, simkit
        >>> spring = simkit.ODEModel(rhs=lambda t, y, p: jnp.stack([y[1], -p["w"] ** 2 * y[0]]),
        ...                          params={"w": 1.0}, y0=[1.0, 0.0], state_names=("x", "v"))
        >>> ens = simkit.ensemble(spring, (0.0, 10.0), params={"w": np.array([1.0, 2.0])},
        ...                       events=simkit.Event(lambda t, y, p: y[0], terminal=0))
        >>> [len(member[0]) for member in ens.t_events]  # zeros of cos(w t) up to t = 10
        [3, 6]
        """
        return self._events(self.event_ts)

    @property
    def y_events(self) -> list:
        """States at every recorded event crossing, per member: a list (member) of lists
        (event) of ``(crossings, state)`` arrays; an empty list without events.

        Examples
        --------
        >>> import jax.numpy as jnp, numpy as np, simkit
        >>> spring = simkit.ODEModel(rhs=lambda t, y, p: jnp.stack([y[1], -p["w"] ** 2 * y[0]]),
        ...                          params={"w": 1.0}, y0=[1.0, 0.0], state_names=("x", "v"))
        >>> ens = simkit.ensemble(spring, (0.0, 2.0), params={"w": np.array([1.0, 2.0])},
        ...                       events=simkit.Event(lambda t, y, p: y[0], terminal=0))
        >>> [round(float(member[0][0, 1]), 3) for member in ens.y_events]  # v = -w at the first x = 0
        [-1.0, -2.0]
        """
        return self._events(self.event_ys)

    def _events(self, records: Any) -> list:
        from .solution import recorded

        if self.event_ts is None:
            return []
        records, ts, counts = np.asarray(records), np.asarray(self.event_ts), np.asarray(self.event_counts)
        return [[records[m, i, :k] for i, k in enumerate(recorded(ts[m], counts[m]))] for m in range(self.n_members)]

    @property
    def n_members(self) -> int:
        """Number of members.

        Returns
        -------
        int
            The length of the member axis.

        Examples
        --------
        >>> import numpy as np, simkit
        >>> ens = simkit.ensemble(simkit.models.get("lorenz"), (0.0, 1.0), saveat=5,
        ...                       params={"rho": np.linspace(10.0, 30.0, 4)})
        >>> ens.n_members
        4
        """
        return int(np.shape(self.status)[0])

    @property
    def ok(self) -> np.ndarray:
        """Which members succeeded: reached t1 or stopped at an event.

        Returns
        -------
        numpy.ndarray
            Booleans, shape ``(member,)``.

        Examples
        --------
        >>> import numpy as np, simkit
        >>> ens = simkit.ensemble(simkit.models.get("lorenz"), (0.0, 1.0), saveat=5,
        ...                       params={"rho": np.array([10.0, 50.0])}, max_steps=50)
        >>> ens.ok.tolist()
        [True, False]
        """
        return np.asarray(self.status) <= int(Status.EVENT)

    @property
    def failures(self) -> dict[int, str]:
        """Failed members and why they failed.

        Returns
        -------
        dict of int to str
            ``{member index: the status in words}``; empty when every member succeeded.

        Examples
        --------
        >>> import numpy as np, simkit
        >>> ens = simkit.ensemble(simkit.models.get("lorenz"), (0.0, 1.0), saveat=5,
        ...                       params={"rho": np.array([10.0, 50.0])}, max_steps=50)
        >>> ens.failures
        {1: 'max_steps reached before t1'}
        """
        status = np.asarray(self.status)
        return {int(i): describe(int(status[i])) for i in np.flatnonzero(~self.ok)}

    @property
    def times(self) -> np.ndarray:
        """The save times common to all members.

        Where members' times differ (a member stopped early: its later times are ``inf``), the
        largest finite time at each save index.

        Returns
        -------
        numpy.ndarray
            Shape ``(time,)``; ``inf`` where no member reached that save.

        Raises
        ------
        InputError
            The members saved at times of their own (``saveat="steps"``); `mean`, `std`
            and `quantile` raise it too.

        Examples
        --------
        >>> import numpy as np, simkit
        >>> ens = simkit.ensemble(simkit.models.get("lorenz"), (0.0, 1.0), saveat=5,
        ...                       params={"rho": np.linspace(10.0, 30.0, 4)})
        >>> ens.times.tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
        """
        return self._common_times("times")

    def _times(self) -> tuple[np.ndarray, bool]:
        """The largest time each save index reached (``inf`` where none did), and whether
        the members that reached it all share it (not so with ``saveat="steps"``: each
        member saves its own steps)."""
        ts = np.asarray(self.ts)
        finite = np.isfinite(ts)
        largest = np.max(np.where(finite, ts, -np.inf), axis=0, initial=-np.inf)
        largest = np.where(finite.any(axis=0), largest, np.inf)
        return largest, bool(np.all(~finite | (ts == largest)))

    def _common_times(self, what: str) -> np.ndarray:
        """`times`, or an `InputError` naming ``what`` where the members' times differ."""
        times, common = self._times()
        if not common:
            raise InputError(f"EnsembleSolution.{what}: the members of {self.model_name!r} saved at times of "
                             "their own (saveat='steps'), so a save index is not one time across members; "
                             "use ens.ts per member, or solve with common save times (saveat=n or an array)")
        return times

    def __getitem__(self, name: str) -> Any:
        """One state for every member, shape (member, time)."""
        return self.ys[..., state_column(self.state_names, name, f"ensemble of {self.model_name!r}")]

    def _valid(self, what: str) -> np.ma.MaskedArray:
        self._common_times(what)
        ys = np.asarray(self.ys)
        reached = np.isfinite(np.asarray(self.ts)) & self.ok[:, None]
        return np.ma.masked_array(ys, mask=np.broadcast_to(~reached[..., None], ys.shape))

    def mean(self) -> np.ndarray:
        """Mean over the valid members at each save time.

        Valid: the member succeeded and reached that save time.

        Returns
        -------
        numpy.ndarray
            Shape ``(time, state)``; NaN where no member is valid.

        Examples
        --------
        >>> import numpy as np, simkit
        >>> ens = simkit.ensemble(simkit.models.get("lorenz"), (0.0, 1.0), saveat=5,
        ...                       params={"rho": np.linspace(10.0, 30.0, 4)})
        >>> ens.mean().shape
        (5, 3)
        """
        return self._valid("mean()").mean(axis=0).filled(np.nan)

    def std(self, ddof: int = 1) -> np.ndarray:
        """Standard deviation over the valid members at each save time.

        Parameters
        ----------
        ddof : int
            Delta degrees of freedom: the divisor is ``n - ddof`` (default 1, the sample
            standard deviation).

        Returns
        -------
        numpy.ndarray
            Shape ``(time, state)``; NaN where fewer than ``ddof + 1`` members are valid.

        Raises
        ------
        InputTypeError
            ``ddof`` is not a whole number.
        InputError
            ``ddof`` is negative (a divisor above the member count: NumPy took it silently).

        Examples
        --------
        >>> import numpy as np, simkit
        >>> ens = simkit.ensemble(simkit.models.get("lorenz"), (0.0, 1.0), saveat=5,
        ...                       params={"rho": np.linspace(10.0, 30.0, 4)})
        >>> ens.std().shape, float(ens.std()[0, 0])  # every member starts at the same y0
        ((5, 3), 0.0)
        """
        if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, np.integer)):
            raise InputTypeError(f"EnsembleSolution.std(): ddof must be a whole number (1: the sample standard "
                                 f"deviation, 0: the population's), got {ddof!r}")
        if ddof < 0:
            raise InputError(f"EnsembleSolution.std(): ddof must be >= 0 (the divisor is n - ddof), got {ddof}")
        return self._valid("std()").std(axis=0, ddof=int(ddof)).filled(np.nan)

    def quantile(self, q: float | Any) -> np.ndarray:
        """Quantile(s) over the valid members at each save time.

        Parameters
        ----------
        q : float or array_like
            Quantile(s) in ``[0, 1]``.

        Returns
        -------
        numpy.ndarray
            Shape ``(time, state)`` for a scalar ``q``, ``(len(q), time, state)`` otherwise;
            NaN where no member is valid.

        Raises
        ------
        InputError
            A quantile outside ``[0, 1]`` or NaN (a percentage such as 90 for 0.9 too);
            the message gives the values.
        InputTypeError
            ``q`` is not a number or an array of numbers.

        Examples
        --------
        >>> import numpy as np, simkit
        >>> ens = simkit.ensemble(simkit.models.get("lorenz"), (0.0, 1.0), saveat=5,
        ...                       params={"rho": np.linspace(10.0, 30.0, 4)})
        >>> ens.quantile(0.5).shape, ens.quantile([0.05, 0.95]).shape
        ((5, 3), (2, 5, 3))
        """
        try:
            levels = np.asarray(q, dtype=float)
        except (TypeError, ValueError):
            raise InputTypeError(f"EnsembleSolution.quantile(): q must be a number or numbers in [0, 1], "
                                 f"got {q!r:.60}") from None
        outside = levels[~((levels >= 0.0) & (levels <= 1.0))]  # NaN is outside too
        if outside.size:  # NumPy's "Quantiles must be in the range [0, 1]" named neither the call nor the value
            finite = outside[np.isfinite(outside)]
            hint = " (a percentage? 90 % is q=0.9)" if finite.size and np.all(finite >= 2.0) else ""
            raise InputError(f"EnsembleSolution.quantile(): q must lie in [0, 1], got {outside.tolist()}{hint}")
        data = self._valid("quantile()").filled(np.nan)
        return np.nanquantile(data, q, axis=0)

    def to_xarray(self) -> Any:
        """The ensemble as an ``xarray.Dataset`` with CF attributes and provenance.

        Returns
        -------
        xarray.Dataset
            Dimensions ``member``, ``t`` (the common save times, `times`) and ``state``
            (``saveat="steps"``: ``step`` instead of ``t``, and ``t`` a coordinate of dims
            ``(member, step)``, each member's step times). One
            variable per state, named by the state, of dims ``(member, t)`` with
            ``long_name`` and (where the model says) ``units``; ``y0`` ``(member, state)``;
            ``status`` ``(member,)``; every parameter as a coordinate ``param_<name>``
            ``(member, ...)``;
            the solver counters as ``stats_<name>`` ``(member,)``; ``t_final``
            ``(member,)``; ``member_t`` ``(member, t)`` where members' save times differ
            (an event stopped some); with events, ``event_t`` ``(member, event,
            crossing)``, ``event_y`` ``(member, event, crossing, state)`` and
            ``event_count`` ``(member, event)`` (NaN beyond each count). Global
            attributes: the provenance of
            `simkit.io.provenance` (model, source, units, the parameters shared by every
            member, solver, rtol, atol, status, versions, date), ``varied_parameters``,
            ``state_names`` and ``n_failed``.

        Raises
        ------
        DependencyError
            xarray is not installed.
        InputError
            A state named like a coordinate or another variable (``t``, ``y0``, ...).

        Examples
        --------
        >>> import numpy as np, simkit
        >>> ens = simkit.ensemble(simkit.models.get("lorenz"), (0.0, 1.0), saveat=5,
        ...                       params={"rho": np.linspace(10.0, 30.0, 4)})
        >>> ds = ens.to_xarray()
        >>> ds["x"].dims, ds["param_rho"].dims
        (('member', 't'), ('member',))
        """
        from . import io

        xr = io.require_xarray("EnsembleSolution.to_xarray()")
        ys, ts, status = np.asarray(self.ys), np.asarray(self.ts), np.asarray(self.status)
        times, common = self._times()
        tdim = "t" if common else "step"  # saveat="steps": each member's own times, by step
        members = np.arange(self.n_members)
        params = {k: np.asarray(v) for k, v in self.params.items()}
        data: dict[str, Any] = {}  # every variable but the states (a state of the same name would be replaced)
        data["y0"] = (("member", "state"), np.asarray(self.y0), io.variable_attrs("initial state"))
        data["status"] = ("member", status, io.variable_attrs(
            "simkit.Status code of each member (0 success, 1 stopped by an event, more: failed)"))
        data["t_final"] = ("member", np.asarray(self.t_final), io.variable_attrs(
            "time where each member stopped", io.units_for(self.model_units, "t")))
        member_params = {}  # coordinates along `member` (e.g. ds.swap_dims(member="param_rho"))
        for k, v in params.items():
            dims = ("member",) + tuple(f"param_{k}_dim{d}" for d in range(1, v.ndim))
            member_params[f"param_{k}"] = (dims, v, io.variable_attrs(f"parameter {k} of each member",
                                                                      io.units_for(self.model_units, k)))
        for k, v in self.stats.items():
            data[f"stats_{k}"] = ("member", np.asarray(v), io.variable_attrs(f"solver counter {k}"))
        if common and not np.array_equal(ts, np.broadcast_to(times, ts.shape)):
            data["member_t"] = (("member", "t"), ts, io.variable_attrs(
                "save times of each member (inf after it stopped)", io.units_for(self.model_units, "t")))
        if self.event_ts is not None and np.shape(self.event_ts)[1] > 0:
            from .solution import event_variables

            data.update(event_variables(self.event_ts, self.event_ys, self.event_counts, prefix=("member",)))
        io.check_names(self.state_names, list(data) + list(member_params)
                       + ["member", "t", "state"] + ([] if common else ["step"]), "states")
        data.update({name: (("member", tdim), ys[..., i], io.variable_attrs(
            f"state {name} of {self.model_name}", io.units_for(self.model_units, name)))
            for i, name in enumerate(self.state_names)})
        time_coords = ({"t": ("t", times, io.variable_attrs("time", io.units_for(self.model_units, "t"), axis="T"))}
                       if common else
                       {"t": (("member", "step"), ts, io.variable_attrs(
                           "time of each member's step (inf after it stopped)", io.units_for(self.model_units, "t"))),
                        "step": ("step", np.arange(ts.shape[1]), io.variable_attrs("accepted step (0: t0)"))})
        coords = {"member": ("member", members, io.variable_attrs("ensemble member")), **time_coords,
                  "state": ("state", list(self.state_names), io.variable_attrs("state variable")),
                  **member_params}
        shared = {k: v[0] for k, v in params.items() if len(v) and np.all(v == v[:1])}
        failed = int((~self.ok).sum())
        attrs = io.provenance(
            "EnsembleSolution", model_name=self.model_name, model_source=self.model_source,
            model_units=self.model_units, parameters=shared, solver=self.solver_name, rtol=self.rtol,
            atol=self.atol, status=self.message, status_code=int(status.max(initial=0)),
            extra={"varied_parameters": sorted(set(params) - set(shared)), "state_names": list(self.state_names),
                   "n_members": self.n_members, "n_failed": failed})
        return xr.Dataset(data, coords=coords, attrs=attrs)

    @property
    def message(self) -> str:
        """The members' outcomes in words, with how many members had each.

        Returns
        -------
        str
            e.g. ``"success: 98; max_steps reached before t1: 2"``.

        Examples
        --------
        >>> import numpy as np, simkit
        >>> ens = simkit.ensemble(simkit.models.get("lorenz"), (0.0, 1.0), saveat=5,
        ...                       params={"rho": np.array([10.0, 50.0])}, max_steps=50)
        >>> ens.message
        'success: 1; max_steps reached before t1: 1'
        """
        codes, counts = np.unique(np.asarray(self.status), return_counts=True)
        return "; ".join(f"{describe(int(c))}: {n}" for c, n in zip(codes, counts))

    def plot(self, ax: Any = None, *, state: str | None = None, quantiles=(0.05, 0.25), **kwargs: Any) -> Any:
        """Fan chart of one state: the median and the bands between ``q`` and ``1 - q``.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (a new figure if None).
        state : str, optional
            The state to draw (default: the first).
        quantiles : sequence of float
            For each ``q``, a band from quantile ``q`` to ``1 - q`` over the valid members
            (default ``(0.05, 0.25)``).
        **kwargs
            Passed to matplotlib's ``plot`` of the median.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.

        Raises
        ------
        ValueError
            `state` is not a state name.
        ImportError
            matplotlib is not installed.

        Examples
        --------
        >>> import numpy as np, simkit
        >>> ens = simkit.ensemble(simkit.models.get("lorenz"), (0.0, 1.0), saveat=5,
        ...                       params={"rho": np.linspace(10.0, 30.0, 4)})
        >>> ax = ens.plot(state="z")
        >>> ax.get_ylabel()
        'z (dimensionless)'
        """
        from .plot import plot_fan

        return plot_fan(self, ax=ax, state=state or self.state_names[0], quantiles=quantiles, **kwargs)

    def __repr__(self) -> str:
        failed = int((~self.ok).sum())
        return (f"EnsembleSolution(model={self.model_name!r}, solver={self.solver_name}, "
                f"members={self.n_members}, save_times={np.shape(self.ts)[-1]}, failed={failed})")
