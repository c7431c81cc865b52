"""A multi-component field carried as its components apart, and a model's rhs evaluated so.

A model's rhs returns its components stacked (``jnp.stack([du, dv])``). XLA:CPU fuses that
stack into the update loop as a branch on the component at every point, which LLVM does not
vectorise: a Gray-Scott Euler step at 1024^2 took 7.0 ms where the same arithmetic written
per component, on components carried apart, took 3.2 (one-component heat: 1.1;
benchmarks/measurements.md). `split_rhs` gets the per-component form from the user's own rhs
without asking them to write it: it traces the rhs once to a jaxpr and evaluates it with the
component axis taken apart wherever an operation allows (elementwise arithmetic, slices and
pads of the grid axes, the stack itself, nested ``jit``s, a halo exchange's ``ppermute``),
and stacks the components back for any other operation (a reduction over components, a
gather, a custom rule): the same operations on the same numbers, so the result is that of
the stacked rhs, only not fused through a stack. `Components` is the field carried that way
through a stepper's arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.extend import core as jcore


@jax.tree_util.register_pytree_node_class
class Components:
    """A field of shape ``(n_components,) + grid.shape`` held as its components apart.

    Supports the arithmetic a stepper does on a field (``+``, ``-``, ``*`` and ``/`` by a
    scalar or another `Components`, negation), ``size``, ``dtype`` and ``shape``;
    `stacked` gives the array."""

    def __init__(self, parts: Sequence[Any]):
        self.parts = tuple(parts)

    def tree_flatten(self):
        return self.parts, None

    @classmethod
    def tree_unflatten(cls, _aux, parts):
        return cls(parts)

    @classmethod
    def of(cls, u: Any) -> Components:
        """The components of a stacked field ``u`` (its first axis)."""
        return cls(tuple(u[k] for k in range(u.shape[0])))

    def stacked(self) -> jax.Array:
        return jnp.stack(self.parts)

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts)

    @property
    def dtype(self):
        return self.parts[0].dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.parts),) + tuple(self.parts[0].shape)

    def _map(self, other: Any, fn: Callable) -> Components:
        if isinstance(other, Components):
            return Components(fn(a, b) for a, b in zip(self.parts, other.parts))
        if jnp.ndim(other) != 0:
            return NotImplemented
        return Components(fn(a, other) for a in self.parts)

    def __add__(self, other):
        return self._map(other, lambda a, b: a + b)

    def __radd__(self, other):
        return self._map(other, lambda a, b: b + a)

    def __sub__(self, other):
        return self._map(other, lambda a, b: a - b)

    def __rsub__(self, other):
        return self._map(other, lambda a, b: b - a)

    def __mul__(self, other):
        return self._map(other, lambda a, b: a * b)

    def __rmul__(self, other):
        return self._map(other, lambda a, b: b * a)

    def __truediv__(self, other):
        return self._map(other, lambda a, b: a / b)

    def __neg__(self):
        return Components(-a for a in self.parts)


class _Apart:
    """A value of the traced rhs whose first axis is held apart: ``jnp.stack(parts)``."""

    __slots__ = ("parts",)

    def __init__(self, parts: Sequence[Any]):
        self.parts = list(parts)


# operations applied to each component alone when an operand is held apart (every operand
# has the result's shape, or is a scalar)
_ELEMENTWISE = frozenset("""
abs acos acosh add and asin asinh atan atan2 atanh cbrt ceil clamp conj convert_element_type
copy copy_p cos cosh div eq erf erf_inv erfc exp exp2 expm1 floor ge gt imag integer_pow
is_finite le log log1p logistic lt max min mul ne neg nextafter not or pow real
reduce_precision rem round rsqrt select_n sign sin sinh sqrt square sub tan tanh xor
""".split())


# operations that move values without mixing them (a halo exchange between devices,
# `simkit.parallel`): applied to each part
_PER_PART = frozenset({"ppermute"})


def _rows(x: Any) -> list:
    """The entries of ``x`` along its first axis (held apart, or indexed)."""
    return x.parts if isinstance(x, _Apart) else [x[k] for k in range(x.shape[0])]


MAX_COMPONENTS = 16  # a stack of more rows than this is left stacked


def _fields(eqn) -> bool:
    """Whether ``eqn``'s output looks like a stack of components: a few rows of at least one
    dimension each (not, say, a long vector built by concatenating numbers)."""
    shape = eqn.outvars[0].aval.shape
    return len(shape) >= 2 and shape[0] <= MAX_COMPONENTS


def _stacked(x: Any) -> Any:
    return jnp.stack(x.parts) if isinstance(x, _Apart) else x


def _bind(eqn, ins: list) -> list:
    with eqn.ctx.manager:
        out = eqn.primitive.bind(*ins, **eqn.primitive.get_bind_params(eqn.params))
    return list(out) if eqn.primitive.multiple_results else [out]


def _apart_rule(eqn, ins: list) -> list | None:
    """The outputs of ``eqn`` with the first axis kept apart, or None (stack and bind)."""
    name, params = eqn.primitive.name, eqn.params
    apart = [x for x in ins if isinstance(x, _Apart)]
    if name in ("pjit", "jit", "closed_call", "core_call"):
        inner = params.get("jaxpr") or params.get("call_jaxpr")
        closed = inner if hasattr(inner, "consts") else jcore.ClosedJaxpr(inner, ())
        return _evaluate(closed.jaxpr, closed.consts, ins)
    if name == "stack" and params.get("axis") == 0 and not apart:
        return [_Apart(ins)] if _fields(eqn) else None
    if name == "broadcast_in_dim" and not apart:  # expand_dims: a new first axis of 1
        x, shape = ins[0], params["shape"]
        if len(ins) == 1 and len(shape) == jnp.ndim(x) + 1 and shape[0] == 1 and _fields(eqn) \
                and tuple(params["broadcast_dimensions"]) == tuple(range(1, len(shape))):
            return [_Apart([x])]
        return None
    if name == "concatenate" and params["dimension"] == 0:
        if not _fields(eqn):
            return None
        return [_Apart([row for x in ins for row in _rows(x)])]
    if not apart:
        return None
    n = len(apart[0].parts)
    if any(len(x.parts) != n for x in apart):
        return None
    if name in _ELEMENTWISE:
        shape = eqn.outvars[0].aval.shape
        if n != shape[0]:  # parts broadcast along the first axis: stacked
            return None
        columns = []
        for x in ins:
            if isinstance(x, _Apart) or jnp.ndim(x) == 0:
                columns.append(x.parts if isinstance(x, _Apart) else [x] * n)
            elif jnp.shape(x)[0] in (1, n):  # a first axis of 1 broadcasts (lax keeps size-1 broadcasts):
                columns.append(_rows(x) * (n // jnp.shape(x)[0]))  # its one row for every part
            else:
                return None
        return [_Apart([_bind(eqn, list(ops))[0] for ops in zip(*columns, strict=True)])]
    x = ins[0]
    if name == "slice" and isinstance(x, _Apart):
        start, limit, strides = params["start_indices"], params["limit_indices"], params["strides"]
        step = 1 if strides is None else strides[0]
        rest = None if strides is None else strides[1:]
        return [_Apart([lax.slice(p, start[1:], limit[1:], rest) for p in x.parts[start[0]:limit[0]:step]])]
    if name == "squeeze" and isinstance(x, _Apart):
        dims = tuple(params["dimensions"])
        inner = tuple(d - 1 for d in dims if d != 0)
        parts = [lax.squeeze(p, inner) if inner else p for p in x.parts]
        if 0 in dims:
            return [parts[0]] if n == 1 else None
        return [_Apart(parts)]
    if name == "pad" and isinstance(x, _Apart) and tuple(params["padding_config"][0]) == (0, 0, 0):
        return [_Apart([lax.pad(p, ins[1], params["padding_config"][1:]) for p in x.parts])]
    if name == "broadcast_in_dim" and isinstance(x, _Apart) and len(ins) == 1:
        shape, dims = params["shape"], tuple(params["broadcast_dimensions"])
        if dims and dims[0] == 0 and shape[0] == n:
            return [_Apart([lax.broadcast_in_dim(p, shape[1:], tuple(d - 1 for d in dims[1:])) for p in x.parts])]
        return None
    if name == "reshape" and isinstance(x, _Apart) and n == 1 and tuple(params["new_sizes"]) == tuple(x.parts[0].shape):
        return [x.parts[0]]
    if name == "concatenate" and all(isinstance(v, _Apart) for v in ins):
        return [_Apart([lax.concatenate(list(ps), params["dimension"] - 1) for ps in zip(*(v.parts for v in ins))])]
    if name in _PER_PART and len(ins) == 1:
        return [_Apart([_bind(eqn, [p])[0] for p in x.parts])]
    if name == "optimization_barrier":  # each operand on its own: the parts as operands of their own
        flat = [p for v in ins for p in (v.parts if isinstance(v, _Apart) else [v])]
        out = iter(lax.optimization_barrier(flat))
        return [_Apart([next(out) for _ in v.parts]) if isinstance(v, _Apart) else next(out) for v in ins]
    return None


def _evaluate(jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list:
    env: dict = {}

    def read(v):
        return v.val if isinstance(v, jcore.Literal) else env[v]

    env.update(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        outs = _apart_rule(eqn, ins)
        if outs is None:
            outs = _bind(eqn, [_stacked(x) for x in ins])
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


def split_rhs(rhs: Callable) -> Callable:
    """``rhs(t, u)`` (``u`` a stacked field) as a function of `Components` returning
    `Components`, evaluated with the components apart (see the module's docstring). Make one
    per program: its jaxpr's constants are the values ``rhs`` closes over (traced
    parameters), valid within the program being traced."""

    traced: dict = {}  # the rhs's jaxpr by argument types: traced once per program

    def apart(t: Any, u: Components) -> Components:
        key = (jax.typeof(t), u.shape, u.dtype)
        if key not in traced:
            traced[key] = jax.make_jaxpr(lambda t, v: rhs(t, v))(t, jax.ShapeDtypeStruct(u.shape, u.dtype))
        closed = traced[key]
        (out,) = _evaluate(closed.jaxpr, closed.consts, [t, _Apart(u.parts)])
        return Components(_rows(out))

    return apart
