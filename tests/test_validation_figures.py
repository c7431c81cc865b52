"""The validation report's figures say what they show: axis labels with the model's units
(never guessed), the work-precision error axis as computed, every state drawn.
Cheap: made-up results, no solves."""

from types import SimpleNamespace

import matplotlib
import numpy as np
import pytest

import simkit
from simkit.plot import axis_label, model_axis_label, plot_work_precision
from simkit.validation.report import _draw_models
from simkit.validation.work_precision import ERROR_AXIS_LABEL, scaled_error

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HH_UNITS = "V in mV, time in ms, conductances in mS/cm^2, current in uA/cm^2"


def test_axis_labels_carry_known_units_and_never_guess():
    assert axis_label("t", "days") == "t [days]"
    assert axis_label("t", None) == "t (model units)"
    assert axis_label("t", "") == "t (model units)"
    assert axis_label("t", None, unknown=None) == "t"
    assert model_axis_label(HH_UNITS, "t") == "t [ms]"
    assert model_axis_label(HH_UNITS, "V", "|error| of V") == "|error| of V [mV]"
    assert model_axis_label(HH_UNITS, "m") == "m (model units)"
    # "states as fractions of the population" names no state: no unit read into it
    assert model_axis_label("time in days, states as fractions of the population", "S") == "S (model units)"
    assert model_axis_label({"x": "m", "time": "s"}, "t") == "t [s]"
    assert model_axis_label("", "t") == "t (model units)"
    # the CF unit "1" of a dimensionless quantity (the library's nondimensional models)
    assert axis_label("t", "1") == "t (dimensionless)"
    assert model_axis_label("t in 1, x in 1; nondimensional", "x", "|error| of x") == "|error| of x (dimensionless)"


def test_scaled_error_is_relative_to_each_states_largest_reference_value():
    ref = np.array([[1.0, 1000.0], [2.0, -2000.0], [4.0, 500.0]])
    ys = ref.copy()
    ys[0, 0] += 0.04  # state 0: 0.04 / max|ref_0| = 0.04 / 4 = 0.01
    ys[2, 1] += 10.0  # state 1: 10 / 2000 = 0.005 (not 10 / 500, not 10 / (500 + 1))
    assert scaled_error(ys, ref) == pytest.approx(0.01)
    ys[0, 0] = ref[0, 0]
    assert scaled_error(ys, ref) == pytest.approx(0.005)


def test_work_precision_axis_names_the_computed_error_and_the_legend_sits_outside():
    fig, ax = plt.subplots()
    data = {"a": [(1e-3, 0.1), (1e-5, 0.2)], "b": [(float("nan"), float("nan")), (1e-4, 0.3)]}
    plot_work_precision(data, ax, xlabel=ERROR_AXIS_LABEL, legend_outside=True)
    assert ax.get_xlabel() == ERROR_AXIS_LABEL
    assert "|y| + 1" not in ax.get_xlabel() and r"\mathrm{max}_t" in ax.get_xlabel()
    fig.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1  # right of the axes, clear of the curves
    plt.close(fig)


def _fake_case(name, names, units, n=6):
    ts = np.linspace(0.0, 1.0, n)
    ref = np.outer(np.ones(n), np.arange(1.0, len(names) + 1))
    ys = ref + np.outer(np.arange(n), np.full(len(names), 1e-9))  # error 0 at t0, then growing
    ys[:, -1] = ref[:, -1]  # the last state exact everywhere
    sol = SimpleNamespace(ts=ts, ys=ys, state_names=tuple(names), model_units=units)
    return dict(name=name, solver="simkit.Tsit5", solution=sol, ref=SimpleNamespace(ts=ts, ys=ref),
                max_error=1.0)


def test_models_figure_draws_every_state_with_labelled_axes():
    pollu_like = [f"s{i}" for i in range(12)]
    results = [_fake_case("hodgkin_huxley", ["V", "m", "h", "n"], HH_UNITS),
               _fake_case("sir", ["S", "I", "R"], "time in days, states as fractions of the population"),
               _fake_case("pollu", pollu_like, "time in minutes, concentrations in ppm"),
               _fake_case("lorenz", ["x", "y", "z"], "")]
    fig = _draw_models(results)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len(panels) == len(results)
    hh, sir, pollu, lorenz = panels
    assert hh.get_xlabel() == "t [ms]" and sir.get_xlabel() == "t [days]" and pollu.get_xlabel() == "t [minutes]"
    assert lorenz.get_xlabel() == "t (model units)"
    assert hh.get_ylabel() == "|simkit − SciPy| (model units, see legend)"
    assert [t.get_text() for t in hh.get_legend().get_texts()] == ["V [mV]", "m", "h", "n (error 0)"]
    assert sir.get_ylabel() == lorenz.get_ylabel() == "|simkit − SciPy| (model units)"
    assert len(pollu.get_lines()) == len(pollu_like)  # every state, not the first four
    for ax in panels:
        assert ax.get_yscale() == "log"
        first = ax.get_lines()[0].get_ydata()
        assert np.isnan(first[0]) and np.all(first[1:] > 0)  # the exact t0 left out of the log axis
    plt.close(fig)


def test_solution_and_fan_plots_carry_the_model_units():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hh = simkit.solve(simkit.models.get("hodgkin_huxley"), (0.0, 2.0), saveat=5)
    ax = hh.plot()
    # different units: each legend entry names its own
    assert ax.get_xlabel() == "t [ms]" and ax.get_ylabel() == "state (units in the legend)"
    assert [line.get_label() for line in ax.get_lines()][:2] == ["V [mV]", "m (dimensionless)"]
    sir = simkit.solve(simkit.models.get("sir"), saveat=5)
    ax = sir.plot()
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("t [days]", "state (dimensionless)")  # one shared unit
    plt.close("all")
