"""Forward sensitivities of the stiff kernels against SciPy.

``jax.jacfwd`` of saved states with respect to the rate constants, through `simkit.solve`
(the kernels' custom_jvp: the discrete scheme's tangents along the steps taken), against the
sensitivity equations ``S' = J_y S + J_p`` integrated beside the state by SciPy's Radau at
rtol 1e-12 (the classic forward-sensitivity reference: CVODES, Hairer & Wanner's
sensitivity chapter). Robertson's rates span eleven decades (k1 = 0.04, k2 = 3e7), so each
sensitivity is compared relative to its own largest magnitude over the save times,
``d log y / d log k`` style: ``max_t |S - S_ref| / max_t |S_ref|`` per (state, rate).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate

import simkit
from simkit import models

ROB = models.get("robertson")
NAMES = ("k1", "k2", "k3")
TS = np.geomspace(1e-3, 40.0, 9)  # through the fast transient and into the slow phase
RTOL, ATOL = 1e-9, 1e-13


def scipy_sensitivities():
    """States and ``dy/dk`` at `TS` from the augmented system, SciPy Radau at rtol 1e-12."""
    p0 = {k: jnp.asarray(float(v)) for k, v in ROB.params.items()}
    n, m = 3, len(NAMES)

    def f_aug(z):
        y, s = z[:n], z[n:].reshape(n, m)
        f = lambda y, ks: ROB.rhs(0.0, y, dict(zip(NAMES, ks)))  # noqa: E731
        ks = jnp.stack([p0[k] for k in NAMES])
        jy = jax.jacfwd(f, 0)(y, ks)
        jp = jax.jacfwd(f, 1)(y, ks)
        return jnp.concatenate([f(y, ks), (jy @ s + jp).ravel()])

    f_aug = jax.jit(f_aug)
    jac = jax.jit(jax.jacfwd(f_aug))
    z0 = np.concatenate([np.asarray(ROB.y0, float), np.zeros(n * m)])
    # atol: the states' (y2 ~ 1e-5) and the sensitivities' smallest scales (dy2/dk2 ~ 1e-12)
    atol = np.concatenate([np.full(n, 1e-16), np.full(n * m, 1e-22)])
    out = scipy.integrate.solve_ivp(lambda t, z: np.asarray(f_aug(z)), (0.0, TS[-1]), z0, method="Radau",
                                    t_eval=TS, rtol=1e-12, atol=atol, jac=lambda t, z: np.asarray(jac(z)))
    assert out.success
    return out.y[:n].T, out.y[n:].T.reshape(len(TS), n, m)


@pytest.fixture(scope="module")
def reference():
    return scipy_sensitivities()


@pytest.mark.parametrize("solver", [simkit.Rodas5P(), simkit.BDF(), simkit.BDF(refactor_ratio=0.3)], ids=repr)
def test_rate_sensitivities_match_scipy(solver, reference):
    # BDF(refactor_ratio=0.3): the factors kept while c moves little, as the default does above
    # 128 states: the tangents go through the same Newton iterations with stale factors
    # (measured 1.1e-7 of each one's scale, against 8.8e-8 refactoring at every change of c)
    ys_ref, s_ref = reference

    def states(ks):
        params = dict(zip(NAMES, ks))
        return simkit.solve(ROB, (0.0, TS[-1]), saveat=TS, params=params, rtol=RTOL, atol=ATOL, solver=solver).ys

    ks = jnp.asarray([float(ROB.params[k]) for k in NAMES])
    # the states (the forward pass's own) and their sensitivities (t, state, rate): one program
    sens, ys = jax.jit(jax.jacfwd(lambda ks: (states(ks),) * 2, has_aux=True))(ks)
    sens, ys = np.asarray(sens), np.asarray(ys)
    assert np.max(np.abs(ys - ys_ref) / np.abs(ys_ref).max(axis=0)) < 1e-7
    rel = np.abs(sens - s_ref).max(axis=0) / np.abs(s_ref).max(axis=0)  # per (state, rate)
    # the discrete scheme's sensitivities converge with the tolerance like the states: at
    # rtol 1e-9 measured 3.5e-8 (Rodas5P) and 8.8e-8 (BDF) of each one's scale; the states
    # 2e-10 .. 7e-9 (RadauIIA5 1.1e-9, Rodas4 3.4e-8 and AutoSwitch 5.2e-8, checked the same
    # way, are left out for the suite's time: their gradients are checked in their own files)
    assert rel.max() < 1e-6, rel


def _loop_carry_shapes(jaxpr) -> set:
    """Shapes carried by every while loop in ``jaxpr`` (nested jaxprs included)."""
    shapes = set()
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "while":
            shapes |= {tuple(v.aval.shape) for v in eqn.outvars}
        for value in eqn.params.values():
            for item in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(item, "jaxpr", item)  # a ClosedJaxpr's jaxpr, or a Jaxpr
                if hasattr(inner, "eqns"):
                    shapes |= _loop_carry_shapes(inner)
    return shapes


def test_only_the_differentiated_inputs_are_pushed_through_the_loop():
    """The JVP rule pushes one direction per differentiated scalar (the other inputs arrive
    as symbolic zeros): d/d(t1, rho) carries 2 directions of Lorenz's 3 states, not the
    2 + 3 + 3 of (t0, t1, y0, params); the two derivatives are right (central differences
    of the solve, dy/dt1 = f(t1, y(t1))); and the save times alone (no direction through
    the loop, a path of its own)."""
    lorenz = models.get("lorenz")
    p0 = {k: jnp.asarray(float(v)) for k, v in lorenz.params.items()}

    @jax.jit  # one program for the value and its two difference points
    def final(t1, rho):
        return simkit.solve(lorenz, (0.0, t1), params={**p0, "rho": rho}, saveat=3, rtol=1e-11, atol=1e-11).ys[-1]

    t1, rho = 1.0, float(p0["rho"])
    shapes = _loop_carry_shapes(jax.make_jaxpr(jax.jacfwd(final, argnums=(0, 1)))(t1, rho).jaxpr)
    assert (2, 3) in shapes and (8, 3) not in shapes, sorted(shapes)
    d_t1, d_rho = jax.jit(jax.jacfwd(final, argnums=(0, 1)))(t1, rho)
    y1 = final(t1, rho)
    # (the discrete scheme's derivative: the last step stretches; measured 2.6e-9 relative)
    np.testing.assert_allclose(d_t1, lorenz.rhs(t1, y1, p0), rtol=1e-8)
    eps = 1e-5 * rho
    fd = (final(t1, rho + eps) - final(t1, rho - eps)) / (2 * eps)
    np.testing.assert_allclose(d_rho, fd, rtol=1e-6)
    # the save times alone (no direction through the loop): dy(t_k)/dt_k = f(t_k, y(t_k))
    ts = jnp.asarray([0.25, 0.5, 1.0])
    saved = lambda ts: simkit.solve(lorenz, (0.0, 1.0), saveat=ts, rtol=1e-11, atol=1e-11).ys  # noqa: E731
    f_saved = jax.vmap(lambda t, y: lorenz.rhs(t, y, p0))(ts, saved(ts))
    np.testing.assert_allclose(jax.jit(jax.grad(lambda ts: saved(ts).sum()))(ts), f_saved.sum(axis=1), rtol=1e-12)


def test_a_forward_only_jacobian_pushes_the_callers_directions():
    """Within `forward_tangents` (``k``), a solve whose differentiated inputs hold more than
    ``k`` scalars pushes the caller's ``k`` tangents through its loop, not one direction per
    input scalar: Lorenz's 3 parameters and 3 initial states all move with 2 scalars, so the
    loop carries 2 tangents of its 3 states, not 6. The Jacobian is the full sensitivity's
    (the same linear operations summed in another order), and ``jax.grad`` of the same
    function afterwards is unaffected: the compiled and cached derivatives of the two kinds
    are kept apart (a forward-only one cannot be transposed)."""
    from simkit.fitting.bounded import residuals_and_jacobian

    lorenz = models.get("lorenz")
    p0 = {k: float(v) for k, v in lorenz.params.items()}

    def final(z):
        params = {k: v * jnp.exp((i + 1) * z[0] - z[1]) for i, (k, v) in enumerate(p0.items())}
        y0 = jnp.asarray(lorenz.y0) * (1.0 + z[0] * jnp.arange(1.0, 4.0)) + z[1]

        def one(a):  # in a map over conditions, as a PEtab objective's: staged before it is differentiated
            y0, params = a
            return simkit.solve(lorenz, (0.0, 0.5), y0=y0, params=params, saveat=2, rtol=1e-10, atol=1e-10).ys[-1]

        return jax.lax.map(one, jax.tree_util.tree_map(lambda v: v[None], (y0, params)))[0]

    z = jnp.asarray([0.01, -0.02])
    forward = residuals_and_jacobian(final, 2)
    shapes = _loop_carry_shapes(jax.make_jaxpr(forward)(z).jaxpr)
    assert (2, 3) in shapes and (6, 3) not in shapes, sorted(shapes)
    y, jac = jax.jit(forward)(z)
    np.testing.assert_allclose(y, final(z), rtol=1e-14)
    full = jax.jit(jax.jacfwd(final))(z)  # outside the context: one direction per input scalar
    assert (6, 3) in _loop_carry_shapes(jax.make_jaxpr(jax.jacfwd(final))(z).jaxpr)
    np.testing.assert_allclose(jac, full, rtol=1e-11, atol=1e-11 * np.abs(full).max())
    grad = jax.jit(jax.grad(lambda z: final(z).sum()))(z)
    np.testing.assert_allclose(grad, full.sum(axis=0), rtol=1e-11)
    from simkit.kernels.autodiff import forward_tangents

    for bad in (0, -2, 2.0, True, "2"):
        with pytest.raises(simkit.InputError, match="directions must be a positive integer"):
            with forward_tangents(bad):
                pass


def test_saved_step_times_move_with_the_span():
    # saveat="steps": the step sizes are held constant, so every saved step time moves with
    # t0 and the last (t1 itself) with t1. A trapezoid integral of u' = -k u over the saved
    # steps then has d/dt1 = u(t1) and d/dt0 = -u(t1) (u(t0) = 1.5 is fixed); the step times'
    # tangents were zero, which gave d/dt1 = -0.006 instead of 0.456
    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 0.7}, y0=[1.5], state_names=("u",),
                            name="decay")
    kw = dict(saveat="steps", solver=simkit.Tsit5(), rtol=1e-10, atol=1e-10)
    n = int(simkit.solve(decay, (0.3, 2.0), **kw).stats["num_accepted_steps"]) + 1

    def integral(t0, t1):
        sol = simkit.solve(decay, (t0, t1), **kw)
        return jnp.trapezoid(sol.ys[:n, 0], sol.ts[:n]), sol.ts[:n]

    (d0, d1), (dts0, dts1) = jax.jit(jax.jacfwd(integral, argnums=(0, 1)))(0.3, 2.0)
    np.testing.assert_array_equal(dts0, np.r_[np.ones(n - 1), 0.0])  # the last saved time is t1
    np.testing.assert_array_equal(dts1, np.r_[np.zeros(n - 1), 1.0])
    u1 = 1.5 * np.exp(-0.7 * 1.7)
    np.testing.assert_allclose([d0, d1], [-u1, u1], rtol=1e-3)  # the trapezoid rule's own error: 2e-4


def test_derivatives_with_respect_to_a_complex_initial_state():
    # psi' = -i (w + g |psi|^2) psi keeps |psi| and turns the phase: psi(T) = psi0
    # exp(-i (w + g |psi0|^2) T). A complex y0 is two real directions (its real and
    # imaginary parts) in the kernels' forward sensitivities; JAX refused the rule's complex
    # tangents for the real outputs before
    nls = simkit.ODEModel(rhs=lambda t, y, p: -1j * (p["w"] + p["g"] * jnp.abs(y) ** 2) * y,
                          params={"w": 1.0, "g": 0.5}, y0=np.array([1.0 + 0.0j]), state_names=("psi",), name="nls")

    def final(a, b, w, exact=False):
        if exact:
            y0 = a + 1j * b
            psi = y0 * jnp.exp(-1j * (w + 0.5 * jnp.abs(y0) ** 2) * 1.5)
        else:
            psi = simkit.solve(nls, (0.0, 1.5), y0=jnp.stack([a + 1j * b]), params={"w": w}, saveat=2,
                               solver=simkit.Tsit5(), rtol=1e-10, atol=1e-10).ys[-1, 0]
        return jnp.stack([jnp.real(psi), jnp.imag(psi)])

    x = (0.8, 0.3, 1.0)
    jac = np.array(jax.jit(jax.jacfwd(final, argnums=(0, 1, 2)))(*x))
    exact = jax.jit(jax.jacfwd(lambda *v: final(*v, exact=True), argnums=(0, 1, 2)))(*x)
    np.testing.assert_allclose(jac, np.array(exact), rtol=1e-7, atol=1e-9)
    # reverse mode: the same rule, transposed
    grad = jax.jit(jax.grad(lambda *v: final(*v)[1], argnums=(0, 1, 2)))(*x)
    np.testing.assert_allclose(np.array(grad), jac[:, 1], rtol=1e-12)


def test_a_state_saved_at_t0_moves_with_t0_as_the_solution_does():
    """y' = -k y: ys[0] at a save time that is t0 is y0 whatever t0 (d/dt0 = 0); at a fixed
    save time 0 it is y0 exp(k t0) (d/dt0 = k y0). The implicit kernels' segment before the
    first step is a constant: Rodas4/5P, RadauIIA5 and BDF gave -k y0 and 0 (the save is
    `kernels.loop.save_at`, shared by every kernel)."""
    solver = simkit.Rodas5P()
    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 0.7}, y0=[2.0], state_names=("y",))

    def first(t0, moving):
        saveat = 3 if moving else jnp.array([0.0, 2.0])
        return simkit.solve(decay, (t0, 2.0), saveat=saveat, solver=solver, rtol=1e-10, atol=1e-12).ys[0, 0]

    d_first = jax.jit(jax.grad(first), static_argnums=1)
    assert abs(float(d_first(0.0, True))) < 1e-12
    np.testing.assert_allclose(float(d_first(0.0, False)), 1.4, rtol=1e-12)


@pytest.mark.parametrize("engine", ["kernel", "diffrax"])
def test_an_empty_span_ends_where_its_end_moves(engine):
    """t1 == t0 (traced): no step runs, and y_final, t_final (and diffrax's state saved at t1
    == t0) were y0 and t0 with tangent 0 in t1 and t0. The exact tangents: y(t1) moves by f0
    with t1 and by -f0 with t0, t_final by 1 with t1 (found by probing)."""
    import diffrax

    solver = simkit.Tsit5() if engine == "kernel" else diffrax.Tsit5()
    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 0.7}, y0=[2.0], state_names=("y",))

    def end(t0, t1):
        sol = simkit.solve(decay, (t0, t1), saveat=2, solver=solver, rtol=1e-10, atol=1e-12)
        return {"y_final": sol.y_final[0], "t_final": sol.t_final, "ys": sol.ys[-1, 0]}

    # reverse mode, each output's gradient a row of the Jacobian: one compiled program
    jacobian = jax.jit(jax.jacrev(end, argnums=(0, 1)))(0.0, 0.0)
    for what, d_t0, d_t1 in [("y_final", 1.4, -1.4), ("ys", 1.4, -1.4), ("t_final", 0.0, 1.0)]:
        np.testing.assert_allclose(np.array(jacobian[what]), [d_t0, d_t1], rtol=1e-12, atol=1e-15, err_msg=what)


def test_derivatives_through_dense_output_that_would_not_fit_are_refused():
    """The dense record is kept once per direction: a 70-state BDF solve's gradient over 70
    parameters took 41 GiB and was killed without a message."""
    n = 70
    model = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": jnp.ones(n)}, y0=np.ones(n),
                            state_names=tuple(f"y{i}" for i in range(n)), stiff=True)

    def value(k):
        return jnp.sum(simkit.solve(model, (0.0, 1.0), params={"k": k}, saveat=2, dense=True).evaluate(0.5))

    with pytest.raises(simkit.InputError, match="70 directions x 100000 steps.*memory budget"):
        jax.eval_shape(jax.grad(value), jnp.ones(n))


def test_derivatives_of_a_dense_autoswitch_solve():
    """AutoSwitch's dense record holds its phase flags (booleans), whose tangents are float0:
    every derivative of a dense AutoSwitch solve stopped with JAX's "float0 is not a valid
    dtype" (found by probing). Against the same solve without dense output (the saved values
    are the same bits) and its central difference."""
    pendulum = simkit.ODEModel(rhs=lambda t, y, p: jnp.stack([y[1], -p["k"] * jnp.sin(y[0])]), params={"k": 2.0},
                               y0=[1.0, 0.0], state_names=("x", "v"))

    def end(k, dense):
        sol = simkit.solve(pendulum, (0.0, 3.0), params={"k": k}, rtol=1e-10, atol=1e-12, saveat=2, dense=dense,
                           solver=simkit.AutoSwitch())
        return sol.y_final[0] + (sol.evaluate(1.5)[0] if dense else 0.0)

    # one compiled value-and-gradient program per setting, k an argument: the gradient at 2
    # and the values at 2 +- 1e-6 all come from it
    value_and_grad = jax.jit(jax.value_and_grad(end), static_argnums=1)
    g = {dense: float(value_and_grad(2.0, dense)[1]) for dense in (True, False)}
    fd = {dense: (float(value_and_grad(2.0 + 1e-6, dense)[0]) - float(value_and_grad(2.0 - 1e-6, dense)[0])) / 2e-6
          for dense in (True, False)}
    np.testing.assert_allclose(g[True] - g[False], fd[True] - fd[False], rtol=1e-5)
