"""Commit reading against real git repositories: changes, hunks, cursor, rebase, merges, skips, redaction."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from nexusd.history.git import (
    FILE_PATCH_BYTES,
    GitError,
    classify_message,
    hunk_symbols,
    read_commits,
)
from tests.history.conftest import GitRunner

Repo = tuple[Path, GitRunner]


def commit_all(repo: Repo, message: str) -> str:
    root, git = repo
    git("add", "-A")
    git("commit", "-q", "-m", message)
    return git("rev-parse", "HEAD")


def test_reads_changes_hunks_and_skips(git_repo: Repo) -> None:
    root, git = git_repo
    (root / "app.py").write_text("def a():\n    return 1\n\n\ndef b():\n    return 2\n")
    (root / "notes.md").write_text("# Notes\n")
    first = commit_all(git_repo, "feat: add app")
    (root / "app.py").write_text("def a():\n    return 10\n\n\ndef b():\n    return 2\n")
    (root / "package-lock.json").write_text('{"lockfileVersion": 3}\n')
    (root / "logo.bin").write_bytes(b"\x00\x01\x02binary")
    (root / "web").mkdir()
    (root / "web" / "app.min.js").write_text("var a=1;\n")
    git("mv", "notes.md", "NOTES.md")
    second = commit_all(git_repo, "fix(app): wrong constant\n\nThe value was off by ten.")
    (root / "app.py").write_text("def a():\n    return 10\n")
    third = commit_all(git_repo, "refactor: drop b")

    commits = read_commits(root, None)
    assert [c.sha for c in commits] == [third, second, first]  # newest first
    assert commits.head == third and not commits.rewritten and not commits.truncated
    c2 = commits[1]
    assert c2.parents == [first] and not c2.is_merge
    assert c2.author_name == "Ada" and c2.author_email == "ada@example.com" and c2.time > 0
    assert c2.message == "fix(app): wrong constant\n\nThe value was off by ten."
    assert (
        c2.kind == "fix" and c2.signal == 1.0 and commits[2].kind == "feat" and commits[0].kind == "refactor"
    )
    by_path = {ch.path: ch for ch in c2.changes}
    app = by_path["app.py"]
    assert (app.status, app.additions, app.deletions) == ("M", 1, 1)
    assert app.hunks == [(2, 1, 2, 1)]
    assert "+    return 10" in app.patch and "-    return 1" in app.patch and app.skipped is None
    assert by_path["package-lock.json"].skipped == "lockfile" and by_path["package-lock.json"].patch == ""
    assert by_path["package-lock.json"].status == "A"
    assert by_path["logo.bin"].skipped == "binary"
    assert by_path["web/app.min.js"].skipped == "generated"
    renamed = by_path["NOTES.md"]
    assert renamed.status == "R" and renamed.old_path == "notes.md"
    dropped = commits[0].changes[0]
    assert dropped.hunks == [(2, 0, 3, 4)] and dropped.deletions == 4 and dropped.additions == 0
    assert len({ch.id for c in commits for ch in c.changes}) == sum(len(c.changes) for c in commits)


def test_cursor_reads_only_new_commits(git_repo: Repo) -> None:
    root, _ = git_repo
    shas = []
    for i in range(4):
        (root / "f.txt").write_text(f"v{i}\n")
        shas.append(commit_all(git_repo, f"chore: step {i}"))
    newer = read_commits(root, shas[1])
    assert [c.sha for c in newer] == [shas[3], shas[2]] and not newer.rewritten
    assert list(read_commits(root, shas[3])) == []
    limited = read_commits(root, None, limit=2)
    assert len(limited) == 2 and limited.truncated


def test_rebase_is_detected(git_repo: Repo) -> None:
    root, git = git_repo
    (root / "f.txt").write_text("base\n")
    base = commit_all(git_repo, "base")
    (root / "f.txt").write_text("old tip\n")
    old_tip = commit_all(git_repo, "old tip")
    git("reset", "-q", "--hard", base)
    (root / "f.txt").write_text("new tip\n")
    new_tip = commit_all(git_repo, "new tip")
    result = read_commits(root, old_tip)
    assert result.rewritten
    assert [c.sha for c in result] == [new_tip, base]
    assert read_commits(root, "0" * 40).rewritten  # an unknown cursor is treated the same way


def test_merge_commit_has_no_patch(git_repo: Repo) -> None:
    root, git = git_repo
    (root / "a.txt").write_text("a\n")
    commit_all(git_repo, "base")
    git("checkout", "-q", "-b", "topic")
    (root / "b.txt").write_text("b\n")
    commit_all(git_repo, "topic work")
    git("checkout", "-q", "main")
    (root / "c.txt").write_text("c\n")
    commit_all(git_repo, "main work")
    git("merge", "-q", "--no-ff", "-m", "Merge branch 'topic'", "topic")
    merge = read_commits(root, None)[0]
    assert merge.is_merge and len(merge.parents) == 2
    assert merge.changes == [] and merge.kind == "merge" and merge.signal == 0.5


def test_patches_and_messages_are_redacted_and_bounded(git_repo: Repo) -> None:
    root, _ = git_repo
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    (root / "settings.py").write_text(f'GITHUB = "{token}"\n')
    (root / "big.py").write_text("".join(f"line_{i} = {i}\n" for i in range(2000)))
    commit_all(git_repo, f"chore: oops, committed {token}")
    commit = read_commits(root, None)[0]
    assert token not in commit.message and "[REDACTED:github-token]" in commit.message
    by_path = {ch.path: ch for ch in commit.changes}
    assert token not in by_path["settings.py"].patch and "[REDACTED:" in by_path["settings.py"].patch
    big = by_path["big.py"]
    assert big.truncated and len(big.patch.encode()) <= FILE_PATCH_BYTES and big.additions == 2000
    assert big.patch.endswith("[... patch truncated by nexus]")


def test_git_environment_of_a_hook_does_not_leak(git_repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = git_repo
    (root / "f.txt").write_text("x\n")
    sha = commit_all(git_repo, "x")
    monkeypatch.setenv("GIT_DIR", "/nonexistent")
    monkeypatch.setenv("GIT_INDEX_FILE", "/nonexistent/index")
    assert [c.sha for c in read_commits(root, None)] == [sha]


def test_empty_and_missing_repositories(git_repo: Repo, tmp_path: Path) -> None:
    root, _ = git_repo
    empty = read_commits(root, None)
    assert list(empty) == [] and empty.head is None
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(GitError):
        read_commits(plain, None)


def test_classify_message_scale() -> None:
    assert classify_message("fix: null deref") == ("fix", 1.0, False, False)
    assert classify_message("Fix crash when the list is empty")[0] == "fix"
    assert classify_message("feat(api)!: drop v1")[1:] == (1.0, False, True)
    assert classify_message("feat: x\n\nBREAKING CHANGE: y")[3]
    assert classify_message('Revert "feat: x"\n\nThis reverts commit abc.')[:3] == ("revert", 0.95, True)
    assert classify_message("refactor: split module")[1] == 0.75
    assert classify_message("docs: typo")[1] == 0.5 == classify_message("ci: cache pip")[1]
    assert classify_message("wip")[:2] == ("other", 0.65)


def test_hunk_symbols() -> None:
    symbols = [(1, 10, "Class"), (2, 4, "Class.a"), (6, 10, "Class.b"), (12, 20, "helper")]
    assert hunk_symbols([(3, 1, 3, 1)], symbols) == {"Class", "Class.a"}
    assert hunk_symbols([(11, 1, 11, 0)], symbols) == set()  # a blank line between symbols
    assert hunk_symbols([(15, 0, 16, 3)], symbols) == {"helper"}  # deletion-only: the symbol at that line
    assert hunk_symbols([(0, 0, 1, 2)], symbols) == {"Class"}  # removal at the top counts as line 1
    assert hunk_symbols([(9, 5, 9, 1)], symbols) == {"Class", "Class.b", "helper"}
    assert hunk_symbols([], symbols) == set()


def _fast_import_history(commits: int, files: int = 20) -> str:
    """A fast-import stream: `commits` commits, each editing 3 of `files` Python files in a few places."""
    rng = random.Random(7)
    contents = {
        f"pkg/mod{i}.py": [f"def f{j}(x):\n    return x + {j}\n" for j in range(60)] for i in range(files)
    }
    out: list[str] = []
    for n in range(1, commits + 1):
        message = f"{rng.choice(['fix', 'feat', 'refactor', 'docs'])}: change {n}\n"
        out.append(
            f"commit refs/heads/main\nmark :{n}\ncommitter Ada <ada@example.com> {1_700_000_000 + n} +0000\n"
        )
        out.append(f"data {len(message.encode())}\n{message}")
        if n > 1:
            out.append(f"from :{n - 1}\n")
        for path in rng.sample(sorted(contents), 3):
            lines = contents[path]
            for _ in range(3):
                lines[rng.randrange(len(lines))] = f"def g{n}(x):\n    return x * {n}\n"
            body = "".join(lines)
            out.append(f"M 644 inline {path}\ndata {len(body.encode())}\n{body}\n")
    return "".join(out)


def test_two_hundred_commits_read_quickly(git_repo: Repo) -> None:
    root, git = git_repo
    git("fast-import", "--quiet", stdin=_fast_import_history(220))
    git("reset", "-q", "--hard", "main")
    start = time.perf_counter()
    commits = read_commits(root, None, limit=200)
    elapsed = time.perf_counter() - start
    assert len(commits) == 200 and commits.truncated
    assert all(len(c.changes) == 3 and all(ch.hunks for ch in c.changes) for c in commits)
    # A guard against one git process per commit, not a speed target.
    assert elapsed < 30.0, f"200 commits took {elapsed:.3f}s"
