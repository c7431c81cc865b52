"""The stiff linear part of a PDE, inverted by FFT: a preconditioner for Newton-Krylov.

A method-of-lines system ``du/dt = L u + N(u)`` whose stiffness is the linear operator
``L`` (diffusion, hyperdiffusion) makes the Newton matrix ``I - c J`` of an implicit step as
ill-conditioned as ``I - c L``: ``c |lambda_max(L)|`` is 10^4-10^6 on fine grids, and GMRES
without help needs hundreds of iterations. ``L`` with constant coefficients on a periodic
grid is a circular convolution, so ``(I - c L)^{-1}`` is a pointwise division in Fourier
space: the classical "physics-based" preconditioner of SUNDIALS' and PETSc's users, built
here automatically from the model's ``linear`` (`PDEModel`). What remains, ``I - c J``
against ``I - c L``, is the reaction part: GMRES resolves it in a few iterations.

The symbol of ``L`` is read off ``L`` itself: its response to a unit impulse in each
component (``components`` evaluations of ``linear`` per use), moved to the origin and
transformed; components may be coupled (a ``C x C`` solve per wavenumber). Boundaries that
are not periodic, or coefficients that vary in space, make it an approximation (the impulse
sits mid-grid, so it sees the interior stencil): GMRES still converges to the same
solution, in more iterations. A preconditioner changes how fast the linear solves
converge, never what they converge to.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from ..kernels.linalg import lu_factor, lu_solve
from ..kernels.platforms import float32_on_tpu
from .grid import Grid


@dataclasses.dataclass(frozen=True)
class SpectralPreconditioner:
    """``(t, y, params, c) -> (v -> (I - c L)^{-1} v)`` for the linear part ``L`` of a PDE.

    Parameters
    ----------
    linear : callable
        ``linear(t, u, params, space) -> L u`` (a `PDEModel`'s ``linear``; affine is fine:
        ``L 0`` is subtracted).
    grid : Grid
        The PDE's grid.
    bcs : object
        The PDE's boundary conditions (static form, as `PDEModel.to_ode` keeps them).
    components : int
        Number of field components.

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> from simkit.stencil import Grid, Periodic, SpectralPreconditioner, laplacian
    >>> grid = Grid(32)
    >>> lap = lambda t, u, p, space: p["D"] * laplacian(space.pad(u), space.spacing)
    >>> pre = SpectralPreconditioner(lap, grid, Periodic(), 1)
    >>> v = jnp.asarray(np.random.default_rng(0).standard_normal(32))
    >>> apply = pre(0.0, v, {"D": 0.1}, 0.5)
    >>> from simkit.stencil.pde import Space
    >>> back = apply(v) - 0.5 * lap(0.0, apply(v)[None], {"D": 0.1}, Space(grid, Periodic()))[0]
    >>> float(jnp.max(jnp.abs(back - v))) < 1e-12  # (I - c L) applied to the result gives v back
    True
    """

    linear: Callable[..., Any]
    grid: Grid
    bcs: Any
    components: int

    @property
    def __name__(self) -> str:  # how a solver's repr names it
        return "spectral"

    def __call__(self, t: Any, y: Any, params: dict, c: Any) -> Callable[[Any], Any]:
        """The inverse of ``I - c L`` at time ``t``, for the solver's Newton iteration.

        Parameters
        ----------
        t : float
            Time (passed to ``linear``).
        y : array, shape (components * grid.size,)
            The state (only its dtype is used: ``L`` is linear).
        params : dict
            The model's parameters (traced).
        c : float
            The implicit method's coefficient (``h / alpha`` for BDF).

        Returns
        -------
        callable
            ``v -> (I - c L)^{-1} v`` on flattened fields, by one real FFT of ``v``, a
            ``C x C`` solve per wavenumber and the inverse FFT.
        """
        from .pde import Space  # pde imports this module

        shape, ncomp = self.grid.shape, self.components
        axes = tuple(range(1, 1 + len(shape)))
        space = Space(self.grid, self.bcs)
        zero = jnp.zeros((ncomp,) + shape, y.dtype)
        base = self.linear(t, zero, params, space)
        mid = tuple(s // 2 for s in shape)
        columns = []
        for j in range(ncomp):  # the response to a unit impulse in component j, at the origin
            response = self.linear(t, zero.at[(j,) + mid].set(1.0), params, space) - base
            columns.append(jnp.roll(response, tuple(-m for m in mid), axis=axes))
        kernel = jnp.stack(columns, axis=1)  # (C, C) + grid.shape, real
        symbol_re, symbol_im = _symbol_parts(kernel, tuple(a + 1 for a in axes))  # (C, C) + k, real

        def solve_spectral(re: Any, im: Any, c: Any, v: Any) -> Any:
            """``(I - c L)^{-1} v`` from the symbol's parts, in the dtype of the arguments."""
            a = jnp.eye(ncomp, dtype=re.dtype).reshape((ncomp, ncomp) + (1,) * len(shape)) - c * (re + 1j * im)
            vhat = jnp.fft.rfftn(v.reshape((ncomp,) + shape), axes=axes)
            if ncomp == 1:
                uhat = vhat / a[0]
            elif ncomp == 2:  # Cramer's rule, per wavenumber
                det = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
                uhat = jnp.stack([a[1, 1] * vhat[0] - a[0, 1] * vhat[1], a[0, 0] * vhat[1] - a[1, 0] * vhat[0]]) / det[None]
            else:  # straight-line elimination per wavenumber, vectorised (no batched LAPACK
                # call, which can hang a multi-device program: `simkit.kernels.linalg`)
                mat = jnp.moveaxis(a, (0, 1), (-2, -1)).reshape((-1, ncomp, ncomp))
                rhs = jnp.moveaxis(vhat, 0, -1).reshape((-1, ncomp))
                uhat = jax.vmap(lambda m_, r_: lu_solve(lu_factor(m_), r_))(mat, rhs)
                uhat = jnp.moveaxis(uhat.reshape(vhat.shape[1:] + (ncomp,)), -1, 0)
            return jnp.fft.irfftn(uhat, s=shape, axes=axes).reshape(-1)

        solve_here = float32_on_tpu(solve_spectral)

        def apply(v: Any) -> Any:
            return solve_here(symbol_re, symbol_im, jnp.asarray(c, v.dtype), v).astype(v.dtype)

        return apply


# XLA's TPU backend has no float64 FFT and no complex128 (float64 is emulated there): in a
# program compiled for a TPU, a float64 preconditioner transforms and solves in float32 (its
# complex values complex64), and only real float64 arrays cross between its parts. A
# preconditioner only has to be close to the inverse (the Krylov iteration converges to its own
# tolerance either way), and float32's 1e-7 is far closer than that needs. Chosen when lowering
# (`simkit.kernels.platforms.float32_on_tpu`): a CPU or GPU program computes in float64 and
# complex128.


def _symbol_parts(kernel: Any, axes: tuple) -> tuple:
    """The real and imaginary parts of ``rfftn(kernel)`` over ``axes``, as real arrays of the
    kernel's dtype."""
    def parts(k: Any) -> tuple:
        symbol = jnp.fft.rfftn(k, axes=axes)
        return symbol.real, symbol.imag

    return float32_on_tpu(parts)(kernel)
