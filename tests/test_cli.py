import numpy as np

from simkit.cli import main


def test_models_lists_library(capsys):
    assert main(["models", "-v"]) == 0
    out = capsys.readouterr().out
    assert "lorenz" in out and "robertson" in out and "stiff" in out and "Lorenz (1963)" in out


def test_run_writes_plot_and_csv(tmp_path, capsys):
    png, csv = tmp_path / "l.png", tmp_path / "l.csv"
    rc = main(["run", "lotka_volterra", "--set", "alpha=0.6", "--t1", "5", "--saveat", "11",
               "--plot", str(png), "--csv", str(csv)])
    assert rc == 0 and png.stat().st_size > 1000
    data = np.loadtxt(csv, delimiter=",", skiprows=1)
    assert data.shape == (11, 3) and data[-1, 0] == 5.0
    assert "final state" in capsys.readouterr().out


def test_run_reports_bad_parameter(capsys):
    assert main(["run", "lorenz", "--set", "foo=1"]) == 2
    assert "no parameter(s) ['foo']" in capsys.readouterr().err
