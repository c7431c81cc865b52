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


def test_version(capsys):
    import pytest

    import simkit

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"simkit {simkit.__version__}"


def _one_line_error(capsys, fragment):
    err = capsys.readouterr().err
    assert err.startswith("simkit: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert fragment in err, err


def test_an_unwritable_out_folder_is_one_line_before_any_work(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = blocker / "report"  # a folder cannot be created under a file, whoever runs the test
    assert main(["validate", "--quick", "--out", str(out)]) == 2
    _one_line_error(capsys, f"--out {out}")


def test_unwritable_plot_and_csv_paths_are_one_line_before_solving(tmp_path, capsys):
    missing = tmp_path / "no-such-folder" / "l.csv"
    assert main(["run", "lorenz", "--csv", str(missing)]) == 2
    _one_line_error(capsys, f"--csv {missing}")
    assert main(["run", "lorenz", "--plot", str(tmp_path)]) == 2
    _one_line_error(capsys, f"--plot {tmp_path}")


def test_bad_set_and_pde_model_are_one_line(capsys):
    assert main(["run", "lorenz", "--set", "rho"]) == 2
    _one_line_error(capsys, "--set expects name=value, got 'rho'")
    assert main(["run", "heat_2d"]) == 2
    _one_line_error(capsys, "'heat_2d' is a PDE model")


def test_validation_does_not_import_the_command():
    """Imports flow one way: simkit.cli -> simkit.validation."""
    import ast
    import pathlib

    import simkit.validation

    for path in pathlib.Path(simkit.validation.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any(n == "cli" or n.endswith(".cli") for n in names), (path.name, names)
