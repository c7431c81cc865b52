"""Parameter fitting: `fit` (losses and solvers as objects), `Dataset`, `FitResult`.

The optimisers are objects: jaxopt's (imported only when a fit runs) and optimistix's
(`BFGS`, `Optimistix`). Every fit ends within limits on iterations, evaluations of the cost
and ODE steps per solve; `FitStatus` says how each start ended. Derivatives flow through the
solvers by autodiff.
"""

from ._fit import fit as fit
from .bounded import BoundedResult as BoundedResult
from .bounded import least_squares_bounded as least_squares_bounded
from .bounded import minimize_bounded as minimize_bounded
from .data import Dataset as Dataset
from .drivers import BFGS as BFGS
from .drivers import LBFGS as LBFGS
from .drivers import LBFGSB as LBFGSB
from .drivers import AbstractDriver as AbstractDriver
from .drivers import BoundedLevenbergMarquardt as BoundedLevenbergMarquardt
from .drivers import FitStatus as FitStatus
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

__all__ = ["BFGS", "LBFGS", "LBFGSB", "AbstractDriver", "AbstractLoss", "BoundedLevenbergMarquardt", "BoundedResult",
           "Dataset", "FitResult", "FitStatus", "GaussNewton", "GaussianNLL", "LeastSquares", "LevenbergMarquardt", "LogNormal", "NegativeBinomial",
           "Optimistix", "Poisson", "fit", "least_squares_bounded", "minimize_bounded"]
