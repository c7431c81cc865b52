"""Data out (simkit.io): every result type round-trips through save / simkit.load bit for bit,
with CF units and its provenance; file-format errors name the problem. Progress bars
(simkit.progress): SIMKIT_PROGRESS, the argument, the stream."""

import datetime
import io as text_io
import json
import sys
from importlib import metadata

import jax.numpy as jnp
import numpy as np
import pytest

import simkit
from simkit import progress
from simkit import stencil as sk
from simkit.io import decode_attrs, parse_units, units_for
from simkit.models import pde_transport as pt

SPRING = simkit.ODEModel(
    rhs=lambda t, y, p: jnp.stack([y[1], -p["stiffness"] * y[0]]), params={"stiffness": 4.0}, y0=[1.0, 0.0],
    state_names=("x", "v"), name="spring", source="R. Hooke, De Potentia Restitutiva (1678)",
    units="time in s, x in m, v in m/s, stiffness in 1/s^2")
LOGISTIC = simkit.ODEModel(rhs=lambda t, y, p: p["r"] * y * (1 - y / p["K"]), params={"r": 0.5, "K": 10.0},
                           y0=[0.5], state_names=("N",), name="logistic", source="Verhulst (1838)",
                           units="time in days, N in cells, K in cells")


def _check_provenance(attrs, kind, model):
    assert attrs["simkit_result"] == kind and attrs["Conventions"].startswith("CF-")
    assert attrs["simkit_version"] == simkit.__version__
    assert attrs["jax_version"] == metadata.version("jax")
    assert attrs["diffrax_version"] == metadata.version("diffrax")
    assert attrs["model"] == model.name and attrs["model_source"] == model.source
    assert attrs["model_units"] == model.units
    created = datetime.datetime.strptime(attrs["date_created"], "%Y-%m-%dT%H:%M:%SZ")
    age = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - created
    assert datetime.timedelta(0) <= age < datetime.timedelta(minutes=10)


def test_solution_round_trip(tmp_path):
    sol = simkit.solve(SPRING, (0.0, 1.0), saveat=5, rtol=1e-7, atol=1e-9)
    ds = simkit.load(sol.save(tmp_path / "spring.nc"))
    np.testing.assert_array_equal(ds["t"].values, sol.ts)
    np.testing.assert_array_equal(ds["x"].values, sol.ys[:, 0])
    np.testing.assert_array_equal(ds["v"].values, sol.ys[:, 1])
    assert ds["x"].attrs["units"] == "m" and ds["v"].attrs["units"] == "m/s" and ds["t"].attrs["units"] == "s"
    assert ds["t"].attrs["axis"] == "T" and "x" in ds["x"].attrs["long_name"]
    _check_provenance(ds.attrs, "Solution", SPRING)
    attrs = decode_attrs(ds.attrs)
    assert attrs["parameters"] == {"stiffness": 4.0} and attrs["state_names"] == ["x", "v"]
    assert attrs["solver"] == sol.solver_name and attrs["rtol"] == 1e-7 and attrs["atol"] == 1e-9
    assert attrs["status"] == "success" and attrs["status_code"] == 0
    assert attrs["stats"]["num_steps"] == int(sol.stats["num_steps"])
    np.testing.assert_array_equal(attrs["y0"], [1.0, 0.0])
    np.testing.assert_array_equal(attrs["y_final"], np.asarray(sol.y_final))
    # one state: its y0 and y_final come back as vectors (NetCDF gave a one-value array back as a number)
    one = decode_attrs(simkit.load(simkit.solve(LOGISTIC, (0.0, 1.0), saveat=3).save(tmp_path / "n.nc")).attrs)
    assert one["y0"] == [0.5] and len(one["y_final"]) == 1
    xr = pytest.importorskip("xarray")
    xr.testing.assert_identical(ds, sol.to_xarray().assign_attrs(date_created=ds.attrs["date_created"],
                                                                 history=ds.attrs["history"]))


def test_event_records_and_the_final_state_round_trip(tmp_path):
    """A falling ball recording h = 5 and stopped at h = 0: the crossings and the state where
    the solve stopped (its impact velocity, saved nowhere else) were not written."""
    ball = simkit.ODEModel(rhs=lambda t, y, p: jnp.stack([y[1], -p["g"] + 0 * y[0]]), params={"g": 9.81},
                           y0=[10.0, 0.0], state_names=("h", "v"), name="ball")
    events = [simkit.Event(lambda t, y, p: y[0] - 5.0, terminal=0), simkit.Event(lambda t, y, p: y[0], terminal=1)]
    sol = simkit.solve(ball, (0.0, 3.0), saveat=7, events=events, rtol=1e-10, atol=1e-12)
    ds = simkit.load(sol.save(tmp_path / "ball.nc"))
    np.testing.assert_allclose(ds["event_t"].values[:, 0], np.sqrt([2 * 5 / 9.81, 2 * 10 / 9.81]), rtol=1e-12)
    np.testing.assert_array_equal(ds["event_count"].values, [1, 1])
    np.testing.assert_array_equal(ds["event_y"].values[:, 0], np.stack([y[0] for y in sol.y_events]))
    assert list(ds["state"].values) == ["h", "v"]
    attrs = decode_attrs(ds.attrs)
    np.testing.assert_array_equal(attrs["y_final"], np.asarray(sol.y_final))
    np.testing.assert_allclose(attrs["y_final"][1], -np.sqrt(2 * 9.81 * 10), rtol=1e-10)  # the impact velocity
    assert attrs["t_final"] == float(sol.t_final)


def test_ensemble_round_trip_keeps_tolerances_and_y0(tmp_path):
    y0 = np.array([[1.0, 0.0], [0.5, 0.1], [0.0, 1.0], [2.0, -1.0]])
    ens = simkit.ensemble(SPRING, (0.0, 1.0), params={"stiffness": np.array([1.0, 2.0, 3.0, 4.0])}, y0=y0,
                          saveat=4, rtol=1e-8, atol=1e-10)
    ds = simkit.load(ens.save(tmp_path / "springs.nc"))
    assert ds["x"].dims == ("member", "t") and ds.sizes == {"member": 4, "t": 4, "state": 2}
    np.testing.assert_array_equal(ds["x"].values, ens.ys[..., 0])
    np.testing.assert_array_equal(ds["v"].values, ens.ys[..., 1])
    np.testing.assert_array_equal(ds["t"].values, ens.times)
    np.testing.assert_array_equal(ds["y0"].values, y0)
    np.testing.assert_array_equal(ds["param_stiffness"].values, [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(ds["status"].values, ens.status)
    np.testing.assert_array_equal(ds["stats_num_steps"].values, ens.stats["num_steps"])
    assert list(ds["state"].values) == ["x", "v"] and "member_t" not in ds  # every member saved every time
    assert "param_stiffness" in ds.coords  # ds.swap_dims(member="param_stiffness") selects by value
    assert ds["x"].attrs["units"] == "m" and ds["param_stiffness"].attrs["units"] == "1/s^2"
    _check_provenance(ds.attrs, "EnsembleSolution", SPRING)
    attrs = decode_attrs(ds.attrs)
    assert attrs["rtol"] == 1e-8 and attrs["atol"] == 1e-10 and attrs["solver"] == ens.solver_name
    assert attrs["varied_parameters"] == ["stiffness"] and attrs["parameters"] == {}
    assert attrs["n_failed"] == 0 and attrs["status"] == "success: 4"


def test_field_solution_round_trip(tmp_path):
    grid = sk.Grid((16, 16), 0.0, 1.0)
    heat = sk.PDEModel(rhs=pt.diffusion_rhs, grid=grid, bcs=sk.Periodic(), params={"diffusivity": 0.01},
                       u0=pt.heat_2d_exact(grid.meshgrid(), 0.0)[None], name="heat16", source="Crank (1975)",
                       units="time in s, x in m, y in m, u in K")
    fields = sk.integrate(heat, dt=1e-3, steps=4, save_every=2, params={"diffusivity": 0.02},
                          diagnostics={"heat": lambda u, space: space.integral(u[0])})
    ds = simkit.load(fields.save(tmp_path / "heat.nc"))
    assert ds["u"].dims == ("t", "x", "y") and ds["u"].shape == (3, 16, 16)
    np.testing.assert_array_equal(ds["u"].values, fields.us[:, 0])
    np.testing.assert_array_equal(ds["t"].values, fields.ts)
    np.testing.assert_array_equal(ds["x"].values, grid.coordinates(0))
    np.testing.assert_array_equal(ds["y"].values, grid.coordinates(1))
    np.testing.assert_array_equal(ds["diagnostic_heat"].values, fields.diagnostics["heat"])
    assert ds["u"].attrs["units"] == "K" and ds["x"].attrs["units"] == "m" and ds["x"].attrs["axis"] == "X"
    _check_provenance(ds.attrs, "FieldSolution", heat)
    attrs = decode_attrs(ds.attrs)
    assert attrs["parameters"] == {"diffusivity": 0.02}  # the run's, not the model's default
    assert attrs["solver"] == "RK4" and attrs["dt"] == 1e-3 and attrs["save_every"] == 2
    assert attrs["status"] == "success" and attrs["boundary_conditions"] == "Periodic()"
    np.testing.assert_array_equal(attrs["grid_shape"], [16, 16])


def test_fit_round_trip_and_multi_start_progress(tmp_path, capsys):
    times = np.linspace(0.0, 10.0, 8)
    truth = simkit.solve(LOGISTIC, (0.0, 10.0), params={"r": 0.8, "K": 12.0}, saveat=times)
    clean = np.asarray(truth.ys)
    data = simkit.Dataset(times, clean * (1 + 0.05 * np.sin(np.arange(8)))[:, None], observed=("N",))
    result = simkit.fit(LOGISTIC, data, free=["r", "K"], starts=2, max_iterations=30, progress=True)
    err = capsys.readouterr().err  # the multi-start fit drew its bar, forced on, on stderr
    assert "fit logistic" in err and "2/2" in err
    ds = simkit.load(result.save(tmp_path / "fit.nc"))
    assert list(ds["parameter"].values) == ["r", "K"] and ds["cov"].dims == ("parameter", "parameter_j")
    np.testing.assert_array_equal(ds["estimate"].values, [result.estimates["r"], result.estimates["K"]])
    np.testing.assert_array_equal(ds["stderr"].values, [result.stderr["r"], result.stderr["K"]])
    np.testing.assert_array_equal(ds["cov"].values, result.cov)
    np.testing.assert_array_equal(ds["corr"].values, result.corr)
    np.testing.assert_array_equal(ds["start_point"].values, result.starts)
    np.testing.assert_array_equal(ds["start_cost"].values, result.start_costs)
    np.testing.assert_array_equal(ds["residuals"].values, result.residuals)
    assert json.loads(ds["parameter"].attrs["parameter_units"]) == {"K": "cells"}  # r: the units do not say
    _check_provenance(ds.attrs, "FitResult", LOGISTIC)
    attrs = decode_attrs(ds.attrs)
    assert attrs["parameters"] == result.estimates  # the fitted model's parameters
    assert attrs["cost"] == result.cost and attrs["loss"] == "LeastSquares"
    assert attrs["optimizer"] == "LevenbergMarquardt" and attrs["status"] == result.message
    assert attrs["solver"] == truth.solver_name  # the method that ran (the default's), not "default"
    assert attrs["limits"]["max_iterations"] == 30 and attrs["rtol"] == 1e-8
    # a fitted initial state and a dataset's own parameter value are what the file says (it
    # gave the model's y0 and K, which this fit did not use)
    own = simkit.Dataset(times, data.values, observed=("N",), params={"K": 12.0}, name="own K")
    fitted_y0 = simkit.fit(LOGISTIC, own, free=["r"], initial_state="fit", max_iterations=30)
    attrs = decode_attrs(simkit.load(fitted_y0.save(tmp_path / "y0.nc")).attrs)
    assert attrs["y0"] == [fitted_y0.estimates["y0:N"]]
    assert attrs["dataset_overrides"] == {"own K": {"params": {"K": 12.0}, "y0": {}}}


def test_units_are_read_from_the_model():
    assert parse_units("V in mV, time in ms, conductances in mS/cm^2") == {
        "V": "mV", "time": "ms", "conductances": "mS/cm^2"}
    assert parse_units({"t": "s", "x": "m"}) == {"t": "s", "x": "m"}
    assert units_for("time in years, populations in thousands of pelts", "t") == "years"
    assert units_for("SI: s, rad, rad/s", "t") is None and units_for("", "x") is None
    # "states as fractions of the population" names no state: no unit read into one
    assert units_for("time in days, states as fractions of the population", "S") is None
    ds = simkit.solve(simkit.models.get("sir"), saveat=3).to_xarray()
    assert ds["t"].attrs["units"] == "days" and ds["S"].attrs["units"] == "1"  # fractions: dimensionless
    assert ds["I"].attrs["units"] == "1"


@pytest.mark.parametrize("name", simkit.models.names())
def test_every_library_model_names_the_unit_of_time_and_of_each_state(name):
    """units_for(model.units, ...) gives a unit for "t", every state (ODE) or component and
    grid axis (PDE), and every parameter: saved results and figure labels never fall back to
    "model units" for a library model."""
    model = simkit.models.get(name)
    if isinstance(model, simkit.PDEModel):
        names = list(model.component_names) + ["x", "y", "z"][:model.grid.ndim]
    else:
        names = list(model.state_names)
    names += list(model.params)
    assert units_for(model.units, "t"), f"{name}: no unit of time in {model.units!r}"
    missing = [n for n in names if not units_for(model.units, n)]
    assert not missing, f"{name}: no unit for {missing} in {model.units!r}"


def test_bad_paths_are_named(tmp_path, monkeypatch):
    sol = simkit.solve(SPRING, (0.0, 1.0), saveat=3)
    with pytest.raises(simkit.InputError, match=r"suffix \.csv: use \.nc"):
        sol.save(tmp_path / "spring.csv")
    with pytest.raises(simkit.InputError, match=r"suffix \(none\)"):
        simkit.load(tmp_path / "spring")
    with pytest.raises(FileNotFoundError, match="missing.nc"):
        simkit.load(tmp_path / "missing.nc")
    xr = pytest.importorskip("xarray")
    with pytest.raises(simkit.InputError, match=r"complex variables \['z'\].*real and imaginary"):
        simkit.io.save(xr.Dataset({"z": ("t", np.array([1.0 + 2.0j]))}), tmp_path / "complex.nc")
    with pytest.raises(simkit.InputTypeError, match="expects an xarray.Dataset.*got Solution"):
        simkit.io.save(sol, tmp_path / "spring.nc")
    (tmp_path / "notes.nc").write_text("my notes\n")  # h5py's bare "file signature not found" named no file
    with pytest.raises(simkit.InputError, match="notes.nc' is not a netcdf file"):
        simkit.load(tmp_path / "notes.nc")
    monkeypatch.setitem(sys.modules, "zarr", None)  # as if zarr were not installed
    with pytest.raises(simkit.DependencyError, match="needs the zarr package.*pip install zarr"):
        sol.save(tmp_path / "spring.zarr")
    assert not (tmp_path / "spring.zarr").exists()


def test_zarr_round_trip_when_installed(tmp_path):
    pytest.importorskip("zarr")
    ens = simkit.ensemble(SPRING, (0.0, 1.0), params={"stiffness": np.array([1.0, 2.0, 3.0, 4.0])}, saveat=4)
    ds = simkit.load(ens.save(tmp_path / "springs.zarr"))
    np.testing.assert_array_equal(ds["x"].values, ens.ys[..., 0])
    np.testing.assert_array_equal(ds["param_stiffness"].values, [1.0, 2.0, 3.0, 4.0])
    assert list(ds["state"].values) == ["x", "v"] and ds.attrs["model"] == "spring"
    assert decode_attrs(ds.attrs)["parameters"] == {}


# -- progress ------------------------------------------------------------------------------------
class _Terminal(text_io.StringIO):
    def isatty(self):
        return True


def _draw(**kwargs):
    with progress.bar(3, "cases", **kwargs) as bar:
        for _ in range(3):
            bar.update(1)


def test_progress_follows_the_argument_then_the_environment(monkeypatch):
    monkeypatch.setenv("SIMKIT_PROGRESS", "0")
    terminal = _Terminal()
    assert not progress.active(None, terminal)
    _draw(file=terminal)
    assert terminal.getvalue() == ""  # off even on a terminal
    forced = text_io.StringIO()
    _draw(progress=True, file=forced)  # the argument wins
    assert "cases: 100%" in forced.getvalue() and "3/3" in forced.getvalue()

    monkeypatch.setenv("SIMKIT_PROGRESS", "1")
    pipe = text_io.StringIO()
    assert progress.active(None, pipe)
    _draw(file=pipe)  # on although the stream is not a terminal
    assert "3/3" in pipe.getvalue()
    silent = text_io.StringIO()
    _draw(progress=False, file=silent)
    assert silent.getvalue() == ""

    monkeypatch.setenv("SIMKIT_PROGRESS", "maybe")
    with pytest.raises(simkit.InputError, match="SIMKIT_PROGRESS='maybe'"):
        progress.active()


def test_automatic_progress_needs_a_terminal(monkeypatch):
    monkeypatch.delenv("SIMKIT_PROGRESS", raising=False)
    pipe = text_io.StringIO()
    assert not progress.active(None, pipe) and progress.active(None, _Terminal())
    _draw(file=pipe)
    assert pipe.getvalue() == ""


def test_ensemble_progress_from_the_environment(monkeypatch, capsys):
    # lockstep chunks: batched for a bar at any size (a refilled queue batches only where each
    # batch keeps 16 members per lane, tests/test_ensemble.py)
    kwargs = dict(params={"stiffness": np.linspace(1.0, 4.0, 512)}, saveat=2, chunk_size=32, refill=False)
    monkeypatch.setenv("SIMKIT_PROGRESS", "0")
    quiet = simkit.ensemble(SPRING, (0.0, 1.0), **kwargs)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("SIMKIT_PROGRESS", "1")
    shown = simkit.ensemble(SPRING, (0.0, 1.0), **kwargs)
    err = capsys.readouterr().err
    assert "ensemble spring" in err and "512/512" in err
    np.testing.assert_array_equal(shown.ys, quiet.ys)


def test_vector_diagnostics_reach_xarray():
    """A diagnostic giving a vector per save (one number per component, a centre of mass)
    broke `to_xarray`; it gets axes of its own."""
    gs = simkit.models.get("gray_scott")
    fields = sk.integrate(gs, dt=1.0, steps=2, diagnostics={"mass": lambda u, s: s.sum(u),
                                                            "peak": lambda u, s: u.max()})
    assert fields.diagnostics["mass"].shape == (2, 2)
    ds = fields.to_xarray()
    assert ds["diagnostic_mass"].dims == ("t", "diagnostic_mass_axis0") and ds["diagnostic_peak"].dims == ("t",)
    np.testing.assert_array_equal(ds["diagnostic_mass"].values, fields.diagnostics["mass"])
    np.testing.assert_array_equal(ds["diagnostic_peak"].values, fields.diagnostics["peak"])


def test_a_state_named_like_another_variable_is_refused_not_replaced():
    """A state named `status`, `y0`, `event_t`, ... was silently replaced by simkit's variable of
    that name (an ensemble's member status codes in place of the state's trajectory)."""
    def named(*names):
        return simkit.ODEModel(rhs=lambda t, y, p: jnp.stack([y[1], -y[0]]), params={}, y0=[1.0, 0.0],
                               state_names=names)

    event = simkit.Event(lambda t, y, p: y[0], terminal=0)
    ens = simkit.ensemble(named("status", "event_t"), (0.0, 3.0), y0=np.array([[1.0, 0.0], [0.5, 0.0]]), saveat=4,
                          events=event)
    with pytest.raises(simkit.InputError, match=r"\['event_t', 'status'\] clash"):
        ens.to_xarray()
    model = named("event_count", "state")
    with pytest.raises(simkit.InputError, match=r"\['event_count', 'state'\] clash"):
        simkit.solve(model, (0.0, 3.0), saveat=4, events=event).to_xarray()
    plain = simkit.solve(model, (0.0, 3.0), saveat=4)  # no events: no clash
    np.testing.assert_array_equal(plain.to_xarray()["state"].values, plain.ys[:, 1])


def test_one_dimensional_grid_attributes_come_back_as_lists(tmp_path):
    fields = sk.integrate(simkit.models.get("heat_1d"), dt=1e-5, steps=2)
    attrs = decode_attrs(simkit.load(fields.save(tmp_path / "h.nc")).attrs)  # were the JSON strings '[128]', ...
    assert attrs["grid_shape"] == list(fields.grid.shape) and attrs["grid_lower"] == list(fields.grid.lower)
    assert attrs["grid_upper"] == list(fields.grid.upper)
