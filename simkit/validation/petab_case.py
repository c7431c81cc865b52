"""PEtab validation case: STAT5 dimerization (Boehm et al. 2014) of the Benchmark-Models-PEtab
collection, read by `simkit.petab`, fitted, and profiled.

The problem ships with simkit (``simkit/data/petab``, with the collection's licence): 8
states, 9 estimated parameters on log10 scales (6 rate constants and one noise standard
deviation per observable), 3 observables measured at 16 times. The collection's nominal
values are the published estimates, so the objective there is both the collection's
reference value and the published best.

Checks: the objective at the nominal parameters equals the reference to `NOMINAL_RTOL`
relative; the best of `N_STARTS` fits reaches the published best to `BEST_ATOL`; and no
profile point lies below the best fit (a lower one would show the fit stopped short of the
optimum). The starts are drawn in a box of `START_HALF_WIDTH` decades around the published
optimum, not in the whole box of bounds: of 20 starts drawn uniformly within the bounds
(`PetabProblem.sample_starts(20, seed=1)`), one reached the published best and the others
stopped in local optima between 147.5 and 249.7, in 75 s of CPU time.

The fits are `PetabProblem.fit` with one start per call, its default for this problem:
projected Levenberg-Marquardt on the weighted residuals, one compiled program for all of
them. The objective at the nominal values (a start with no steps) and the profiles
(`PetabProblem.profile`; its intervals `PetabProfile.interval`) run in a second program:
projected L-BFGS-B (``method="lbfgsb"``) on the problem's objective, one start at a time. The figure's simulation at the best fit compiles one more program, a plain solve.
On one core of a shared 2-core machine, without the persistent compilation cache, the case
took 47 s of CPU time (most of it compiling).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

PROBLEM = "Boehm_JProteomeRes2014"
TITLE = "PEtab: STAT5 dimerization (Boehm et al. 2014)"
# The negative log-likelihood at the collection's nominal parameters: minus the log-likelihood
# AMICI's test suite keeps for this problem (tests/benchmark_models/benchmark_models.yaml of
# AMICI, "llh": -138.22199693517703). The nominal values are the published estimates.
REFERENCE = 138.22199693517703
NOMINAL_RTOL = 1e-6  # simkit's objective at the nominal values against REFERENCE, relative
BEST_ATOL = 0.1  # the best fit against REFERENCE (the collection's convergence criterion)
PROFILE_ATOL = 0.01  # how far a profile point may lie below the best fit (convergence of both)
PROFILE_FTOL = 2.2e-9  # each profile point's L-BFGS-B stops on a relative decrease below this
N_STARTS = 4
START_HALF_WIDTH = 1.0  # starts uniform in published optimum +- this, in decades (log10 scale)
SEED = 2014
# Profiled parameters and the grid step of each (log10 units; 3 steps to each side inside the
# bounds). The steps are 0.8 standard errors from the Hessian at the optimum (0.084 and 0.045
# decades), so each profile crosses the 95 % threshold on both sides; k_imp_homo, whose
# estimate sits at its upper bound (the published one 0.01 below it), is profiled downwards
# only: its profile is flat (the data do not determine the homodimer's import rate).
PROFILES = {"Epo_degradation_BaF3": 0.07, "k_phos": 0.037, "k_imp_homo": 0.75}
CONFIDENCE = 0.95
# Observables' units: the formulas give percentages; time in minutes (the SBML model's time
# unit is 60 s).
TIME_LABEL = "t [min]"


def problem_path() -> str:
    """The YAML file of the shipped problem (``simkit/data/petab/Boehm_JProteomeRes2014``)."""
    from .. import datasets

    return datasets.path(f"petab/{PROBLEM}/{PROBLEM}.yaml")


def available() -> bool:
    """Whether the ``petab`` extra (petab, python-libsbml, sbmlmath, sympy) is installed."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("petab", "libsbml", "sbmlmath", "sympy"))


def profile_grid(problem: Any, x_best: np.ndarray, name: str, step: float, n_steps: int = 3) -> np.ndarray:
    """The values at which parameter ``name`` is profiled: ``x_best[i] + k * step`` for ``k =
    +-1 .. +-n_steps``, each side stopping at its first value not strictly inside the bounds;
    ascending."""
    i = problem.parameter_ids.index(name)
    values = []
    for side in (-1, 1):
        for k in range(1, n_steps + 1):
            v = float(x_best[i] + side * k * step)
            if not problem.lower[i] < v < problem.upper[i]:
                break
            values.append(v)
    return np.sort(np.asarray(values))


def observables(problem: Any, x: np.ndarray) -> list[dict[str, Any]]:
    """Each observable's measurements and its simulation at ``x``: ``id``, ``time``, ``data``,
    ``fit`` (the observable) and ``sigma`` (its noise parameter), ``(n_meas,)`` each, sorted
    by time (the observable and noise formulas as `PetabProblem.objective` evaluates them)."""
    import jax
    import jax.numpy as jnp

    from ..petab.layout import read_problem
    from ..petab.objective import observable_function, unscale

    layout = problem.layout
    tables, sbml = read_problem(problem_path())
    theta_ids = [str(i) for i in tables.parameter_df.index]
    theta = np.array(layout.theta_nominal, dtype=float)
    theta[layout.estimated] = np.asarray(unscale(jnp.asarray(x), layout.scales))
    params = np.asarray(layout.parameters.values(jnp.asarray(theta)))
    ys = np.asarray(problem.simulate(x))
    out = []
    for j, obs in enumerate(layout.observables):
        pair, when = layout.measurement_pair[j], layout.measurement_time[j]
        f = observable_function(obs, sbml, theta_ids, layout.observables)
        t = layout.save_times[when]
        h_sigma = np.asarray(jax.vmap(f, in_axes=(0, 0, 0, None, 0, 0))(
            jnp.asarray(t), jnp.asarray(ys[pair, when]), jnp.asarray(params[pair]), jnp.asarray(theta),
            layout.observable_overrides[j].values(jnp.asarray(theta)),
            layout.noise_overrides[j].values(jnp.asarray(theta))))
        order = np.argsort(t, kind="stable")
        out.append({"id": obs.id, "time": t[order], "data": layout.measurement_value[j][order],
                    "fit": h_sigma[order, 0], "sigma": h_sigma[order, 1]})
    return out


def boehm() -> dict[str, Any]:
    """Run the case: load, objective at the nominal values, `N_STARTS` fits, `PROFILES`.

    Returns
    -------
    dict
        ``rows`` (three checks, each ``name``, ``metric``, ``bound``, ``passed``, ``note``),
        ``passed``, ``seconds``, and what the figure draws: ``x_best``, ``cost_best``,
        ``profiles`` (each with ``delta``, ``interval``), ``observables``, ``threshold``,
        ``parameter_ids``.
    """
    from scipy import stats

    from .. import petab

    start = time.perf_counter()
    problem = petab.load(problem_path())
    # (a start with no steps of the one-start L-BFGS-B program that the profiles use)
    nominal = float(problem.fit(problem.x_nominal[None, :], method="lbfgsb", max_iter=0).cost[0])
    rng = np.random.default_rng(SEED)
    starts = np.clip(problem.x_nominal + rng.uniform(-START_HALF_WIDTH, START_HALF_WIDTH,
                                                     (N_STARTS, len(problem.parameter_ids))),
                     problem.lower, problem.upper)
    fits = [problem.fit(s[None, :]) for s in starts]  # least squares, one start per call: one program
    costs = np.array([float(f.cost[0]) for f in fits])
    best = fits[int(np.argmin(costs))]
    x_best, cost_best = np.array(best.x[0]), float(best.cost[0])
    within = int(np.sum(np.abs(costs - REFERENCE) <= BEST_ATOL))
    bounds = [f"{n} at its {'lower' if s < 0 else 'upper'} bound" for n, s in
              zip(problem.parameter_ids, best.at_bound[0]) if s != 0]

    profiles = []
    for name, step in PROFILES.items():
        prof = problem.profile(name, profile_grid(problem, x_best, name, step), best, method="lbfgsb",
                               ftol=PROFILE_FTOL)
        order = np.argsort(np.r_[prof.values, prof.best_value])  # the estimate itself drawn with the fit's cost
        profiles.append({"name": name, "values": np.r_[prof.values, prof.best_value][order],
                         "delta": 2.0 * (np.r_[prof.cost, cost_best][order] - cost_best),
                         "interval": prof.interval(CONFIDENCE)})
    lowest = cost_best + min(float(np.min(p["delta"])) for p in profiles) / 2  # (each delta holds the estimate's 0)
    threshold = float(stats.chi2.ppf(CONFIDENCE, 1))
    seconds = time.perf_counter() - start

    nominal_rel = abs(nominal - REFERENCE) / abs(REFERENCE)
    best_gap = abs(cost_best - REFERENCE)
    below = max(0.0, cost_best - lowest)

    def words(interval: tuple[float, float]) -> str:
        return "(" + ", ".join(f"{v:.3f}" if np.isfinite(v) else "open" for v in interval) + ")"

    rows = [
        dict(name="objective at the nominal parameters vs the collection's reference", metric=nominal_rel,
             bound=NOMINAL_RTOL, passed=bool(nominal_rel <= NOMINAL_RTOL),
             note=f"{nominal:.10g} vs {REFERENCE:.10g} (relative difference {nominal_rel:.1e})"),
        dict(name=f"best of {N_STARTS} fits vs the published best", metric=best_gap, bound=BEST_ATOL,
             passed=bool(best_gap <= BEST_ATOL and np.isfinite(cost_best)),
             note=f"best {cost_best:.6f} vs {REFERENCE:.6f}; {within} of {N_STARTS} starts within {BEST_ATOL:g} "
                  f"(starts uniform within ±{START_HALF_WIDTH:g} of the published optimum on the log10 scale, seed "
                  f"{SEED}); {', '.join(bounds) if bounds else 'no parameter at a bound'}"),
        dict(name="profiles: no point below the best fit", metric=below, bound=PROFILE_ATOL,
             passed=bool(below <= PROFILE_ATOL),
             note="; ".join(f"{p['name']} = {x_best[problem.parameter_ids.index(p['name'])]:.3f}, "
                            f"{CONFIDENCE:.0%} profile interval {words(p['interval'])} (log10)" for p in profiles)),
    ]
    return {"name": TITLE, "rows": rows, "passed": all(r["passed"] for r in rows), "seconds": seconds,
            "x_best": x_best, "cost_best": cost_best, "profiles": profiles, "threshold": threshold,
            "observables": observables(problem, x_best), "parameter_ids": problem.parameter_ids}


def figure(result: dict[str, Any], path: str) -> None:
    """Data and the fitted observables (with the fitted noise sd as a band), one panel per
    observable, above the profiles of `PROFILES`; written to ``path``."""
    import matplotlib.pyplot as plt

    obs, profiles = result["observables"], result["profiles"]
    cols = max(len(obs), len(profiles))
    fig, axes = plt.subplots(2, cols, figsize=(4.3 * cols, 6.8), squeeze=False, layout="constrained")
    for ax, o in zip(axes[0], obs):
        ax.fill_between(o["time"], o["fit"] - o["sigma"], o["fit"] + o["sigma"], color="C0", alpha=0.15,
                        label="fit ± fitted noise sd")
        ax.plot(o["time"], o["fit"], "-", color="C0", lw=1.2, label="fit (at the measurement times)")
        ax.plot(o["time"], o["data"], "o", color="k", ms=3.5, label="data")
        ax.set_title(o["id"], fontsize=9)
        ax.set_xlabel(TIME_LABEL, fontsize=8)
        ax.set_ylabel(f"{o['id']} [%]", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7, loc="lower center")
    for ax, p in zip(axes[1], profiles):
        i = result["parameter_ids"].index(p["name"])
        ax.plot(p["values"], p["delta"], "o-", ms=3)
        ax.axhline(result["threshold"], color="0.5", ls="--", lw=0.8, label=f"{CONFIDENCE:.0%} threshold")
        ax.axvline(result["x_best"][i], color="C3", lw=0.8, label="estimate")
        lo, hi = p["interval"]
        lo = lo if np.isfinite(lo) else p["values"][0]
        hi = hi if np.isfinite(hi) else p["values"][-1]
        ax.axvspan(lo, hi, color="C1", alpha=0.15, label="profile interval")
        ax.set_xlabel(f"log10 {p['name']}", fontsize=8)
        ax.set_ylabel("likelihood-ratio statistic", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[1][0].legend(fontsize=7, loc="upper center")
    for ax in list(axes[0][len(obs):]) + list(axes[1][len(profiles):]):
        ax.axis("off")
    fig.suptitle(f"{TITLE}: best fit {result['cost_best']:.4f} (published {REFERENCE:.4f})", fontsize=10)
    fig.savefig(path, dpi=85)
    plt.close(fig)


def report_lines(result: dict[str, Any] | None, figure: Any) -> list[str]:
    """The report's section on this case (below its heading): what is checked, the table of
    `boehm`'s ``rows`` and the figure (``figure(alt, filename, caption)`` gives its lines);
    for ``result=None`` (no petab extra), one line saying the case was skipped."""
    if result is None:
        return ["Skipped: the petab extra is not installed (`pip install 'simkit-jax[petab]'`)."]
    lines = [f"{TITLE.split(': ', 1)[1]}, problem `{PROBLEM}` of the Benchmark-Models-PEtab collection "
             "(8 states, 9 parameters on log10 scales, one noise sd per observable; shipped in "
             "`simkit/data/petab`), read by `simkit.petab.load`. Checks: the objective at the collection's "
             f"nominal parameters (the published estimates) equals the reference value (AMICI's, "
             f"{REFERENCE:.10g}) to {NOMINAL_RTOL:g} relative; the best of {N_STARTS} fits "
             "(`PetabProblem.fit`: projected Levenberg-Marquardt on the weighted residuals; starts "
             "uniform within "
             f"±{START_HALF_WIDTH:g} of the published optimum on the log10 scale, not in the whole box of "
             "bounds) "
             f"within {BEST_ATOL:g} of it; and no point of the profiles below the best fit. Profiles: the "
             "other parameters re-fitted at each fixed value (projected L-BFGS-B). "
             f"The case took {result['seconds']:.0f} s.", "",
             "| case | metric | bound | result | note |", "|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['name']} | {r['metric']:.3g} | {r['bound']:.3g} | "
                     f"{'pass' if r['passed'] else '**FAIL**'} | {r['note']} |")
    return lines + [""] + figure(
        "PEtab STAT5 fit", "petab_boehm.png",
        "Top: the measurements (dots) and the best fit's observables at the measurement times (lines) with ± "
        "the fitted noise standard deviation (band). Bottom: profile likelihoods (likelihood-ratio statistic "
        f"against the fixed value, log10 scale; dashed: the {CONFIDENCE:.0%} threshold; shaded: the profile "
        "interval, to the grid's end where the profile does not cross; red: the estimate).")
