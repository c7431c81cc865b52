"""Fixed-step time integration of a `PDEModel`: steppers, the stability check, `integrate`.

The rollout is one compiled program: a ``lax.scan`` over save points, each a ``fori_loop``
of ``save_every`` steps (the field never leaves the device between steps; the notes
measured a Python loop over a jitted step 2.6-3x slower at 2048^2). Numbers (``dt``, ``t0``,
``u0``, parameters, boundary values) are traced: a new ``dt`` does not recompile.

Steppers: forward Euler; SSP-RK3 (Shu & Osher 1988, J. Comput. Phys. 77:439-471); classical
RK4; IMEX Euler (implicit in the model's ``linear`` part, explicit in the rest; Ascher,
Ruuth & Wetton 1995, SIAM J. Numer. Anal. 32:797-823), its linear solve matrix-free by
BiCGStab with global inner products.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..placement import platform_of, warn_if_emulated
from .. import _config
from .._aligned import to_device
from .._prepare import check_flag, check_number, merge_params
from ..params import refuse_traced
from ..errors import InputError, InputTypeError, ShapeError, SolveError
from ..status import Status
from . import blocked
from .components import MAX_COMPONENTS, Components, split_rhs
from .field_solution import FieldSolution
from .grid import whole_number
from .krylov import bicgstab
from .pde import PDEModel, Space


class AbstractStepper(eqx.Module):
    """A one-step method ``u_{n+1} = step(rhs, linear, t, u, dt, space)``: the extension contract.

    A stepper is an ``equinox.Module`` (its fields, e.g. tolerances, are traced; its class
    attributes are static). Subclass it and implement `step` to add a method; pass an
    instance as `integrate`'s or `rollout`'s ``stepper``. The built-in ones are
    `ForwardEuler`, `SSPRK3`, `RK4` (the default) and `IMEXEuler`.

    Attributes
    ----------
    order : int
        Order of accuracy (class attribute).
    stability_limit : float
        The largest ``dt * |lambda|`` (dimensionless) the method is stable for on the
        negative real axis (diffusion): `integrate`'s stability check refuses a ``dt``
        above ``stability_limit / spectral_radius``.
    imaginary_limit : float
        The same on the imaginary axis (waves, central advection); 0 where no step on it is
        stable.
    needs_linear : bool
        True for IMEX methods, which take the model's ``linear`` part implicitly (default
        False).
    amplification : tuple of float or None
        Coefficients ``c_j`` of the method's stability polynomial ``R(z) = sum c_j z^j``
        (of its explicit part for IMEX methods): `integrate`'s stability check then
        requires ``|R(dt lambda)| <= 1`` at estimates of the rhs Jacobian's eigenvalues
        (`ritz_values`), whatever their direction in the complex plane. ``None`` (the
        default): the check compares ``dt`` with the limits above over the spectral radius.

    Examples
    --------
    Heun's method (explicit trapezoidal rule, order 2) as a new stepper:

    >>> import simkit
    >>> from simkit.stencil import AbstractStepper
    >>> class Heun(AbstractStepper):
    ...     order = 2
    ...     stability_limit = 2.0  # |1 + z + z^2/2| = 1 at z = -2
    ...     imaginary_limit = 0.0
    ...     amplification = (1.0, 1.0, 0.5)  # R(z) = 1 + z + z^2/2
    ...     def step(self, rhs, linear, t, u, dt, space):
    ...         k1 = rhs(t, u)
    ...         return u + dt / 2 * (k1 + rhs(t + dt, u + dt * k1))
    >>> heat = simkit.models.get("heat_1d")
    >>> sol = simkit.stencil.integrate(heat, dt=1e-4, steps=10, stepper=Heun())
    >>> sol.us.shape, sol.stepper_name
    ((2, 1, 128), 'Heun')
    """

    order: ClassVar[int]
    stability_limit: ClassVar[float]
    imaginary_limit: ClassVar[float]
    needs_linear: ClassVar[bool] = False
    amplification: ClassVar[tuple[float, ...] | None] = None

    @abc.abstractmethod
    def step(self, rhs: Callable, linear: Callable | None, t: Any, u: Any, dt: Any, space: Space) -> Any:
        """One step of size ``dt`` from ``(t, u)``.

        Called inside the compiled rollout (traced values, no Python control flow on them).

        Parameters
        ----------
        rhs : callable
            ``rhs(t, u) -> du/dt``, the model's whole right-hand side (parameters and
            `space` already bound), an array of ``u``'s shape.
        linear : callable or None
            ``linear(t, u)``, the model's stiff linear (affine) part with the same binding,
            or None when the model has none; included in `rhs`.
        t : jax.Array
            Time at the start of the step (the model's time unit), a scalar.
        u : jax.Array
            The field, shape ``(components,) + grid.shape``.
        dt : jax.Array
            Step size (time unit), a scalar.
        space : Space
            Global reductions (``space.sum``: inner products that stay global on a device
            mesh).

        Returns
        -------
        jax.Array
            The field at ``t + dt``, ``u``'s shape and dtype.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import ForwardEuler
        >>> ForwardEuler().step(lambda t, u: -u, None, 0.0, jnp.ones(3), 0.1, None).tolist()
        [0.9, 0.9, 0.9]
        """

    def step_with_status(self, rhs: Callable, linear: Callable | None, t: Any, u: Any, dt: Any,
                         space: Space) -> tuple[Any, Any]:
        """`step`, and whether it succeeded: what the rollout calls. Override it (and define
        `step` from it) in a method with an inner iteration that can fail to converge (an
        implicit solve): a failed step's field is then NaN from there on, the run's status
        is ``Status.NONFINITE`` and its error names the failed solve. The default: `step`,
        always successful.

        Parameters
        ----------
        rhs, linear, t, u, dt, space
            As for `step`.

        Returns
        -------
        tuple
            ``(field, ok)``: the field at ``t + dt`` and a boolean scalar, False where the
            step's inner solve did not converge.

        Examples
        --------
        >>> import jax.numpy as jnp
        >>> from simkit.stencil import ForwardEuler
        >>> u, ok = ForwardEuler().step_with_status(lambda t, u: -u, None, 0.0, jnp.ones(2), 0.1, None)
        >>> u.tolist(), bool(ok)
        ([0.9, 0.9], True)
        """
        return self.step(rhs, linear, t, u, dt, space), jnp.asarray(True)


class ForwardEuler(AbstractStepper):
    """Forward (explicit) Euler, ``u_{n+1} = u_n + dt rhs(t_n, u_n)``, order 1.

    Stable for ``dt |lambda| <= 2`` on the negative real axis (diffusion); unstable for any
    ``dt`` on the imaginary axis (waves, central advection: use `SSPRK3` or `RK4`).

    Attributes
    ----------
    order : int
        1.
    stability_limit : float
        2.0 (``dt * |lambda|``, negative real axis).
    imaginary_limit : float
        0.0.

    Examples
    --------
    >>> import simkit
    >>> from simkit.stencil import ForwardEuler
    >>> heat = simkit.models.get("heat_1d")  # 128 points, diffusivity 0.1
    >>> sol = simkit.stencil.integrate(heat, dt=1e-4, steps=10, stepper=ForwardEuler())
    >>> sol.us.shape, sol.stepper_name
    ((2, 1, 128), 'ForwardEuler')
    """

    order = 1
    stability_limit = 2.0
    imaginary_limit = 0.0
    amplification = (1.0, 1.0)

    def step(self, rhs, linear, t, u, dt, space):
        return u + dt * rhs(t, u)


class SSPRK3(AbstractStepper):
    """Shu-Osher's three-stage strong-stability-preserving Runge-Kutta method (order 3).

    Each stage is a convex combination of forward Euler steps, so a spatial discretisation
    that is total-variation diminishing under forward Euler stays so for the same ``dt``
    (Shu & Osher 1988, J. Comput. Phys. 77:439-471): the choice for upwind and flux-limited
    advection (`simkit.stencil.flux_divergence`).

    Attributes
    ----------
    order : int
        3.
    stability_limit : float
        2.5127... (``dt * |lambda|``, negative real axis: where
        ``|1 + z + z^2/2 + z^3/6| = 1``).
    imaginary_limit : float
        ``sqrt(3)``.

    Examples
    --------
    >>> import simkit
    >>> from simkit.stencil import SSPRK3
    >>> heat = simkit.models.get("heat_1d")
    >>> sol = simkit.stencil.integrate(heat, dt=1e-4, steps=10, save_every=5, stepper=SSPRK3())
    >>> sol.us.shape, [round(t, 6) for t in sol.ts.tolist()]
    ((3, 1, 128), [0.0, 0.0005, 0.001])
    """

    order = 3
    stability_limit = 2.5127453266183286  # |1 + z + z^2/2 + z^3/6| = 1 on the real axis
    imaginary_limit = 3**0.5
    amplification = (1.0, 1.0, 1 / 2, 1 / 6)

    def step(self, rhs, linear, t, u, dt, space):
        # Shu-Osher form. A large field: each stage written to its own buffer (see
        # `in_own_buffer`). A small one: the stages in a loop, one copy of the rhs in the
        # program (see `LARGE_FIELD`); the same operations in the same order either way.
        if compact(u):
            offset = jnp.asarray([0.0, 1.0, 0.5], u.dtype)
            keep = jnp.asarray([0.0, 0.75, 1 / 3], u.dtype)
            blend = jnp.asarray([1.0, 0.25, 2 / 3], u.dtype)

            def stage(i, v):
                return keep[i] * u + blend[i] * (v + dt * rhs(t + offset[i] * dt, v))

            return jax.lax.fori_loop(0, 3, stage, u)
        v1 = in_own_buffer(lambda u: u + dt * rhs(t, u), u)
        v2 = in_own_buffer(lambda v: 0.75 * u + 0.25 * (v + dt * rhs(t + dt, v)), v1)
        return u / 3 + 2 / 3 * (v2 + dt * rhs(t + 0.5 * dt, v2))


class RK4(AbstractStepper):
    """The classical fourth-order Runge-Kutta method, `integrate`'s default stepper.

    Four evaluations of the right-hand side per step.

    Attributes
    ----------
    order : int
        4.
    stability_limit : float
        2.7852... (``dt * |lambda|``, negative real axis).
    imaginary_limit : float
        ``2 sqrt(2)``.

    Examples
    --------
    >>> import simkit
    >>> from simkit.stencil import RK4
    >>> heat = simkit.models.get("heat_1d")
    >>> sol = simkit.stencil.integrate(heat, dt=1e-4, steps=10, stepper=RK4())
    >>> sol.us.shape, sol.stepper_name
    ((2, 1, 128), 'RK4')
    """

    order = 4
    stability_limit = 2.785293563405282
    imaginary_limit = 2 * 2**0.5
    amplification = (1.0, 1.0, 1 / 2, 1 / 6, 1 / 24)

    def step(self, rhs, linear, t, u, dt, space):
        # A large field: each k written to its own buffer (see `in_own_buffer`), one pass
        # over memory per stage, the last stage fused with the sum. A small one: the stages
        # in a loop whose body reads loop parameters only, one copy of the rhs in the program
        # (see `LARGE_FIELD`); the same sum in the same order either way.
        if compact(u):
            offset = jnp.asarray([0.0, 0.5, 0.5, 1.0], u.dtype)
            weight = jnp.asarray([0.0, 1.0, 2.0, 2.0], u.dtype)  # of the previous stage's k

            def stage(i, carry):
                k, total = carry
                h = offset[i] * dt
                return rhs(t + h, u + h * k), total + weight[i] * k

            k4, total = jax.lax.fori_loop(0, 4, stage, (jnp.zeros_like(u), jnp.zeros_like(u)))
            return u + dt / 6 * (total + k4)
        k1 = in_own_buffer(lambda u: rhs(t, u), u)
        k2 = in_own_buffer(lambda k: rhs(t + dt / 2, u + dt / 2 * k), k1)
        k3 = in_own_buffer(lambda k: rhs(t + dt / 2, u + dt / 2 * k), k2)
        return u + dt / 6 * (k1 + 2 * k2 + 2 * k3 + rhs(t + dt, u + dt * k3))


class IMEXEuler(AbstractStepper):
    """IMEX Euler (order 1): ``u_{n+1} - dt L(u_{n+1}) = u_n + dt N(u_n)``.

    ``L`` is the model's ``linear`` part (`PDEModel.linear`, affine in ``u``: its boundary
    terms are handled) and ``N = rhs - L`` the rest (Ascher, Ruuth & Wetton 1995, SIAM J.
    Numer. Anal. 32:797-823). Stable for any ``dt`` in ``L``; the explicit part sets the
    stability bound that `integrate` checks. The linear system of every step is solved
    matrix-free by BiCGStab (its inner products through ``space.sum``, global on a device
    mesh). A solve that does not converge within `max_steps` iterations fails the step
    (`step_with_status`): the field is NaN from there on, the result's status is
    ``Status.NONFINITE`` and `integrate` raises a `SolveError` that names the solve.

    Parameters
    ----------
    rtol, atol : float
        Tolerances of the BiCGStab solve: it stops when the residual's 2-norm over the whole
        field is at most ``max(atol, rtol * |b|)`` (``b`` the right-hand side; ``atol`` in
        the field's units). Defaults ``1e-10`` and ``1e-12``.
    max_steps : int
        BiCGStab iterations per step at most (default 1000).

    Attributes
    ----------
    order : int
        1.
    stability_limit, imaginary_limit : float
        2.0 and 0.0, of the explicit part (``dt * |lambda|`` of ``N``).
    needs_linear : bool
        True: the model must have a ``linear`` part.

    Examples
    --------
    The heat equation's whole rhs is linear, so a step over 10x the explicit bound is stable:

    >>> import simkit
    >>> from simkit.stencil import IMEXEuler
    >>> heat = simkit.models.get("heat_1d")  # explicit RK4 needs dt < 4.3e-4
    >>> sol = simkit.stencil.integrate(heat, dt=5e-3, steps=4, stepper=IMEXEuler())
    >>> sol.us.shape, bool(abs(sol.us[-1]).max() < abs(sol.us[0]).max())
    ((2, 1, 128), True)
    """

    rtol: float = 1e-10
    atol: float = 1e-12
    max_steps: int = 1000
    order = 1
    stability_limit = 2.0
    imaginary_limit = 0.0
    amplification = (1.0, 1.0)  # of the explicit part
    needs_linear = True

    def step(self, rhs, linear, t, u, dt, space):
        return self.step_with_status(rhs, linear, t, u, dt, space)[0]

    def step_with_status(self, rhs, linear, t, u, dt, space):
        t1 = t + dt
        explicit = u + dt * (rhs(t, u) - linear(t, u))
        offset = linear(t1, jax.tree_util.tree_map(jnp.zeros_like, u))  # L(v) = A v + offset

        def matvec(v):
            return v - dt * (linear(t1, v) - offset)

        def dot(a, b):  # over the whole field (a `Components`: component by component, in order)
            return sum(jnp.sum(space.sum(x)) for x in jax.tree_util.tree_leaves(a * b))

        def solve(operator, b):  # the step, its tangent and (transposed) its cotangent: each to rtol
            return bicgstab(operator, b, b, dot, rtol=self.rtol, atol=self.atol, max_steps=self.max_steps)

        # `custom_linear_solve`: derivatives solve their own systems (through BiCGStab's
        # iterations jax.grad failed on the while loop, and forward-mode tangents were ~700x
        # less accurate than the values at a loose rtol); its aux output is the step's converged flag
        return jax.lax.custom_linear_solve(matvec, explicit + dt * offset, solve, transpose_solve=solve,
                                           has_aux=True)


def spectral_radius(model: PDEModel, params: Mapping[str, Any], u: Any, *, explicit_only: bool = False,
                    iterations: int = 40, t: float = 0.0) -> tuple[float, bool]:
    """Estimate the largest ``|lambda|`` of the Jacobian ``J`` of the model's rhs at ``u``.

    Power iteration on ``J^2`` with Jacobian-vector products (``jax.jvp``, no matrix built)
    from a fixed random start, so the result is deterministic; it approaches the radius from
    below (a slightly low estimate after few iterations). `integrate`'s stability check
    compares ``dt * radius`` with the stepper's `AbstractStepper.stability_limit` (or its
    ``imaginary_limit`` when ``oscillatory``). Compiled once per model structure and
    ``iterations``; new parameter values or fields do not recompile.

    Parameters
    ----------
    model : PDEModel
        The model.
    params : dict
        All of the model's parameters by name (e.g. ``model.params``; no defaults are
        filled in).
    u : array_like
        The field to linearise at, shape ``(components,) + grid.shape``.
    explicit_only : bool
        Estimate for ``rhs - linear``, the part an IMEX stepper takes explicitly (default
        False: the whole rhs).
    iterations : int
        Power iterations (each two Jacobian-vector products; default 40).
    t : float
        Time at which the rhs is linearised (the model's time unit; default 0).

    Returns
    -------
    radius : float
        The estimated spectral radius, in inverse time units (1 / the model's time unit).
    oscillatory : bool
        True when the dominant eigenvalues are (nearly) imaginary (``lambda^2 < 0``: waves,
        central advection), so that the stepper's imaginary-axis limit applies instead of
        its negative-real-axis one.

    Raises
    ------
    KeyError
        `params` lacks a parameter the model's rhs reads (from the rhs).

    Examples
    --------
    The 1-D diffusion operator ``D u_xx`` has radius just below ``4 D / dx^2``, real:

    >>> import simkit
    >>> from simkit.stencil import spectral_radius
    >>> heat = simkit.models.get("heat_1d")  # D = 0.1, dx = 1/128
    >>> radius, oscillatory = spectral_radius(heat, heat.params, heat.u0)
    >>> bool(0.98 < radius / (4 * 0.1 * 128**2) <= 1), oscillatory
    (True, False)
    """
    # the same argument types as `integrate`'s check (simkit's float dtype, arrays): a call with
    # the model's own Python numbers shares that compiled program instead of adding one
    dtype = _config.float_dtype()
    rho, cosine = _power_iteration(model.rhs, model.linear if explicit_only else None, model.grid, iterations,
                                   model.bcs, jnp.asarray(u, dtype), {k: jnp.asarray(v, dtype) for k, v in params.items()},
                                   jnp.asarray(t, dtype))
    return float(rho), bool(cosine < -0.5)


def _linearised(rhs, linear, grid, bcs, u, params, t):
    """``(jvp, v0)``: the Jacobian of the rhs (less ``linear`` when given) at ``u`` as a
    linear map, and a fixed random unit start vector, for `spectral_radius` and `ritz_values`.
    The Jacobian is linearised once (its residuals outside the loop) and applied once per
    loop iteration: one copy of the rhs's tangent in the program instead of four full jvps
    (compile of the estimate: Cahn-Hilliard 2.3 -> 1.1 s, heat_2d 1.3 -> 0.8 s)."""
    space = Space(grid, bcs)

    def f(v):
        out = rhs(t, v, params, space)
        if linear is not None:
            out = out - linear(t, v, params, space)
        return out

    v0 = jax.random.normal(jax.random.key(0), u.shape, u.dtype)
    return jax.linearize(f, u)[1], v0 / jnp.sqrt(jnp.sum(v0 * v0))


@functools.partial(jax.jit, static_argnames=("rhs", "linear", "grid", "iterations"))
def _power_iteration(rhs, linear, grid, iterations, bcs, u, params, t):
    """`spectral_radius`'s compiled part, cached across calls (numbers do not recompile)."""
    jvp, v0 = _linearised(rhs, linear, grid, bcs, u, params, t)

    def body(_, carry):
        # iterate with J^2, i.e. two single steps (converges for real spectra and for conjugate
        # pairs, waves, alike, where single-step norm ratios alternate). With a and b the last
        # two unit vectors and b = J a / nb, c = J b / nc: J^2 a = nb nc c.
        a, b, nb, _, _ = carry
        w = jvp(b)
        nc = jnp.sqrt(jnp.sum(w * w))
        c = w / jnp.where(nc == 0, 1.0, nc)
        return b, c, nc, nb * nc, jnp.sum(a * c)

    zero = jnp.asarray(0.0, u.dtype)
    start = (v0, v0, jnp.asarray(1.0, u.dtype), zero, zero)
    _, _, _, norm, cosine = jax.lax.fori_loop(0, 2 * iterations, body, start)
    # norm = |J^2 a|; cosine = the angle's cosine between a and J^2 a, the sign of the Rayleigh
    # quotient of J^2: lambda^2 < 0 for an oscillatory spectrum
    return jnp.sqrt(norm), cosine


RITZ_VECTORS = 32  # Krylov vectors of `ritz_values` (fewer for fields whose basis would pass RITZ_BYTES)
RITZ_BYTES = 256 * 2**20
RITZ_MAX_FIELD_BYTES = 2**27  # above (8,192^2 float64 is 4x this): the basis of 8 vectors would pass 1 GiB,
# and `integrate` checks dt with the spectral radius (three vectors) instead


def ritz_values(model: PDEModel, params: Mapping[str, Any], u: Any, *, explicit_only: bool = False,
                t: float = 0.0) -> np.ndarray:
    """Estimates of the rhs Jacobian's outer eigenvalues at ``u``: the Ritz values of
    `RITZ_VECTORS` Arnoldi steps (Jacobian-vector products, no matrix built) from a fixed
    random start, so deterministic. They approach the eigenvalues of largest magnitude and
    those at the extremes of the spectrum in each direction of the complex plane (the ones
    an explicit stepper's stability is decided by), from inside; eigenvalues of small
    magnitude near the imaginary axis are not resolved (forward Euler on advection-diffusion
    is limited by those too: ``dt <= 2 D / c^2``). Fewer vectors for fields whose basis
    would take more than `RITZ_BYTES` (at least 8).

    Parameters
    ----------
    model : PDEModel
        The model.
    params : dict
        All of the model's parameters by name.
    u : array_like
        The field to linearise at, shape ``(components,) + grid.shape``.
    explicit_only : bool
        For ``rhs - linear``, the part an IMEX stepper takes explicitly (default False).
    t : float
        Time at which the rhs is linearised (default 0).

    Returns
    -------
    numpy.ndarray
        Complex Ritz values, in inverse time units, shape ``(m,)``.

    Examples
    --------
    The periodic central advection ``-c u_x`` (``c = 1``, ``dx = 1/64``) has eigenvalues
    ``-i c sin(k dx) / dx``, on the imaginary axis up to 64:

    >>> import numpy as np
    >>> from simkit import stencil as sk
    >>> grid = sk.Grid((64,), 0.0, 1.0)
    >>> adv = sk.PDEModel(rhs=lambda t, u, p, s: -p["c"] * sk.gradient(s.pad(u), s.spacing)[0],
    ...                   params={"c": 1.0}, grid=grid, bcs=sk.Periodic(),
    ...                   u0=np.sin(2 * np.pi * grid.coordinates())[None])
    >>> theta = sk.ritz_values(adv, adv.params, adv.u0)
    >>> bool(np.abs(theta.real).max() < 1e-8 * np.abs(theta).max()), bool(63 < np.abs(theta).max() <= 64.01)
    (True, True)
    """
    dtype = _config.float_dtype()
    u = jnp.asarray(u, dtype)
    m = int(min(RITZ_VECTORS, u.size, max(8, RITZ_BYTES // max(u.size * u.dtype.itemsize, 1) - 1)))
    h, size = _arnoldi(model.rhs, model.linear if explicit_only else None, model.grid, m, model.bcs, u,
                       {k: jnp.asarray(v, dtype) for k, v in params.items()}, jnp.asarray(t, dtype))
    size = int(size)  # the Krylov space's dimension: fewer than m where Arnoldi broke down
    h = np.asarray(h, np.float64)[:size, :size]
    return np.linalg.eigvals(h) if np.all(np.isfinite(h)) else np.full(size, np.nan + 0j)


@functools.partial(jax.jit, static_argnames=("rhs", "linear", "grid", "m"))
def _arnoldi(rhs, linear, grid, m, bcs, u, params, t):
    """`ritz_values`' compiled part: the ``(m + 1, m)`` Hessenberg matrix of ``m`` Arnoldi
    steps (Gram-Schmidt twice per step, whole-basis products) and the Krylov space's
    dimension ``k <= m``, whose leading ``k x k`` block holds the Ritz values.

    Where the start vector's Krylov space has dimension ``k < m`` (a Jacobian ``-I``: ``k =
    1``), step ``k``'s new direction is rounding noise, about ``eps |J v|`` long: normalised
    into a basis vector it made the later columns garbage, and Ritz values of hundreds came
    out of ``-I`` (found by probing). A direction shorter than ``sqrt(eps) |J v|`` ends the
    space (Arnoldi's breakdown: the Ritz values of the block are then eigenvalues); the
    columns after it stay zero."""
    jvp, v0 = _linearised(rhs, linear, grid, bcs, u, params, t)
    basis = jnp.zeros((m + 1,) + u.shape, u.dtype).at[0].set(v0)
    axes = tuple(range(1, u.ndim + 1))
    tiny = jnp.sqrt(jnp.finfo(u.dtype).eps)

    def body(j, carry):
        basis, h, size = carry
        w = jvp(basis[j])
        scale = jnp.sqrt(jnp.sum(w * w))
        known = (jnp.arange(m + 1) <= j).astype(u.dtype)
        coeffs = jnp.zeros((m + 1,), u.dtype)
        for _ in range(2):  # classical Gram-Schmidt, twice
            c = jnp.sum(basis * w[None], axis=axes) * known
            w = w - jnp.tensordot(c, basis, axes=1)
            coeffs = coeffs + c
        norm = jnp.sqrt(jnp.sum(w * w))
        ends = (size == m) & (norm <= tiny * scale)  # the space ends at this step
        live = size == m  # (after the end the basis vectors are 0, and so are the columns)
        norm = jnp.where(ends, 0.0, norm)
        h = h.at[:, j].set(jnp.where(live, coeffs.at[j + 1].set(norm), 0.0))
        size = jnp.where(ends, j + 1, size)
        nxt = jnp.where(live & ~ends, w / jnp.where(norm == 0, 1.0, norm), 0.0)
        return basis.at[j + 1].set(nxt), h, size

    _, h, size = jax.lax.fori_loop(0, m, body, (basis, jnp.zeros((m + 1, m), u.dtype), jnp.int32(m)))
    return h, size


def amplification(stepper: AbstractStepper, dt: float, eigenvalues: np.ndarray) -> np.ndarray:
    """``|R(dt lambda)|`` for each of ``eigenvalues``: the growth per step of the stepper's
    stability polynomial (`AbstractStepper.amplification`) on those modes."""
    return np.abs(np.polynomial.polynomial.polyval(dt * np.asarray(eigenvalues), stepper.amplification))


@dataclasses.dataclass(frozen=True)
class RolloutProgram:
    """The static part of a rollout (its compiled program's identity)."""

    rhs: Any
    linear: Any
    grid: Any
    stepper: AbstractStepper
    n_saves: int
    save_every: int
    diagnostics: tuple[tuple[str, Callable], ...]
    dt_rule: Callable | None = None  # dt(u, params, space) -> step size, else dt is a number
    row_blocks: bool = True  # `simkit.configure(row_blocks=...)` when the program was built (`blocked`)

    def with_grid(self, grid: Any) -> RolloutProgram:
        return dataclasses.replace(self, grid=grid)


LARGE_FIELD = 16_384
"""Values in a field (per device) from which the time loop runs two steps per iteration and
SSPRK3/RK4 compute each stage in a buffer of its own. Below it the compact forms (one step
per iteration, stages in a loop: one copy of the rhs in the program, not up to 12) compile
1.5-3x faster, and their loop-carry copies are passes over a field in cache. Measured at
64^2, compact against two-buffer form: Gray-Scott RK4 74 against 70 us per step, compile
0.25 against 0.80 s; heat RK4 61 against 29 us, compile 0.21 against 0.44 s (the two-buffer
form pays off after about 7,000 steps there). From 128^2 the two-buffer form wins by far:
heat RK4 2.8x at 128^2, 7x at 256^2 (benchmarks/measurements.md)."""


def compact(u: Any) -> bool:
    """Whether a stepper takes its compact form (stages in a loop) for field ``u``: a field
    of fewer than `LARGE_FIELD` values, outside a kernel's steps on a block (`plain_buffers`:
    there the stages are written out, no array constants in the kernel)."""
    return u.size < LARGE_FIELD and not _PLAIN_BUFFERS[0]


def in_own_buffer(f: Callable, x: Any) -> Any:
    """``f(x)`` computed into a buffer of its own (``x`` a field or a pytree holding fields).

    XLA:CPU fuses a computed field into each stencil that reads it, recomputing it at every
    neighbour: two Euler steps fused took 66 ms per step at 2048^2 against 4 apart, and
    unrolled RK4 stages ~4x the time of stages kept apart. A ``lax.cond`` is a boundary fusion
    does not cross (`lax.optimization_barrier` is not: it is gone before fusion). Its
    predicate is true and must not be a constant XLA could fold, even where the caller's
    numbers are constants and a short loop is unrolled: it is read from the data, ``p != p or
    p == p`` for one value ``p`` of ``x``. The other branch, never taken, is NaN."""
    leaves = [a for a in jax.tree_util.tree_leaves(x) if jnp.issubdtype(a.dtype, jnp.inexact) and a.size]
    if not leaves or _PLAIN_BUFFERS[0]:
        return f(x)
    probe = jax.lax.stop_gradient(leaves[0].reshape(-1)[0])
    if jnp.iscomplexobj(probe):
        probe = probe.real

    def nan_like(x):
        return jax.tree_util.tree_map(lambda a: jnp.full_like(a, jnp.nan) if jnp.issubdtype(a.dtype, jnp.inexact)
                                      else a, x)

    return jax.lax.cond(_always_true(probe), f, nan_like, x)


_PLAIN_BUFFERS = [False]


@contextlib.contextmanager
def plain_buffers() -> Iterator[None]:
    """Inside: `in_own_buffer(f, x)` is ``f(x)`` and the steppers write their stages out
    (a kernel's steps on a block in on-chip memory, `simkit.stencil.blocked`: no buffers to
    keep apart, no loops over stage constants)."""
    before = _PLAIN_BUFFERS[0]
    _PLAIN_BUFFERS[0] = True
    try:
        yield
    finally:
        _PLAIN_BUFFERS[0] = before


@jax.custom_batching.custom_vmap
def _always_true(p: Any) -> Any:
    return (p != p) | (p == p)


@_always_true.def_vmap
def _always_true_batched(axis_size: int, in_batched: list, p: Any) -> tuple[Any, bool]:
    # one predicate for the whole batch: under jax.vmap a batched predicate turns the cond
    # into a select, which XLA fuses with the stencil that reads it (2 RK4 runs at 512^2,
    # vmapped: 3.9 s; 0.11-0.16 s this way, as before the two-buffer loop)
    return jnp.all((p != p) | (p == p)), False


def repeat_in_two_buffers(one: Callable, n: int, state: Any) -> Any:
    """``one`` applied ``n`` times to ``state``, two applications per loop iteration, the
    first in its own buffer (`in_own_buffer`).

    A stencil step cannot write its field in place (it reads neighbours), so a loop of one
    step per iteration writes a new buffer and then copies it into the loop carry: two passes
    over memory per step. Two steps per iteration alternate between two buffers: the first
    writes a temporary, the second writes the carry's own buffer (its input, the carry, is no
    longer read). 2048^2 heat, Euler: 6.98 -> 4.65 ms per step (benchmarks/measurements.md). A
    field of fewer than `LARGE_FIELD` values: one application per iteration. ``state`` is
    ``(field, ...)``, the field an array or `Components`."""
    if state[0].size < LARGE_FIELD:
        return jax.lax.fori_loop(0, n, lambda _, s: one(s), state)
    pairs, odd = divmod(n, 2)
    if n == 2:  # a one-trip loop is inlined by XLA: see below
        return in_own_buffer(one, in_own_buffer(one, state))
    state = jax.lax.fori_loop(0, pairs, lambda _, s: one(in_own_buffer(one, s)), state)
    # a last step outside the loop into a buffer of its own too: the result is read more than
    # once (saved, checked, carried), and XLA would otherwise compute the step once per
    # reader, each time from every neighbour view of its input materialised apart (2 Euler
    # steps at 2048^2 took 120 ms, 53 ms this way)
    return in_own_buffer(one, state) if odd else state


def program_step(program: RolloutProgram, space: Space) -> Callable:
    """One step ``(t, u, params, dt) -> u`` of the program's explicit stepper and right-hand
    side on ``space`` (no linear part: the steppers that take one are not stepped this way)."""
    def step(t, u, params, dt):
        return program.stepper.step(lambda t, u: program.rhs(t, u, params, space), None, t, u, dt, space)
    return step


def components_apart(program: RolloutProgram, u0: Any) -> bool:
    """Whether the time loop carries the field's components apart (`Components`, the rhs
    evaluated per component by `split_rhs`): a large field (`LARGE_FIELD`) of 2 to
    `MAX_COMPONENTS` components, stepped by a built-in stepper with a fixed ``dt``. Gray-Scott at 1024^2, one
    step: Euler 5.6 -> 3.1 ms, RK4 31 -> 12 (benchmarks/measurements.md)."""
    return (u0.ndim > 1 and 1 < u0.shape[0] <= MAX_COMPONENTS and u0.size >= LARGE_FIELD and program.dt_rule is None
            and type(program.stepper) in (ForwardEuler, SSPRK3, RK4, IMEXEuler))


def rollout_body(program: RolloutProgram, space: Space, u0, params, t0, dt, n0=0):
    """The rollout as a pure function of its inputs: ``(us, ts, diagnostics, bad)``.

    A large periodic 2-D float32 field on a TPU steps in row blocks, several steps per pass
    over memory (`simkit.stencil.blocked`; chosen when lowering, XLA's loop elsewhere)."""
    plan = blocked.plan(program, space, u0, params)
    if plan is None:
        return _rollout_body(program, space, u0, params, t0, dt, n0, None)
    if blocked.MODE == "always":
        return _rollout_body(program, space, u0, params, t0, dt, n0, plan)
    return jax.lax.platform_dependent(tpu=lambda: _rollout_body(program, space, u0, params, t0, dt, n0, plan),
                                      default=lambda: _rollout_body(program, space, u0, params, t0, dt, n0, None))


def _rollout_body(program: RolloutProgram, space: Space, u0, params, t0, dt, n0, plan):
    """`rollout_body`, its steps in row blocks by ``plan`` (`blocked.Plan`) or in XLA's loop.

    Runs as is on one device (under ``jit``) and per shard on a device mesh, where `space`
    exchanges halos and reduces globally. ``bad`` is the first save block after which the
    field was non-finite anywhere (``-1``: never). Between saves the components may be
    carried apart (`components_apart`, decided on the field ``u0`` of this device).

    With a fixed ``dt`` the time of step ``n`` is ``t0 + (n0 + n) dt``, rounded once (``n0``:
    the steps taken before, by earlier pieces of one run: their times are the whole run's);
    accumulated step by step it drifted (400 ulp after 20,000 steps; ``100.29999999999858``
    for 1,000 steps of 0.1). A rule's steps (``program.dt_rule``) add up (``n0`` unused)."""
    apart = plan is None and components_apart(program, u0)

    def rhs(t, u):
        return program.rhs(t, u, params, space)

    stacked = (lambda u: u.stacked()) if apart else (lambda u: u)
    step_rhs = split_rhs(rhs) if apart else rhs

    linear = None if program.linear is None else (lambda t, u: program.linear(t, u, params, space))
    step_linear = split_rhs(linear) if apart and linear is not None else linear

    def diagnostics(u):
        return {name: fn(u, space) for name, fn in program.diagnostics}

    fixed = program.dt_rule is None
    # a method whose steps can fail (an inner solve): its flag is checked at every step
    checked = type(program.stepper).step_with_status is not AbstractStepper.step_with_status

    def clock(c):  # the time of the loop's clock `c`: a step count (fixed dt) or the time itself
        return t0 + c * dt if fixed else c

    def generic(u, c, params, t0, dt):  # the steps of a save block in XLA's loop, as a function of all they read
        step = program_step(program, space)
        return repeat_in_two_buffers(lambda s: (step(t0 + s[1] * dt, s[0], params, dt), s[1] + 1),
                                     program.save_every, (u, c))

    def block(carry, k):
        u, c, bad, us = carry

        def one(state):
            u, c = state
            if fixed and not checked:
                return program.stepper.step(step_rhs, step_linear, clock(c), u, dt, space), c + 1
            h = dt if fixed else program.dt_rule(u, params, space)
            u_new, solved = program.stepper.step_with_status(step_rhs, step_linear, clock(c), u, h, space)
            # a rule's step that is not positive and finite, or a step whose inner solve failed: the
            # field and the time become NaN, reported as a non-finite field at this save block
            # (`finish` says why: a NaN time with a fixed dt is a failed solve)
            ok = solved if fixed else solved & jnp.isfinite(h) & (h > 0)
            return (jax.tree_util.tree_map(lambda a: jnp.where(ok, a, jnp.nan), u_new),
                    jnp.where(ok, c + (1 if fixed else h), jnp.nan))

        if plan is None:
            u, c = repeat_in_two_buffers(one, program.save_every, (u, c))
        else:
            u, c = blocked.advance(plan, program, space.bcs, generic, u, c, params, t0, dt, program.save_every)
        t = clock(c)
        field = stacked(u)
        nonfinite = jnp.sum(space.sum(jnp.where(jnp.isfinite(field), 0.0, 1.0)))  # global count
        bad = jnp.where((bad < 0) & (nonfinite > 0), k, bad)
        return (u, c, bad, jax.lax.dynamic_update_index_in_dim(us, field, k + 1, 0)), (t, diagnostics(field))

    # the saved fields are written in place into one buffer carried through the loop (the
    # scan's stacked outputs and then a concatenate with u0 held the trajectory twice)
    us = jnp.zeros((program.n_saves + 1,) + u0.shape, u0.dtype).at[0].set(u0)
    start = Components.of(u0) if apart else u0
    c0 = jnp.asarray(n0, jnp.result_type(t0)) if fixed else t0
    (_, _, bad, us), (ts, diags) = jax.lax.scan(block, (start, c0, jnp.asarray(-1), us), jnp.arange(program.n_saves))
    ts = jnp.concatenate([jnp.reshape(clock(c0), (1,)), ts])
    diags = jax.tree_util.tree_map(lambda first, rest: jnp.concatenate([first[None], rest]), diagnostics(u0), diags)
    return us, ts, diags, bad


@functools.partial(jax.jit, static_argnames=("program",))
def _rollout(program: RolloutProgram, u0, params, bcs, t0, dt, n0=0):
    return rollout_body(program, Space(program.grid, bcs), u0, params, t0, dt, n0)


def build_program(model: PDEModel, *, dt: float | Callable, steps: int, save_every: int | None,
                  stepper: AbstractStepper | None, diagnostics: Mapping[str, Callable] | None) -> RolloutProgram:
    """The static program of a rollout (checks the structural arguments only)."""
    stepper = RK4() if stepper is None else stepper
    if not isinstance(stepper, AbstractStepper):
        raise InputTypeError(f"stepper must be a simkit.stencil stepper object (RK4(), SSPRK3(), ...), got {stepper!r}")
    steps = whole_number(steps, "steps")  # 2.5 is refused, never truncated
    save_every = steps if save_every is None else whole_number(save_every, "save_every")
    if steps < 1 or save_every < 1 or steps % save_every:
        raise InputError(f"steps ({steps}) must be a positive multiple of save_every ({save_every})")
    if diagnostics is not None and (not isinstance(diagnostics, Mapping) or not all(
            isinstance(k, str) and callable(f) for k, f in diagnostics.items())):
        raise InputTypeError("diagnostics must be a dict of name -> function(u, space), got "
                             f"{diagnostics!r:.80}")
    for name, fn in (diagnostics or {}).items():
        check_diagnostic(model, name, fn)
    return RolloutProgram(rhs=model.rhs, linear=model.linear, grid=model.grid, stepper=stepper,
                          n_saves=steps // save_every, save_every=save_every,
                          diagnostics=tuple((diagnostics or {}).items()), dt_rule=dt if callable(dt) else None,
                          row_blocks=_config.ROW_BLOCKS)


def check_diagnostic(model: PDEModel, name: str, fn: Callable) -> None:
    """Refuse a diagnostic that does not return one array of numbers (traced on the
    model's field shape, nothing computed): a string failed inside the rollout's scan with
    JAX's "not a valid JAX type", naming neither the diagnostic nor the model."""
    field = jax.ShapeDtypeStruct(np.shape(model.u0), _config.float_dtype())
    need = "it must return a number or an array of numbers, e.g. space.integral(u[0])"
    try:
        out = jax.eval_shape(lambda u: fn(u, model.space), field)
    except TypeError as err:
        if "not a valid JAX type" not in str(err):
            raise
        raise InputTypeError(f"diagnostic {name!r} of {model.name!r} returned a value JAX cannot hold; {need}") from None
    leaves = jax.tree_util.tree_leaves(out)
    if len(leaves) != 1 or not isinstance(out, jax.ShapeDtypeStruct) or out.dtype.kind not in "biufc":
        found = type(out).__name__ if not isinstance(out, jax.ShapeDtypeStruct) else f"dtype {out.dtype}"
        raise InputTypeError(f"diagnostic {name!r} of {model.name!r} returned {found}; {need}")


@_config.simkit_call()
def rollout(model: PDEModel, params: Mapping[str, Any] | None = None, u0: Any = None, *, dt: Any,
            steps: int, save_every: int | None = None, stepper: AbstractStepper | None = None, t0: Any = 0.0,
            diagnostics: Mapping[str, Callable] | None = None) -> tuple[Any, Any, dict]:
    """`integrate` as a pure JAX function, for use under ``jax.grad``/``jax.jit``/``jax.vmap``.

    ``params``, ``u0``, ``dt`` and ``t0`` may be traced (a new value does not recompile);
    ``steps``, ``save_every``, ``stepper`` and ``diagnostics`` are structure. No stability
    check and no non-finite check (use `integrate` for those): a blow-up shows as ``nan``
    in ``us``.

    Parameters
    ----------
    model : PDEModel
        The model.
    params : dict, optional
        Parameter overrides by name (the rest keep the model's defaults).
    u0 : array_like, optional
        Initial field, shape ``(components,) + grid.shape``; default ``model.u0``.
    dt : float or callable
        Step size (the model's time unit), or a rule ``dt(u, params, space) -> step``
        evaluated before every step, as in `integrate`.
    steps : int
        Number of steps, a positive multiple of `save_every`.
    save_every : int, optional
        Save the field every this many steps (default: only the start and the end).
    stepper : AbstractStepper, optional
        `RK4()` (default), `SSPRK3()`, `ForwardEuler()` or `IMEXEuler()`.
    t0 : float
        Start time (time unit; default 0).
    diagnostics : dict, optional
        ``{name: fn(u, space) -> scalar}``, evaluated at every save point.

    Returns
    -------
    us : jax.Array
        The saved fields, shape ``(steps // save_every + 1, components) + grid.shape``,
        the first ``u0``.
    ts : jax.Array
        The save times, shape ``(steps // save_every + 1,)``.
    diagnostics : dict of jax.Array
        Each diagnostic at the save points, shape ``(steps // save_every + 1,)``.

    Raises
    ------
    InputTypeError
        `stepper` is not a stepper, or `steps`/`save_every` is not a number.
    InputError
        `steps` is not a positive multiple of `save_every`.
    ShapeError
        `u0` does not have the model's field shape.
    ParameterError
        An unknown parameter name in `params`.

    Examples
    --------
    The derivative of the final total heat with respect to the diffusivity:

    >>> import jax, simkit
    >>> from simkit.stencil import rollout
    >>> heat = simkit.models.get("heat_1d")
    >>> us, ts, _ = rollout(heat, dt=1e-4, steps=10, save_every=5)
    >>> us.shape, ts.shape
    ((3, 1, 128), (3,))
    >>> def total(d):
    ...     return rollout(heat, {"diffusivity": d}, dt=1e-4, steps=10)[0][-1].sum()
    >>> bool(jax.grad(total)(0.1) < 0)  # faster diffusion, more heat out through u = 0 walls
    True
    """
    program = build_program(model, dt=dt, steps=steps, save_every=save_every, stepper=stepper,
                            diagnostics=diagnostics)
    us, ts, diags, _ = _rollout(program, *rollout_arguments(model, params, u0, dt, t0))
    return us, ts, diags


def check_param_shapes(model: PDEModel, params: Mapping[str, Any] | None) -> None:
    """Refuse a parameter array of another shape than its default's (the model's rhs is
    written for that shape: a velocity of 2 components for a 1-D advection failed inside the
    rhs with JAX's "Incompatible types for broadcasting"). A scalar default may take an array
    (e.g. a diffusivity that varies over the grid); more dimensions than the default are
    refused by `merge_params` (a batch)."""
    for name, value in (params or {}).items():
        default = np.shape(model.params[name])
        if default and np.ndim(value) == len(default) and np.shape(value) != default:
            raise ShapeError(f"model {model.name!r}: parameter {name!r} has shape {np.shape(value)}, its default "
                             f"{default}; the model's rhs is written for the default's shape")


def rollout_arguments(model: PDEModel, params: Mapping[str, Any] | None, u0: Any, dt: Any, t0: Any) -> tuple:
    """The traced arguments of a rollout, ``(u0, params, bcs, t0, dt)``, without host checks
    (they may be tracers); ``dt`` is 0 for a rule (the program carries it)."""
    dtype = _config.float_dtype()
    merged = merge_params(model.params, params, owner=f"model {model.name!r}")
    check_param_shapes(model, params)
    u = jnp.asarray(model.u0 if u0 is None else u0, dtype)
    if u.shape != np.shape(model.u0):
        raise ShapeError(f"model {model.name!r}: u0 must have shape {np.shape(model.u0)}, got {u.shape}")
    dt_arg = jnp.asarray(0.0, dtype) if callable(dt) else jnp.asarray(dt, dtype)
    return u, merged, model.bcs, jnp.asarray(t0, dtype), dt_arg


def prepare(model: PDEModel, *, dt: float | Callable, steps: int, save_every: int | None,
            stepper: AbstractStepper | None, params: Mapping[str, Any] | None, u0: Any, t0: float,
            diagnostics: Mapping[str, Callable] | None, check_stability: bool) -> tuple:
    """Check the arguments of a rollout (before any compilation of it) and build its static
    program: ``(program, u_init, params, dt_argument)``."""
    if not isinstance(model, PDEModel):
        raise InputTypeError(f"stencil.integrate() expects a PDEModel, got {type(model).__name__}")
    check_number("t0", t0)
    check_flag("check_stability", check_stability)
    program = build_program(model, dt=dt, steps=steps, save_every=save_every, stepper=stepper,
                            diagnostics=diagnostics)
    stepper = program.stepper
    if stepper.needs_linear and model.linear is None:
        raise InputError(f"{type(stepper).__name__} needs the model's linear part; {model.name!r} has "
                         "none (set PDEModel.linear to the stiff linear term)")
    adaptive = callable(dt)
    if not adaptive:
        check_number("dt", dt) if isinstance(dt, (str, bytes)) or dt is None else None  # a number (or a rule)
    if not adaptive and not (np.isfinite(dt) and dt > 0):
        raise InputError(f"dt must be positive and finite (or a rule dt(u, params, space)), got {dt}")
    merged = merge_params(model.params, params, owner=f"model {model.name!r}")
    check_param_shapes(model, params)
    dtype = _config.float_dtype()
    u_init = np.asarray(model.u0 if u0 is None else u0, dtype)
    if u_init.shape != np.shape(model.u0):
        raise InputError(f"u0: expected shape {np.shape(model.u0)}, got {u_init.shape}")
    if not np.all(np.isfinite(u_init)):
        raise InputError(f"u0 of {model.name!r} is not finite")
    params_j = {k: jnp.asarray(v, dtype) for k, v in merged.items()}
    if adaptive:
        rule_dt = float(dt(jnp.asarray(u_init), params_j, model.space))
        if not (np.isfinite(rule_dt) and rule_dt > 0):
            raise InputError(f"the dt rule gave {rule_dt:g} at u0: it must give a positive, finite step")
    if check_stability and stepper.amplification is not None and u_init.nbytes <= RITZ_MAX_FIELD_BYTES:
        check_amplification(model, stepper, params_j, u_init, rule_dt if adaptive else float(dt), adaptive, t0)
    elif check_stability:
        first_dt = rule_dt if adaptive else float(dt)
        rho, oscillatory = spectral_radius(model, params_j, u_init, explicit_only=stepper.needs_linear, t=t0)
        limit = stepper.imaginary_limit if oscillatory else stepper.stability_limit
        bound = limit / rho if rho > 0 else np.inf
        if first_dt > bound:
            raise _unstable(model, stepper, first_dt, adaptive, bound,
                            f"estimated spectral radius {rho:.4g} of the {_part(stepper)}rhs at u0, "
                            f"{'imaginary' if oscillatory else 'real'}-axis stability limit {limit:.4g}")
    dt_arg = jnp.asarray(0.0 if adaptive else dt, dtype)
    return program, u_init, params_j, dt_arg


GROWTH_TOLERANCE = 1e-9  # |R(dt lambda)| - 1 allowed by the check (rounding)
STABILITY_MARGIN = 1.03  # the Ritz values approach the eigenvalues from inside (up to 2 % low measured)


def check_amplification(model: PDEModel, stepper: AbstractStepper, params: Mapping[str, Any], u: Any, dt: float,
                        adaptive: bool, t0: Any) -> None:
    """`integrate`'s stability check for a stepper with a stability polynomial: refuse a
    ``dt`` for which ``|R(dt lambda)| > 1`` at the rhs Jacobian's estimated outer
    eigenvalues (`ritz_values`, scaled by `STABILITY_MARGIN`). The stable bound it reports
    is the largest step with no growth there (bisection)."""
    theta = ritz_values(model, params, u, explicit_only=stepper.needs_linear, t=t0) * STABILITY_MARGIN
    if not np.all(np.isfinite(theta)):
        raise InputError(f"the rhs of {model.name!r} has a non-finite Jacobian at u0: its stability cannot be "
                         "checked (check_stability=False skips this check)")
    # modes that grow (a reaction's instability: real part above 1e-3 of the magnitude) grow
    # in the model too and are left out; a Ritz value a little right of the imaginary axis
    # (a wave operator, not normal in the Euclidean inner product, gives such values) is
    # taken on it
    theta = theta[theta.real <= 1e-3 * np.abs(theta)]
    theta = np.minimum(theta.real, 0.0) + 1j * theta.imag
    growth = amplification(stepper, dt, theta)
    if growth.max(initial=0.0) <= 1.0 + GROWTH_TOLERANCE:
        return
    lo, hi = 0.0, dt
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if amplification(stepper, mid, theta).max() <= 1.0 + GROWTH_TOLERANCE else (lo, mid)
    big, growth = theta[np.argmax(growth)], growth.max()
    raise _unstable(model, stepper, dt, adaptive, lo,
                    f"its amplification per step reaches {growth:.6g} > 1 at {big / STABILITY_MARGIN:.4g}, a Ritz "
                    f"value of the {_part(stepper)}rhs at u0; the bound keeps a "
                    f"{100 * (STABILITY_MARGIN - 1):.0f} % margin")


def _part(stepper: AbstractStepper) -> str:
    return "explicit part of the " if stepper.needs_linear else ""


def _unstable(model: PDEModel, stepper: AbstractStepper, dt: float, adaptive: bool, bound: float,
              why: str) -> InputError:
    """The stability check's error: ``dt`` above ``bound``, ``why``, and what to do."""
    return InputError(
        f"dt = {dt:g}{' (the rule at u0)' if adaptive else ''} is above the stable bound {bound:.4g} for "
        f"{type(stepper).__name__} on {model.name!r} ({why}); reduce dt"
        + ("" if stepper.needs_linear or model.linear is None else
           ", or use IMEXEuler() to take the linear part implicitly")
        + " (check_stability=False skips this check)")


def failure_message(model: PDEModel, program: RolloutProgram, times: tuple[float, float], bad: int, dt: Any) -> str:
    """Why a rollout's field became NaN in save block ``bad`` (``times``: the save times
    before and after it): a dt rule's step that was not positive and finite, a stepper's
    inner solve that did not converge (both make the time NaN), or a field that blew up."""
    before, after = float(times[0]), float(times[1])
    name = type(program.stepper).__name__
    step = "an adaptive dt" if callable(dt) else f"dt = {dt:g}"
    if not np.isfinite(after):
        solve = f"the inner solve of {program.stepper!r} did not converge"
        advice = "raise its max_steps, loosen its rtol/atol, or lower dt"
        checked = type(program.stepper).step_with_status is not AbstractStepper.step_with_status
        if not callable(dt):
            return (f"{model.name!r}: {solve} after t = {before:g} (save block {bad}; {advice}); the fields from "
                    "there on are NaN")
        return (f"{model.name!r}: the dt rule gave a step that is not positive and finite after t = {before:g} "
                f"(save block {bad})" + (f", or {solve} ({advice})" if checked else "")
                + "; the fields from there on are NaN")
    return (f"{model.name!r}: the field became non-finite between t = {before:g} and t = {after:g} "
            f"({name}, {step}); the step may be unstable for the evolved field, or the model blew up")


def finish(model: PDEModel, program: RolloutProgram, us: Any, ts: Any, diags: dict, bad: int,
           dt: Any, throw: bool, params: Mapping[str, Any] | None = None) -> FieldSolution:
    """The `FieldSolution` of a rollout; raises `SolveError` for a non-finite field if ``throw``.
    ``params``: the run's parameter values, recorded in the result's provenance."""
    status = int(Status.SUCCESS) if bad < 0 else int(Status.NONFINITE)
    if bad >= 0 and throw:
        raise SolveError(failure_message(model, program, (ts[bad], ts[bad + 1]), bad, dt)
                         + " (throw=False keeps the result)")
    return FieldSolution(ts=np.asarray(ts), us=np.asarray(us), grid=model.grid,
                         component_names=model.component_names, diagnostics=diags, model_name=model.name,
                         status=status, stepper_name=type(program.stepper).__name__,
                         params=None if params is None else {k: np.asarray(v) for k, v in params.items()},
                         dt=None if callable(dt) else float(dt), save_every=program.save_every,
                         boundary_conditions=repr(model.bcs), model_source=model.source,
                         model_units=model.units)


@_config.simkit_call()
def integrate(
    model: PDEModel,
    *,
    dt: float | Callable,
    steps: int,
    save_every: int | None = None,
    stepper: AbstractStepper | None = None,
    params: Mapping[str, Any] | None = None,
    u0: Any = None,
    t0: float = 0.0,
    diagnostics: Mapping[str, Callable] | None = None,
    check_stability: bool = True,
    throw: bool = True,
) -> FieldSolution:
    """Integrate ``model`` with ``steps`` fixed steps of size ``dt``.

    The whole rollout is one compiled program; numbers (``dt``, ``t0``, ``u0``,
    parameters) are traced, so a new value does not recompile. For a run whose saved
    frames do not fit in memory, or that must resume after a crash, see
    `simkit.stencil.integrate_to_file`.

    Parameters
    ----------
    model : PDEModel
        The model.
    dt : float or callable
        Step size (the model's time unit), or a rule ``dt(u, params, space) -> step``
        evaluated before every step (e.g. a CFL bound
        ``0.4 * dx**2 / space.max(diffusivity(u))``; use ``space.max``/``space.sum`` so it
        is the same on every shard of a device mesh).
    steps : int
        Number of steps, a positive multiple of `save_every`.
    save_every : int, optional
        Save the field every this many steps (default: only the start and the end).
    stepper : AbstractStepper, optional
        `RK4()` (default), `SSPRK3()`, `ForwardEuler()` or `IMEXEuler()` (needs the
        model's ``linear`` part).
    params : dict, optional
        Parameter overrides by name (the rest keep the model's defaults).
    u0 : array_like, optional
        Initial field, shape ``(components,) + grid.shape``; default ``model.u0``.
    t0 : float
        Start time (time unit; default 0).
    diagnostics : dict, optional
        ``{name: fn(u, space) -> scalar}`` saved at every save point (use
        ``space.sum``/``space.integral`` so they stay global on a device mesh).
    check_stability : bool
        Before compiling the rollout, estimate the outer eigenvalues of the Jacobian of the
        (explicit part of the) rhs at ``u0`` (`ritz_values`) and refuse a ``dt`` at which
        the stepper's stability polynomial grows there (`check_amplification`; a stepper
        without one: ``dt`` above its limit over `spectral_radius`) (default True).
    throw : bool
        Raise `SolveError` when the field becomes non-finite (default). With
        ``throw=False`` the result's ``status`` says so and the fields after that point are
        kept as computed.

    Returns
    -------
    FieldSolution
        ``us`` of shape ``(steps // save_every + 1, components) + grid.shape`` (the first
        is ``u0``), the save times ``ts`` ``(steps // save_every + 1,)``, the diagnostics,
        the status and the run's provenance (stepper, ``dt``, parameters, model units).

    Raises
    ------
    InputTypeError
        `model` is not a `PDEModel`, `stepper` not a stepper, or `steps`/`save_every`/`t0`
        not a number; or a traced input (under ``jax.jit``/``grad``/``vmap``: differentiate
        `rollout` instead).
    InputError
        `steps` is not a positive multiple of `save_every`; `dt` not positive and finite;
        `u0` of the wrong shape or not finite; an IMEX stepper for a model without a
        ``linear`` part; or (`check_stability`) a ``dt`` above the stable bound, the
        message giving the bound.
    ParameterError
        An unknown or non-finite parameter in `params`.
    SolveError
        The field became non-finite (``throw=True``): the message gives the time interval
        and what to try.

    Examples
    --------
    >>> import simkit
    >>> heat = simkit.models.get("heat_1d")  # 128 cells on [0, 1]
    >>> sol = simkit.stencil.integrate(heat, dt=1e-4, steps=10, save_every=5)
    >>> sol.us.shape, [round(t, 6) for t in sol.ts.tolist()], sol.stepper_name
    ((3, 1, 128), [0.0, 0.0005, 0.001], 'RK4')
    """
    check_flag("throw", throw)
    refuse_traced("simkit.stencil.integrate", "to differentiate or transform a run, use simkit.stencil.rollout",
                  params, u0, t0, dt if not callable(dt) else None)
    program, u_init, params_j, dt_arg = prepare(model, dt=dt, steps=steps, save_every=save_every,
                                                stepper=stepper, params=params, u0=u0, t0=t0,
                                                diagnostics=diagnostics, check_stability=check_stability)
    warn_if_emulated(platform_of(None), u_init.dtype, "simkit.stencil.integrate")
    us, ts, diags, bad = _rollout(program, to_device(u_init), params_j, model.bcs,
                                  jnp.asarray(t0, u_init.dtype), dt_arg)
    return finish(model, program, us, ts, {k: np.asarray(v) for k, v in diags.items()}, int(bad), dt, throw,
                  params=params_j)
