"""simkit.fit: synthetic problems with known truth, SciPy's least_squares as the yardstick,
likelihood losses, multi-start, profiles, identifiability, several experiments, a PDE
inverse problem. Limits, failed solves and count data: test_limits.py; CSV files:
test_csv.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit import fitting, reference
from simkit import stencil as sk

LOGISTIC = simkit.ODEModel(rhs=lambda t, y, p: p["r"] * y * (1 - y / p["K"]), params={"r": 0.5, "K": 10.0},
                           y0=[0.5], state_names=("N",), name="logistic")
TRUTH = {"r": 0.8, "K": 12.0}
TIMES = np.linspace(0.0, 10.0, 16)


def _synthetic(noise=0.15, seed=1, model=LOGISTIC, truth=TRUTH, times=TIMES):
    clean = np.asarray(simkit.solve(model, (times[0], times[-1]), params=truth, saveat=times, rtol=1e-12,
                                    atol=1e-12).ys)
    return clean + noise * np.random.default_rng(seed).standard_normal(clean.shape)


@pytest.fixture(scope="module")
def logistic_fit():
    data = simkit.Dataset(TIMES, _synthetic(), observed=("N",))
    return data, simkit.fit(LOGISTIC, data, free=["r", "K"], rtol=1e-11, atol=1e-12)  # SciPy's accuracy


def test_least_squares_matches_scipy_and_covers_the_truth(logistic_fit):
    data, result = logistic_fit
    assert result.converged
    ref = reference.least_squares(LOGISTIC, data, free=["r", "K"])
    assert abs(result.cost - ref["cost"]) <= 1e-8 * ref["cost"]
    for name in ("r", "K"):
        assert abs(result.estimates[name] - ref["x"][name]) <= 1e-5 * abs(ref["x"][name])
        assert abs(result.estimates[name] - TRUTH[name]) < 3 * result.stderr[name]  # truth within 3 SE
    # covariance from the Jacobian and from the Hessian agree near a good fit
    np.testing.assert_allclose(np.sqrt(np.diag(result.cov_hessian)), list(result.stderr.values()), rtol=0.05)
    text = str(result)
    assert "r" in text and "95% interval" in text and "converged" in text


def test_optimizer_is_the_argument_and_solver_its_deprecated_name(logistic_fit):
    data, result = logistic_fit
    with pytest.warns(DeprecationWarning, match="optimizer="):  # same structure: no new compilation
        old = simkit.fit(LOGISTIC, data, free=["r", "K"], rtol=1e-11, atol=1e-12, solver=fitting.LevenbergMarquardt())
    assert old.estimates == result.estimates and old.optimizer_name == "LevenbergMarquardt"
    with pytest.warns(DeprecationWarning), pytest.raises(simkit.InputError, match="optimizer= only"):
        simkit.fit(LOGISTIC, data, optimizer=fitting.LevenbergMarquardt(), solver=fitting.GaussNewton())
    assert type(result.problem.program).__name__ == "FitProgram"


def test_optimistix_and_gauss_newton_reach_the_same_optimum(logistic_fit):
    import optimistix as optx

    data, result = logistic_fit
    other = simkit.fit(LOGISTIC, data, free=["r", "K"], rtol=1e-11, atol=1e-12,
                       optimizer=fitting.Optimistix(optx.LevenbergMarquardt(rtol=1e-12, atol=1e-12)))
    gauss_newton = simkit.fit(LOGISTIC, data, free=["r", "K"], rtol=1e-11, atol=1e-12, optimizer=fitting.GaussNewton())
    for alternative in (other, gauss_newton):
        assert abs(alternative.cost - result.cost) <= 1e-9 * result.cost
        for name in ("r", "K"):
            assert abs(alternative.estimates[name] - result.estimates[name]) <= 1e-6 * abs(result.estimates[name])


def test_profile_likelihood_and_plots(logistic_fit, tmp_path):
    _, result = logistic_fit
    prof = result.profile("r", n=9)
    assert prof["delta"].min() < 1e-6 and prof["delta"][0] > prof["threshold"]
    lo, hi = prof["interval"]
    wald = result.intervals["r"]
    assert lo < result.estimates["r"] < hi
    assert abs((hi - lo) / (wald[1] - wald[0]) - 1) < 0.15  # near-quadratic here
    import matplotlib.pyplot as plt

    axes = result.plot()
    assert len(axes[0, 0].get_lines()) == 2
    result.plot_correlation()
    plt.gcf().savefig(tmp_path / "corr.png")
    plt.close("all")


def test_a_profile_of_few_values_runs_on_the_host_where_the_default_device_is_an_accelerator(logistic_fit,
                                                                                            monkeypatch):
    """Each value is a fit from one start: placed by the rule for fits (`simkit.placement`)."""
    from simkit import placement

    _, result = logistic_fit
    chosen = []
    real = placement.placed
    monkeypatch.setattr(placement, "placed", lambda device: chosen.append(device) or real(device))
    monkeypatch.setattr(placement.jax, "default_backend", lambda: "tpu")  # an accelerator, pretended
    prof = result.profile("r", n=9)  # (the program of the test above)
    assert chosen == [jax.local_devices(backend="cpu")[0]] and prof["delta"].min() < 1e-6


def test_profile_values_that_are_not_finite_are_refused_before_compiling(logistic_fit):
    # a NaN among the values made every profile value NaN (and the interval with it)
    _, result = logistic_fit
    with pytest.raises(simkit.InputError, match=r"values must be finite; \[nan\] at positions \[1\]"):
        result.profile("r", values=[0.7, np.nan, 0.9])
    with pytest.raises(simkit.InputError, match=r"values must be finite; \[inf\]"):
        result.profile("r", values=[0.7, np.inf])
    with pytest.raises(simkit.InputError, match=r"non-empty 1-D sequence"):
        result.profile("r", values=[[0.7, 0.8]])


def test_an_observation_function_of_the_wrong_shape_is_refused_before_compiling():
    """It was found only after the whole fit had run (or broadcast in silence)."""
    data = simkit.Dataset(TIMES, _synthetic(), observed=lambda y, p: y[0] * 2.0, names=("twice",))
    with pytest.raises(simkit.ShapeError, match=r"gives shape \(\), but the dataset has 1 value column\(s\): it must "
                                                r"give shape \(1,\).*y\[1:2\] rather than y\[1\]"):
        simkit.fit(LOGISTIC, data, free=["r", "K"])
    both = simkit.Dataset(TIMES, _synthetic(), observed=lambda y, p: jnp.stack([y[0], y[0]]))
    with pytest.raises(simkit.ShapeError, match=r"gives shape \(2,\)"):
        simkit.fit(LOGISTIC, both, free=["r", "K"])
    broken = simkit.Dataset(TIMES, _synthetic(), observed=lambda y, p: y[0:1] * p["missing"])
    with pytest.raises(simkit.InputError, match=r"observed\(y, params\) fails on model 'logistic'.*KeyError"):
        simkit.fit(LOGISTIC, broken, free=["r", "K"])


def test_a_dataset_is_not_built_inside_a_transform():
    import jax

    with pytest.raises(simkit.InputTypeError, match=r"a Dataset holds observations as NumPy arrays.*traced"):
        jax.jit(lambda v: simkit.Dataset(TIMES[:2], v, observed=("N",)).n_points)(jnp.ones(2))


def test_profile_of_a_single_free_parameter_is_its_cost_curve():
    # nothing to minimise over: the profile is the cost with r set (it raised a TypeError: an
    # empty float index array); for one parameter near a good fit it is close to quadratic
    data = simkit.Dataset(TIMES, _synthetic(), observed=("N",))
    result = simkit.fit(LOGISTIC.with_params(K=TRUTH["K"]), data, free=["r"], rtol=1e-10, atol=1e-12)
    prof = result.profile("r", n=7)
    assert prof["values"].shape == (7,) and np.all(np.isfinite(prof["delta"]))
    assert prof["delta"].min() < 1e-6 and prof["delta"][0] > prof["threshold"] < prof["delta"][-1]
    lo, hi = prof["interval"]
    assert lo < result.estimates["r"] < hi
    assert abs((hi - lo) / (result.intervals["r"][1] - result.intervals["r"][0]) - 1) < 0.15


BOX = {"r": (0.01, 5.0), "K": (1.0, 50.0)}


def test_multistart_keeps_every_cost_and_returns_the_best():
    data = simkit.Dataset(TIMES, _synthetic(seed=3), observed=("N",))
    result = simkit.fit(LOGISTIC, data, free=["r", "K"], bounds=BOX, starts=6)
    assert result.start_costs.shape == (6,) and result.starts.shape == (6, 2)
    assert result.cost == pytest.approx(np.nanmin(result.start_costs))
    assert np.sum(np.isclose(result.start_costs, result.cost, rtol=1e-6)) >= 3  # most starts agree
    assert 0.01 < result.estimates["r"] < 5.0
    assert result.converged and set(result.start_status) == {fitting.FitStatus.CONVERGED}
    # the covariance from the Jacobian Levenberg-Marquardt kept (in the bounded transforms'
    # coordinates, chained to the natural ones) equals one from a freshly compiled Jacobian
    from simkit.fitting.uncertainty import uncertainty

    fresh = uncertainty(result.problem, result.theta, result.confidence)
    np.testing.assert_allclose(result.cov, fresh["cov"], rtol=1e-7)
    ax = result.plot_waterfall()
    assert len(ax.get_lines()[0].get_xdata()) == 6
    # devices=: the starts split between two CPU devices end where they end on one (each
    # share runs the one-device program); the projected optimiser and one on transforms
    for optimizer in (None, fitting.LevenbergMarquardt()):
        one = result if optimizer is None else simkit.fit(LOGISTIC, data, free=["r", "K"], bounds=BOX, starts=6,
                                                          optimizer=optimizer)
        split = simkit.fit(LOGISTIC, data, free=["r", "K"], bounds=BOX, starts=6, optimizer=optimizer,
                           devices=jax.local_devices()[:2])
        np.testing.assert_array_equal(split.start_costs, one.start_costs)
        np.testing.assert_array_equal(split.start_status, one.start_status)
    with pytest.raises(simkit.InputError, match="fit: devices must be"):
        simkit.fit(LOGISTIC, data, free=["r", "K"], bounds=BOX, starts=6, devices="cpu")


def test_levenberg_marquardt_evaluates_the_residuals_once_per_point():
    """jaxopt's update evaluates the residuals at an accepted point twice (to test the step,
    then again to move there); the driver keeps one: one evaluation per iteration, plus one
    for the Jacobian's (batched) tangents and one at the start."""
    import jax

    calls = []

    def residuals(x):
        jax.debug.callback(lambda: calls.append(1))  # runs once per evaluation of the primal
        return jnp.array([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0]])  # Rosenbrock's

    x, iterations, converged = fitting.LevenbergMarquardt().run(residuals, jnp.array([-1.2, 1.0]))
    jax.effects_barrier()
    assert bool(converged) and np.allclose(x, [1.0, 1.0], atol=1e-8)
    n = int(iterations)
    assert n >= 5 and len(calls) <= 2 * n + 3, (n, len(calls))  # 3 n + 3 before



def test_levenberg_marquardt_stops_whatever_the_parameters_scales():
    """Residuals whose parameters differ by 1e9 in sensitivity (a logistic fit's r ~ 1e-3
    beside K ~ 1e6): the predicted gain took pinv of the unscaled J^T J, whose cutoff dropped
    the insensitive direction, and a fit "converged" at its start value of K with 200x the
    optimum's cost (found by probing). With only that direction left to fit, the test must
    not pass; the run reaches the optimum."""
    scale = jnp.array([1e3, 1e-6])

    def residuals(x):
        return scale * x - 1.0  # optimum x = (1e-3, 1e6)

    opt = fitting.LevenbergMarquardt()
    state = opt.init(residuals, jnp.array([1e-3, 0.0]), None, None)  # the first parameter already at its optimum
    assert not bool(opt.converged(state))


def test_a_fit_of_parameters_of_very_different_sizes_reaches_scipys_optimum(logistic_fit):
    """The probe's case through `fit` (the logistic model's program again: r ~ 1e-3 beside
    K ~ 1e6, unbounded): it had stopped at K's start, 5e5, "converged" with 200x the cost."""
    times = np.linspace(100.0, 8000.0, 16)
    model = LOGISTIC.replace(params={"r": 2e-3, "K": 5e5}, y0=np.array([1e3]))
    data = simkit.Dataset(times, _synthetic(0.0, model=model, truth={"r": 1e-3, "K": 1e6}, times=times)
                          * (1 + 0.03 * np.random.default_rng(4).standard_normal((16, 1))), observed=("N",), t0=0.0)
    result = simkit.fit(model, data, free=["r", "K"], rtol=1e-11, atol=1e-12)
    ref = reference.least_squares(model, data, free=["r", "K"])
    assert result.converged and abs(result.cost - ref["cost"]) <= 1e-6 * ref["cost"], (result.cost, ref["cost"])
    for name in ("r", "K"):
        assert abs(result.estimates[name] - ref["x"][name]) <= 1e-4 * abs(ref["x"][name])

def test_multistart_reports_the_best_starts_own_status():
    """Some starts stop at the iteration limit; the best one reached the optimum and says
    so, as the same start run alone does (the limit is traced: no new compilation)."""
    data = simkit.Dataset(TIMES, _synthetic(seed=3), observed=("N",))
    result = simkit.fit(LOGISTIC, data, free=["r", "K"], bounds=BOX, starts=6, max_iterations=12)
    best = int(np.argmin(result.start_costs))
    assert fitting.FitStatus.MAX_ITERATIONS in result.start_status  # the limit bit
    assert result.status == result.start_status[best] == fitting.FitStatus.CONVERGED
    assert result.converged and result.message == "converged" and result.iterations < 12
    assert "starts: " in str(result) and "at the iteration limit" in str(result)
    alone = simkit.fit(LOGISTIC, data, free=["r", "K"], bounds=BOX, initial=dict(zip(["r", "K"], result.starts[best])),
                       max_iterations=12)
    assert alone.status == result.status and abs(alone.iterations - result.iterations) <= 1
    assert alone.cost == pytest.approx(result.cost, rel=1e-10)


def test_likelihoods_match_scipy_stats():
    from scipy import stats

    rng = np.random.default_rng(11)
    mu = rng.uniform(0.5, 30.0, 12)
    y = rng.poisson(mu).astype(float)
    mask = np.ones(12, bool)
    mask[3] = False
    one = np.ones(12)
    got = float(simkit.Poisson().nll(jnp.asarray(mu), jnp.asarray(y), one, jnp.asarray(mask), 0.0))
    assert got == pytest.approx(-stats.poisson.logpmf(y, mu)[mask].sum(), rel=1e-12)
    k = 3.5  # scipy's nbinom(n=k, p=k/(k+mu)): mean mu, variance mu + mu^2/k
    got = float(simkit.NegativeBinomial().nll(jnp.asarray(mu), jnp.asarray(y), one, jnp.asarray(mask), np.log(k)))
    assert got == pytest.approx(-stats.nbinom.logpmf(y, k, k / (k + mu))[mask].sum(), rel=1e-12)
    s = 0.7
    got = float(simkit.GaussianNLL().nll(jnp.asarray(mu), jnp.asarray(y), one, jnp.asarray(mask), np.log(s)))
    assert got == pytest.approx(-stats.norm.logpdf(y, mu, s)[mask].sum(), rel=1e-12)


def test_gaussian_likelihood_estimates_the_noise_scale():
    """Logistic data with the Gaussian likelihood estimating the noise scale (BFGS, the
    default for likelihoods). Counts: tests/fitting/test_limits.py."""
    gauss = simkit.Dataset(TIMES, _synthetic(noise=0.3, seed=5), observed=("N",))
    result = simkit.fit(LOGISTIC, gauss, free=["r", "K"], loss=simkit.GaussianNLL(), initial={"r": 0.7, "K": 11.0})
    assert result.converged and result.optimizer_name == "BFGS"
    assert abs(result.estimates["noise"] - 0.3) < 3 * result.stderr["noise"]


def test_identifiability_hint_names_the_confounded_parameters():
    model = simkit.ODEModel(rhs=lambda t, y, p: -p["a"] * p["b"] * y, params={"a": 1.0, "b": 0.5}, y0=[2.0],
                            state_names=("y",), name="product")
    times = np.linspace(0, 4, 9)
    data = simkit.Dataset(times, 2.0 * np.exp(-0.6 * times)[:, None] * (1 + 0.01 * np.sin(times))[:, None],
                          observed=("y",))
    result = simkit.fit(model, data, free=["a", "b"])
    assert result.hints and "a" in result.hints[0] and "b" in result.hints[0]
    # only a * b is determined: neither has a standard error (the pseudo-inverse dropped the
    # undetermined direction and reported 1 % for each)
    assert result.stderr == {"a": np.inf, "b": np.inf} and result.intervals["a"] == (-np.inf, np.inf)
    assert "undefined" in result.message and np.isnan(result.corr[0, 1])
    # as many points as parameters: no residual variance, no standard errors (SciPy's curve_fit: inf)
    two = simkit.fit(model, simkit.Dataset(times[1:3], data.values[1:3], observed=("y",)), free=["b"],
                     initial_state="fit")
    assert two.stderr == {"b": np.inf, "y0:y": np.inf} and "2 data point(s) for 2 parameter(s)" in two.hints[0]


def test_least_squares_is_free_of_the_data_scale():
    # decay data of size 1e-6: J^T r ~ 1e-12 was under the absolute gradient tolerance, and
    # Levenberg-Marquardt reported "converged" at its start (k = 1.5 against 0.7); its test is
    # now MINPACK's cosine. The same fit as at scale 1, against SciPy's least_squares
    from scipy.optimize import least_squares

    rng = np.random.default_rng(3)
    t = np.linspace(0.2, 4.0, 12)
    y = 2e-6 * np.exp(-0.7 * t) * (1 + 0.01 * rng.standard_normal(t.size))
    model = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.5}, y0=[2e-6], state_names=("u",),
                            name="small_decay")
    result = simkit.fit(model, simkit.Dataset(t, y[:, None], observed=("u",), t0=0.0), free=["k"], atol=1e-20)
    ref = least_squares(lambda k: 2e-6 * np.exp(-k[0] * t) - y, [1.5], xtol=1e-15, ftol=1e-15, gtol=1e-15)
    assert result.converged and result.iterations > 0
    np.testing.assert_allclose(result.estimates["k"], ref.x[0], rtol=1e-5)  # the solves: rtol 1e-8


def _decay(t, y, p):
    return -p["k"] * y


@pytest.mark.parametrize("optimizer", [fitting.BFGS(), fitting.LBFGS(), fitting.LBFGSB()], ids=lambda o: type(o).__name__)
def test_scalar_optimisers_are_free_of_the_data_scale(optimizer):
    # the least-squares cost of data of size 1e-6 is ~1e-13, under the scalar optimisers'
    # absolute tolerances: all three reported "converged" at the start (k = 1.5 against 0.7);
    # data of size 1e6 (a cost of 1e12) left L-BFGS's gradient test out of reach. They now
    # see the cost in units of the data's mean square: SciPy's estimate at every scale
    from scipy.optimize import least_squares

    rng = np.random.default_rng(3)
    t = np.linspace(0.2, 4.0, 12)
    shape = np.exp(-0.7 * t) * (1 + 0.01 * rng.standard_normal(t.size))
    ref = least_squares(lambda k: np.exp(-k[0] * t) - shape, [1.5], xtol=1e-15, ftol=1e-15, gtol=1e-15).x[0]
    for scale in (2e-6, 2e6):  # one compiled fit for both: only numbers change
        model = simkit.ODEModel(rhs=_decay, params={"k": 1.5}, y0=[scale], state_names=("u",), name="scaled_decay")
        result = simkit.fit(model, simkit.Dataset(t, scale * shape[:, None], observed=("u",), t0=0.0), free=["k"],
                            bounds={"k": (0.01, 10.0)}, optimizer=optimizer, loss=simkit.LeastSquares(),
                            atol=1e-12 * scale)
        assert result.converged and result.iterations > 0, (scale, result.status)
        np.testing.assert_allclose(result.estimates["k"], ref, rtol=1e-5, err_msg=f"scale {scale}")


def test_sigma_is_refused_by_losses_that_do_not_read_it():
    # GaussianNLL estimates one noise scale: the datasets' sigma was ignored in silence
    times = np.linspace(0.5, 4, 8)
    model = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[50.0], state_names=("u",),
                            name="decay")
    data = simkit.Dataset(times, np.round(50 * np.exp(-0.7 * times))[:, None], observed=("u",), sigma=1.0,
                          name="weighted")
    for loss in (simkit.GaussianNLL(), simkit.NegativeBinomial()):
        with pytest.raises(simkit.InputError, match=rf"\['weighted'\] give sigma, which {type(loss).__name__} does"):
            simkit.fit(model, data, loss=loss)


def test_datasets_with_and_without_sigma_are_refused():
    times = np.linspace(0.5, 4, 8)
    model = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0], state_names=("u",),
                            name="decay")
    values = np.exp(-0.7 * times)[:, None]
    weighted = simkit.Dataset(times, values, observed=("u",), sigma=0.01, name="weighted")
    plain = simkit.Dataset(times, values, observed=("u",), name="plain")
    with pytest.raises(simkit.InputError, match=r"\['weighted'\] give sigma and \['plain'\] do not"):
        simkit.fit(model, [weighted, plain])


def test_experiments_share_parameters_and_missing_values_are_masked():
    d1 = _synthetic(seed=6)
    d1[3, 0] = np.nan
    y0b = {"N": 3.0}
    clean_b = np.asarray(simkit.solve(LOGISTIC, (0.0, 10.0), y0=[3.0], params=TRUTH, saveat=TIMES).ys)
    data = [simkit.Dataset(TIMES, d1, observed=("N",), name="low start"),
            simkit.Dataset(TIMES, clean_b + 0.1 * np.random.default_rng(7).standard_normal(clean_b.shape),
                           observed=("N",), y0=y0b, name="high start")]
    assert data[0].n_points == 15
    result = simkit.fit(LOGISTIC, data, free=["r", "K"])
    assert result.n_points == 31 and len(result.solutions) == 2
    for name, value in TRUTH.items():
        assert abs(result.estimates[name] - value) < 3 * result.stderr[name]


def test_lbfgsb_respects_bounds_and_errors_are_clear():
    data = simkit.Dataset(TIMES, _synthetic(seed=8), observed=("N",))
    result = simkit.fit(LOGISTIC, data, free=["r", "K"], optimizer=fitting.LBFGSB(),
                        bounds={"r": (0.1, 0.7), "K": (5, 20)})
    assert result.estimates["r"] == pytest.approx(0.7, abs=1e-6)  # the truth 0.8 is outside: on the bound
    with pytest.raises(simkit.InputError, match="works on residuals"):
        simkit.fit(LOGISTIC, data, loss=simkit.Poisson(), optimizer=fitting.LevenbergMarquardt())
    with pytest.raises(simkit.InputError, match="max_evaluations must be a positive whole number"):
        simkit.fit(LOGISTIC, data, max_evaluations=0)
    with pytest.raises(simkit.ParameterError, match="no parameter"):
        simkit.fit(LOGISTIC, data, free=["rate"])
    with pytest.raises(simkit.InputError, match="not states"):
        simkit.fit(LOGISTIC, simkit.Dataset(TIMES, _synthetic(), observed=("M",)))
    with pytest.raises(simkit.InputError, match="positive data"):
        simkit.fit(LOGISTIC, simkit.Dataset(TIMES, _synthetic() - 100, observed=("N",)), loss=simkit.LogNormal())


def test_dataset_inputs_that_would_be_ignored_or_freeze_a_free_value_are_refused():
    # all raised before compiling: no fit runs here
    values = _synthetic(seed=8)
    data = simkit.Dataset(TIMES, values, observed=("N",))
    with pytest.raises(simkit.InputError, match=r"dataset 'data' fixes \['K'\], which the fit also estimates"):
        simkit.fit(LOGISTIC, simkit.Dataset(TIMES, values, observed=("N",), params={"K": 3.0}), free=["r", "K"])
    with pytest.raises(simkit.InputError, match=r"fixes \['N'\], which the fit also estimates"):
        simkit.fit(LOGISTIC, simkit.Dataset(TIMES, values, observed=("N",), y0={"N": 1.0}), free=["r"],
                   initial_state="fit")
    with pytest.raises(simkit.ParameterError, match=r"dataset 'exp' has no parameter\(s\) \['KK'\]; valid names are "
                                                    r"\['r', 'K'\]"):
        simkit.fit(LOGISTIC, simkit.Dataset(TIMES, values, observed=("N",), params={"KK": 3.0}, name="exp"),
                   free=["r"])
    with pytest.raises(simkit.InputError, match=r"confidence must be a fraction .* got 95 \(for 95% pass 0.95\)"):
        simkit.fit(LOGISTIC, data, free=["r"], confidence=95)
    bad = values.copy()
    bad[3] = np.inf
    with pytest.raises(simkit.InputError, match=r"values must be finite or NaN \(missing\); infinite at rows \[3\]"):
        simkit.Dataset(TIMES, bad, observed=("N",))
    times = TIMES.copy()
    times[-1] = np.inf
    with pytest.raises(simkit.InputError, match=r"times must be finite; rows \[15\]"):
        simkit.Dataset(times, values, observed=("N",))


def test_pde_inverse_problem_recovers_diffusivity_and_rate():
    """Fisher-KPP u_t = D u_xx + r u (1 - u) on 24 cells (no-flux walls): D and r from noisy
    snapshots; the truth lies inside the reported intervals."""
    grid = sk.Grid((24,), 0.0, 1.0)
    x = grid.coordinates()

    def rhs(t, u, p, space):
        return p["D"] * sk.laplacian(space.pad(u), space.spacing) + p["r"] * u * (1 - u)

    pde = sk.PDEModel(rhs=rhs, grid=grid, bcs=sk.Neumann(0.0), params={"D": 0.02, "r": 1.0},
                      u0=(0.9 * np.exp(-((x - 0.3) / 0.1) ** 2))[None], name="fisher_kpp")
    truth = {"D": 0.01, "r": 2.0}
    times = np.linspace(0.0, 2.0, 6)
    clean = np.asarray(simkit.solve(pde, (0.0, 2.0), params=truth, saveat=times, rtol=1e-10, atol=1e-12).ys)
    noisy = clean + 0.01 * np.random.default_rng(9).standard_normal(clean.shape)
    data = simkit.Dataset(times, noisy, observed=lambda y, p: y, names=tuple(f"u{i}" for i in range(24)))
    result = simkit.fit(pde, data, free=["D", "r"], bounds="positive")
    for name, value in truth.items():
        lo, hi = result.intervals[name]
        assert lo < value < hi, (name, result.intervals)  # the check, at 95%
        assert result.stderr[name] < 0.1 * value


def test_standard_errors_of_parameters_of_very_different_magnitudes():
    # u' = b - a u, u(0) = 0: u = b/a (1 - exp(-a t)) with a ~ 2e-3, b ~ 1.5e3. J^T J's diagonal
    # spans 1e12, so its pseudo-inverse with a relative cutoff dropped a direction: b's
    # standard error came out as 3e-11 against SciPy's 15, their correlation -1 against
    # +0.97. Against SciPy's least_squares on the closed
    # form with the covariance s^2 (J^T J)^-1 (inverted exactly)
    from scipy.optimize import least_squares

    rng = np.random.default_rng(9)
    t = np.linspace(10.0, 800.0, 20)
    exact = lambda t, a, b: b / a * (1 - np.exp(-a * t))  # noqa: E731
    y = exact(t, 2e-3, 1.5e3) * (1 + 0.01 * rng.standard_normal(t.size))
    model = simkit.ODEModel(rhs=lambda t, y, p: p["b"] - p["a"] * y, params={"a": 1e-3, "b": 1e3}, y0=[0.0],
                            state_names=("u",), name="source")
    fit = simkit.fit(model, simkit.Dataset(t, y, observed=("u",), t0=0.0), rtol=1e-10, atol=1e-10)
    ref = least_squares(lambda x: exact(t, x[0], x[1]) - y, [1e-3, 1e3], x_scale="jac", xtol=1e-15, ftol=1e-15,
                        gtol=1e-15)
    s2 = 2 * ref.cost / (t.size - 2)
    stderr = np.sqrt(np.diag(s2 * np.linalg.inv(ref.jac.T @ ref.jac)))
    np.testing.assert_allclose([fit.estimates["a"], fit.estimates["b"]], ref.x, rtol=1e-6)
    np.testing.assert_allclose([fit.stderr["a"], fit.stderr["b"]], stderr, rtol=1e-4)


def test_a_bound_that_holds_a_parameter_is_reported():
    # the data say k = 0.7; bounds (1, 5) hold it at 1: a "converged" fit with a standard
    # error and an interval that describe the bound, which the hints now say
    t = np.linspace(0.2, 4.0, 15)
    model = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 2.0}, y0=[2.0], state_names=("u",),
                            name="decay")
    data = simkit.Dataset(t, 2.0 * np.exp(-0.7 * t)[:, None], observed=("u",), t0=0.0)
    held = simkit.fit(model, data, bounds={"k": (1.0, 5.0)})
    # the bound itself fits at least as well: the estimate is the bound, reported as a limit
    assert held.estimates["k"] == 1.0 and held.at_limit["k"].startswith("k at its lower bound 1")
    assert np.isnan(held.stderr["k"]) and held.intervals["k"][0] == 1.0
    free = simkit.fit(model, data, bounds={"k": (0.1, 5.0)})  # inside: no such hint
    assert abs(free.estimates["k"] - 0.7) < 1e-6 and not any("bound" in h for h in free.hints)
    assert not free.at_limit
