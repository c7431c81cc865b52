"""Every ```python block of README.md and docs/ runs as written.

Each page's blocks run in order in one namespace (a page is read top to bottom), in a fresh
working directory, with progress bars off. A block may be skipped only when it cannot run in
one test process (e.g. several `jax.distributed` processes); it is then marked in the page by
an HTML comment right before its fence, ``<!-- skip: the reason -->``, which the site does not
show. Blocks that include an example script (``--8<-- "examples/....py"``, the gallery) are
run by tests/test_examples.py and only checked to exist here.

The many-devices page runs in a fresh process on 2 CPU devices, the default of a 2-core
machine (this suite's conftest simulates 4), where its examples must work as written.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts)
FENCE = re.compile(r"^```python\s*$")
SKIP = re.compile(r"^<!--\s*skip:\s*(\S.*?)\s*-->$")
SNIPPET = re.compile(r'^--8<--\s+"([^"]+)"\s*$')


def blocks(page: pathlib.Path) -> list[tuple[int, str, str | None]]:
    """(line number, code, skip reason or None) of each ```python block of `page`."""
    lines = page.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        if FENCE.match(lines[i].strip()):
            start = i
            prev = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            skip = SKIP.match(prev)
            i += 1
            body = []
            while not lines[i].strip().startswith("```"):
                body.append(lines[i])
                i += 1
            out.append((start + 1, "\n".join(body), skip.group(1) if skip else None))
        i += 1
    return out


def run_page(page: pathlib.Path) -> None:
    namespace: dict = {"__name__": "__docs__"}
    for line, code, skip in blocks(page):
        if skip is not None:
            continue
        snippets = [SNIPPET.match(s.strip()) for s in code.splitlines() if s.strip()]
        if snippets and all(snippets):  # the gallery: run by tests/test_examples.py
            for m in snippets:
                assert (ROOT / m.group(1)).is_file(), f"{page.name}:{line}: {m.group(1)} not found"
            continue
        try:
            exec(compile(code, f"{page.relative_to(ROOT)}:{line}", "exec"), namespace)
        except Exception as error:
            raise AssertionError(f"{page.relative_to(ROOT)}, block at line {line} failed: "
                                 f"{type(error).__name__}: {error}") from error


TWO_DEVICE_PAGES = [ROOT / "docs" / "parallel.md"]  # run by test_many_devices_page_on_two_devices
PAGES_WITH_CODE = [p for p in PAGES if blocks(p) and p not in TWO_DEVICE_PAGES]


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMKIT_PROGRESS", "0")
    run_page(page)


def test_skipped_blocks_say_why():
    """Every skip marker sits right before a ```python fence and gives its reason; only
    multi-process `jax.distributed` examples may be skipped."""
    for page in PAGES:
        reasons = [why for _, _, why in blocks(page) if why]
        assert len(re.findall(r"<!--\s*skip", page.read_text())) == len(reasons), page
        assert all("jax.distributed" in why for why in reasons), (page, reasons)


def test_many_devices_page_on_two_devices(tmp_path):
    """docs/parallel.md as a 2-core machine runs it: 2 CPU devices, a fresh process."""
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "SIMKIT_CPU_DEVICES")}
    env.update(SIMKIT_CPU_DEVICES="2", SIMKIT_PROGRESS="0", MPLBACKEND="agg", SIMKIT_COMPILATION_CACHE="0")
    script = (f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
              "import jax, simkit\n"
              "assert len(jax.devices()) == 2, jax.devices()\n"
              "from test_docs import run_page, ROOT\n"
              "run_page(ROOT / 'docs' / 'parallel.md')\n"
              "print('ok')\n")
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0 and "ok" in run.stdout, run.stderr[-3000:]


def _entry_points():
    import simkit

    from simkit import datasets, reference

    return [simkit.solve, simkit.ensemble, simkit.fit, simkit.Solution.evaluate, simkit.Solution.to_xarray,
            simkit.Solution.save, simkit.SaveAt, simkit.Event, simkit.models.get, simkit.load,
            simkit.EnsembleSolution.t_events.fget, simkit.stencil.ritz_values,
            simkit.solve_ivp, simkit.precision, simkit.configure, datasets.influenza_1978,
            reference.solve_ivp, reference.compare, reference.least_squares]


def test_docstring_examples_run(tmp_path, monkeypatch):
    """The Examples of the main entry points' docstrings run and print what they show."""
    import doctest

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMKIT_PROGRESS", "0")
    finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for obj in _entry_points():
        for test in finder.find(obj, obj.__qualname__, globs={}):
            assert test.examples, obj
            runner.run(test)
    assert runner.failures == 0, f"{runner.failures} docstring example(s) failed (see the output above)"


API_PAGES = sorted((ROOT / "docs" / "api").glob("*.md"))
DIRECTIVE = re.compile(r"^:::\s+(\S+)\s*$")
SECTION = re.compile(r"^(Examples?|Parameters|Attributes)\n-+$", re.M)  # the sections griffe renders as tables


def _documented_objects():
    """(page, dotted name, object) of each ``::: name`` of the API reference."""
    import importlib

    out = []
    for page in API_PAGES:
        for line in page.read_text().splitlines():
            match = DIRECTIVE.match(line.strip())
            if not match:
                continue
            name = match.group(1)
            parts = name.split(".")
            for k in range(len(parts), 0, -1):  # the longest importable module, then attributes
                try:
                    obj = importlib.import_module(".".join(parts[:k]))
                except ImportError:
                    continue
                for part in parts[k:]:
                    obj = getattr(obj, part)
                break
            out.append((page.name, name, obj))
    return out


def test_every_documented_name_has_an_example_and_a_table():
    """Each name of the API reference has an Examples section and, where it takes
    arguments, a table of them (a Parameters or Attributes section, which the reference
    renders as a table)."""
    import inspect

    missing = []
    for page, name, obj in _documented_objects():
        if inspect.ismodule(obj):
            continue  # a module's page section is prose
        doc = inspect.getdoc(obj) or ""
        sections = set(m.group(1) for m in SECTION.finditer(doc))
        try:
            takes = any(p not in ("self", "cls") for p in inspect.signature(obj).parameters)
        except (TypeError, ValueError):
            takes = False
        if not sections & {"Example", "Examples"}:
            missing.append(f"{page}: {name} has no Examples section")
        error_class = inspect.isclass(obj) and issubclass(obj, Exception)  # takes a message only
        if takes and not error_class and not sections & {"Parameters", "Attributes"}:
            missing.append(f"{page}: {name} has no table of its arguments")
    assert not missing, "\n".join(missing)


def test_the_public_api_is_in_the_reference():
    """Every name in the ``__all__`` of simkit and of its public subpackages is documented
    (under any of its paths: ``simkit.Dataset`` is ``simkit.fitting.Dataset``)."""
    import importlib
    import inspect

    documented = {id(obj) for _, _, obj in _documented_objects()}
    missing = []
    for module_name in ("simkit", "simkit.fitting", "simkit.stencil", "simkit.parallel", "simkit.reference",
                        "simkit.sample", "simkit.models", "simkit.kernels", "simkit.inspection", "simkit.petab"):
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if not inspect.ismodule(obj) and id(obj) not in documented:
                missing.append(f"{module_name}.{name}")
    assert not missing, f"not in docs/api: {missing}"
