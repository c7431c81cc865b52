"""The finished parts of a validation run, kept in its report folder so that a stopped run
resumes (`simkit validate --resume`) without running them again."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from collections.abc import Callable
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

    def get(self, key: str, compute: Callable[[], Any]) -> Any:
        """The stored value of part ``key``, or ``compute()`` (stored when it can be pickled)."""
        path = os.path.join(self.dir, f"{key}.pkl")
        if os.path.exists(path):
            with open(path, "rb") as fh:
                value = pickle.load(fh)
            self.resumed.append(key)
            return value
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
