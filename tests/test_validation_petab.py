"""The PEtab validation case's own logic (simkit/validation/petab_case.py), cheaply: its
profiles on a quadratic whose profile is known exactly, the interval read off a profile, the
report's section and figure from made-up results, and the shipped copy of the problem. The
case itself (load, fits, profiles of the STAT5 problem: about a minute) runs in
`simkit validate`; tests/test_petab.py checks the objective at the nominal values."""

import filecmp
import pathlib
import types

import jax.numpy as jnp
import matplotlib
import numpy as np
import pytest

from simkit.validation import petab_case

matplotlib.use("Agg")

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_profile_of_a_quadratic_is_its_exact_profile():
    # the case profiles with PetabProblem.profile on its grid; on a problem whose objective is
    # f(x) = (x - m)^T A (x - m) / 2, fixing x_i = v and minimising over the rest leaves
    # (v - m_i)^2 / (2 (A^-1)_ii), so the statistic 2 (f - f_min) is (v - m_i)^2 / (A^-1)_ii
    from simkit.petab import PetabFit, PetabProblem

    a = jnp.array([[2.0, 0.6, 0.0], [0.6, 1.0, 0.3], [0.0, 0.3, 0.5]])
    m = jnp.array([0.2, -0.1, 0.4])
    problem = PetabProblem.__new__(PetabProblem)  # only what profiling reads
    problem._objective = lambda x: 0.5 * (x - m) @ a @ (x - m)
    problem._residuals, problem.parameter_ids = None, ("a", "b", "c")
    problem.lower, problem.upper = np.full(3, -5.0), np.full(3, 5.0)
    fit = PetabFit(x=np.asarray(m)[None], cost=np.zeros(1), status=np.zeros(1, int), n_iter=np.zeros(1, int),
                   at_bound=np.zeros((1, 3), int), starts=np.asarray(m)[None], parameter_ids=problem.parameter_ids)
    grid = petab_case.profile_grid(problem, np.asarray(m), "a", 0.25)
    # 3 steps each side, but 0.2 + 3 * 0.25 = 0.95 and 0.2 - 3 * 0.25 = -0.55: all inside
    np.testing.assert_allclose(grid, 0.2 + 0.25 * np.array([-3, -2, -1, 1, 2, 3]))
    profile = problem.profile("a", grid, fit, method="lbfgsb", ftol=petab_case.PROFILE_FTOL)
    expected = (grid - 0.2) ** 2 / np.linalg.inv(np.asarray(a))[0, 0]
    np.testing.assert_allclose(2 * profile.cost, expected, atol=1e-8)
    # a grid that reaches a bound stops there: c's estimate 0.4 is 0.1 below its upper bound
    problem.upper = np.array([5.0, 5.0, 0.5])
    np.testing.assert_allclose(petab_case.profile_grid(problem, np.asarray(m), "c", 0.2), [-0.2, 0.0, 0.2])


def _made_up_result(passed: bool) -> dict:
    t = np.array([0.0, 10.0, 60.0])
    obs = [{"id": f"obs{k}", "time": t, "data": t + k, "fit": t + k + 0.5, "sigma": np.ones(3)} for k in range(3)]
    profiles = [{"name": "k", "values": np.array([0.9, 1.0, 1.1]), "delta": np.array([5.0, 0.0, 4.0]),
                 "interval": (0.93, 1.08)},
                {"name": "s", "values": np.array([0.0, 1.0]), "delta": np.array([0.0, 0.0]),
                 "interval": (-np.inf, np.inf)}]
    rows = [dict(name="check one", metric=1e-9, bound=1e-6, passed=True, note="n1"),
            dict(name="check two", metric=0.5, bound=0.1, passed=passed, note="n2")]
    return {"rows": rows, "passed": passed, "seconds": 42.0, "x_best": np.array([1.0, 0.5]), "cost_best": 138.2,
            "profiles": profiles, "threshold": 3.84, "observables": obs, "parameter_ids": ("k", "s")}


def test_report_section_and_figure(tmp_path):
    def figure(alt, filename, caption):
        return [f"![{alt}]({filename})", "", caption]

    lines = petab_case.report_lines(_made_up_result(passed=False), figure)
    assert "| check one | 1e-09 | 1e-06 | pass | n1 |" in lines
    assert "| check two | 0.5 | 0.1 | **FAIL** | n2 |" in lines
    assert "![PEtab STAT5 fit](petab_boehm.png)" in lines
    assert petab_case.report_lines(None, figure)[0].startswith("Skipped: the petab extra is not installed")
    path = tmp_path / "petab.png"
    petab_case.figure(_made_up_result(passed=True), str(path))
    assert path.stat().st_size > 10_000


def test_the_shipped_problem_is_the_test_copy():
    shipped = pathlib.Path(petab_case.problem_path()).parent
    tests_copy = ROOT / "tests" / "data" / "petab" / petab_case.PROBLEM
    names = sorted(p.name for p in tests_copy.iterdir())
    assert sorted(p.name for p in shipped.iterdir()) == names
    assert filecmp.cmpfiles(shipped, tests_copy, names, shallow=False)[0] == names
    assert (shipped.parent / "LICENSE.md").read_text().count("BSD 3-Clause License") == 1
