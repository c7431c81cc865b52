"""`FieldSolution`: saved fields of a fixed-step PDE run, with diagnostics and plots."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..solution import state_column
from ..status import describe
from .grid import Grid


@dataclasses.dataclass(frozen=True)
class FieldSolution:
    """Fields saved along a run.

    **Fields:** `ts` (saves,); `us` (saves, components) + grid.shape; `grid`;
    `component_names`; `diagnostics` ``{name: (saves,)}``; `status` (0: success, 3: the field
    became non-finite); `model_name`; `stepper_name`.
    """

    ts: np.ndarray
    us: np.ndarray
    grid: Grid
    component_names: tuple[str, ...]
    diagnostics: dict[str, np.ndarray]
    model_name: str = "pde"
    status: int = 0
    stepper_name: str = ""

    def __getitem__(self, name: str) -> np.ndarray:
        """One component at every save, shape (saves,) + grid.shape."""
        return self.us[:, state_column(self.component_names, name, f"PDE {self.model_name!r}")]

    @property
    def final(self) -> np.ndarray:
        """The last saved field, (components,) + grid.shape."""
        return self.us[-1]

    def plot(self, ax: Any = None, *, frame: int = -1, component: str | None = None, **kwargs: Any) -> Any:
        """One saved field: a line (1-D), an image (2-D) or the middle slice (3-D)."""
        from ..plot import plot_field

        name = component or self.component_names[0]
        return plot_field(self.grid, self[name][frame], ax=ax, title=f"{self.model_name}: {name}, t = {self.ts[frame]:.4g}", **kwargs)

    def animate(self, path: str, *, component: str | None = None, fps: int = 10, **kwargs: Any) -> str:
        """Write the saved frames of one component as a GIF (matplotlib + Pillow)."""
        from ..plot import animate_field

        name = component or self.component_names[0]
        return animate_field(self.grid, self[name], self.ts, path, title=f"{self.model_name}: {name}", fps=fps, **kwargs)

    def __repr__(self) -> str:
        return (f"FieldSolution({self.model_name!r}, {self.grid}, saves={len(self.ts)}, "
                f"t=[{self.ts[0]:g}, {self.ts[-1]:g}], {self.stepper_name}, {describe(self.status)})")
