"""The project speaks to its users about what the code does, not about how it was made: no
work-log words in any tracked file's text or name (the package, its comments, tests, docs,
benchmarks, validation, examples, the changelog).

Caught: "session" (a work session: "session 36", "Session 36's", "session-28",
``*_session37.json``), an internal issue number ("issue 13", "issues 12, 13", "issue #5"),
"A/B", and "commit <hash>" as narrative. Write the measured fact and the script that
reproduces it instead. A reference to an upstream project's tracker is a link
(``https://github.com/<owner>/<repo>/issues/185``), which this test does not flag.
"""

import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

PROCESS_WORDS = re.compile(
    r"session"                          # work sessions, in prose and in file names
    r"|\bissues?\s*#?\s*\d"             # internal issue numbers: "issue 13", "issues 12, 13", "issue #5"
    r"|\bA/B\b"                         # A/B diaries (case-sensitive: "a/b" is a division)
    r"|\bcommit\s+[0-9a-f]{7,40}\b",    # a commit hash as narrative
    re.IGNORECASE,
)

# where the words are legitimate, each with its reason (keep these lists short)
ALLOWED_FILES: dict[str, str] = {
    "tests/test_wording.py": "names the words it looks for, in its description, pattern and examples",
    "tests/data/petab/Blasi_CellSystems2016/model_Blasi_CellSystems2016.xml":
        "a copy of the collection's file, kept unchanged; its notes cite the journal's volume and number",
}
ALLOWED_PHRASES: dict[str, str] = {
    "test session starts": "pytest's own banner, in a committed log of a test run",
}

BINARY_SUFFIXES = {".png", ".gif", ".jpg", ".jpeg", ".svg", ".npz", ".nc", ".zarr", ".pdf", ".ico"}


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [line for line in out.splitlines() if line]


def findings(path: str, text: str) -> list[str]:
    """``path:line: text`` for every line of ``text`` holding a process word."""
    if path in ALLOWED_FILES:
        return []
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for phrase in ALLOWED_PHRASES:
            line = line.replace(phrase, "")
        for match in PROCESS_WORDS.finditer(line):
            if match.group(0).lower() == "a/b" and match.group(0) != "A/B":
                continue  # "a/b" as arithmetic
            found.append(f"{path}:{number}: {line.strip()[:120]}")
            break
    return found


def test_no_process_words_in_file_names():
    names = [p for p in tracked_files() if PROCESS_WORDS.search(pathlib.PurePosixPath(p).name)]
    assert names == [], "rename by what the file holds or measures:\n" + "\n".join(names)


def test_no_process_words_in_tracked_text():
    found = []
    for path in tracked_files():
        if pathlib.PurePosixPath(path).suffix.lower() in BINARY_SUFFIXES:
            continue
        file = ROOT / path
        if not file.is_file():
            continue  # deleted in the working tree, not yet committed
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += findings(path, text)
    assert found == [], f"{len(found)} process words; state the fact instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    ["measured in session 35", "Session 36's atanh series", "the session-28 helper", "kernels_session37.json",
     "issue 13, item 3", "issues 12, 13", "(issue #5)", "the A/B's two numbers", "(commit 3750507)"],
)
def test_the_pattern_catches(line):
    assert findings("x.md", line)


@pytest.mark.parametrize(
    "line",
    ["https://github.com/patrick-kidger/lineax/issues/185", "a/b as a ratio", "the commit that holds it",
     "an issue with the step size", "===== test session starts ====="],
)
def test_the_pattern_lets_through(line):
    assert not findings("x.md", line)
