"""The periodic 5-point heat step (forward Euler) on an accelerator, written several ways, against
a loop of elementwise passes over the same field: which formulations keep to one pass over
memory once the field no longer fits on chip (8192^2 float32, 256 MiB, on a TPU v5e).

    SIMKIT_ENABLE_X64=0 OUT=folder python benchmarks/stencil_shifts.py

writes OUT/stencil_shifts.json (one row per variant and size, printed as it goes) and the
optimised HLO of the jnp.roll step at 2048^2 and 8192^2 and of a row-chunked step. Variants:
jnp.roll; rolls along one axis only; jnp.pad(wrap) and slices; row strips; row chunks
(fori_loop with dynamic_update_slice, or lax.map); a Pallas TPU kernel on row blocks with
one 8-row halo block above and below (TPU only); simkit.stencil.rollout.
"""
import functools
import json
import os
import statistics
import sys
import time
import traceback

import jax
import jax.numpy as jnp
from jax import lax

OUT = os.environ.get("OUT", "/tmp")
rows = []


def emit(**row):
    rows.append(row)
    print(json.dumps(row), flush=True)
    with open(f"{OUT}/stencil_shifts.json", "w") as f:
        json.dump(rows, f, indent=1)


def timed(fn, *args, repeats=5):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - t0
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        ts.append(time.perf_counter() - t0)
    return first, statistics.median(ts)


def try_case(name, n, steps, make):
    try:
        fn = jax.jit(make(n, steps))
        u = jnp.sin(jnp.arange(n * n, dtype=jnp.float32).reshape(n, n) * 1e-3)
        first, t = timed(fn, u)
        per = t / steps
        emit(case=name, n=n, steps=steps, first_s=first, step_s=per, gbps=2 * n * n * 4 / per / 1e9)
        return fn, u
    except Exception as e:  # noqa: BLE001
        emit(case=name, n=n, steps=steps, error=f"{type(e).__name__}: {str(e)[:600]}")
        return None, None


def loop(step, steps):
    return lambda u: lax.fori_loop(0, steps, lambda _, v: step(v), u)


def elementwise(n, steps):
    return loop(lambda v: v * 1.0001 + 0.5, steps)


def one_elementwise(n, steps):
    return lambda v: v * 1.0001 + 0.5


def roll_heat(n, steps):
    c = 0.2
    return loop(lambda u: u + c * (jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4 * u), steps)


def roll_rows_only(n, steps):
    c = 0.2
    return loop(lambda u: u + c * (jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) - 2 * u), steps)


def roll_cols_only(n, steps):
    c = 0.2
    return loop(lambda u: u + c * (jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 2 * u), steps)


def pad_slice_heat(n, steps):
    c = 0.2

    def step(u):
        p = jnp.pad(u, 1, mode="wrap")
        return u + c * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u)
    return loop(step, steps)


def strips_heat(n, steps, strips=8):
    """the roll heat step computed on row strips of n/strips rows (reshape, roll within)."""
    c = 0.2

    def step(u):
        s = u.reshape(strips, n // strips, n)
        up = jnp.roll(s[:, -1:, :], 1, 0)     # last row of the strip above
        dn = jnp.roll(s[:, :1, :], -1, 0)     # first row of the strip below
        north = jnp.concatenate([up, s[:, :-1]], axis=1)
        south = jnp.concatenate([s[:, 1:], dn], axis=1)
        west = jnp.roll(s, 1, 2)
        east = jnp.roll(s, -1, 2)
        return (s + c * (north + south + west + east - 4 * s)).reshape(n, n)
    return loop(step, steps)


def heat_rows_kernel(bm, n, c):
    """The body of a Pallas heat step on a block of ``bm`` rows of ``n`` columns, with the
    8-row blocks above and below it: its north and south neighbours at the block's edges
    come from those, the rest by rolls within the block."""
    from jax.experimental.pallas import tpu as pltpu

    def kernel(up_ref, mid_ref, dn_ref, o_ref):
        mid = mid_ref[...]
        rows_ = lax.broadcasted_iota(jnp.int32, mid.shape, 0)
        up = jnp.broadcast_to(up_ref[7:8, :], mid.shape)
        dn = jnp.broadcast_to(dn_ref[0:1, :], mid.shape)
        north = jnp.where(rows_ == 0, up, pltpu.roll(mid, 1, 0))
        south = jnp.where(rows_ == bm - 1, dn, pltpu.roll(mid, bm - 1, 0))
        west = pltpu.roll(mid, 1, 1)
        east = pltpu.roll(mid, n - 1, 1)
        o_ref[...] = mid + c * (north + south + west + east - 4 * mid)
    return kernel


def pallas_heat(bm):
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    def make(n, steps):
        c = 0.2
        hb = bm // 8
        nb8 = n // 8

        kernel = heat_rows_kernel(bm, n, c)
        params = pltpu.CompilerParams(vmem_limit_bytes=100 * 2**20, dimension_semantics=("parallel",))

        def step(u):
            return pl.pallas_call(
                kernel, out_shape=jax.ShapeDtypeStruct(u.shape, u.dtype), grid=(n // bm,),
                in_specs=[pl.BlockSpec((8, n), lambda i: ((i * hb - 1 + nb8) % nb8, 0)),
                          pl.BlockSpec((bm, n), lambda i: (i, 0)),
                          pl.BlockSpec((8, n), lambda i: (((i + 1) * hb) % nb8, 0))],
                out_specs=pl.BlockSpec((bm, n), lambda i: (i, 0)),
                compiler_params=params)(u, u, u)
        return loop(step, steps)
    return make


C = 0.2


def chunk_update(u, i, R, n):
    start = i * R
    mid = lax.dynamic_slice(u, (start, 0), (R, n))
    up = lax.dynamic_slice(u, ((start - 1 + n) % n, 0), (1, n))
    dn = lax.dynamic_slice(u, ((start + R) % n, 0), (1, n))
    north = jnp.concatenate([up, mid[:-1]], axis=0)
    south = jnp.concatenate([mid[1:], dn], axis=0)
    return mid + C * (north + south + jnp.roll(mid, 1, 1) + jnp.roll(mid, -1, 1) - 4 * mid)


def chunks_dus(R):
    def make(n, steps):
        def step(u):
            return lax.fori_loop(0, n // R, lambda i, out: lax.dynamic_update_slice(out, chunk_update(u, i, R, n), (i * R, 0)),
                                 jnp.empty_like(u))
        return loop(step, steps)
    return make


def chunks_map(R):
    def make(n, steps):
        def step(u):
            return lax.map(lambda i: chunk_update(u, i, R, n), jnp.arange(n // R)).reshape(n, n)
        return loop(step, steps)
    return make


def main():
    emit(case="devices", devices=str(jax.devices()), version=jax.__version__)
    for n in (2048, 4096, 8192):
        try_case("elementwise_one_call", n, 1, one_elementwise)
        try_case("elementwise_loop", n, 20, elementwise)
    ref = None
    for n in (2048, 8192):
        fn, u = try_case("roll_heat", n, 20, roll_heat)
        if n == 8192 and fn is not None:
            ref = fn(u)
            with open(f"{OUT}/hlo_roll_8192.txt", "w") as f:
                f.write(fn.lower(u).compile().as_text()[:400000])
        if n == 2048 and fn is not None:
            with open(f"{OUT}/hlo_roll_2048.txt", "w") as f:
                f.write(fn.lower(u).compile().as_text()[:400000])
    try_case("roll_heat", 4096, 20, roll_heat)
    try_case("roll_heat_200", 8192, 200, roll_heat)
    try_case("roll_rows_only", 8192, 20, roll_rows_only)
    try_case("roll_cols_only", 8192, 20, roll_cols_only)
    try_case("pad_slice_heat", 8192, 20, pad_slice_heat)
    for strips in (8, 64):
        try_case(f"strips{strips}_heat", 8192, 20, functools.partial(strips_heat, strips=strips))
    for bm in (32, 64, 128, 256):
        fn, u = try_case(f"pallas_bm{bm}", 8192, 20, pallas_heat(bm))
        if fn is not None and ref is not None:
            emit(case=f"pallas_bm{bm}_agreement", max_abs_diff=float(jnp.max(jnp.abs(fn(u) - ref))))
    for bm in (64, 256):
        try_case(f"pallas_bm{bm}", 2048, 20, pallas_heat(bm))
    for R in (256, 512, 1024, 2048):
        for name, make in (("chunks_dus", chunks_dus), ("chunks_map", chunks_map)):
            fn, u = try_case(f"{name}_R{R}", 8192, 20, make(R))
            if fn is not None and ref is not None:
                emit(case=f"{name}_R{R}_agreement", max_abs_diff=float(jnp.max(jnp.abs(fn(u) - ref))))
                if R == 512 and name == "chunks_dus":
                    with open(f"{OUT}/hlo_chunks_dus_512.txt", "w") as f:
                        f.write(fn.lower(u).compile().as_text()[:300000])
    # simkit's own rollout
    try:
        sys.path.insert(0, os.getcwd())
        import numpy as np

        import simkit
        from simkit import stencil as sk
        for n in (2048, 8192):
            grid = sk.Grid((n, n), 0.0, 1.0)
            heat = simkit.PDEModel(rhs=lambda t, u, p, space: p["d"] * sk.laplacian(space.pad(u), space.spacing),
                                   grid=grid, bcs=sk.Periodic(), params={"d": 1.0},
                                   u0=np.zeros((1, n, n)), name="heat")
            dt = 0.2 / n**2
            fn = jax.jit(lambda u: sk.rollout(heat, u0=u, dt=dt, steps=20, stepper=sk.ForwardEuler())[0][-1])
            u = jnp.sin(jnp.arange(n * n, dtype=jnp.float32).reshape(1, n, n) * 1e-3)
            first, t = timed(fn, u)
            emit(case="simkit_rollout", n=n, steps=20, first_s=first, step_s=t / 20, gbps=2 * n * n * 4 / (t / 20) / 1e9)
    except Exception:  # noqa: BLE001
        emit(case="simkit_rollout", error=traceback.format_exc()[-1500:])


if __name__ == "__main__":
    main()
