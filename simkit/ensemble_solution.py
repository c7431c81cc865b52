"""`EnsembleSolution`: many members' trajectories, their statuses and statistics."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import numpy as np

from .errors import DependencyError
from .solution import state_column
from .status import Status, describe


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["ts", "ys", "status", "stats", "params", "y0", "t_final", "y_final"],
    meta_fields=["state_names", "model_name", "solver_name"],
)
@dataclasses.dataclass(frozen=True)
class EnsembleSolution:
    """Trajectories of an ensemble of solves.

    **Fields:** `ts` (member, time) — save times, ``inf`` where a member stopped earlier
    (event or failure); `ys` (member, time, state); `status` (member,) `simkit.Status`
    codes; `stats` dict of (member,) counters; `params` dict of (member, ...) parameter
    values; `y0` (member, state); `t_final`, `y_final`.

    Statistics (`mean`, `std`, `quantile`) run over the members that succeeded and reached
    each save time; failed members are listed by `failures`, never averaged in.
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

    @property
    def n_members(self) -> int:
        return int(np.shape(self.status)[0])

    @property
    def ok(self) -> np.ndarray:
        """(member,) True where the member reached t1 or stopped at an event."""
        return np.asarray(self.status) <= int(Status.EVENT)

    @property
    def failures(self) -> dict[int, str]:
        """Failed members: index -> reason."""
        status = np.asarray(self.status)
        return {int(i): describe(int(status[i])) for i in np.flatnonzero(~self.ok)}

    @property
    def times(self) -> np.ndarray:
        """The save times common to all members (the first member's where they differ)."""
        ts = np.asarray(self.ts)
        finite = np.isfinite(ts)
        return np.where(finite.any(axis=0), np.nanmax(np.where(finite, ts, np.nan), axis=0), np.inf)

    def __getitem__(self, name: str) -> Any:
        """One state for every member, shape (member, time)."""
        return self.ys[..., state_column(self.state_names, name, f"ensemble of {self.model_name!r}")]

    def _valid(self) -> np.ma.MaskedArray:
        ys = np.asarray(self.ys)
        reached = np.isfinite(np.asarray(self.ts)) & self.ok[:, None]
        return np.ma.masked_array(ys, mask=np.broadcast_to(~reached[..., None], ys.shape))

    def mean(self) -> np.ndarray:
        """(time, state) mean over the valid members."""
        return self._valid().mean(axis=0).filled(np.nan)

    def std(self, ddof: int = 1) -> np.ndarray:
        """(time, state) standard deviation over the valid members."""
        return self._valid().std(axis=0, ddof=ddof).filled(np.nan)

    def quantile(self, q: float | Any) -> np.ndarray:
        """Quantile(s) over the valid members: (time, state), or (q, time, state)."""
        data = self._valid().filled(np.nan)
        return np.nanquantile(data, q, axis=0)

    def to_xarray(self) -> Any:
        """An ``xarray.DataArray`` (member, time, state) with the member parameters as
        coordinates on ``member``. Needs xarray (a core dependency)."""
        try:
            import xarray as xr
        except ImportError:
            raise DependencyError(
                "EnsembleSolution.to_xarray() needs xarray, a dependency of simkit-jax that is "
                "missing here: pip install xarray"
            ) from None
        coords: dict[str, Any] = {
            "member": np.arange(self.n_members),
            "time": self.times,
            "state": list(self.state_names),
            "status": ("member", np.asarray(self.status)),
        }
        for k, v in self.params.items():
            v = np.asarray(v)
            if v.ndim == 1:
                coords[f"param_{k}"] = ("member", v)
        return xr.DataArray(np.asarray(self.ys), dims=("member", "time", "state"), coords=coords,
                            name=self.model_name, attrs={"model": self.model_name, "solver": self.solver_name})

    def plot(self, ax: Any = None, *, state: str | None = None, quantiles=(0.05, 0.25), **kwargs: Any) -> Any:
        """Fan chart of one state: the median and the bands between ``q`` and ``1 - q``."""
        from .plot import plot_fan

        return plot_fan(self, ax=ax, state=state or self.state_names[0], quantiles=quantiles, **kwargs)

    def __repr__(self) -> str:
        failed = int((~self.ok).sum())
        return (f"EnsembleSolution(model={self.model_name!r}, solver={self.solver_name}, "
                f"members={self.n_members}, save_times={np.shape(self.ts)[-1]}, failed={failed})")
