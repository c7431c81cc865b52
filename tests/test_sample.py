"""Samplers refuse ranges that would silently give a constant."""

import numpy as np
import pytest

import simkit


@pytest.mark.parametrize("sampler", [simkit.sample.uniform, simkit.sample.latin_hypercube])
def test_low_above_high_is_refused_and_named(sampler, key):
    with pytest.raises(simkit.InputError, match=r"'beta' needs low <= high, got \(low, high\) = \(0.7, 0.4\)"):
        sampler(key, {"alpha": (0.1, 0.2), "beta": (0.7, 0.4)}, 8)


def test_a_normal_mean_above_its_std_is_fine(key):
    z = simkit.sample.normal(key, {"alpha": (0.7, 0.4)}, 8)["alpha"]
    assert z.shape == (8,) and np.all(np.isfinite(z))


@pytest.mark.parametrize("sampler", [simkit.sample.uniform, simkit.sample.normal, simkit.sample.latin_hypercube])
@pytest.mark.parametrize("pair", [(-1e308, 1e308), 1.0, None, ("0", "1"), (np.zeros(2), np.ones(2)), (1j, 1.0),
                                  (True, 2.0)])
def test_ranges_that_are_not_two_real_numbers_or_overflow_are_named(sampler, pair, key):
    # found by probing: a width that overflows gave inf members, a complex mean complex ones,
    # and other shapes Python's bare TypeError/ValueError
    with pytest.raises(simkit.InputError, match="'a'"):
        sampler(key, {"a": pair}, 3)
