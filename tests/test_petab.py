"""simkit.petab against the Benchmark-Models-PEtab collection's reference values.

The reference log-likelihoods at the nominal parameters are those AMICI's test suite keeps for
the collection (tests/benchmark_models/benchmark_models.yaml of AMICI, "llh"); simkit's
objective is the negative log-likelihood, so it must equal ``-llh``.
"""

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("petab")
pytest.importorskip("libsbml")
pytest.importorskip("sbmlmath")
pytest.importorskip("sympy")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import scipy.integrate  # noqa: E402

import simkit  # noqa: E402
import simkit.petab as sp  # noqa: E402
from simkit.petab.noise import negative_log_likelihood  # noqa: E402

DATA = Path(__file__).parent / "data" / "petab"
REFERENCE_LLH = {  # AMICI's reference values of the collection at the nominal parameters
    "Boehm_JProteomeRes2014": -138.22199693517703,
    "Bruno_JExpBot2016": 46.688176988431806,
    # (not in AMICI's list: petab.calculate_llh of the collection's own simulation table,
    # simulatedData_Blasi_CellSystems2016.tsv, values printed to 10 digits)
    "Blasi_CellSystems2016": 642.8268936157374,
}


@pytest.fixture(scope="module")
def boehm() -> sp.PetabProblem:
    return sp.load(DATA / "Boehm_JProteomeRes2014" / "Boehm_JProteomeRes2014.yaml")


def test_boehm_reads_as_the_collection_describes_it(boehm):
    # 8 species, 9 estimated parameters on log10 scales, one noise sd per observable
    assert len(boehm.model.state_names) == 8
    assert boehm.parameter_ids[-3:] == ("sd_pSTAT5A_rel", "sd_pSTAT5B_rel", "sd_rSTAT5A_rel")
    assert set(boehm.scales) == {"log10"}
    np.testing.assert_allclose(boehm.lower, -5.0)
    np.testing.assert_allclose(boehm.upper, 5.0)
    assert isinstance(simkit.petab.load, type(sp.load))  # simkit.petab is reachable from simkit


def test_boehm_objective_at_nominal(boehm):
    # (its gradient against finite differences: benchmarks/petab_collection.py; compiling the
    # gradient takes ~17 s of CPU, more than this file's share of the suite)
    value = float(jax.jit(boehm.objective)(boehm.x_nominal))
    reference = -REFERENCE_LLH["Boehm_JProteomeRes2014"]
    assert abs(value - reference) <= 1e-6 * abs(reference)


def test_least_squares_form_is_the_objective_plus_a_constant(boehm):
    # the residuals Levenberg-Marquardt fits: weighted residuals and the normal noise's
    # normalisation (its sd estimated here), half their squares summed = objective + constant
    from simkit.petab.noise import NORMAL_OFFSET

    n = sum(len(v) for v in boehm.layout.measurement_value)
    for x in (boehm.x_nominal, boehm.x_nominal + 0.3):
        r = jax.jit(boehm._residuals)(x)
        assert r.shape == (2 * n,)
        value = float(jax.jit(boehm.objective)(x))
        assert abs(0.5 * float(np.sum(np.asarray(r) ** 2)) - n * NORMAL_OFFSET - value) <= 1e-10 * abs(value)
    with pytest.raises(simkit.InputError, match="method must be"):
        boehm.fit(boehm.x_nominal[None, :], method="newton")
    for method in ("least_squares", "lbfgsb"):  # devices= reaches the minimiser (refused before compiling)
        with pytest.raises(simkit.InputError, match="devices must be a non-empty list"):
            boehm.fit(boehm.x_nominal[None, :], method=method, devices=jax.devices()[0])


def test_bruno_objective_at_nominal():
    # six conditions, initial states set by estimated parameters in the condition table,
    # numeric noise overrides in the measurement table, default noise model columns left empty
    problem = sp.load(DATA / "Bruno_JExpBot2016" / "Bruno_JExpBot2016.yaml")
    assert len(problem.conditions) == 6
    value = float(jax.jit(problem.objective)(problem.x_nominal))
    reference = -REFERENCE_LLH["Bruno_JExpBot2016"]
    assert abs(value - reference) <= 1e-6 * abs(reference)


def test_steady_state_measurements_at_nominal():
    # every measurement at time inf: the steady state of the one condition (16 species)
    problem = sp.load(DATA / "Blasi_CellSystems2016" / "Blasi_CellSystems2016.yaml")
    assert np.isinf(problem.layout.save_times).all()
    value = float(jax.jit(problem.objective)(problem.x_nominal))
    reference = -REFERENCE_LLH["Blasi_CellSystems2016"]
    assert abs(value - reference) <= 1e-6 * abs(reference)


@pytest.mark.parametrize("distribution", ["normal", "laplace"])
@pytest.mark.parametrize("transformation", ["lin", "log", "log10"])
def test_noise_models_match_the_petab_library(distribution, transformation):
    from petab.v1.calculate import calculate_single_llh

    m, h, s = np.array([0.7, 2.5, 13.0]), np.array([0.9, 2.0, 11.0]), np.array([0.3, 1.1, 0.05])
    ours = np.asarray(negative_log_likelihood(m, h, s, distribution, transformation))
    theirs = [-calculate_single_llh(*a, transformation, distribution, c) for *a, c in zip(m, h, s)]
    np.testing.assert_allclose(ours, theirs, rtol=1e-13)


@pytest.mark.parametrize("transformation", ["log", "log10"])
def test_a_simulation_at_or_below_zero_under_a_log_is_finite_and_poor(transformation):
    # a solve's noise around a quantity that decayed to zero (Perelson's virus load: -1e-8):
    # the log reads the smallest normal float instead of giving NaN, flat in the simulation
    from simkit.petab.noise import NORMAL_OFFSET, normal_residuals

    m, s = np.full(3, 2.0), np.full(3, 0.5)
    h = jax.numpy.array([-1e-8, 0.0, np.finfo(float).tiny])
    nll = np.asarray(negative_log_likelihood(m, h, s, "normal", transformation))
    assert np.all(np.isfinite(nll)) and nll[0] == nll[1] == nll[2] > 1e4
    grad = jax.grad(lambda h: jax.numpy.sum(negative_log_likelihood(m[:2], h, s[:2], "laplace", transformation)))(h[:2])
    np.testing.assert_array_equal(np.asarray(grad), 0.0)
    r, c = normal_residuals(m, h, s, transformation)
    np.testing.assert_allclose(0.5 * (r**2 + c**2) - NORMAL_OFFSET, nll, rtol=1e-12)
    positive = np.asarray(negative_log_likelihood(m, jax.numpy.array([1e-300, 1.0, 3.0]), s, "normal", transformation))
    assert np.all(np.isfinite(positive)) and positive[0] < nll[0]  # positive values untouched


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    target.mkdir()
    for f in (DATA / name).iterdir():
        (target / f.name).write_bytes(f.read_bytes())
    return target


def test_unsupported_features_are_named(tmp_path):
    folder = _copy(tmp_path, "Boehm_JProteomeRes2014")
    yaml = folder / "Boehm_JProteomeRes2014.yaml"
    # (a visualization file that the YAML lists and the folder lacks is not needed: never read)
    yaml.write_text(yaml.read_text().rstrip("\n") + "\n  visualization_files:\n  - no_such_plot.tsv\n")
    # a prior PEtab 1.0 does not define, and a normal prior without its sd
    table = folder / "parameters_Boehm_JProteomeRes2014.tsv"
    lines = table.read_text().splitlines()
    lines = [lines[0] + "\tobjectivePriorType\tobjectivePriorParameters"] + [
        line + ("\tlogUniform\t0;1" if i == 0 else "\t\t") for i, line in enumerate(lines[1:])]
    table.write_text("\n".join(lines) + "\n")
    with pytest.raises(sp.UnsupportedFeatureError, match="objectivePriorType 'logUniform'"):
        sp.load(yaml)
    table.write_text("\n".join(lines).replace("logUniform\t0;1", "normal\t0") + "\n")
    with pytest.raises(simkit.InputError, match="two numbers"):
        sp.load(yaml)
    # an SBML event whose trigger is not a comparison
    table.write_text("\n".join(line.rsplit("\t", 2)[0] for line in lines) + "\n")
    model = folder / "model_Boehm_JProteomeRes2014.xml"
    text = model.read_text()
    model.write_text(text.replace("</model>", _event("clamp", "<and/><true/><false/>", "") + "</model>"))
    with pytest.raises(sp.UnsupportedFeatureError, match="event 'clamp': only triggers that compare"):
        sp.load(yaml)
    # events triggered by the time and by the state in one model
    both = _event("at", "<geq/>TIME<cn> 40 </cn>", "") + _event("low", "<lt/><ci> STAT5A </ci><cn> 1 </cn>", "")
    model.write_text(text.replace("</model>", both.replace("</listOfEvents><listOfEvents>", "") + "</model>"))
    with pytest.raises(sp.UnsupportedFeatureError, match="both time-triggered and state-triggered"):
        sp.load(yaml)
    with pytest.raises(simkit.InputError, match="max_event_firings must be at least 0, got -1"):
        sp.load(yaml, max_event_firings=-1)
    with pytest.raises(simkit.InputTypeError, match="max_event_firings must be an int, got 1.5"):
        sp.load(yaml, max_event_firings=1.5)
    with pytest.raises(simkit.InputError, match="does not exist"):
        sp.load(folder / "no_such_problem.yaml")


def _event(eid: str, trigger: str, assignments: str) -> str:
    """An SBML listOfEvents with one event: ``trigger`` the MathML inside its ``apply``."""
    time = '<csymbol encoding="text" definitionURL="http://www.sbml.org/sbml/symbols/time"> time </csymbol>'
    trigger = trigger.replace("TIME", time)
    return (f'<listOfEvents><event id="{eid}" useValuesFromTriggerTime="true"><trigger initialValue="false" '
            f'persistent="true"><math xmlns="http://www.w3.org/1998/Math/MathML"><apply>{trigger}</apply></math>'
            f'</trigger><listOfEventAssignments>{assignments}</listOfEventAssignments></event></listOfEvents>')


def test_a_parameter_set_by_a_condition_keeps_its_number_from_an_initial_assignment(tmp_path):
    # b's initial assignment is a number: set elsewhere (a condition table), b stays a
    # parameter with that number as its value; c's is a formula of a: refused by name
    from simkit.petab.sbml import read_sbml

    math = '<math xmlns="http://www.w3.org/1998/Math/MathML">'
    path = tmp_path / "m.xml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?><sbml xmlns="http://www.sbml.org/sbml/level3/version1/core" '
        'level="3" version="1"><model id="m"><listOfParameters><parameter id="a" value="2" constant="true"/>'
        '<parameter id="b" constant="true"/><parameter id="c" constant="true"/></listOfParameters>'
        f'<listOfInitialAssignments><initialAssignment symbol="b">{math}<cn> 5 </cn></math></initialAssignment>'
        f'<initialAssignment symbol="c">{math}<apply><times/><cn> 2 </cn><ci> a </ci></apply></math>'
        '</initialAssignment></listOfInitialAssignments></model></sbml>')
    plain = read_sbml(path)
    assert "b" not in plain.parameter_ids and float(plain.assignments["b"]) == 5.0
    kept = read_sbml(path, set_elsewhere=["b"])
    assert "b" in kept.parameter_ids and kept.parameter_values["b"] == 5.0
    with pytest.raises(sp.UnsupportedFeatureError, match="parameter 'c': set by a condition and by an initial"):
        read_sbml(path, set_elsewhere=["c"])


_TWICE_STAT5B = "<apply><times/><cn> 2 </cn><ci> STAT5B </ci></apply>"


def _set(variable: str, mathml: str) -> str:
    """An SBML event assignment of ``variable`` (a MathML expression, without <math>)."""
    return (f'<eventAssignment variable="{variable}"><math xmlns="http://www.w3.org/1998/Math/MathML">{mathml}</math>'
            '</eventAssignment>')


def _with_events(tmp_path: Path, *events: str) -> tuple[Path, Any]:
    """Boehm's problem with the SBML ``events`` (each an `_event`) added: its YAML file and the
    loaded problem."""
    folder = _copy(tmp_path, "Boehm_JProteomeRes2014")
    model = folder / "model_Boehm_JProteomeRes2014.xml"
    listed = "".join(events).replace("</listOfEvents><listOfEvents>", "")
    model.write_text(model.read_text().replace("</model>", listed + "</model>"))
    yaml = folder / "Boehm_JProteomeRes2014.yaml"
    return yaml, sp.load(yaml)


def test_time_triggered_events_match_scipy_in_pieces(tmp_path, boehm):
    # at t = 40 (a measurement time: it sees the state after the event) STAT5A is set to twice
    # STAT5B; an event at t = 1000 (after the last measurement) never fires
    _, problem = _with_events(tmp_path, _event("boost", "<geq/>TIME<cn> 40 </cn>", _set("STAT5A", _TWICE_STAT5B)),
                              _event("late", "<geq/>TIME<cn> 1000 </cn>", _set("STAT5B", "<cn> 0 </cn>")))

    x = boehm.x_nominal
    ys = np.asarray(jax.jit(problem.simulate)(x))[0]  # (16 times, 8 states)
    ts = problem.layout.save_times
    theta = problem.layout.theta_nominal.copy()
    theta[problem.layout.estimated] = 10.0 ** x
    P = np.asarray(problem.layout.parameters.values(jax.numpy.asarray(theta)))[0]
    params = {n: P[k] for k, n in enumerate(problem.model.params)}
    y0 = np.asarray(ys[0])
    f = jax.jit(lambda t, y: problem.model.rhs(t, y, params))

    def piece(y, t0, t1, t_eval):
        return scipy.integrate.solve_ivp(lambda t, y: np.asarray(f(t, y)), (t0, t1), y, method="Radau",
                                         t_eval=t_eval, rtol=1e-11, atol=1e-13)
    before = piece(y0, 0.0, 40.0, np.append(ts[ts < 40], 40.0)).y.T
    y40 = before[-1].copy()
    y40[0] = 2 * y40[1]
    after = piece(y40, 40.0, ts[-1], ts[ts >= 40]).y.T
    expected = np.concatenate([before[:-1], after])
    np.testing.assert_allclose(ys, expected, rtol=1e-6, atol=1e-9 * np.abs(expected).max())
    assert not np.allclose(ys, np.asarray(jax.jit(boehm.simulate)(x))[0], rtol=1e-3)  # the event acted


def test_state_triggered_events_match_scipy_in_pieces(tmp_path, boehm):
    # STAT5A falls below 30 near t = 6: STAT5B is set to twice its value; nucpApB rises above
    # 100 near t = 125 (after the first firing): it is set to 50. Each fires once; a save time
    # after a firing sees its assignment. Where only one firing is allowed, the simulation fails.
    falls = _event("low", "<lt/><ci> STAT5A </ci><cn> 30 </cn>", _set("STAT5B", _TWICE_STAT5B))
    rises = _event("high", "<gt/><ci> nucpApB </ci><cn> 100 </cn>", _set("nucpApB", "<cn> 50 </cn>"))
    yaml, problem = _with_events(tmp_path, falls, rises)

    x = boehm.x_nominal
    simulate = jax.jit(problem.simulate)
    ys = np.asarray(simulate(x))[0]  # (16 times, 8 states)
    ts = problem.layout.save_times
    theta = problem.layout.theta_nominal.copy()
    theta[problem.layout.estimated] = 10.0 ** x
    P = np.asarray(problem.layout.parameters.values(jax.numpy.asarray(theta)))[0]
    params = {n: P[k] for k, n in enumerate(problem.model.params)}
    f = jax.jit(lambda t, y: problem.model.rhs(t, y, params))

    def low(t, y):
        return y[0] - 30.0
    low.terminal, low.direction = True, -1

    def high(t, y):
        return y[6] - 100.0
    high.terminal, high.direction = True, 1

    pieces, y, t, times = [], np.asarray(ys[0]), 0.0, []
    for event, index, value in ((low, 1, lambda y: 2 * y[1]), (high, 6, lambda y: 50.0), (None, None, None)):
        run = scipy.integrate.solve_ivp(lambda t, y: np.asarray(f(t, y)), (t, ts[-1]), y, method="Radau",
                                        events=event, dense_output=True, rtol=1e-11, atol=1e-13)
        end = run.t_events[0][0] if event is not None else ts[-1]
        inside = (ts >= t) & ((ts < end) if event is not None else (ts <= end))
        pieces.append(run.sol(ts[inside]).T)
        y = run.sol(end).copy()
        if event is not None:
            y[index] = value(y)
            times.append(end)
        t = end
    expected = np.concatenate(pieces)
    assert 5.0 < times[0] < 10.0 and 120.0 < times[1] < 160.0, times  # each between two save times
    np.testing.assert_allclose(ys, expected, rtol=1e-6, atol=1e-8 * np.abs(expected).max())
    assert np.isfinite(float(problem.objective(x)))
    once = sp.load(yaml, max_event_firings=1)
    assert float(once.objective(x)) == np.inf


def test_profile_interval_is_where_the_likelihood_ratio_crosses_the_chi_square_quantile():
    # a quadratic profile: 2 (cost - best) = ((v - 1) / 0.5)^2 crosses 3.8415 at 1 -/+ 0.98
    values = np.linspace(-1.0, 3.0, 41)
    cost = 10.0 + 0.5 * ((values - 1.0) / 0.5) ** 2
    prof = sp.PetabProfile(name="a", values=values, cost=cost, x=values[:, None], status=np.zeros(41, int),
                           best_cost=10.0, best_value=1.0)
    low, high = prof.interval(0.95)
    half = 0.5 * np.sqrt(3.841458820694124)
    np.testing.assert_allclose([low, high], [1.0 - half, 1.0 + half], atol=2e-3)  # linear interpolation on a 0.1 grid
    flat = prof._replace(cost=np.where(values > 1.0, 10.0, cost))  # not determined above
    assert flat.interval(0.95)[1] == np.inf
    with pytest.raises(simkit.InputError, match="level must lie in"):
        prof.interval(1.5)


def test_fit_passes_its_tolerances_to_least_squares():
    # Rosenbrock's residuals from (-1.2, 1), and two constant ones (a cost of 1 at the minimum,
    # for a relative ftol): the defaults (gtol 1e-6, ftol 1e-8) reach the minimum (1, 1); a
    # looser gtol, or ftol with gtol 0, stops least squares after fewer steps
    from simkit.petab import PetabProblem

    problem = PetabProblem.__new__(PetabProblem)  # only what fitting reads
    problem._residuals = lambda x: jnp.array([1.0 - x[0], 10.0 * (x[1] - x[0] ** 2), 1.0, 1.0])
    problem.parameter_ids, problem._n_terms = ("a", "b"), 2
    problem.lower, problem.upper = np.full(2, -5.0), np.full(2, 5.0)
    start = np.array([[-1.2, 1.0]])
    default = problem.fit(start, method="least_squares")
    np.testing.assert_allclose(default.x[0], [1.0, 1.0], atol=1e-5)
    assert default.status[0] == 0
    for loose in (problem.fit(start, gtol=1.0), problem.fit(start, gtol=0.0, ftol=1e-2)):
        assert loose.status[0] == 0 and 0 < loose.n_iter[0] < default.n_iter[0]
        assert np.max(np.abs(loose.x[0] - 1.0)) > np.max(np.abs(default.x[0] - 1.0))


def test_profile_refuses_unknown_parameters_and_values_outside_the_bounds(boehm):
    fit = sp.PetabFit(x=boehm.x_nominal[None, :], cost=np.array([138.22]), status=np.zeros(1, int),
                      n_iter=np.zeros(1, int), at_bound=np.zeros((1, 9), int), starts=boehm.x_nominal[None, :],
                      parameter_ids=boehm.parameter_ids)
    with pytest.raises(simkit.InputError, match="not an estimated parameter"):
        boehm.profile("nope", [1.0], fit)
    with pytest.raises(simkit.InputError, match="within its bounds"):
        boehm.profile("k_phos", [6.0], fit)
    for bad in ([np.nan], []):  # (NaN passes a comparison with the bounds)
        with pytest.raises(simkit.InputError, match="non-empty 1-d array within its bounds"):
            boehm.profile("k_phos", bad, fit)


PRIORS = {  # parameter: (objectivePriorType, objectivePriorParameters); k_phos's x is its log10
    "Epo_degradation_BaF3": ("uniform", (0.0, 1.0)),
    "k_exp_hetero": ("normal", (0.0, 1e-3)),
    "k_exp_homo": ("laplace", (0.01, 0.005)),
    "k_imp_hetero": ("logNormal", (-4.0, 1.5)),
    "k_imp_homo": ("logLaplace", (11.0, 2.0)),
    "k_phos": ("parameterScaleUniform", (-5.0, 5.0)),
    "sd_pSTAT5A_rel": ("parameterScaleNormal", (0.5, 0.3)),
    "sd_pSTAT5B_rel": ("parameterScaleLaplace", (1.0, 0.5)),
}


def _expected_prior(kind, a, b, x, v):
    """-log density of SciPy's distribution (the parameterScale types at the log10 value x)."""
    import scipy.stats as st

    return -{
        "uniform": lambda: st.uniform.logpdf(v, a, b - a),
        "normal": lambda: st.norm.logpdf(v, a, b),
        "laplace": lambda: st.laplace.logpdf(v, a, b),
        "logNormal": lambda: st.lognorm.logpdf(v, s=b, scale=np.exp(a)),
        "logLaplace": lambda: st.laplace.logpdf(np.log(v), a, b) - np.log(v),  # density of v itself
        "parameterScaleUniform": lambda: st.uniform.logpdf(x, a, b - a),
        "parameterScaleNormal": lambda: st.norm.logpdf(x, a, b),
        "parameterScaleLaplace": lambda: st.laplace.logpdf(x, a, b),
    }[kind]()


def test_objective_priors_match_scipy_and_add_to_the_likelihood(tmp_path, boehm):
    from simkit.petab.noise import NORMAL_OFFSET
    from simkit.petab.priors import SQUARES, Priors, negative_log_prior

    # a problem with the priors that have a sum-of-squares form (Levenberg-Marquardt's)
    folder = _copy(tmp_path, "Boehm_JProteomeRes2014")
    table = folder / "parameters_Boehm_JProteomeRes2014.tsv"
    lines = table.read_text().splitlines()
    rows = [lines[0] + "\tobjectivePriorType\tobjectivePriorParameters"]
    for line in lines[1:]:
        kind, (a, b) = PRIORS.get(line.split("\t")[0], ("", (None, None)))
        rows.append(line + (f"\t{kind}\t{a!r};{b!r}" if kind in SQUARES else "\t\t"))
    table.write_text("\n".join(rows) + "\n")
    problem = sp.load(folder / "Boehm_JProteomeRes2014.yaml")

    x = boehm.x_nominal + np.linspace(-0.2, 0.2, len(boehm.x_nominal))
    v = 10.0 ** x
    expected = {p: _expected_prior(PRIORS[p][0], *PRIORS[p][1], x[i], v[i])
                for i, p in enumerate(problem.parameter_ids) if p in PRIORS}
    smooth = sum(e for p, e in expected.items() if PRIORS[p][0] in SQUARES)
    assert float(problem.negative_log_prior(x)) == pytest.approx(smooth, rel=1e-12)
    value, likelihood, r = jax.jit(lambda x: (problem.objective(x), boehm.objective(x), problem._residuals(x)))(x)
    assert float(value) == pytest.approx(float(likelihood) + smooth, rel=1e-12)
    # half the squares less the offsets (a pair per measurement and per prior) is the objective
    assert 0.5 * float(np.sum(np.asarray(r) ** 2)) - r.shape[0] // 2 * NORMAL_OFFSET == pytest.approx(float(value),
                                                                                                      rel=1e-10)
    outside = x.copy()
    outside[0] = 0.5  # 10**0.5 is outside the uniform prior's (0, 1)
    assert float(problem.negative_log_prior(outside)) == np.inf

    # every type, the Laplace ones too (not smooth: no sum-of-squares form, fits use L-BFGS-B)
    every = Priors(tuple(PRIORS.get(p, ("",))[0] for p in problem.parameter_ids),
                   np.array([PRIORS.get(p, ("", (0.0, 0.0)))[1] for p in problem.parameter_ids]))
    assert not every.squares
    assert float(negative_log_prior(every, x, v)) == pytest.approx(sum(expected.values()), rel=1e-12)


def test_starts_follow_the_initialization_priors(tmp_path, boehm):
    # PEtab's initializationPriorType says how starts are drawn; without one, uniform within
    # the bounds on the scale (the draws of the other parameters are unchanged by it)
    folder = _copy(tmp_path, "Boehm_JProteomeRes2014")
    table = folder / "parameters_Boehm_JProteomeRes2014.tsv"
    lines = table.read_text().splitlines()
    cells = {"k_phos": "parameterScaleNormal\t4.2;0.1", "k_exp_homo": "logNormal\t-5.0;0.5",
             "Epo_degradation_BaF3": "parameterScaleUniform\t"}  # (no parameters: the bounds)
    rows = [lines[0] + "\tinitializationPriorType\tinitializationPriorParameters"]
    rows += [line + "\t" + cells.get(line.split("\t")[0], "\t") for line in lines[1:]]
    table.write_text("\n".join(rows) + "\n")
    problem = sp.load(folder / "Boehm_JProteomeRes2014.yaml")
    starts, uniform = problem.sample_starts(4000, seed=3), boehm.sample_starts(4000, seed=3)
    phos, homo = problem.parameter_ids.index("k_phos"), problem.parameter_ids.index("k_exp_homo")
    assert abs(starts[:, phos].mean() - 4.2) < 0.01 and abs(starts[:, phos].std() - 0.1) < 0.01
    # log10 of a log-normal value: normal with mean -5 / ln 10 and sd 0.5 / ln 10
    assert abs(starts[:, homo].mean() + 5.0 / np.log(10)) < 0.01
    assert abs(starts[:, homo].std() - 0.5 / np.log(10)) < 0.01
    others = [i for i in range(len(problem.parameter_ids)) if i not in (phos, homo)]
    np.testing.assert_array_equal(starts[:, others], uniform[:, others])
    assert ((starts >= problem.lower) & (starts <= problem.upper)).all()


def test_a_uniform_prior_without_parameters_spans_the_bounds_on_the_scale():
    import pandas as pd

    from simkit.petab.layout import _missing
    from simkit.petab.priors import read_priors

    table = pd.DataFrame({"parameterScale": ["log10", "lin"], "lowerBound": [1e-3, -2.0], "upperBound": [1e3, 5.0],
                          "objectivePriorType": ["parameterScaleUniform"] * 2}, index=["a", "b"])
    priors = read_priors(table, np.array([0, 1]), _missing)
    np.testing.assert_allclose(priors.parameters, [[-3.0, 3.0], [-2.0, 5.0]])
    # for the starts it is the default draw: no prior recorded
    table = table.rename(columns={"objectivePriorType": "initializationPriorType"})
    assert read_priors(table, np.array([0, 1]), _missing, use="initialization").types == ("", "")


@pytest.mark.parametrize("name", ["Boehm_JProteomeRes2014", "Bruno_JExpBot2016"])
def test_the_objectives_gradient_matches_central_differences(name):
    """Model parameters and initial states that cannot move with the estimated parameters enter
    the solves as constants (`simkit.petab.objective.moving_inputs`); those that can must keep
    their derivatives. Bruno's initial states move with its parameters, Boehm's do not.
    Central differences of step 1e-4 on the parameters' scales, solves at rtol 1e-11: agreement
    to 1e-5 of the gradient's largest entry."""
    from simkit.petab.layout import build_layout, read_problem
    from simkit.petab.objective import moving_inputs

    yaml = DATA / name / f"{name}.yaml"
    tables, sbml = read_problem(yaml)
    params, states = moving_inputs(sbml, build_layout(tables, sbml))
    assert states == (name == "Bruno_JExpBot2016") and 0 < params.sum() < params.size
    problem = sp.load(yaml, rtol=1e-11, atol=1e-13)
    x = 0.9 * np.asarray(problem.x_nominal) + 0.1 * np.asarray(problem.sample_starts(1, seed=3)[0])
    _, grad = problem.value_and_grad(x)
    objective = jax.jit(problem.objective)
    h = 1e-4
    central = np.array([(float(objective(x + h * e)) - float(objective(x - h * e))) / (2 * h)
                        for e in np.eye(x.size)])
    np.testing.assert_allclose(np.asarray(grad), central, rtol=0, atol=1e-5 * np.abs(central).max())
