"""The finished parts of a validation run, kept in its report folder so that a stopped run
resumes (`simkit validate --resume`) without running them again."""

from __future__ import annotations

import concurrent.futures
import contextvars
import json
import os
import pickle
import shutil
from collections.abc import Callable, Sequence
from typing import Any

FOLDER = ".partial"


class Parts:
    """Parts of a run stored under ``out_dir/.partial``, one pickle each, written atomically
    (a temporary file, then a rename: a kill leaves a part whole or absent).

    Parameters
    ----------
    out_dir : str
        The report folder.
    fingerprint : dict
        What the stored parts must have been computed with (version, run kind, platform,
        precision); stored parts with another fingerprint are dropped.
    resume : bool
        Keep the stored parts (else every part is computed again).

    Attributes
    ----------
    resumed : list of str
        The parts read back instead of computed, in order.

    Examples
    --------
    >>> import tempfile
    >>> from simkit.validation.parts import Parts
    >>> folder = tempfile.mkdtemp()
    >>> Parts(folder, {"v": 1}, resume=False).get("a", lambda: 41 + 1)
    42
    >>> again = Parts(folder, {"v": 1}, resume=True)
    >>> again.get("a", lambda: 0), again.resumed
    (42, ['a'])
    """

    def __init__(self, out_dir: str, fingerprint: dict[str, Any], resume: bool):
        self.dir = os.path.join(out_dir, FOLDER)
        self.resumed: list[str] = []
        self._ahead: dict[str, concurrent.futures.Future] = {}
        stamp = os.path.join(self.dir, "fingerprint.json")
        stored = None
        if resume and os.path.exists(stamp):
            with open(stamp) as fh:
                stored = json.load(fh)
        if stored != fingerprint:
            shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir, exist_ok=True)
        if stored != fingerprint:
            _write_atomically(stamp, json.dumps(fingerprint).encode())

    def run_ahead(self, parts: Sequence[tuple[str, Callable[[], Any]]], jobs: int,
                  done: Callable[[str, int, int], None] | None = None) -> None:
        """Compute the parts ``(key, compute)`` not stored yet, ``jobs`` at a time in threads,
        and return when all have finished; `get` then hands out their values (or raises what
        their ``compute`` raised). Each is stored as it finishes, so a run stopped meanwhile
        keeps it. Their programs compile side by side (XLA compiles outside Python's lock).
        Each thread starts from the caller's context variables (`simkit.precision`).
        ``done(key, finished, total)`` is called in the caller's thread as each part finishes.
        """
        todo = [(key, compute) for key, compute in parts
                if key not in self._ahead and not os.path.exists(self._path(key))]
        if not todo:
            return
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs),
                                                     thread_name_prefix="simkit-validate")
        try:
            futures = {pool.submit(contextvars.copy_context().run, self._compute, key, compute): key
                       for key, compute in todo}
            self._ahead.update({key: future for future, key in futures.items()})
            for finished, future in enumerate(concurrent.futures.as_completed(futures), 1):
                if done is not None:
                    done(futures[future], finished, len(futures))
        finally:  # interrupted: the parts not started are dropped, the running ones finish
            pool.shutdown(wait=True, cancel_futures=True)

    def get(self, key: str, compute: Callable[[], Any]) -> Any:
        """The stored value of part ``key``, its value from `run_ahead`, or ``compute()``
        (stored when it can be pickled)."""
        if key in self._ahead:
            return self._ahead.pop(key).result()
        path = self._path(key)
        if os.path.exists(path):
            with open(path, "rb") as fh:
                value = pickle.load(fh)
            self.resumed.append(key)
            return value
        return self._compute(key, compute)

    def _path(self, key: str) -> str:
        return os.path.join(self.dir, f"{key}.pkl")

    def _compute(self, key: str, compute: Callable[[], Any]) -> Any:
        path = self._path(key)
        value = compute()
        try:
            data = pickle.dumps(value)
        except Exception:  # noqa: BLE001 - a part that cannot be stored is computed again on resume
            return value
        _write_atomically(path, data)
        return value

    def finish(self) -> None:
        """The run is complete: drop the stored parts."""
        shutil.rmtree(self.dir, ignore_errors=True)


def _write_atomically(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
