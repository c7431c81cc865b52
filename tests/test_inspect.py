"""`simkit.inspect`: the compiled program of a solve, looked at from inside.

Small and fast: Lorenz with Tsit5 on a short span, Robertson with Rodas4. The inspected
program must be the one `solve` runs: a solve of the same structure afterwards compiles
nothing, and bad input raises what `solve` raises, before anything compiles.
"""

from __future__ import annotations

import contextlib
import doctest
import logging

import jax
import pytest

import simkit
from simkit.inspection import _anatomy, _cost

LORENZ = simkit.models.get("lorenz")


@contextlib.contextmanager
def compiles():
    """The names of the programs XLA compiles inside the block."""
    names: list[str] = []

    class Handler(logging.Handler):
        def emit(self, record):
            message = record.getMessage()
            if message.startswith("Compiling "):
                names.append(message.split()[1])

    handler, logger = Handler(level=logging.DEBUG), logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles():
            yield names
    finally:
        logger.removeHandler(handler)


@pytest.fixture(scope="module")
def lorenz_info():
    return simkit.inspect(LORENZ, (0.0, 1.0), saveat=11)


def test_fields_are_sane(lorenz_info):
    info = lorenz_info
    assert (info.model, info.engine, info.method) == ("lorenz", "kernel", "simkit.Tsit5()")
    assert info.lower_seconds > 0 and info.compile_seconds > 0
    assert info.flops > 0 and info.bytes_accessed > 0 and info.transcendentals >= 0
    assert info.cost["flops"] == info.flops and not any("{" in k for k in info.cost)
    assert info.fusions > 0 and info.while_loops >= 1 and info.copies >= 0 and info.custom_calls >= 0
    assert len(info.loops) == info.while_loops
    text = info.hlo()
    assert text.startswith("HloModule") and text.count(" fusion(") == info.fusions
    assert text.count(" while(") == info.while_loops
    step = info.stepping_loop
    assert step is not None and step.trip_count is None and step.fusions > 0
    assert step.thunks >= step.fusions + step.copies + step.custom_calls
    assert "loop.py" in step.source  # the kernels' stepping loop, simkit/kernels/loop.py
    # saving at given times: an outer fori_loop over them (trip count known) around the stepping loop
    assert any(lp.trip_count == 12 and lp.depth < step.depth for lp in info.loops)
    assert "simkit.Tsit5()" in info.summary() and "stepping loop" in info.summary()
    assert "Tsit5" in repr(info) and "thunks per step" in repr(info) and "HloModule" not in repr(info)


def test_same_structure_same_program(lorenz_info):
    """Other numbers, same shapes: the same program, and solve then compiles nothing."""
    with compiles() as names:
        other = simkit.inspect(LORENZ, (0.0, 3.0), saveat=11, params={"rho": 20.0}, y0=[2.0, 1.0, 0.5],
                               rtol=1e-8, atol=1e-10, dt0=1e-3, throw=False)
        sol = simkit.solve(LORENZ, (0.0, 2.0), saveat=11, params={"rho": 35.0})
    assert "jit(run_kernel)" not in names, names  # (small helpers of the Solution may compile)
    assert sol.ys.shape == (11, 3)
    assert other.hlo() == lorenz_info.hlo()
    assert (other.fusions, other.while_loops, other.copies, other.loops) == (
        lorenz_info.fusions, lorenz_info.while_loops, lorenz_info.copies, lorenz_info.loops)


def test_another_structure_is_another_program(lorenz_info):
    with compiles() as names:
        steps = simkit.inspect(LORENZ, (0.0, 1.0), saveat="steps", max_steps=500)
    assert names == ["jit(run_kernel)"]
    assert steps.hlo() != lorenz_info.hlo()
    # every accepted step saved: no loop over save times, the stepping loop is the outermost
    assert steps.stepping_loop is not None and steps.stepping_loop.depth == 0


@pytest.mark.parametrize("kwargs", [
    dict(rtol=-1.0),
    dict(params={"rhoo": 1.0}),
    dict(y0=[1.0, 2.0]),
    dict(saveat=[0.0, 5.0]),
    dict(solver=simkit.Tsit5),
])
def test_bad_input_raises_what_solve_raises_before_compiling(kwargs):
    with pytest.raises(Exception) as from_solve:
        simkit.solve(LORENZ, (0.0, 1.0), **kwargs)
    with compiles() as names, pytest.raises(type(from_solve.value)) as from_inspect:
        simkit.inspect(LORENZ, (0.0, 1.0), **kwargs)
    assert str(from_inspect.value) == str(from_solve.value)
    assert isinstance(from_inspect.value, simkit.SimkitError)
    assert names == []


def test_arguments_solve_does_not_take_and_runs_without_a_program():
    with pytest.raises(TypeError, match="batched"):
        simkit.inspect(LORENZ, (0.0, 1.0), batched=True)  # prepare takes it, solve does not
    with pytest.raises(simkit.InputError, match="nothing to inspect"):
        simkit.inspect(LORENZ, (1.0, 1.0))
    with pytest.raises(simkit.InputTypeError, match="outside"):
        jax.jit(lambda r: simkit.inspect(LORENZ, (0.0, 1.0), params={"rho": r}).flops)(28.0)


def test_stiff_rodas4():
    info = simkit.inspect(simkit.models.get("robertson"), (0.0, 1.0), saveat=3, solver=simkit.Rodas4())
    assert (info.engine, info.method) == ("kernel", "simkit.Rodas4()")
    assert info.compile_seconds > 0 and info.flops > 0 and info.fusions > 0 and info.while_loops >= 1
    step = info.stepping_loop
    assert step is not None and step.trip_count is None and step.fusions > 0
    # the 3x3 LU of the Rosenbrock step is straight-line code fused into the step: no loop
    # runs inside the stepping loop (it was a loop of 3 per factorisation and per sweep)
    inner = info.loops[info.loops.index(step) + 1:]
    assert not any(lp.depth > step.depth for lp in inner)
    assert step.thunks < 120  # 75 measured; 340 with the LU's loops (benchmarks/measurements.md)


def test_cost_analysis_dict_list_or_none():
    class Compiled:
        def __init__(self, value):
            self.value = value

        def cost_analysis(self):
            if isinstance(self.value, Exception):
                raise self.value
            return self.value

    one = {"flops": 10.0, "bytes accessed": 80.0, "bytes accessed0{}": 8.0, "utilization1{}": 2.0}
    assert _cost(Compiled(one)) == {"flops": 10.0, "bytes accessed": 80.0}
    assert _cost(Compiled([one, {"flops": 5.0}])) == {"flops": 15.0, "bytes accessed": 80.0}
    assert _cost(Compiled(None)) == {} and _cost(Compiled([])) == {}
    assert _cost(Compiled(NotImplementedError("no cost analysis"))) == {}


def test_anatomy_of_hand_written_hlo():
    text = """HloModule m, is_scheduled=true

%fused (p: f64[]) -> f64[] {
  %p = f64[] parameter(0)
  ROOT %m = f64[] multiply(%p, %p)
}

%body (t: (s64[], f64[])) -> (s64[], f64[]) {
  %t = (s64[], f64[]) parameter(0)
  %i = s64[] get-tuple-element(%t), index=0
  %x = f64[] get-tuple-element(%t), index=1
  %f = f64[] fusion(%x), kind=kLoop, calls=%fused
  %c = f64[] copy(%f)
  ROOT %r = (s64[], f64[]) tuple(%i, %c)
}

%cond (t: (s64[], f64[])) -> pred[] {
  %t = (s64[], f64[]) parameter(0)
  %i = s64[] get-tuple-element(%t), index=0
  %n = s64[] constant(4)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main (x: f64[]) -> f64[] {
  %x = f64[] parameter(0)
  %z = s64[] constant(0)
  %init = (s64[], f64[]) tuple(%z, %x)
  %w = (s64[], f64[]) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"4"}}
  %cc = f64[] custom-call(%x), custom_call_target="foo"
  ROOT %out = f64[] get-tuple-element(%w), index=1
}
"""
    out = _anatomy(text)
    assert (out["fusions"], out["while_loops"], out["copies"], out["custom_calls"]) == (1, 1, 1, 1)
    (loop,) = out["loops"]
    assert (loop.name, loop.depth, loop.trip_count) == ("w", 0, 4)
    assert (loop.thunks, loop.fusions, loop.copies) == (3, 1, 1)  # fusion, copy, compare


def test_docstring_example():
    finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(simkit.inspect, "simkit.inspect", globs={})
    assert tests and tests[0].examples
    for test in tests:
        runner.run(test)
    assert runner.failures == 0
