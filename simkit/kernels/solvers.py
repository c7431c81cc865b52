"""simkit's own solver objects: choose a fused kernel by passing one as ``solver=``."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ..errors import InputError
from .banded import band_structure
from .bdf import DENSE_MAX_STATES, KRYLOV_DIM, BDFMethod
from .methods import DOP853Method, ExplicitRK, Rosenbrock
from .radau import RadauIIA5Method
from .switching import AutoSwitchMethod
from .tableaus import DOP853 as _DOP853_TABLEAU
from .tableaus import DOPRI5 as _DOPRI5_TABLEAU
from .tableaus import RODAS4 as _RODAS4_TABLEAU
from .tableaus import RODAS5P as _RODAS5P_TABLEAU
from .tableaus import TSIT5 as _TSIT5_TABLEAU


def _is_model(preconditioner: Any) -> bool:
    """Whether a `BDF` preconditioner argument is ``"model"`` (the model's own)."""
    return isinstance(preconditioner, str) and preconditioner == "model"


class AbstractKernel:
    """A fused simkit solver. Concrete kernels are final; they hold no parameters, so
    every instance of a class is equal (and selects the same compiled program).

    Pass an instance as ``solver=`` to `simkit.solve`, `simkit.ensemble` or `simkit.fit`
    (``ode_solver=``); tolerances and step limits are arguments of those calls.

    Attributes
    ----------
    tableau : object or None
        The method's Butcher or Rosenbrock tableau (`simkit.kernels.tableaus`); None for
        `RadauIIA5` and `BDF`, whose coefficients are computed.
    stiff : bool
        True for the implicit (Rosenbrock, Radau, BDF) kernels, which build the Jacobian.

    Examples
    --------
    >>> import simkit
    >>> simkit.Tsit5() == simkit.Tsit5(), isinstance(simkit.Rodas4(), simkit.kernels.AbstractKernel)
    (True, True)
    """

    tableau = None
    stiff = False

    def method(self):
        """The step method that the kernel loop runs (internal: `simkit.kernels.methods`).

        Returns
        -------
        object
            A method object (stages, error estimate, dense output) for
            `simkit.kernels.loop`.

        Raises
        ------
        NotImplementedError
            On the abstract class.

        Examples
        --------
        >>> import simkit
        >>> type(simkit.Tsit5().method()).__name__
        'ExplicitRK'
        """
        raise NotImplementedError

    def order(self) -> int:
        """Order of the method's propagated solution.

        Returns
        -------
        int
            The classical order (e.g. 5 for `Tsit5`, 8 for `DOP853`, 4 for `Rodas4`).

        Examples
        --------
        >>> import simkit
        >>> simkit.Tsit5().order(), simkit.DOP853().order(), simkit.Rodas4().order()
        (5, 8, 4)
        """
        return self.tableau.order

    def starting_order(self) -> int:
        """Order of the method's first step, which sizes the automatic first step
        (Hairer's rule, ``simkit.solvers.initial_step``).

        Returns
        -------
        int
            `order` for the one-step methods; 1 for `BDF`, which starts at order 1.

        Examples
        --------
        >>> import simkit
        >>> simkit.Tsit5().starting_order(), simkit.BDF().starting_order()
        (5, 1)
        """
        return self.order()

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"simkit.{type(self).__name__}()"


class DOPRI5(AbstractKernel):
    """Dormand–Prince 5(4) with Shampine's 4th-order dense output (non-stiff).

    SciPy's ``RK45`` pair. Takes no arguments.

    Examples
    --------
    >>> import simkit
    >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11, solver=simkit.DOPRI5())
    >>> sol.solver_name, sol.ys.shape
    ('simkit.DOPRI5()', (11, 3))
    """

    tableau = _DOPRI5_TABLEAU

    def method(self):
        return ExplicitRK(self.tableau)


class Tsit5(AbstractKernel):
    """Tsitouras 5(4) with its 4th-order continuous extension (non-stiff; the default).

    The default of `simkit.solve` for non-stiff models of up to 64 states. Takes no
    arguments.

    Examples
    --------
    >>> import simkit
    >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11, solver=simkit.Tsit5())
    >>> sol.solver_name, sol.ys.shape
    ('simkit.Tsit5()', (11, 3))
    """

    tableau = _TSIT5_TABLEAU

    def method(self):
        return ExplicitRK(self.tableau)


class DOP853(AbstractKernel):
    """Dormand–Prince 8(5,3) as in Hairer's DOP853, with 7th-order dense output
    (non-stiff, tight tolerances: fewer, larger steps than the 5th-order pairs).

    Takes no arguments.

    Examples
    --------
    >>> import simkit
    >>> sol = simkit.solve(simkit.models.get("lorenz"), (0.0, 1.0), saveat=11, solver=simkit.DOP853())
    >>> sol.solver_name, sol.ys.shape
    ('simkit.DOP853()', (11, 3))
    """

    tableau = _DOP853_TABLEAU

    def method(self):
        return DOP853Method(self.tableau)


class Rodas4(AbstractKernel):
    """Hairer–Wanner RODAS 4(3), L-stable Rosenbrock with dense output (stiff).

    Jacobian by ``jax.jacfwd`` of the rhs and one dense LU factorisation per step: for
    small systems (up to a few dozen states). The default for models marked ``stiff`` until
    0.2 (now `Rodas5P`, as fast at rtol 1e-4 and faster at tighter tolerances). Takes no
    arguments.

    Examples
    --------
    >>> import jax.numpy as jnp, simkit
    >>> stiff = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * (y - jnp.cos(t)), params={"k": 1e3},
    ...                         y0=[0.0], state_names=("y",), stiff=True)
    >>> sol = simkit.solve(stiff, (0.0, 1.0), saveat=3, solver=simkit.Rodas4())
    >>> sol.solver_name, round(float(sol.ys[-1, 0]), 3)
    ('simkit.Rodas4()', 0.541)
    """

    tableau = _RODAS4_TABLEAU
    stiff = True

    def method(self):
        return Rosenbrock(self.tableau)


class Rodas5P(AbstractKernel):
    """Steinebach's Rodas5P 5(4), L-stable and stiffly accurate, with 4th-order dense
    output: the default of `simkit.solve` for models marked ``stiff`` (up to 64 states).

    Measured on Robertson (to 1e5 and 1e11), HIRES, POLLU, van der Pol mu = 1000 and the
    Oregonator (``python benchmarks/stiff.py``, `benchmarks/results/stiff.json`): as fast
    as `Rodas4` at rtol 1e-4 (within 10 %), 1.2-1.5x faster at 1e-6, 1.5-2.3x at 1e-8,
    2-5x at 1e-10.

    Eight stages (seven rhs evaluations and one more for ``f(t+h, y1)``), the same
    ``jax.jacfwd`` Jacobian and one dense LU per step as `Rodas4`; the step-size
    controller's exponent is 1/5 (Rodas4: 1/4). Takes no arguments.

    Below rtol 1e-8 the default is `RadauIIA5` instead (`default_stiff_kernel`). A
    Rosenbrock step's result is the output of its linear solves, whose rounding reaches a
    direction the rhs conserves scaled by the condition of ``I/(h gamma) - J``, and stays
    there: on E5 (species decaying to 1e-22 while ``y3 - y2 + y4`` is conserved) Rodas5P
    ends 25-170 % off in those species at every rtol from 1e-4 to 1e-12 (atol 1.11e-24),
    `RadauIIA5` and `BDF` within 0.1-1 % (``benchmarks/stiff_step_counts.py``).

    Examples
    --------
    >>> import jax.numpy as jnp, simkit
    >>> stiff = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * (y - jnp.cos(t)), params={"k": 1e3},
    ...                         y0=[0.0], state_names=("y",), stiff=True)
    >>> sol = simkit.solve(stiff, (0.0, 1.0), saveat=3, solver=simkit.Rodas5P())
    >>> sol.solver_name, round(float(sol.ys[-1, 0]), 3)
    ('simkit.Rodas5P()', 0.541)
    """

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
    `Rodas4`. See `simkit.kernels.radau`. Takes no arguments.

    Examples
    --------
    >>> import jax.numpy as jnp, simkit
    >>> stiff = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * (y - jnp.cos(t)), params={"k": 1e3},
    ...                         y0=[0.0], state_names=("y",), stiff=True)
    >>> sol = simkit.solve(stiff, (0.0, 1.0), saveat=3, solver=simkit.RadauIIA5())
    >>> sol.solver_name, round(float(sol.ys[-1, 0]), 3)
    ('simkit.RadauIIA5()', 0.541)
    """

    stiff = True

    def method(self):
        return RadauIIA5Method()

    def order(self) -> int:
        """Order of the method: 5 (three Radau IIA stages).

        Returns
        -------
        int
            5.

        Examples
        --------
        >>> import simkit
        >>> simkit.RadauIIA5().order()
        5
        """
        return 5


class BDF(AbstractKernel):
    """Variable-order BDF / NDF, orders 1 to 5 (Shampine & Reichelt's NDFs, as MATLAB's
    ``ode15s`` and SciPy's ``BDF``), for large stiff systems.

    One Newton solve per step. Small systems (``linear_solver="auto"``: up to 256 states,
    100 with a preconditioner) use a dense Jacobian (``jax.jacfwd``) kept across steps and
    recomputed only when Newton fails; the matrix ``I - c J`` is refactored whenever the
    step size or the order changes ``c`` (`simkit.kernels.linalg`: straight-line LU up to
    eight states, LAPACK above) and, above 128 states, only when they move ``c`` by more
    than 30 % (CVODE's rule; the Newton correction scaled by ``2 / (1 + c / c_factored)`` in
    between). Up to 128 states the same algorithm and first step as SciPy's ``BDF``: on
    Robertson the same step counts (327 at rtol 1e-6, atol 1e-10). A step costs two or three rhs evaluations and triangular solves
    where `Rodas5P` does a new LU and eight evaluations. Larger systems run matrix-free
    (Newton-Krylov): no Jacobian, one Jacobian-vector product per GMRES iteration, memory
    O(n), and the model's preconditioner if it has one (a `simkit.stencil.PDEModel` with a
    stiff ``linear`` part gets its FFT inverse, `simkit.stencil.preconditioner`). Measured
    at rtol 1e-6: on the 2-D Brusselator of 2,048 states 0.19 s against 20.7 s dense and 1.1
    s for SciPy's BDF with ``jac_sparsity``; at 66,248 states 6 s against SciPy's 200+ s
    (``benchmarks/stiff_mol.py``). Without a preconditioner GMRES needs many iterations on
    very stiff problems (1-D Brusselator of 3,200 states: 2.9 s, SciPy's sparse LU 0.13 s;
    ``benchmarks/bdf_size.py``). So above 256 states without a preconditioner the Jacobian's
    sparsity pattern is read from the rhs's program (`simkit.kernels.structure`: every entry
    that may be nonzero for any state, time and parameters) and, where it is a narrow band
    after reordering, used as a given ``jac_sparsity`` is: the states are reordered into a
    band (reverse Cuthill-McKee), the Jacobian costs ``kl + ku + 1`` Jacobian-vector products
    instead of ``n`` and ``I - c J`` a banded LU with partial pivoting
    (`simkit.kernels.banded`), O(n) memory. Where the pattern is not a narrow band (a dense
    coupling, an FFT of the whole state, a 2-D grid of more than about 32 x 32 cells, whose
    band passes 128) it stays matrix-free; ``linear_solver="dense"`` keeps a dense Jacobian
    for a few thousand states whose Jacobian is dense (large reaction networks).
    On small systems at tight
    tolerances `Rodas5P` or `RadauIIA5` take far fewer steps. The order reached and the
    Jacobians with the LU factorisations (dense) or the GMRES iterations (matrix-free) are
    in ``Solution.stats`` (``final_order``, ``num_jacobians``, ``num_lu_decompositions`` or
    ``num_linear_iterations``, ``num_linear_failures``). Dense output is the method's interpolating polynomial. Real
    states only. See `simkit.kernels.bdf`.

    Parameters
    ----------
    linear_solver : {"auto", "dense", "banded", "krylov"}
        How the Newton iteration solves with ``I - c J``: ``"auto"`` banded when
        ``jac_sparsity`` is given, else dense up to 256 states (100 with a preconditioner);
        above, with a preconditioner matrix-free, without one banded where the pattern read
        from the rhs is a narrow band (block at most n / 8 and 128) and matrix-free
        otherwise; or one of them always (``"banded"`` needs ``jac_sparsity``).
    preconditioner : callable, "model" or None
        For the matrix-free solves: ``preconditioner(t, y, params, c)`` returns a function
        ``v -> M^{-1} v`` with ``M`` an approximation of ``I - c J(t, y)`` (shape
        ``(n_states,)`` in and out; traced, built once per step). ``"model"`` (default) takes
        the model's ``preconditioner`` (`simkit.ODEModel`), None runs GMRES
        unpreconditioned. Ignored by dense solves.
    krylov_dim : int
        The largest Krylov space of one GMRES solve (default 30): its iterations and its
        memory, ``krylov_dim + 1`` vectors of the state's size. A solve that does not
        converge within it fails its Newton iteration (the first may only reduce the
        residual, CVODE's rule) and the step shrinks; ``stats["num_linear_failures"]``
        counts them, and a failed solve's message names them.
    jac_sparsity : array_like or scipy.sparse matrix, shape (n_states, n_states), or "detect", optional
        ``"detect"``: read from the rhs's program (`simkit.kernels.structure`) at any size,
        and used where its band is narrow (``"auto"`` does this by itself above 256 states
        without a preconditioner). Operations it cannot follow (a sort, a linear solve, a
        callback) count as dense, so such a model runs as ``BDF()``.
        Otherwise nonzero where ``d rhs_i / d y_j`` may be nonzero (SciPy's ``jac_sparsity``); the
        diagonal is always included. The band found is in the solver's repr
        (``band kl+ku``); a pattern that misses a nonzero gives a wrong Jacobian, which
        slows Newton's convergence (smaller steps) but is not used to judge accuracy.

    refactor_ratio : float in [0, 1), optional
        The factors of ``I - c J`` (dense or banded) are kept while ``c`` stays within this
        fraction of the ``c`` they were made for. Default: 0.3 above 128 states (fewer
        factorisations for a few more Newton iterations: 1.13-1.32x faster on banded
        Brusselators of 1,152-6,400 states, 0.96-1.22x on dense ones of 150-256), 0 at or
        below (refactored whenever ``c`` changes, as SciPy's ``BDF``; there the extra
        iterations and the slightly smaller steps they cause cost what the factorisations
        save: 0.80-1.11x at 2-100 states). Ignored by matrix-free solves.

    Raises
    ------
    InputError
        An unknown ``linear_solver``, ``"banded"`` without ``jac_sparsity`` (``"dense"`` or
        ``"krylov"`` with one), a pattern that
        is not square, a ``krylov_dim`` below 1, a ``refactor_ratio`` outside [0, 1), or a ``preconditioner`` that is not
        callable, ``"model"`` or None. `simkit.solve` raises `simkit.errors.ShapeError`
        when the pattern's size is not the model's state count.

    Examples
    --------
    >>> import jax.numpy as jnp, simkit
    >>> stiff = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * (y - jnp.cos(t)), params={"k": 1e3},
    ...                         y0=[0.0], state_names=("y",), stiff=True)
    >>> sol = simkit.solve(stiff, (0.0, 1.0), saveat=3, solver=simkit.BDF())
    >>> sol.solver_name, round(float(sol.ys[-1, 0]), 3), int(sol.stats["final_order"]) > 1
    ('simkit.BDF()', 0.541, True)
    >>> sol = simkit.solve(stiff, (0.0, 1.0), saveat=3, solver=simkit.BDF(linear_solver="krylov"))
    >>> round(float(sol.ys[-1, 0]), 3), int(sol.stats["num_linear_iterations"]) > 0
    (0.541, True)
    """

    stiff = True

    def __init__(self, linear_solver: str = "auto", preconditioner: Any = "model", krylov_dim: int = KRYLOV_DIM,
                 jac_sparsity: Any = None, refactor_ratio: float | None = None):
        if linear_solver not in ("auto", "dense", "banded", "krylov"):
            raise InputError(f"BDF: linear_solver must be 'auto', 'dense', 'banded' or 'krylov', got {linear_solver!r}")
        detect = isinstance(jac_sparsity, str)
        if detect and jac_sparsity != "detect":
            raise InputError(f"BDF: jac_sparsity must be an (n, n) pattern or 'detect', got {jac_sparsity!r}")
        if linear_solver == "banded" and jac_sparsity is None:
            raise InputError("BDF: linear_solver='banded' needs jac_sparsity, the (n, n) pattern of the Jacobian")
        if linear_solver in ("dense", "krylov") and jac_sparsity is not None:  # it was kept, unused, in silence
            raise InputError(f"BDF: linear_solver={linear_solver!r} does not use jac_sparsity: pass "
                             "linear_solver='banded' (or 'auto') with the pattern, or no pattern")
        if not isinstance(krylov_dim, (int, np.integer)) or isinstance(krylov_dim, bool) or krylov_dim < 1:
            raise InputError(f"BDF: krylov_dim must be a positive integer, got {krylov_dim!r}")
        if not (preconditioner is None or _is_model(preconditioner) or callable(preconditioner)):
            raise InputError(f"BDF: preconditioner must be a callable (t, y, params, c) -> (v -> M^-1 v), "
                             f"'model' or None, got {preconditioner!r}")
        if refactor_ratio is not None and (
                isinstance(refactor_ratio, bool) or not isinstance(refactor_ratio, (int, float, np.integer, np.floating))
                or not 0 <= refactor_ratio < 1):
            raise InputError(f"BDF: refactor_ratio must be None or a number in [0, 1), got {refactor_ratio!r}")
        self.linear_solver = linear_solver
        self.preconditioner = preconditioner
        self.krylov_dim = int(krylov_dim)
        self.refactor_ratio = None if refactor_ratio is None else float(refactor_ratio)
        self.jac_sparsity = jac_sparsity
        self._band = None if jac_sparsity is None or detect else band_structure(jac_sparsity)

    def _key(self) -> tuple:
        return (type(self).__name__, self.linear_solver, self.preconditioner, self.krylov_dim, self._band,
                isinstance(self.jac_sparsity, str), self.refactor_ratio)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        label = getattr(self, "_label", None)
        if label is not None:  # resolved from "model" by the front door: named as the user wrote it
            return label
        args = [f"linear_solver={self.linear_solver!r}"] if self.linear_solver != "auto" else []
        if not _is_model(self.preconditioner):
            args.append(f"preconditioner={getattr(self.preconditioner, '__name__', repr(self.preconditioner))}")
        if self.krylov_dim != KRYLOV_DIM:
            args.append(f"krylov_dim={self.krylov_dim}")
        if self.refactor_ratio is not None:
            args.append(f"refactor_ratio={self.refactor_ratio:g}")
        if self._band is not None:
            args.append(f"jac_sparsity=<{self._band.n}x{self._band.n}, band {self._band.kl}+{self._band.ku}>")
        elif isinstance(self.jac_sparsity, str):
            args.append("jac_sparsity='detect'")
        return f"simkit.BDF({', '.join(args)})"

    def with_detected_pattern(self, model: Any) -> BDF:
        """The pattern read from ``model``'s rhs (`simkit.kernels.sparsity`) where this
        solver asks for it (internal: the front door calls it): ``jac_sparsity="detect"``,
        or ``"auto"`` with no pattern and no preconditioner above 256 states. Banded where
        the band is narrow, or ``linear_solver="banded"`` was asked for; otherwise as
        ``"auto"`` without a pattern (dense or matrix-free)."""
        if self.jac_sparsity is None:
            preconditioner = model.preconditioner if _is_model(self.preconditioner) else self.preconditioner
            if self.linear_solver != "auto" or preconditioner is not None or model.n_states <= DENSE_MAX_STATES:
                return self
        elif not isinstance(self.jac_sparsity, str):
            return self
        from .sparsity import detected_pattern

        pattern, narrow, band = detected_pattern(model)
        use = pattern is not None and (narrow or self.linear_solver == "banded")
        if not use and self.linear_solver == "banded":
            raise InputError(f"BDF(linear_solver='banded', jac_sparsity='detect'): the Jacobian's pattern of model "
                             f"{model.name!r} could not be read from its rhs; pass it")
        # a copy with the cached pattern and band (the constructor would reorder the pattern
        # again at every solve: 1-6 ms at 400-16,384 states)
        out = copy.copy(self)
        out.jac_sparsity, out._band = (pattern, band) if use else (None, None)
        return out

    def with_model_preconditioner(self, model_preconditioner: Any) -> BDF:
        """This solver with ``preconditioner="model"`` resolved to the model's (internal:
        the front door calls it; the result solves the same way)."""
        if not _is_model(self.preconditioner):
            return self
        # a copy, not a new BDF: rebuilt without its pattern, a banded solver failed the
        # constructor's "needs jac_sparsity" check in every solve
        out = copy.copy(self)
        out.preconditioner = model_preconditioner
        out._label = repr(self)
        return out

    def method(self):
        pre = None if _is_model(self.preconditioner) else self.preconditioner
        return BDFMethod(self.linear_solver, pre, self.krylov_dim, self._band, self.refactor_ratio)

    def order(self) -> int:
        """Order of the method: 5, the highest order it uses (it starts at 1).

        Returns
        -------
        int
            5.

        Examples
        --------
        >>> import simkit
        >>> simkit.BDF().order()
        5
        """
        return 5

    def starting_order(self) -> int:
        """Order of the first step: 1 (the automatic first step is sized for it, as SciPy's).

        Returns
        -------
        int
            1.

        Examples
        --------
        >>> import simkit
        >>> simkit.BDF().starting_order()
        1
        """
        return 1


# The default stiff kernel for small systems (`simkit.solve` with a model marked ``stiff``)
# is chosen by the tolerance as well: `RadauIIA5` below this rtol, `Rodas5P` at and above it.
# Measured (benchmarks/stiff_step_counts.py, benchmarks/results/stiff_step_counts.json): at
# rtol 1e-9 ... 1e-12 RadauIIA5's errors are 3-100x smaller than Rodas5P's at the same rtol
# (Robertson, HIRES, POLLU, van der Pol, Oregonator) for 0.6-2.3x its accepted steps; on E5,
# whose species end near 1e-22, Rodas5P's answer is off by 25-170 % at every rtol (atol
# 1.11e-24), RadauIIA5's within 0.1 %. A Rosenbrock step's result is its linear solves'
# output, whose rounding reaches directions the rhs conserves (E5's y3 - y2 + y4) scaled by
# the condition of ``I/(h gamma) - J``; Radau's Newton iteration converges to the collocation
# equations, which hold those directions to the rhs's own rounding.
RADAU_BELOW_RTOL = 1e-8


def default_stiff_kernel(rtol: float | None = None) -> AbstractKernel:
    """The default kernel for a small stiff model at relative tolerance ``rtol``.

    Parameters
    ----------
    rtol : float or None
        The relative tolerance as a Python number, known when the solve is prepared; None
        when it is traced (inside the user's ``jax.jit``), which keeps `Rodas5P`.

    Returns
    -------
    AbstractKernel
        `RadauIIA5` for ``rtol < RADAU_BELOW_RTOL`` (1e-8), else `Rodas5P`. The choice is
        static: a tolerance on the other side of 1e-8 compiles the other kernel once; other
        tolerances on the same side reuse the compiled program.

    Examples
    --------
    >>> from simkit.kernels.solvers import default_stiff_kernel
    >>> default_stiff_kernel(1e-6), default_stiff_kernel(1e-10), default_stiff_kernel(None)
    (simkit.Rodas5P(), simkit.RadauIIA5(), simkit.Rodas5P())
    """
    if rtol is not None and rtol < RADAU_BELOW_RTOL:
        return RadauIIA5()
    return Rodas5P()


class AutoSwitch(AbstractKernel):
    """Tsit5 with automatic stiffness detection, switching to Rodas5P where the problem is
    stiff and back where it is not (`simkit.kernels.switching`).

    For a model whose stiffness is unknown, or changes along the solution. The accepted
    steps taken by Rodas5P and the number of switches are in ``Solution.stats``
    (``num_stiff_steps``, ``num_switches``). Real states only; one ``lax.cond`` per step
    chooses the method (under ``jax.vmap`` both methods run every step). The default of
    `simkit.solve` for a model with ``stiff=None``. Takes no arguments.

    Examples
    --------
    >>> import simkit
    >>> sol = simkit.solve(simkit.models.get("van_der_pol_stiff"), (0.0, 100.0), saveat=3,
    ...                    solver=simkit.AutoSwitch())
    >>> sol.solver_name, int(sol.stats["num_switches"]) > 0, int(sol.stats["num_stiff_steps"]) > 0
    ('simkit.AutoSwitch()', True, True)
    """

    stiff = True  # it may build Jacobians: complex states are refused

    def method(self):
        return AutoSwitchMethod(ExplicitRK(_TSIT5_TABLEAU), Rosenbrock(_RODAS5P_TABLEAU))

    def order(self) -> int:
        """Order of the method: 5 (both Tsit5 and Rodas5P).

        Returns
        -------
        int
            5.

        Examples
        --------
        >>> import simkit
        >>> simkit.AutoSwitch().order()
        5
        """
        return 5
