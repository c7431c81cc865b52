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
    assert result.stderr["noise"] == np.inf and result.intervals["noise"] == (-np.inf, np.inf)
    assert all(s > 0 for s in result.stderr.values())
