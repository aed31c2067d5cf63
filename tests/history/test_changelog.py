"""Changelog bullets: one section each, dated by the commit that added the bullet (git blame of a real repository),
not by the file's modification time."""

from __future__ import annotations

import os
from pathlib import Path

from nexusd.history import changelog, ingest
from nexusd.history.redact import DenyList
from tests.helpers import git

T1 = 1_500_000_000
T2 = 1_700_000_000

V1 = """# Changes

## Version 1.0

Released 2017-07-14

- Add the retry budget. #12
- Fix the flaky cache test
  that waited on the clock. #13
"""


def commit_at(repo: Path, when: int, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    env = {**os.environ, "GIT_COMMITTER_DATE": f"@{when}"}
    import subprocess

    subprocess.run(["git", "commit", "-q", "-m", "changes", f"--date=@{when}"], cwd=repo, env=env, check=True)


def test_bullets_are_split_and_dated_by_the_commit_that_added_them(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit_at(repo, T1, {"CHANGES.md": V1, "README.md": "# Readme\n\n- one\n- two\n"})
    v2 = V1.replace("## Version 1.0", "## Version 1.1\n\nUnreleased\n\n- Drop Python 3.8. #20\n\n## Version 1.0")
    commit_at(repo, T2, {"CHANGES.md": v2})
    (repo / "CHANGES.md").write_text(v2.replace("- Drop Python 3.8. #20", "- Drop Python 3.8. #20\n- Not committed yet."))
    sections, _ = ingest.plan_docs(str(repo), DenyList())
    changes = [(s.heading_path[-1], s.text, s.start_line, when) for s, when in sections if s.path == "CHANGES.md"]
    bullets = {text.split("\n")[0]: (heading, line, when) for heading, text, line, when in changes}
    assert bullets["- Drop Python 3.8. #20"][:2] == ("Version 1.1", 7)
    assert bullets["- Drop Python 3.8. #20"][2] == T2
    assert bullets["- Add the retry budget. #12"][2] == T1
    assert bullets["- Fix the flaky cache test"][2] == T1  # a bullet keeps its continuation lines
    assert any("that waited on the clock" in text for _, text, _, _ in changes)
    assert bullets["- Not committed yet."][2] > T2  # the working tree's own line: dated now
    assert bullets["## Version 1.1"][2] == T2  # the heading and text before the first bullet: a section of its own
    # A document that is no changelog keeps its sections whole, dated by its modification time.
    readme = [(s.text, when) for s, when in sections if s.path == "README.md"]
    assert len(readme) == 1 and readme[0][1] == os.stat(repo / "README.md").st_mtime


def test_split_needs_two_bullets_and_keeps_nested_ones_inside() -> None:
    from nexusd.history.facts import DocSectionFacts

    one = DocSectionFacts("CHANGES.md", ["V"], 2, 10, "- only one bullet\n  continued", 0)
    assert changelog.split_bullets(one) == [one]
    nested = DocSectionFacts("CHANGES.md", ["V"], 2, 10, "- a\n  - a.1\n  - a.2\n- b", 0)
    parts = changelog.split_bullets(nested)
    assert [(p.start_line, p.text) for p in parts] == [(10, "- a\n  - a.1\n  - a.2"), (13, "- b")]
    assert changelog.is_changelog("docs/changelog.rst") and changelog.is_changelog("HISTORY.md")
    assert not changelog.is_changelog("docs/usage.md")


def test_a_file_git_cannot_blame_keeps_its_mtime(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "CHANGELOG.md").write_text("# C\n\n- a\n- b\n")
    sections, _ = ingest.plan_docs(str(root), DenyList())
    mtime = os.stat(root / "CHANGELOG.md").st_mtime
    assert [(s.text, when) for s, when in sections] == [("# C", mtime), ("- a", mtime), ("- b", mtime)]
