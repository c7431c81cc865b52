"""Every library model against SciPy (DOP853 / Radau at rtol 1e-13), with every simkit
kernel and the diffrax default that applies; error normalised by tolerance.

The accepted factor of each (model, solver) is data in simkit/validation/cases.py, shared
with the validation report.
"""

import numpy as np
import pytest

from simkit import models
from simkit.validation import MODEL_CASES, run_model_case
from simkit.validation.cases import solvers_for

CASES = [(name, solver) for name in sorted(MODEL_CASES) for solver in solvers_for(name)]


def test_every_model_has_a_case():
    deterministic = {n for n in models.names("ode") if models.get(n).diffusion is None}
    assert set(MODEL_CASES) == deterministic
    for name, case in MODEL_CASES.items():
        assert set(case.measured) == set(solvers_for(name))


@pytest.mark.parametrize("name, solver", CASES)
def test_model_against_scipy(name, solver):
    r = run_model_case(name, solver)
    assert np.isfinite(r["max_error"])
    assert r["max_error"] <= r["bound"], (name, solver, r["errors"])
