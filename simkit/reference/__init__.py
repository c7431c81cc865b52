"""The SciPy yardstick: any `ODEModel` through ``scipy.integrate.solve_ivp``.

``solve_ivp(model, ...)`` runs SciPy with the model's own rhs (jitted, called with NumPy
arrays) and, for the implicit methods (Radau, BDF, LSODA), its ``jax.jacfwd`` Jacobian:
``scipy_functions(model)``, both evaluated on the host's CPU whatever JAX's default device.
``compare(solution, reference, rtol, atol)`` returns per-state errors normalised by the
tolerance. ``least_squares(model, data, free=...)`` fits by ``scipy.optimize.least_squares``
with `solve_ivp` inside (the yardstick for `simkit.fit`). ``scipy_method(name)`` is
what to pass SciPy as ``method`` (BDF with its work table initialised). SciPy is imported only when these are called.
"""

from .scipy_ivp import ReferenceSolution as ReferenceSolution
from .scipy_ivp import compare as compare
from .scipy_fit import least_squares as least_squares
from .scipy_ivp import scipy_functions as scipy_functions
from .scipy_ivp import scipy_method as scipy_method
from .scipy_ivp import solve_ivp as solve_ivp

__all__ = ["ReferenceSolution", "compare", "least_squares", "scipy_functions", "scipy_method", "solve_ivp"]
