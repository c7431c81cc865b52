"""The static programs of the engines: one compiled program per distinct (hashable) value.

Every "static part of a compiled call" in simkit is a frozen dataclass named ``<Thing>Program``:
`KernelProgram` and `DiffraxProgram` here, `simkit.kernels.autodiff.KernelLoopProgram`,
`simkit.stencil.stepping.RolloutProgram`, `simkit._ensemble.EnsembleProgram` and
`simkit.fitting`'s `FitProgram`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class KernelProgram:
    """A solve by a fused simkit kernel."""

    solver: Any  # an AbstractKernel
    rhs: Callable
    events: tuple  # simkit.Event objects
    max_steps: int
    save: str  # "linspace" | "ts" | "steps"
    n_save: int
    dense: bool = False
    forward_tangents: int | None = None  # `simkit.kernels.autodiff.forward_tangents` where called


@dataclasses.dataclass(frozen=True)
class DiffraxProgram:
    """A solve by diffrax."""

    rhs: Callable
    solver: Any
    newton_rule: bool  # replace the solver's root finder by simkit's Newton tolerances
    save: str  # "linspace" | "ts" | "steps"
    n_save: int
    dense: bool
    events: tuple  # simkit.Event objects
    max_steps: int
    diffusion: Callable | None = None  # an SDE: fixed steps, Brownian motion from a key
