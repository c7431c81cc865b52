"""simkit's own solver objects: choose a fused kernel by passing one as ``solver=``."""

from __future__ import annotations

from .methods import DOP853Method, ExplicitRK, Rosenbrock
from .radau import RadauIIA5Method
from .tableaus import DOP853 as _DOP853_TABLEAU
from .tableaus import DOPRI5 as _DOPRI5_TABLEAU
from .tableaus import RODAS4 as _RODAS4_TABLEAU
from .tableaus import RODAS5P as _RODAS5P_TABLEAU
from .tableaus import TSIT5 as _TSIT5_TABLEAU


class AbstractKernel:
    """A fused simkit solver. Concrete kernels are final; they hold no parameters, so
    every instance of a class is equal (and selects the same compiled program)."""

    tableau = None
    stiff = False

    def method(self):
        raise NotImplementedError

    def order(self) -> int:
        return self.tableau.order

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"simkit.{type(self).__name__}()"


class DOPRI5(AbstractKernel):
    """Dormand–Prince 5(4) with Shampine's 4th-order dense output (non-stiff)."""

    tableau = _DOPRI5_TABLEAU

    def method(self):
        return ExplicitRK(self.tableau)


class Tsit5(AbstractKernel):
    """Tsitouras 5(4) with its 4th-order continuous extension (non-stiff; the default)."""

    tableau = _TSIT5_TABLEAU

    def method(self):
        return ExplicitRK(self.tableau)


class DOP853(AbstractKernel):
    """Dormand–Prince 8(5,3) as in Hairer's DOP853, with 7th-order dense output
    (non-stiff, tight tolerances: fewer, larger steps than the 5th-order pairs)."""

    tableau = _DOP853_TABLEAU

    def method(self):
        return DOP853Method(self.tableau)


class Rodas4(AbstractKernel):
    """Hairer–Wanner RODAS 4(3), L-stable Rosenbrock with dense output (stiff; default).

    Jacobian by ``jax.jacfwd`` of the rhs and one dense LU factorisation per step: for
    small systems (up to a few dozen states)."""

    tableau = _RODAS4_TABLEAU
    stiff = True

    def method(self):
        return Rosenbrock(self.tableau)


class Rodas5P(AbstractKernel):
    """Steinebach's Rodas5P 5(4), L-stable and stiffly accurate, with 4th-order dense
    output (stiff; for tight tolerances: measured on Robertson and van der Pol mu = 1000,
    as fast as Rodas4 at rtol 1e-3 to 1e-4, 1.2-1.3x faster at 1e-6, 2-3x at 1e-10).

    Eight stages (seven rhs evaluations and one more for ``f(t+h, y1)``), the same
    ``jax.jacfwd`` Jacobian and one dense LU per step as `Rodas4`; the step-size
    controller's exponent is 1/5 (Rodas4: 1/4)."""

    tableau = _RODAS5P_TABLEAU
    stiff = True

    def method(self):
        return Rosenbrock(self.tableau)


class RadauIIA5(AbstractKernel):
    """Radau IIA of order 5 (Hairer & Wanner's RADAU5): three-stage collocation, L-stable
    and stiffly accurate, for tight tolerances and very stiff problems.

    Simplified Newton on the transformed system (one real and one complex LU of the state's
    size), the Jacobian (``jax.jacfwd``) and the LU factors kept across steps while Newton
    converges fast, Gustafsson's predictive step-size controller, dense output from the
    collocation polynomial. Real states only; for systems of up to a few dozen states, as
    `Rodas4`. See `simkit.kernels.radau`."""

    stiff = True

    def method(self):
        return RadauIIA5Method()

    def order(self) -> int:
        return 5
