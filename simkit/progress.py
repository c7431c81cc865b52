"""Progress bars for long host-level loops, through ``tqdm.auto`` (terminals and Jupyter).

Used by the ensemble's batches of chunks, multi-start fits and ``simkit validate``. A bar is
drawn only from the host, between compiled calls: never a host callback inside ``jit``.

When a bar shows: an explicit ``progress=True``/``False`` argument decides; otherwise the
environment variable ``SIMKIT_PROGRESS`` (``0``: never, ``1``: always); otherwise
automatically, in a terminal (the bar's stream is a tty) or a Jupyter notebook (a widget),
and then only once the work has run `SHOW_AFTER_S` seconds, so short runs print nothing.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from ._prepare import check_flag
from .errors import InputError

ENV = "SIMKIT_PROGRESS"
SHOW_AFTER_S = 3.0  # an automatic bar appears once the work has run this long
_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")


def setting(progress: bool | None = None) -> bool | None:
    """Whether a bar is wanted: ``True``, ``False``, or ``None`` (automatic).

    Parameters
    ----------
    progress
        An explicit choice (wins), or ``None`` to read ``SIMKIT_PROGRESS``.

    Returns
    -------
    bool or None
        ``progress`` if given; else ``False`` for ``SIMKIT_PROGRESS=0``, ``True`` for
        ``SIMKIT_PROGRESS=1``, ``None`` when it is unset, empty or ``auto``.

    Raises
    ------
    InputError
        ``SIMKIT_PROGRESS`` holds something other than 0/1 (or false/true, no/yes, off/on).

    Examples
    --------
    >>> setting(True), setting(False)  # an explicit choice wins over SIMKIT_PROGRESS
    (True, False)
    """
    choice = check_flag("progress", progress, allow_none=True)  # "no" would read as True
    if choice is not None:
        return choice
    value = os.environ.get(ENV, "").strip().lower()
    if value in _OFF:
        return False
    if value in _ON:
        return True
    if value and value != "auto":
        raise InputError(f"environment variable {ENV}={os.environ[ENV]!r}: use 0 (no progress bars) "
                         "or 1 (always), or auto/unset it (automatic: in a terminal or a notebook)")
    return None


def in_notebook() -> bool:
    """Whether ``tqdm.auto`` draws notebook widgets here (a Jupyter kernel with ipywidgets).

    Part of the automatic rule of `active`: in a notebook a bar shows even though its
    stream is not a terminal.

    Returns
    -------
    bool
        True in a Jupyter kernel (notebook, JupyterLab, VS Code, Colab, JupyterLite) with
        ipywidgets installed, where ``tqdm.auto`` picks its widget bar; False in a plain
        Python process, terminal IPython, Jupyter's Qt console or Spyder, or a notebook
        without ipywidgets (where ``tqdm.auto`` falls back to its text bar).

    Examples
    --------
    >>> from simkit.progress import in_notebook
    >>> in_notebook()  # a plain Python process (this doctest), not a Jupyter kernel
    False
    """
    from tqdm.autonotebook import tqdm as chosen  # what tqdm.auto builds its bar on
    from tqdm.std import tqdm as console

    return chosen is not console


def active(progress: bool | None = None, file: TextIO | None = None) -> bool:
    """Whether a bar would be shown (see the module docstring for the rule).

    Parameters
    ----------
    progress
        An explicit choice, or ``None`` for the environment and then the automatic rule.
    file
        The stream the bar would write to (default ``sys.stderr``).

    Returns
    -------
    bool
        True when a bar shows: the choice, or ``SIMKIT_PROGRESS``, or automatically in a
        notebook or when ``file`` is a terminal.

    Examples
    --------
    >>> import io
    >>> active(None, io.StringIO())  # not a terminal
    False
    """
    choice = setting(progress)
    if choice is not None:
        return choice
    if in_notebook():
        return True
    stream = sys.stderr if file is None else file
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def bar(total: int | None, desc: str, *, progress: bool | None = None, file: TextIO | None = None,
        unit: str = "it") -> Any:
    """A ``tqdm.auto`` progress bar that follows simkit's rule (module docstring).

    Use it as a context manager and call ``update(n)`` as work completes; ``write(text)``
    prints a line above it.

    Parameters
    ----------
    total
        Units of work (``None``: unknown, the bar counts and shows the elapsed time).
    desc
        The label before the bar.
    progress
        ``True``/``False`` to force it on/off; ``None``: ``SIMKIT_PROGRESS``, else
        automatic (a terminal or a notebook, after `SHOW_AFTER_S` seconds of work).
    file
        The stream (default ``sys.stderr``; ignored by notebook widgets).
    unit
        The name of one unit of work.

    Returns
    -------
    tqdm.auto.tqdm
        The bar (a disabled one when no bar is wanted: its methods do nothing).

    Raises
    ------
    InputError
        A bad ``SIMKIT_PROGRESS`` value (`setting`).

    Examples
    --------
    >>> import io
    >>> stream = io.StringIO()
    >>> with bar(3, "cases", progress=True, file=stream) as b:
    ...     for _ in range(3):
    ...         b.update(1)
    >>> "3/3" in stream.getvalue()
    True
    """
    from tqdm.auto import tqdm

    choice = setting(progress)
    # None: tqdm's own test (off unless the stream is a terminal; notebook widgets are on)
    disable = None if choice is None else not choice
    return tqdm(total=total, desc=desc, unit=unit, file=file, disable=disable,
                delay=SHOW_AFTER_S if choice is None else 0.0, dynamic_ncols=True)
