"""Real data sets shipped with simkit (CSV files in ``simkit/data/`` with their sources)."""

from __future__ import annotations

import os

from .fitting.data import Dataset

DATA_DIR = os.path.join(os.path.dirname(__file__), "data")


def path(filename: str) -> str:
    """The path of a shipped data file."""
    return os.path.join(DATA_DIR, filename)


def lynx_hare() -> Dataset:
    """Hudson's Bay Company pelt records 1900-1920 (thousands of pelts): hare (prey) and lynx
    (predator), time in years since 1900. Source: P. Howard (2009), "Modeling basics", Math 442
    lecture notes, Texas A&M University, as redistributed in the Stan example-models
    repository (knitr/lotka-volterra); the file's header says so."""
    return Dataset.from_csv(path("hudson_bay_lynx_hare.csv"), time="year",
                            columns={"hare": "prey", "lynx": "predator"}, name="Hudson's Bay pelts")
