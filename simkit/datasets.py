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
    return Dataset.from_csv(path("hudson_bay_lynx_hare.csv"), time="year", time_offset=1900,
                            columns={"hare": "prey", "lynx": "predator"}, name="Hudson's Bay pelts")


PUPILS = 763  # boys in the school (BMJ 1978)


def pupils_in_bed(y, params):
    """The observation of `influenza_1978`: the sir model's infected fraction times the
    school's 763 boys, shape ``(1,)``."""
    return y[1:2] * PUPILS


def influenza_1978() -> Dataset:
    """Influenza in an English boarding school, 1978: boys confined to bed on days 1 to 14
    (22 January to 4 February), for ``models.get("sir")`` (whose states are fractions).
    Source: Anonymous (1978), "Influenza in a boarding school", BMJ 1(6112):587; counts as
    tabulated in the R package outbreaks; the file's header says so.

    The initial state is one infected boy of 763 at day 0 (``t0 = 0``), a day before the
    first count, as in the classic SIR fit (least squares: beta 1.669, gamma 0.443 per day).

    Returns
    -------
    Dataset
        14 daily counts (``times`` 1 to 14, days), one column ``in_bed`` observing
        `pupils_in_bed` (763 times the infected fraction), ``t0 = 0`` and ``y0`` (S 762/763,
        I 1/763, R 0).

    Examples
    --------
    >>> from simkit import datasets
    >>> data = datasets.influenza_1978()
    >>> data.times[[0, -1]].tolist(), data.t0, int(data.values.max())
    ([1.0, 14.0], 0.0, 298)
    """
    counts = Dataset.from_csv(path("influenza_england_1978_school.csv"), time="day", columns={"in_bed": "I"})
    return Dataset(counts.times, counts.values, observed=pupils_in_bed, names=("in_bed",), t0=0.0,
                   y0={"S": (PUPILS - 1) / PUPILS, "I": 1 / PUPILS, "R": 0.0},
                   name="boarding school influenza 1978")
