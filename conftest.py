"""Docstring examples (``pytest --doctest-modules simkit/...``) run in a temporary working
directory, so the files they save (``sol.save("lorenz.nc")``) do not land in the checkout.

Imports nothing but pytest: tests/conftest.py configures JAX before anything imports it.
"""

import pytest


@pytest.fixture(autouse=True)
def _doctests_in_a_temporary_directory(request):
    if isinstance(request.node, pytest.DoctestItem):
        request.getfixturevalue("monkeypatch").chdir(request.getfixturevalue("tmp_path"))
    yield
