"""The Jacobian's sparsity pattern read from the program: abstract interpretation of a jaxpr.

`jacobian_structure` traces ``rhs(t, y, params)`` once to a jaxpr (``jax.make_jaxpr``, no
numbers needed) and follows, equation by equation, which entries of ``y`` each element of
every intermediate may depend on: a ``(size, n)`` sparse boolean matrix per array. The
result holds every ``(i, j)`` with ``d rhs_i / d y_j`` not identically zero, for every ``t``,
``y`` and ``params`` (a *global* pattern): both branches of a ``jnp.where``, every iteration
of a loop, whatever the parameters' values. It may hold more than that (it never holds less):

* elementwise operations (``+``, ``*``, ``sin``, ``where``, ...) join their operands' sets
  element by element; a product with a constant that is exactly zero there drops the other
  operand's set (a mask), and a ``where`` whose condition is a constant takes one branch;
* operations that only move elements (slices, ``jnp.roll``, ``concatenate``, ``pad``,
  ``reshape``, ``transpose``, ``gather`` and ``dynamic_slice`` with constant indices, ...)
  are evaluated once on element numbers to learn where each element comes from;
* ``scatter`` family with constant indices: each update's target, from the transpose of
  ``scatter_add`` applied to element numbers;
* reductions join along their axes, cumulative sums over the prefix, an FFT over its lines;
  ``dot_general`` joins over the contracted index, less the constant operand's zeros;
  a convolution with a constant kernel joins each output's window, less the kernel's zeros;
* ``jit`` functions and ``checkpoint`` are followed inside, a ``custom_jvp`` function
  through its JVP rule (its derivative), a ``custom_vjp`` one through its primal (forward
  mode, which simkit's solvers use, cannot run its rule);
* ``cond`` joins its branches (or takes the one a constant index names); a ``scan`` of up
  to 32 steps is followed step by step, ``lax.map`` as ``jax.vmap`` of its function, and
  other ``while`` and ``scan`` loops iterate their carry's sets to a fixed point;
* an operation whose derivative is zero (comparisons, ``floor``, ``sign``,
  ``stop_gradient``, integer results) depends on nothing;
* any other operation (``sort``, a linear solve, a callback, ...): every output element
  depends on everything its inputs depend on. Safe, and dense.

Constants of the program (arrays the rhs closes over, ``jnp.arange``, ...) are evaluated
so that their zeros and indices can be used; ``t`` and ``params`` are not (a pattern read
from one parameter value would not hold for the next). When a set grows past
``MAX_ENTRIES`` in all, the analysis gives up (`Unstructured`): the model is treated as
dense. Host code, run once per model at trace time; the pattern is static.

The same idea as SparseConnectivityTracer.jl (Hill & Dalle) and ``asdex`` (JAX); asdex
is not among simkit's dependencies and was not available here, and this analysis needs
only NumPy and SciPy's sparse matrices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from jax import lax
from jax.extend import core as jcore

from .lax_numpy import bind_primitive, evaluate, take

MAX_ENTRIES = 10_000_000  # (element, state) pairs held by one array's set: 80 MB; beyond, give up
MAX_CONSTANT = 4_000_000  # constants above this many elements are not evaluated (their values unknown)
MAX_FIXPOINT = 64  # iterations of a loop's carry before giving up
MAX_UNROLL = 32  # a scan of at most this many steps is followed step by step


class Unstructured(Exception):
    """The analysis gave up: the model's Jacobian is treated as dense."""


@dataclass
class _V:
    """What is known of one array: the states each element depends on (``deps``, a
    ``(size, n)`` CSR matrix, None for none), or its value (``value``), or neither."""

    shape: tuple
    deps: sp.csr_matrix | None = None
    value: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


_N: list[int] = [0]  # the number of states of the analysis under way (columns of every deps)
_IN_RULE: list[int] = [0]  # > 0 while a custom_jvp rule is followed (`_custom_jvp`)


def _csr(rows: np.ndarray, cols: np.ndarray, shape: tuple) -> sp.csr_matrix:
    out = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, cols)), shape=shape)
    out.sum_duplicates()
    out.data[:] = 1
    return out


def _checked(d: sp.csr_matrix) -> sp.csr_matrix:
    if d.nnz > MAX_ENTRIES:
        raise Unstructured(f"a dependency set of {d.nnz} entries")
    d.data[:] = 1
    return d


def _select(src: np.ndarray, n_rows_in: int) -> sp.csr_matrix:
    """``S`` with ``S[o, src[o]] = 1`` (rows with ``src[o] < 0`` empty): ``S @ deps`` moves rows."""
    src = np.asarray(src, np.int64).ravel()
    keep = src >= 0
    return _csr(np.nonzero(keep)[0], src[keep], (src.size, n_rows_in))


def _deps(v: _V) -> sp.csr_matrix:
    return v.deps if v.deps is not None else sp.csr_matrix((v.size, _N[0]), dtype=np.float32)


def _union(*ds: sp.csr_matrix | None) -> sp.csr_matrix | None:
    ds = [d for d in ds if d is not None]
    if not ds:
        return None
    out = ds[0]
    for d in ds[1:]:
        out = out + d
    return _checked(sp.csr_matrix(out))


def _broadcast_rows(shape: tuple, out_shape: tuple) -> np.ndarray:
    """For each element of ``out_shape``, the element of an operand of ``shape`` it reads
    under NumPy broadcasting (lax's elementwise operations broadcast only scalars)."""
    size = int(np.prod(shape, dtype=np.int64))
    return np.broadcast_to(np.arange(size).reshape(shape), out_shape).ravel()


def _unknown(avals) -> list[_V]:
    return [_V(tuple(a.shape)) for a in avals]


def _inexact(aval) -> bool:
    return jnp.issubdtype(aval.dtype, jnp.inexact)


# -- operations -------------------------------------------------------------------------------


ELEMENTWISE = frozenset("""
neg sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh exp exp2 log log1p expm1 sqrt rsqrt
cbrt logistic abs integer_pow pow add add_any sub mul div max min atan2 rem nextafter erf erfc
erf_inv lgamma digamma igamma igammac igamma_grad_a random_gamma_grad bessel_i0e bessel_i1e
polygamma zeta regularized_incomplete_beta square real imag conj complex copy copy_p
convert_element_type reduce_precision select_n clamp tan
""".split())
ZERO_DERIVATIVE = frozenset("stop_gradient floor ceil round sign is_finite".split())
MOVEMENT = frozenset("""
reshape broadcast_in_dim transpose squeeze slice dynamic_slice dynamic_update_slice pad concatenate
rev gather split expand_dims stack unstack tile
""".split())
REDUCTIONS = frozenset("reduce_sum reduce_max reduce_min reduce_prod reduce_and reduce_or argmax argmin".split())
CUMULATIVE = frozenset("cumsum cumprod cummax cummin cumlogsumexp".split())
SCATTERS = frozenset("scatter scatter-add scatter-sub scatter-mul scatter-min scatter-max scatter_add".split())
CALLS = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
         "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr", "custom_vjp_call_jaxpr": "fun_jaxpr",
         "remat2": "jaxpr", "checkpoint": "jaxpr"}


def _elementwise(eqn, ins: list[_V], out_avals) -> list[_V]:
    shape = tuple(out_avals[0].shape)
    name = eqn.primitive.name
    parts = []
    for k, v in enumerate(ins):
        if v.deps is None:
            continue
        rows = _broadcast_rows(v.shape, shape)
        if name == "select_n" and k > 0 and ins[0].value is not None:  # a constant condition picks
            rows = np.where(np.broadcast_to(ins[0].value, shape).ravel().astype(np.int64) == k - 1, rows, -1)
        if name == "select_n" and k == 0:
            continue  # the condition's derivative is zero
        others = [o for j, o in enumerate(ins) if j != k]
        if name == "mul" and others[0].value is not None:  # times a constant zero: no dependence
            rows = np.where(np.broadcast_to(others[0].value, shape).ravel() == 0, -1, rows)
        if name == "pow" and k == 0 and ins[1].value is not None:  # y ** 0 (mass action's absent species)
            rows = np.where(np.broadcast_to(ins[1].value, shape).ravel() == 0, -1, rows)
        if name == "div" and k == 1 and ins[0].value is not None:  # 0 / y
            rows = np.where(np.broadcast_to(ins[0].value, shape).ravel() == 0, -1, rows)
        parts.append(_checked(_select(rows, v.size) @ v.deps))
    return [_V(shape, _union(*parts) if parts else None)] + _unknown(out_avals[1:])


def _ids(shape: tuple, start: int) -> np.ndarray:
    size = int(np.prod(shape, dtype=np.int64))
    return (start + np.arange(size, dtype=np.int64)).reshape(shape)


def _movement(eqn, ins: list[_V], out_avals) -> list[_V]:
    """Evaluate the operation on element numbers (1, 2, ...; 0 for nothing) to learn where
    each output element comes from. Integer operands (indices) must be constants."""
    args, rows, start = [], [], 1
    for v, var in zip(ins, eqn.invars):
        if _inexact(var.aval):
            args.append(_ids(v.shape, start).astype(np.int32))
            rows.append(_deps(v))
            start += v.size
        elif v.value is not None:
            args.append(v.value)
        else:
            return _conservative(eqn, ins, out_avals)
    if start >= 2**31 - 1:
        return _conservative(eqn, ins, out_avals)
    outs = evaluate(eqn, args, out_avals, numbers=True)
    stacked = sp.csr_matrix(sp.vstack(rows)) if len(rows) > 1 else rows[0]
    result = []
    for o, aval in zip(outs, out_avals):
        src = np.asarray(o, np.int64).ravel() - 1
        src = np.where((src >= 0) & (src < start - 1), src, -1)
        result.append(_V(tuple(aval.shape), _checked(_select(src, start - 1) @ stacked)))
    return result


def _reduction_rows(shape: tuple, axes: tuple) -> tuple[np.ndarray, tuple]:
    """For each element of an array of ``shape``, the element of its reduction over ``axes``."""
    axes = tuple(a % len(shape) for a in axes)
    kept = tuple(d for i, d in enumerate(shape) if i not in axes)
    coords = np.indices(shape).reshape(len(shape), -1)
    kept_coords = [coords[i] for i in range(len(shape)) if i not in axes]
    out = np.ravel_multi_index(kept_coords, kept) if kept else np.zeros(coords.shape[1], np.int64)
    return out, kept


def _reduce(eqn, ins: list[_V], out_avals) -> list[_V]:
    v = ins[0]
    out, kept = _reduction_rows(v.shape, tuple(eqn.params["axes"]))
    size = int(np.prod(kept, dtype=np.int64))
    s = _csr(out, np.arange(v.size), (size, v.size))
    return [_V(tuple(out_avals[0].shape), _checked(s @ v.deps))]


def _cumulative(eqn, ins: list[_V], out_avals) -> list[_V]:
    """Each element joins the elements before it along the axis (after it, reversed)."""
    v = ins[0]
    axis = eqn.params["axis"] % len(v.shape)
    length = v.shape[axis]
    if v.size * length // 2 > MAX_ENTRIES:
        raise Unstructured("a cumulative operation too large to follow")
    ids = np.moveaxis(np.arange(v.size).reshape(v.shape), axis, -1).reshape(-1, length)  # (lines, length)
    i, j = np.tril_indices(length)  # output i joins input j <= i
    if eqn.params.get("reverse", False):
        i, j = length - 1 - i, length - 1 - j
    rows, cols = ids[:, i].ravel(), ids[:, j].ravel()
    return [_V(v.shape, _checked(_csr(rows, cols, (v.size, v.size)) @ v.deps))]


def _fft(eqn, ins: list[_V], out_avals) -> list[_V]:
    """Each output element joins its line (the transformed trailing axes) of the input."""
    v, out = ins[0], tuple(out_avals[0].shape)
    k = len(eqn.params["fft_lengths"])
    lead = v.shape[:len(v.shape) - k]
    lines = int(np.prod(lead, dtype=np.int64))
    per_in, per_out = v.size // max(lines, 1), int(np.prod(out[len(lead):], dtype=np.int64))
    if lines * per_in * per_out > MAX_ENTRIES:
        raise Unstructured("an FFT too large to follow")
    line = np.arange(lines)
    rows = (line[:, None, None] * per_out + np.arange(per_out)[None, :, None] + 0 * np.arange(per_in)[None, None, :])
    cols = (line[:, None, None] * per_in + np.arange(per_in)[None, None, :] + 0 * np.arange(per_out)[None, :, None])
    return [_V(out, _checked(_csr(rows.ravel(), cols.ravel(), (lines * per_out, v.size)) @ v.deps))]


def _dot_general(eqn, ins: list[_V], out_avals) -> list[_V]:
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = ins
    lf = [i for i in range(len(lhs.shape)) if i not in lc and i not in lb]
    rf = [i for i in range(len(rhs.shape)) if i not in rc and i not in rb]

    def canon(v, batch, free, contract, contract_last):
        order = list(batch) + (list(free) + list(contract) if contract_last else list(contract) + list(free))
        ids = np.arange(v.size).reshape(v.shape).transpose(order)
        nz = None if v.value is None else (np.asarray(v.value) != 0).transpose(order)
        b = int(np.prod([v.shape[i] for i in batch], dtype=np.int64))
        f = int(np.prod([v.shape[i] for i in free], dtype=np.int64))
        c = int(np.prod([v.shape[i] for i in contract], dtype=np.int64))
        shape = (b, f, c) if contract_last else (b, c, f)
        return ids.reshape(shape), (None if nz is None else nz.reshape(shape))

    a_ids, a_nz = canon(lhs, lb, lf, lc, True)  # (B, M, K)
    b_ids, b_nz = canon(rhs, rb, rf, rc, False)  # (B, K, N)
    nb, m, k = a_ids.shape
    n = b_ids.shape[2]
    parts = []
    if lhs.deps is not None:  # out[b, i, j] <- lhs[b, i, k] where rhs[b, k, j] may be nonzero
        bb, kk, jj = np.nonzero(np.ones((nb, k, n), bool) if b_nz is None else b_nz)
        if bb.size * m > MAX_ENTRIES:
            raise Unstructured("a dot_general too large to follow")
        ii = np.repeat(np.arange(m), bb.size)
        bb, kk, jj = (np.tile(x, m) for x in (bb, kk, jj))
        parts.append(_checked(_csr((bb * m + ii) * n + jj, a_ids[bb, ii, kk], (nb * m * n, lhs.size)) @ lhs.deps))
    if rhs.deps is not None:  # out[b, i, j] <- rhs[b, k, j] where lhs[b, i, k] may be nonzero
        bb, ii, kk = np.nonzero(np.ones((nb, m, k), bool) if a_nz is None else a_nz)
        if bb.size * n > MAX_ENTRIES:
            raise Unstructured("a dot_general too large to follow")
        jj = np.repeat(np.arange(n), bb.size)
        bb, ii, kk = (np.tile(x, n) for x in (bb, ii, kk))
        parts.append(_checked(_csr((bb * m + ii) * n + jj, b_ids[bb, kk, jj], (nb * m * n, rhs.size)) @ rhs.deps))
    return [_V(tuple(out_avals[0].shape), _union(*parts))]


def _conv(eqn, ins: list[_V], out_avals) -> list[_V]:
    """A convolution whose kernel is a constant (or unknown) and whose input depends on the
    state: each output element joins its window's inputs, over the kernel's nonzeros."""
    lhs, rhs = ins
    p = eqn.params
    if rhs.deps is not None or p["feature_group_count"] != 1 or p["batch_group_count"] != 1:
        return _conservative(eqn, ins, out_avals)
    dn = p["dimension_numbers"]
    lhs_spec, rhs_spec, out_spec = dn.lhs_spec, dn.rhs_spec, dn.out_spec
    # the input's element numbers in (N, C, spatial...) order, patches: (N, C * window, out spatial...)
    ids = np.arange(lhs.size, dtype=np.float64).reshape(lhs.shape).transpose(lhs_spec) + 1
    if lhs.size >= 2**24 and not jax.config.jax_enable_x64:
        return _conservative(eqn, ins, out_avals)
    window = tuple(rhs.shape[i] for i in rhs_spec[2:])
    with jax.ensure_compile_time_eval():
        patches = np.asarray(lax.conv_general_dilated_patches(
            jnp.asarray(ids), window, p["window_strides"], p["padding"], p["lhs_dilation"], p["rhs_dilation"],
            precision=lax.Precision.HIGHEST), np.float64)
    nbatch, cin = ids.shape[0], ids.shape[1]
    out_spatial = patches.shape[2:]
    src = np.rint(patches).astype(np.int64).reshape(nbatch, cin, int(np.prod(window)), -1) - 1  # (N, C, W, S)
    kernel = None if rhs.value is None else np.asarray(rhs.value).transpose(rhs_spec)  # (O, I, window...)
    cout = rhs.shape[rhs_spec[0]]
    mask = np.ones((cout, cin, int(np.prod(window))), bool) if kernel is None else (kernel != 0).reshape(cout, cin, -1)
    o_i, c_i, w_i = np.nonzero(mask)
    n_s = int(np.prod(out_spatial, dtype=np.int64))
    if nbatch * o_i.size * n_s > MAX_ENTRIES:
        raise Unstructured("a convolution too large to follow")
    bb = np.repeat(np.arange(nbatch), o_i.size * n_s)
    oo, cc, ww = (np.tile(np.repeat(x, n_s), nbatch) for x in (o_i, c_i, w_i))
    ss = np.tile(np.arange(n_s), nbatch * o_i.size)
    cols = src[bb, cc, ww, ss]
    # the output in (N, O, spatial...) order, then to its own layout
    out_canon = (bb * cout + oo) * n_s + ss
    canon_shape = (nbatch, cout) + tuple(out_spatial)
    to_layout = np.arange(int(np.prod(canon_shape))).reshape(canon_shape).transpose(np.argsort(out_spec)).ravel()
    where = np.empty_like(to_layout)
    where[to_layout] = np.arange(to_layout.size)
    keep = cols >= 0
    s = _csr(where[out_canon[keep]], cols[keep], (to_layout.size, lhs.size))
    return [_V(tuple(out_avals[0].shape), _checked(s @ lhs.deps))]


def _scatter(eqn, ins: list[_V], out_avals) -> list[_V]:
    operand, indices, updates = ins
    if indices.value is None:
        return _conservative(eqn, ins, out_avals)
    p = eqn.params
    dt = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
    if operand.size >= (2**53 if dt == jnp.float64 else 2**24):
        return _conservative(eqn, ins, out_avals)

    def add(u):
        return lax.scatter_add(jnp.zeros(operand.shape, dt), jnp.asarray(indices.value), u, p["dimension_numbers"],
                               indices_are_sorted=p["indices_are_sorted"], unique_indices=p["unique_indices"],
                               mode=p["mode"])

    dn = p["dimension_numbers"]
    target = None
    if not dn.operand_batching_dims and tuple(dn.inserted_window_dims) == tuple(dn.scatter_dims_to_operand_dims):
        target = take(_ids(operand.shape, 1), np.asarray(indices.value), tuple(dn.scatter_dims_to_operand_dims),
                       tuple(dn.update_window_dims), clip="FILL" not in str(p["mode"]))  # the indexing form
        if target is not None and target.shape != tuple(updates.shape):
            target = None
    if target is None:
        with jax.ensure_compile_time_eval():  # each update's target: the transpose gathers element numbers
            numbers = jnp.asarray(_ids(operand.shape, 1), dt)
            target = np.rint(np.asarray(jax.linear_transpose(add, jax.ShapeDtypeStruct(updates.shape, dt))(numbers)[0]))
    target = np.asarray(target).astype(np.int64).ravel() - 1
    parts = []
    if updates.deps is not None:
        valid = target >= 0
        parts.append(_checked(_csr(target[valid], np.nonzero(valid)[0], (operand.size, updates.size)) @ updates.deps))
    if operand.deps is not None:
        rows = np.arange(operand.size)
        if eqn.primitive.name == "scatter":  # overwritten elements keep nothing of the operand
            rows[target[target >= 0]] = -1
        parts.append(_checked(_select(rows, operand.size) @ operand.deps))
    return [_V(tuple(out_avals[0].shape), _union(*parts))]


def _conservative(eqn, ins: list[_V], out_avals) -> list[_V]:
    """Every output element depends on everything any input depends on."""
    union = None
    for v in ins:
        if v.deps is not None:
            row = sp.csr_matrix(v.deps.sum(axis=0) > 0, dtype=np.float32)
            union = row if union is None else _union(union, row)
    out = []
    for a in out_avals:
        size = int(np.prod(a.shape, dtype=np.int64))
        if union is None or not _inexact(a):
            out.append(_V(tuple(a.shape)))
            continue
        if size * union.nnz > MAX_ENTRIES:
            raise Unstructured("an operation whose output depends on everything its inputs do")
        out.append(_V(tuple(a.shape), sp.csr_matrix(sp.kron(np.ones((size, 1), np.float32), union))))
    return out


# -- control flow -----------------------------------------------------------------------------


def _closed(j) -> tuple[Any, list[_V]]:
    """(jaxpr, its constants as known values)."""
    if isinstance(j, jcore.ClosedJaxpr):
        return j.jaxpr, [_constant(c) for c in j.consts]
    return j, []


def _call(eqn, ins: list[_V], out_avals) -> list[_V]:
    jaxpr, consts = _closed(eqn.params[CALLS[eqn.primitive.name]])
    return _run(jaxpr, consts, ins[len(ins) - len(jaxpr.invars):])


def _custom_jvp(eqn, ins: list[_V], out_avals) -> list[_V]:
    """A ``custom_jvp`` function: its derivative is its JVP rule, not its primal (a table
    lookup through an integer index, a straight-through ``round``, a rule that couples more
    than the primal). The rule is traced (``jax.jvp`` of the call) and its tangent outputs
    followed from tangents that carry the inputs' states; the primals keep their values."""
    idx = [i for i, v in enumerate(eqn.invars) if _inexact(v.aval)]
    n_in = len(eqn.invars)

    def tangents(*args):
        primals = list(args[:n_in])

        def call(*xs):
            full = list(primals)
            for i, x in zip(idx, xs):
                full[i] = x
            out = bind_primitive(eqn, full)
            return tuple(out) if eqn.primitive.multiple_results else (out,)

        return jax.jvp(call, tuple(primals[i] for i in idx), tuple(args[n_in:]))[1]

    specs = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in eqn.invars]
    try:
        closed = jax.make_jaxpr(tangents)(*specs, *[specs[i] for i in idx])
    except Exception:  # noqa: BLE001 - a rule that cannot be traced here: the safe side
        return _conservative(eqn, ins, out_avals)
    # in the rule, an operation whose derivative is zero may act on a tangent itself (a
    # ``stop_gradient(dx)`` is dx when the rule runs): there it keeps the tangent's states
    # (the primals carry none, so nothing else changes; found by probing)
    _IN_RULE[0] += 1
    try:
        outs = _run(closed.jaxpr, [_constant(c) for c in closed.consts],
                    [_V(v.shape, None, v.value) for v in ins] + [ins[i] for i in idx])
    finally:
        _IN_RULE[0] -= 1
    return [_V(tuple(a.shape), o.deps) if _inexact(a) else _V(tuple(a.shape)) for o, a in zip(outs, out_avals)]


def _join(a: _V, b: _V) -> _V:
    same = a.value is not None and b.value is not None and np.array_equal(a.value, b.value)
    return _V(a.shape, _union(a.deps, b.deps), a.value if same else None)


def _cond(eqn, ins: list[_V], out_avals) -> list[_V]:
    branches = eqn.params["branches"]
    index, ops = ins[0], ins[1:]
    if index.value is not None:
        branches = [branches[int(np.clip(index.value, 0, len(branches) - 1))]]
    outs = None
    for br in branches:
        jaxpr, consts = _closed(br)
        got = _run(jaxpr, consts, ops)
        outs = got if outs is None else [_join(a, b) for a, b in zip(outs, got)]
    return outs


def _forget(v: _V) -> _V:
    return _V(v.shape, v.deps)  # a loop's carry changes: its value is not known


def _same(a: _V, b: _V) -> bool:
    if (a.deps is None) != (b.deps is None):
        return False
    return a.deps is None or (a.deps.nnz == b.deps.nnz and (a.deps != b.deps).nnz == 0)


def _fixpoint(body: Callable[[list[_V]], list[_V]], carry: list[_V]) -> list[_V]:
    carry = [_forget(c) for c in carry]
    for _ in range(MAX_FIXPOINT):
        new = [_forget(_join(c, o)) for c, o in zip(carry, body(carry))]
        if all(_same(a, b) for a, b in zip(carry, new)):
            return carry
        carry = new
    raise Unstructured("a loop whose dependencies did not settle")


def _while(eqn, ins: list[_V], out_avals) -> list[_V]:
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    body, closed_consts = _closed(p["body_jaxpr"])
    consts = ins[nc:nc + nb]  # the body's first inputs
    return _fixpoint(lambda c: _run(body, closed_consts, consts + c), ins[nc + nb:])


def _scan(eqn, ins: list[_V], out_avals) -> list[_V]:
    p = eqn.params
    body, closed_consts = _closed(p["jaxpr"])
    n_consts, n_carry, length = p["num_consts"], p["num_carry"], p["length"]
    consts, carry, xs = ins[:n_consts], ins[n_consts:n_consts + n_carry], ins[n_consts + n_carry:]
    if length <= MAX_UNROLL:  # followed step by step: exact (a fori_loop with a few iterations)
        steps = range(length - 1, -1, -1) if p["reverse"] else range(length)
        ys_steps = []
        for i in steps:
            out = _run(body, closed_consts, consts + carry + [_row(x, i) for x in xs])
            carry, ys = out[:n_carry], out[n_carry:]
            ys_steps.append((i, ys))
        ys_steps.sort(key=lambda s: s[0])
        return carry + [_stack([s[1][k] for s in ys_steps], aval) for k, aval in enumerate(out_avals[n_carry:])]
    if n_carry == 0:  # lax.map: every step the same function of its own slice, followed as jax.vmap of it
        mapped = jax.vmap(jcore.jaxpr_as_fun(p["jaxpr"]), in_axes=(None,) * n_consts + (0,) * len(xs))
        specs = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in eqn.invars]
        try:
            closed = jax.make_jaxpr(mapped)(*specs)
        except Exception:  # noqa: BLE001 - the join below is the safe side
            closed = None
        if closed is not None:
            return _run(closed.jaxpr, [_constant(c) for c in closed.consts], consts + xs)
    joined = []
    for v in xs:  # one iteration's slice: the join over the scanned axis
        rows, kept = _reduction_rows(v.shape, (0,))
        deps = None if v.deps is None else _checked(_csr(rows, np.arange(v.size), (int(np.prod(kept)), v.size)) @ v.deps)
        joined.append(_V(kept, deps))
    last: list = []

    def step(c):
        out = _run(body, closed_consts, consts + c + joined)
        last[:] = out[n_carry:]
        return out[:n_carry]

    carry = _fixpoint(step, carry)
    ys = []
    for y, aval in zip(last, out_avals[n_carry:]):
        rows = np.tile(_broadcast_rows(y.shape, tuple(aval.shape)[1:]), aval.shape[0])
        ys.append(_V(tuple(aval.shape), None if y.deps is None else _checked(_select(rows, y.size) @ y.deps)))
    return carry + ys


def _row(v: _V, i: int) -> _V:
    """``v[i]`` (the leading axis)."""
    shape = v.shape[1:]
    size = int(np.prod(shape, dtype=np.int64))
    deps = None if v.deps is None else _checked(_select(i * size + np.arange(size), v.size) @ v.deps)
    return _V(shape, deps, None if v.value is None else v.value[i])


def _stack(rows: list[_V], aval) -> _V:
    if not rows:  # a scan of no steps
        return _V(tuple(aval.shape))
    if all(r.value is not None for r in rows):
        return _V(tuple(aval.shape), value=np.stack([r.value for r in rows]))
    if all(r.deps is None for r in rows):
        return _V(tuple(aval.shape))
    return _V(tuple(aval.shape), _checked(sp.csr_matrix(sp.vstack([_deps(r) for r in rows]))))


def _identity(eqn, ins: list[_V], out_avals) -> list[_V]:
    return [_V(tuple(a.shape), v.deps, v.value) for v, a in zip(ins, out_avals)]


RULES: dict[str, Callable] = {"optimization_barrier": _identity, "fft": _fft, "custom_jvp_call": _custom_jvp,
                              "dot_general": _dot_general, "conv_general_dilated": _conv, "cond": _cond,
                              "while": _while, "scan": _scan}
RULES.update({name: _call for name in CALLS if name != "custom_jvp_call"})
RULES.update({name: _reduce for name in REDUCTIONS})
RULES.update({name: _cumulative for name in CUMULATIVE})
RULES.update({name: _scatter for name in SCATTERS})
RULES.update({name: _movement for name in MOVEMENT})
RULES.update({name: _elementwise for name in ELEMENTWISE})


# -- the interpreter --------------------------------------------------------------------------


def _constant(c: Any) -> _V:
    shape = tuple(np.shape(c))
    try:
        return _V(shape, value=np.asarray(c) if np.size(c) <= MAX_CONSTANT else None)
    except Exception:  # noqa: BLE001 - a tracer the rhs closes over: a value not known here
        return _V(shape)


def _no_dependence(eqn, ins: list[_V], out_avals) -> list[_V]:
    """Inputs that depend on no state: the outputs' values where every input is known, except
    a callback's or an effect's (run here, a user's ``io_callback`` ran once more at trace
    time, and the value it gave then, a zero say, was taken for all times: found by probing)."""
    if eqn.effects or "callback" in eqn.primitive.name:
        return _unknown(out_avals)
    if all(v.value is not None for v in ins) and sum(a.size for a in out_avals) <= MAX_CONSTANT:
        try:
            outs = evaluate(eqn, [v.value for v in ins], out_avals)
            return [_V(tuple(a.shape), value=o) for o, a in zip(outs, out_avals)]
        except Exception:  # noqa: BLE001 - an operation that cannot run here: its values unknown
            pass
    return _unknown(out_avals)


def _apply(eqn, ins: list[_V]) -> list[_V]:
    out_avals = [v.aval for v in eqn.outvars]
    if all(v.deps is None for v in ins):
        return _no_dependence(eqn, ins, out_avals)
    name = eqn.primitive.name
    if (name in ZERO_DERIVATIVE and not _IN_RULE[0]) or not any(_inexact(a) for a in out_avals):
        return _unknown(out_avals)
    rule = RULES.get(name, _elementwise if name in ZERO_DERIVATIVE else _conservative)  # (all elementwise)
    outs = rule(eqn, ins, out_avals)
    return [o if _inexact(a) else _V(o.shape, None, o.value) for o, a in zip(outs, out_avals)]


def _run(jaxpr, consts: list[_V], args: list[_V]) -> list[_V]:
    env: dict = {}

    def read(v):
        if isinstance(v, jcore.Literal):
            return _V(tuple(np.shape(v.val)), value=np.asarray(v.val))
        return env[v]

    for var, val in zip(jaxpr.constvars, consts):
        env[var] = val
    for var, val in zip(jaxpr.invars, args):
        env[var] = val
    for eqn in jaxpr.eqns:
        outs = _apply(eqn, [read(v) for v in eqn.invars])
        for var, val in zip(eqn.outvars, outs):
            if not isinstance(var, jcore.DropVar):
                env[var] = val
    return [read(v) for v in jaxpr.outvars]


def abstract(x: Any) -> jax.ShapeDtypeStruct:
    """``x``'s shape and dtype (``x`` itself if it is a ``jax.ShapeDtypeStruct``)."""
    return x if isinstance(x, jax.ShapeDtypeStruct) else jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x))


def _dependence(rhs: Callable, t: Any, y: Any, params: Any, wrt: int) -> _V:
    """What each element of ``rhs(t, y, params)`` depends on among the elements of its
    argument ``wrt`` (0: ``t``, 1: ``y``)."""
    specs = [abstract(t), abstract(y), jax.tree_util.tree_map(abstract, params)]
    closed = jax.make_jaxpr(rhs)(*specs)
    n = int(np.prod(specs[wrt].shape, dtype=np.int64))
    _N[0] = n
    args = [_V(tuple(v.aval.shape)) for v in closed.jaxpr.invars]
    args[wrt] = _V(tuple(specs[wrt].shape), sp.identity(n, dtype=np.float32, format="csr"))
    return _run(closed.jaxpr, [_constant(c) for c in closed.consts], args)[0]


def jacobian_structure(rhs: Callable, t: Any, y: Any, params: Any) -> sp.csr_matrix:
    """Every ``(i, j)`` where ``d rhs(t, y, params)_i / d y_j`` may be nonzero, read from the
    program (see the module's docstring): a ``(n, n)`` CSR matrix with ones, ``n = y.size``.

    Parameters
    ----------
    rhs : callable
        ``rhs(t, y, params)`` returning an array of ``y``'s size.
    t, y, params
        Arrays or ``jax.ShapeDtypeStruct``s: only their shapes and dtypes are used
        (``y`` of shape ``(n,)``).

    Raises
    ------
    Unstructured
        The dependency sets grew past `MAX_ENTRIES` or a loop's did not settle.
    """
    n = int(np.prod(abstract(y).shape, dtype=np.int64))
    out = _dependence(rhs, t, y, params, 1)
    deps = _deps(out) if out.size == n else None
    if deps is None:
        raise Unstructured(f"rhs returned {out.size} elements for {n} states")
    return sp.csr_matrix(deps)


def depends_on_time(rhs: Callable, t: Any, y: Any, params: Any) -> bool:
    """Whether ``d rhs(t, y, params) / d t`` may be nonzero, read from the program as
    `jacobian_structure` reads ``d / d y``: False for an autonomous rhs (``t`` unused, or
    used only where the derivative is zero: comparisons, ``floor``, ...), whose time
    derivative a Rosenbrock step then need not compute. True where the analysis gives up.
    Host code at trace time: ``t``, ``y`` and ``params`` may be tracers (only their shapes
    and dtypes are read)."""
    # (not cached: about 1 ms a trace, and an rhs that reads a Python global is traced anew
    # by JAX with the global's new value, where a cached answer would be stale)
    try:
        return _deps(_dependence(rhs, t, y, params, 0)).nnz > 0
    except Exception:  # noqa: BLE001 - Unstructured, or an rhs the analysis trips on: assume it does
        return True
