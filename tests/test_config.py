"""Precision policy (float32 opt-out) and the optional-dependency error."""

import functools
import os
import subprocess
import sys

import numpy as np
import pytest

import simkit
from simkit import models

FLOAT32_SCRIPT = """
import numpy as np, simkit
from simkit import models
sol = simkit.solve(models.get("sir"), saveat=5, rtol=1e-5, atol=1e-7)
ref = simkit.reference.solve_ivp(models.get("sir"), saveat=5, rtol=1e-10, atol=1e-12)
err = float(np.max(np.abs(np.asarray(sol.ys, np.float64) - ref.ys)))
import sys
imported = ",".join(m for m in ("diffrax", "optimistix", "lineax") if m in sys.modules) or "none"
try:  # a span float32 cannot hold: its ends round to one time (it was solved in 0 steps)
    simkit.solve(models.get("sir"), (1e6, 1e6 + 1e-3), saveat=2)
    refused = "no"
except simkit.InputError as e:
    refused = "yes" if "in float32 its ends round to 1000000.0 and 1000000.0" in str(e) else repr(str(e))
# the samplers in float32 (found by probing): strata + u rounded up into the next stratum
# (keys 9 and 14 left one empty), and lo + (hi - lo) u up to hi
import jax
strata = [np.bincount(np.floor(np.asarray(simkit.sample.latin_hypercube(jax.random.key(seed), {"a": (0.0, 1.0)},
                                                                      1000)["a"], np.float64) * 1000).astype(int),
                      minlength=1000) for seed in (9, 14)]
draws = np.asarray(simkit.sample.uniform(jax.random.key(0), {"a": (100.0, 101.0)}, 200_000)["a"])
sampled = "ok" if all((c == 1).all() for c in strata) and draws.max() < 101.0 and draws.min() >= 100.0 else "bad"
print(sol.ys.dtype, err, imported, refused, sampled)
"""


def test_float32_opt_out_in_a_fresh_process():
    """About float32: SIMKIT_ENABLE_X64=0 keeps JAX's float32; float32 tolerance 1e-4; the
    samplers keep their promises in float32. And a kernel solve does not import diffrax, optimistix or lineax (0.26 s of `import simkit`)."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(SIMKIT_ENABLE_X64="0", SIMKIT_COMPILATION_CACHE="0")
    out = subprocess.run([sys.executable, "-c", "import simkit.reference\n" + FLOAT32_SCRIPT],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    dtype, err, imported, refused, sampled = out.stdout.split()
    assert dtype == "float32"
    assert sampled == "ok"  # a latin hypercube's strata hold one member each; uniform draws below high
    assert imported == "none"
    assert refused == "yes"
    assert float(err) < 1e-4


def test_to_xarray_names_the_extra_when_missing(monkeypatch):
    sol = simkit.solve(models.get("sir"), saveat=3)
    monkeypatch.setitem(sys.modules, "xarray", None)
    with pytest.raises(simkit.DependencyError, match=r"needs xarray.*: pip install xarray$"):
        sol.to_xarray()


# -- importing simkit leaves the user's JAX/equinox configuration alone ----------------------

POLICY_SCRIPT = """
import json, os, sys
import equinox as eqx  # before simkit on purpose: the import order must not matter
import jax
if len(sys.argv) > 1:  # a cache the user configured in Python before importing simkit
    jax.config.update("jax_compilation_cache_dir", sys.argv[1])
import simkit
from simkit._config import simkit_call

import threading

check = lambda x: eqx.error_if(x, x < 0, "negative")
check2 = lambda x: eqx.error_if(x, x > 9, "too big")
# a new function each time: JAX caches the trace of a function object it has seen
callbacks = lambda f=check: str(jax.make_jaxpr(lambda x: f(x))(1.0)).count("callback")
threshold = lambda: jax.config.jax_persistent_cache_min_compile_time_secs
out = {"x64": jax.config.jax_enable_x64, "outside": callbacks(), "threshold": threshold(),
       "entry_size": jax.config.jax_persistent_cache_min_entry_size_bytes,
       "cache_dir": jax.config.jax_compilation_cache_dir}
with simkit_call():
    out["inside"] = callbacks()  # equinox's cached check from outside must not leak in
    out["inside_first"] = callbacks(check2)  # first traced here: must not leak out
    out["inside_threshold"] = threshold()
    with simkit_call():
        pass
    out["inside_after_nested"] = callbacks()
    thread = threading.Thread(target=lambda: out.update(other_thread=callbacks(lambda x: check(x) + 1)))
    thread.start(); thread.join()
out["after"] = callbacks()
out["after_first_inside"] = callbacks(check2)
out["after_threshold"] = threshold()
try:
    jax.jit(check)(-1.0)
    out["user_check_raises"] = False
except Exception:
    out["user_check_raises"] = True
out["eqx_env"] = os.environ.get("EQX_ON_ERROR")
print(json.dumps(out))
"""

_USER_VARS = ("EQX_ON_ERROR", "JAX_ENABLE_X64", "JAX_COMPILATION_CACHE_DIR", "XLA_FLAGS",
              "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES")


def _policy(tmp_path, *args, **env_vars):
    import json

    env = {k: v for k, v in os.environ.items() if k not in _USER_VARS and not k.startswith("SIMKIT_")}
    env.update(SIMKIT_CACHE_DIR=str(tmp_path / "simkit-cache"), SIMKIT_COMPILATION_CACHE="1", SIMKIT_CPU_DEVICES="1",
               **env_vars)
    out = subprocess.run([sys.executable, "-c", POLICY_SCRIPT, *map(str, args)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_changes_nothing_for_user_code_policies_apply_in_simkit_calls(tmp_path):
    got = _policy(tmp_path)
    assert got["x64"] is True  # simkit's float64 default
    assert got["eqx_env"] is None  # EQX_ON_ERROR is not set for the process
    # the user's equinox checks raise (host callbacks), before, after and between simkit calls
    assert got["outside"] > 0 and got["after"] > 0 and got["user_check_raises"]
    assert got["after_first_inside"] > 0 and got["other_thread"] > 0
    # inside simkit's calls they substitute NaN: no callbacks, so the program can be cached
    assert got["inside"] == got["inside_first"] == got["inside_after_nested"] == 0
    # simkit's cache threshold applies to simkit's calls only; JAX's stays for the user's code
    assert got["cache_dir"] == str(tmp_path / "simkit-cache")
    assert got["threshold"] == got["after_threshold"] == 1.0 and got["inside_threshold"] == 0.1
    assert got["entry_size"] == 0


def test_import_respects_what_the_user_configured(tmp_path):
    got = _policy(tmp_path, EQX_ON_ERROR="raise", JAX_ENABLE_X64="0",
                  JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="5",
                  JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="100")
    assert got["x64"] is False  # JAX_ENABLE_X64=0 wins over simkit's float64 default
    assert got["inside"] > 0  # the user's EQX_ON_ERROR holds in simkit's calls too
    assert got["threshold"] == got["inside_threshold"] == 5.0 and got["entry_size"] == 100


def test_a_cache_the_user_configured_keeps_jax_thresholds(tmp_path):
    user_cache = tmp_path / "user-cache"
    got = _policy(tmp_path, user_cache)
    assert got["cache_dir"] == str(user_cache)
    assert got["threshold"] == got["inside_threshold"] == 1.0
    assert not (tmp_path / "simkit-cache").exists()


IMPORT_SCRIPT = """
import json, os, sys
import jax
config = lambda: {name: repr(value) for name, value in sorted(jax.config.values.items())}
before = config()
if sys.argv[1] == "simkit":
    import simkit
after = config()
print(json.dumps(dict(changed={k: after[k] for k in after if before.get(k) != after[k]}, config=after,
                      flags=os.environ.get("XLA_FLAGS"), devices=[repr(d) for d in jax.devices()])))
"""


def _fresh(script, *args, **env_vars):
    """``script`` in a fresh process without the suite's settings (SIMKIT_*, JAX_*, XLA_FLAGS)."""
    import json

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SIMKIT_", "JAX_")) and k not in ("XLA_FLAGS", "EQX_ON_ERROR")}
    env.update(env_vars)
    out = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_leaves_the_process_alone_but_float64():
    """``import simkit`` in a fresh process against ``import jax`` alone: JAX's configuration,
    XLA_FLAGS (a flag of the user's) and the device list are the same, apart from the one
    documented exception, float64 (simkit/_config.py)."""
    user = "--xla_cpu_enable_fast_math=false"
    plain = _fresh(IMPORT_SCRIPT, "jax", XLA_FLAGS=user)
    got = _fresh(IMPORT_SCRIPT, "simkit", XLA_FLAGS=user)
    assert got["changed"] == {"jax_enable_x64": "True"}, got["changed"]
    assert {k: v for k, v in got["config"].items() if k != "jax_enable_x64"} == \
        {k: v for k, v in plain["config"].items() if k != "jax_enable_x64"}
    assert got["flags"] == plain["flags"] == user
    assert got["devices"] == plain["devices"]


def test_a_program_is_traced_with_the_garbage_collector_paused_and_left_as_it_was():
    """simkit's programs trace with Python's cyclic garbage collector paused
    (`simkit._codegen.gc_paused`), and the collector runs again after, or stays off where the
    user had turned it off."""
    import gc

    import jax.numpy as jnp

    from simkit._codegen import codegen_jit

    seen = []

    @codegen_jit()
    def program(x):
        seen.append(gc.isenabled())
        return x + 1.0

    assert gc.isenabled()
    program(jnp.asarray(1.0))
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        program(jnp.asarray([1.0, 2.0]))  # another shape: traced again
        assert seen == [False, False] and not gc.isenabled()
    finally:
        gc.enable()


CONFIGURE_SCRIPT = """
import json, jax, simkit
from simkit import _config
out = dict(own=_config.configure_own_process())  # what the simkit command turns on
out["devices"] = len(jax.devices())  # JAX starts here
out["again"] = _config.configure_own_process()  # too late for most: left alone, nothing raised
out["same"] = simkit.configure(cpu_devices=out["devices"], small_loops=True)["cpu_devices"]  # what holds: no error
out["late"], out["types"] = [], []
for kw in (dict(cpu_devices=out["devices"] + 1), dict(async_dispatch=True), dict(small_loops=False)):
    try:
        simkit.configure(**kw)
    except simkit.InputError as e:
        out["late"].append(str(e))
for kw in (dict(cpu_devices="2"), dict(x64=1), dict(compilation_cache=3)):
    try:
        simkit.configure(**kw)
    except simkit.InputTypeError as e:
        out["types"].append(str(e))
out["x64"] = simkit.configure(x64=False)["x64"]
out["cache"] = simkit.configure(compilation_cache=False)["compilation_cache"]
print(json.dumps(out))
"""


def test_configure_opts_in_before_jax_starts(tmp_path):
    """`simkit.configure`: what simkit's own processes turn on, the settings in effect, a clear
    error for a setting JAX can no longer take, and none for one that holds already."""
    got = _fresh(CONFIGURE_SCRIPT, SIMKIT_CACHE_DIR=str(tmp_path))
    cores = min(os.cpu_count() or 1, 32)
    assert got["own"] == dict(x64=True, cpu_devices=cores, async_dispatch=False, small_loops=131072,
                              compilation_cache=str(tmp_path), row_blocks=True), got
    assert got["devices"] == cores and got["again"] == got["own"] and got["same"] == cores
    assert len(got["late"]) == 3 and all("JAX has already started" in e for e in got["late"]), got["late"]
    assert f"or set SIMKIT_CPU_DEVICES={cores + 1} in the environment" in got["late"][0]
    assert got["types"] == ["simkit.configure(cpu_devices='2'): use a whole number of CPU devices, or True (one per core)",
                            "simkit.configure(x64=1): use True or False",
                            "simkit.configure(compilation_cache=3): use True, False or a folder"]
    assert got["x64"] is False and got["cache"] is None


CODEGEN_CASES = (("robertson", "Rodas5P", (0.0, 1e3)), ("lorenz", "Tsit5", (0.0, 2.0)))
CODEGEN_SCRIPT = f"CODEGEN_CASES = {CODEGEN_CASES!r}" + """
import json, os
import jax, numpy as np, simkit
from simkit import models
out = {"flag": "xla_cpu_use_fusion_emitters=false" in os.environ.get("XLA_FLAGS", "")}
for name, solver, span in CODEGEN_CASES:  # compared with SciPy by the test, in its own process
    sol = simkit.solve(models.get(name), span, saveat=11, solver=getattr(simkit, solver)(), rtol=1e-8, atol=1e-12)
    out[name] = np.asarray(sol.ys).tolist()
if "SIMKIT_FAST_COMPILE" not in os.environ:  # the per-program choice
    # which options each program compiled with (besides XLA_FLAGS): a kernel solve of 3
    # states and one of 65 (stiff: BDF), a diffrax solve of 65 (not stiff)
    decay = simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=np.ones(65),
                            state_names=tuple(f"u{i}" for i in range(65)), name="decay")
    out["small"] = simkit.inspect(models.get("lorenz"), (0.0, 1.0), saveat=3).compiler_options
    out["stiff"] = simkit.inspect(decay.replace(stiff=True), (0.0, 1.0), saveat=3).compiler_options
    out["wide"] = simkit.inspect(decay, (0.0, 1.0), saveat=3).compiler_options
    # inside transformations the enclosing program's options apply: gradients, alone and
    # under jax.jit, and jit itself, agree
    lor = models.get("lorenz")
    def loss(rho):
        return simkit.solve(lor, (0.0, 1.0), params={"rho": rho}, saveat=3).ys[-1, 0]
    out["grad"] = [float(jax.grad(loss)(28.0)), float(jax.jit(jax.grad(loss))(28.0))]
    out["jit"] = float(jax.jit(loss)(28.0)) == float(loss(28.0))
    # with FMAs and LLVM's default level (the suite runs without either): an ensemble's
    # results do not depend on its chunks (chaotic Lorenz: a rounding difference would show)
    rhos = np.linspace(10.0, 50.0, 24)
    whole = simkit.ensemble(lor, (0.0, 3.0), params={"rho": rhos}, saveat=3)
    chunked = simkit.ensemble(lor, (0.0, 3.0), params={"rho": rhos}, saveat=3, chunk_size=8)
    # saving at the ends, on 8 lanes against 16 (XLA's code for 16 lanes rounded lanes 8-11
    # apart: simkit.ensemble runs such a chunk on 24)
    ends = [simkit.ensemble(lor, (0.0, 3.0), params={"rho": rhos}, saveat=2, chunk_size=c).ys for c in (8, 16)]
    out["chunks"] = bool(np.array_equal(whole.ys, chunked.ys)) and bool(np.array_equal(*ends))
print(json.dumps(out))
"""


@functools.lru_cache(maxsize=None)
def _codegen_reference(name, span):
    """SciPy's reference for a `CODEGEN_CASES` solve (Radau or DOP853 at rtol 1e-12), computed
    once for the three settings."""
    from simkit import reference

    return reference.solve_ivp(models.get(name), span, saveat=11, method="Radau" if name == "robertson" else "DOP853",
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("fast", ["0", "1", ""])
def test_cpu_code_generators_solve_alike(fast):
    """The suite compiles with SIMKIT_FAST_COMPILE=2 (conftest): every program with XLA:CPU's
    classic code generator, LLVM's level 0 and no FMAs. Unset, users get the per-program choice (kernel solves, and
    diffrax solves of at most 64 states, compile with it, larger diffrax solves with XLA's MLIR
    fusion emitters; simkit/_codegen.py); "0" gives XLA's default everywhere. A stiff and a
    non-stiff kernel solve under each, in a fresh process, against SciPy: within a few
    tolerances (errors in units of rtol|y| + atol).
    Unset: the options each program got; gradients and jit through the choice."""
    import json

    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "SIMKIT_FAST_COMPILE")}
    env.update(SIMKIT_COMPILATION_CACHE="0", SIMKIT_CPU_DEVICES="1")
    if fast:
        env["SIMKIT_FAST_COMPILE"] = fast
    out = subprocess.run([sys.executable, "-c", CODEGEN_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["flag"] is (fast == "1")
    errors = {}
    for name, _, span in CODEGEN_CASES:
        ref = _codegen_reference(name, span)
        errors[name] = float(np.max(np.abs(np.asarray(got[name]) - ref.ys) / (1e-8 * np.abs(ref.ys) + 1e-12)))
    assert errors["robertson"] < 10 and errors["lorenz"] < 25, errors  # 3.4 and 7.8 measured, every way
    if fast == "":  # per program only when unset ("1" sets the XLA flag for the whole process)
        assert got["small"] == got["stiff"] == {"xla_cpu_use_fusion_emitters": False}, got
        assert got["wide"] == {}, got
        assert got["grad"][0] == pytest.approx(got["grad"][1], rel=1e-12), got
        assert got["jit"], got
        assert got["chunks"], got


def test_the_suites_setting_sets_its_flags():
    """conftest's ``SIMKIT_FAST_COMPILE=2``: the classic generator, LLVM's level 0 and no
    FMAs, each an XLA flag (`simkit._config`); a suite run with another setting has none of
    the last two."""
    from simkit import _config

    level2 = os.environ.get("SIMKIT_FAST_COMPILE") == "2"
    flags = os.environ.get("XLA_FLAGS", "").split()
    assert (_config.FAST_COMPILE_LEVEL == 2) is level2
    if level2:
        assert _config.CODEGEN == "classic"
        for flag in ("--xla_cpu_use_fusion_emitters=false", "--xla_backend_optimization_level=0",
                     "--xla_cpu_max_isa=AVX"):
            assert flag in flags, flags
    else:
        assert "--xla_backend_optimization_level=0" not in flags, flags


def test_fit_programs_follow_the_engine_of_their_solves():
    """A fit's compiled programs take XLA:CPU's classic code generator where its solves would
    (simkit/_codegen.py): simkit's kernels at any size, diffrax up to 64 states. The choice of
    method is `solve`'s own (`simkit._prepare.choose_solver`)."""
    import diffrax

    from simkit.fitting.program import _runs_kernels

    def decay(n, stiff):
        return simkit.ODEModel(rhs=lambda t, y, p: -p["k"] * y, params={"k": 1.0}, y0=[1.0] * n,
                               state_names=tuple(f"u{i}" for i in range(n)), name="decay", stiff=stiff)

    assert _runs_kernels(decay(100, True), None)  # the BDF kernel
    assert _runs_kernels(decay(3, False), None)  # Tsit5
    assert _runs_kernels(decay(100, False), simkit.DOP853())  # the user's kernel
    assert not _runs_kernels(decay(100, False), None)  # diffrax's Tsit5 above 64 states
    assert not _runs_kernels(decay(100, True), diffrax.Kvaerno5())  # the user's diffrax solver


SMALL_LOOPS_SCRIPT = """
import json, os
import numpy as np, simkit
from simkit import _config, models, reference
out = {"bytes": _config.SMALL_LOOP_BYTES, "flags": os.environ.get("XLA_FLAGS", "")}
if os.environ.get("SOLVE"):
    m = models.get("lorenz")
    info = simkit.inspect(m, (0.0, 2.0), saveat=11, rtol=1e-8, atol=1e-8)
    out["kernel"] = [loop.kernel for loop in info.loops]
    out["text"] = info.summary()
    sol = simkit.solve(m, (0.0, 2.0), saveat=11, rtol=1e-8, atol=1e-8)
    ref = reference.solve_ivp(m, (0.0, 2.0), saveat=11, method="DOP853", rtol=1e-12, atol=1e-14)
    out["err"] = float(np.max(np.abs(np.asarray(sol.ys) - ref.ys) / (1e-8 * np.abs(ref.ys) + 1e-8)))
print(json.dumps(out))
"""


@pytest.mark.parametrize("setting, flags, solve", [
    ("", "", True),  # simkit's default: a small solve is one kernel in its own program; XLA_FLAGS untouched
    ("0", "", True),  # XLA's default (1 KiB): the loop's operations run as separate thunks
    ("131072", "", False),  # opted in: XLA's threshold for the whole process
    ("", "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=5", False),  # the user's
    # simkit's own, inherited from a parent process that imported simkit: in effect, as set
    ("", "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=131072", False),
    ("", "--xla_backend_extra_options=xla_cpu_enable_fast_math=false", False),  # other options: XLA's 1 KiB
])
def test_small_loop_threshold(setting, flags, solve):
    """SIMKIT_SMALL_LOOPS (simkit/_config.py) in a fresh process: the flag in XLA_FLAGS (added
    only when opted in), what `simkit.inspect` reports of the solve's one kernel, and a solve
    against SciPy's DOP853 either way (errors in units of rtol|y| + atol; 4.8 measured)."""
    import json

    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "SIMKIT_SMALL_LOOPS")}
    env.update(SIMKIT_COMPILATION_CACHE="0", SIMKIT_CPU_DEVICES="1", XLA_FLAGS=flags)
    if setting:
        env["SIMKIT_SMALL_LOOPS"] = setting
    if solve:
        env["SOLVE"] = "1"
    out = subprocess.run([sys.executable, "-c", SMALL_LOOPS_SCRIPT], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if flags:  # backend options already set are left alone, and a threshold among them is the one in effect
        threshold = flags.partition("byte_threshold=")[2]
        assert got["bytes"] == (int(threshold) if threshold else 131072), got
        assert got["flags"].count("xla_backend_extra_options") == 1 and got["flags"].startswith(flags), got
        return
    assert ("xla_cpu_small_while_loop_byte_threshold=131072" in got["flags"]) is (setting == "131072"), got
    if not solve:
        assert got["bytes"] == 131072, got
        return
    default = setting == ""
    assert got["bytes"] == (131072 if default else None), got
    assert any(got["kernel"]) is default, got
    assert ("one kernel" in got["text"]) is default, got
    assert got["err"] < 25, got


DISPATCH_SCRIPT = """
import json, sys
import jax
if sys.argv[1] == "jax first":
    jax.numpy.ones(1).block_until_ready()  # JAX running before simkit is imported
import simkit
print(json.dumps(dict(async_=jax.config.read("jax_cpu_enable_async_dispatch"),
                      simkit_set=simkit._config.CPU_SYNC_DISPATCH)))
"""


@pytest.mark.parametrize("setting, order, sync", [
    (None, "simkit first", False),  # the default: JAX's asynchronous dispatch
    ("1", "simkit first", False),
    ("0", "simkit first", True),  # opted in: programs run on the calling thread
    ("0", "jax first", False),  # JAX already running: left as it is (it would not apply)
])
def test_cpu_dispatch_setting(setting, order, sync):
    """SIMKIT_CPU_ASYNC_DISPATCH (simkit/_config.py) in a fresh process."""
    import json

    env = {k: v for k, v in os.environ.items() if k != "SIMKIT_CPU_ASYNC_DISPATCH"}
    env.update(SIMKIT_COMPILATION_CACHE="0", SIMKIT_CPU_DEVICES="1")
    if setting is not None:
        env["SIMKIT_CPU_ASYNC_DISPATCH"] = setting
    out = subprocess.run([sys.executable, "-c", DISPATCH_SCRIPT, order], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == dict(async_=not sync, simkit_set=sync)


@pytest.mark.parametrize("name, value, message", [
    ("SIMKIT_CPU_ASYNC_DISPATCH", "sync", "SIMKIT_CPU_ASYNC_DISPATCH='sync': use 1 (or true, yes, on) or 0"),
    ("SIMKIT_SMALL_LOOPS", "32k", "SIMKIT_SMALL_LOOPS='32k': use a whole number of bytes (0: XLA's default)"),
    # a typo must not mean "off": SIMKIT_ENABLE_X64 off is float32
    ("SIMKIT_ENABLE_X64", "ture", "SIMKIT_ENABLE_X64='ture': use 1 (or true, yes, on) or 0 (or false, no, off)"),
    ("SIMKIT_FAST_COMPILE", "fast", "SIMKIT_FAST_COMPILE='fast': use 0, 1 or 2"),
    ("SIMKIT_CPU_DEVICES", "0", "SIMKIT_CPU_DEVICES='0': use a whole number of CPU devices, at least 1"),
])
def test_a_setting_simkit_cannot_read_stops_the_import(name, value, message):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # conftest's flags would hide some
    env[name] = value
    out = subprocess.run([sys.executable, "-c", "import simkit"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode != 0
    assert message in out.stderr, out.stderr[-2000:]


def test_settings_read_as_on_or_off(monkeypatch):
    from simkit import _config

    for value, expected in [("1", True), ("Yes", True), (" on ", True), ("0", False), ("false", False),
                            ("OFF", False), ("", True)]:
        monkeypatch.setenv("SIMKIT_TEST_FLAG", value)
        assert _config._flag("SIMKIT_TEST_FLAG", "1") is expected, value
    monkeypatch.delenv("SIMKIT_TEST_FLAG")
    assert _config._flag("SIMKIT_TEST_FLAG", "0") is False


def test_memory_budget_setting_is_checked(monkeypatch):
    from simkit._prepare import memory_budget

    monkeypatch.setenv("SIMKIT_MEMORY_BUDGET", "1e9")
    assert memory_budget() == 10**9
    for bad in ("2GB", "-1", "0", "nan", "inf"):
        monkeypatch.setenv("SIMKIT_MEMORY_BUDGET", bad)
        with pytest.raises(simkit.InputError, match=r"SIMKIT_MEMORY_BUDGET=.*: use a positive number of bytes"):
            memory_budget()
