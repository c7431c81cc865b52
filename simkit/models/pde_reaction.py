"""PDE models of pattern formation: Gray-Scott, FitzHugh-Nagumo (2-D), Allen-Cahn,
Kuramoto-Sivashinsky (1-D), Cahn-Hilliard; the 2-D Brusselator, a large stiff system by the
method of lines. Each sets ``linear`` to its stiff linear part
(diffusion, or the fourth-order term) so the IMEX stepper can take it implicitly."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..stencil import operators as op
from ..stencil.boundary import Neumann, Periodic
from ..stencil.grid import Grid
from ..stencil.pde import PDEModel


def _nondimensional(*names: str) -> str:
    """``units`` of a nondimensional model: ``"1"`` for time and every name given."""
    return ", ".join(f"{name} in 1" for name in ("t", *names)) + "; nondimensional"


def _seeded(shape, seed, scale):
    return scale * np.random.default_rng(seed).standard_normal(shape)


def gray_scott_diffusion(t, u, p, space):
    lap = op.laplacian(space.pad(u), space.spacing)
    return jnp.stack([p["diffusivity_u"] * lap[0], p["diffusivity_v"] * lap[1]])


def gray_scott_rhs(t, u, p, space):
    a, b = u[0], u[1]
    reaction = a * b * b
    return gray_scott_diffusion(t, u, p, space) + jnp.stack(
        [-reaction + p["feed"] * (1 - a), reaction - (p["feed"] + p["kill"]) * b])


def gray_scott() -> PDEModel:
    grid = Grid((128, 128), 0.0, 1.25)
    x, y = grid.meshgrid()
    centre = (np.abs(x - 0.625) < 0.08) & (np.abs(y - 0.625) < 0.08)
    u = np.where(centre, 0.5, 1.0) + _seeded(grid.shape, 1, 0.01)
    v = np.where(centre, 0.25, 0.0) + np.abs(_seeded(grid.shape, 2, 0.01))
    return PDEModel(rhs=gray_scott_rhs, linear=gray_scott_diffusion, grid=grid, bcs=Periodic(),
                    params={"diffusivity_u": 2e-5, "diffusivity_v": 1e-5, "feed": 0.035, "kill": 0.065},
                    u0=np.stack([u, v]), component_names=("u", "v"), name="gray_scott",
                    t_span=(0.0, 5000.0),
                    units=_nondimensional("x", "y", "u", "v", "diffusivity_u", "diffusivity_v", "feed", "kill"),
                    source="P. Gray & S. K. Scott (1984), Chem. Eng. Sci. 39:1087-1097; patterns and "
                    "parameters: J. E. Pearson (1993), Science 261:189-192 (Du = 2e-5, Dv = 1e-5; "
                    "F = 0.035, k = 0.065 gives self-replicating spots).",
                    description="Gray-Scott reaction-diffusion: spots from a perturbed square.")


def fhn_diffusion(t, u, p, space):
    lap = op.laplacian(space.pad(u), space.spacing)
    return jnp.stack([p["diffusivity_u"] * lap[0], p["diffusivity_v"] / p["tau"] * lap[1]])


def fhn_rhs(t, u, p, space):
    a, b = u[0], u[1]
    return fhn_diffusion(t, u, p, space) + jnp.stack([a - a**3 - b + p["k"], (a - b) / p["tau"]])


def fitzhugh_nagumo_2d() -> PDEModel:
    grid = Grid((96, 96), -1.0, 1.0)
    u0 = np.random.default_rng(3).uniform(0.0, 1.0, (2,) + grid.shape)
    return PDEModel(rhs=fhn_rhs, linear=fhn_diffusion, grid=grid, bcs=Neumann(0.0),
                    params={"diffusivity_u": 2.8e-4, "diffusivity_v": 5e-3, "tau": 0.1, "k": -0.005},
                    u0=u0, component_names=("u", "v"), name="fitzhugh_nagumo_2d", t_span=(0.0, 9.0),
                    units=_nondimensional("x", "y", "u", "v", "diffusivity_u", "diffusivity_v", "tau", "k"),
                    source="R. FitzHugh (1961), Biophys. J. 1:445-466; J. Nagumo, S. Arimoto & "
                    "S. Yoshizawa (1962), Proc. IRE 50:2061-2070; Turing-pattern form u_t = Du lap u + "
                    "u - u^3 - v + k, tau v_t = Dv lap v + u - v and its parameters: C. Rossant, IPython "
                    "Interactive Computing and Visualization Cookbook (2014), recipe 12.4.",
                    description="FitzHugh-Nagumo reaction-diffusion in 2-D: Turing patterns from noise.")


def allen_cahn_diffusion(t, u, p, space):
    return p["interface"] ** 2 * op.laplacian(space.pad(u), space.spacing)


def allen_cahn_rhs(t, u, p, space):
    return allen_cahn_diffusion(t, u, p, space) + u - u**3


def allen_cahn() -> PDEModel:
    grid = Grid((64, 64), 0.0, 1.0)
    return PDEModel(rhs=allen_cahn_rhs, linear=allen_cahn_diffusion, grid=grid, bcs=Periodic(),
                    params={"interface": 0.02}, u0=_seeded((1,) + grid.shape, 4, 0.1),
                    name="allen_cahn", t_span=(0.0, 20.0), units=_nondimensional("x", "y", "u", "interface"),
                    source="S. M. Allen & J. W. Cahn (1979), Acta Metall. 27:1085-1095.",
                    description="Allen-Cahn phase separation (non-conserved) from small noise.")


def ks_linear(t, u, p, space):
    padded = space.pad(u, 2)
    return -op.laplacian(padded, space.spacing) - op.biharmonic(padded, space.spacing)


def ks_rhs(t, u, p, space):
    padded = space.pad(u, 2)
    return ks_linear(t, u, p, space) - op.flux_divergence(padded, lambda w: 0.5 * w * w, space.spacing)


def kuramoto_sivashinsky() -> PDEModel:
    grid = Grid((256,), 0.0, 32 * np.pi)
    x = grid.coordinates()
    return PDEModel(rhs=ks_rhs, linear=ks_linear, grid=grid, bcs=Periodic(), params={},
                    u0=(np.cos(x / 16) * (1 + np.sin(x / 16)))[None], name="kuramoto_sivashinsky",
                    t_span=(0.0, 150.0), units=_nondimensional("x", "u"),
                    source="Y. Kuramoto (1978), Prog. Theor. Phys. Suppl. 64:346-367; G. I. "
                    "Sivashinsky (1977), Acta Astronaut. 4:1177-1206; domain and initial data: "
                    "A.-K. Kassam & L. N. Trefethen (2005), SIAM J. Sci. Comput. 26:1214-1233.",
                    description="Kuramoto-Sivashinsky u_t = -u u_x - u_xx - u_xxxx, spatiotemporal chaos.")


def cahn_hilliard_linear(t, u, p, space):
    return -p["mobility"] * p["interface"] ** 2 * op.biharmonic(space.pad(u, 2), space.spacing)


def cahn_hilliard_rhs(t, u, p, space):
    # c_t = M lap(c^3 - c) - M g^2 lap^2 c: the chemical potential's bulk part re-padded
    bulk = u**3 - u
    return p["mobility"] * op.laplacian(space.pad(bulk), space.spacing) + cahn_hilliard_linear(t, u, p, space)


def cahn_hilliard() -> PDEModel:
    grid = Grid((64, 64), 0.0, 1.0)
    return PDEModel(rhs=cahn_hilliard_rhs, linear=cahn_hilliard_linear, grid=grid, bcs=Periodic(),
                    params={"mobility": 1.0, "interface": 0.02}, u0=_seeded((1,) + grid.shape, 5, 0.05),
                    name="cahn_hilliard", t_span=(0.0, 0.01),
                    units=_nondimensional("x", "y", "u", "mobility", "interface"),
                    source="J. W. Cahn & J. E. Hilliard (1958), J. Chem. Phys. 28:258-267.",
                    description="Cahn-Hilliard spinodal decomposition (mass conserved exactly).")




def brusselator_2d_diffusion(t, u, p, space):
    return p["alpha"] * op.laplacian(space.pad(u), space.spacing)


def brusselator_2d_rhs(t, u, p, space):
    a, b = u[0], u[1]
    x, y = space.coordinates()
    # the forcing disc, switched on at t = 1.1 (a discontinuity in time the solver must step over)
    disc = ((x - 0.3) ** 2 + (y - 0.6) ** 2 <= 0.1**2) & (t >= 1.1)
    forcing = jnp.where(disc, p["forcing"], 0.0)
    a2b = a * a * b
    reaction = jnp.stack([1.0 + a2b - 4.4 * a + forcing, 3.4 * a - a2b])
    return brusselator_2d_diffusion(t, u, p, space) + reaction


def brusselator_2d(n: int = 32) -> PDEModel:
    """The 2-D Brusselator with diffusion on the periodic unit square, ``n`` x ``n`` nodes
    (``2 n^2`` states: 2,048 at the default n = 32, 10,368 at n = 72)."""
    grid = Grid((n, n), 0.0, 1.0, centering="node")
    x, y = grid.meshgrid()
    u0 = np.stack([22.0 * (y * (1.0 - y)) ** 1.5, 27.0 * (x * (1.0 - x)) ** 1.5])
    return PDEModel(rhs=brusselator_2d_rhs, linear=brusselator_2d_diffusion, grid=grid, bcs=Periodic(),
                    params={"alpha": 10.0, "forcing": 5.0}, u0=u0, component_names=("u", "v"),
                    name="brusselator_2d", t_span=(0.0, 11.5), stiff=True,
                    units=_nondimensional("x", "y", "u", "v", "alpha", "forcing"),
                    source="The Brusselator with diffusion (I. Prigogine & R. Lefever (1968), J. Chem. Phys. "
                    "48:1695); the 2-D stiff test problem of E. Hairer & G. Wanner, Solving ODEs II (1996), "
                    "with the statement, parameters (alpha = 10, a forcing disc of radius 0.1 at (0.3, 0.6) "
                    "from t = 1.1) and initial fields of the SciML MethodOfLines.jl Brusselator tutorial.",
                    description="2-D Brusselator by the method of lines: a large stiff system (alpha "
                    "lap with alpha = 10: eigenvalues down to -8 alpha n^2).")


MODELS = {"gray_scott": gray_scott, "fitzhugh_nagumo_2d": fitzhugh_nagumo_2d, "allen_cahn": allen_cahn,
          "kuramoto_sivashinsky": kuramoto_sivashinsky, "cahn_hilliard": cahn_hilliard,
          "brusselator_2d": brusselator_2d}
