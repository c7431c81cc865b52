"""XLA:CPU runs a loop body's thunks one after another only while every buffer they touch is
at most 512 bytes; one larger buffer makes the whole body a concurrent task graph.

    python benchmarks/experiments/thunk_executor.py

A ``fori_loop`` of 2,000 iterations whose body is 20 rounds of small dependent operations on a
3-vector (float64) and one ``.at[i].set`` into a carried ``(rows, 3)`` buffer; the time per
iteration against the buffer's size. XLA:CPU's thunk executor (jaxlib 0.10) takes its
sequential path when all buffers of a thunk sequence are at most 512 bytes (or the sequence
has at most 8 thunks, or is a chain); the threshold is fixed in the library, with no flag.
"""

import statistics
import time

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)
ITERATIONS = 2000


def loop(rows: int):
    def body(i, carry):
        y, buf = carry
        for _ in range(20):
            y = jnp.cumsum(jnp.sin(y) + jnp.dot(y, y) * 1e-3) * 0.5
        return y, buf.at[i % rows].set(y)

    return jax.jit(lambda y, buf: jax.lax.fori_loop(0, ITERATIONS, body, (y, buf)))


def main() -> None:
    y0 = jnp.ones(3)
    for rows in (1, 16, 21, 22, 100):
        f, buf = loop(rows), jnp.zeros((rows, 3))
        jax.block_until_ready(f(y0, buf))
        times = []
        for _ in range(30):
            start = time.perf_counter()
            jax.block_until_ready(f(y0, buf))
            times.append(time.perf_counter() - start)
        print(f"buffer {rows * 24:5d} bytes: {1e6 * statistics.median(times) / ITERATIONS:.2f} us per iteration")


if __name__ == "__main__":
    main()
