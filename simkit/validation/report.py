"""The validation runner: every case, its figures, and ``report.md``."""

from __future__ import annotations

import os
import platform
import sys
import time
from typing import Any

import numpy as np

from .. import __version__
from .. import progress as _progress
from . import ensembles, stencils
from . import fitting as fitting_cases
from . import parallel as parallel_cases
from . import petab_case
from . import stiff_steps
from .cases import MODEL_CASES, run_model_case, solvers_for
from .parts import Parts
from .work_precision import ERROR_AXIS_LABEL, ERROR_DEFINITION, PROBLEMS, work_precision

FULL_TOLERANCES = [1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10]
QUICK_TOLERANCES = [1e-3, 1e-5, 1e-7]


def _draw_models(results: list[dict[str, Any]]) -> Any:
    """The figure of `_figure_models`: one panel per model, |simkit - SciPy| of every state
    against t (log scale) at the save times compared, units from the model's ``units``."""
    import matplotlib.pyplot as plt

    from ..io import units_for
    from ..plot import axis_label, model_axis_label

    n = len(results)
    cols = 3
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 2.9 * rows), squeeze=False, layout="constrained")
    for ax, r in zip(axes.flat, results):
        sol, ref = r["solution"], r["ref"]
        units = getattr(sol, "model_units", "")
        ts = np.asarray(sol.ts)
        err = np.abs(np.asarray(sol.ys) - np.asarray(ref.ys))
        names = list(sol.state_names)
        state_units = [units_for(units, state) for state in names]
        common = state_units[0] if len(set(state_units)) == 1 else None
        colors = plt.get_cmap("tab20" if len(names) > 10 else "tab10")(np.arange(len(names)))
        for i, state in enumerate(names):
            e = np.where(err[:, i] > 0, err[:, i], np.nan)  # exact zeros (t0) have no log
            label = state if common or not state_units[i] else axis_label(state, state_units[i])
            if np.isnan(e).all():
                label += " (error 0)"
            ax.plot(ts, e, "o-", ms=2, lw=1, color=colors[i], label=label)
        ax.set_yscale("log")
        ax.set_xlabel(model_axis_label(units, "t"), fontsize=8)
        unknown = "model units, see legend" if any(state_units) and common is None else "model units"
        ax.set_ylabel(axis_label("|simkit − SciPy|", common, unknown=unknown), fontsize=8)
        ax.set_title(f"{r['name']} ({r['solver']}): max error / tol {r['max_error']:.3g}", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                  ncol=1 if len(names) <= 10 else 2, handlelength=1.5, columnspacing=0.8)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle("simkit against the SciPy reference: absolute error of every state at the save times "
                 "(zero errors, e.g. at t0, not drawn)", fontsize=11)
    return fig


def _figure_models(results: list[dict[str, Any]], path: str) -> None:
    import matplotlib.pyplot as plt

    fig = _draw_models(results)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _figure_wp(name: str, data: dict[str, Any], path: str) -> None:
    import matplotlib.pyplot as plt

    from ..plot import plot_work_precision

    fig, ax = plt.subplots(figsize=(9.0, 4.4), layout="constrained")
    plot_work_precision(data, ax, title=f"work-precision: {name}", xlabel=ERROR_AXIS_LABEL, legend_outside=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def environment() -> str:
    """Where a report was made, for its first line.

    simkit's, JAX's and Python's versions, the host's architecture, JAX's devices (their
    number, kind and platform, e.g. ``1 TPU v5 lite (tpu)``) and the floating-point precision
    in use, e.g. ``simkit 0.2.0, JAX 0.4.35, Python 3.11.7, x86_64; 2 cpu devices (cpu), float64``.
    """
    import jax

    devices = jax.devices()
    kinds = sorted({d.device_kind for d in devices})
    precision = "float64" if jax.config.jax_enable_x64 else "float32"
    return (f"simkit {__version__}, JAX {jax.__version__}, Python {platform.python_version()}, "
            f"{platform.machine()}; {len(devices)} {' + '.join(kinds)} device{'s' if len(devices) > 1 else ''} "
            f"({jax.default_backend()}), {precision}")


FULL_REPORT_DIR = os.path.join("validation", "report")


def default_out_dir(quick: bool, now: float | None = None, resume: bool = False) -> str:
    """The report folder when none is given.

    The full report goes to ``validation/report`` (in a checkout: the committed report it
    regenerates). A quick report goes to a new folder ``simkit-validation-quick-YYYYmmdd-HHMMSS``
    in the current directory (``-2``, ``-3``, ... appended if that exists), so that it never
    overwrites a full report. ``now`` is a ``time.time()`` value (default: the present).
    ``resume`` with ``quick`` raises `InputError`: a new folder holds no run to continue.
    """
    if not quick:
        return FULL_REPORT_DIR
    if resume:
        from ..errors import InputError

        raise InputError("validate --resume --quick: give --out, the folder of the run to continue "
                         "(a quick run without it writes a new folder)")
    base = "simkit-validation-quick-" + time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    path, n = base, 1
    while os.path.exists(path):
        n += 1
        path = f"{base}-{n}"
    return path


def run(out_dir: str | None = None, quick: bool = False, verbose: bool = True,
        progress: bool | None = None, resume: bool = False) -> dict[str, Any]:
    """Run every validation case, write ``out_dir/report.md`` and its PNGs.

    ``quick`` uses three tolerances for the work-precision diagrams instead of eight.
    ``out_dir`` defaults to `default_out_dir` (``validation/report``, or a new folder for a
    quick run). ``verbose`` prints one line per case on stdout; ``progress`` draws a
    ``tqdm`` bar of the cases on stderr (``None``: `simkit.progress`'s rule, i.e.
    ``SIMKIT_PROGRESS``, else a terminal or notebook). Each finished part (a model case, a
    work-precision diagram, a section) is kept in ``out_dir/.partial`` until the report is
    written; ``resume`` reads back those of an earlier run that stopped (same simkit version,
    run kind, platform and precision) instead of running them again. Returns a summary with
    ``passed`` (all cases within their bounds).
    """
    import jax
    import matplotlib

    matplotlib.use("Agg")
    if out_dir is None:
        out_dir = default_out_dir(quick, resume=resume)
    os.makedirs(out_dir, exist_ok=True)
    start = time.perf_counter()
    parts = Parts(out_dir, {"simkit": __version__, "quick": quick, "platform": jax.default_backend(),
                            "x64": bool(jax.config.jax_enable_x64)}, resume)
    total = (sum(len(solvers_for(name)) for name in MODEL_CASES) + len(PROBLEMS) + len(ensembles.CASES)
             + 5)  # stencils, decomposition, fitting, PEtab, stiff step counts
    bar = _progress.bar(total, "validate", progress=progress, unit="cases")

    def say(msg: str) -> None:
        if verbose:
            bar.write(msg, file=sys.stdout)  # above the bar
            sys.stdout.flush()

    # each part computes its results and draws its figures; a part read back from an earlier
    # run (`resume`) has its figures in out_dir already
    results = []
    for name in sorted(MODEL_CASES):  # the deterministic models (SDEs: ensemble cases)
        for solver in solvers_for(name):
            r = parts.get(f"model-{name}-{solver}", lambda: run_model_case(name, solver))
            say(f"  {name:24s} {solver:18s} max error/tol {r['max_error']:9.3g}  "
                f"(bound {r['bound']:g})  {'ok' if r['passed'] else 'FAIL'}")
            results.append(r)
            bar.update(1)
    _figure_models([r for r in results if r["solver"] == next(iter(solvers_for(r["name"])))],
                   os.path.join(out_dir, "models_vs_scipy.png"))

    tolerances = QUICK_TOLERANCES if quick else FULL_TOLERANCES
    wp: dict[str, Any] = {}
    for name in PROBLEMS:
        say(f"  work-precision {name} ...")

        def diagram(name=name):
            data = work_precision(name, tolerances)
            _figure_wp(name, data, os.path.join(out_dir, f"work_precision_{name}.png"))
            return data
        wp[name] = parts.get(f"work-precision-{name}", diagram)
        bar.update(1)

    ens_results = []
    for case in ensembles.CASES:  # each case a part; the figures need all of them
        r = parts.get(f"ensemble-{case.__name__}", case)
        say(f"  ensemble: {r['name']:44s} {r['metric']:9.3g} (bound {r['bound']:g})  "
            f"{'ok' if r['passed'] else 'FAIL'}")
        ens_results.append(r)
        bar.update(1)
    ensembles.figure_statistics(ens_results, os.path.join(out_dir, "ensemble_statistics.png"))
    ensembles.figure_fan(next(r for r in ens_results if r["kind"] == "fan"),
                         os.path.join(out_dir, "ensemble_fan_lorenz.png"))

    stencil_results = []
    for group in stencils.GROUPS:  # each group a part
        stencil_results += parts.get(f"stencils-{group.__name__}", group)
    stencils.figure_orders(stencil_results, os.path.join(out_dir, "stencil_orders.png"))
    field_figures = parts.get("stencil-fields", lambda: stencils.figure_fields(out_dir))
    bar.update(1)
    for r in stencil_results:
        say(f"  stencil: {r['name']:56s} {r['metric']:9.3g} (bound {r['bound']:g})  "
            f"{'ok' if r['passed'] else 'FAIL'}")

    say("  domain decomposition (a fresh process with 8 simulated devices of the CPU) ...")

    def parallel_part():
        out = parallel_cases.cases()
        parallel_cases.figure_decomposed(os.path.join(out_dir, "decomposed_gray_scott.png"))
        return out
    parallel_results, scaling = parts.get("decomposition", parallel_part)
    bar.update(1)
    for r in parallel_results:
        say(f"  decomposition: {r['name']:56s} {r['metric']:9.3g}  {'ok' if r['passed'] else 'FAIL'}")

    def fitting_part():
        out = [fitting_cases.lynx_hare(), fitting_cases.pde_inverse()]
        fitting_cases.figure(out[0]["result"], os.path.join(out_dir, "fit_lynx_hare.png"))
        return [dict(r, result=str(r["result"])) if "result" in r else r for r in out]  # the report prints it
    fit_results = parts.get("fitting", fitting_part)
    bar.update(1)
    for r in fit_results:
        say(f"  fitting: {r['name']:56s} {r['metric']:9.3g} (bound {r['bound']:g})  {'ok' if r['passed'] else 'FAIL'}")

    def petab_part():
        out = petab_case.boehm()
        petab_case.figure(out, os.path.join(out_dir, "petab_boehm.png"))
        return out
    petab = parts.get("petab", petab_part) if petab_case.available() else None  # needs the petab extra
    bar.update(1)
    for r in petab["rows"] if petab else []:
        say(f"  petab: {r['name']:58s} {r['metric']:9.3g} (bound {r['bound']:g})  {'ok' if r['passed'] else 'FAIL'}")
    if not petab:
        say("  petab: skipped (needs the petab extra: pip install 'simkit-jax[petab]')")

    def stiff_part():
        out = stiff_steps.step_counts(stiff_steps.RTOLS[:2] if quick else stiff_steps.RTOLS)
        stiff_steps.figure(out, os.path.join(out_dir, "stiff_step_counts.png"))
        return out
    stiff = parts.get("stiff-steps", stiff_part)
    bar.update(1)
    say(f"  stiff steps: {stiff['name']:52s} {stiff['metric']:9.3g} (bound {stiff['bound']:g})  "
        f"{'ok' if stiff['passed'] else 'FAIL'}")
    bar.close()

    passed = all(r["passed"] for r in results + ens_results + stencil_results + parallel_results + fit_results
                 + (petab["rows"] if petab else []) + [stiff])
    command = "simkit validate --quick" if quick else "simkit validate"

    def figure(alt: str, filename: str, caption: str) -> list[str]:
        """An image and its caption, which names the command that drew it."""
        return [f"![{alt}]({filename})", "", f"*{caption} Produced by `{command}`.*"]

    lines = [
        "# simkit validation report",
        "",
        f"{environment()}; "
        f"{'quick' if quick else 'full'} run, {time.perf_counter() - start:.0f} s"
        + (f" (resumed: {len(parts.resumed)} parts from the run before)" if parts.resumed else "") + ". "
        f"Overall: **{'PASS' if passed else 'FAIL'}**.",
        "",
        "## Library models against SciPy",
        "",
        "Each model solved by `simkit.solve` with each applicable solver (simkit's kernels "
        "Tsit5, DOPRI5, DOP853 and diffrax's Tsit5 for non-stiff models; simkit's Rodas5P (the "
        "default for small stiff models), Rodas4 and diffrax's Kvaerno5 for stiff ones) at the "
        "tolerances shown, and by SciPy `solve_ivp` "
        "(DOP853 at rtol 1e-13, or Radau with the `jax.jacfwd` Jacobian at rtol 1e-12 for stiff models). "
        "Error: `max |y - y_ref| / (atol + rtol |y_ref|)` over 41 save times; `bound` is 3x the "
        "factor measured for that model and solver, and at least 3 (see `simkit/validation/cases.py`).",
        "",
        "| model | solver | horizon | rtol | atol | max error / tol | bound | steps | result | note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        case = MODEL_CASES[r["name"]]
        lines.append(
            f"| {r['name']} | {r['solver']} | {r['span'][1]:g} | {case.rtol:g} | {case.atol:g} | "
            f"{r['max_error']:.3g} | {r['bound']:.3g} | {r['steps']} | "
            f"{'pass' if r['passed'] else '**FAIL**'} | {r['note']} |"
        )
    lines += [""] + figure(
        "models vs SciPy", "models_vs_scipy.png",
        "Absolute error |simkit − SciPy| of every state against time (log scale) at the 41 save times, "
        "one panel per model, solved with the first solver of its rows above (simkit.Tsit5, or "
        "simkit.Rodas5P for stiff models); zero errors (the initial state) are not drawn. Units from the "
        "model's `units` where it names them, otherwise \"model units\".")
    lines += ["", "## Ensembles", "",
              "`simkit.ensemble` statistics against closed forms (metric: the largest z-score, "
              "|estimate - exact| / Monte-Carlo standard error, of the mean and the variance over "
              "30 save times; bound 4.5), and members against SciPy DOP853 at rtol 1e-13 run one "
              "by one (metric: max error / tol over the members; bound 3x the factor measured).",
              "", "| case | metric | bound | result | note |", "|---|---|---|---|---|"]
    for r in ens_results:
        lines.append(f"| {r['name']} | {r['metric']:.3g} | {r['bound']:.3g} | "
                     f"{'pass' if r['passed'] else '**FAIL**'} | {r['note']} |")
    lines += [""] + figure(
        "ensemble statistics", "ensemble_statistics.png",
        "Ensemble mean (top) and standard deviation (bottom) of each statistics case against the "
        "closed form, with ±3 Monte-Carlo standard errors of the mean shaded.")
    lines += [""] + figure(
        "Lorenz fan chart", "ensemble_fan_lorenz.png",
        "Lorenz x over time for rho ~ U[24, 32]: median, 25-75% and 5-95% bands of the members, and "
        "the member with the median rho.")
    lines += ["", "## Stencils", "",
              "Observed orders: the fitted log-log slope of the max error against the grid spacing "
              "(exact solutions: heat with sine modes, viscous Burgers by Cole-Hopf, advection of "
              f"a Gaussian) or the time step (exact semi-discrete heat solution), within {stencils.ORDER_BAND} "
              "of the theoretical order (the `bound` column). Exact 2-D solutions, mass conservation "
              "under periodic/no-flux boundaries (relative drift: an invariant, which a stepper "
              "that did nothing would keep too; the exact-solution rows test accuracy) and the "
              "method-of-lines system against SciPy BDF.", "",
              "| case | metric | bound | result | note |", "|---|---|---|---|---|"]
    for r in stencil_results:
        lines.append(f"| {r['name']} | {r['metric']:.3g} | {r['bound']:.3g} | "
                     f"{'pass' if r['passed'] else '**FAIL**'} | {r['note']} |")
    lines += [""] + figure(
        "observed orders", "stencil_orders.png",
        "Max error against grid spacing (left) and time step (right), log-log, for the order cases "
        "above; the legend gives each fitted slope, dotted lines the theoretical slopes.")
    captions = {
        "stencil_fields.png": "Library models on their default grids: Gray-Scott spots (v, t = 8000), "
                              "Kuramoto-Sivashinsky space-time, FitzHugh-Nagumo Turing pattern, "
                              "Allen-Cahn coarsening.",
        "gray_scott.gif": "The Gray-Scott run of the first panel as an animation (v).",
    }
    for name in field_figures:
        lines += [""] + figure(name, name, captions.get(name, name))
    lines += ["", "## Domain decomposition", "",
              "Each model run by `simkit.parallel.integrate` on every mesh listed (simulated CPU "
              "devices, `SIMKIT_STRICT_FP=1`) against `simkit.stencil.integrate` on one device: "
              "the largest absolute difference of the saved fields (bound 0: bit for bit).", "",
              "| case | max difference | result | note |", "|---|---|---|---|"]
    for r in parallel_results:
        lines.append(f"| {r['name']} | {r['metric']:.3g} | {'pass' if r['passed'] else '**FAIL**'} | {r['note']} |")
    lines += ["", "Scaling on simulated devices (2-D heat, forward Euler, periodic, float64; these "
              f"share this machine's {os.cpu_count()} cores, so they show overheads, not a cluster's "
              "speed-up; `benchmarks/parallel.py` measures the 2048x2048 case):", "",
              "| run | ms per step | speed-up |", "|---|---|---|"]
    strong_base = next(v for k, v in scaling.items() if k.startswith("strong"))
    weak_base = next(v for k, v in scaling.items() if k.startswith("weak"))
    for k, v in scaling.items():
        ratio = (strong_base / v) if k.startswith("strong") else (weak_base / v)
        label = "speed-up" if k.startswith("strong") else "efficiency"
        lines.append(f"| {k} | {v * 1e3:.2f} | {label} {ratio:.2f} |")
    lines += [""] + figure(
        "decomposed run", "decomposed_gray_scott.png",
        "Gray-Scott (v) run by `simkit.parallel.integrate` on the devices of this process (its mesh "
        "in the title), shard edges dashed.")
    lines += ["", "## Parameter fitting", "",
              "`simkit.fit` against `scipy.optimize.least_squares` (trf) with `solve_ivp` inside on "
              "the Hudson's Bay lynx-hare records (same log-normal loss, same start; metric: the "
              "largest relative parameter difference, bound 1e-5, and the cost within 1e-8), and a "
              "PDE inverse problem with known truth (pass: the truth inside both 95% intervals).", "",
              "| case | metric | bound | result | note |", "|---|---|---|---|---|"]
    for r in fit_results:
        lines.append(f"| {r['name']} | {r['metric']:.3g} | {r['bound']:.3g} | "
                     f"{'pass' if r['passed'] else '**FAIL**'} | {r['note']} |")
    lines += ["", "```", str(fit_results[0]["result"]), "```", ""] + figure(
        "lynx-hare fit", "fit_lynx_hare.png",
        "The lynx-hare fit: data (dots) and fitted model (lines) with the residuals of the log-normal "
        "loss below, the parameter correlation matrix, and profile likelihoods of alpha and gamma "
        "(dashed: the chi-square threshold of the confidence level; shaded: the Wald interval; "
        "red: the estimate).")
    lines += ["", "## A PEtab problem: STAT5 dimerization", ""] + petab_case.report_lines(petab, figure)
    lines += ["", "## Stiff step counts against SciPy", "",
              f"simkit's RadauIIA5 and BDF against SciPy's Radau and BDF (the same exact Jacobian) on "
              f"{', '.join(stiff_steps.PROBLEMS)}: accepted steps and the error at the end against the "
              f"published Test Set values. Metric: {stiff['note']}; bound {stiff['bound']:g}: "
              f"{stiff['metric']:.3g}, {'pass' if stiff['passed'] else '**FAIL**'}.", "",
              "| problem | rtol | method | steps | SciPy's steps | error | SciPy's error |",
              "|---|---|---|---|---|---|---|"]
    for r in stiff["rows"]:
        lines.append(f"| {r['problem']} | {r['rtol']:g} | {r['method']} | {r['steps']} | {r['scipy_steps']} | "
                     f"{r['error']:.1e} | {r['scipy_error']:.1e} |")
    lines += [""] + figure("stiff step counts", "stiff_step_counts.png",
                           "Left: simkit's accepted steps over SciPy's per problem and method (dotted: the "
                           "bound). Right: the error at the end of simkit (circles) and SciPy (crosses).")
    lines += ["", "## Work-precision", ""]
    lines.append(
        f"Error: {ERROR_DEFINITION}, against run time; tolerances "
        f"{', '.join(f'{t:g}' for t in tolerances)}. simkit: median of 3 runs after "
        "compilation (compile excluded); SciPy: one run. Table cells: error / run time."
    )
    for name, data in wp.items():
        lines += ["", f"### {name}", ""]
        lines += figure(name, f"work_precision_{name}.png",
                        f"Work-precision of {name}: run time per solve against the error defined above, "
                        "one point per tolerance.")
        lines += ["", "| solver | " + " | ".join(f"rtol {t:g}" for t in tolerances) + " |",
                  "|---|" + "---|" * len(tolerances)]
        for label, points in data.items():
            cells = [f"{e:.1e} / {s * 1e3:.3g} ms" if np.isfinite(e) else "failed" for e, s in points]
            cells += [""] * (len(tolerances) - len(cells))
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    with open(os.path.join(out_dir, "report.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    parts.finish()
    say(f"wrote {os.path.join(out_dir, 'report.md')}: {'PASS' if passed else 'FAIL'}")
    return {"passed": passed, "models": results, "ensembles": ens_results, "stencils": stencil_results,
            "parallel": parallel_results, "scaling": scaling, "fitting": fit_results, "petab": petab,
            "stiff_steps": stiff,
            "work_precision": wp}
