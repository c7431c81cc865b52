import os

import numpy as np
import pytest

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


def test_t0_alone_moves_the_start(tmp_path, capsys):
    csv = tmp_path / "l.csv"
    assert main(["run", "lotka_volterra", "--t0", "2", "--saveat", "3", "--csv", str(csv)]) == 0
    import simkit

    t1 = simkit.models.get("lotka_volterra").t_span[1]
    np.testing.assert_allclose(np.loadtxt(csv, delimiter=",", skiprows=1)[:, 0], [2.0, (2.0 + t1) / 2, t1])


def test_a_plot_format_matplotlib_cannot_write_is_one_line_before_solving(tmp_path, capsys):
    path = tmp_path / "l.txt"
    assert main(["run", "lorenz", "--plot", str(path)]) == 2
    _one_line_error(capsys, f"--plot {path}: matplotlib cannot write .txt files; use one of")
    assert not path.exists()


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


# -- where the report goes; the distribution's name, licence and citation -------------------

def _fake_run(calls):
    def run(out_dir=None, quick=False, verbose=True, resume=False):
        import os

        calls.append((out_dir, quick) + (("resume",) if resume else ()))
        with open(os.path.join(out_dir, "report.md"), "w") as fh:
            fh.write("# stub\n")
        return {"passed": True}
    return run


def test_validate_resume_is_passed_on_and_needs_out_for_a_quick_run(tmp_path, monkeypatch, capsys):
    import simkit.validation

    calls = []
    monkeypatch.setattr(simkit.validation, "run", _fake_run(calls))
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "--quick", "--resume"]) == 2
    assert "give --out" in capsys.readouterr().err
    assert main(["validate", "--quick", "--resume", "--out", "mine"]) == 0
    assert calls == [("mine", True, "resume")]
    from simkit.errors import InputError
    from simkit.validation.report import FULL_REPORT_DIR, default_out_dir  # (the check `run` makes too)

    with pytest.raises(InputError, match="give --out"):
        default_out_dir(True, resume=True)
    assert default_out_dir(False, resume=True) == FULL_REPORT_DIR


def test_quick_validate_without_out_writes_to_a_new_folder(tmp_path, monkeypatch):
    """The quick run never writes into validation/report (a checkout's committed report)."""
    import simkit.validation

    calls = []
    monkeypatch.setattr(simkit.validation, "run", _fake_run(calls))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "validation" / "report").mkdir(parents=True)
    assert main(["validate", "--quick"]) == 0
    assert main(["validate", "--quick"]) == 0  # a second run in the same second: another folder
    (first, quick1), (second, quick2) = calls
    assert quick1 and quick2 and first != second
    for out in (first, second):
        assert os.path.basename(out).startswith("simkit-validation-quick-")
        assert (tmp_path / out / "report.md").is_file()
    assert list((tmp_path / "validation" / "report").iterdir()) == []


def test_out_always_wins_and_the_full_run_keeps_validation_report(tmp_path, monkeypatch):
    import simkit.validation

    calls = []
    monkeypatch.setattr(simkit.validation, "run", _fake_run(calls))
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "--quick", "--out", "mine"]) == 0
    assert main(["validate"]) == 0
    assert calls == [("mine", True), (os.path.join("validation", "report"), False)]
    assert (tmp_path / "mine" / "report.md").is_file()
    assert (tmp_path / "validation" / "report" / "report.md").is_file()


def test_default_out_dir_is_timestamped_and_fresh(tmp_path, monkeypatch):
    import time

    from simkit.validation.report import default_out_dir

    monkeypatch.chdir(tmp_path)
    now = time.mktime((2026, 3, 4, 5, 6, 7, 0, 0, -1))
    assert default_out_dir(False, now) == os.path.join("validation", "report")
    assert default_out_dir(True, now) == "simkit-validation-quick-20260304-050607"
    (tmp_path / "simkit-validation-quick-20260304-050607").mkdir()
    assert default_out_dir(True, now) == "simkit-validation-quick-20260304-050607-2"


def test_distribution_name_licence_and_citation():
    """Installed (editable or not) as simkit-jax: the index's "simkit" is another project."""
    import importlib.metadata
    import pathlib
    import re

    import simkit

    meta = importlib.metadata.metadata("simkit-jax")
    assert meta["Name"] == "simkit-jax" and meta["Version"] == simkit.__version__
    root = pathlib.Path(__file__).resolve().parents[1]
    assert "MIT License" in (root / "LICENSE").read_text()
    cff = (root / "CITATION.cff").read_text()
    assert re.search(r'^cff-version: 1\.2\.0$', cff, re.M)
    assert re.search(r'^version: "?([^"\n]+)"?$', cff, re.M).group(1) == simkit.__version__


def test_run_prints_significant_digits_and_the_plot_file_written(tmp_path, capsys):
    """Robertson's y2 = 8.3e-12 printed as 0.0 (rounded to 8 decimals); `--plot figure` said
    `wrote figure` where matplotlib wrote figure.png."""
    rc = main(["run", "robertson", "--t1", "1e9", "--saveat", "3", "--plot", str(tmp_path / "figure")])
    out = capsys.readouterr().out
    assert rc == 0 and (tmp_path / "figure.png").exists() and f"wrote {tmp_path / 'figure.png'}" in out
    final = eval(out.split("final state:")[1].splitlines()[0])  # a dict of floats
    assert 1e-12 < final["y2"] < 1e-10


def test_every_option_of_every_command_has_a_help_string():
    """`simkit <command> --help` documents every argument (argparse prints no line for one
    without help)."""
    import argparse

    import pytest

    parsers = {}

    class Capture(Exception):
        pass

    def capture(self, *args, **kwargs):  # the parser main() builds, before it parses
        parsers["main"] = self
        raise Capture

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(argparse.ArgumentParser, "parse_args", capture)
        with pytest.raises(Capture):
            main(["models"])
    commands = next(a for a in parsers["main"]._actions if isinstance(a, argparse._SubParsersAction))
    assert set(commands.choices) >= {"models", "run", "validate"}
    for name, parser in commands.choices.items():
        assert parser.description, name
        for action in parser._actions:
            assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)


def test_validation_parts_are_stored_whole_and_dropped_when_done_or_stale(tmp_path):
    from simkit.validation.parts import FOLDER, Parts

    calls = []

    def compute(value):
        def f():
            calls.append(value)
            return value
        return f

    parts = Parts(str(tmp_path), {"simkit": "1"}, resume=False)
    assert parts.get("a", compute({"x": [1.0, 2.0]})) == {"x": [1.0, 2.0]}
    assert parts.get("unpicklable", compute(lambda: 0))() == 0  # computed, not stored
    assert sorted(os.listdir(tmp_path / FOLDER)) == ["a.pkl", "fingerprint.json"]  # no .tmp left
    again = Parts(str(tmp_path), {"simkit": "1"}, resume=True)
    assert again.get("a", compute("recomputed")) == {"x": [1.0, 2.0]} and again.resumed == ["a"]
    assert Parts(str(tmp_path), {"simkit": "1"}, resume=False).get("a", compute("fresh")) == "fresh"  # not resumed
    assert Parts(str(tmp_path), {"simkit": "2"}, resume=True).get("a", compute("other")) == "other"  # stale
    assert len(calls) == 4
    again.finish()
    assert not (tmp_path / FOLDER).exists()


def test_the_report_names_the_devices_and_precision_it_ran_on():
    import platform

    import jax

    from simkit import __version__
    from simkit.validation.report import environment

    line = environment()
    n = len(jax.devices())
    assert line.startswith(f"simkit {__version__}, JAX {jax.__version__}, Python {platform.python_version()}")
    assert f"; {n} {jax.devices()[0].device_kind} device" in line
    assert f"({jax.default_backend()}), {'float64' if jax.config.jax_enable_x64 else 'float32'}" in line
