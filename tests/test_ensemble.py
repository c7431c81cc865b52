"""simkit.ensemble: batching, chunking and sharding (4 simulated CPU devices), statistics."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit import models

LV = models.get("lotka_volterra")
ALPHAS = np.linspace(0.4, 0.7, 37)  # not a multiple of the chunk or of the device count
TIGHT = dict(rtol=1e-10, atol=1e-10)


def test_members_match_their_own_solves():
    ens = simkit.ensemble(LV, (0.0, 10.0), params={"alpha": ALPHAS}, saveat=11, **TIGHT)
    assert ens.ys.shape == (37, 11, 2) and ens.n_members == 37 and ens.ok.all()
    for i in (0, 17, 36):
        single = simkit.solve(LV, (0.0, 10.0), params={"alpha": ALPHAS[i]}, saveat=11, **TIGHT)
        np.testing.assert_allclose(ens.ys[i], single.ys, rtol=1e-12)
    np.testing.assert_array_equal(ens.params["alpha"], ALPHAS)
    # max_step and dt0 are shared numbers (ensemble had neither)
    limited = simkit.ensemble(LV, (0.0, 10.0), params={"alpha": ALPHAS}, saveat=11, max_step=0.05, dt0=1e-3, **TIGHT)
    single = simkit.solve(LV, (0.0, 10.0), params={"alpha": ALPHAS[17]}, saveat=11, max_step=0.05, dt0=1e-3, **TIGHT)
    np.testing.assert_allclose(limited.ys[17], single.ys, rtol=1e-12)
    assert (limited.stats["num_accepted_steps"] >= 200).all() and single.stats["num_accepted_steps"] >= 200


def test_results_do_not_depend_on_chunks_devices_or_balancing():
    lorenz = models.get("lorenz")  # chaotic: any rounding difference would grow and show
    rhos = np.random.default_rng(1).uniform(10.0, 50.0, 70)
    kwargs = dict(params={"rho": rhos}, saveat=6, rtol=1e-6, atol=1e-6)
    base = simkit.ensemble(lorenz, (0.0, 5.0), **kwargs)  # 4 devices, refilled lanes
    assert len(jax.local_devices()) == 4
    for other in (  # refilled lanes: the same bits whatever the lanes and devices
        simkit.ensemble(lorenz, (0.0, 5.0), chunk_size=8, **kwargs),
        simkit.ensemble(lorenz, (0.0, 5.0), chunk_size=64, devices=jax.local_devices()[:2], **kwargs),
    ):
        np.testing.assert_array_equal(other.ys, base.ys)
        np.testing.assert_array_equal(other.stats["num_steps"], base.stats["num_steps"])
    # lockstep chunks (balanced or not) are another program: the same steps, equal to rounding
    balanced = simkit.ensemble(lorenz, (0.0, 5.0), balance=True, **kwargs)
    np.testing.assert_allclose(balanced.ys, base.ys, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(balanced.stats["num_steps"], base.stats["num_steps"])
    np.testing.assert_array_equal(balanced.stats["num_rhs"], base.stats["num_rhs"])
    lockstep = simkit.ensemble(lorenz, (0.0, 5.0), chunk_size=64, refill=False, devices=jax.local_devices()[:2],
                               **kwargs)
    np.testing.assert_array_equal(lockstep.ys, balanced.ys)  # lockstep: the same bits whatever the chunks


def test_one_chosen_device_runs_the_members(monkeypatch):
    """devices=[d] runs on d, not on the default device (an accelerator's host CPU, say)."""
    from simkit import _ensemble

    ran_on = []
    run = _ensemble._run

    def spy(*args, **kwargs):
        out = run(*args, **kwargs)
        ran_on.extend(leaf.devices() for leaf in jax.tree_util.tree_leaves(out))
        return out

    monkeypatch.setattr(_ensemble, "_run", spy)
    last = jax.local_devices()[-1]
    ens = simkit.ensemble(LV, (0.0, 2.0), params={"alpha": ALPHAS}, saveat=3, devices=[last])
    assert ran_on and all(d == {last} for d in ran_on)
    base = simkit.ensemble(LV, (0.0, 2.0), params={"alpha": ALPHAS}, saveat=3, devices=jax.local_devices()[:1])
    np.testing.assert_array_equal(ens.ys, base.ys)


def test_default_lanes_per_device():
    from simkit._ensemble import lane_state_bytes, lanes_per_device

    big = 10**9  # no memory limit
    # a CPU's refilled queue: 256 lanes, fewer below 16 members per lane, at least 64
    assert lanes_per_device(5000, "cpu", True, big) == 256
    assert lanes_per_device(1250, "cpu", True, big) == 80  # 78 rounded up to the vector width
    assert lanes_per_device(250, "cpu", True, big) == 64
    assert lanes_per_device(150, "cpu", True, big) == 152  # under 3 members per lane at 64: one round
    assert lanes_per_device(37, "cpu", True, big) == 40  # never more than the members (rounded)
    assert lanes_per_device(5, "cpu", True, big) == 32  # at least four vectors (VECTOR_BYTES)
    assert lanes_per_device(5, "cpu", False, big, chunk_size=8) == 32
    assert lanes_per_device(1250, "cpu", True, 12) == 8  # unless fewer fit: as many vectors as fit
    assert lanes_per_device(1250, "cpu", False, big) == 256  # lockstep chunks keep 256
    assert lanes_per_device(1250, "cpu", True, 40) == 40  # the memory budget's
    assert lanes_per_device(1250, "cpu", True, big, chunk_size=100) == 104  # given: only rounded
    # an accelerator: 2^17 lanes, or every member where there are fewer, and at most 2 GiB
    # of estimated lane state
    assert lanes_per_device(10**6, "gpu", True, big) == 2**17
    assert lanes_per_device(100_000, "gpu", True, big) == 100_000
    small = lane_state_bytes(3, True, 8)  # Robertson: about 1.3 KB a lane
    assert lanes_per_device(10**6, "gpu", True, big, lane_bytes=small) == 2**17
    stiff = lane_state_bytes(64, True, 8)  # 64 states, implicit: about 221 KB a lane
    lanes = lanes_per_device(10**6, "gpu", True, big, lane_bytes=stiff)
    assert lanes % 8 == 0 and lanes * stiff <= 2**31 + 8 * stiff and lanes < 2**17 // 8
    assert lanes_per_device(5000, "cpu", True, big, lane_bytes=stiff) == 256  # not on a CPU


def test_batched_initial_states_and_failed_members_are_reported():
    # y' = k y^2, y(0) = y0: blows up at t = 1 / (k y0); the others are exact 1/(1/y0 - k t)
    model = simkit.ODEModel(rhs=lambda t, y, p: p["k"] * y**2, params={"k": 1.0}, y0=[0.5],
                            state_names=("y",), name="blowup")
    y0 = np.array([[0.1], [0.2], [0.25], [1.0], [4.0]])  # members 3 and 4 blow up before t = 2
    ens = simkit.ensemble(model, (0.0, 2.0), y0=y0, saveat=5, **TIGHT)
    assert list(ens.failures) == [3, 4]
    assert all("underflow" in reason or "non-finite" in reason for reason in ens.failures.values())
    t = np.linspace(0.0, 2.0, 5)
    for i in range(3):
        np.testing.assert_allclose(ens.ys[i, :, 0], 1.0 / (1.0 / y0[i, 0] - t), rtol=1e-8)
    # statistics leave the failed members out
    np.testing.assert_allclose(ens.mean()[:, 0], ens.ys[:3, :, 0].mean(axis=0), rtol=1e-12)
    assert "failed=2" in repr(ens)


def test_statistics_exports_and_plot():
    ens = simkit.ensemble(LV, (0.0, 5.0), params={"alpha": ALPHAS, "gamma": 0.8}, saveat=6)
    ys = np.asarray(ens.ys)
    np.testing.assert_allclose(ens.mean(), ys.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(ens.std(), ys.std(axis=0, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(ens.quantile(0.9), np.quantile(ys, 0.9, axis=0), rtol=1e-12)
    np.testing.assert_allclose(ens["prey"], ys[:, :, 0])
    ds = ens.to_xarray()  # round trips in detail: tests/test_io.py
    assert ds["prey"].dims == ("member", "t") and ds["y0"].dims == ("member", "state")
    np.testing.assert_array_equal(ds["param_alpha"].values, ALPHAS)
    ax = ens.plot(state="predator")
    assert len(ax.collections) == 2 and len(ax.get_lines()) == 1


def test_linear_decay_with_gaussian_rate_matches_closed_form_mean():
    """y' = -k y, y(0) = 1, k ~ N(mu, s^2): E[y(t)] = exp(-mu t + s^2 t^2 / 2)."""
    model = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0],
                            state_names=("y",), name="decay")
    mu, s, n = 1.0, 0.2, 4000
    k = mu + s * np.random.default_rng(7).standard_normal(n)
    ens = simkit.ensemble(model, (0.0, 3.0), params={"k": k}, saveat=7, **TIGHT)
    t = np.linspace(0.0, 3.0, 7)
    exact_mean = np.exp(-mu * t + 0.5 * s**2 * t**2)
    exact_var = np.exp(-2 * mu * t + 2 * s**2 * t**2) - exact_mean**2
    standard_error = np.sqrt(exact_var / n) + 1e-15
    z = np.abs(ens.mean()[:, 0] - exact_mean) / standard_error
    assert z.max() < 4.0, z  # a 4-sigma Monte-Carlo bound (seeded)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"params": {"alpha": np.ones(3)}, "y0": np.ones((4, 2))}, simkit.ShapeError, "member counts disagree"),
        ({}, simkit.ShapeError, "nothing is batched"),
        ({"params": {"alpha": np.ones((3, 2))}}, simkit.ShapeError, "parameter 'alpha'"),
        ({"params": {"omega": np.ones(3)}}, simkit.ParameterError, "no parameter"),
        ({"params": {"alpha": np.array([1.0, np.nan])}}, simkit.ParameterError, r"members \[1\]"),
        ({"y0": np.ones((3, 5))}, simkit.ShapeError, r"\(members, 2\)"),
    ],
)
def test_ensemble_input_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        simkit.ensemble(LV, (0.0, 1.0), **kwargs)


def test_samplers_are_reproducible_and_fill_their_ranges(key):
    lhs = simkit.sample.latin_hypercube(key, {"alpha": (0.4, 0.7), "gamma": (0.5, 1.0)}, 64)
    again = simkit.sample.latin_hypercube(key, {"alpha": (0.4, 0.7), "gamma": (0.5, 1.0)}, 64)
    np.testing.assert_array_equal(lhs["alpha"], again["alpha"])
    for name, (lo, hi) in {"alpha": (0.4, 0.7), "gamma": (0.5, 1.0)}.items():
        strata = np.floor((np.asarray(lhs[name]) - lo) / (hi - lo) * 64).astype(int)
        np.testing.assert_array_equal(np.sort(strata), np.arange(64))  # one member per stratum
    u = simkit.sample.uniform(key, {"alpha": (0.4, 0.7)}, 1000)["alpha"]
    assert 0.4 <= float(u.min()) and float(u.max()) < 0.7
    z = simkit.sample.normal(key, {"alpha": (0.55, 0.05)}, 4000)["alpha"]
    assert abs(float(z.mean()) - 0.55) < 4 * 0.05 / np.sqrt(4000)
    with pytest.raises(simkit.InputError, match=r"needs \(low, high\) as two real numbers"):
        simkit.sample.uniform(key, {"alpha": (0.4,)}, 10)
    ens = simkit.ensemble(LV, (0.0, 2.0), params=lhs, saveat=3)
    assert ens.n_members == 64 and ens.ok.all()


def test_memory_budget_limits_the_chunk_without_changing_results():
    kwargs = dict(params={"alpha": ALPHAS}, saveat=201, **TIGHT)
    small = simkit.ensemble(LV, (0.0, 5.0), memory_budget=8 * 2 * 201 * 2 * 8, **kwargs)  # 8 members
    large = simkit.ensemble(LV, (0.0, 5.0), **kwargs)
    np.testing.assert_array_equal(small.ys, large.ys)


def test_progress_batches_give_identical_results_and_draw_a_bar(capsys):
    lorenz = models.get("lorenz")
    rhos = np.random.default_rng(3).uniform(10.0, 50.0, 4400)
    kwargs = dict(params={"rho": rhos}, saveat=4, rtol=1e-6, atol=1e-6, chunk_size=32)
    quiet = simkit.ensemble(lorenz, (0.0, 2.0), progress=False, **kwargs)
    assert capsys.readouterr().err == ""
    shown = simkit.ensemble(lorenz, (0.0, 2.0), progress=True, **kwargs)
    err = capsys.readouterr().err
    # 4400 members on 4 devices in chunks of 32: 35 chunks per device, two batches of 18 (a
    # refilled queue's batch holds 16 members per lane or more); the bar (tqdm) counts
    # members, padding excluded
    assert "4400/4400" in err and "ensemble lorenz" in err and "members" in err
    np.testing.assert_array_equal(shown.ys, quiet.ys)
    np.testing.assert_array_equal(shown.status, quiet.status)
    locked = simkit.ensemble(lorenz, (0.0, 2.0), progress=True, refill=False, **kwargs)  # 20 batches
    assert "4400/4400" in capsys.readouterr().err
    np.testing.assert_allclose(locked.ys, quiet.ys, rtol=1e-12, atol=1e-12)


def test_host_batches_keep_many_members_per_lane():
    from simkit._ensemble import host_batches

    assert host_batches(20, False, True) == (1, 20)  # no bar: one batch
    assert host_batches(20, True, False) == (20, 1)  # lockstep chunks: up to 20 batches
    assert host_batches(41, True, False) == (14, 3)
    assert host_batches(20, True, True) == (1, 20)  # a queue: under 2 x 16 chunks, one batch
    assert host_batches(35, True, True) == (2, 18)
    n, per = host_batches(196, True, True)  # 100,000 members on 2 devices, 256 lanes
    assert per >= 16 and n * per == 196 and 6 <= n <= 12  # no padding here
    n, per = host_batches(1954, True, True)  # a million
    assert 10 <= n <= 20 and 0 <= per * n - 1954 < n  # (17, 115): one chunk of padding


def test_members_saving_at_the_ends_step_in_blocks():
    # saveat=2 (t0, t1) or 1 (t1; here backwards): the queue steps in blocks of attempts
    # (kernel_queue.BLOCK) and saves between them. The same bits whatever the lanes and devices; against lockstep
    # chunks the same steps, counters and statuses (members stopped by max_steps included)
    # and the same values to rounding
    from simkit._prepare import prepare
    from simkit.engines.kernel_queue import ends_only

    lorenz = models.get("lorenz")
    rhos = np.random.default_rng(4).uniform(10.0, 50.0, 70)
    kwargs = dict(params={"rho": rhos}, rtol=1e-6, atol=1e-6)
    # t1 only: time running backwards (105-493 steps; forwards to 2: 60-127)
    for saveat, span, max_steps in ((2, (0.0, 2.0), 100), (1, (0.5, 0.0), 300)):
        kwargs["max_steps"] = max_steps
        assert ends_only(prepare(lorenz, span, saveat=saveat).program)
        base = simkit.ensemble(lorenz, span, saveat=saveat, **kwargs)  # 4 devices
        assert 0 < len(base.failures) < len(rhos)  # some members run out of steps
        lockstep = simkit.ensemble(lorenz, span, saveat=saveat, refill=False, **kwargs)
        np.testing.assert_array_equal(base.status, lockstep.status)
        for key in lockstep.stats:
            np.testing.assert_array_equal(base.stats[key], lockstep.stats[key], err_msg=key)
        np.testing.assert_allclose(base.ys, lockstep.ys, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(base.t_final, lockstep.t_final, rtol=1e-14)
    kwargs["max_steps"] = 100
    base = simkit.ensemble(lorenz, (0.0, 2.0), saveat=2, **kwargs)
    np.testing.assert_array_equal(base.ys[:, 0], np.broadcast_to(lorenz.y0, (len(rhos), 3)))
    for other in (simkit.ensemble(lorenz, (0.0, 2.0), saveat=2, chunk_size=8, **kwargs),
                  simkit.ensemble(lorenz, (0.0, 2.0), saveat=2, chunk_size=64, devices=jax.local_devices()[:1],
                                  **kwargs)):
        np.testing.assert_array_equal(other.ys, base.ys)
        np.testing.assert_array_equal(other.status, base.status)


@pytest.mark.parametrize("case", ["backward_dense_saves_and_max_steps", "stiff_autoswitch"])
def test_refilled_lanes_equal_lockstep_chunks(case):
    # the queue (default) against lockstep chunks (refill=False): the same steps, saves,
    # statuses and counters, in the cases the queue handles apart: time running backwards,
    # save times not at t0 and several in one step, members stopped by max_steps, and
    # a method with phases (AutoSwitch, stiff van der Pol members); also with a lane per
    # member (no queue: written in place)
    if case == "backward_dense_saves_and_max_steps":
        model, name = models.get("lotka_volterra"), "alpha"  # 8 to 32 steps: 60 saves, several per step
        values = np.linspace(0.3, 1.5, 41)
        kwargs = dict(t_span=(10.0, 0.0), saveat=np.linspace(9.5, 0.0, 60), rtol=1e-4, atol=1e-4, max_steps=20)
    else:
        model, name = models.get("van_der_pol"), "mu"
        values = np.geomspace(0.5, 300.0, 41)
        kwargs = dict(t_span=(0.0, 3.0), saveat=4, rtol=1e-6, atol=1e-6, solver=simkit.AutoSwitch())
    queue = simkit.ensemble(model, params={name: values}, chunk_size=8, devices=jax.local_devices()[:1], **kwargs)
    lockstep = simkit.ensemble(model, params={name: values}, chunk_size=8, refill=False,
                               devices=jax.local_devices()[:1], **kwargs)
    in_place = simkit.ensemble(model, params={name: values}, chunk_size=48, devices=jax.local_devices()[:1],
                               **kwargs)
    if case == "backward_dense_saves_and_max_steps":
        assert 0 < len(queue.failures) < len(values)  # some members run out of steps
    for run in (queue, in_place):
        np.testing.assert_array_equal(run.status, lockstep.status)
        for key in lockstep.stats:
            np.testing.assert_array_equal(run.stats[key], lockstep.stats[key], err_msg=key)
        np.testing.assert_allclose(run.ys, lockstep.ys, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(run.t_final, lockstep.t_final, rtol=1e-14)


def test_members_saving_their_own_steps_have_no_common_times():
    # saveat="steps": save index j is member i's j-th step, at a time of its own. Statistics
    # across members lined them up by index (a mean of states at different times, returned
    # without a word): now an error; to_xarray labels the states by step, with each
    # member's times as a (member, step) coordinate
    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0], state_names=("u",),
                            name="decay")
    ens = simkit.ensemble(decay, (0.0, 1.0), params={"k": np.array([1.0, 10.0])}, saveat="steps", max_steps=4000,
                          **TIGHT)
    for stat in (ens.mean, ens.std, lambda: ens.quantile(0.5), lambda: ens.times):
        with pytest.raises(simkit.InputError, match="saved at times of their own"):
            stat()
    ds = ens.to_xarray()
    assert ds["u"].dims == ("member", "step") and ds["t"].dims == ("member", "step")
    ts = np.asarray(ens.ts)
    np.testing.assert_array_equal(ds["t"].values, ts)
    reached = np.isfinite(ts)
    # as many columns as the member with most steps needs (max_steps + 1 = 4,001 were kept)
    assert ts.shape[1] == reached.sum(axis=1).max() == int(ens.stats["num_accepted_steps"].max()) + 1
    np.testing.assert_allclose(ds["u"].values[reached], np.exp(-(np.array([[1.0], [10.0]]) * ts)[reached]),
                               rtol=1e-8, atol=1e-10)  # TIGHT


def test_blocks_compile_as_one_kernel_where_the_rhs_allows():
    # the kernels step their blocks of attempts in one XLA:CPU kernel (explicit ones: the same
    # bits as XLA's thunks, test_members_saving_at_the_ends_step_in_blocks); an rhs with an
    # operation that kernel cannot hold (a scatter, a dot) keeps the thunks, and runs
    from jax import lax

    from simkit._codegen import fits_one_kernel
    from simkit.engines import kernel_queue

    lorenz = models.get("lorenz")
    method = simkit.Tsit5().method()
    params = {k: np.full(8, v) for k, v in lorenz.params.items()}
    y = np.ones((8, 3))
    assert kernel_queue.block_in_one_kernel(method, lorenz.rhs, 0.0, y, params)
    assert kernel_queue.block_in_one_kernel(simkit.Rodas5P().method(), lorenz.rhs, 0.0, y, params)
    # a stiff method above 8 states calls LAPACK (a custom call): thunks
    big = {"k": np.ones(8)}
    assert not kernel_queue.block_in_one_kernel(simkit.Rodas5P().method(), lambda t, y, p: -p["k"] * y, 0.0,
                                                np.ones((8, 9)), big)
    assert not fits_one_kernel(jax.make_jaxpr(lambda x: x.at[0].set(1.0))(np.ones(3)))
    assert not fits_one_kernel(jax.make_jaxpr(lambda x: lax.cond(x[0] > 0, lambda: x @ x, lambda: 0.0))(np.ones(3)))

    def scattered(t, y, p):  # Lorenz with a scatter
        return jnp.zeros(3).at[0].set(p["sigma"] * (y[1] - y[0])).at[1].set(y[0] * (p["rho"] - y[2]) - y[1]) \
            .at[2].set(y[0] * y[1] - p["beta"] * y[2])

    assert not kernel_queue.block_in_one_kernel(method, scattered, 0.0, y, params)
    other = simkit.ODEModel(rhs=scattered, params=lorenz.params, y0=lorenz.y0, state_names=lorenz.state_names,
                            name="lorenz_scatter", stiff=False)
    rhos = np.linspace(10.0, 50.0, 16)
    kw = dict(params={"rho": rhos}, saveat=2, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(simkit.ensemble(other, (0.0, 1.0), **kw).ys,
                               simkit.ensemble(lorenz, (0.0, 1.0), **kw).ys, rtol=1e-12, atol=1e-12)


def _spring_rhs(t, y, p):
    return jnp.stack([y[1], -p["w"] ** 2 * y[0]])


def test_event_records_of_every_member():
    """Each member's crossings (SciPy's t_events and y_events per member), in the result
    and its file (they were dropped: only t_final was kept)."""
    spring = simkit.ODEModel(rhs=_spring_rhs, params={"w": 1.0}, y0=[1.0, 0.0], state_names=("x", "v"),
                             name="spring")
    ws = np.array([1.0, 2.0, 3.0])
    ens = simkit.ensemble(spring, (0.0, 10.0), params={"w": ws},
                          events=simkit.Event(lambda t, y, p: y[0], terminal=0), **TIGHT)
    for m, w in enumerate(ws):
        zeros = (np.pi / 2 + np.pi * np.arange(10)) / w  # x = cos(w t)
        np.testing.assert_allclose(ens.t_events[m][0], zeros[zeros < 10.0], atol=1e-9)
        np.testing.assert_allclose(ens.y_events[m][0][:, 1], -w * np.sin(w * zeros[zeros < 10.0]), atol=1e-8)
    ds = ens.to_xarray()
    assert ds["event_t"].dims == ("member", "event", "crossing")
    assert ds["event_count"].values.tolist() == [[3], [6], [10]]
    np.testing.assert_array_equal(ds["event_t"].values[1, 0, :6], ens.t_events[1][0])
    assert np.isnan(ds["event_t"].values[0, 0, 3:]).all()


@pytest.mark.parametrize("solver, saveat", [(simkit.Rodas5P(), 2), (simkit.AutoSwitch(), 4)], ids=["Rodas5P", "AutoSwitch"])
def test_stiff_members_do_not_depend_on_chunks_or_devices(solver, saveat):
    # found by probing: the Rosenbrock step divided vectors
    # by the lane's step, which XLA compiled as a division on one device and as a product
    # with the reciprocal under shard_map; members differed by up to 5e-14 between one
    # device and several. Blocks of attempts (saveat=2) and the per-attempt loop (saveat=4)
    vdp = models.get("van_der_pol")
    mus = np.random.default_rng(0).uniform(10.0, 200.0, 40)
    kwargs = dict(params={"mu": mus}, saveat=saveat, rtol=1e-6, atol=1e-8, solver=solver)
    base = simkit.ensemble(vdp, (0.0, 20.0), **kwargs)  # 4 devices
    one = simkit.ensemble(vdp, (0.0, 20.0), chunk_size=8, devices=jax.local_devices()[:1], **kwargs)
    np.testing.assert_array_equal(one.ys, base.ys)
    np.testing.assert_array_equal(one.stats["num_steps"], base.stats["num_steps"])
    assert (base.status == simkit.Status.SUCCESS).all()


def test_implicit_diffrax_members_run_on_every_device():
    """diffrax's implicit solvers stop under jax.shard_map (lineax bug
    https://github.com/patrick-kidger/lineax/issues/185): the ensemble
    runs them with one program per device instead, with the one-device bits."""
    import diffrax

    vdp = models.get("van_der_pol")
    mus = np.linspace(1.0, 3.0, 21)
    kwargs = dict(params={"mu": mus}, saveat=3, solver=diffrax.Kvaerno5(), rtol=1e-6, atol=1e-8)
    every = simkit.ensemble(vdp, (0.0, 2.0), **kwargs)  # 4 devices
    one = simkit.ensemble(vdp, (0.0, 2.0), devices=jax.local_devices()[:1], **kwargs)
    assert every.ok.all()
    np.testing.assert_array_equal(every.ys, one.ys)
    single = simkit.solve(vdp, (0.0, 2.0), params={"mu": mus[13]}, saveat=3, solver=diffrax.Kvaerno5(),
                          rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(every.ys[13], single.ys, rtol=1e-12, atol=1e-12)
