"""Strict test configuration (STYLE.md item 9).

Runs before anything touches a JAX backend: 4 simulated CPU devices, float64, rank
promotion raises, matplotlib on Agg, no persistent compilation cache in the user's home.
`import simkit` changes nothing but float64, so the suite opts in to simkit's fast CPU
settings itself, through the environment so that the processes its tests start inherit them
(simkit/_config.py): single-device programs on the calling thread
(``SIMKIT_CPU_ASYNC_DISPATCH=0``), XLA:CPU's small-loop threshold at 128 KiB
(``SIMKIT_SMALL_LOOPS``) and, in those processes, one CPU device per core
(``SIMKIT_CPU_DEVICES``; this process sets 4 in JAX itself). tests/test_config.py checks
what a bare ``import simkit`` changes, in a process without them.

The suite is compile-bound (XLA compiles took 1,430 of its 2,340 CPU seconds, in 4,700
programs with hardly any repeats) and compiles every program with ``SIMKIT_FAST_COMPILE=2``
(simkit/_config.py): XLA:CPU's classic fusion code generator (about half the compile time of
the MLIR emitters), LLVM's optimisation level 0 and no FMAs. Level 0 halved XLA's backend
compile time once more (654-680 -> 357-416 s summed over the suite, 2026-12-03) for programs that run
2.5-5x slower, which the suite's small problems hardly notice (715-772 -> 652 s wall); without
FMAs a program and its chunked or decomposed twin agree bit for bit at level 0 as they do
with FMAs at LLVM's default level. Subprocess tests inherit the setting. Users get simkit's
per-program choice (simkit/_codegen.py: the classic generator for kernel solves, small
models' diffrax solves and fits of either, XLA's default for the rest, with FMAs and LLVM's
default level), which the validation report and the benchmarks use; test_config.py solves
under the user's settings against SciPy and checks there that an ensemble's results do not
depend on its chunks. ``SIMKIT_FAST_COMPILE= pytest`` runs the suite with the per-program
choice, ``SIMKIT_FAST_COMPILE=1 pytest`` with the classic generator alone and
``SIMKIT_FAST_COMPILE=0 pytest`` with XLA's default everywhere. (A CI failure once
blamed on the flag was SciPy's BDF
reading uninitialised memory: see `simkit.reference.scipy_method`.)
"""

import os

os.environ.setdefault("SIMKIT_COMPILATION_CACHE", "0")
os.environ.setdefault("SIMKIT_FAST_COMPILE", "2")
os.environ.setdefault("SIMKIT_CPU_ASYNC_DISPATCH", "0")
os.environ.setdefault("SIMKIT_SMALL_LOOPS", str(128 * 1024))
os.environ.setdefault("SIMKIT_CPU_DEVICES", str(min(os.cpu_count() or 1, 32)))  # subprocesses
os.environ.setdefault("MPLBACKEND", "Agg")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 4)
if os.environ.get("SIMKIT_ENABLE_X64", "1").strip().lower() not in ("0", "false", "no", "off"):
    jax.config.update("jax_enable_x64", True)  # (SIMKIT_ENABLE_X64=0: the float32 accelerator lane)
jax.config.update("jax_numpy_rank_promotion", "raise")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import pytest  # noqa: E402

import simkit  # noqa: E402,F401


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Free every compiled program after each test module. XLA:CPU maps about 180 memory
    regions per loaded executable (measured), and Linux refuses more than vm.max_map_count
    (65,530) per process: the whole suite in one process crashed with a segmentation fault
    in XLA's compiler once about 350 programs were alive. Programs are rarely shared across
    modules, so clearing costs little."""
    yield
    import gc

    jax.clear_caches()
    gc.collect()


@pytest.fixture
def key():
    return jax.random.key(0)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


# The longest modules first (measured: each holds 40-160 s of a 1,600 s suite), so that
# `pytest -n 2 --dist loadfile` ends on short modules: a long one last leaves a core idle
# while it finishes (the 40-s bit-identity test ran last). Order only; every worker collects
# the same order, and xdist keeps it (it would otherwise sort modules by their number of tests).
LONGEST_FIRST = ("test_fit.py", "test_models_vs_scipy.py", "test_docs.py", "test_kernel_solve.py",
                 "test_scipy_ivp_port.py", "test_examples.py", "test_decompose.py", "test_exact_strict.py")


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FIRST)))  # stable: the rest as collected
