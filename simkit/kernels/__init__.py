"""simkit's fused fast-path solvers (see DESIGN.md, "Solving").

One ``lax.while_loop`` per solve with the tableau unrolled: explicit pairs `Tsit5` and
`DOPRI5` and the Rosenbrock methods `Rodas4` and `Rodas5P`, Radau IIA (`RadauIIA5`) and
the variable-order `BDF` for large stiff systems; derivatives through one ``custom_jvp``
(`simkit.kernels.autodiff`).
"""

from .solvers import BDF as BDF
from .solvers import DOP853 as DOP853
from .solvers import AutoSwitch as AutoSwitch
from .solvers import DOPRI5 as DOPRI5
from .solvers import AbstractKernel as AbstractKernel
from .solvers import RadauIIA5 as RadauIIA5
from .solvers import Rodas4 as Rodas4
from .solvers import Rodas5P as Rodas5P
from .solvers import Tsit5 as Tsit5

__all__ = ["AutoSwitch", "BDF", "DOP853", "DOPRI5", "AbstractKernel", "RadauIIA5", "Rodas4", "Rodas5P", "Tsit5"]
