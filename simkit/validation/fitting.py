"""Fitting validation cases: the lynx-hare fit against SciPy's least_squares, and a PDE
inverse problem with known truth."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import datasets, models, reference
from ..fitting import Dataset, LogNormal, fit
from ..stencil import Grid, Neumann, PDEModel, laplacian

FREE = ["alpha", "beta", "gamma", "delta"]


def lynx_hare() -> dict[str, Any]:
    """Lotka-Volterra, log-normal loss, rates and initial populations: simkit (jaxopt
    Levenberg-Marquardt, transforms for positivity) against scipy.optimize.least_squares
    (trf, bounds) with solve_ivp inside, both from the model's default parameters."""
    data = datasets.lynx_hare()
    model = models.get("lotka_volterra")
    result = fit(model, data, free=FREE, loss=LogNormal(), initial_state="fit", bounds="positive",
                 rtol=1e-11, atol=1e-12)
    names = result.names
    ref = reference.least_squares(model, data, free=FREE, initial_state="fit", log=True,
                                  bounds={n: (0.0, np.inf) for n in names})
    cost_rel = abs(result.cost - ref["cost"]) / ref["cost"]
    param_rel = max(abs(result.estimates[n] - ref["x"][n]) / abs(ref["x"][n]) for n in names)
    passed = cost_rel <= 1e-8 and param_rel <= 1e-5 and result.converged
    return dict(name="lynx-hare Lotka-Volterra vs SciPy least_squares", metric=param_rel, bound=1e-5, passed=passed,
                note=f"cost {result.cost:.10g} vs SciPy {ref['cost']:.10g} (relative {cost_rel:.1e}); largest "
                     f"parameter difference {param_rel:.1e} relative; {result.iterations} LM iterations",
                result=result)


def pde_inverse() -> dict[str, Any]:
    """Fisher-KPP on 32 cells: diffusivity and growth rate from noisy snapshots (noise 0.01);
    passes when the truth lies inside both 95% intervals."""
    grid = Grid((32,), 0.0, 1.0)
    x = grid.coordinates()
    pde = PDEModel(rhs=lambda t, u, p, s: p["D"] * laplacian(s.pad(u), s.spacing) + p["r"] * u * (1 - u),
                   grid=grid, bcs=Neumann(0.0), params={"D": 0.02, "r": 1.0},
                   u0=(0.9 * np.exp(-((x - 0.3) / 0.1) ** 2))[None], name="fisher_kpp")
    truth = {"D": 0.01, "r": 2.0}
    times = np.linspace(0.0, 2.0, 6)
    # the data from SciPy (Radau on the method of lines), not from simkit's solver, which the
    # fit uses: a solver error that both share would cancel (a Tsit5 running 5 % fast passed)
    clean = reference.solve_ivp(pde.to_ode(), (0.0, 2.0), params=truth, saveat=times, method="Radau",
                                rtol=1e-11, atol=1e-13).ys
    noisy = clean + 0.01 * np.random.default_rng(2026).standard_normal(clean.shape)
    data = Dataset(times, noisy, observed=lambda y, p: y, names=tuple(f"u{i}" for i in range(32)))
    result = fit(pde, data, free=["D", "r"], bounds="positive")
    inside = all(result.intervals[n][0] < v < result.intervals[n][1] for n, v in truth.items())
    worst = max(abs(result.estimates[n] - v) / result.stderr[n] for n, v in truth.items())
    note = ", ".join(f"{n} = {result.estimates[n]:.5g} +- {result.stderr[n]:.2g} (truth {v:g})" for n, v in truth.items())
    return dict(name="Fisher-KPP inverse problem (32 cells, 6 snapshots)", metric=worst, bound=1.96, passed=inside,
                note=note + "; metric: largest abs(estimate - truth) / standard error")


# The lynx-hare records' units, as `simkit.datasets.lynx_hare` documents them (the data's
# names, hare and lynx, are not the model's states, prey and predator, and its times count from 1900).
LYNX_HARE_UNITS = {"t": "years since 1900", "hare": "thousands of pelts", "lynx": "thousands of pelts"}


def figure(result: Any, path: str) -> None:
    import matplotlib.pyplot as plt

    from ..plot import axis_label

    fig = plt.figure(figsize=(13, 8.2), layout="constrained")
    grid = fig.add_gridspec(3, 4, height_ratios=[3, 1.3, 3])
    axes = np.array([[fig.add_subplot(grid[0, 0:2]), fig.add_subplot(grid[0, 2:4])],
                     [fig.add_subplot(grid[1, 0:2]), fig.add_subplot(grid[1, 2:4])]])
    result.plot(axes)
    for j, name in enumerate(result.problem.datasets[0].names):
        axes[0, j].set_ylabel(axis_label(name, LYNX_HARE_UNITS.get(name)), fontsize=8)
        axes[0, j].set_xlabel(axis_label("t", LYNX_HARE_UNITS["t"]), fontsize=8)
        axes[1, j].set_xlabel(axis_label("t", LYNX_HARE_UNITS["t"]), fontsize=8)
        axes[1, j].set_ylabel("log-normal residual", fontsize=8)
    result.plot_correlation(fig.add_subplot(grid[2, 0:2]))
    result.plot_profiles(["alpha", "gamma"], [fig.add_subplot(grid[2, 2]), fig.add_subplot(grid[2, 3])])
    fig.savefig(path, dpi=85)
    plt.close(fig)
