"""Every library model against SciPy (DOP853 at rtol 1e-13 / Radau at rtol 1e-12), with every
simkit kernel that applies; error normalised by tolerance.

The accepted factor of each (model, solver) is data in simkit/validation/cases.py, shared
with the validation report. The report (`simkit validate`) runs the whole matrix; here
DOPRI5 runs on three models (`DOPRI5_ON`) and diffrax's solvers on two only: they check simkit's diffrax engine (tolerances,
save times, parameters passed through), which does not depend on the model, and the matrix's
diffrax columns took 47 of this suite's ~1,500 CPU-seconds. diffrax's paths are checked
further by SciPy's own tests (tests/test_scipy_ivp_port.py).
"""

import numpy as np
import pytest
from model_references import stale, stored_reference

from simkit import models
from simkit.reference import compare
from simkit.validation import MODEL_CASES, run_model_case
from simkit.validation.cases import reference_solution, solvers_for

DIFFRAX_ON = ("lorenz", "robertson")  # one non-stiff model (diffrax.Tsit5), one stiff (diffrax.Kvaerno5)
# simkit.DOPRI5 runs Tsit5's kernel code (`ExplicitRK`) with another tableau, which SciPy's own
# tests check forward and backward (tests/test_scipy_ivp_port.py): here on three models of
# different kinds (chaotic, close encounters, fast spikes); the report runs it on every model
DOPRI5_ON = ("lorenz", "arenstorf", "hodgkin_huxley")
CASES = [(name, solver) for name in sorted(MODEL_CASES) for solver in solvers_for(name)
         if (name in DIFFRAX_ON or not solver.startswith("diffrax."))
         and (name in DOPRI5_ON or solver != "simkit.DOPRI5")]


def test_every_model_has_a_case():
    deterministic = {n for n in models.names("ode") if models.get(n).diffusion is None}
    assert set(MODEL_CASES) == deterministic
    for name, case in MODEL_CASES.items():
        assert set(case.measured) == set(solvers_for(name))
    assert {n for n, s in CASES if s.startswith("diffrax.")} == set(DIFFRAX_ON)
    assert {n for n, s in CASES if s == "simkit.DOPRI5"} == set(DOPRI5_ON)


@pytest.mark.parametrize("name, solver", CASES)
def test_model_against_scipy(name, solver):
    r = run_model_case(name, solver, reference=stored_reference(name))  # live when not stored
    assert np.isfinite(r["max_error"])
    assert r["max_error"] <= r["bound"], (name, solver, r["errors"])


def test_stored_references_are_current():
    """Every case has a stored SciPy reference made with its current model and settings
    (tests/model_references.py); a stale one is recomputed live by its case, and named here."""
    assert stale() == [], f"refresh with: python tests/model_references.py (stale: {stale()})"


@pytest.mark.parametrize("name", ["sir", "pollu"])  # one DOP853 reference, one Radau (20 states)
def test_a_stored_reference_is_what_scipy_computes(name):
    """The stored reference is SciPy's answer: recomputed live here, they agree to a hundredth
    of the cases' tolerance unit (the references themselves are 100-1000x tighter)."""
    stored, live = stored_reference(name), reference_solution(name)
    case = MODEL_CASES[name]
    assert max(compare(live, stored, case.rtol, case.atol).values()) < 0.01
