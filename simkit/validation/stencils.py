"""Stencil validation cases: observed convergence orders in space and time, exact solutions,
conservation, a small-grid comparison with SciPy, and field figures (a Gray-Scott GIF).

Each case returns ``{"name", "kind", "metric", "bound", "passed", "note", ...}``; order
cases carry their (h, error) points for the convergence figures and pass when the fitted
log-log slope is within `ORDER_BAND` of the theoretical order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import models
from ..stencil.boundary import Dirichlet, Periodic
from ..stencil.grid import Grid
from ..stencil.pde import PDEModel
from ..stencil.stepping import RK4, SSPRK3, ForwardEuler, IMEXEuler, integrate
from ..models import pde_transport as pt

ORDER_BAND = 0.3


def _slope(hs, errors) -> float:
    return float(np.polyfit(np.log(hs), np.log(errors), 1)[0])


def _order_case(name, kind, hs, errors, order, note) -> dict[str, Any]:
    slope = _slope(hs, errors)
    return dict(name=name, kind=kind, metric=slope, bound=order, passed=abs(slope - order) <= ORDER_BAND,
                note=note, hs=np.asarray(hs), errors=np.asarray(errors), order=order)


def _heat_1d(n, bcs, rhs):
    grid = Grid((n,), 0.0, 1.0)
    x = grid.coordinates()
    if isinstance(bcs, Periodic):
        u0 = np.sin(2 * np.pi * x) + 0.5 * np.cos(4 * np.pi * x)
    else:
        u0 = pt.heat_1d_exact(x, 0.0)
    return PDEModel(rhs=rhs, linear=pt.diffusion_rhs, grid=grid, bcs=bcs, params={"diffusivity": 0.1},
                    u0=u0[None], name="heat_1d")


def _heat_exact(x, t, periodic):
    if periodic:
        return (np.sin(2 * np.pi * x) * np.exp(-0.1 * 4 * np.pi**2 * t)
                + 0.5 * np.cos(4 * np.pi * x) * np.exp(-0.1 * 16 * np.pi**2 * t))
    return pt.heat_1d_exact(x, t)


def space_orders() -> list[dict[str, Any]]:
    cases = []
    ns = [16, 32, 64, 128]
    for label, bcs, rhs, order in [("heat 1-D, Dirichlet, 2nd-order Laplacian", Dirichlet(0.0), pt.diffusion_rhs, 2),
                                   ("heat 1-D, periodic, 2nd-order Laplacian", Periodic(), pt.diffusion_rhs, 2),
                                   ("heat 1-D, periodic, 4th-order Laplacian", Periodic(), pt.diffusion_rhs4, 4)]:
        errors = []
        for n in ns:
            m = _heat_1d(n, bcs, rhs)
            sol = integrate(m, dt=2.5e-5, steps=2000)
            errors.append(np.abs(sol.final[0] - _heat_exact(m.grid.coordinates(), 0.05, isinstance(bcs, Periodic))).max())
        cases.append(_order_case(label, "space", [1.0 / n for n in ns], errors, order,
                                 "t = 0.05, RK4 at dt = 2.5e-5 (time error far below)"))
    burgers = models.get("burgers")
    errors, hs = [], []
    for n in [64, 128, 256, 512]:
        m = burgers.replace(grid=Grid((n,), 0.0, 2 * np.pi), u0=np.sin(Grid((n,), 0.0, 2 * np.pi).coordinates())[None])
        sol = integrate(m, dt=5e-4, steps=2000)
        errors.append(np.abs(sol.final[0] - pt.burgers_exact(m.grid.coordinates(), 1.0)).max())
        hs.append(m.grid.spacing[0])
    cases.append(_order_case("viscous Burgers vs Cole-Hopf (central fluxes)", "space", hs, errors, 2,
                             "nu = 0.05, t = 1 (front steepening), RK4 at dt = 5e-4"))
    adv = models.get("advection")
    errors, hs = [], []
    for n in [50, 100, 200, 400]:
        g = Grid((n,), 0.0, 1.0)
        m = adv.replace(grid=g, u0=pt.advection_exact(g.coordinates(), 0.0)[None])
        sol = integrate(m, dt=0.25 / n, steps=4 * n)  # CFL 0.25: one period
        errors.append(np.abs(sol.final[0] - pt.advection_exact(g.coordinates(), 1.0)).max())
        hs.append(g.spacing[0])
    cases.append(_order_case("advection, 3rd-order upwind + RK4 at fixed CFL", "space", hs, errors, 3,
                             "one period, CFL 0.25: space (3rd) and time (4th) refined together"))
    return cases


def _semi_discrete_heat(grid, t):
    x, h = grid.coordinates(), grid.spacing[0]

    def decay(k):
        return np.exp(-0.1 * 4 / h**2 * np.sin(k * np.pi * h / 2) ** 2 * t)

    return np.sin(np.pi * x) * decay(1) + 0.5 * np.sin(3 * np.pi * x) * decay(3)


def time_orders() -> list[dict[str, Any]]:
    """Each stepper against the exact solution of the semi-discrete heat equation (the sine
    modes are eigenvectors of the Dirichlet Laplacian): no spatial error at all."""
    m = _heat_1d(32, Dirichlet(0.0), pt.diffusion_rhs)
    exact = _semi_discrete_heat(m.grid, 0.05)
    cases = []
    for stepper in (ForwardEuler(), SSPRK3(), RK4(), IMEXEuler()):
        dts, errors = [], []
        # RK4 from 10 steps: at 320 its error is 5e-15, float64's rounding (its slope from 40
        # steps: 3.95 on a CPU, 3.69 in a TPU's emulated float64, which has fewer bits); from
        # 10 its finest error is 1e-12 and its slope 4.02
        first = 10 if stepper.order >= 4 else 40
        for steps in (first, 2 * first, 4 * first, 8 * first):
            sol = integrate(m, dt=0.05 / steps, steps=steps, stepper=stepper)
            dts.append(0.05 / steps)
            errors.append(np.abs(sol.final[0] - exact).max())
        cases.append(_order_case(f"{type(stepper).__name__} (heat, semi-discrete exact)", "time", dts, errors,
                                 stepper.order, "32 cells, t = 0.05"))
    return cases


def exact_solutions() -> list[dict[str, Any]]:
    out = []
    m = models.get("heat_2d")
    sol = integrate(m, dt=0.005, steps=200)
    err = float(np.abs(sol.final[0] - pt.heat_2d_exact(m.grid.meshgrid(), 1.0)).max())
    out.append(dict(name="heat 2-D periodic Gaussian (images), 64^2", kind="exact", metric=err, bound=1.2e-3,
                    passed=err <= 1.2e-3, note="t = 1, RK4 dt = 0.005; bound 3x the error measured (2nd order in h)"))
    m = models.get("wave")
    sol = integrate(m, dt=0.005, steps=400)
    err = float(np.abs(sol.final[0] - pt.wave_exact(m.grid.meshgrid(), 2.0)[0]).max())
    out.append(dict(name="wave 2-D standing mode (1, 2), 64^2", kind="exact", metric=err, bound=1.5e-2,
                    passed=err <= 1.5e-2, note="t = 2, RK4 dt = 0.005; bound 3x the error measured (phase error, 2nd order in h)"))
    return out


def conservation() -> list[dict[str, Any]]:
    mass = {"mass": lambda u, space: space.integral(u[0])}
    out = []
    for name, dt, stepper in [("heat_2d", 0.005, RK4()), ("advection", 0.0025, RK4()), ("burgers", 0.002, RK4()),
                              ("heat_3d", 0.02, RK4()), ("cahn_hilliard", 1e-5, IMEXEuler())]:
        m = models.get(name)
        sol = integrate(m, dt=dt, steps=200, save_every=20, stepper=stepper, diagnostics=mass)
        drift = np.abs(sol.diagnostics["mass"] - sol.diagnostics["mass"][0]).max()
        scale = np.abs(m.u0).sum() * m.grid.cell_volume
        bound = 1e-12 if not isinstance(stepper, IMEXEuler) else 1e-9  # iterative solve: its tolerance
        out.append(dict(name=f"mass of {name}", kind="conservation", metric=float(drift / scale), bound=bound,
                        passed=drift / scale <= bound, note=f"200 steps, {type(stepper).__name__}; relative drift"))
    return out


def against_scipy() -> dict[str, Any]:
    """Gray-Scott, 12x12 (288 states), simkit.solve (Rodas4 kernel, method of lines) vs
    SciPy BDF with the stencil's Jacobian sparsity at rtol 1e-12."""
    from scipy.integrate import solve_ivp

    from .._solve import solve
    from ..kernels import Rodas4
    from ..reference import compare, scipy_functions, scipy_method

    g = Grid((12, 12), 0.0, 0.15)
    x, y = g.meshgrid()
    bump = np.exp(-((x - 0.07) ** 2 + (y - 0.08) ** 2) / 1e-3)
    m = models.get("gray_scott").replace(grid=g, u0=np.stack([1 - 0.5 * bump, 0.25 * bump]), stiff=True)
    ode = m.to_ode()
    rtol, atol, span = 1e-8, 1e-10, (0.0, 200.0)
    sol = solve(m, span, saveat=11, rtol=rtol, atol=atol, solver=Rodas4())
    fun, jac = scipy_functions(ode)
    pattern = jac(0.0, np.random.default_rng(0).uniform(0.1, 1, ode.n_states)) != 0
    ref = solve_ivp(fun, span, np.asarray(ode.y0), method=scipy_method("BDF"),
                    t_eval=np.linspace(*span, 11), rtol=1e-12, atol=1e-13, jac_sparsity=pattern)

    class _Ref:
        ts, ys = ref.t, ref.y.T

    err = max(compare(sol, _Ref, rtol, atol).values())
    bound = 3 * 5.5
    return dict(name="Gray-Scott 12x12 vs SciPy BDF (jac_sparsity)", kind="scipy", metric=float(err), bound=bound,
                passed=err <= bound, note=f"rtol {rtol:g}, atol {atol:g}, Rodas4; Jacobian {int(pattern.sum())} "
                f"nonzeros of {ode.n_states ** 2}; bound 3x the factor measured")


def scipy_comparison() -> list[dict[str, Any]]:
    return [against_scipy()]


GROUPS = (space_orders, time_orders, exact_solutions, conservation, scipy_comparison)
"""The cases in groups, each a list of results (a part of a resumable validation run)."""


def figure_orders(results: list[dict[str, Any]], path: str) -> None:
    import matplotlib.pyplot as plt

    from ..plot import axis_label

    # the order cases' models (heat, Burgers, advection) are nondimensional (their units "1")
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.6), layout="constrained")
    for ax, kind, xlabel in [(axes[0], "space", "grid spacing h"), (axes[1], "time", "time step dt")]:
        for r in [r for r in results if r["kind"] == kind]:
            line = ax.loglog(r["hs"], r["errors"], "o-", ms=4, label=f"{r['name']}: {r['metric']:.2f}")[0]
            ref = r["errors"][-1] * (np.asarray(r["hs"]) / r["hs"][-1]) ** r["order"]
            ax.loglog(r["hs"], ref, ":", color=line.get_color(), lw=1)
        ax.set_xlabel(axis_label(xlabel, "1"))
        ax.set_ylabel(axis_label("max |u − u_exact| at the final time", "1"))
        ax.set_title(f"observed order in {kind} (dotted: theoretical slope)", fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        # below the axes: inside, the legend covered the curves
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False,
                  title="case: fitted slope", title_fontsize=7)
    fig.savefig(path, dpi=95)
    plt.close(fig)


def label_field(ax: Any, units: Any, component: str, *, xname: str = "y", yname: str = "x") -> None:
    """Axis labels with units (model units where the model names none) and a colorbar label
    for an image drawn by `simkit.plot.plot_field` (2-D: ``y`` across, ``x`` up)."""
    from ..plot import model_axis_label

    ax.set_xlabel(model_axis_label(units, xname), fontsize=8)
    ax.set_ylabel(model_axis_label(units, yname), fontsize=8)
    colorbar = ax.images[-1].colorbar if ax.images else None
    if colorbar is not None:
        colorbar.set_label(model_axis_label(units, component), fontsize=8)


def figure_fields(out_dir: str) -> list[str]:
    """Snapshots of four library models and a GIF of Gray-Scott spots; returns file names."""
    import os

    import matplotlib.pyplot as plt

    from ..plot import model_axis_label

    fig, axes = plt.subplots(1, 4, figsize=(18, 4.1), layout="constrained")
    gs = integrate(models.get("gray_scott"), dt=1.0, steps=8000, save_every=200)
    gs.plot(axes[0], component="v")
    label_field(axes[0], gs.model_units, "v")
    ks = models.get("kuramoto_sivashinsky")
    ks_sol = integrate(ks, dt=0.0025, steps=60000, save_every=400)
    image = axes[1].imshow(ks_sol["u"], aspect="auto", origin="lower", cmap="RdBu_r",
                           extent=(0, ks.grid.upper[0], 0, ks_sol.ts[-1]))
    fig.colorbar(image, ax=axes[1], shrink=0.8).set_label(model_axis_label(ks.units, "u"), fontsize=8)
    axes[1].set_xlabel(model_axis_label(ks.units, "x"), fontsize=8)
    axes[1].set_ylabel(model_axis_label(ks.units, "t"), fontsize=8)
    axes[1].set_title("Kuramoto-Sivashinsky: u (space-time)", fontsize=9)
    fhn = integrate(models.get("fitzhugh_nagumo_2d"), dt=0.0015, steps=6000)
    fhn.plot(axes[2])
    label_field(axes[2], fhn.model_units, fhn.component_names[0])
    ac = integrate(models.get("allen_cahn"), dt=0.1, steps=100)
    ac.plot(axes[3], cmap="coolwarm")
    label_field(axes[3], ac.model_units, "u")
    fig.savefig(os.path.join(out_dir, "stencil_fields.png"), dpi=85)
    plt.close(fig)
    gs.animate(os.path.join(out_dir, "gray_scott.gif"), component="v", fps=8)
    return ["stencil_fields.png", "gray_scott.gif"]
