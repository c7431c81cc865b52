"""Parameter fitting: `fit` (losses and solvers as objects), `Dataset`, `FitResult`.

The optimisers are jaxopt's (imported only when a fit runs), or optimistix's through
`Optimistix`. Derivatives flow through the solvers by autodiff.
"""

from ._fit import fit as fit
from .data import Dataset as Dataset
from .drivers import LBFGS as LBFGS
from .drivers import LBFGSB as LBFGSB
from .drivers import AbstractDriver as AbstractDriver
from .drivers import GaussNewton as GaussNewton
from .drivers import LevenbergMarquardt as LevenbergMarquardt
from .drivers import Optimistix as Optimistix
from .objective import AbstractLoss as AbstractLoss
from .objective import GaussianNLL as GaussianNLL
from .objective import LeastSquares as LeastSquares
from .objective import LogNormal as LogNormal
from .objective import NegativeBinomial as NegativeBinomial
from .objective import Poisson as Poisson
from .result import FitResult as FitResult

__all__ = ["AbstractDriver", "AbstractLoss", "Dataset", "FitResult", "GaussNewton", "GaussianNLL", "LBFGS",
           "LBFGSB", "LeastSquares", "LevenbergMarquardt", "LogNormal", "NegativeBinomial", "Optimistix",
           "Poisson", "fit"]
