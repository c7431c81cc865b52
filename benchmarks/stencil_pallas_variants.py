"""Where the time of a Pallas row-block kernel for the periodic 5-point heat step goes on a TPU
(8192^2 float32, a v5e): variants that isolate the cost, against XLA's elementwise loop and a
jnp.roll loop in the same run. What they showed: a Pallas copy kernel on the same blocks runs
no faster than the heat kernel (the block pipeline, not the stencil, sets its pace, about half
of XLA's elementwise loop), and k Euler steps per pass on a block extended by 8 halo rows
(temporal blocking) take 1/k of the passes: simkit.stencil.blocked.

  pallas_copy_bm{bm}              (bm, n) blocks, o = x*1.0001+0.5: ceiling of BlockSpec pipelining
  pallas_copy_halo_bm{bm}         same plus the two 8-row halo inputs (their DMAs)
  pallas_copy2d_bm{bm}_bn{bn}     (bm, bn) blocks, copy
  pallas_heat_nohalo_bm{bm}       heat with rolls inside the block only (wrong at block edges)
  pallas_heat_bm{bm}              the kernel of stencil_shifts.py (baseline)
  pallas_heat_fixrows_bm{bm}      plain rolls on the whole block, no iota/where; first/last 8-row tile redone
  pallas_heat_rowloop_bm{bm}      fori_loop over 8-row tiles (values of 8 x n instead of bm x n)
  pallas_heat2d_bm{bm}_bn{bn}     2D blocks + 8-row halos above/below and 128-lane column halos left/right
                                  (_st: edge column tiles stored separately instead of lane concatenation)
  pallas_heat_slices_bm{bm}       all four neighbours from shifted ref slices + concatenate
  pallas_heat_jnproll_bm{bm}      E/W by jnp.roll inside the kernel
  pallas_heat_rowslices_bm{bm}    N/S from sublane-shifted ref slices, written in pieces (no where)
  pallas_heat_k{k}_bm{bm}         temporal blocking: k Euler steps per call on the (bm+16, n) extended block
  pallas_copy_buf3_bm{bm}         pipeline_mode=pl.Buffered(3) on the main BlockSpec (top-level pallas_call)
  pallas_{copy,heat}_emit_buf{B}_bm{bm}   the same through pltpu.emit_pipeline (manual pipeline, B buffers)

    SIMKIT_ENABLE_X64=0 OUT=folder python benchmarks/stencil_pallas_variants.py          # on the TPU
    SIMKIT_ENABLE_X64=0 JAX_PLATFORMS=cpu python benchmarks/stencil_pallas_variants.py --check   # interpret mode, CPU

Rows go to OUT/stencil_pallas_variants.json (appended to what is there) and stdout, one JSON object per line.
gbps = 2*n*n*4 / step_s (one read and one write a point a Euler step); max_abs_diff against a jnp.roll loop
with the same number of Euler steps (copies: against the elementwise loop).  PALLAS_HEAT_BUDGET_S (default
110) skips the remaining cases once exceeded.
"""
import json
import os
import sys
import time
import traceback

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from stencil_shifts import elementwise, loop, timed  # the same timing and reference loops
from stencil_shifts import heat_rows_kernel as shifts_heat_rows_kernel

OUT = os.environ.get("OUT", "/tmp")
CHECK = "--check" in sys.argv
ON_TPU = jax.default_backend() == "tpu"
MOSAIC = {"on": ON_TPU}   # False: interpret mode. --check turns it on to lower (not compile) for the TPU on the CPU
BUDGET_S = float(os.environ.get("PALLAS_HEAT_BUDGET_S", "110"))
T0 = time.perf_counter()
C = 0.2
MiB = 2**20
OUTFILE = f"{OUT}/stencil_pallas_variants{'_check' if CHECK else ''}.json"
rows = []
if os.path.exists(OUTFILE):
    try:
        with open(OUTFILE) as f:
            rows = json.load(f)
        assert isinstance(rows, list)
    except Exception:  # noqa: BLE001
        rows = []


def emit(**row):
    rows.append(row)
    print(json.dumps(row), flush=True)
    with open(OUTFILE, "w") as f:
        json.dump(rows, f, indent=1)


def field(n):
    return jnp.sin(jnp.arange(n * n, dtype=jnp.float32).reshape(n, n) * 1e-3)


def roll_step(u):
    return u + C * (jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4 * u)


def roll_heat(n, steps):
    return loop(roll_step, steps)


_refs = {}


def reference(kind, n, steps):
    key = (kind, n, steps)
    if key not in _refs:
        make = roll_heat if kind == "heat" else elementwise
        _refs[key] = jax.block_until_ready(jax.jit(make(n, steps))(field(n)))
    return _refs[key]


# ----------------------------------------------------------------------------------------- pallas plumbing

def params(ndim=1):
    return pltpu.CompilerParams(vmem_limit_bytes=100 * MiB, dimension_semantics=("parallel",) * ndim)


def pcall(kernel, shape, dtype, *, tpu_interpret=False, **kw):
    """pl.pallas_call; interpret mode off the TPU (TPU interpret mode where DMAs/semaphores are used)."""
    if not MOSAIC["on"]:
        kw["interpret"] = pltpu.InterpretParams() if tpu_interpret else True
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(shape, dtype), **kw)


def row_specs(n, bm, width=None, col=None):
    """up (8-row block above, wrapping), mid (bm rows), dn (8-row block below, wrapping) for a 1-D grid."""
    hb, nb8 = bm // 8, n // 8
    w = n if width is None else width
    return [pl.BlockSpec((8, w), lambda i: ((i * hb - 1 + nb8) % nb8, 0)),
            pl.BlockSpec((bm, w), lambda i: (i, 0)),
            pl.BlockSpec((8, w), lambda i: (((i + 1) * hb) % nb8, 0))]


def heat_rows_kernel(bm, n):
    """the baseline kernel body (stencil_shifts.heat_rows_kernel)."""
    return shifts_heat_rows_kernel(bm, n, C)


def update(mid, north, south, west, east):
    return mid + C * (north + south + west + east - 4 * mid)


def tile_step(prev, cur, nxt, n):
    """one Euler step of an 8-row tile cur (8, w=n) given the 8-row tiles above (prev) and below (nxt)."""
    r = lax.broadcasted_iota(jnp.int32, cur.shape, 0)
    north = jnp.where(r == 0, pltpu.roll(prev, 1, 0), pltpu.roll(cur, 1, 0))   # roll(prev,1)[0] = prev[7]
    south = jnp.where(r == 7, pltpu.roll(nxt, 7, 0), pltpu.roll(cur, 7, 0))    # roll(nxt,7)[7] = nxt[0]
    return update(cur, north, south, pltpu.roll(cur, 1, 1), pltpu.roll(cur, n - 1, 1))


# ------------------------------------------------------------------------------------------------ variants

def pallas_copy(bm):
    def make(n, steps):
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...] * 1.0001 + 0.5

        def step(u):
            return pcall(kernel, u.shape, u.dtype, grid=(n // bm,), in_specs=[pl.BlockSpec((bm, n), lambda i: (i, 0))],
                         out_specs=pl.BlockSpec((bm, n), lambda i: (i, 0)), compiler_params=params())(u)
        return loop(step, steps)
    return make


def pallas_copy_halo(bm):
    def make(n, steps):
        def kernel(up_ref, mid_ref, dn_ref, o_ref):
            o_ref[...] = mid_ref[...] * 1.0001 + 0.5
            o_ref[0:8, :] = o_ref[0:8, :] + 0.0 * (up_ref[...] + dn_ref[...])

        def step(u):
            return pcall(kernel, u.shape, u.dtype, grid=(n // bm,), in_specs=row_specs(n, bm),
                         out_specs=pl.BlockSpec((bm, n), lambda i: (i, 0)), compiler_params=params())(u, u, u)
        return loop(step, steps)
    return make


def pallas_copy2d(bm, bn):
    def make(n, steps):
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...] * 1.0001 + 0.5

        def step(u):
            return pcall(kernel, u.shape, u.dtype, grid=(n // bm, n // bn),
                         in_specs=[pl.BlockSpec((bm, bn), lambda i, j: (i, j))],
                         out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)), compiler_params=params(2))(u)
        return loop(step, steps)
    return make


def pallas_heat_nohalo(bm):
    def make(n, steps):
        def kernel(x_ref, o_ref):
            mid = x_ref[...]
            o_ref[...] = update(mid, pltpu.roll(mid, 1, 0), pltpu.roll(mid, bm - 1, 0),
                                pltpu.roll(mid, 1, 1), pltpu.roll(mid, n - 1, 1))

        def step(u):
            return pcall(kernel, u.shape, u.dtype, grid=(n // bm,), in_specs=[pl.BlockSpec((bm, n), lambda i: (i, 0))],
                         out_specs=pl.BlockSpec((bm, n), lambda i: (i, 0)), compiler_params=params())(u)
        return loop(step, steps)
    return make


def rows_call(kernel, n, bm, u, **kw):
    return pcall(kernel, u.shape, u.dtype, grid=(n // bm,), in_specs=row_specs(n, bm),
                 out_specs=pl.BlockSpec((bm, n), lambda i: (i, 0)), compiler_params=params(), **kw)(u, u, u)


def pallas_heat(bm):
    def make(n, steps):
        kernel = heat_rows_kernel(bm, n)
        return loop(lambda u: rows_call(kernel, n, bm, u), steps)
    return make


def pallas_heat_fixrows(bm):
    """whole-block rolls without iota/where (rows 0 and bm-1 wrong), then the first and last 8-row tiles redone."""
    def make(n, steps):
        def kernel(up_ref, mid_ref, dn_ref, o_ref):
            mid = mid_ref[...]
            o_ref[...] = update(mid, pltpu.roll(mid, 1, 0), pltpu.roll(mid, bm - 1, 0),
                                pltpu.roll(mid, 1, 1), pltpu.roll(mid, n - 1, 1))
            o_ref[0:8, :] = tile_step(up_ref[...], mid_ref[0:8, :], mid_ref[8:16, :], n)
            o_ref[bm - 8:bm, :] = tile_step(mid_ref[bm - 16:bm - 8, :], mid_ref[bm - 8:bm, :], dn_ref[...], n)
        return loop(lambda u: rows_call(kernel, n, bm, u), steps)
    return make


def pallas_heat_rowloop(bm):
    """a fori_loop over the block's 8-row tiles: every value is (8, n), not (bm, n)."""
    def make(n, steps):
        G = bm // 8

        def kernel(up_ref, mid_ref, dn_ref, o_ref):
            o_ref[0:8, :] = tile_step(up_ref[...], mid_ref[0:8, :], mid_ref[8:16, :], n)

            def body(g, carry):
                s = pl.multiple_of(g * 8, 8)
                sp = pl.multiple_of((g - 1) * 8, 8)
                sn = pl.multiple_of((g + 1) * 8, 8)
                o_ref[pl.ds(s, 8), :] = tile_step(mid_ref[pl.ds(sp, 8), :], mid_ref[pl.ds(s, 8), :],
                                                  mid_ref[pl.ds(sn, 8), :], n)
                return carry
            lax.fori_loop(1, G - 1, body, 0)
            o_ref[bm - 8:bm, :] = tile_step(mid_ref[bm - 16:bm - 8, :], mid_ref[bm - 8:bm, :], dn_ref[...], n)
        return loop(lambda u: rows_call(kernel, n, bm, u), steps)
    return make


def pallas_heat2d(bm, bn, mode="concat"):
    def make(n, steps):
        hb, nb8, wb, nc = bm // 8, n // 8, bn // 128, n // 128

        def kernel(up_ref, left_ref, mid_ref, right_ref, dn_ref, o_ref):
            mid = mid_ref[...]
            rows_ = lax.broadcasted_iota(jnp.int32, mid.shape, 0)
            north = jnp.where(rows_ == 0, jnp.broadcast_to(up_ref[7:8, :], mid.shape), pltpu.roll(mid, 1, 0))
            south = jnp.where(rows_ == bm - 1, jnp.broadcast_to(dn_ref[0:1, :], mid.shape), pltpu.roll(mid, bm - 1, 0))
            rw = pltpu.roll(mid, 1, 1)          # wrong at lane 0 (wraps inside the block)
            re = pltpu.roll(mid, bn - 1, 1)     # wrong at lane bn-1
            lane = lax.broadcasted_iota(jnp.int32, (bm, 128), 1)
            wl = pltpu.roll(left_ref[...], 1, 1)      # lane 0 = left[:, 127]
            er = pltpu.roll(right_ref[...], 127, 1)   # lane 127 = right[:, 0]
            if mode == "concat":
                if bn == 128:
                    west = jnp.where(lane == 0, wl, rw)
                    east = jnp.where(lane == 127, er, re)
                else:
                    west = jnp.concatenate([jnp.where(lane == 0, wl, rw[:, :128]), rw[:, 128:]], axis=1)
                    east = jnp.concatenate([re[:, :bn - 128], jnp.where(lane == 127, er, re[:, bn - 128:])], axis=1)
                o_ref[...] = update(mid, north, south, west, east)
            elif bn == 128:   # "st" with both edges in one tile
                o_ref[...] = update(mid, north, south, jnp.where(lane == 0, wl, rw), jnp.where(lane == 127, er, re))
            else:   # "st": store everything with the wrong edge lanes, then store the two edge column tiles again
                o_ref[...] = update(mid, north, south, rw, re)
                a, b = bn - 128, bn
                o_ref[:, 0:128] = update(mid[:, 0:128], north[:, 0:128], south[:, 0:128],
                                         jnp.where(lane == 0, wl, rw[:, 0:128]), re[:, 0:128])
                o_ref[:, a:b] = update(mid[:, a:b], north[:, a:b], south[:, a:b], rw[:, a:b],
                                       jnp.where(lane == 127, er, re[:, a:b]))

        specs = [pl.BlockSpec((8, bn), lambda i, j: ((i * hb - 1 + nb8) % nb8, j)),
                 pl.BlockSpec((bm, 128), lambda i, j: (i, (j * wb - 1 + nc) % nc)),
                 pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
                 pl.BlockSpec((bm, 128), lambda i, j: (i, ((j + 1) * wb) % nc)),
                 pl.BlockSpec((8, bn), lambda i, j: (((i + 1) * hb) % nb8, j))]

        def step(u):
            return pcall(kernel, u.shape, u.dtype, grid=(n // bm, n // bn), in_specs=specs,
                         out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)), compiler_params=params(2))(u, u, u, u, u)
        return loop(step, steps)
    return make


def pallas_heat_slices(bm):
    """all four neighbours as shifted (unaligned) ref slices, joined with concatenate."""
    def make(n, steps):
        def kernel(up_ref, mid_ref, dn_ref, o_ref):
            north = jnp.concatenate([up_ref[7:8, :], mid_ref[0:bm - 1, :]], axis=0)
            south = jnp.concatenate([mid_ref[1:bm, :], dn_ref[0:1, :]], axis=0)
            west = jnp.concatenate([mid_ref[:, n - 1:n], mid_ref[:, 0:n - 1]], axis=1)
            east = jnp.concatenate([mid_ref[:, 1:n], mid_ref[:, 0:1]], axis=1)
            o_ref[...] = update(mid_ref[...], north, south, west, east)
        return loop(lambda u: rows_call(kernel, n, bm, u), steps)
    return make


def pallas_heat_jnproll(bm):
    """the baseline with E/W computed by jnp.roll (slice + concatenate) instead of pltpu.roll."""
    def make(n, steps):
        def kernel(up_ref, mid_ref, dn_ref, o_ref):
            mid = mid_ref[...]
            rows_ = lax.broadcasted_iota(jnp.int32, mid.shape, 0)
            north = jnp.where(rows_ == 0, jnp.broadcast_to(up_ref[7:8, :], mid.shape), pltpu.roll(mid, 1, 0))
            south = jnp.where(rows_ == bm - 1, jnp.broadcast_to(dn_ref[0:1, :], mid.shape), pltpu.roll(mid, bm - 1, 0))
            o_ref[...] = update(mid, north, south, jnp.roll(mid, 1, 1), jnp.roll(mid, -1, 1))
        return loop(lambda u: rows_call(kernel, n, bm, u), steps)
    return make


def pallas_heat_rowslices(bm):
    """N/S read as sublane-shifted ref slices; interior rows, row 0 and row bm-1 stored separately (no where)."""
    def make(n, steps):
        def kernel(up_ref, mid_ref, dn_ref, o_ref):
            m = mid_ref[1:bm - 1, :]
            o_ref[1:bm - 1, :] = update(m, mid_ref[0:bm - 2, :], mid_ref[2:bm, :],
                                        pltpu.roll(m, 1, 1), pltpu.roll(m, n - 1, 1))
            r0 = mid_ref[0:1, :]
            o_ref[0:1, :] = update(r0, up_ref[7:8, :], mid_ref[1:2, :], pltpu.roll(r0, 1, 1), pltpu.roll(r0, n - 1, 1))
            r1 = mid_ref[bm - 1:bm, :]
            o_ref[bm - 1:bm, :] = update(r1, mid_ref[bm - 2:bm - 1, :], dn_ref[0:1, :],
                                         pltpu.roll(r1, 1, 1), pltpu.roll(r1, n - 1, 1))
        return loop(lambda u: rows_call(kernel, n, bm, u), steps)
    return make


def pallas_heat_k(k, bm):
    """k Euler steps a call on the (bm+16, n) block extended by the 8-row halos (rolls wrap inside the extended
    block: after k <= 8 steps the garbage reaches k rows in from its ends, the central bm rows are exact)."""
    assert 1 <= k <= 8

    def make(n, steps):
        assert steps % k == 0, (steps, k)
        E = bm + 16

        def full_step(v):
            return update(v, pltpu.roll(v, 1, 0), pltpu.roll(v, E - 1, 0), pltpu.roll(v, 1, 1), pltpu.roll(v, n - 1, 1))

        def kernel(up_ref, mid_ref, dn_ref, o_ref, ext_ref):   # ext_ref: (2, E, n) ping-pong
            ext_ref[0, 0:8, :] = up_ref[...]
            ext_ref[0, 8:bm + 8, :] = mid_ref[...]
            ext_ref[0, bm + 8:E, :] = dn_ref[...]
            if k > 1:
                def body(t, carry):
                    src = t % 2
                    ext_ref[1 - src] = full_step(ext_ref[src])
                    return carry
                lax.fori_loop(0, k - 1, body, 0)
            o_ref[...] = full_step(ext_ref[(k - 1) % 2])[8:bm + 8, :]

        def call(u):
            return rows_call(kernel, n, bm, u, scratch_shapes=[pltpu.VMEM((2, E, n), jnp.float32)])
        return loop(call, steps // k)
    return make


def pallas_copy_buf3(bm):
    def make(n, steps):
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...] * 1.0001 + 0.5

        def step(u):
            return pcall(kernel, u.shape, u.dtype, grid=(n // bm,),
                         in_specs=[pl.BlockSpec((bm, n), lambda i: (i, 0), pipeline_mode=pl.Buffered(3))],
                         out_specs=pl.BlockSpec((bm, n), lambda i: (i, 0)), compiler_params=params())(u)
        return loop(step, steps)
    return make


def pallas_emit(bm, buffers, heat, lookahead=False):
    """the copy or the baseline heat kernel under pltpu.emit_pipeline with `buffers` buffers on the main input."""
    def make(n, steps):
        mode = pl.Buffered(buffers, use_lookahead=True) if lookahead else pl.Buffered(buffers)
        main = pl.BlockSpec((bm, n), lambda i: (i, 0), pipeline_mode=mode)
        out = pl.BlockSpec((bm, n), lambda i: (i, 0))
        if heat:
            specs = row_specs(n, bm)
            specs[1] = main
            inner = heat_rows_kernel(bm, n)
        else:
            specs = [main]

            def inner(x_ref, o_ref):
                o_ref[...] = x_ref[...] * 1.0001 + 0.5

        def outer(*refs):
            pltpu.emit_pipeline(inner, grid=(n // bm,), in_specs=specs, out_specs=[out])(*refs)

        def step(u):
            nin = 3 if heat else 1
            return pcall(outer, u.shape, u.dtype, tpu_interpret=True,
                         in_specs=[pl.BlockSpec(memory_space=pl.ANY)] * nin,
                         out_specs=pl.BlockSpec(memory_space=pl.ANY),
                         compiler_params=pltpu.CompilerParams(vmem_limit_bytes=100 * MiB))(*([u] * nin))
        return loop(step, steps)
    return make


# --------------------------------------------------------------------------------------------------- runner

def run_case(name, n, steps, make, ref_kind=None, timing=True):
    """ref_kind: 'heat' (jnp.roll loop), 'copy' (elementwise loop), or None. Returns True when it ran."""
    base = dict(case=name, n=n, steps=steps)
    if time.perf_counter() - T0 > BUDGET_S:
        emit(**base, skipped=f"budget {BUDGET_S:.0f} s spent")
        return False
    try:
        fn = jax.jit(make(n, steps))
        u = field(n)
        if timing:
            first, t = timed(fn, u)
            per = t / steps
            row = dict(base, first_s=round(first, 4), step_s=per, gbps=round(2 * n * n * 4 / per / 1e9, 1))
        else:
            t0 = time.perf_counter()
            jax.block_until_ready(fn(u))
            row = dict(base, first_s=round(time.perf_counter() - t0, 4))
        if ref_kind is not None:
            row["max_abs_diff"] = float(jnp.max(jnp.abs(fn(u) - reference(ref_kind, n, steps))))
            row["vs"] = "jnp.roll loop" if ref_kind == "heat" else "elementwise loop"
        emit(**row)
        return True
    except Exception as e:  # noqa: BLE001  (a Mosaic lowering failure becomes an error row)
        msg = f"{type(e).__name__}: {str(e)[:700]}"
        if CHECK:
            msg += " | " + traceback.format_exc()[-600:]
        emit(**base, error=msg)
        return False


def cases(n, bms, bns, ks, one_bm, steps, ksteps):
    """(name, n, steps, make, ref_kind, fallback) in priority order."""
    out = []
    for bm in bms:
        out.append((f"pallas_copy_bm{bm}", n, steps, pallas_copy(bm), "copy", None))
        out.append((f"pallas_copy_halo_bm{bm}", n, steps, pallas_copy_halo(bm), "copy", None))
        out.append((f"pallas_heat_nohalo_bm{bm}", n, steps, pallas_heat_nohalo(bm), "heat", None))
        out.append((f"pallas_heat_bm{bm}", n, steps, pallas_heat(bm), "heat", None))
    for bm in bms:
        out.append((f"pallas_heat_fixrows_bm{bm}", n, steps, pallas_heat_fixrows(bm), "heat", None))
    for bm in bms[-2:]:
        out.append((f"pallas_heat_rowloop_bm{bm}", n, steps, pallas_heat_rowloop(bm), "heat", None))
    for bm in bms[-2:]:
        for k in ks:
            out.append((f"pallas_heat_k{k}_bm{bm}", n, ksteps(k), pallas_heat_k(k, bm), "heat", None))
    for bm in bms[-2:]:
        for bn in bns:
            out.append((f"pallas_heat2d_bm{bm}_bn{bn}", n, steps, pallas_heat2d(bm, bn), "heat",
                        (f"pallas_heat2d_st_bm{bm}_bn{bn}", pallas_heat2d(bm, bn, "st"))))
    for bn in bns:
        out.append((f"pallas_copy2d_bm{bms[-1]}_bn{bn}", n, steps, pallas_copy2d(bms[-1], bn), "copy", None))
    bm = one_bm
    out.append((f"pallas_heat_slices_bm{bm}", n, steps, pallas_heat_slices(bm), "heat", None))
    out.append((f"pallas_heat_jnproll_bm{bm}", n, steps, pallas_heat_jnproll(bm), "heat", None))
    out.append((f"pallas_heat_rowslices_bm{bm}", n, steps, pallas_heat_rowslices(bm), "heat", None))
    out.append((f"pallas_copy_buf3_bm{bm}", n, steps, pallas_copy_buf3(bm), "copy", None))
    for b, la in ((2, False), (3, False), (3, True)):
        tag = f"buf{b}" + ("la" if la else "")
        out.append((f"pallas_copy_emit_{tag}_bm{bm}", n, steps, pallas_emit(bm, b, False, la), "copy", None))
    for b in (2, 3):
        out.append((f"pallas_heat_emit_buf{b}_bm{bm}", n, steps, pallas_emit(bm, b, True), "heat", None))
    return out


def run_cases(cs, timing):
    for name, n, steps, make, ref_kind, fallback in cs:
        ok = run_case(name, n, steps, make, ref_kind, timing)
        if not ok and fallback is not None:
            run_case(fallback[0], n, steps, fallback[1], ref_kind, timing)


def check():
    """interpret mode on the CPU, small field: agreement only."""
    emit(case="devices", mode="check", devices=str(jax.devices()), version=jax.__version__, interpret=not ON_TPU)
    if not ON_TPU:   # emit_pipeline asks for the chip's tiling: pretend the CPU is a v5e (check mode only)
        from jax._src.pallas.mosaic import tpu_info
        kind = jax.devices()[0].device_kind
        tpu_info.registry.setdefault(kind, lambda: tpu_info.get_tpu_info_for_chip(tpu_info.ChipVersion.TPU_V5E, 1))
    x = jnp.arange(16 * 256, dtype=jnp.float32).reshape(16, 256)

    def rk(axis, shift):
        def kernel(x_ref, o_ref):
            o_ref[...] = pltpu.roll(x_ref[...], shift, axis)
        return kernel
    for axis, shift in ((0, 1), (0, 15), (1, 1), (1, 255)):
        y = pcall(rk(axis, shift), x.shape, x.dtype)(x)
        emit(case="pltpu_roll_semantics", axis=axis, shift=shift,
             equals_jnp_roll=bool(jnp.all(y == jnp.roll(x, shift, axis))))
    n = 512
    run_cases(cases(n, bms=(32, 64), bns=(128, 256), ks=(1, 2, 4, 8), one_bm=64, steps=2, ksteps=lambda k: 2 * k),
              timing=False)
    # the 2-D fallback (st) is only run when concat fails: check it explicitly
    for bm, bn in ((64, 128), (64, 256)):
        run_case(f"pallas_heat2d_st_bm{bm}_bn{bn}", n, 2, pallas_heat2d(bm, bn, "st"), "heat", False)
    # Python-side Mosaic lowering of the TPU-size cases (jax.export for platform tpu; libtpu's Mosaic passes,
    # where layout problems show up, do not run here)
    MOSAIC["on"] = True
    n = 8192
    cs = cases(n, bms=(64, 128, 256), bns=(1024, 2048), ks=(1, 2, 4, 8), one_bm=128, steps=20, ksteps=lambda k: 24)
    cs += [(f"pallas_heat2d_st_bm{bm}_bn{bn}", n, 20, pallas_heat2d(bm, bn, "st"), None, None)
           for bm in (128, 256) for bn in (1024, 2048)]
    for name, n_, steps, make, _, _ in cs:
        try:
            jax.export.export(jax.jit(make(n_, steps)), platforms=["tpu"])(jax.ShapeDtypeStruct((n_, n_), jnp.float32))
            emit(case=name, n=n_, tpu_lowering="ok")
        except Exception as e:  # noqa: BLE001
            emit(case=name, n=n_, tpu_lowering=f"{type(e).__name__}: {str(e)[:300]}")


def main():
    emit(case="devices", devices=str(jax.devices()), version=jax.__version__, budget_s=BUDGET_S)
    for n in (8192, 2048):
        run_case("elementwise_loop", n, 20, elementwise)
    for n in (8192, 2048):
        run_case("roll_heat", n, 20, roll_heat)
    run_cases(cases(8192, bms=(64, 128, 256), bns=(1024, 2048), ks=(1, 2, 4, 8), one_bm=128, steps=20,
                    ksteps=lambda k: 24), timing=True)
    # a few at 2048 (field fits in VMEM-adjacent caches; compare with the 2048 elementwise loop) if time is left
    for name, make, kind in (("pallas_copy_bm256", pallas_copy(256), "copy"), ("pallas_heat_bm256", pallas_heat(256), "heat"),
                             ("pallas_heat_k4_bm256", pallas_heat_k(4, 256), "heat")):
        run_case(name, 2048, 20 if "k4" not in name else 24, make, kind)
    emit(case="done", total_s=round(time.perf_counter() - T0, 1))


if __name__ == "__main__":
    check() if CHECK else main()
