"""Validation cases (vs SciPy, exact solutions, invariants) and the report they produce.

``simkit validate [--quick]`` (or ``python -m simkit.validation``) runs every case and
writes ``validation/report/`` (``report.md`` plus PNG figures). The same cases, on their
cheap settings, run in the test suite.
"""

from .cases import MODEL_CASES as MODEL_CASES
from .cases import ModelCase as ModelCase
from .cases import run_model_case as run_model_case
from .report import run as run

__all__ = ["MODEL_CASES", "ModelCase", "run", "run_model_case"]
