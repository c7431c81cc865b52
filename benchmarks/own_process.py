"""Rows timed in a fresh process of their own: numbalsoda (no JAX in its process) and simkit.

    python benchmarks/own_process.py JOB.json OUT.json   (run by `time_in_fresh_process`)

Why: a small solve's time depends on the history of the process that runs it.
numbalsoda's LSODA on Robertson ran in 98 µs a call in a fresh process, and in 178 µs back to
back (600 µs a settled call) when its first call came after `kernels.py`'s Lorenz rows; with one
early call of it instead, the same rows left it at 98 µs and numbalsoda's DOP853 went from 0.96
to 1.50 ms. No thread was busy and no allocator setting changed it. simkit's compiled Robertson
program, settled, took 0.24 ms in a process of its own and 0.39-0.47 ms among the other rows.
Timed beside the other rows, numbalsoda was up to 6x slower than its users see it, and simkit's
ratios against it too good. Here each row runs in a fresh interpreter that builds that row
only, as a user's script would: numbalsoda's compiles that job's cfunc and never imports JAX.

A job: ``{"library": "numbalsoda", "method": "lsoda" | "dop853", "rhs": one of RHS, ...}`` or
``{"library": "simkit", "model": name, "solver": kernel class name or None (the default),
"jit": bool (the default inside the user's ``jax.jit``, a parameter passed in), "saves":
optional count of evenly spaced save times ...}``, both with ``"y0"`` (numbalsoda), ``"t_eval"``
(the save times, from 0 to the end), ``"rtol"``, ``"atol"``.
Each is timed two ways after a warm-up call: ``settled`` (the median of ``repeats`` calls, each
after the same ~10 ms of untimed Python work, `timing.settle`) and ``back_to_back`` (the median
of a loop of ``loop`` calls). Also returned: the saved states ``usol``, ``success``, ``compile``
(numbalsoda: the cfunc's compile; simkit: the first call less the settled median).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from timing import settle  # benchmarks/timing.py (no JAX at import)


def cfuncs(name: str):
    """numbalsoda's solver functions and the numba cfunc of rhs ``name`` (only that one is
    compiled). None when numba or numbalsoda is missing."""
    try:
        import numba as nb
        from numbalsoda import lsoda_sig
    except ImportError:
        return None
    if name == "lorenz":
        def rhs(t, u, du, p):
            du[0] = 10.0 * (u[1] - u[0])
            du[1] = u[0] * (28.0 - u[2]) - u[1]
            du[2] = u[0] * u[1] - (8.0 / 3.0) * u[2]
    elif name == "robertson":
        def rhs(t, u, du, p):
            # f2 = -(f1 + f3), as the library model writes it (conserves y1 + y2 + y3 to rounding)
            du[0] = -0.04 * u[0] + 1.0e4 * u[1] * u[2]
            du[2] = 3.0e7 * u[1] * u[1]
            du[1] = -(du[0] + du[2])
    elif name == "hires":
        def rhs(t, y, dy, p):
            bind = 280.0 * y[5] * y[7]
            dy[0] = -1.71 * y[0] + 0.43 * y[1] + 8.32 * y[2] + 0.0007
            dy[1] = 1.71 * y[0] - 8.75 * y[1]
            dy[2] = -10.03 * y[2] + 0.43 * y[3] + 0.035 * y[4]
            dy[3] = 8.32 * y[1] + 1.71 * y[2] - 1.12 * y[3]
            dy[4] = -1.745 * y[4] + 0.43 * y[5] + 0.43 * y[6]
            dy[5] = -bind + 0.69 * y[3] + 1.71 * y[4] - 0.43 * y[5] + 0.69 * y[6]
            dy[6] = bind - 1.81 * y[6]
            dy[7] = -bind + 1.81 * y[6]
    elif name == "van_der_pol_1000":
        def rhs(t, u, du, p):
            du[0] = u[1]
            du[1] = 1000.0 * (1.0 - u[0] * u[0]) * u[1] - u[0]
    else:
        raise KeyError(f"no numba rhs for {name!r}; known: {RHS}")
    return nb.cfunc(lsoda_sig)(rhs).address


RHS = ("lorenz", "robertson", "hires", "van_der_pol_1000")


def numbalsoda_call(job: dict):
    """``(call, compile seconds)``: one numbalsoda solve of ``job``, returning ``(usol, success)``."""
    import numbalsoda
    import numpy as np

    start = time.perf_counter()
    address = cfuncs(job["rhs"])
    compile_s = time.perf_counter() - start
    solver = getattr(numbalsoda, job["method"])
    y0, t_eval = np.asarray(job["y0"], float), np.asarray(job["t_eval"], float)
    return (lambda: solver(address, y0, t_eval, rtol=job["rtol"], atol=job["atol"])), compile_s


def simkit_call(job: dict):
    """``(call, None)``: one ``simkit.solve`` of ``job`` (its first call compiles), returning
    ``(ys, True)`` with ``ys`` a ``jax.Array`` (a failure raises); inside the user's ``jax.jit`` when
    ``job["jit"]`` (a parameter passed in as a number: each call runs the compiled program)."""
    import jax
    import numpy as np

    import simkit
    from simkit._config import configure_own_process
    configure_own_process()  # simkit's fast CPU settings, each unless the environment sets it

    model = simkit.models.get(job["model"])
    ts = np.asarray(job["t_eval"], float)
    # ("saves": that many evenly spaced save times, as `kernels.py`'s Lorenz rows pass them)
    # (throw=True, the default, as users and `kernels.py`'s rows call it: a failure raises)
    kw = dict(saveat=job.get("saves") or ts, rtol=job["rtol"], atol=job["atol"])
    if job.get("solver"):
        kw["solver"] = getattr(simkit, job["solver"])()
    if job.get("jit"):
        name = next(iter(model.params))
        value = float(model.params[name])
        fn = jax.jit(lambda v: simkit.solve(model, (0.0, ts[-1]), params={name: v}, **kw).ys)
        return (lambda: (fn(value), True)), None
    return (lambda: (simkit.solve(model, (0.0, ts[-1]), **kw).ys, True)), None


def run_job(job: dict, repeats: int, loop: int) -> dict:
    """Time one job in this process (see the module docstring)."""
    import numpy as np

    call, compile_s = (numbalsoda_call if job["library"] == "numbalsoda" else simkit_call)(job)

    def waited():
        out = call()
        if job["library"] == "simkit":
            import jax

            out = jax.block_until_ready(out)
        return out

    start = time.perf_counter()
    usol, success = waited()
    first = time.perf_counter() - start
    settled = []
    for _ in range(repeats):
        settle()
        t = time.perf_counter()
        waited()
        settled.append(time.perf_counter() - t)
    looped = []
    for _ in range(loop):
        t = time.perf_counter()
        waited()
        looped.append(time.perf_counter() - t)
    median = statistics.median(settled)
    return dict(settled=median, settled_samples=settled, back_to_back=statistics.median(looped),
                compile=max(first - median, 0.0) if compile_s is None else compile_s,
                usol=np.asarray(usol).tolist(), success=bool(success))


def time_in_fresh_process(job: dict, repeats: int, loop: int = 200) -> dict | None:
    """`run_job` of ``job`` in a new Python process; None when numbalsoda is not installed."""
    if job["library"] == "numbalsoda":
        try:
            import numbalsoda  # noqa: F401
        except ImportError:
            return None
    with tempfile.TemporaryDirectory() as tmp:
        jobs, out = os.path.join(tmp, "job.json"), os.path.join(tmp, "out.json")
        with open(jobs, "w") as fh:
            json.dump(dict(job=job, repeats=repeats, loop=loop), fh)
        subprocess.run([sys.executable, os.path.join(HERE, "own_process.py"), jobs, out], check=True)
        with open(out) as fh:
            return json.load(fh)


if __name__ == "__main__":
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    result = run_job(spec["job"], spec["repeats"], spec["loop"])
    with open(sys.argv[2], "w") as fh:
        json.dump(result, fh)
