"""The docs build's own hooks: the examples' notebooks (docs/hooks/notebooks.py) and the guides'
figure markers (docs/hooks/figures.py). Cheap: nothing here runs a solve; the marked blocks run
in tests/test_docs.py and in `mkdocs build --strict`."""

from __future__ import annotations

import importlib.util
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _hook(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", ROOT / "docs" / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_example_becomes_a_notebook_that_runs_the_script_inline():
    notebooks = _hook("notebooks")
    scripts = sorted((ROOT / "examples").glob("*.py"))
    assert scripts
    for script in scripts:
        nb = notebooks.notebook(script.read_text())
        assert nb["nbformat"] == 4 and nb["cells"][0]["cell_type"] == "markdown", script.name
        assert nb["cells"][0]["source"][0].startswith("# "), script.name
        code = "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        compile(code, script.name, "exec")  # the cells together are valid Python
        assert 'matplotlib.use("Agg")' not in code, script.name  # figures show inline
        assert "sys.argv" not in code, script.name  # Jupyter's argv is the kernel's, not a file name
        # every other line of the script's code is in the notebook, in order
        source = script.read_text()
        after_doc = source[source.index('"""', 3) + 3:]
        expected = [line.replace("  # noqa: E402", "") for line in after_doc.splitlines()
                    if line.strip() and 'matplotlib.use("Agg")' not in line]
        lines = [line for line in code.splitlines() if line.strip()]
        assert len(lines) == len(expected), script.name
        for got, want in zip(lines, expected):
            assert got == want or ("sys.argv" in want and re.fullmatch(r'out = "\w+\.png"', got)), (got, want)


def test_figure_markers_sit_on_python_blocks(tmp_path):
    figures = _hook("figures")
    marked = 0
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text()
        blocks = figures._blocks(text)
        found = [caption for _, _, caption, _ in blocks if caption]
        assert len(found) == len(re.findall(r"<!--\s*figure:", text)), f"{page.name}: a marker not before ```python"
        marked += len(found)
    assert marked >= 7  # each guide draws at least one figure
    for guide in ("solving", "ensembles", "stencils", "fitting", "data", "parallel", "getting-started"):
        assert "<!-- figure:" in (ROOT / "docs" / f"{guide}.md").read_text(), guide
