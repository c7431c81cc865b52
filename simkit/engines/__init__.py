"""The two engines behind `simkit.solve`: simkit's fused kernels and diffrax.

Each is one cached ``jax.jit`` program taking a static program (`KernelProgram`,
`DiffraxProgram`) and the traced `SolveArgs`, returning the same named record,
`EngineResult`. Neither re-checks inputs: `simkit._prepare.prepare` did.
"""

import dataclasses
import functools
from typing import Any

import equinox as eqx
import jax.numpy as jnp

from .kernel_engine import run_kernel as run_kernel
from .programs import DiffraxProgram as DiffraxProgram
from .programs import KernelProgram as KernelProgram
from .record import EngineResult as EngineResult


def run(program, args) -> EngineResult:
    """Run the engine that `program` belongs to."""
    engine, call_args = entry(program, args)
    out = engine(*call_args)
    if call_args[0] is not program:  # the complex diffrax solve ran on (re, im): back to complex
        dense = None if out.interpolation is None else ComplexInterpolation(out.interpolation)
        return out._replace(ys=_to_complex(out.ys), y_final=_to_complex(out.y_final),
                            event_ys=_to_complex(out.event_ys), interpolation=dense)
    return out


class ComplexInterpolation(eqx.Module):
    """The dense output of a complex diffrax solve, which ran on (re, im): complex values
    again (``evaluate`` gave the stacked real and imaginary parts, twice the states)."""

    inner: Any

    @property
    def t0(self) -> Any:
        return self.inner.t0

    @property
    def t1(self) -> Any:
        return self.inner.t1

    def evaluate(self, t: Any) -> Any:
        return _to_complex(self.inner.evaluate(t))


def entry(program, args) -> tuple:
    """``(engine, call_args)``: the ``jax.jit`` function `run` calls for ``program`` and the
    arguments it calls it with (`simkit.inspect` lowers that same call)."""
    if isinstance(program, KernelProgram):
        return run_kernel, (program, args)
    from .diffrax_engine import run_diffrax  # diffrax is imported when first used

    if jnp.iscomplexobj(args.y0):  # diffrax's complex support is experimental: solve (re, im)
        # (an atol per state holds for both parts: a raw broadcasting error before, found by probing)
        atol = args.atol if jnp.ndim(args.atol) == 0 else jnp.concatenate([args.atol, args.atol], axis=-1)
        return run_diffrax, (_real_program(program), args._replace(y0=_to_real(args.y0), atol=atol))
    return run_diffrax, (program, args)


def _to_real(y):
    return jnp.concatenate([jnp.real(y), jnp.imag(y)], axis=-1)


def _to_complex(y):
    n = y.shape[-1] // 2
    return y[..., :n] + 1j * y[..., n:]


@functools.lru_cache(maxsize=64)
def _real_fn(fn, kind: str):
    """``fn`` of a complex state as a function of its stacked real and imaginary parts
    (cached: the same wrapper object for the same function keeps the compile cache warm)."""
    if kind == "rhs":
        return lambda t, y, p: _to_real(fn(t, _to_complex(y), p))
    return lambda t, y, p: fn(t, _to_complex(y), p)


def _real_program(program: DiffraxProgram) -> DiffraxProgram:
    events = tuple(dataclasses.replace(ev, fn=_real_fn(ev.fn, "event")) for ev in program.events)
    return dataclasses.replace(program, rhs=_real_fn(program.rhs, "rhs"), events=events)


def __getattr__(name: str):
    if name == "run_diffrax":  # imported on first use (it imports diffrax)
        from .diffrax_engine import run_diffrax

        return run_diffrax
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DiffraxProgram", "EngineResult", "KernelProgram", "entry", "run", "run_diffrax", "run_kernel"]
