"""mkdocs hook: each script in examples/ as a Jupyter notebook to download, made at build time.

``examples/<name>.py`` becomes ``examples/<name>.ipynb`` on the site: its docstring a markdown
cell, then one code cell per paragraph of top-level code (paragraphs are separated by a blank
line; an indented line continues its paragraph; the imports make one cell). In the notebook the figure shows inline: the
line choosing matplotlib's file-only backend is left out, and the output file is the script's
default name, not a command-line argument. Written with the standard library (nbformat 4 is
JSON), so the docs need no converter.
"""

from __future__ import annotations

import ast
import json
import pathlib
import re

from mkdocs.structure.files import File, Files

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARGV_OUT = re.compile(r"sys\.argv\[1\] if len\(sys\.argv\) > 1 else (\"[^\"]+\")")


def _cell(kind: str, text: str) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": text.strip("\n").splitlines(keepends=True)}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _imports(code: str) -> bool:
    return all(line.startswith(("import ", "from ")) for line in code.splitlines())


def notebook(script: str) -> dict:
    """The nbformat-4 notebook of an example script's text."""
    module = ast.parse(script)
    doc = ast.get_docstring(module) or ""
    lines = script.splitlines()
    body = lines[module.body[0].end_lineno:] if doc else lines
    code = []
    for line in body:
        if line.strip() == 'matplotlib.use("Agg")':
            continue
        code.append(ARGV_OUT.sub(r"\1", line).replace("  # noqa: E402", ""))
    paragraphs, current = [], []
    for line in code:
        if not line.strip():
            if current:
                paragraphs.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        paragraphs.append("\n".join(current))
    # keep a paragraph that an indented line continues (a blank line inside a function) together
    # and the imports in one cell
    cells: list[str] = []
    for paragraph in paragraphs:
        if cells and paragraph[:1] in (" ", "\t", ")", "]", "}"):
            cells[-1] += "\n\n" + paragraph
        elif cells and _imports(cells[-1]) and _imports(paragraph):
            cells[-1] += "\n" + paragraph
        else:
            cells.append(paragraph)
    doc = "\n".join(line for line in doc.splitlines() if not line.strip().startswith("python examples/"))
    title, _, rest = doc.partition("\n")
    text = f"# {title}\n\n{rest.strip()}" if rest.strip() else f"# {title}"
    return {
        "cells": [dict(cell, id=f"cell-{k}")  # nbformat 4.5: every cell has an id
                  for k, cell in enumerate([_cell("markdown", text)] + [_cell("code", c) for c in cells])],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def on_files(files: Files, config) -> Files:
    for path in sorted((ROOT / "examples").glob("*.py")):
        content = json.dumps(notebook(path.read_text()), indent=1) + "\n"
        files.append(File.generated(config, f"examples/{path.stem}.ipynb", content=content))
    return files
