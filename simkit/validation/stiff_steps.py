"""Stiff step counts against SciPy: RadauIIA5 and BDF take SciPy's Radau's and BDF's steps.

One case, `step_counts`: Robertson to 1e11 in the Test Set's rates form, HIRES and E5 (species
near 1e-22) at rtol 1e-6 ... 1e-10, simkit's RadauIIA5 and BDF against SciPy's Radau and BDF
(given the same exact Jacobian). The metric is the largest ratio of simkit's accepted steps to
SciPy's, bound 1.3; each run's error against the published Test Set value is kept for the
figure. The full table (eight problems, rtol 1e-4 ... 1e-12, Rodas5P and the default too) is
``benchmarks/stiff_step_counts.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.integrate

from .. import models
from .._solve import solve
from ..kernels import BDF, RadauIIA5
from ..reference import scipy_functions
from ..models.chemistry import (E5_REFERENCE_T1E13, HIRES_REFERENCE_T321, ROBERTSON_REFERENCE_T1E11, e5,
                                robertson_rates_rhs)

BOUND = 1.3  # simkit's accepted steps at most this many times SciPy's
RTOLS = (1e-6, 1e-8, 1e-10)
# name: (model factory, t1, atol(rtol), error floor, published reference)
PROBLEMS = {
    "Robertson (rates form)": (lambda: models.get("robertson").replace(rhs=robertson_rates_rhs), 1e11,
                               lambda r: r * 1e-13, 1e-14, ROBERTSON_REFERENCE_T1E11),
    "HIRES": (lambda: models.get("hires"), 321.8122, lambda r: r * 1e-5, 1e-5, HIRES_REFERENCE_T321),
    "E5": (e5, 1e13, lambda r: 1.11e-24, 1e-23, E5_REFERENCE_T1E13),
}
PAIRS = (("RadauIIA5", RadauIIA5(), "Radau"), ("BDF", BDF(), "BDF"))


def _error(y: Any, ref: Any, floor: float) -> float:
    ref = np.asarray(ref, float)
    return float(np.max(np.abs(np.asarray(y, float) - ref) / np.maximum(np.abs(ref), floor)))


def step_counts(rtols: tuple[float, ...] = RTOLS) -> dict[str, Any]:
    """Run the case; returns ``{"name", "kind", "metric", "bound", "passed", "note", "rows"}``,
    ``rows`` one dict per problem, rtol and method pair with both step counts and errors."""
    rows = []
    for name, (make, t1, atol_of, floor, ref) in PROBLEMS.items():
        m = make()
        rhs, jac = scipy_functions(m)
        for rtol in rtols:
            atol = atol_of(rtol)
            for label, kernel, method in PAIRS:
                sol = solve(m, (0.0, t1), saveat=1, rtol=rtol, atol=atol, solver=kernel, throw=False,
                            max_steps=200_000)
                out = scipy.integrate.solve_ivp(rhs, (0.0, t1), np.asarray(m.y0, float), method=method, rtol=rtol,
                                                atol=atol, jac=jac)
                rows.append(dict(problem=name, rtol=rtol, method=label,
                                 steps=int(sol.stats["num_accepted_steps"]), scipy_steps=int(out.t.size - 1),
                                 error=_error(sol.ys[-1], ref, floor) if int(sol.status) == 0 else np.inf,
                                 scipy_error=_error(out.y[:, -1], ref, floor) if out.status == 0 else np.inf))
    ratio = max(r["steps"] / r["scipy_steps"] for r in rows)
    ok = all(np.isfinite(r["error"]) for r in rows)
    return dict(name="stiff step counts vs SciPy (RadauIIA5, BDF)", kind="steps", metric=ratio, bound=BOUND,
                passed=ok and ratio <= BOUND,
                note="largest ratio of simkit's accepted steps to SciPy's (Radau, BDF) over Robertson (rates "
                     "form), HIRES and E5 at rtol 1e-6 ... 1e-10", rows=rows)


def figure(result: dict[str, Any], path: str) -> None:
    """Two panels: the step ratio against rtol per problem and method, and the errors of
    simkit and SciPy against rtol (log-log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    rows = result["rows"]
    for name in PROBLEMS:
        for label, _, method in PAIRS:
            sel = [r for r in rows if r["problem"] == name and r["method"] == label]
            rt = [r["rtol"] for r in sel]
            ax1.semilogx(rt, [r["steps"] / r["scipy_steps"] for r in sel], "o-", label=f"{name}, {label}")
            line, = ax2.loglog(rt, [r["error"] for r in sel], "o-", label=f"{name}, simkit {label}")
            ax2.loglog(rt, [r["scipy_error"] for r in sel], "x--", color=line.get_color(),
                       label=f"{name}, SciPy {method}")
    ax1.axhline(result["bound"], color="k", lw=0.8, ls=":")
    ax1.set_xlabel("rtol")
    ax1.set_ylabel("simkit accepted steps / SciPy's")
    ax1.legend(fontsize=6)
    ax2.set_xlabel("rtol")
    ax2.set_ylabel("error at t1 (relative, per component above its floor)")
    ax2.legend(fontsize=5)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
