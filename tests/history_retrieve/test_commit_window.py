"""Whole history by default: every commit's message is stored, diffs only for the latest N non-merge commits
(merges do not count against the window), and an old commit stays findable by its message."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess
from tests.history_ingest.conftest import Factory, register


def dated(repo: Path, when: int, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": f"@{when} +0000",
           "GIT_COMMITTER_DATE": f"@{when} +0000"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout


def change(repo: Path, when: int, rel: str, text: str, message: str) -> None:
    (repo / rel).write_text(text)
    dated(repo, when, "add", "-A")
    dated(repo, when, "commit", "-q", "-m", message)


def build(repo: Path) -> None:
    t = 1_700_000_000
    for i in range(6):
        change(repo, t + i * 60, f"linear{i}.txt", f"pelican {i}\n", f"feat: linear pelican step {i}")
    for i in range(3):  # three pull requests, each one commit merged with a merge commit
        dated(repo, t + 1000 + i * 60, "checkout", "-q", "-b", f"pr{i}")
        change(repo, t + 1000 + i * 60, f"pr{i}.txt", f"heron {i}\n", f"fix: heron case {i}")
        dated(repo, t + 1010 + i * 60, "checkout", "-q", "main")
        dated(repo, t + 1010 + i * 60, "merge", "-q", "--no-ff", "-m", f"Merge pull request #{i} from pr{i}", f"pr{i}")


def ask(c: Any, repo: Path, text: str, **extra: Any) -> list[dict[str, Any]]:
    return list(c.request("query", {"repo": str(repo), "text": text, "limit": 20, **extra})["results"])


def test_the_patch_window_counts_non_merge_commits(daemon: DaemonProcess, new_repo: Factory) -> None:
    repo = new_repo()
    build(repo)
    with daemon.client() as c:
        register(c, repo)
        counts = c.request("history.sync", {"repo": str(repo), "patches": 3})["counts"]
        assert counts["Commit"] == 1 + 6 + 3 + 3  # every message, merges included
        assert counts["Change"] == 3  # the three PR commits: merges did not use up the window
        assert sorted(h["path"] for h in ask(c, repo, "heron", kinds=["change"])) == ["pr0.txt", "pr1.txt", "pr2.txt"]
        assert ask(c, repo, "pelican", kinds=["change"]) == []  # older than the window: no diff stored...
        old = ask(c, repo, "linear pelican step 0", kinds=["commit"])
        assert old and old[0]["text"].split("\n")[0].endswith("feat: linear pelican step 0")  # ...but its message


def test_the_default_reads_the_whole_history(daemon: DaemonProcess, new_repo: Factory) -> None:
    repo = new_repo()
    build(repo)
    with daemon.client() as c:
        register(c, repo)
        counts = c.request("history.sync", {"repo": str(repo)})["counts"]
        assert counts["Commit"] == 13 and counts["Change"] == 1 + 6 + 3  # the window (200) holds them all
