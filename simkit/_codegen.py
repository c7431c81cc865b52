"""Which XLA:CPU code generator compiles each of simkit's programs.

XLA:CPU has two: its MLIR fusion emitters (the default) and the classic fusion code
generator (``xla_cpu_use_fusion_emitters=False``). Measured with jax 0.10.2 on 2 cores
(benchmarks/code_generators.py, benchmarks/measurements.md):

* simkit's kernels (one adaptive loop of many small operations per solve): the classic
  generator compiles in 0.4-0.8x the time and runs as fast or faster, from 3 states
  (Lorenz, Robertson) to 66,248 (a 2-D Brusselator by BDF);
* diffrax and the fits: the same for small models; diffrax's explicit solve of a
  4,096-state heat equation ran 1.5x slower in one of two measurements (0.92x in the other);
* loops vectorised over many values (a 10,000-member ensemble, a 2048^2 stencil step) run
  5-25 % slower with it.

So each program chooses: `codegen_jit` is ``jax.jit`` compiled with the classic generator
(per program: ``compiler_options``, not the process-wide ``XLA_FLAGS``) for every top-level
kernel solve, for diffrax solves of at most `SMALL_STATE_LIMIT` states and for fits whose
solves are either, for the bounded optimisers (`simkit.fitting.minimize_bounded`,
`least_squares_bounded`: a 10-start PEtab fit took 23 CPU seconds against 37, compilation
included), and with XLA's default otherwise; the ensemble and stencil programs keep
plain ``jax.jit``. JAX takes compiler options on top-level programs only: under the user's
``jax.jit``, ``jax.grad`` or ``jax.vmap`` a solve is traced into the enclosing program, whose
options apply.
``SIMKIT_FAST_COMPILE=1`` compiles every program, the user's own included, with the classic
generator (`simkit._config`); ``SIMKIT_FAST_COMPILE=0`` none.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
import os
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _config

SMALL_STATE_LIMIT = 64  # the kernels' small-system range (`simkit.solve`'s engine choice)
CLASSIC = {"xla_cpu_use_fusion_emitters": False}


@functools.cache
def classic_options() -> dict[str, Any] | None:
    """The compiler options that select the classic generator: `CLASSIC` on a CPU backend
    that takes it; None where XLA's defaults apply (another backend, ``SIMKIT_FAST_COMPILE``
    set either way or the option in ``XLA_FLAGS``, or a jaxlib without it: probed once with
    a one-operation program)."""
    if (_config.CODEGEN != "auto" or "xla_cpu_use_fusion_emitters" in os.environ.get("XLA_FLAGS", "")
            or jax.default_backend() != "cpu"):
        return None  # the user's or the process's choice, or not XLA:CPU
    try:
        jax.jit(lambda x: x + 1, compiler_options=CLASSIC).lower(1.0).compile()
    except Exception:  # noqa: BLE001 - an XLA without the option: its default code generator
        return None
    return dict(CLASSIC)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused within, where it was running (and running
    again after). Tracing a program allocates millions of objects that live on, and each
    collection walks them all: in the first fit of one start of Rahman_MBS2016 (one core)
    they took 0.3-0.4 s of the 2.1-2.5 s of tracing. Reference counting still frees what it
    can; what only a collection frees waits for the next one after the call."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _top_level(args: tuple, kwargs: dict) -> bool:
    """Whether a call with these arguments runs as a top-level program: no argument is a
    tracer (``jax.grad``, ``jax.vmap``) and no ``jax.jit`` (or ``eval_shape``) is tracing
    (JAX's own test, `jax.extend.core`; False where this JAX lacks it)."""
    from jax.extend import core

    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves((args, kwargs))):
        return False
    test = getattr(core, "unsafe_am_i_under_a_jit_DO_NOT_USE", None)
    return test is not None and not test()


# Set while a program for a call under the user's jax.jvp, jax.grad or jax.vmap is traced
# (`CodegenJit.transformed`): `in_one_kernel_if_fits` then keeps the plain call. Such a call
# never runs the one-kernel primal (the rules of `in_one_kernel_if_fits` take the plain call),
# and JAX could not transform the kernel's custom_vmap inside its custom_jvp when the vmap is
# the inner transform (jax.jvp or jax.grad of jax.vmap of a solve: an IndexError in JAX's
# batching of the program).
_TRANSFORMED = contextvars.ContextVar("simkit_transformed_call", default=False)


def _transformed(args: tuple, kwargs: dict) -> bool:
    """Whether an argument is a tracer of a transformation other than ``jax.jit``'s staging
    (``jax.jvp``, ``jax.grad``'s linearization, ``jax.vmap``)."""
    from jax._src.interpreters import partial_eval as pe  # no public name for jit's tracer

    staging = getattr(pe, "DynamicJaxprTracer", ())
    return any(isinstance(leaf, jax.core.Tracer) and not isinstance(leaf, staging)
               for leaf in jax.tree_util.tree_leaves((args, kwargs)))


class CodegenJit:
    """``jax.jit(fun, **jit_kwargs)`` twice: ``.classic`` (compiled with `classic_options`,
    made on first use) and ``.default`` (XLA's defaults); a call runs ``.classic`` when it is
    top-level and, with ``suits`` given, ``suits(*args, **kwargs)`` is true."""

    def __init__(self, fun: Callable, suits: Callable[..., bool] | None, **jit_kwargs: Any) -> None:
        functools.update_wrapper(self, fun)
        self._fun, self._suits, self._jit_kwargs = fun, suits, jit_kwargs
        self.default = jax.jit(fun, **jit_kwargs)

    @functools.cached_property
    def classic(self) -> Any:
        options = classic_options()
        return self.default if options is None else jax.jit(self._fun, compiler_options=options, **self._jit_kwargs)

    @functools.cached_property
    def transformed(self) -> Any:
        """``jax.jit(fun)`` for calls under the user's jvp, grad or vmap: its own trace cache,
        traced without the one-kernel primal (`_TRANSFORMED`)."""
        fun = self._fun

        @functools.wraps(fun)
        def traced_as_transformed(*args: Any, **kwargs: Any) -> Any:
            token = _TRANSFORMED.set(True)
            try:
                return fun(*args, **kwargs)
            finally:
                _TRANSFORMED.reset(token)

        return jax.jit(traced_as_transformed, **self._jit_kwargs)

    def pick(self, *args: Any, **kwargs: Any) -> Any:
        """The jitted function that a call with these arguments runs."""
        if _transformed(args, kwargs):
            return self.transformed
        suits = self._suits is None or self._suits(*args, **kwargs)
        return self.classic if suits and _top_level(args, kwargs) else self.default

    def compiler_options(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The compiler options (beyond ``XLA_FLAGS``) a call with these arguments compiles with."""
        return dict(classic_options() or {}) if self.pick(*args, **kwargs) is self.classic else {}

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        return self.pick(*args, **kwargs).lower(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with gc_paused():
            return self.pick(*args, **kwargs)(*args, **kwargs)


def codegen_jit(suits: Callable[..., bool] | None = None, **jit_kwargs: Any) -> Callable[[Callable], CodegenJit]:
    """Decorator: `CodegenJit` of the function. ``suits`` says from a call's arguments (static
    ones and shapes only: it may see tracers) whether the classic generator suits its program;
    None: every top-level call (the kernels)."""
    return lambda fun: CodegenJit(fun, suits, **jit_kwargs)


# -- one kernel for a whole loop ---------------------------------------------------------------

# Primitives that XLA:CPU's single-kernel emitter (``ComputationKernelEmitter``, behind the
# ``xla_cpu_small_call`` frontend attribute) compiles: elementwise arithmetic, comparisons,
# selects, shape changes, gathers, dynamic slices and updates, reductions and control flow.
# Not: scatters ("Unhandled opcode ... scatter", though XLA rewrites some into dynamic updates
# first), sorts, FFTs, dots and convolutions (Eigen), custom calls (LAPACK, callbacks) or
# collectives, which XLA's own small-loop pass keeps out of such kernels too. An unknown
# primitive counts as not. ``platform_index`` (`jax.lax.platform_dependent`, the explicit
# controller's float64 bit tricks) is a constant once lowered for one platform: without it
# no explicit solve in float64 fitted (Lorenz with Tsit5 and 1,000 saves ran 6.9 ms, as one
# kernel 1.3 ms, the same bits).
_ONE_KERNEL_PRIMITIVES = frozenset("""
    abs acos acosh add add_any and argmax argmin asin asinh atan atan2 atanh bitcast_convert_type
    broadcast_in_dim cbrt ceil clamp closed_call complex concatenate cond conj convert_element_type
    copy copy_p cos cosh cumlogsumexp cummax cummin cumprod cumsum custom_jvp_call
    custom_vjp_call custom_vjp_call_jaxpr digamma div dynamic_slice dynamic_update_slice eq erf erf_inv erfc
    exp exp2
    expand_dims expm1 floor gather ge gt imag integer_pow iota is_finite jit le lgamma log log1p
    logistic lt max min mul ne neg nextafter not optimization_barrier or pad pjit platform_index pow real
    reduce_and reduce_max reduce_min reduce_or reduce_precision reduce_prod reduce_sum rem
    remat remat2 reshape rev round rsqrt scan select_n shift_left shift_right_arithmetic
    shift_right_logical sign sin sinh slice split sqrt square squeeze stack stop_gradient sub tan tanh
    transpose while xor
""".split())


def _cpu_branch(eqn: Any) -> list | None:
    """The branch a CPU program keeps of a ``cond`` that `jax.lax.platform_dependent` made (its
    ``branches_platforms``: the one naming "cpu", else the default); None for another ``cond``."""
    platforms = eqn.params.get("branches_platforms") if eqn.primitive.name == "cond" else None
    if not platforms:
        return None
    for names, branch in zip(platforms, eqn.params["branches"]):
        if names is not None and "cpu" in names:
            return [branch]
    return [branch for names, branch in zip(platforms, eqn.params["branches"]) if names is None]


def fits_one_kernel(jaxpr: Any) -> bool:
    """Whether every primitive of ``jaxpr`` (a ``Jaxpr`` or ``ClosedJaxpr``, its sub-jaxprs
    included) is one that `one_kernel` may compile (`_ONE_KERNEL_PRIMITIVES`). Of a
    `jax.lax.platform_dependent` choice only the branch compiled for a CPU counts: the others
    (a TPU's, say) are not in the CPU program."""
    from jax.extend import core as jax_core

    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        if eqn.primitive.name not in _ONE_KERNEL_PRIMITIVES:
            return False
        subs = _cpu_branch(eqn)
        for sub in jax_core.jaxprs_in_params(eqn.params) if subs is None else subs:
            if not fits_one_kernel(sub):
                return False
    return True


def one_kernel(fun: Callable, *args: Any) -> Any:
    """``fun(*args)``, compiled by XLA:CPU as one kernel: a call that XLA keeps (not
    inlined) and compiles with its single-kernel emitter, the way its small-loop pass
    compiles a loop below ``xla_cpu_small_while_loop_byte_threshold`` (`_config`), for this
    call only, whatever that threshold is. A loop of many small operations over a few KiB then runs without XLA's
    per-operation dispatch (the thunks); larger data is better served by XLA's threaded
    code. The caller checks the operations with `fits_one_kernel`; same values, to the
    last bit, as the plain call on the programs measured (`simkit.engines.kernel_queue`).
    Elsewhere than XLA:CPU: the plain call."""
    if jax.default_backend() != "cpu":
        return fun(*args)
    from jax.experimental.xla_metadata import set_xla_metadata

    out = jax.jit(fun, inline=False)(*args)
    return set_xla_metadata(out, xla_cpu_small_call="true", inlineable="false")


def _nbytes(avals: Any) -> int:
    return sum(int(a.size) * a.dtype.itemsize for a in jax.tree_util.tree_leaves(avals))


def in_one_kernel_if_fits(fun: Callable, args: Any, *, trace_context: Callable | None = None) -> Any:
    """``fun(args)``, compiled by XLA:CPU as one kernel (`one_kernel`) where it can be: on
    XLA:CPU, when every operation of ``fun`` fits such a kernel (`fits_one_kernel`) and its
    inputs and outputs together take at most `_config.SMALL_LOOP_BYTES` (128 KiB unless
    configured; None: never). Otherwise the plain call. A choice of this program alone: it
    needs no process-wide setting (`simkit.configure`).

    A whole small solve as one kernel: its setup (the first step's estimate, the loop's first
    state) ran as some fifty thunks before and after the stepping loop, which XLA:CPU runs as a
    concurrent task graph (their buffers are above 512 bytes) handed to its worker threads; as
    one kernel the program runs as one piece of code. ``fun`` is traced once, here (under
    ``trace_context()`` when given, e.g. `simkit.kernels.linalg.lu_columns_by_select`, which
    suits one kernel; traced again without it when the program does not fit).

    The kernel serves the unbatched primal only: under ``jax.vmap`` the batched program (a
    batched scatter is not an operation such a kernel takes) and under ``jax.jvp``/``jax.grad``
    the derivative are those of the plain call, with the same inputs' symbolic zeros."""
    from jax.custom_batching import custom_vmap
    from jax.extend import core as jax_core

    if jax.default_backend() != "cpu" or _TRANSFORMED.get() or _config.SMALL_LOOP_BYTES is None:
        return fun(args)  # never one kernel: traced once, as it is
    flat, in_tree = jax.tree_util.tree_flatten(args)

    def trace(context: Callable | None) -> tuple:
        def flat_fun(*leaves: Any) -> Any:
            return fun(jax.tree_util.tree_unflatten(in_tree, leaves))

        if context is None:
            return jax.make_jaxpr(flat_fun, return_shape=True)(*flat)
        with context():
            return jax.make_jaxpr(flat_fun, return_shape=True)(*flat)

    closed, out_shape = trace(trace_context)
    fits = (_nbytes(out_shape) + _nbytes([jax.typeof(x) for x in flat]) <= _config.SMALL_LOOP_BYTES
            and fits_one_kernel(closed))
    if not fits and trace_context is not None:
        closed, out_shape = trace(None)
    out_tree = jax.tree_util.tree_structure(out_shape)

    def plain(*leaves: Any) -> Any:
        return jax.tree_util.tree_unflatten(out_tree, jax_core.jaxpr_as_fun(closed)(*leaves))

    if not fits:
        return plain(*flat)

    # empty inputs and outputs (a solve's event records without events) stay outside the
    # call: zeros of their shapes inside it
    out_avals = jax.tree_util.tree_leaves(out_shape)
    empty_in = [0 in jax.typeof(x).shape for x in flat]
    empty_out = [0 in a.shape for a in out_avals]

    def kernel(*leaves: Any) -> Any:
        inner = [x for x, e in zip(leaves, empty_in) if not e]
        # the inputs enter the call packed, one new array per dtype (with one spare entry, so
        # that no concatenation is a plain copy XLA removes): XLA:CPU (jaxlib 0.10) aborted
        # the process compiling a call whose operand was the program's own input or constant
        # and also its output (a parameter of a solve under the user's jax.jit, returned in the
        # Solution), or was never read (a model parameter that the rhs ignores): "All or none
        # of the slices should have an explicit index" (tests/kernels/test_one_kernel_solve.py)
        groups: dict[Any, list[int]] = {}
        for i, x in enumerate(inner):
            groups.setdefault(jnp.result_type(x), []).append(i)
        packed = [jnp.concatenate([jnp.ravel(inner[i]) for i in idx] + [jnp.zeros(1, dtype)])
                  for dtype, idx in groups.items()]

        def nonempty(*arrays: Any) -> list:
            given: list[Any] = [None] * len(inner)
            for array, idx in zip(arrays, groups.values()):
                start = 0
                for i in idx:
                    size = int(np.prod(jnp.shape(inner[i])))
                    given[i] = array[start:start + size].reshape(jnp.shape(inner[i]))
                    start += size
            it = iter(given)
            full = [jnp.zeros(jax.typeof(x).shape, jax.typeof(x).dtype) if e else next(it)
                    for x, e in zip(leaves, empty_in)]
            return [v for v, e in zip(jax.tree_util.tree_leaves(plain(*full)), empty_out) if not e]

        got = iter(one_kernel(nonempty, *packed))
        outs = [jnp.zeros(a.shape, a.dtype) if e else next(got) for a, e in zip(out_avals, empty_out)]
        return jax.tree_util.tree_unflatten(out_tree, outs)

    batched = custom_vmap(kernel)

    @batched.def_vmap
    def _vmap_rule(axis_size: int, in_batched: list, *leaves: Any) -> tuple:
        axes = [0 if b else None for b in in_batched]
        out = jax.vmap(plain, in_axes=axes, axis_size=axis_size)(*leaves)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    whole = jax.custom_jvp(batched)

    def _jvp_rule(primals: tuple, tangents: tuple) -> tuple:
        # only the inputs the caller differentiates: the others stay constants of the plain
        # call, so the derivative rules inside it (the kernels' forward sensitivities) see
        # them as symbolic zeros and push no direction for them
        from .kernels.loop import jvp_along_moving

        return jvp_along_moving(plain, list(primals), list(tangents))

    whole.defjvp(_jvp_rule, symbolic_zeros=True)
    return whole(*flat)

