"""The Jacobian's pattern read from the rhs's program (simkit/kernels/structure.py).

The pattern must hold every entry the Jacobian can have (else the banded BDF's Newton
matrix misses a coupling): each case's pattern is compared with the union of exact
Jacobians (``jax.jacfwd``) at random states, times and parameters, and where the analysis
is exact, equal to it."""

import jax
import jax.experimental
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import simkit
from simkit.kernels import structure
from simkit.kernels.structure import MAX_ENTRIES, Unstructured, depends_on_time, jacobian_structure

N = 12
A = np.diag(-2.0 * np.ones(N)) + np.diag(np.ones(N - 1), 1)
IDX = np.array([3, 3, 7])
SWAP = np.array([1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10])

TABLE = np.linspace(0.0, 1.0, 50) ** 2


@jax.custom_jvp
def _coupled_sin(x):  # a JVP rule that couples more than the primal does
    return jnp.sin(x)


@_coupled_sin.defjvp
def _(primals, tangents):
    return _coupled_sin(primals[0]), jnp.cos(primals[0]) * tangents[0] + 0.1 * jnp.roll(tangents[0], 1)


@jax.custom_jvp
def _straight_through_round(x):
    return jnp.round(x)


@_straight_through_round.defjvp
def _(primals, tangents):
    return _straight_through_round(primals[0]), tangents[0]


@jax.custom_jvp
def _tabulated(x):  # a table lookup through an integer index, with its analytic derivative
    return jnp.asarray(TABLE)[jnp.clip((x * 10).astype(jnp.int32) + 25, 0, 49)]


@_tabulated.defjvp
def _(primals, tangents):
    return _tabulated(primals[0]), 2 * primals[0] * tangents[0]


# (rhs, exact): exact where the pattern equals the Jacobian's union over random points
CASES = {
    "roll stencil": (lambda t, y, p: jnp.roll(y, 1) - 2 * y + jnp.roll(y, -1), True),
    "matrix constant": (lambda t, y, p: A @ y * p["k"], True),
    "matrix parameter": (lambda t, y, p: p["M"] @ y, True),  # its zeros are not known: dense
    "scatter set and add": (lambda t, y, p: jnp.zeros_like(y).at[1:-1].set(y[2:] - y[:-2]).at[IDX].add(y[:3]), True),
    "convolve": (lambda t, y, p: jnp.convolve(y, jnp.array([1.0, -2.0, 1.0]), mode="same"), True),
    "convolve, kernel zero": (lambda t, y, p: jnp.convolve(y, jnp.array([1.0, 0.0, 1.0]), mode="same"), True),
    "gather": (lambda t, y, p: y[SWAP] * y, True),
    "fori_loop": (lambda t, y, p: lax.fori_loop(0, 3, lambda i, c: jnp.roll(c, 1) * y, y), True),
    "cond on t": (lambda t, y, p: lax.cond(t > 1, lambda y: y[::-1], lambda y: y, y), True),
    "constant mask": (lambda t, y, p: y * jnp.array([0.0, 1.0] * (N // 2)), True),
    "2-D reshape": (lambda t, y, p: (y.reshape(3, 4) @ jnp.ones((4, 4))).T.ravel(), True),
    "relu and norm": (lambda t, y, p: jax.nn.relu(y) + jnp.linalg.norm(y[:2]), True),
    "stack of scalars": (lambda t, y, p: jnp.stack([y[0] * y[1], y[1] - y[2]] + [y[i] for i in range(2, N)]), True),
    "stop_gradient, floor": (lambda t, y, p: lax.stop_gradient(y) + jnp.floor(y) + y, True),
    "pad edge": (lambda t, y, p: jnp.diff(jnp.pad(y, 1, mode="edge"), 2), True),
    # found by probing: a custom_jvp function's derivative is its rule, not its primal
    "custom_jvp rule couples": (lambda t, y, p: _coupled_sin(y), True),
    "custom_jvp straight-through": (lambda t, y, p: _straight_through_round(y) + jnp.roll(y, 1), True),
    "custom_jvp table lookup": (lambda t, y, p: _tabulated(y), True),
    "bitwise constant indices": (lambda t, y, p: jnp.where((jnp.arange(N) & 1) == 0, y[jnp.arange(N) | 1],
                                                             y[~jnp.arange(N)]), True),
    "lax.pad shift past a short axis": (lambda t, y, p: (lax.pad(y.reshape(6, 2), 0.0, [(1, -1, 0), (0, 0, 0)])
                                                         + lax.pad(y.reshape(6, 2), 0.0, [(0, 0, 0), (3, -3, 0)])
                                                         + y.reshape(6, 2)).ravel(), True),
    "reshape with dimensions": (lambda t, y, p: lax.reshape(y.reshape(3, 4), (12,), dimensions=(1, 0)) * y, True),
    "scan of no steps": (lambda t, y, p: y + lax.scan(lambda c, x: (c + x, x * c), 0.0, y[:0])[1].sum(), True),
    "while_loop": (lambda t, y, p: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.roll(c[1], 1) * y),
                                                  (0, y))[1], False),
    "cumsum": (lambda t, y, p: jnp.cumsum(y) + lax.cumsum(y[::-1].reshape(3, 4), axis=1, reverse=True).ravel(), True),
    "tile, pow by constants, per-row fft": (lambda t, y, p: jnp.tile(y[:6], 2) * jnp.prod(y.reshape(3, 4) ** jnp.array([[0.0, 1.0, 2.0, 0.0]]), axis=1).repeat(4) + jnp.abs(jnp.fft.rfft(y.reshape(3, 4))).repeat(2, axis=1)[:, :4].ravel(), True),
    "sort": (lambda t, y, p: jnp.sort(y), False),  # everything
}


def _union_of_jacobians(f, n, rng):
    jac = jax.jit(jax.jacfwd(f, 1))
    out = np.zeros((n, n), bool)
    for t in (0.0, 2.0):
        for _ in range(3):
            p = {"k": 2.0, "M": rng.normal(size=(n, n))}
            out |= np.asarray(jac(t, rng.uniform(0.0, 3.0, n), p)) != 0
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_the_pattern_holds_every_entry_of_the_jacobian(name):
    f, exact = CASES[name]
    pattern = jacobian_structure(f, 0.0, jnp.ones(N), {"k": 2.0, "M": np.eye(N)}).toarray() != 0
    truth = _union_of_jacobians(f, N, np.random.default_rng(0))
    assert np.all(pattern >= truth), np.argwhere(truth & ~pattern)
    if exact:
        np.testing.assert_array_equal(pattern, truth)


def test_a_lax_map_of_more_steps_than_are_unrolled_is_followed_row_by_row():
    """lax.map (a scan without a carry) over 40 rows: each row's own pairs, as jax.vmap of its
    function; joined over the scanned axis it was dense (found by probing)."""
    n = 80

    def f(t, y, p):
        return lax.map(lambda r: r * r[::-1] + jnp.sin(r), y.reshape(40, 2)).ravel()

    pattern = jacobian_structure(f, 0.0, jnp.ones(n), {}).toarray() != 0
    np.testing.assert_array_equal(pattern, _union_of_jacobians(f, n, np.random.default_rng(2)))


def test_a_where_branch_the_state_never_takes_is_in_the_pattern():
    """Both branches of ``jnp.where``, whatever the state: here y < 1e9 at every probe."""
    def f(t, y, p):
        return jnp.where(y > 1e9, 1e5 * y[::-1], -y)

    pattern = jacobian_structure(f, 0.0, jnp.ones(N), {}).toarray() != 0
    i = np.arange(N)
    assert pattern[i, i].all() and pattern[i, N - 1 - i].all() and pattern.sum() == 2 * N


@pytest.mark.parametrize("name", ["heat_1d", "burgers", "kuramoto_sivashinsky", "pollu", "hires", "oregonator"])
def test_the_library_models_patterns_are_their_jacobians(name):
    model = simkit.models.get(name)
    model = model.to_ode() if hasattr(model, "to_ode") else model
    n = model.n_states
    y0 = np.asarray(model.y0, float).reshape(n)
    params = {k: np.asarray(v, float) for k, v in dict(model.params).items()}
    pattern = jacobian_structure(model.rhs, 0.0, y0, params).toarray() != 0
    jac = jax.jit(jax.jacfwd(model.rhs, 1))
    rng = np.random.default_rng(1)
    truth = np.zeros((n, n), bool)
    for k in range(3):
        y = y0 * rng.uniform(0.5, 1.5, n) + 1e-3 * rng.uniform(0.5, 1.5, n)
        truth |= np.asarray(jac(0.3 * k, y, params)) != 0
    np.testing.assert_array_equal(pattern, truth)


def test_a_pattern_too_large_to_hold_gives_up():
    """An all-to-all coupling of sqrt(MAX_ENTRIES) + 1 states: the analysis raises
    Unstructured (the model is then treated as dense), not a memory error."""
    n = int(np.sqrt(MAX_ENTRIES)) + 1
    with pytest.raises(Unstructured):
        jacobian_structure(lambda t, y, p: jnp.sort(y), 0.0, jax.ShapeDtypeStruct((n,), jnp.float64), {})


# (rhs, whether d rhs / d t may be nonzero): `depends_on_time`, which lets a Rosenbrock step
# skip the time derivative of an autonomous rhs
TIME_CASES = {
    "autonomous": (lambda t, y, p: -p["k"] * y, False),
    "forcing sin t": (lambda t, y, p: -y + jnp.sin(t), True),
    "t times a parameter": (lambda t, y, p: -y * (p["k"] * t), True),
    "t in a loop": (lambda t, y, p: lax.fori_loop(0, 3, lambda i, c: c * jnp.cos(t), y), True),
    "t in a custom_jvp": (lambda t, y, p: _coupled_sin(y + t), True),
    "t sorted with y": (lambda t, y, p: jnp.sort(y * t), True),
    "where on t": (lambda t, y, p: jnp.where(t > 1, -y, y), False),
    "cond on t": CASES["cond on t"][:1] + (False,),
    "floor of t": (lambda t, y, p: y * jnp.floor(t), False),
    "stop_gradient of t": (lambda t, y, p: y * lax.stop_gradient(t), False),
}


@pytest.mark.parametrize("name", list(TIME_CASES))
def test_time_dependence_is_read_from_the_program(name):
    """The answer, and never False where ``jax.jacfwd`` in t finds a nonzero entry."""
    f, expected = TIME_CASES[name]
    p = {"k": 2.0}
    assert depends_on_time(f, 0.0, jnp.ones(N), p) is expected
    dfdt = jax.jit(jax.jacfwd(f, 0))
    rng = np.random.default_rng(3)
    moved = any(np.any(np.asarray(dfdt(t, rng.uniform(0.5, 2.0, N), p)) != 0) for t in (0.3, 1.7, 2.9))
    assert moved == expected


def test_time_dependence_of_an_rhs_over_traced_arguments():
    """Inside a transform the step asks with tracers (and an rhs closing over one): only
    their shapes are read."""
    found = []

    @jax.jit
    def probe(y, k, t_forcing):
        found.append(depends_on_time(lambda t, y, p: -p["k"] * y + t_forcing, 0.5, y, {"k": k}))
        found.append(depends_on_time(lambda t, y, p: -p["k"] * y + t_forcing * t, 0.5, y, {"k": k}))
        return y

    probe(jnp.ones(3), 2.0, 1.0)
    assert found == [False, True]


def test_an_autonomous_rosenbrock_solve_matches_the_one_with_its_time_derivative(monkeypatch):
    """Robertson with Rodas5P (and the stiff phase of AutoSwitch): skipping the zero d f / d t
    leaves the solution as it was, to rounding."""
    model = simkit.models.get("robertson")
    ts = np.logspace(-4, 2, 7)

    def solve(solver):
        sol = simkit.solve(model, (0.0, 100.0), saveat=ts, rtol=1e-6, atol=1e-10, solver=solver)
        return np.asarray(sol.ys), int(sol.stats["num_steps"])

    fast = [solve(s) for s in (simkit.Rodas5P(), simkit.AutoSwitch())]
    monkeypatch.setattr(structure, "depends_on_time", lambda *a: True)
    jax.clear_caches()
    full = [solve(s) for s in (simkit.Rodas5P(), simkit.AutoSwitch())]
    monkeypatch.undo()
    jax.clear_caches()  # (no program compiled with the patch outlives the test)
    for (ys, steps), (ys_full, steps_full) in zip(fast, full):
        assert steps == steps_full
        np.testing.assert_allclose(ys, ys_full, rtol=1e-12, atol=1e-20)


@jax.custom_jvp
def _cos_rule_stops_its_tangent(x):
    return jnp.cos(x)


@_cos_rule_stops_its_tangent.defjvp
def _(primals, tangents):  # stop_gradient of the tangent is the tangent when the rule runs
    return jnp.cos(primals[0]), -jnp.sin(primals[0]) * lax.stop_gradient(tangents[0])


def test_a_custom_jvp_rule_that_stops_its_tangent_still_moves_with_t():
    """Found by probing: the analysis dropped ``stop_gradient(dx)`` inside the rule, said the
    rhs was autonomous, and Rodas5P without its ``f_t`` ran out of steps."""
    f = lambda t, y, p: -p["k"] * (y - _cos_rule_stops_its_tangent(t))  # noqa: E731
    assert depends_on_time(f, 0.0, jnp.ones(3), {"k": 1e3})
    assert np.any(np.asarray(jax.jacfwd(f, 0)(1.0, jnp.ones(3), {"k": 1e3})) != 0)
    pattern = jacobian_structure(lambda t, y, p: _cos_rule_stops_its_tangent(y), 0.0, jnp.ones(3), {}).toarray()
    np.testing.assert_array_equal(pattern != 0, np.eye(3, dtype=bool))  # elementwise, not dense


def test_a_callback_is_not_run_by_the_analysis_and_its_value_is_unknown():
    """Found by probing: an ``io_callback`` that read 0 when the program was analysed was
    run once more, and its 0 taken for all times, so ``amp * cos(t)`` looked autonomous."""
    calls = []

    def read_amplitude():
        calls.append(1)
        return np.float64(0.0)

    def f(t, y, p):
        amp = jax.experimental.io_callback(read_amplitude, jax.ShapeDtypeStruct((), jnp.float64))
        return -p["k"] * (y - amp * jnp.cos(t))

    assert depends_on_time(f, 0.0, jnp.ones(2), {"k": 1.0})
    assert calls == []
