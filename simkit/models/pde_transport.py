"""PDE models of transport: diffusion (1-3D), advection, advection-diffusion, viscous Burgers,
the wave equation. Each is a `PDEModel` on a default grid; exact solutions where they exist
are given as functions next to the model (used by the validation cases)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..stencil import operators as op
from ..stencil.boundary import Dirichlet, Neumann, Periodic
from ..stencil.grid import Grid
from ..stencil.pde import PDEModel


def diffusion_rhs(t, u, p, space):
    """``du/dt = diffusivity * laplacian(u)`` for every component (2nd order)."""
    return p["diffusivity"] * op.laplacian(space.pad(u), space.spacing)


def diffusion_rhs4(t, u, p, space):
    """As `diffusion_rhs` with the 4th-order Laplacian (two ghost layers)."""
    return p["diffusivity"] * op.laplacian(space.pad(u, 2), space.spacing, order=4)


_HEAT_SOURCE = ("J. Crank, The Mathematics of Diffusion, 2nd ed. (1975), ch. 2-4 (separable "
                "and Gaussian solutions); discretisation: R. J. LeVeque, Finite Difference Methods "
                "for ODEs and PDEs (2007), ch. 9.")


def _nondimensional(*names: str) -> str:
    """``units`` of a nondimensional model: ``"1"`` for time and every name given."""
    return ", ".join(f"{name} in 1" for name in ("t", *names)) + "; nondimensional"


def heat_1d_exact(x, t, diffusivity=0.1):
    """Dirichlet 0 on [0, 1]: two sine modes decaying at ``diffusivity (k pi)^2``."""
    return (np.sin(np.pi * x) * np.exp(-diffusivity * np.pi**2 * t)
            + 0.5 * np.sin(3 * np.pi * x) * np.exp(-diffusivity * 9 * np.pi**2 * t))


def heat_1d() -> PDEModel:
    grid = Grid((128,), 0.0, 1.0)
    return PDEModel(rhs=diffusion_rhs, linear=diffusion_rhs, grid=grid, bcs=Dirichlet(0.0),
                    params={"diffusivity": 0.1}, u0=heat_1d_exact(grid.coordinates(), 0.0)[None],
                    name="heat_1d", t_span=(0.0, 0.5), stiff=True, source=_HEAT_SOURCE,
                    units=_nondimensional("x", "u", "diffusivity"),
                    description="Heat equation on [0, 1], u = 0 at both ends, two sine modes (exact).")


def periodic_gaussian(mesh, centre, width2, lengths, images: int = 3):
    """Sum of images of ``exp(-|x - c|^2 / width2)`` on a periodic box (the heat kernel of
    ``width2 = w0^2 + 4 D t`` in d dimensions has amplitude ``(w0^2 / width2)^(d/2)``)."""
    total = np.zeros(mesh[0].shape)
    shifts = np.arange(-images, images + 1)
    for offsets in np.array(np.meshgrid(*([shifts] * len(mesh)), indexing="ij")).reshape(len(mesh), -1).T:
        r2 = sum((m - c - k * L) ** 2 for m, c, k, L in zip(mesh, centre, offsets, lengths))
        total += np.exp(-r2 / width2)
    return total


def heat_2d_exact(mesh, t, diffusivity=0.01, w0=0.1):
    width2 = w0**2 + 4 * diffusivity * t
    return (w0**2 / width2) * periodic_gaussian(mesh, (0.5, 0.5), width2, (1.0, 1.0))


def heat_2d() -> PDEModel:
    grid = Grid((64, 64), 0.0, 1.0)
    return PDEModel(rhs=diffusion_rhs, linear=diffusion_rhs, grid=grid, bcs=Periodic(),
                    params={"diffusivity": 0.01}, u0=heat_2d_exact(grid.meshgrid(), 0.0)[None],
                    name="heat_2d", t_span=(0.0, 1.0), stiff=True, source=_HEAT_SOURCE,
                    units=_nondimensional("x", "y", "u", "diffusivity"),
                    description="Heat equation on the periodic unit square, a Gaussian (exact by images).")


def heat_3d() -> PDEModel:
    grid = Grid((24, 24, 24), 0.0, 1.0)
    x, y, z = grid.meshgrid()
    u0 = np.exp(-((x - 0.3) ** 2 + (y - 0.5) ** 2 + (z - 0.6) ** 2) / 0.02)
    return PDEModel(rhs=diffusion_rhs, linear=diffusion_rhs, grid=grid, bcs=Neumann(0.0),
                    params={"diffusivity": 0.01}, u0=u0[None], name="heat_3d", t_span=(0.0, 2.0),
                    stiff=True, source=_HEAT_SOURCE, units=_nondimensional("x", "y", "z", "u", "diffusivity"),
                    description="Heat equation in the unit cube with no-flux walls (mass conserved).")


def _per_axis(value, ndim: int) -> list:
    """A velocity's component on each axis: an array of one per axis, or one number for all."""
    value = jnp.broadcast_to(jnp.asarray(value), (ndim,))
    return [value[i] for i in range(ndim)]


def advection_rhs(t, u, p, space):
    """``du/dt = -velocity . grad u``, third-order upwind; ``velocity`` one number per axis
    (a number: the same on every axis; it failed with an IndexError, found by probing)."""
    velocity = _per_axis(p["velocity"], space.ndim)
    return -op.advection(space.pad(u, 2), velocity, space.spacing, order=3)


def advection_exact(x, t, velocity=1.0):
    s = np.mod(x - velocity * t, 1.0)
    return np.exp(-100 * (s - 0.5) ** 2)


def advection() -> PDEModel:
    grid = Grid((200,), 0.0, 1.0)
    return PDEModel(rhs=advection_rhs, grid=grid, bcs=Periodic(), params={"velocity": np.array([1.0])},
                    u0=advection_exact(grid.coordinates(), 0.0)[None], name="advection", t_span=(0.0, 1.0),
                    units=_nondimensional("x", "u", "velocity"),
                    source="Linear advection u_t + a u_x = 0 (exact: the translated profile); "
                    "upwind-biased 3rd-order differences: B. P. Leonard (1979), Comput. Methods Appl. "
                    "Mech. Eng. 19:59-98.",
                    description="Linear advection of a Gaussian around the periodic unit interval.")


def advection_diffusion_rhs(t, u, p, space):
    padded = space.pad(u, 2)
    velocity = _per_axis(p["velocity"], space.ndim)
    return (p["diffusivity"] * op.laplacian(padded, space.spacing)
            - op.advection(padded, velocity, space.spacing, order=3))


def advection_diffusion_exact(mesh, t, velocity=(1.0, 0.5), diffusivity=0.005, w0=0.1):
    width2 = w0**2 + 4 * diffusivity * t
    centre = tuple(0.5 + v * t for v in velocity)
    return (w0**2 / width2) * periodic_gaussian(mesh, centre, width2, (1.0, 1.0))


def advection_diffusion() -> PDEModel:
    grid = Grid((64, 64), 0.0, 1.0)
    return PDEModel(rhs=advection_diffusion_rhs, linear=diffusion_rhs, grid=grid, bcs=Periodic(),
                    params={"velocity": np.array([1.0, 0.5]), "diffusivity": 0.005},
                    u0=advection_diffusion_exact(grid.meshgrid(), 0.0)[None], name="advection_diffusion",
                    units=_nondimensional("x", "y", "u", "velocity", "diffusivity"),
                    t_span=(0.0, 1.0), source="Advection-diffusion of a Gaussian on a periodic square "
                    "(exact: a translated, spreading Gaussian); " + _HEAT_SOURCE,
                    description="Advection-diffusion on the periodic unit square.")


def burgers_rhs(t, u, p, space):
    """Viscous Burgers in conservation form: ``u_t + (u^2/2)_x = viscosity u_xx``."""
    padded = space.pad(u)
    return (p["viscosity"] * op.laplacian(padded, space.spacing)
            - op.flux_divergence(padded, lambda w: 0.5 * w * w, space.spacing))


def burgers_exact(x, t, viscosity=0.05, terms: int = 200):
    """Cole-Hopf for ``u0 = sin x`` on [0, 2 pi): ``u = -2 nu phi_x / phi`` with
    ``phi = I0(z) + 2 sum_k I_k(z) exp(-nu k^2 t) cos(k x)``, ``z = 1 / (2 nu)``."""
    from scipy import special

    z = 1.0 / (2 * viscosity)
    k = np.arange(1, terms + 1)[:, None]
    a = special.ive(k, z) * np.exp(-viscosity * k**2 * t)  # scaled Bessel: common factor e^z
    phi = special.ive(0, z) + 2 * np.sum(a * np.cos(k * x), axis=0)
    phi_x = -2 * np.sum(a * k * np.sin(k * x), axis=0)
    return -2 * viscosity * phi_x / phi


def burgers() -> PDEModel:
    grid = Grid((256,), 0.0, 2 * np.pi)
    return PDEModel(rhs=burgers_rhs, grid=grid, bcs=Periodic(), params={"viscosity": 0.05},
                    u0=np.sin(grid.coordinates())[None], name="burgers", t_span=(0.0, 2.0),
                    units=_nondimensional("x", "u", "viscosity"),
                    source="J. M. Burgers (1948), Adv. Appl. Mech. 1:171-199; exact solution by the "
                    "Cole-Hopf transform: E. Hopf (1950), Comm. Pure Appl. Math. 3:201-230; J. D. Cole "
                    "(1951), Q. Appl. Math. 9:225-236.",
                    description="Viscous Burgers, u0 = sin x on [0, 2 pi): a front steepens at x = pi.")


def wave_rhs(t, u, p, space):
    """``u_t = v``, ``v_t = c^2 laplacian(u)`` (components u, v)."""
    return jnp.stack([u[1], p["speed"] ** 2 * op.laplacian(space.pad(u[0]), space.spacing)])


def wave_exact(mesh, t, speed=1.0):
    x, y = mesh
    omega = speed * np.pi * np.sqrt(5.0)
    mode = np.sin(np.pi * x) * np.sin(2 * np.pi * y)
    return np.stack([np.cos(omega * t) * mode, -omega * np.sin(omega * t) * mode])


def wave() -> PDEModel:
    grid = Grid((64, 64), 0.0, 1.0)
    return PDEModel(rhs=wave_rhs, grid=grid, bcs=Dirichlet(0.0), params={"speed": 1.0},
                    u0=wave_exact(grid.meshgrid(), 0.0), component_names=("u", "v"), name="wave",
                    units=_nondimensional("x", "y", "u", "v", "speed"),
                    t_span=(0.0, 2.0), source="Wave equation on the unit square with fixed edges; "
                    "the (1, 2) standing mode, frequency c pi sqrt(5) (exact).",
                    description="2-D wave equation, a standing mode between fixed edges.")


MODELS = {"heat_1d": heat_1d, "heat_2d": heat_2d, "heat_3d": heat_3d, "advection": advection,
          "advection_diffusion": advection_diffusion, "burgers": burgers, "wave": wave}
