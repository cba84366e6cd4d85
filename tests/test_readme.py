"""The README stays a five-minute read whose links resolve, with the generated results block in place."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_is_short():
    assert len(README.splitlines()) <= 200


def test_readme_has_one_reproductions_block():
    """The reproduction table is generated between these two lines; each appears once, in order."""
    begin, end = "<!-- reproductions:begin -->", "<!-- reproductions:end -->"
    lines = README.splitlines()
    assert lines.count(begin) == 1 and lines.count(end) == 1
    assert lines.index(begin) < lines.index(end)


def test_readme_links_resolve():
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert links
    missing = [link for link in links if not link.startswith("http") and not (REPO / link).exists()]
    assert missing == []
