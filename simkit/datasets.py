"""Real data sets shipped with simkit (CSV files in ``simkit/data/`` with their sources)."""

from __future__ import annotations

import os

from .fitting.data import Dataset

DATA_DIR = os.path.join(os.path.dirname(__file__), "data")


def path(filename: str) -> str:
    """The path of a shipped data file.

    Parameters
    ----------
    filename : str
        A file name in ``simkit/data/`` (e.g. ``"hudson_bay_lynx_hare.csv"``).

    Returns
    -------
    str
        Its path (not checked to exist).

    Examples
    --------
    >>> import os
    >>> from simkit import datasets
    >>> os.path.exists(datasets.path("hudson_bay_lynx_hare.csv"))
    True
    """
    return os.path.join(DATA_DIR, filename)


def lynx_hare() -> Dataset:
    """Hudson's Bay Company pelt records 1900-1920 (thousands of pelts): hare (prey) and lynx
    (predator), time in years since 1900. Source: P. Howard (2009), "Modeling basics", Math 442
    lecture notes, Texas A&M University, as redistributed in the Stan example-models
    repository (knitr/lotka-volterra); the file's header says so.

    Returns
    -------
    Dataset
        21 yearly observations (``times`` 0 to 20), columns ``hare`` and ``lynx`` observing
        the ``prey`` and ``predator`` states of ``models.get("lotka_volterra")``.

    Examples
    --------
    >>> from simkit import datasets
    >>> data = datasets.lynx_hare()
    >>> data.values.shape, data.names, data.observed
    ((21, 2), ('hare', 'lynx'), ('prey', 'predator'))
    """
    return Dataset.from_csv(path("hudson_bay_lynx_hare.csv"), time="year",
                            columns={"hare": "prey", "lynx": "predator"}, name="Hudson's Bay pelts")
