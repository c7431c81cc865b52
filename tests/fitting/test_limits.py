"""Every fit ends, and says how: the boarding-school influenza fit (negative binomial, SIR)
that once ran for more than 15 minutes, the limits on iterations and evaluations, a failed
solve as an infinite cost, and count data with known truth.

All fits here share one structure (model, observation, loss, free parameters, 14 days), so
they share their compiled programs: the limits are traced arguments."""

import time

import numpy as np
import pytest

import simkit
from simkit.fitting import FitStatus

N = 763  # pupils (BMJ 1978, 4 March, p. 587: influenza in an English boarding school)
DAYS = np.arange(1.0, 15.0)
FLU = np.array([3, 8, 28, 75, 221, 281, 255, 235, 190, 125, 70, 28, 12, 5], float)  # confined to bed, days 1-14
Y0 = {"S": (N - 1) / N, "I": 1 / N, "R": 0.0}  # one infected pupil on day 0 (the sir model's states are fractions)
SIR = simkit.models.get("sir").with_params(beta=1.0, gamma=0.3)  # rates per day


def cases(y, params):
    """Infected pupils."""
    return y[1:2] * N


def flu_fit(counts, **kwargs):
    data = simkit.Dataset(DAYS, counts[:, None], observed=cases, names=("cases",), t0=0.0, y0=Y0,
                          name="boarding school")
    return simkit.fit(SIR, data, free=["beta", "gamma"], bounds="positive", loss=simkit.NegativeBinomial(), **kwargs)


@pytest.fixture(scope="module")
def flu():
    start = time.perf_counter()
    result = flu_fit(FLU)
    return result, time.perf_counter() - start


def _scipy_optimum():
    """The same likelihood minimised by Nelder-Mead over solve_ivp (DOP853, rtol 1e-11)."""
    from scipy import stats
    from scipy.integrate import solve_ivp
    from scipy.optimize import minimize

    def nll(log_p):
        beta, gamma, k = np.exp(log_p)
        sol = solve_ivp(lambda t, y: [-beta * y[0] * y[1], beta * y[0] * y[1] - gamma * y[1], gamma * y[1]],
                        (0.0, 14.0), list(Y0.values()), t_eval=DAYS, rtol=1e-11, atol=1e-13, method="DOP853")
        mu = sol.y[1] * N
        return -stats.nbinom.logpmf(FLU, k, k / (k + mu)).sum()

    out = minimize(nll, np.log([1.7, 0.5, 10.0]), method="Nelder-Mead",
                   options={"xatol": 1e-10, "fatol": 1e-12, "maxfev": 4000})
    return out.fun, dict(zip(["beta", "gamma", "dispersion"], np.exp(out.x)))


def test_negative_binomial_sir_fit_ends_at_scipys_optimum(flu):
    """From beta = 1, gamma = 0.3 the first gradient step is 82 in log(beta): jaxopt's
    L-BFGS took it and drifted towards beta -> infinity (everyone infected at once; a cost
    plateau near 80.3), where the model is stiff and each solve exhausted its step budget.
    BFGS's backtracking line search and infinite costs for failed solves keep it in the
    epidemic's basin."""
    result, seconds = flu
    assert result.converged and result.status == FitStatus.CONVERGED and result.message == "converged"
    assert result.optimizer_name == "BFGS" and result.evaluations < 200
    assert seconds < 60  # about 7 s here, most of it compiling
    cost, estimates = _scipy_optimum()
    assert result.cost == pytest.approx(cost, rel=1e-8)
    for name, value in estimates.items():
        assert result.estimates[name] == pytest.approx(value, rel=1e-5), name
    assert result.estimates["beta"] / result.estimates["gamma"] == pytest.approx(3.18, abs=0.01)  # R0


def test_intervals_of_positive_parameters_stay_positive(flu):
    """A Wald interval on the natural scale crossed zero (dispersion 12.0 within [-0.89,
    24.8] on these counts); on the log scale it is exp(log k +- z se / k), named as such."""
    from scipy import stats

    result, _ = flu
    z = stats.norm.ppf(0.975)
    for name in ("beta", "gamma", "dispersion"):
        value, se = result.estimates[name], result.stderr[name]
        low, high = result.intervals[name]
        assert low == pytest.approx(value * np.exp(-z * se / value), rel=1e-12) and low > 0
        assert high == pytest.approx(value * np.exp(z * se / value), rel=1e-12)
        assert result.interval_methods[name] == "Wald on the log scale"
    assert "intervals: Wald on the log scale (beta, gamma, dispersion)" in str(result)
    assert not result.at_limit


def test_limits_end_the_fit_and_the_summary_says_which(flu):
    short = flu_fit(FLU, max_iterations=5)
    assert short.status == FitStatus.MAX_ITERATIONS and not short.converged and short.iterations == 5
    assert "stopped at the iteration limit (max_iterations=5)" in str(short)
    few = flu_fit(FLU, max_evaluations=3)
    assert few.status == FitStatus.MAX_EVALUATIONS and not few.converged and few.evaluations == 3
    assert "max_evaluations=3" in few.message
    assert flu[0].limits == {"max_iterations": 512, "max_evaluations": 2000, "max_steps": 20_000}


def test_a_failed_solve_is_an_infinite_cost(flu):
    """beta = 1e6 makes S' = -beta S I stiff: the explicit solve runs out of steps. Its
    values are not the model's; the cost says so instead of being a finite number."""
    result, _ = flu
    theta = np.array([1e6, 0.3, 1.0])
    assert np.isinf(float(result.problem.cost(theta)))
    with pytest.raises(simkit.InputError, match=r"every start failed.*max_steps=20000"):
        flu_fit(FLU, initial={"beta": 1e6})


def test_counts_recover_the_truth(flu):
    """Negative-binomial counts drawn from the model: the truth within 3 standard errors
    (same structure as the flu fit: its compiled programs serve)."""
    truth = {"beta": 1.6, "gamma": 0.45, "dispersion": 20.0}
    clean = np.asarray(simkit.solve(SIR, (0.0, 14.0), y0=list(Y0.values()), saveat=DAYS,
                                    params={"beta": truth["beta"], "gamma": truth["gamma"]}).ys)[:, 1] * N
    k = truth["dispersion"]
    counts = np.random.default_rng(4).negative_binomial(k, k / (k + clean)).astype(float)
    result = flu_fit(counts)
    assert result.converged and result.names[-1] == "dispersion"
    for name, value in truth.items():
        assert abs(result.estimates[name] - value) < 3 * result.stderr[name], (name, result.estimates, result.stderr)


def _blow_up(t, y, p):
    return p["r"] * y**2


def test_levenberg_marquardt_backs_off_from_a_failed_solve():
    """u' = r u^2 blows up at t = 1/r: from r = 0.1 (data: r = 0.3 on [0, 2]) a first step
    in log r lands beyond r = 0.5, where the solve fails. jaxopt blends the trial point's
    infinite residuals into its state by multiplying with 0 (NaN): the fit ended as "every
    start failed (non-finite cost)"; such a step is now a rejected one. SciPy's answer."""
    from scipy.optimize import least_squares

    t = np.linspace(0.0, 2.0, 15)
    y = 1 / (1 - 0.3 * t) + np.random.default_rng(6).normal(0, 0.02, t.size)
    model = simkit.ODEModel(rhs=_blow_up, params={"r": 0.2}, y0=[1.0], state_names=("u",), name="blow_up")
    result = simkit.fit(model, simkit.Dataset(t, y, observed=("u",)), initial={"r": 0.1}, bounds="positive")
    ref = least_squares(lambda r: 1 / (1 - r[0] * t) - y, [0.1], xtol=1e-15, ftol=1e-15, gtol=1e-15).x[0]
    assert result.converged
    np.testing.assert_allclose(result.estimates["r"], ref, rtol=1e-6)


def _logistic(t, y, p):
    return p["r"] * y * (1 - y / p["K"])


def test_no_standard_error_where_the_curvature_is_not_positive():
    """L-BFGS-B's unscaled first step takes this likelihood fit to r = 4e3, noise = 1.8e3,
    where the Hessian is not positive definite: the pseudo-inverse gave the noise a
    negative variance, shown as a standard error of 0 (a zero-width interval)."""
    t = np.linspace(0, 10, 25)
    clean = 50.0 * 2.0 * np.exp(0.9 * t) / (50.0 + 2.0 * (np.exp(0.9 * t) - 1))
    y = clean + np.random.default_rng(1).normal(0, 2.0, t.size)
    model = simkit.ODEModel(rhs=_logistic, params={"r": 0.5, "K": 40.0}, y0=[2.0], state_names=("N",),
                            name="logistic")
    result = simkit.fit(model, simkit.Dataset(t, y, observed=("N",)), loss=simkit.GaussianNLL(),
                        optimizer=simkit.fitting.LBFGSB(), bounds="positive", max_iterations=1)
    assert any("not positive definite" in h for h in result.hints)
    # no standard error: the whole positive half-line (the interval is on the log scale)
    assert result.stderr["noise"] == np.inf and result.intervals["noise"] == (0.0, np.inf)
    assert all(s > 0 for s in result.stderr.values())


def _log_gamma_ratio_exact(y, k):
    """log G(y + k) - log G(k) for a whole y: y log k + the sum of log1p(j / k), j < y (each
    term correct to rounding; math.fsum adds them exactly)."""
    import math

    return int(y) * math.log(k) + math.fsum(math.log1p(j / k) for j in range(int(y)))


def test_log_gamma_ratio_is_accurate_for_any_dispersion():
    """gammaln(y + k) - gammaln(k) loses several units per term near k = 1e15 (each term is
    ~3e16) and everything at 1e20; log_gamma_ratio keeps the relative error near rounding."""
    from simkit.fitting.objective import log_gamma_ratio

    ks = np.logspace(-3, 20, 24)
    ys = np.array([0, 1, 2, 3, 7, 30, 100, 1000, 10_000], float)
    k, y = np.meshgrid(ks, ys, indexing="ij")
    exact = np.vectorize(_log_gamma_ratio_exact)(y, k)
    got = np.asarray(log_gamma_ratio(y, k))
    error = np.abs(got - exact)
    # relative to the terms' size (the ratio itself crosses 0 near k = 0.3, where a relative
    # error of the sum means nothing): rounding is ~1e-16 of y |log k| + the largest term
    size = np.abs(exact) + 1.0
    assert np.max(error / size) < 1e-13, np.max(error / size)
    assert float(log_gamma_ratio(2.0, 1e15)) == pytest.approx(np.log(1e15) + np.log(1e15 + 1), rel=1e-15)
    assert float(log_gamma_ratio(0.0, np.inf)) == 0.0


def test_negative_binomial_tends_to_the_poisson_likelihood():
    import jax.numpy as jnp

    mu, y = jnp.array([2.0, 3.0, 50.0, 0.5]), jnp.array([1.0, 4.0, 61.0, 0.0])
    mask = jnp.ones(4, bool)
    poisson = float(simkit.Poisson().nll(mu, y, 1.0, mask, None))
    nb = simkit.NegativeBinomial()
    for k in (1e8, 1e15, 1e20):
        assert float(nb.nll(mu, y, 1.0, mask, jnp.log(k))) == pytest.approx(poisson, rel=1e-9 if k > 1e8 else 1e-6)
    assert float(nb.nll(mu, y, 1.0, mask, jnp.inf)) == pytest.approx(poisson, rel=1e-14)
    # against the exact sums at any dispersion (SciPy's nbinom.logpmf is 1.5e-12 off here at k = 1e4)
    import math

    for k in (0.01, 3.0, 1e4, 1e12):
        exact = -math.fsum(_log_gamma_ratio_exact(b, k) - math.lgamma(b + 1) + b * math.log(a / k)
                           - (k + b) * math.log1p(a / k) for a, b in zip(np.asarray(mu).tolist(), np.asarray(y).tolist()))
        assert float(nb.nll(mu, y, 1.0, mask, jnp.log(k))) == pytest.approx(exact, rel=1e-13)


def test_counts_that_are_not_over_dispersed_reach_the_poisson_limit(flu):
    """Poisson draws from the epidemic, fitted with a negative binomial (the flu fit's
    structure: its compiled programs serve). Their best dispersion is at infinity (the score
    for over-dispersion, sum((y - mu)^2 - y), is -821 at the Poisson fit). An exponential
    growth fit like it once reported "converged" with dispersion 8.5e15 and a cost of -404
    (gammaln's rounding, which the optimiser followed); now the Poisson limit with SciPy's
    Poisson optimum and cost, and a one-sided interval for the dispersion."""
    from scipy import stats
    from scipy.integrate import solve_ivp
    from scipy.optimize import minimize

    def infected(beta, gamma):
        sol = solve_ivp(lambda t, y: [-beta * y[0] * y[1], beta * y[0] * y[1] - gamma * y[1], gamma * y[1]],
                        (0.0, 14.0), list(Y0.values()), t_eval=DAYS, rtol=1e-11, atol=1e-13, method="DOP853")
        return sol.y[1] * N

    counts = np.random.default_rng(0).poisson(infected(1.6, 0.45)).astype(float)
    result = flu_fit(counts)
    best = minimize(lambda log_p: -stats.poisson.logpmf(counts, infected(*np.exp(log_p))).sum(),
                    np.log([1.6, 0.45]), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12})
    assert result.estimates["dispersion"] == np.inf and "dispersion" in result.at_limit
    assert result.cost == pytest.approx(best.fun, rel=1e-8)
    for name, value in zip(("beta", "gamma"), np.exp(best.x)):
        assert result.estimates[name] == pytest.approx(value, rel=1e-5), name
    low, high = result.intervals["dispersion"]
    assert 1.0 < low < 1e4 and high == np.inf
    assert result.interval_methods["dispersion"].startswith("likelihood ratio")
    assert "dispersion → ∞: the Poisson model fits as well" in str(result)
    assert "at a limit: dispersion → ∞" in result.message
    assert np.isfinite(result.stderr["beta"]) and result.intervals["gamma"][0] > 0


def test_a_noise_scale_at_zero_is_a_limit():
    import jax.numpy as jnp

    loss = simkit.GaussianNLL()
    assert loss.limit(lambda e: 0.0, jnp.log(1e-12), 1.0).startswith("noise → 0")
    assert loss.limit(lambda e: 0.0, jnp.log(0.1), 1.0) is None and loss.limit_value() == 0.0
