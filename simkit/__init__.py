"""simkit: scientific simulation on JAX function transforms.

Public API (re-exports only). Importing simkit applies the precision policy of
`simkit._config` (float64 unless ``SIMKIT_ENABLE_X64=0``) and changes nothing else in the
process; `configure` opts in to simkit's process-wide CPU settings.
"""

from . import _config  # noqa: F401  (precision policy first, before jax/equinox load)
from ._config import configure as configure
from . import fitting as fitting
from . import models as models
from . import sample as sample
from . import stencil as stencil
from ._ensemble import ensemble as ensemble
from .events import Event as Event
from .save_times import SaveAt as SaveAt
from .save_times import SaveSteps as SaveSteps
from ._solve import solve as solve
from ._scipy_ivp import solve_ivp as solve_ivp
from .inspection import Inspection as Inspection
from .inspection import inspect as inspect
from ._solve_to_file import solve_to_file as solve_to_file
from .errors import DependencyError as DependencyError
from .errors import InputError as InputError
from .errors import InputTypeError as InputTypeError
from .errors import ParameterError as ParameterError
from .errors import ShapeError as ShapeError
from .errors import SimkitError as SimkitError
from .errors import SolveError as SolveError
from .kernels import BDF as BDF
from .kernels import DOP853 as DOP853
from .kernels import AutoSwitch as AutoSwitch
from .kernels import DOPRI5 as DOPRI5
from .kernels import Rodas4 as Rodas4
from .kernels import RadauIIA5 as RadauIIA5
from .kernels import Rodas5P as Rodas5P
from .kernels import Tsit5 as Tsit5
from .ensemble_solution import EnsembleSolution as EnsembleSolution
from .fitting import Dataset as Dataset
from .fitting import FitResult as FitResult
from .fitting import GaussianNLL as GaussianNLL
from .fitting import LeastSquares as LeastSquares
from .fitting import LogNormal as LogNormal
from .fitting import NegativeBinomial as NegativeBinomial
from .fitting import Poisson as Poisson
from .fitting import fit as fit
from .io import load as load
from .model import ODEModel as ODEModel
from .solution import Solution as Solution
from .stencil import PDEModel as PDEModel
from .status import Status as Status
from .placement import precision as precision

__version__ = "0.2.0"


def __getattr__(name: str):
    # simkit.petab is imported on first use: it needs the optional petab extra only when used
    if name == "petab":
        import importlib

        return importlib.import_module(".petab", __name__)
    raise AttributeError(f"module 'simkit' has no attribute {name!r}")

__all__ = [
    "AutoSwitch",
    "BDF",
    "DOP853",
    "Dataset",
    "FitResult",
    "GaussianNLL",
    "LeastSquares",
    "LogNormal",
    "NegativeBinomial",
    "Poisson",
    "DOPRI5",
    "DependencyError",
    "EnsembleSolution",
    "Event",
    "InputError",
    "InputTypeError",
    "Inspection",
    "ODEModel",
    "PDEModel",
    "ParameterError",
    "Rodas4",
    "RadauIIA5",
    "Rodas5P",
    "SaveAt",
    "SaveSteps",
    "ShapeError",
    "SimkitError",
    "Solution",
    "SolveError",
    "Status",
    "Tsit5",
    "configure",
    "ensemble",
    "fit",
    "fitting",
    "inspect",
    "load",
    "models",
    "precision",
    "sample",
    "solve",
    "solve_ivp",
    "solve_to_file",
    "stencil",
]
