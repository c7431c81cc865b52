"""Finite-difference stencils on grids: boundary conditions by ghost cells, operators, PDE
models and fixed-step steppers.

``u = simkit.stencil.integrate(models.get("heat_2d"), dt=1e-4, steps=1000, save_every=100)``
"""

from .boundary import AbstractBoundaryCondition as AbstractBoundaryCondition
from .boundary import Dirichlet as Dirichlet
from .boundary import Neumann as Neumann
from .boundary import Padded as Padded
from .boundary import Periodic as Periodic
from .boundary import Robin as Robin
from .boundary import pad as pad
from .field_solution import FieldSolution as FieldSolution
from .grid import Grid as Grid
from .operators import AbstractNumericalFlux as AbstractNumericalFlux
from .operators import Central as Central
from .operators import Rusanov as Rusanov
from .operators import Stencil as Stencil
from .operators import advection as advection
from .operators import biharmonic as biharmonic
from .operators import derivative as derivative
from .operators import divergence as divergence
from .operators import flux_divergence as flux_divergence
from .operators import gradient as gradient
from .operators import laplacian as laplacian
from .pde import PDEModel as PDEModel
from .pde import Space as Space
from .preconditioner import SpectralPreconditioner as SpectralPreconditioner
from .stepping import RK4 as RK4
from .stepping import SSPRK3 as SSPRK3
from .stepping import AbstractStepper as AbstractStepper
from .stepping import ForwardEuler as ForwardEuler
from .stepping import IMEXEuler as IMEXEuler
from .stepping import integrate as integrate
from .stepping import rollout as rollout
from .stepping import ritz_values as ritz_values
from .stepping import spectral_radius as spectral_radius
from .streamed import integrate_to_file as integrate_to_file

__all__ = [
    "AbstractBoundaryCondition", "AbstractNumericalFlux", "AbstractStepper", "Central", "Dirichlet",
    "FieldSolution", "ForwardEuler", "Grid", "IMEXEuler", "Neumann", "PDEModel", "Padded", "Periodic",
    "RK4", "Robin", "Rusanov", "SSPRK3", "Space", "SpectralPreconditioner", "Stencil", "advection", "biharmonic", "derivative",
    "divergence", "flux_divergence", "gradient", "integrate", "integrate_to_file", "laplacian", "pad", "rollout",
    "ritz_values",
    "spectral_radius",
]
