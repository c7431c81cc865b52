"""mkdocs hook: the "How to cite" page's BibTeX entry, written from CITATION.cff at build time.

docs/cite.md holds the marker below; this hook replaces it with a BibTeX ``@software`` entry
made from the repository's CITATION.cff (title, authors, version, licence, repository, date),
so the page and the citation file cannot disagree.
"""

from __future__ import annotations

import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
MARKER = "<!-- bibtex from CITATION.cff -->"


def _author(person: dict) -> str:
    if "name" in person:  # an entity: braces keep BibTeX from splitting it into names
        return "{" + person["name"] + "}"
    return ", ".join(part for part in (person.get("family-names"), person.get("given-names")) if part)


def bibtex(cff: dict) -> str:
    """A BibTeX ``@software`` entry for a parsed CITATION.cff."""
    fields = {
        "title": "{" + cff["title"] + "}",
        "author": " and ".join(_author(p) for p in cff.get("authors", [])),
        "version": cff.get("version"),
        "license": cff.get("license"),
        "url": cff.get("repository-code") or cff.get("url"),
        "doi": cff.get("doi"),
    }
    if cff.get("date-released"):
        fields["year"] = str(cff["date-released"])[:4]
    body = ",\n".join(f"  {key:<8} = {{{value}}}" for key, value in fields.items() if value)
    return "@software{simkit,\n" + body + "\n}"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    return markdown.replace(MARKER, "```bibtex\n" + bibtex(cff) + "\n```")
