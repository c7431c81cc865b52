"""Does overlapping the halo exchange with interior work pay on XLA:CPU?

    SIMKIT_CPU_DEVICES=2 python benchmarks/experiments/halo_overlap.py [--n 2048] [--steps 100] [--repeats 7]

2-D heat, periodic, explicit Euler, float64, the grid split in row slabs over two devices
(``jax.shard_map``), ``--steps`` steps per call (a ``fori_loop`` inside the shard), medians of
interleaved repeats. Columns are shifted by ``pad`` + ``select`` (simkit's fused windows):

- ``exchange``: both ghost rows by ``lax.ppermute``, then one fused update that reads them (the
  form of `simkit.parallel`: every point of the step waits for the exchange);
- ``overlap``: the update of the whole block from its own rows first (no dependence on the
  exchange, so XLA may run it while the ``ppermute`` is in flight), then the first and last
  rows recomputed from the ghost rows and written in place (``dynamic_update_slice``);
- ``local``: the ghost rows taken from the shard's own block (no communication; not the
  physics: it bounds what the exchange costs).

``wide``: two ghost rows every second step, the block updated twice (one row thinner each
time). ``exchange``, ``overlap`` and ``wide`` must agree bit for bit (checked). Writes a JSON record with
``--out``.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMKIT_CPU_DEVICES", "2")

import argparse
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import simkit  # noqa: E402,F401  (one CPU device per core or SIMKIT_CPU_DEVICES; float64)
from stencil import machine  # noqa: E402  benchmarks/stencil.py
from timing import interleaved  # noqa: E402  benchmarks/timing.py

C = 0.2  # dt * diffusivity / dx^2


def shift_cols(a, s):
    """``a[:, j - s]``, periodic in columns, by pad + select (fuses with its consumer)."""
    n = a.shape[1]
    col = lax.broadcasted_iota(jnp.int32, a.shape, 1)
    if s == 1:
        return jnp.where(col == 0, a[:, n - 1:n], jnp.pad(a[:, :-1], ((0, 0), (1, 0))))
    return jnp.where(col == n - 1, a[:, 0:1], jnp.pad(a[:, 1:], ((0, 0), (0, 1))))


def rows_with_ghosts(u, above, below):
    """The rows above and below every row of ``u``, given the ghost rows (fused windows)."""
    row = lax.broadcasted_iota(jnp.int32, u.shape, 0)
    up = jnp.where(row == 0, above, jnp.pad(u[:-1], ((1, 0), (0, 0))))
    dn = jnp.where(row == u.shape[0] - 1, below, jnp.pad(u[1:], ((0, 1), (0, 0))))
    return up, dn


def update(u, up, dn):
    return u + C * (up + dn + shift_cols(u, 1) + shift_cols(u, -1) - 4.0 * u)


def ghosts(u, n_dev, width=1):
    """The ``width`` rows above this shard (the previous shard's last) and below it."""
    forward = [(i, (i + 1) % n_dev) for i in range(n_dev)]
    backward = [(i, (i - 1) % n_dev) for i in range(n_dev)]
    return lax.ppermute(u[-width:], "x", forward), lax.ppermute(u[:width], "x", backward)


def step_exchange(u, n_dev):
    above, below = ghosts(u, n_dev)
    return update(u, *rows_with_ghosts(u, above, below))


def step_overlap(u, n_dev):
    above, below = ghosts(u, n_dev)
    inner = update(u, *rows_with_ghosts(u, u[-1:], u[:1]))  # rows 0 and -1 are redone below
    first = update(u[:2], *rows_with_ghosts(u[:2], above, u[2:3]))[:1]
    last = update(u[-2:], *rows_with_ghosts(u[-2:], u[-3:-2], below))[1:]
    inner = lax.dynamic_update_slice(inner, first, (0, 0))
    return lax.dynamic_update_slice(inner, last, (u.shape[0] - 1, 0))


def step_wide(u, n_dev):
    """Two steps per exchange: two ghost rows from each neighbour, the block with its ghosts
    updated twice, each time one row thinner on each side (the first step's outer rows
    computed twice, once by each neighbour)."""
    above, below = ghosts(u, n_dev, 2)
    n = u.shape[0]
    row = lax.broadcasted_iota(jnp.int32, (n + 4, u.shape[1]), 0)
    ext = jnp.where(row < 2, jnp.pad(above, ((0, n + 2), (0, 0))),
                    jnp.where(row >= n + 2, jnp.pad(below, ((n + 2, 0), (0, 0))), jnp.pad(u, ((2, 2), (0, 0)))))
    for _ in range(2):
        mid = ext[1:-1]
        ext = update(mid, ext[:-2], ext[2:])
    return ext


def step_local(u, n_dev):
    return update(u, *rows_with_ghosts(u, u[-1:], u[:1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    devices = jax.devices()[:2]
    n_dev = len(devices)
    mesh = Mesh(np.array(devices), ("x",))
    sharding = NamedSharding(mesh, P("x"))
    u0 = jax.device_put(np.random.default_rng(0).random((a.n, a.n)), sharding)

    def rollout(step, per_call=1):
        def per_shard(u):
            return lax.fori_loop(0, a.steps // per_call, lambda i, v: step(v, n_dev), u)
        return jax.jit(jax.shard_map(per_shard, mesh=mesh, in_specs=P("x"), out_specs=P("x")))

    runs = {name: rollout(step) for name, step in
            (("exchange", step_exchange), ("overlap", step_overlap), ("local", step_local))}
    runs["wide"] = rollout(step_wide, per_call=2)
    outs = {name: np.asarray(f(u0)) for name, f in runs.items()}
    identical = bool(np.array_equal(outs["exchange"], outs["overlap"]))
    wide_identical = bool(np.array_equal(outs["exchange"], outs["wide"]))
    print(f"overlap equals exchange bit for bit: {identical}; wide: {wide_identical}")
    times = interleaved({name: (lambda f=f: f(u0)) for name, f in runs.items()}, a.repeats, warm_up=False)
    ms = {name: 1e3 * t / a.steps for name, t in times.items()}
    for name, v in ms.items():
        print(f"{name:9s} {v:7.3f} ms/step")
    print(f"wide / exchange: {ms['wide'] / ms['exchange']:.3f}")
    print(f"overlap / exchange: {ms['overlap'] / ms['exchange']:.3f}; exchange costs "
          f"{ms['exchange'] - ms['local']:.3f} ms/step over no communication")
    record = {"command": "SIMKIT_CPU_DEVICES=2 python benchmarks/experiments/halo_overlap.py "
                         + " ".join(sys.argv[1:]),
              "machine": machine(), "n": a.n, "steps_per_call": a.steps, "repeats": a.repeats,
              "devices": n_dev, "ms_per_step": ms, "overlap_equals_exchange": identical,
              "wide_equals_exchange": wide_identical}
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(record, fh, indent=1)


if __name__ == "__main__":
    main()
