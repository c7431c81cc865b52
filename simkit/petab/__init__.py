"""Read PEtab parameter-estimation problems into simkit.

`load` reads a PEtab 1.0 problem (YAML file, SBML model, condition, measurement,
observable and parameter tables) into a `PetabProblem`: a `simkit.ODEModel`, PEtab's negative
log-likelihood as a pure JAX function of the estimated parameters on their scales, the
bounds, and a multi-start bounded fit. Needs the ``petab`` extra
(``pip install 'simkit-jax[petab]'``: petab, python-libsbml, sbmlmath, sympy).
"""

from .petab_problem import PetabFit as PetabFit
from .petab_problem import PetabProblem as PetabProblem
from .petab_problem import PetabProfile as PetabProfile
from .petab_problem import load as load
from .sbml import UnsupportedFeatureError as UnsupportedFeatureError

__all__ = ["PetabFit", "PetabProblem", "PetabProfile", "UnsupportedFeatureError", "load"]
