"""Row blocks (`simkit.stencil.blocked`): the plan's conditions, and rollouts in row blocks
(the Pallas kernel interpreted on the CPU) against XLA's loop."""

import base64
import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit import models
from simkit import stencil as sk
from simkit.stencil import blocked
from simkit.stencil.pde import Space
from simkit.stencil.stepping import build_program

ROWS, COLUMNS = 32, 128


@pytest.fixture
def always(monkeypatch):
    """Row blocks on the CPU (interpreted), blocks of 8 rows, float32; compiled programs of
    other settings dropped before and after."""
    monkeypatch.setattr(blocked, "MODE", "always")
    monkeypatch.setattr(blocked, "BLOCK_BYTES", 8 * COLUMNS * 4)
    jax.clear_caches()
    with simkit.precision("float32"):  # the kernel's precision
        yield
    jax.clear_caches()


def _heat(rhs=None, bcs=None, rows=ROWS, columns=COLUMNS):
    rhs = rhs or (lambda t, u, p, space: p["d"] * sk.laplacian(space.pad(u), space.spacing))
    return simkit.PDEModel(rhs=rhs, grid=sk.Grid((rows, columns)), bcs=bcs or sk.Periodic(), params={"d": 1.0},
                           u0=np.random.default_rng(1).random((1, rows, columns)), name="heat")


def _plan(model, stepper=None, save_every=4, u0=None, dtype=jnp.float32):
    program = build_program(model, dt=1e-6, steps=save_every, save_every=save_every, stepper=stepper or sk.RK4(),
                            diagnostics=None)
    u = jnp.asarray(model.u0 if u0 is None else u0, dtype)
    params = {k: jnp.asarray(v, dtype) for k, v in model.params.items()}
    return blocked.plan(program, Space(program.grid, model.bcs), u, params)


def _both(fn, *args):
    """``fn(*args)`` in XLA's loop and in row blocks, with whether each traced a pallas_call."""
    out = {}
    for mode in ("never", "always"):
        blocked.MODE = mode
        jax.clear_caches()
        out[mode] = (jax.jit(fn)(*args), "pallas_call" in str(jax.make_jaxpr(fn)(*args)))
    return out


@pytest.mark.parametrize("stepper,steps,save_every", [(sk.ForwardEuler(), 12, 6), (sk.SSPRK3(), 7, 7),
                                                      (sk.RK4(), 6, 3)])
def test_rollout_in_row_blocks_equals_xla_loop(always, stepper, steps, save_every):
    model = _heat()
    plan = _plan(model, stepper, save_every)
    assert plan.k == min(8 // plan.reach, save_every)  # SSPRK3: 3 passes of 2 steps and one of 1
    u0 = jnp.asarray(model.u0, jnp.float32)
    dt = 0.2 / COLUMNS**2
    runs = _both(lambda u: sk.rollout(model, u0=u, dt=dt, steps=steps, save_every=save_every, stepper=stepper)[0], u0)
    assert runs["always"][1] and not runs["never"][1]
    np.testing.assert_array_equal(np.asarray(runs["always"][0]), np.asarray(runs["never"][0]))


def test_gray_scott_rk4_in_row_blocks_and_its_plan(always):
    gs = models.get("gray_scott")
    rng = np.random.default_rng(0)
    model = gs.replace(grid=sk.Grid((ROWS, COLUMNS), 0.0, 2.5),
                       u0=np.concatenate([np.ones((1, ROWS, COLUMNS)), np.zeros((1, ROWS, COLUMNS))])
                       + 0.05 * rng.random((2, ROWS, COLUMNS)))
    plan = _plan(model)
    assert (plan.bm, plan.reach, plan.k) == (8, 4, 2)  # RK4: 4 rhs a step, each one row each side
    u0 = jnp.asarray(model.u0, jnp.float32)
    runs = _both(lambda u: sk.rollout(model, u0=u, dt=0.5, steps=6, save_every=3)[0], u0)
    assert runs["always"][1]
    np.testing.assert_allclose(runs["always"][0], runs["never"][0], rtol=0, atol=1e-6)


def test_reach_is_measured_not_assumed(always):
    """An rhs with its own jnp.roll two rows away reaches 2 rows a step (the ghost widths
    would say 0); Euler then takes 4 steps a pass, and the result is still XLA's."""
    model = _heat(rhs=lambda t, u, p, space: p["d"] * (jnp.roll(u, 2, axis=-2) - u))
    plan = _plan(model, sk.ForwardEuler(), save_every=8)
    assert (plan.reach, plan.k) == (2, 4)
    u0 = jnp.asarray(model.u0, jnp.float32)
    runs = _both(lambda u: sk.rollout(model, u0=u, dt=0.1, steps=8, stepper=sk.ForwardEuler())[0], u0)
    assert runs["always"][1]
    np.testing.assert_array_equal(np.asarray(runs["always"][0]), np.asarray(runs["never"][0]))


def test_reach_counts_the_ghost_widths_of_a_stencil_chosen_by_the_data(always):
    """A stencil that picks its width from the data (here: 3 rows where u > 2, never at the
    probe's values near 1) reaches its ghost width, not what one derivative shows."""
    def rhs(t, u, p, space):
        wide = space.pad(u, 3)
        near = wide.shifted({0: 1}) + wide.shifted({0: -1}) - 2 * u
        far = wide.shifted({0: 3}) + wide.shifted({0: -3}) - 2 * u
        return p["d"] * jnp.where(u > 2.0, far, near)

    plan = _plan(_heat(rhs=rhs), sk.ForwardEuler(), save_every=8)
    assert (plan.reach, plan.k) == (3, 2)


def test_plan_refuses_what_a_block_cannot_do(always):
    assert _plan(_heat()) is not None
    assert _plan(_heat(rhs=lambda t, u, p, space: u * space.coordinates()[0])) is None  # position in the grid
    assert _plan(_heat(rhs=lambda t, u, p, space: u - space.sum(u))) is None  # a grid-wide sum
    assert _plan(_heat(rhs=lambda t, u, p, space: jnp.roll(u, 9, axis=-2) - u), sk.ForwardEuler()) is None  # 9 rows
    assert _plan(_heat(bcs=sk.Dirichlet(0.0))) is None
    assert _plan(_heat(columns=96)) is None  # columns not a multiple of 128
    assert _plan(_heat(columns=640)) is None  # 8 rows over 4 BLOCK_BYTES (here 4 KiB): not on chip
    assert _plan(_heat(), dtype=jnp.bfloat16) is None  # float32 only
    assert _plan(_heat(), sk.IMEXEuler()) is None


def test_configure_turns_row_blocks_off_for_rollouts_built_after_it(monkeypatch):
    monkeypatch.setattr(blocked, "MODE", "tpu")
    monkeypatch.setattr(blocked, "default_platform", lambda: "tpu")
    monkeypatch.setattr(blocked, "MIN_BYTES", 0)
    try:
        assert simkit.configure(row_blocks=False)["row_blocks"] is False
        assert _plan(_heat()) is None
        assert simkit.configure(row_blocks=True)["row_blocks"] is True
        assert _plan(_heat()) is not None
        with pytest.raises(simkit.InputTypeError, match="row_blocks"):
            simkit.configure(row_blocks="no")
    finally:
        simkit.configure(row_blocks=True)


def test_plan_on_a_cpu_by_default(monkeypatch):
    monkeypatch.setattr(blocked, "MODE", "tpu")
    assert _plan(_heat()) is None  # the default device is this machine's CPU


def test_gradient_and_vmap_through_row_blocks(always):
    model = _heat()
    u0 = jnp.asarray(model.u0, jnp.float32)
    dt = 0.2 / COLUMNS**2

    def final(d):
        return sk.rollout(model, {"d": d}, u0=u0, dt=dt, steps=6, save_every=3, stepper=sk.RK4())[0][-1]

    grads = _both(jax.grad(lambda d: final(d).var()), jnp.float32(1.0))
    np.testing.assert_allclose(grads["always"][0], grads["never"][0], rtol=1e-6)
    batch = _both(jax.vmap(final), jnp.asarray([0.5, 1.0], jnp.float32))
    assert batch["always"][1]
    np.testing.assert_array_equal(np.asarray(batch["always"][0]), np.asarray(batch["never"][0]))


def test_the_kernel_lowers_for_a_tpu(monkeypatch):
    """The program a TPU would get holds the Mosaic kernel (lowered here, not compiled)."""
    monkeypatch.setattr(blocked, "default_platform", lambda: "tpu")
    monkeypatch.setattr(blocked, "MIN_BYTES", 0)
    jax.clear_caches()
    model = _heat()
    fn = jax.jit(lambda u: sk.rollout(model, u0=u, dt=1e-6, steps=8, stepper=sk.ForwardEuler())[0][-1])
    # and under jax.vmap over a parameter (members one after another: no batched scalar memory)
    members = jax.jit(jax.vmap(lambda d: sk.rollout(model, {"d": d}, dt=1e-6, steps=8, stepper=sk.ForwardEuler())[0][-1]))
    with simkit.precision("float32"):
        text = jax.export.export(fn, platforms=["tpu"])(jax.ShapeDtypeStruct((1, ROWS, COLUMNS), jnp.float32)).mlir_module()
        batched = jax.export.export(members, platforms=["tpu"])(jax.ShapeDtypeStruct((3,), jnp.float32)).mlir_module()
    assert "tpu_custom_call" in text and "tpu_custom_call" in batched
    # Mosaic's TPU compile refuses int64 values (block indices included), which JAX's float64
    # makes of Python's integers: the kernels hold none
    kernels = _mosaic_kernels(text) + _mosaic_kernels(batched)
    assert len(kernels) == 2 and all("func.func @transform_0" in k for k in kernels)
    for kernel in kernels:
        assert not re.search(r"\bi64\b", re.sub(r"array<i64[^>]*>|= -?\d+ : i64", "", kernel))
    jax.clear_caches()


def _mosaic_kernels(stablehlo: str) -> list[str]:
    """The Mosaic modules of a program's TPU kernels, as text (decoded from the custom calls'
    serialized bodies)."""
    from jax._src.interpreters import mlir
    from jax._src.lib import tpu
    from jax._src.lib.mlir import ir
    from jaxlib.mlir.passmanager import PassManager

    kernels = []
    for config in re.findall(r'backend_config = "(\{\\22custom_call_config.*?)"', stablehlo):
        body = base64.b64decode(json.loads(config.replace("\\22", '"'))["custom_call_config"]["body"])
        context = mlir.make_ir_context()
        tpu.register_dialect(context)
        with context, ir.Location.unknown():
            context.allow_unregistered_dialects = True
            module = ir.Module.parse(body)
            PassManager.parse("builtin.module(mosaic-serde{serialize=false})").run(module.operation)
            kernels.append(str(module))
    return kernels


def test_a_time_dependent_rhs_sees_each_steps_time_in_row_blocks(always, tmp_path, monkeypatch):
    """The kernel's steps take the times XLA's loop takes (t0 + n dt), also when a run is
    written to a file in chunks (each chunk starts at the steps before it)."""
    model = _heat(rhs=lambda t, u, p, space: p["d"] * sk.laplacian(space.pad(u), space.spacing) + jnp.sin(40.0 * t))
    u0 = jnp.asarray(model.u0, jnp.float32)
    dt = 0.2 / COLUMNS**2
    runs = _both(lambda u: sk.rollout(model, u0=u, dt=dt, steps=12, save_every=4, stepper=sk.RK4(), t0=0.3)[0], u0)
    assert runs["always"][1]
    np.testing.assert_allclose(runs["always"][0], runs["never"][0], rtol=0, atol=1e-6)
    files, passes = {}, []
    advance = blocked.advance
    monkeypatch.setattr(blocked, "advance", lambda *a: passes.append(1) or advance(*a))
    for mode in ("never", "always"):
        blocked.MODE = mode
        jax.clear_caches()
        path = sk.integrate_to_file(str(tmp_path / f"{mode}.nc"), model, dt=dt, steps=12, save_every=2, chunk=2,
                                    stepper=sk.RK4(), t0=0.3)
        files[mode] = simkit.load(path)
    np.testing.assert_allclose(files["always"]["u"].values, files["never"]["u"].values, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(files["always"]["t"].values, files["never"]["t"].values)
    assert passes  # the file's chunks went through row blocks
