"""simkit.petab against the Benchmark-Models-PEtab collection's reference values.

The reference log-likelihoods at the nominal parameters are those AMICI's test suite keeps for
the collection (tests/benchmark_models/benchmark_models.yaml of AMICI, "llh"); simkit's
objective is the negative log-likelihood, so it must equal ``-llh``.
"""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("petab")
pytest.importorskip("libsbml")
pytest.importorskip("sbmlmath")
pytest.importorskip("sympy")

import jax  # noqa: E402

import simkit  # noqa: E402
import simkit.petab as sp  # noqa: E402
from simkit.petab.noise import negative_log_likelihood  # noqa: E402

DATA = Path(__file__).parent / "data" / "petab"
REFERENCE_LLH = {  # AMICI's reference values of the collection at the nominal parameters
    "Boehm_JProteomeRes2014": -138.22199693517703,
    "Bruno_JExpBot2016": 46.688176988431806,
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


def test_bruno_objective_at_nominal():
    # six conditions, initial states set by estimated parameters in the condition table,
    # numeric noise overrides in the measurement table, default noise model columns left empty
    problem = sp.load(DATA / "Bruno_JExpBot2016" / "Bruno_JExpBot2016.yaml")
    assert len(problem.conditions) == 6
    value = float(jax.jit(problem.objective)(problem.x_nominal))
    reference = -REFERENCE_LLH["Bruno_JExpBot2016"]
    assert abs(value - reference) <= 1e-6 * abs(reference)


@pytest.mark.parametrize("distribution", ["normal", "laplace"])
@pytest.mark.parametrize("transformation", ["lin", "log", "log10"])
def test_noise_models_match_the_petab_library(distribution, transformation):
    from petab.v1.calculate import calculate_single_llh

    m, h, s = np.array([0.7, 2.5, 13.0]), np.array([0.9, 2.0, 11.0]), np.array([0.3, 1.1, 0.05])
    ours = np.asarray(negative_log_likelihood(m, h, s, distribution, transformation))
    theirs = [-calculate_single_llh(*a, transformation, distribution, c) for *a, c in zip(m, h, s)]
    np.testing.assert_allclose(ours, theirs, rtol=1e-13)


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
    # a prior on a parameter
    table = folder / "parameters_Boehm_JProteomeRes2014.tsv"
    lines = table.read_text().splitlines()
    lines = [lines[0] + "\tobjectivePriorType\tobjectivePriorParameters"] + [
        line + ("\tnormal\t0;1" if i == 0 else "\t\t") for i, line in enumerate(lines[1:])]
    table.write_text("\n".join(lines) + "\n")
    with pytest.raises(sp.UnsupportedFeatureError, match="objectivePriorType"):
        sp.load(yaml)
    # an SBML event
    table.write_text("\n".join(line.rsplit("\t", 2)[0] for line in lines) + "\n")
    model = folder / "model_Boehm_JProteomeRes2014.xml"
    event = ('<listOfEvents><event id="pulse" useValuesFromTriggerTime="true"><trigger initialValue="false" '
             'persistent="true"><math xmlns="http://www.w3.org/1998/Math/MathML"><apply><gt/><csymbol '
             'encoding="text" definitionURL="http://www.sbml.org/sbml/symbols/time"> time </csymbol>'
             '<cn> 10 </cn></apply></math></trigger></event></listOfEvents>')
    model.write_text(model.read_text().replace("</model>", event + "</model>"))
    with pytest.raises(sp.UnsupportedFeatureError, match="SBML events"):
        sp.load(yaml)
    with pytest.raises(simkit.InputError, match="does not exist"):
        sp.load(folder / "no_such_problem.yaml")


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
