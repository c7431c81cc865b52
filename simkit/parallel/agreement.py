"""Under `jax.distributed`, every process makes the same call with the same inputs: checked.

A multi-process run places each process's share of the work from that process's own copy of
the inputs (`simkit.parallel.place`). Found by probing: processes given different initial
fields were stitched into one field in silence, and processes making different calls (other
step counts) waited on each other's collectives forever. `same_call` compares a digest of
each input across processes (one small all-gather, a collective every process reaches at
the same point of the same call) and raises on every process, naming the inputs that differ
and the processes that hold them, before any work.

Processes that make different *kinds* of call (one `integrate`, another an `ensemble`)
gather vectors of the same length, so they too see the difference; a process that makes no
call at all cannot be waited for here (JAX's heartbeat ends the run).
"""

from __future__ import annotations

import hashlib
from typing import Any

import jax
import numpy as np

from ..errors import InputError

SLOTS = 16  # digests per call: the call's name, then up to 15 inputs


def _encode(value: Any, out: list[bytes]) -> None:
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            out.append(repr(key).encode())
            _encode(value[key], out)
    elif isinstance(value, (list, tuple)):
        out.append(f"{type(value).__name__}{len(value)}".encode())
        for v in value:
            _encode(v, out)
    elif isinstance(value, (np.ndarray, np.generic, jax.Array)) and getattr(value, "is_fully_addressable", True):
        a = np.ascontiguousarray(np.asarray(value))
        out.append(f"{a.dtype.str}{a.shape}".encode())
        out.append(a.tobytes())
    elif callable(value) and hasattr(value, "__code__"):  # a function: its name and bytecode
        out.append(value.__qualname__.encode())
        out.append(value.__code__.co_code)
    else:
        text = repr(value)
        # (a default repr holds a memory address, which differs between processes)
        out.append((type(value).__qualname__ if " at 0x" in text else text).encode())


def digest(value: Any) -> int:
    """A 32-bit digest of ``value`` that is the same in every process for equal values:
    arrays by dtype, shape and bytes, dicts by sorted keys, functions by name and bytecode,
    anything else by ``repr`` (by type where the repr holds a memory address)."""
    parts: list[bytes] = []
    _encode(value, parts)
    return int.from_bytes(hashlib.sha256(b"\0".join(parts)).digest()[:4], "little")


def same_call(what: str, **inputs: Any) -> None:
    """Raise `InputError` on every process when the processes' ``inputs`` differ (a no-op in
    a single process).

    Parameters
    ----------
    what : str
        The call, e.g. ``"parallel.integrate"``: named in the message, and part of the digest.
    **inputs
        The call's inputs by name (host values: arrays, numbers, dicts of them, functions).

    Raises
    ------
    InputError
        Some processes were given different inputs, or made a different call.
    """
    if jax.process_count() == 1:
        return
    from jax.experimental import multihost_utils

    names = sorted(inputs)
    if len(names) >= SLOTS:
        raise ValueError(f"same_call: at most {SLOTS - 1} inputs, got {len(names)}")  # (a caller's mistake)
    row = np.zeros(SLOTS, np.uint32)
    row[0] = digest((what, tuple(names)))
    row[1:1 + len(names)] = [digest(inputs[n]) for n in names]
    table = np.asarray(multihost_utils.process_allgather(row))  # (processes, SLOTS)
    differ = table != table[0]
    if not differ.any():
        return
    procs = sorted(set(np.flatnonzero(differ.any(axis=1)).tolist()))
    if differ[:, 0].any():
        raise InputError(f"{what}: processes {procs} made a different call from process 0 (under jax.distributed "
                         "every process makes the same calls, in the same order, with the same inputs)")
    fields = [name for i, name in enumerate(names, start=1) if differ[:, i].any()]
    raise InputError(f"{what}: processes {procs} were given a different {', '.join(fields)} from process 0 "
                     "(under jax.distributed every process makes the same call with the same inputs: each "
                     "places its share of the work from its own copy)")
