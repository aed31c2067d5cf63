"""The code cites only documents that ship with the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTSIDE = re.compile(r"DESIGN\.md|DESIGN section|FIELD-NOTES|STYLE\.md")
CITED = re.compile(r"docs/([a-z-]+\.md)")


def _sources() -> list[Path]:
    files = [p for d in ("nexusd", "client", "bench", "scripts") for p in (ROOT / d).rglob("*")
             if p.is_file() and p.suffix in (".py", ".sh", ".toml") and "fixtures" not in p.parts]
    return files + [ROOT / "pyproject.toml", ROOT / "ARCHITECTURE.md", ROOT / "README.md"]  # not tests/: they
    # hold sample repositories whose paths look like docs


def test_no_comment_cites_a_document_outside_the_repository() -> None:
    bad = [f"{p.relative_to(ROOT)}:{n}" for p in _sources()
           for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if OUTSIDE.search(line)]
    assert not bad, f"cite docs/ instead: {bad}"


def test_every_cited_doc_exists() -> None:
    cited = {m for p in _sources() for m in CITED.findall(p.read_text(errors="replace"))}
    assert cited, "the code points at docs/"
    missing = sorted(c for c in cited if not (ROOT / "docs" / c).is_file())
    assert not missing, missing
