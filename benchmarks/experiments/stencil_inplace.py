"""Forms of an in-place stencil step; none is faster on two cores than simkit's step. To re-run:

    python benchmarks/experiments/stencil_inplace.py [block_rows]

2-D heat 2048^2, Euler, periodic, float64, 20 steps per call, medians of 7 interleaved runs:
``plain`` (one fusion + the loop-carry copy), ``blocked`` (row blocks written back in place by
``dynamic_update_slice``; each block and its halo rows taken into a temporary inside a
``lax.cond`` on a traced-true predicate, so XLA cannot fuse the reads past the writes; the
old first/last rows carried apart), and simkit's own `rollout`. Measured on 2 cores at load
1.0-1.3: plain 5.67, blocked 5.62, simkit 5.60 ms/step (64 rows); 5.81 / 6.25 / 5.91 (256 rows).
Then the cost of one pass: in place 1.45 ms, one shifted window 4.83, flip 4.40.
"""
import jax, jax.numpy as jnp, numpy as np, time, statistics, re, sys
jax.config.update("jax_enable_x64", True)
n = 2048
u0 = jnp.asarray(np.random.default_rng(0).random((n, n)))
c = 0.1
STEPS = 20
B = int(sys.argv[1]) if len(sys.argv) > 1 else 64
col = jnp.arange(n)

def shift_cols(a, s):
    # a[:, j - s] periodic, by pad + select (fuses)
    if s == 1:
        return jnp.where(col == 0, a[:, n - 1:n], jnp.pad(a[:, :-1], ((0, 0), (1, 0))))
    return jnp.where(col == n - 1, a[:, 0:1], jnp.pad(a[:, 1:], ((0, 0), (0, 1))))

def ext_update(ext, c):
    above, mid, dn = ext[:-2], ext[1:-1], ext[2:]
    return mid + c * (above + dn + shift_cols(mid, 1) + shift_cols(mid, -1) - 4 * mid)

@jax.jit
def plain(u, c):
    def step(u):
        ext = jnp.concatenate([u[n - 1:n], u, u[0:1]], 0)
        return ext_update(ext, c)
    return jax.lax.fori_loop(0, STEPS, lambda i, u: step(u), u)

def blocked_step(carry, c, flag):
    u, edges = carry            # old rows (n-1, 0) of this step's input, kept apart
    prev_old, first_old = edges[0:1], edges[1:2]
    nb = n // B
    news = {}
    for k in range(nb):
        r0, r1 = k * B, (k + 1) * B
        def take(u=u, r0=r0, r1=r1, prev_old=prev_old):
            below = u[r1:r1 + 1] if r1 < n else first_old
            return jnp.concatenate([prev_old, u[r0:r1], below], 0)
        ext = jax.lax.cond(flag, take, lambda: jnp.zeros((B + 2, n), u.dtype))
        new = ext_update(ext, c)
        prev_old = ext[B:B + 1]
        if k == 0: news["first"] = new[0:1]
        if k == nb - 1: news["last"] = new[-1:]
        u = jax.lax.dynamic_update_slice(u, new, (r0, 0))
    return u, jnp.concatenate([news["last"], news["first"]], 0)

@jax.jit
def blocked(u, c):
    edges = jnp.concatenate([u[n - 1:n], u[0:1]], 0)
    out, _ = jax.lax.fori_loop(0, STEPS, lambda i, cr: blocked_step(cr, c, c > -1e300), (u, edges))
    return out

from simkit import stencil as sk
from simkit.stencil.pde import PDEModel
def heat_rhs(t, u, p, space):
    return p["d"] * sk.laplacian(space.pad(u), space.spacing)
m = PDEModel(rhs=heat_rhs, grid=sk.Grid((n, n), 0.0, float(n)), bcs=sk.Periodic(), params={"d": 1.0}, u0=np.asarray(u0)[None], name="h")
simk = jax.jit(lambda u: sk.rollout(m, u0=u, dt=c, steps=STEPS, stepper=sk.ForwardEuler())[0][-1])

ref = plain(u0, c)
print("blocked", float(jnp.max(jnp.abs(blocked(u0, c) - ref))), "simkit", float(jnp.max(jnp.abs(simk(u0[None])[0] - ref))))
txt = blocked.lower(u0, c).compile().as_text()
print("  field copies:", len(re.findall(r"f64\[2048,2048\]\{[^}]*\} copy\(", txt)), " field fusions:", len(re.findall(r"f64\[2048,2048\]\{[^}]*\} fusion\(", txt)))
fns = dict(plain=lambda: plain(u0, c), blocked=lambda: blocked(u0, c), simkit=lambda: simk(u0[None]))
ts = {k: [] for k in fns}
for _ in range(7):
    for k, f in fns.items():
        s = time.perf_counter(); jax.block_until_ready(f()); ts[k].append((time.perf_counter() - s) / STEPS)
print(B, {k: round(statistics.median(v) * 1e3, 2) for k, v in ts.items()})


# -- the cost of one pass over the field --
n=2048; STEPS=20; c=0.1
u0 = jnp.asarray(np.random.default_rng(0).random((n, n)))
@jax.jit
def inplace(u, c): return jax.lax.fori_loop(0, STEPS, lambda i, u: u + c * u * (1 - u), u)
@jax.jit
def flipped(u, c): return jax.lax.fori_loop(0, STEPS, lambda i, u: u + c * jnp.flip(u, 1), u)
col = jnp.arange(n)
@jax.jit
def onewin(u, c):  # one shifted window by pad+select: not in place
    return jax.lax.fori_loop(0, STEPS, lambda i, u: u + c * jnp.where(col == 0, u[:, n-1:n], jnp.pad(u[:, :-1], ((0,0),(1,0)))), u)
fns = dict(inplace=lambda: inplace(u0, c), flipped=lambda: flipped(u0, c), onewin=lambda: onewin(u0, c))
for f in fns.values(): f()
ts = {k: [] for k in fns}
for _ in range(9):
    for k, f in fns.items():
        s = time.perf_counter(); jax.block_until_ready(f()); ts[k].append((time.perf_counter() - s) / STEPS)
print({k: round(statistics.median(v) * 1e3, 2) for k, v in ts.items()})
