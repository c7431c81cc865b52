"""Which XLA:CPU code generator compiles each of simkit's programs.

XLA:CPU has two: its MLIR fusion emitters (the default) and the classic fusion code
generator (``xla_cpu_use_fusion_emitters=False``). Measured with jax 0.10.2 on 2 cores
(benchmarks/code_generators.py, benchmarks/README.md): the classic one compiles in about
half the time and runs a program whose loop works on a few numbers at a time as fast or
faster (a kernel solve of Robertson or Lorenz, its gradient, a fit of a small model), but
loops vectorised over many values (a 10,000-member ensemble, a 2048^2 stencil step) run
5-25 % slower with it.

So each program chooses, by the number of states it solves for: `sized_jit` is
``jax.jit`` compiled with the classic generator (per program: ``compiler_options``, not
the process-wide ``XLA_FLAGS``) when a call's model has at most `SMALL_STATE_LIMIT`
states, and with XLA's default otherwise. The ensemble and stencil programs keep
``jax.jit`` with XLA's default. ``SIMKIT_FAST_COMPILE=1`` compiles every program, the
user's own included, with the classic generator (`simkit._config`); ``SIMKIT_FAST_COMPILE=0``
none. Under an outer ``jax.jit`` the outer program's options apply (the inner one is
inlined into it).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import jax

from . import _config

SMALL_STATE_LIMIT = 64  # the kernels' small-system range (`simkit.solve`'s engine choice)
CLASSIC = {"xla_cpu_use_fusion_emitters": False}


@functools.cache
def small_program_options() -> dict[str, Any] | None:
    """The compiler options of a small program: `CLASSIC` on a CPU backend that takes it;
    None where XLA's defaults apply (another backend, ``SIMKIT_FAST_COMPILE`` set either
    way or the option in ``XLA_FLAGS``, or a jaxlib without it: probed once with a one-operation program)."""
    if (_config.CODEGEN != "auto" or "xla_cpu_use_fusion_emitters" in os.environ.get("XLA_FLAGS", "")
            or jax.default_backend() != "cpu"):
        return None  # the user's or the process's choice, or not XLA:CPU
    try:
        jax.jit(lambda x: x + 1, compiler_options=CLASSIC).lower(1.0).compile()
    except Exception:  # noqa: BLE001 - an XLA without the option: its default code generator
        return None
    return dict(CLASSIC)


def _concrete_top_level(args: tuple, kwargs: dict) -> bool:
    """Whether a call with these arguments runs as a top-level program: no argument is a
    tracer (``jax.grad``, ``jax.vmap``) and no ``jax.jit`` (or ``eval_shape``) is tracing
    (JAX's own test, `jax.extend.core`; False where this JAX lacks it). JAX takes compiler
    options on top-level programs only."""
    from jax.extend import core

    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves((args, kwargs))):
        return False
    test = getattr(core, "unsafe_am_i_under_a_jit_DO_NOT_USE", None)
    return test is not None and not test()


class SizedJit:
    """``jax.jit(fun, **jit_kwargs)``, compiled per call with `small_program_options` when
    ``states(*args, **kwargs) <= SMALL_STATE_LIMIT`` and with XLA's defaults otherwise (two
    jitted functions, each with its own compile cache; the small one made on first use)."""

    def __init__(self, fun: Callable, states: Callable[..., int], **jit_kwargs: Any) -> None:
        functools.update_wrapper(self, fun)
        self._fun, self._states, self._jit_kwargs = fun, states, jit_kwargs
        self.wide = jax.jit(fun, **jit_kwargs)

    @functools.cached_property
    def small(self) -> Any:
        options = small_program_options()
        return self.wide if options is None else jax.jit(self._fun, compiler_options=options, **self._jit_kwargs)

    def pick(self, *args: Any, **kwargs: Any) -> Any:
        """The jitted function that a call with these arguments runs: the small one for a
        top-level call (`_concrete_top_level`) of at most `SMALL_STATE_LIMIT` states; inside
        a transformation, the enclosing program's options apply."""
        if self._states(*args, **kwargs) <= SMALL_STATE_LIMIT and _concrete_top_level(args, kwargs):
            return self.small
        return self.wide

    def compiler_options(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The compiler options (beyond ``XLA_FLAGS``) a call with these arguments compiles with."""
        return dict(small_program_options() or {}) if self.pick(*args, **kwargs) is self.small else {}

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        return self.pick(*args, **kwargs).lower(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.pick(*args, **kwargs)(*args, **kwargs)


def sized_jit(states: Callable[..., int], **jit_kwargs: Any) -> Callable[[Callable], SizedJit]:
    """Decorator: `SizedJit` of the function; ``states`` gives a call's number of states
    from its arguments (shapes only: it runs on tracers too)."""
    return lambda fun: SizedJit(fun, states, **jit_kwargs)
