"""Starts split between devices: one compiled program, run side by side on each share.

A fit with ``devices=`` runs the starts in order in equal shares, one share a device, each
share in its own host thread. Every share runs the program that one device runs alone,
compiled once: not one program partitioned over all the devices. So a start ends exactly
where it ends on one device, and a split costs no more compilation than one device.

* CPU devices share the host's memory and XLA:CPU runs a program's loops in the thread that
  calls it (several threads may run one program at once): every share runs the first
  device's program, from its own thread.
* Other devices (accelerator chips) each run a copy of it, its executable loaded again there
  (`loaded_on`), not compiled again.

Measured on 2 cores with jax 0.10.2 (Rahman et al. 2016, 10 starts of a PEtab least-squares
fit): one program partitioned over two CPU devices compiled in about 0.45 s more than the
one-device program, and copying the compiled program to the second CPU device took 0.40 s;
two of Sneyd et al. 2002's 10 starts ended elsewhere in the partitioned program than on one
device.
"""

from __future__ import annotations

import concurrent.futures
import io
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._codegen import CodegenJit, gc_paused

# copies of compiled programs for other devices: {(id of the executable, device id): (executable, copy)};
# the executable is kept beside its copy so that its id is not reused while the entry lives
_COPIES: dict[tuple[int, int], tuple[Any, Any]] = {}
_MAX_COPIES = 32


def loaded_on(compiled: Any, device: jax.Device) -> Any:
    """``compiled`` (a `jax.stages.Compiled` of a one-device program) loaded to run on
    ``device``: its executable serialised and loaded again with ``device`` as its device, not
    compiled again (on XLA:CPU 0.40 s for a PEtab fit's program that took 3 s to compile). None
    where this JAX cannot (the caller then compiles for ``device``). Cached per program and
    device."""
    executable = getattr(getattr(compiled, "_executable", None), "xla_executable", compiled)
    key = (id(executable), device.id)
    if key in _COPIES:
        return _COPIES[key][1]
    try:
        copy = _reloaded(compiled, device)
    except Exception:  # noqa: BLE001 - a JAX whose executables do not serialise: compile again
        copy = None
    if len(_COPIES) >= _MAX_COPIES:
        _COPIES.pop(next(iter(_COPIES)))
    _COPIES[key] = (executable, copy)
    return copy


def _reloaded(compiled: Any, device: jax.Device) -> Any:
    """`loaded_on` through JAX's executable serialisation (`jax.experimental.serialize_executable`),
    with every device the program names read as ``device`` and compile options that assign it."""
    from jax._src import compiler
    from jax.experimental import serialize_executable as serial

    serialized, in_tree, out_tree = serial.serialize(compiled)
    backend = device.client
    options = compiler.get_compile_options(num_replicas=1, num_partitions=1, device_assignment=[device],
                                           backend=backend)

    class OnDevice(serial._JaxPjrtUnpickler):  # noqa: SLF001 - no public name for the unpickler
        def persistent_load(self, pid: Any) -> Any:
            if pid[0] == "exec":
                return backend.deserialize_executable(pid[1], self.execution_devices, options)
            if pid[0] == "device":
                return device
            return super().persistent_load(pid)

    unloaded, args_info, no_kwargs = OnDevice(io.BytesIO(serialized), backend, [device]).load()
    return jax.stages.Compiled(unloaded.load(), [], in_tree.unflatten(args_info), out_tree, no_kwargs=no_kwargs)


def array_module(array: Any) -> Any:
    """The array module for ``array``: NumPy for a NumPy array (which compiles nothing), else
    jax.numpy."""
    return np if isinstance(array, np.ndarray) else jnp


def padded_rows(x: Any, rows: int) -> Any:
    """``x`` ``(m, ...)`` with copies of its last row added up to ``rows`` rows (`array_module`)."""
    xp = array_module(x)
    return xp.concatenate([x, xp.broadcast_to(x[-1:], (rows - x.shape[0],) + x.shape[1:])])


def split_starts(call: CodegenJit, args: tuple, devices: Sequence[jax.Device], *, static: int, starts: int,
                 rows: Callable[[int], int], counted: bool, **keywords: Any) -> Any:
    """``call(*args, **keywords)`` on each device's share of the starts ``args[starts]``
    ``(n_starts, n)``, split in order between ``devices`` in shares of ``ceil(n_starts /
    len(devices))`` (a device without starts left runs nothing): each share padded with copies
    of its last row to ``rows(share)`` rows and, with ``counted``, ``count=`` its own number of
    starts (the rows beyond it never run). ``args[:static]`` are the call's static arguments,
    the others go to each device; ``keywords`` are static. The results, row for row of the
    starts, on the first device."""
    x0 = args[starts]
    n = x0.shape[0]
    share = -(-n // len(devices))
    width = rows(share)
    parts = [(device, x0[k * share:(k + 1) * share]) for k, device in enumerate(devices) if k * share < n]

    def dynamic(device: jax.Device, part: Any) -> tuple[tuple, dict]:
        """The arguments of ``device``'s share that its compiled program takes."""
        given = args[static:starts] + (padded_rows(part, width),) + args[starts + 1:]
        count = {"count": np.asarray(part.shape[0], np.int32)} if counted else {}
        return jax.device_put((given, count), device)

    first = parts[0][0]
    calls = []
    with gc_paused():
        for k, (device, part) in enumerate(parts):
            # CPU devices run the first device's program, other devices a copy (module docstring)
            home = first if device.platform == first.platform == "cpu" else device
            given, count = dynamic(home, part)
            program = None
            if k and home == first:
                program = calls[0][0]
            elif k and home.platform == first.platform:
                program = loaded_on(calls[0][0], home)
            if program is None:  # the first device's, another platform's, or a JAX that could not copy it
                full = args[:static] + given
                program = call.pick(*full, **keywords, **count).lower(*full, **keywords, **count).compile()
            calls.append((program, given, count))

    def run(entry: tuple) -> Any:
        program, given, count = entry
        return jax.block_until_ready(program(*given, **count))

    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        outs = list(pool.map(run, calls))
    sizes = [part.shape[0] for _, part in parts]
    return jax.tree_util.tree_map(  # gathered on the host: no program compiled for it
        lambda *pieces: jax.device_put(np.concatenate([np.asarray(p)[:m] for p, m in zip(pieces, sizes)]), first),
        *outs)


__all__ = ["array_module", "loaded_on", "padded_rows", "split_starts"]
