"""What a user reads speaks about cosim, not about how it was developed.

Scans the README, every page under docs/, and the docstrings and comments of every Python file
(packages, benchmarks, examples, tests) for development history: who worked on it ("session",
"helper"), when ("2026-11-24"), which change ("issue 14", commit-like hex tokens such as
`bb61ec7`), where (paths of a development machine) and under what load ("load ≈ 15").
Code itself (string literals that are not docstrings, identifiers) is not scanned, so hashes and
paths that a program needs are not flagged; prose that needs one of these words goes in
`ALLOWED` with its reason.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: Left out of the scan: nothing (every reproduction report is scanned; kept so a generated folder can be
#: excluded with its reason).
NOT_YET_SCANNED: tuple[str, ...] = ()

#: The version line `cosim reproduce` writes in a CI-size report ("- version: cosim 0.1.0, commit 9d1069ed0bb6",
#: or "- cosim 0.1.0, commit …" in its runtime section): the commit of the code that produced it, which that
#: report needs; only this line of those files is skipped.
GENERATED_VERSION_LINE = re.compile(r"^- (?:version: )?cosim \S+, commit [0-9a-f]{7,40}(?:\+dirty)?$", re.MULTILINE)
SMALL_REPORT = re.compile(r"^docs/reproductions/[^/]+/small/REPORT\.md$")

#: Python sources scanned (their docstrings and comments).
PY_ROOTS = ("cosim", "simcore", "netmodel", "collectives", "calibration", "policies", "traces", "experiments",
            "cli", "benchmarks", "examples", "tests")

HISTORY = re.compile(
    r"\b(?:sessions?|helper|final tree|sandbox(?:es)?)\b"  # who did it, on which tree
    r"|\bissues?[\s-]*#?\d+"  # which ticket
    r"|(?<![\w/.-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])"  # commit-like hex, with a digit and a letter
    r"|/work/|/root/|/home/\w+/"  # paths of a development machine
    r"|\b202\d-\d\d-\d\d\b"  # dated log entries
    r"|\bload [≈~] ?\d",  # "load ≈ 15": a measurement log's host state
    re.IGNORECASE,
)

#: (file, matched text) pairs that are not development history, each with its reason.
ALLOWED = {
    ("docs/peers.md", "c793c70"): "the commit of the peer simulator's repository that was read and run",
    ("docs/reproductions/pollux/REPORT.md", "c793c70"): "the same peer commit, named in the catalog's source",
}


def _user_files() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    for root in PY_ROOTS:
        files += sorted((REPO / root).rglob("*.py"))
    this = Path(__file__).resolve()  # names the patterns it looks for
    return [f for f in files if f != this and not str(f.relative_to(REPO)).startswith(NOT_YET_SCANNED)]


def _prose(path: Path) -> list[tuple[int, str]]:
    """(line, text) of what a reader sees as prose: the whole of a Markdown file; a Python
    file's comments and docstrings."""
    src = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return [(1, src)]
    out = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(src).readline)
           if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                out.append((node.body[0].lineno, doc))
    return out


def findings() -> list[str]:
    found = []
    for path in _user_files():
        rel = str(path.relative_to(REPO))
        for line, text in _prose(path):
            version_lines = [v.span() for v in GENERATED_VERSION_LINE.finditer(text)] if SMALL_REPORT.match(rel) else []
            for m in HISTORY.finditer(text):
                if (rel, m.group(0)) in ALLOWED or any(a <= m.start() < b for a, b in version_lines):
                    continue
                at = line + text.count("\n", 0, m.start())
                context = text[max(0, m.start() - 40): m.end() + 40].replace("\n", " ")
                found.append(f"{rel}:{at}: {m.group(0)!r} in …{context}…")
    return found


def test_user_facing_text_has_no_development_history():
    found = findings()
    assert not found, "development history in user-facing text:\n" + "\n".join(found[:40])


def test_the_pattern_catches_what_it_is_for():
    """Each kind of history the scan looks for is caught, and ordinary prose is not."""
    caught = ["measured in the ninth session", "a helper ran it", "issue 14's target", "Issue #7",
              "main at 9c14525", "bb61ec7", "/work/main", "2026-11-24 10:14", "at load ≈ 15",
              "on the final tree"]
    for text in caught:
        assert HISTORY.search(text), text
    fine = ["placement helpers", "a decade of traces", "the 0xdeadbeef marker", "sha256 digests",
            "numba's cache in ~/.cache/cosim", "1000000 jobs", "the 1-minute load average",
            "decisions per round", "philly_jobs.csv"]
    for text in fine:
        assert not HISTORY.search(text), text


def test_only_a_ci_report_version_line_is_skipped():
    """The version line is skipped in a CI-size report only, and only as `cosim reproduce` writes it."""
    line = "- cosim 0.1.0, commit 9d1069ed0bb6"
    assert GENERATED_VERSION_LINE.search(f"## Runtime and version\n\n{line}\n")
    assert GENERATED_VERSION_LINE.search(f"{line}+dirty")
    assert not GENERATED_VERSION_LINE.search(f"the run at {line}, see above")
    assert not GENERATED_VERSION_LINE.search("- cosim 0.1.0, commit 9d1069ed0bb6 and a note")
    assert GENERATED_VERSION_LINE.search("- version: cosim 0.1.0, commit 9d1069ed0bb6")
    assert SMALL_REPORT.match("docs/reproductions/ones/small/REPORT.md")
    assert not SMALL_REPORT.match("docs/reproductions/ones/REPORT.md")
    assert not SMALL_REPORT.match("docs/reproductions/ones/small/notes.md")


def test_the_allowlist_is_still_needed():
    """An allowed entry whose text is gone is removed, so the list stays small and true."""
    for (rel, text), _reason in ALLOWED.items():
        assert text in (REPO / rel).read_text(encoding="utf-8"), (rel, text)
