"""lax primitives evaluated on NumPy arrays, for `simkit.kernels.structure`.

The structural analysis evaluates operations on constants (the values the rhs closes over)
and on element numbers (to learn where a moving operation takes each element from). JAX can
evaluate any primitive, but compiles each new shape first (about 25 ms); NumPy evaluates the
common ones (slices, pads, reshapes, concatenation, gathers of the indexing form, ...) at
once. Everything else goes to JAX.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np


def _pad(a: np.ndarray, value: Any, config) -> np.ndarray:
    for axis, (lo, hi, interior) in enumerate(config):
        if interior:
            n = a.shape[axis]
            shape = list(a.shape)
            shape[axis] = max(n + (n - 1) * interior, 0)
            spread = np.full(shape, value, a.dtype)
            index = [slice(None)] * a.ndim
            index[axis] = slice(None, None, interior + 1)
            spread[tuple(index)] = a
            a = spread
        width = [(0, 0)] * a.ndim  # the padding first, then what negative padding removes of it
        width[axis] = (max(lo, 0), max(hi, 0))
        a = np.pad(a, width, constant_values=value)
        index = [slice(None)] * a.ndim
        index[axis] = slice(max(-lo, 0), a.shape[axis] - max(-hi, 0))
        a = a[tuple(index)]
    return a


def _start(idx: list, shape: tuple, sizes: tuple) -> tuple:
    return tuple(int(np.clip(int(i), 0, d - s)) for i, d, s in zip(idx, shape, sizes))


def take(a: np.ndarray, indices: np.ndarray, dims: tuple, window_out: tuple, clip: bool) -> np.ndarray | None:
    """``a`` indexed along ``dims`` by the rows of ``indices`` (index vectors last), the other
    axes whole and placed at ``window_out`` of the result: the form ``jnp`` indexing gives
    ``gather`` (and a scatter's targets). Out of bounds: clipped, or element number 0
    (nothing) where dropped. None for any other form (JAX evaluates it)."""
    k = len(dims)
    if indices.ndim == 0 or indices.shape[-1] != k or list(dims) != sorted(dims):
        return None
    rest = [d for d in range(a.ndim) if d not in dims]
    batch = indices.shape[:-1]
    if len(window_out) != len(rest):
        return None
    idx = indices.reshape(-1, k).astype(np.int64)
    bounds = np.array([a.shape[d] for d in dims])
    inside = np.all((idx >= 0) & (idx < bounds), axis=1)
    idx = np.clip(idx, 0, bounds - 1)
    moved = np.moveaxis(a, dims, range(k))
    out = moved[tuple(idx.T)]  # (batch, rest...)
    if not clip:
        out = np.where(inside.reshape((-1,) + (1,) * len(rest)), out, 0)
    out = out.reshape(batch + tuple(a.shape[d] for d in rest))
    return np.moveaxis(out, range(len(batch), out.ndim), window_out)


def _gather(p: dict, a: np.ndarray, indices: np.ndarray) -> np.ndarray | None:
    dn = p["dimension_numbers"]
    mode = str(p["mode"])
    if dn.operand_batching_dims or tuple(dn.collapsed_slice_dims) != tuple(dn.start_index_map) or (
            "FILL" in mode and p.get("fill_value") is not None):
        return None
    whole = all(p["slice_sizes"][d] == (1 if d in dn.collapsed_slice_dims else a.shape[d]) for d in range(a.ndim))
    if not whole:
        return None
    return take(a, indices, tuple(dn.start_index_map), tuple(dn.offset_dims), clip="FILL" not in mode)


def _broadcast_in_dim(a: np.ndarray, shape: tuple, dims: tuple) -> np.ndarray:
    expanded = [1] * len(shape)
    for i, d in enumerate(dims):
        expanded[d] = a.shape[i]
    return np.broadcast_to(a.reshape(expanded), shape)


def _dynamic_update_slice(a, u, *idx):
    out = np.array(a)
    start = _start(idx, a.shape, u.shape)
    out[tuple(slice(s, s + d) for s, d in zip(start, u.shape))] = u
    return out


_NUMPY: dict[str, Callable] = {
    "slice": lambda p, a: a[tuple(slice(s, l, st) for s, l, st in
                                  zip(p["start_indices"], p["limit_indices"], p["strides"] or (1,) * a.ndim))],
    "reshape": lambda p, a: (a if p.get("dimensions") is None else a.transpose(p["dimensions"])).reshape(p["new_sizes"]),
    "broadcast_in_dim": lambda p, a: _broadcast_in_dim(a, tuple(p["shape"]), tuple(p["broadcast_dimensions"])),
    "transpose": lambda p, a: a.transpose(p["permutation"]),
    "squeeze": lambda p, a: np.squeeze(a, axis=tuple(p["dimensions"])),
    "rev": lambda p, a: np.flip(a, axis=tuple(p["dimensions"])) if p["dimensions"] else a,
    "concatenate": lambda p, *a: np.concatenate(a, axis=p["dimension"]),
    "stack": lambda p, *a: np.stack(a, axis=p["axis"]),
    "split": lambda p, a: np.split(a, np.cumsum(p["sizes"])[:-1], axis=p["axis"]),
    "pad": lambda p, a, v: _pad(a, v, p["padding_config"]),
    "dynamic_slice": lambda p, a, *i: a[tuple(slice(s, s + d) for s, d in
                                              zip(_start(i, a.shape, p["slice_sizes"]), p["slice_sizes"]))],
    "dynamic_update_slice": lambda p, a, u, *i: _dynamic_update_slice(a, u, *i),
    "gather": _gather,
    "tile": lambda p, a: np.tile(a, p["reps"]),
}
_NUMPY_VALUES: dict[str, Callable] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "neg": np.negative, "max": np.maximum,
    "min": np.minimum, "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "and": np.bitwise_and, "or": np.bitwise_or,
    "not": np.invert, "xor": np.bitwise_xor, "abs": np.abs, "sign": np.sign, "select_n": lambda c, *x: np.choose(c.astype(int), x),
}


def bind_primitive(eqn, args: list) -> Any:
    """``eqn``'s operation on ``args``, as ``jax.core.eval_jaxpr`` binds it (a call primitive
    takes its function from its params)."""
    return eqn.primitive.bind(*args, **eqn.primitive.get_bind_params(eqn.params))


def evaluate(eqn, args: list, out_avals, numbers: bool = False) -> list[np.ndarray]:
    """The operation on NumPy arrays: by NumPy where simkit knows it (no compilation), else
    by JAX (compiled once per shape). ``numbers``: the data are element numbers (integers
    kept as they are), else values (cast to the outputs' dtypes)."""
    name = eqn.primitive.name
    args = [np.asarray(a) for a in args]
    out = None
    if name in _NUMPY and (numbers or name != "gather"):  # (gather's fill of values: JAX's)
        out = _NUMPY[name](eqn.params, *args)
    elif name in _NUMPY_VALUES and not numbers:
        out = _NUMPY_VALUES[name](*args)
    if out is None:
        with jax.ensure_compile_time_eval():
            out = bind_primitive(eqn, [jnp.asarray(a) for a in args])
    outs = [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]
    if numbers:
        return outs
    return [np.asarray(o, dtype=a.dtype).reshape(tuple(a.shape)) for o, a in zip(outs, out_avals)]
