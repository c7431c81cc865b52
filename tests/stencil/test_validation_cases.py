"""The stencil validation cases of the report (the cheap ones; the orders are also asserted
in test_operators.py and test_stepping.py)."""

from simkit.validation import stencils


def test_time_order_cases_pass_and_carry_their_points():
    cases = stencils.time_orders()
    assert [c["order"] for c in cases] == [1, 3, 4, 1]
    for c in cases:
        assert c["passed"], (c["name"], c["metric"])
        assert len(c["hs"]) == len(c["errors"]) == 4


def test_scipy_case_passes():
    r = stencils.against_scipy()
    assert r["passed"], r
