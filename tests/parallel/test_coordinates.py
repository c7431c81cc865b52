"""No silent wrong result: each shard's `Space` knows where its block lies, so a
model whose rhs or diagnostics use ``space.coordinates()`` gives the single-device answer on
1, 2 and 4 devices. The library PDE models whose rhs reads coordinates (the 2-D Brusselator's
forcing disc) and two more coordinate-dependent models are compared with
`simkit.stencil.integrate` to 1e-13 (every library model is compared decomposed in
test_decompose.py and test_exact_strict.py).

When the test process has fewer than 4 CPU devices (conftest), the comparison runs in one
fresh subprocess with ``SIMKIT_CPU_DEVICES=4`` that imports this module and calls
`agreement`. Cost: one compiled program per run (forward Euler, 4 steps, 16-32 points per
axis)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit import models, parallel
from simkit import stencil as sk

TOL = 1e-13  # relative to the field's scale: FMA contraction may differ by an ulp per operation
STEPS = 4
# forward Euler, the cheapest program to compile, with one step size for all: below 2 / (spectral
# radius) for every model here on its small grid (the stiffest, Cahn-Hilliard, has ~620), so
# round-off is not amplified; a spectral-radius estimate per model would cost a compile each
DT = 1e-3

# grid axes -> device count -> mesh shapes (each a compile, the test's cost): 1, 2, 4 devices,
# splitting either axis, and pmap on 1-D decompositions (marked "pmap")
COORDINATE_LIBRARY_MODELS = ("brusselator_2d",)  # the library PDE models whose rhs reads coordinates
COORDINATE_MESHES = {1: {1: [(1,)], 2: [(2,), "pmap"], 4: [(4,), "pmap"]},
                     2: {1: [(1, 1)], 2: [(1, 2), "pmap"], 4: [(2, 2), (1, 4)]}}


def _small(model: sk.PDEModel) -> sk.PDEModel:
    """The library model on a 32-point (1-D) or 16-point-per-axis grid, its initial field
    sampled at the nearest points."""
    n = 32 if model.grid.ndim == 1 else 16
    shape = (n,) * model.grid.ndim
    index = np.ix_(*(np.arange(n) * m // n for m in model.grid.shape))
    u0 = np.asarray(model.u0)[(slice(None),) + index]
    small = model.replace(grid=model.grid.with_shape(shape), u0=u0)
    if model.name == "brusselator_2d":
        # its alpha = 10 on the unit square is a stiff system: DT is 20x Euler's bound on a
        # 16-point grid; the comparison needs a bounded field, not the stiffness
        small = small.with_params(alpha=0.05)
    return small


def heat_with_sine_source() -> sk.PDEModel:
    """1-D heat on [0, 1] (32 cells, walls) driven by ``sin(2 pi x)`` from ``space.coordinates()``."""

    def rhs(t, u, p, space):
        (x,) = space.coordinates()
        return p["d"] * sk.laplacian(space.pad(u), space.spacing) + jnp.sin(2 * jnp.pi * x)[None]

    grid = sk.Grid((32,), 0.0, 1.0)
    return sk.PDEModel(rhs=rhs, grid=grid, bcs=sk.Dirichlet(0.0), params={"d": 0.05},
                       u0=np.ones((1, 32)), name="heat_sine_source")


def reaction_xy_2d() -> sk.PDEModel:
    """2-D diffusion on [-1, 1] x [0, 2] (16 x 16, walls) with a source ``x * y`` and a
    coordinate-dependent decay ``(1 + x**2) u``."""

    def rhs(t, u, p, space):
        x, y = space.coordinates()
        return (p["d"] * sk.laplacian(space.pad(u), space.spacing) + (x * y)[None] - (1.0 + x**2)[None] * u)

    grid = sk.Grid((16, 16), (-1.0, 0.0), (1.0, 2.0))
    x, y = grid.meshgrid()
    u0 = np.exp(-((x - 0.3) ** 2 + (y - 1.4) ** 2) / 0.1)[None] + 0.1
    return sk.PDEModel(rhs=rhs, grid=grid, bcs=sk.Neumann(0.0), params={"d": 0.02}, u0=u0,
                       name="reaction_xy_2d")


def _centre_of_mass(u, space):
    coords = space.coordinates()
    mass = space.integral(u[0])
    return jnp.stack([space.integral(u[0] * c) / mass for c in coords])


def _cases() -> list[tuple[str, sk.PDEModel, dict, dict]]:
    """(name, model, mesh shapes per device count, diagnostics)."""
    # every library model is compared decomposed on 2 and 4 devices in test_decompose.py and
    # test_exact_strict.py; here the ones whose rhs reads space.coordinates(), on every mesh
    cases = [(name, _small(models.get(name)), COORDINATE_MESHES, {}) for name in COORDINATE_LIBRARY_MODELS]
    for model in (heat_with_sine_source(), reaction_xy_2d()):
        cases.append((model.name, model, COORDINATE_MESHES, {"centre": _centre_of_mass}))
    return cases


def _runs(meshes: dict, ndim: int, count: int) -> list[tuple[tuple[int, ...], str]]:
    """(mesh shape, transform) pairs for ``count`` devices; "pmap" repeats the previous shape."""
    runs: list[tuple[tuple[int, ...], str]] = []
    for entry in meshes[ndim].get(count, []):
        runs.append((runs[-1][0], "pmap") if entry == "pmap" else (entry, "shard_map"))
    return runs


def _expected(counts: list[int]) -> dict[str, set[str]]:
    return {name: {f"{shape}/{transform}" for c in counts for shape, transform in _runs(meshes, m.grid.ndim, c)}
            for name, m, meshes, _ in _cases()}


def agreement(counts: list[int]) -> dict[str, dict[str, float]]:
    """``{model: {"mesh shape/transform": max relative difference}}`` between
    `parallel.integrate` on the meshes of ``counts`` devices and `stencil.integrate`, over
    the saved fields and the diagnostics (`STEPS` forward-Euler steps of `DT`). Models
    without a mesh for these counts are not run."""
    devices = jax.devices()
    out: dict[str, dict[str, float]] = {}
    for name, model, meshes, diagnostics in _cases():
        runs = [run for c in counts for run in _runs(meshes, model.grid.ndim, c)]
        out[name] = {}
        if not runs:
            continue
        kw = dict(dt=DT, steps=STEPS, save_every=STEPS // 2, stepper=sk.ForwardEuler(),
                  diagnostics=diagnostics, check_stability=False)
        base = sk.integrate(model, **kw)
        scale = max(1.0, float(np.abs(base.us).max()))
        # DT stable for this model: the field stays bounded (else round-off is amplified)
        assert scale <= 2 * max(1.0, float(np.abs(model.u0).max())), (name, scale)
        for shape, transform in runs:
            mesh = parallel.mesh_for(model.grid, devices[: int(np.prod(shape))], shape=shape)
            run = parallel.integrate(model, mesh=mesh, transform=transform, **kw)
            diff = float(np.abs(run.us - base.us).max()) / scale
            for key, value in base.diagnostics.items():
                d = np.abs(run.diagnostics[key] - value).max() / max(1.0, np.abs(value).max())
                diff = max(diff, float(d))
            out[name][f"{shape}/{transform}"] = diff
    return out


def _check(diffs: dict[str, dict[str, float]], counts: list[int]) -> None:
    expected = _expected(counts)
    assert {name: set(per_mesh) for name, per_mesh in diffs.items()} == expected
    assert sum(map(len, expected.values())) > 0
    bad = {name: {mesh: d for mesh, d in per_mesh.items() if not d <= TOL} for name, per_mesh in diffs.items()}
    bad = {name: b for name, b in bad.items() if b}
    assert not bad, f"decomposed runs differ from one device by more than {TOL}: {bad}"


def test_block_coordinates_are_the_global_ones():
    """Under shard_map every block's ``space.coordinates()`` is its slice of the grid's."""
    grid = sk.Grid((8, 6), (-1.0, 0.5), (1.0, 2.0))
    mesh = parallel.mesh_for(grid, jax.devices()[:2], shape=(1, 2))
    axes = tuple(zip(mesh.axis_names, mesh.devices.shape))
    block = parallel.local_grid(grid, mesh.devices.shape)

    def per_shard(u):
        space = parallel.sharded_space(block, sk.Periodic(), axes, grid)
        return jnp.stack(space.coordinates())[None] + 0 * u[:, None]

    spec = parallel.field_spec(2)
    f = jax.jit(jax.shard_map(per_shard, mesh=mesh, in_specs=spec, out_specs=parallel.field_spec(2, leading=2),
                              check_vma=False))
    got = np.asarray(f(parallel.place(np.zeros((1, 8, 6)), mesh, spec)))[0]
    np.testing.assert_array_equal(got, np.stack(grid.meshgrid()))
    # one device: NumPy coordinates as before
    x, y = sk.Space(grid, sk.Periodic()).coordinates()
    assert isinstance(x, np.ndarray)
    np.testing.assert_array_equal(x, grid.meshgrid()[0])


def test_a_block_keeps_the_grids_spacing_far_from_the_origin():
    # found by probing: the block's own (upper - lower) / n differed from the domain's spacing
    # by ulps where |lower| >> extent, and a decomposed diffusion run from the single-device
    # one by 2.6e-13 relative; the block now carries the domain's spacing
    grid = sk.Grid((28,), -8.999280683743988, -8.985857497888754)
    block = parallel.local_grid(grid, (4,))
    assert block.extent[0] / 7 != grid.spacing[0]  # the block's own formula rounds apart here
    assert block.spacing == grid.spacing and block.shape == (7,)
    assert block.with_shape((14,)).spacing == (block.extent[0] / 14,)  # a new shape: its own spacing


def test_sharded_space_refuses_a_grid_that_is_not_a_block():
    grid = sk.Grid((8, 6))
    with pytest.raises(simkit.ShapeError, match="not a block"):
        parallel.sharded_space(grid, sk.Periodic(), (("x", 2), ("y", 1)), grid)
    with pytest.raises(simkit.ShapeError, match="both `domain`"):
        sk.Space(grid, sk.Periodic(), domain=grid)


def test_coordinates_on_1_2_4_devices():
    """Every library model and the two coordinate models, decomposed, equal one device; in
    one fresh 4-device process when this one has fewer (each compiled program is the cost:
    the single-device runs are not repeated)."""
    counts = [1, 2, 4]
    if len(jax.devices()) >= 4:
        diffs = agreement(counts)
    else:
        env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "SIMKIT_STRICT_FP")}
        env.update(SIMKIT_CPU_DEVICES="4", SIMKIT_COMPILATION_CACHE="0")
        code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import jax, test_coordinates as t; "
                "assert len(jax.devices()) == 4, jax.devices(); print(json.dumps(t.agreement([1, 2, 4])))")
        run = subprocess.run([sys.executable, "-c", code, str(pathlib.Path(__file__).parent)],
                             capture_output=True, text=True, timeout=300, env=env)
        assert run.returncode == 0, run.stderr[-3000:]
        diffs = json.loads(run.stdout.strip().splitlines()[-1])
    _check(diffs, counts)
