"""The bounded minimisers (simkit.fitting.bounded) against SciPy's L-BFGS-B and
least_squares: optimum, active bounds, every start the same alone and in a batch, finite at
the bounds. One compile per function and lane count, reused across tests."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from simkit.errors import InputError, InputTypeError, ShapeError
from simkit.fitting import FitStatus, least_squares_bounded, minimize_bounded

LOWER = np.array([-2.0, -2.0, 0.5, -2.0])
UPPER = np.array([2.0, 0.8, 2.0, 2.0])  # holds the second variable at 0.8 (the free optimum is 1)
STARTS = np.clip(np.random.default_rng(0).uniform(-1.5, 1.5, (6, 4)), LOWER, UPPER)


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def scipy_lbfgsb(x0):
    fun = jax.jit(jax.value_and_grad(rosenbrock))
    return scipy.optimize.minimize(lambda x: tuple(np.asarray(v) for v in fun(jnp.asarray(x))), x0, jac=True,
                                   method="L-BFGS-B", bounds=list(zip(LOWER, UPPER)),
                                   options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 1000})


@pytest.fixture(scope="module")
def batch():
    return minimize_bounded(rosenbrock, STARTS, LOWER, UPPER, gtol=1e-9, ftol=0.0, lanes=len(STARTS))


def test_rosenbrock_with_bounds_matches_scipy_lbfgsb(batch):
    best = min((scipy_lbfgsb(x0) for x0 in STARTS), key=lambda r: r.fun)
    assert np.all(np.asarray(batch.status) == FitStatus.CONVERGED)
    assert np.all(np.asarray(batch.grad_norm) <= 1e-6)  # to where f stops changing in float64
    i = int(np.argmin(batch.cost))
    # SciPy's optimum, to the accuracy the gradients allow
    np.testing.assert_allclose(np.asarray(batch.x[i]), best.x, atol=1e-7)
    assert abs(float(batch.cost[i]) - best.fun) <= 1e-12
    # the bounded optimum: the second variable held at its upper bound, reported as such
    assert best.x[1] == UPPER[1]
    assert np.asarray(batch.at_bound[i]).tolist() == [0, 1, 0, 0]
    assert batch.at_bound.dtype == jnp.int8


def test_a_start_gives_the_same_answer_alone_and_in_any_batch(batch):
    alone = minimize_bounded(rosenbrock, STARTS[3:4], LOWER, UPPER, gtol=1e-9, ftol=0.0)
    assert float(alone.x[0, 0]) == float(batch.x[3, 0]) and int(alone.n_iter[0]) == int(batch.n_iter[3])
    np.testing.assert_array_equal(np.asarray(alone.x[0]), np.asarray(batch.x[3]))
    two_lanes = minimize_bounded(rosenbrock, STARTS, LOWER, UPPER, gtol=1e-9, ftol=0.0, lanes=2)
    for field in ("x", "cost", "n_iter", "n_eval", "status", "at_bound"):
        np.testing.assert_array_equal(np.asarray(getattr(two_lanes, field)), np.asarray(getattr(batch, field)))


def test_starts_split_between_devices_end_as_on_one_device(batch):
    """devices=: the starts split between this process's CPU devices (tests/conftest.py makes
    four) in order; each share runs the one-device program, so each start ends as on one
    device, to the bit."""
    devices = jax.local_devices()
    assert len(devices) >= 4
    for split in (devices[:4], devices[:2]):  # 6 starts: 2 a device on three devices (none on the fourth), or 3 and 3
        out = minimize_bounded(rosenbrock, STARTS, LOWER, UPPER, gtol=1e-9, ftol=0.0, lanes=len(STARTS),
                               devices=split)
        for field in ("x", "cost", "n_iter", "n_eval", "status", "at_bound"):
            np.testing.assert_array_equal(np.asarray(getattr(out, field)), np.asarray(getattr(batch, field)))
    with pytest.raises(InputError, match="devices must be a non-empty list of distinct jax devices"):
        least_squares_bounded(lambda x: x, STARTS, LOWER, UPPER, devices=devices[0])
    with pytest.raises(InputError, match="devices must be"):
        minimize_bounded(rosenbrock, STARTS, LOWER, UPPER, devices=[devices[0], devices[0]])


def test_a_fit_from_host_values_compiles_its_one_program():
    """Starts, bounds and settings given as NumPy arrays and numbers: the call compiles the fit's
    program and nothing else (no copy, padding or slicing programs beside it), and its results
    are JAX arrays with one row per start."""
    from jax._src import monitoring

    compiles = []

    def listen(event, duration, **_):
        if event.endswith("backend_compile_duration"):
            compiles.append(duration)

    monitoring.register_event_duration_secs_listener(listen)
    try:
        starts = np.linspace(-1.0, 1.0, 15).reshape(3, 5)  # 3 starts: run as 4 rows, cut back to 3
        out = least_squares_bounded(lambda x: x - 0.5, starts, -2.0 * np.ones(5), 2.0, max_iter=20)
    finally:
        monitoring.unregister_event_duration_listener(listen)
    assert len(compiles) == 1
    assert isinstance(out.x, jax.Array) and out.x.shape == (3, 5) and out.status.shape == (3,)
    np.testing.assert_allclose(np.asarray(out.x), 0.5, atol=1e-10)


def test_a_compiled_fit_loads_on_another_device_without_compiling():
    """What an accelerator's share runs (`simkit.fitting.split.loaded_on`): the first device's
    compiled program loaded on another device, run there, with the same values."""
    from simkit.fitting import bounded, split

    first, other = jax.local_devices()[:2]
    args = jax.device_put((jnp.asarray(STARTS[:2]), jnp.asarray(LOWER), jnp.asarray(UPPER), jnp.asarray(50),
                           jnp.asarray(1000), jnp.asarray(1e-9), jnp.asarray(0.0)), first)
    compiled = bounded._minimize_jit.lower(rosenbrock, *args, method="lbfgsb", memory=10, lanes=1).compile()
    copy = split.loaded_on(compiled, other)
    assert copy is not None and split.loaded_on(compiled, other) is copy  # loaded once
    here, there = compiled(*args), copy(*jax.device_put(args, other))
    assert there[0].devices() == {other}
    for a, b in zip(jax.tree_util.tree_leaves(here), jax.tree_util.tree_leaves(there)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(np.asarray(here[0]), np.asarray(minimize_bounded(
        rosenbrock, STARTS[:2], LOWER, UPPER, gtol=1e-9, ftol=0.0, max_iter=50).x))


def test_no_nan_where_the_function_fails_beyond_a_bound_or_far_out():
    # log(1 + x) is NaN below -1: the box [0, 1e5] keeps every point finite; the optimum is
    # at the lower bound (the function rises from 0)
    fun = lambda x: jnp.sum(jnp.log1p(x))
    out = minimize_bounded(fun, jnp.array([[1.0, 1e-5], [50.0, 7.0]]), jnp.zeros(2), jnp.full(2, 1e5))
    assert np.all(np.isfinite(np.asarray(out.x))) and np.all(np.isfinite(np.asarray(out.cost)))
    assert np.asarray(out.at_bound).tolist() == [[-1, -1], [-1, -1]]
    assert np.asarray(out.status).tolist() == [FitStatus.CONVERGED] * 2
    # a start where the function is not finite ends at once with NONFINITE
    out = minimize_bounded(lambda x: jnp.sum((x - 3.0) ** 2 + 1e-3 * jnp.log(x - 1.0)), jnp.array([[0.5], [2.0]]),
                           jnp.zeros(1), jnp.full(1, 5.0))
    assert np.asarray(out.status).tolist() == [FitStatus.NONFINITE, FitStatus.CONVERGED]
    assert np.isfinite(float(out.cost[1]))


def test_least_squares_does_not_call_a_step_stopped_by_nan_trials_converged():
    # residuals that are NaN a little above the start, where the gradient points: every trial
    # is refused, the damping climbs until the step is below xtol; that was reported CONVERGED
    residuals = lambda x: jnp.where(x[0] > 1.0, jnp.nan, x - 3.0)  # noqa: E731
    out = least_squares_bounded(residuals, jnp.array([[1.0]]), jnp.zeros(1), jnp.full(1, 10.0))
    assert np.asarray(out.status).tolist() == [FitStatus.OPTIMIZER_FAILED]
    assert float(out.x[0, 0]) == 1.0 and float(out.cost[0]) == 2.0 and int(out.n_iter[0]) == 0


def test_least_squares_bounded_matches_scipy_least_squares():
    # exponential decay y = a exp(-k t) + c, with c held at its lower bound 0.2 (the data's is 0.1)
    t = np.linspace(0.0, 4.0, 25)
    y = 2.0 * np.exp(-1.3 * t) + 0.1 + 0.01 * np.sin(7 * t)
    residuals = lambda p: p[0] * jnp.exp(-p[1] * jnp.asarray(t)) + p[2] - jnp.asarray(y)
    lower, upper = np.array([0.0, 0.0, 0.2]), np.array([10.0, 10.0, 1.0])
    x0 = np.array([[1.0, 0.5, 0.5], [5.0, 4.0, 0.9], [0.1, 0.1, 0.21]])
    out = least_squares_bounded(residuals, x0, lower, upper, ftol=1e-15, gtol=1e-15)
    ref = scipy.optimize.least_squares(lambda p: np.asarray(residuals(jnp.asarray(p))), x0[0],
                                       bounds=(lower, upper), xtol=1e-15, ftol=1e-15, gtol=1e-15)
    assert np.asarray(out.status).tolist() == [FitStatus.CONVERGED] * 3
    np.testing.assert_allclose(np.asarray(out.x), np.broadcast_to(ref.x, (3, 3)), rtol=1e-7)
    np.testing.assert_allclose(np.asarray(out.cost), ref.cost, rtol=1e-10)
    assert np.asarray(out.at_bound).tolist() == [[0, 0, -1]] * 3
    alone = least_squares_bounded(residuals, x0[1:2], lower, upper, ftol=1e-15, gtol=1e-15)
    np.testing.assert_array_equal(np.asarray(alone.x[0]), np.asarray(out.x[1]))


def test_least_squares_steps_that_cross_a_bound_re_solve_the_others_with_it_there():
    # two close exponential rates, the data's second one (1.3) beyond its lower bound 1.5: each
    # Gauss-Newton step that carries it through the bound re-solves the coupled rest with it held
    # there (a projection alone loses that coupling: 142 accepted steps over these starts)
    t = np.linspace(0.0, 1.0, 20)
    y = np.exp(-t) + np.exp(-1.3 * t)
    residuals = lambda p: (p[0] * jnp.exp(-p[2] * jnp.asarray(t)) + p[1] * jnp.exp(-p[3] * jnp.asarray(t))
                           - jnp.asarray(y))
    lower, upper = np.array([0.0, 0.0, 0.0, 1.5]), np.array([5.0, 5.0, 1.2, 5.0])
    x0 = np.array([[0.5, 0.5, 0.5, 2.0], [2.0, 0.1, 1.0, 3.0], [1.0, 1.0, 0.1, 4.0], [4.0, 4.0, 1.1, 1.6]])
    out = least_squares_bounded(residuals, x0, lower, upper, max_iter=500, ftol=1e-15, gtol=1e-12)
    refs = [scipy.optimize.least_squares(lambda p: np.asarray(residuals(jnp.asarray(p))), x, bounds=(lower, upper),
                                         xtol=1e-15, ftol=1e-15, gtol=1e-15) for x in x0]
    assert np.asarray(out.status).tolist() == [FitStatus.CONVERGED] * 4
    np.testing.assert_allclose(np.asarray(out.cost), [r.cost for r in refs], rtol=1e-8, atol=1e-18)
    assert np.asarray(out.at_bound).tolist() == [[0, 0, 0, -1]] * 4
    assert int(np.sum(out.n_iter)) <= 125, np.asarray(out.n_iter)  # (119)


def test_least_squares_with_large_residuals_takes_the_second_order_term():
    # Brown and Dennis (More, Garbow & Hillstrom 1981, problem 16; 20 residuals, 4 unknowns): the
    # residuals stay large at the minimum (cost 42911.1), where Gauss-Newton's model misses most
    # of the Hessian; Levenberg-Marquardt alone crawled (500 steps, none converged from these
    # starts), with the structured secant term (NL2SOL) it converges in 17-34
    t = jnp.arange(1, 21) / 5.0
    residuals = lambda x: (x[0] + t * x[1] - jnp.exp(t)) ** 2 + (x[2] + x[3] * jnp.sin(t) - jnp.cos(t)) ** 2
    lower, upper = np.full(4, -100.0), np.full(4, 100.0)
    x0 = np.array([[25.0, 5.0, -5.0, -1.0], [0.0, 0.0, 0.0, 0.0], [-20.0, 20.0, 1.0, 3.0]])
    out = least_squares_bounded(residuals, x0, lower, upper, max_iter=500, ftol=1e-15, gtol=1e-10)
    ref = scipy.optimize.least_squares(lambda p: np.asarray(residuals(jnp.asarray(p))), x0[0], bounds=(lower, upper),
                                       xtol=1e-15, ftol=1e-15, gtol=1e-15)
    assert np.asarray(out.status).tolist() == [FitStatus.CONVERGED] * 3
    np.testing.assert_allclose(np.asarray(out.cost), ref.cost, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(out.x), np.broadcast_to(ref.x, (3, 4)), rtol=1e-5)
    assert np.max(np.asarray(out.n_iter)) <= 60, np.asarray(out.n_iter)


def test_no_steps_evaluates_the_start():
    fun = lambda x: jnp.sum((x - 1.0) ** 2)  # noqa: E731
    x0 = jnp.array([[0.5, 3.0]])
    out = minimize_bounded(fun, x0, jnp.zeros(2), jnp.full(2, 2.0), max_iter=0)
    np.testing.assert_array_equal(out.x, jnp.clip(x0, 0.0, 2.0))
    assert float(out.cost[0]) == float(fun(jnp.array([0.5, 2.0]))) and int(out.n_iter[0]) == 0
    residuals = lambda x: x - 1.0  # noqa: E731
    out = least_squares_bounded(residuals, x0, jnp.zeros(2), jnp.full(2, 2.0), max_iter=0)
    assert float(out.cost[0]) == 0.5 * float(jnp.sum(residuals(jnp.array([0.5, 2.0])) ** 2))


def _far_target(x):
    return x - 9.0


def test_least_squares_steps_grow_from_a_quarter_of_the_box():
    """Linear residuals whose minimum (9, 9) lies 1.13 box widths from the start (1, 1) in the
    box [0, 10]^2: Gauss-Newton would jump there in one step. The first step goes a quarter of
    the box, the second half of it (the model was exact), and the start still ends at the
    minimum."""
    x0, lower, upper = jnp.array([[1.0, 1.0]]), jnp.zeros(2), jnp.full(2, 10.0)
    widths = [float(np.linalg.norm((np.asarray(least_squares_bounded(_far_target, x0, lower, upper, max_iter=k).x)
                                    - 1.0) / 10.0)) for k in (1, 2)]
    np.testing.assert_allclose(widths, [0.25, 0.75], rtol=1e-12)
    out = least_squares_bounded(_far_target, x0, lower, upper)
    np.testing.assert_allclose(np.asarray(out.x), [[9.0, 9.0]], atol=1e-9)
    assert int(out.status[0]) == FitStatus.CONVERGED and int(out.n_iter[0]) <= 6, np.asarray(out.n_iter)


def test_an_indefinite_second_order_term_gives_the_gauss_newton_step():
    """Levenberg-Marquardt's trial step with the structured secant term (NL2SOL) where that
    term makes the damped model indefinite: it has no minimum, and its Cholesky solve gave a
    step that was not finite, or zero (which the step-size test took for convergence). The step
    is then Gauss-Newton's: finite, downhill, the one the model without the term gives; with a
    term that keeps the model positive definite, the term shapes the step."""
    from simkit.fitting.bounded import _lm_trial

    x, g = jnp.array([0.5, 0.5]), jnp.array([-3.0, 1.0])
    jtj = jnp.array([[2.0, 0.5], [0.5, 1.0]])
    lower, upper, inv_width = jnp.full(2, -10.0), jnp.full(2, 10.0), jnp.full(2, 1 / 20)  # no bound reached

    def step(second, structured):
        point, predicted, delta = _lm_trial(x, g, jtj, second, jnp.asarray(structured), jnp.asarray(1e-3),
                                            jnp.asarray(10.0), lower=lower, upper=upper, inv_width=inv_width)
        return np.asarray(point - x), float(predicted), np.asarray(delta)

    gauss_newton, gn_predicted, _ = step(jnp.zeros((2, 2)), False)
    indefinite = jnp.array([[-5.0, 0.0], [0.0, 0.3]])  # jtj + this has an eigenvalue near -3
    s, predicted, delta = step(indefinite, True)
    assert np.all(np.isfinite(delta)) and np.all(np.isfinite(s)) and np.linalg.norm(s) > 0.05
    np.testing.assert_allclose(s, gauss_newton, rtol=1e-12)
    assert float(np.dot(np.asarray(g), s)) < 0 and predicted == gn_predicted > 0
    definite = jnp.array([[1.0, 0.0], [0.0, 0.5]])
    s_def, predicted_def, _ = step(definite, True)
    expected = -np.linalg.solve(np.asarray(jtj + definite) + 1e-3 * np.diag(np.diag(np.asarray(jtj))), np.asarray(g))
    np.testing.assert_allclose(s_def, expected, rtol=1e-10)
    assert not np.allclose(s_def, gauss_newton) and predicted_def > 0


def _two_targets(x):
    return jnp.stack([x[0] - 1.0, 10.0 * (x[1] - x[0] ** 2)])


def _two_targets_cost(x):
    return 0.5 * jnp.sum(_two_targets(x) ** 2)


def _compiled_programs(run) -> int:
    return run.default._cache_size() + (run.classic._cache_size() if run.classic is not run.default else 0)


@pytest.mark.parametrize("lanes", [1, 8])
def test_other_numbers_of_starts_reuse_the_compiled_program(lanes):
    """5, 7 and 8 starts run in one program compiled for 8 rows (the rows beyond the starts never
    run; with 8 lanes, their lanes are idle from the start), and each start ends as in the
    others: no recompiling when only the number of starts changes within a power of two."""
    from simkit.fitting import bounded

    x0 = np.random.default_rng(3).uniform(-2.0, 2.0, (8, 2))
    for solve, run in ((least_squares_bounded, bounded._least_squares_jit),
                       (lambda f, x, lo, up, lanes: minimize_bounded(_two_targets_cost, x, lo, up, lanes=lanes),
                        bounded._minimize_jit)):
        outs = [solve(_two_targets, x0[:5], -3.0, 3.0, lanes=lanes)]
        before = _compiled_programs(run)
        outs += [solve(_two_targets, x0[:n], -3.0, 3.0, lanes=lanes) for n in (7, 8)]
        assert _compiled_programs(run) == before
        assert [o.x.shape[0] for o in outs] == [5, 7, 8]
        for o in outs[1:]:
            np.testing.assert_array_equal(np.asarray(o.x)[:5], np.asarray(outs[0].x))
            np.testing.assert_array_equal(np.asarray(o.n_iter)[:5], np.asarray(outs[0].n_iter))
        assert np.asarray(outs[-1].status).tolist() == [FitStatus.CONVERGED] * 8
        np.testing.assert_allclose(np.asarray(outs[-1].x), np.ones((8, 2)), atol=1e-4)
    assert bounded.padded_starts(1) == 1 and bounded.padded_starts(5) == 8 and bounded.padded_starts(8) == 8


def test_bad_input_is_refused_before_compiling():
    with pytest.raises(ShapeError, match=r"\(n_starts, n\)"):
        minimize_bounded(rosenbrock, np.zeros(4), LOWER, UPPER)
    with pytest.raises(ShapeError, match="lower and upper"):
        minimize_bounded(rosenbrock, np.zeros((1, 4)), LOWER[:3], UPPER)
    with pytest.raises(InputError, match="indices \\[1\\]"):
        least_squares_bounded(lambda x: x, np.zeros((1, 2)), np.array([0.0, 2.0]), np.array([1.0, 1.0]))
    with pytest.raises(InputError, match="lanes"):
        minimize_bounded(rosenbrock, np.zeros((1, 4)), LOWER, UPPER, lanes=0)
    # a NaN or negative tolerance would turn its convergence test off in silence
    with pytest.raises(InputError, match="minimize_bounded: gtol must be finite"):
        minimize_bounded(rosenbrock, np.zeros((1, 4)), LOWER, UPPER, gtol=float("nan"))
    with pytest.raises(InputError, match="least_squares_bounded: ftol must be >= 0"):
        least_squares_bounded(lambda x: x, np.zeros((1, 2)), -1.0, 1.0, ftol=-1e-8)
    with pytest.raises(InputError, match="least_squares_bounded: xtol must be finite"):
        least_squares_bounded(lambda x: x, np.zeros((1, 2)), -1.0, 1.0, xtol=np.inf)
    # counts: a NaN, an infinity, a string or None is named, not a bare conversion error
    for value, error in ((float("nan"), InputError), (np.inf, InputError), (2.5, InputError), (-1, InputError),
                         ("5", InputTypeError), (True, InputTypeError), ([3], InputTypeError)):
        with pytest.raises(error, match=r"least_squares_bounded: max_iter must be a whole number >= 0, got "):
            least_squares_bounded(lambda x: x, np.zeros((1, 2)), -1.0, 1.0, max_iter=value)
    with pytest.raises(InputError, match=r"minimize_bounded: max_eval must be a whole number >= 1, got nan"):
        minimize_bounded(rosenbrock, np.zeros((1, 4)), LOWER, UPPER, max_eval=float("nan"))
    with pytest.raises(InputTypeError, match=r"minimize_bounded: max_iter must be a whole number >= 0, got None"):
        minimize_bounded(rosenbrock, np.zeros((1, 4)), LOWER, UPPER, max_iter=None)


def test_the_logistic_transform_has_a_finite_derivative_far_out():
    # 1 / (1 + exp(-z)) differentiated gave NaN past |z| ~ 709: a line search stalled for good
    from simkit.fitting.parameters import ParameterSpace

    space = ParameterSpace(("k",), np.array([1e-5]), np.array([1e5]), np.array([1.0]), ("log10",))
    for z in (-1e4, -800.0, 0.0, 800.0, 1e4):
        value, slope = jax.jvp(space.to_natural, (jnp.array([z]),), (jnp.ones(1),))
        assert np.isfinite(float(value[0])) and np.isfinite(float(slope[0]))
        assert 1e-5 <= float(value[0]) <= 1e5


def test_fit_with_log10_scales_given_starts_a_y0_function_and_a_noise_per_observable():
    import simkit
    from simkit import fitting

    # a -> b at rate k1, b decays at k2; the initial amount a0 is a parameter (y0 = [a0, 0])
    rhs = lambda t, y, p: jnp.stack([-p["k1"] * y[0], p["k1"] * y[0] - p["k2"] * y[1]])
    model = simkit.ODEModel(rhs=rhs, params={"k1": 0.5, "k2": 0.05, "a0": 1.0}, y0=[1.0, 0.0],
                            state_names=("a", "b"), name="chain")
    t = np.linspace(0.5, 20.0, 12)
    truth = simkit.solve(model, (0.0, 20.0), saveat=t)
    rng = np.random.default_rng(1)
    values = np.stack([truth["a"] + 0.02 * rng.standard_normal(12), truth["b"] + 0.05 * rng.standard_normal(12)], 1)
    data = simkit.Dataset(t, values, observed=("a", "b"), t0=0.0)
    # k2's lower bound 0.1 is above the data's 0.05: held there. The first start's k1 sits 1e-7
    # of the span above its lower bound, where a logistic transform on the natural scale is flat
    bounds = {"k1": (1e-5, 1e5), "k2": (0.1, 1e5), "a0": (0.1, 10.0)}
    result = simkit.fit(model, data, free=["k1", "k2", "a0"], bounds=bounds, initial={"k2": 0.5}, scales={"k1": "log10", "k2": "log10"},
                        loss=fitting.GaussianNLL(per_observable=True), initial_state=lambda p: jnp.stack([p["a0"], 0.0]),
                        starts=[{"k1": 1e-2, "k2": 3.0}, {"k1": 1.0, "k2": 0.2, "a0": 2.0}])
    assert result.optimizer_name == "LBFGSB"
    assert result.names == ("k1", "k2", "a0", "noise:a", "noise:b")
    assert result.start_ends.shape == (2, 5) and result.start_at_bound.shape == (2, 5)
    assert [s.name for s in result.start_status] == ["CONVERGED", "CONVERGED"]
    np.testing.assert_allclose(result.start_costs[0], result.start_costs[1], atol=1e-6)  # the same optimum
    # k2 ends exactly at its lower bound, and says so
    assert result.estimates["k2"] == 0.1
    assert result.start_at_bound.tolist() == [[0, -1, 0, 0, 0]] * 2
    assert "k2 at its lower bound 0.1" in result.message
    # each noise is its column's maximum-likelihood value: the root mean square residual
    mu, _ = result.problem.predict(jnp.asarray(result.theta), 0)
    rms = np.sqrt(np.mean((np.asarray(mu) - values) ** 2, axis=0))
    np.testing.assert_allclose([result.estimates["noise:a"], result.estimates["noise:b"]], rms, rtol=1e-5)
    # the initial state follows a0
    _, y0 = result.problem.params_and_y0(result.theta, 0)
    assert np.asarray(y0).tolist() == [result.estimates["a0"], 0.0]


def test_fit_input_errors_for_scales_and_starts():
    import simkit

    model = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0], state_names=("u",))
    data = simkit.Dataset([0.5, 1.0], [0.6, 0.37], observed=("u",), t0=0.0)
    with pytest.raises(InputError, match="log scale but may be negative"):
        simkit.fit(model, data, scales={"k": "log10"})
    with pytest.raises(InputError, match="scales must be one of"):
        simkit.fit(model, data, bounds={"k": (0.0, 5.0)}, scales={"k": "ln"})
    with pytest.raises(InputError, match=r"shape \(n_starts, 1\)"):
        simkit.fit(model, data, starts=np.ones((2, 3)))
    with pytest.raises(InputError, match=r"outside their bounds.*\(1, 'k'\)"):
        simkit.fit(model, data, bounds={"k": (0.0, 5.0)}, starts=[[1.0], [7.0]])
    with pytest.raises(InputError, match="initial_state function gives shape"):
        simkit.fit(model, data, initial_state=lambda p: jnp.ones(2))


def test_few_starts_run_on_the_host_where_the_default_device_is_an_accelerator(monkeypatch):
    """The placement rule for fits, with an accelerator pretended as JAX's default backend:
    fewer than `HOST_FIT_STARTS` starts go to the host's CPU (one lane: a CPU's default), more
    stay on JAX's default device; ``devices=`` and traced inputs keep the caller's choice."""
    from simkit import placement
    from simkit.fitting.bounded import default_lanes

    host = jax.local_devices(backend="cpu")[0]
    few, many = placement.HOST_FIT_STARTS - 1, placement.HOST_FIT_STARTS
    monkeypatch.setattr(placement.jax, "default_backend", lambda: "tpu")
    assert placement.starts_device(few, None) == host
    assert placement.starts_device(many, None) is None
    assert placement.starts_device(few, [host]) is None
    under_jit = []
    jax.jit(lambda x: under_jit.append(placement.starts_device(few, None, x)) or x)(jnp.ones(1))
    assert under_jit == [None]
    with placement.fit_placed(few):
        assert default_lanes(few) == 1
