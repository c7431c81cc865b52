"""Every library model against SciPy (DOP853 / Radau at rtol 1e-13), error / tolerance.

The accepted factor of each model is data in simkit/validation/cases.py, shared with the
validation report.
"""

import numpy as np
import pytest

from simkit import models
from simkit.validation import MODEL_CASES, run_model_case


def test_every_model_has_a_case():
    assert set(MODEL_CASES) == set(models.names())


@pytest.mark.parametrize("name", sorted(MODEL_CASES))
def test_model_against_scipy(name):
    r = run_model_case(name, n_save=21)
    assert np.isfinite(r["max_error"])
    assert r["max_error"] <= r["bound"], (name, r["errors"])
