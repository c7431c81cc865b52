"""mkdocs hook: publish files that live outside docs/ without copying them into the tree.

The validation report (validation/report/report.md and its figures) and the benchmarks README
are written by `simkit validate` and by the benchmark owners; the site shows them as they are
committed. Each is added to mkdocs' file collection under the URI given here, so
`mkdocs build --strict` checks its links and images like any other page.
"""

from __future__ import annotations

import pathlib

from mkdocs.structure.files import File, Files

ROOT = pathlib.Path(__file__).resolve().parents[2]

# source (relative to the repository root) -> URI inside the site
SINGLE = {
    "validation/report/report.md": "validation/report.md",
    "benchmarks/README.md": "benchmarks.md",
}
# every figure of the report, next to the page that shows it
FIGURE_DIRS = {"validation/report": "validation", "benchmarks/results": "results"}
FIGURE_SUFFIXES = (".png", ".gif", ".svg")


def on_files(files: Files, config) -> Files:
    for src, uri in SINGLE.items():
        path = ROOT / src
        if path.exists():
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    for src_dir, uri_dir in FIGURE_DIRS.items():
        for path in sorted((ROOT / src_dir).iterdir()):
            if path.suffix in FIGURE_SUFFIXES:
                files.append(File.generated(config, f"{uri_dir}/{path.name}", abs_src_path=str(path)))
    return files
