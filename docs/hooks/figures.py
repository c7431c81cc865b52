"""mkdocs hook: the guides' figures, made by running the guides' own code at build time.

A ```python block preceded by the marker ``<!-- figure: what it shows -->`` draws a figure. The
hook runs the page's python blocks in order, in one namespace, as tests/test_docs.py runs them,
up to the last marked block. After a marked block it saves matplotlib's current figure as
``figures/<page>-<n>.png`` and shows it below the block, with the marker's text as its caption.
Open figures are closed before every block, so a figure comes from its own block. A block that
fails, or a marked block that draws nothing, fails the build.

Pictures are cached by a digest of the code that made them and of simkit's source, in
``$SIMKIT_DOCS_CACHE`` (default: a folder under the system's temporary directory), so a
rebuild that changes neither runs nothing again.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pathlib
import re
import tempfile

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```python\s*$")
MARKER = re.compile(r"^<!--\s*figure:\s*(\S.*?)\s*-->$")
SKIP = re.compile(r"^<!--\s*skip:")
SNIPPET = re.compile(r'^--8<--\s+"([^"]+)"\s*$')
DPI = 80

# page (path relative to docs/) -> list of (marker line number, image URI, caption)
_FIGURES: dict[str, list[tuple[int, str, str]]] = {}


def _blocks(text: str) -> list[tuple[int, str, str | None, bool]]:
    """(marker or fence line index, code, figure caption or None, skipped) of each python block."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        if FENCE.match(lines[i].strip()):
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            prev = lines[j].strip() if j >= 0 else ""
            marker = MARKER.match(prev)
            i += 1
            body = []
            while not lines[i].strip().startswith("```"):
                body.append(lines[i])
                i += 1
            out.append((i, "\n".join(body), marker.group(1) if marker else None, bool(SKIP.match(prev))))
        i += 1
    return out


def _source_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted((ROOT / "simkit").rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _run(page: str, blocks: list[tuple[int, str, str | None, bool]]) -> list[bytes]:
    """Run a page's blocks up to its last figure; the PNG of each figure, in order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    last = max(k for k, block in enumerate(blocks) if block[2] is not None)
    namespace: dict = {"__name__": "__docs__"}
    pictures = []
    old_cwd = os.getcwd()
    old_progress = os.environ.get("SIMKIT_PROGRESS")
    os.environ["SIMKIT_PROGRESS"] = "0"
    try:
        with tempfile.TemporaryDirectory() as work:
            os.chdir(work)
            for line, code, caption, skipped in blocks[: last + 1]:
                lines = [s.strip() for s in code.splitlines() if s.strip()]
                if skipped or (lines and all(SNIPPET.match(s) for s in lines)):
                    continue
                plt.close("all")
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        exec(compile(code, f"docs/{page}:{line}", "exec"), namespace)
                except Exception as error:
                    raise PluginError(f"docs/{page}: the block ending at line {line + 1} failed: "
                                      f"{type(error).__name__}: {error}") from error
                if caption is None:
                    continue
                if not plt.get_fignums():
                    raise PluginError(f"docs/{page}: the block marked 'figure: {caption}' draws no figure")
                buffer = io.BytesIO()
                figure = plt.gcf()
                figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
                pictures.append(buffer.getvalue())
            plt.close("all")
    finally:
        os.chdir(old_cwd)
        if old_progress is None:
            os.environ.pop("SIMKIT_PROGRESS", None)
        else:
            os.environ["SIMKIT_PROGRESS"] = old_progress
    return pictures


def on_files(files: Files, config) -> Files:
    _FIGURES.clear()
    cache = pathlib.Path(os.environ.get("SIMKIT_DOCS_CACHE", pathlib.Path(tempfile.gettempdir()) / "simkit-docs"))
    source = None
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text()
        blocks = _blocks(text)
        if not any(block[2] for block in blocks):
            continue
        if source is None:
            source = _source_digest()
        last = max(k for k, block in enumerate(blocks) if block[2] is not None)
        key = hashlib.sha256((source + "\0".join(b[1] for b in blocks[: last + 1])).encode()).hexdigest()[:20]
        captions = [(line, caption) for line, _, caption, _ in blocks if caption is not None]
        cached = [cache / f"{path.stem}-{key}-{n}.png" for n in range(1, len(captions) + 1)]
        if all(p.exists() for p in cached):
            pictures = [p.read_bytes() for p in cached]
        else:
            pictures = _run(path.name, blocks)
            with contextlib.suppress(OSError):
                cache.mkdir(parents=True, exist_ok=True)
                for old in cache.glob(f"{path.stem}-*.png"):  # this page's pictures from older code
                    old.unlink()
                for p, png in zip(cached, pictures):
                    p.write_bytes(png)
        entries = []
        for n, ((line, caption), png) in enumerate(zip(captions, pictures), start=1):
            uri = f"figures/{path.stem}-{n}.png"
            files.append(File.generated(config, uri, content=png))
            entries.append((line, uri, caption))
        _FIGURES[path.name] = entries
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    entries = _FIGURES.get(page.file.src_uri)
    if not entries:
        return markdown
    lines = markdown.splitlines()
    for line, uri, caption in reversed(entries):  # `line` is the closing fence's index
        lines.insert(line + 1, f"\n<figure markdown=\"span\">\n![{caption}]({uri})\n"
                               f"<figcaption>{caption}</figcaption>\n</figure>\n")
    return "\n".join(lines)
