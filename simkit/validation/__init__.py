"""Validation cases (vs SciPy, exact solutions, invariants) and the report they produce.

``simkit validate [--quick] [--out DIR]`` (or ``python -m simkit.validation``) runs every case
and writes ``report.md`` plus PNG figures to ``validation/report/`` (a quick run: to a new
folder, see `report.default_out_dir`). The same cases, on their cheap settings, run in the
test suite.
"""

from .cases import MODEL_CASES as MODEL_CASES
from .cases import ModelCase as ModelCase
from .cases import run_model_case as run_model_case
from .report import run as run

__all__ = ["MODEL_CASES", "ModelCase", "run", "run_model_case"]
