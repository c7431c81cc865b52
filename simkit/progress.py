"""A text progress bar on stderr for long host-level loops (ensemble chunks)."""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

SHOW_AFTER_S = 3.0  # a bar appears once the projected run time exceeds this


def wanted(progress: bool | None) -> bool:
    """Whether to run in host-level batches so progress can be shown.

    ``None`` (auto): when stderr is a terminal and ``SIMKIT_PROGRESS`` is not ``0``."""
    if progress is not None:
        return bool(progress)
    if os.environ.get("SIMKIT_PROGRESS", "1") == "0":
        return False
    return sys.stderr.isatty()


class Bar:
    """``Bar(total, label)``; ``update(done)`` after each unit of work; ``close()``.

    With ``always=False`` it stays silent until the projected total time exceeds
    `SHOW_AFTER_S` (short runs print nothing)."""

    def __init__(self, total: int, label: str, *, always: bool = False, stream: TextIO | None = None):
        self.total, self.label, self.always = total, label, always
        self.stream = stream or sys.stderr
        self.start = time.perf_counter()
        self.shown = False

    def update(self, done: int) -> None:
        elapsed = time.perf_counter() - self.start
        projected = elapsed * self.total / max(done, 1)
        if not (self.shown or self.always or projected > SHOW_AFTER_S):
            return
        self.shown = True
        width = 30
        filled = int(width * done / self.total)
        left = projected - elapsed
        self.stream.write(f"\r{self.label}: [{'#' * filled}{'.' * (width - filled)}] "
                          f"{done}/{self.total}  {elapsed:5.1f} s, ~{left:4.1f} s left ")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            elapsed = time.perf_counter() - self.start
            self.stream.write(f"\r{self.label}: {self.total}/{self.total} done in {elapsed:.1f} s"
                              + " " * 30 + "\n")
            self.stream.flush()
