"""The ensemble validation cases of the report (the cheaper ones; OU and GBM are in
test_stochastic.py with the same bounds)."""

import numpy as np

from simkit.validation import ensembles


def test_gaussian_decay_statistics_case():
    r = ensembles.gaussian_decay()
    assert r["passed"], r["note"]
    assert r["metric"] <= ensembles.Z_BOUND and r["ens"].n_members == ensembles.N_MEMBERS
    assert "each against exp(-k t)" in r["note"]  # the members' accuracy, not only their statistics


def test_lorenz_fan_case_and_figure(tmp_path):
    r = ensembles.lorenz_fan()
    assert r["passed"], r["note"]
    assert r["ens"].ok.all() and np.isfinite(r["metric"])
    path = tmp_path / "fan.png"
    ensembles.figure_fan(r, str(path))
    assert path.stat().st_size > 10_000
