"""A real daemon in a temp NEXUS_HOME and real git repositories, for the history layer's end-to-end tests."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import DaemonProcess, git


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    # A short spool interval so the background ingest is exercised too; HOME is isolated for the shell tests.
    home = tmp_path / "home"
    home.mkdir()
    proc = DaemonProcess(env={"NEXUS_SPOOL_INTERVAL": "0.5", "HOME": str(home)})
    proc.start()
    try:
        yield proc
    finally:
        proc.cleanup()


def commit(repo: Path, message: str, files: dict[str, str] | None = None, when: int | None = None) -> str:
    for rel, text in (files or {}).items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    env_date = [] if when is None else [f"--date=@{when}"]
    git(repo, "commit", "-q", "--allow-empty", "-m", message, *env_date)
    return git(repo, "rev-parse", "HEAD").strip()


def register(client: Any, repo: Path) -> None:
    """Register a repository (building its code graph) through the lead's `index` op."""
    client.request("index", {"repo": str(repo)}, timeout=120)


def catalogue_ops(client: Any) -> set[str]:
    return {entry["name"] for entry in client.request("hello", {})["catalogue"]}


def graph_texts(client: Any, repo: Path) -> str:
    """Every stored history text of a repository, through the query path (tests never open the database)."""
    out = []
    for kind in ("commit", "change", "shell", "doc", "turn"):
        r = client.request("query", {"repo": str(repo), "text": "a", "kinds": [kind], "limit": 1})
        out.append(str(r))
    return "\n".join(out)


Factory = Callable[..., Path]


@pytest.fixture
def new_repo(tmp_path: Path) -> Factory:
    def make(name: str = "repo", files: dict[str, str] | None = None, message: str = "initial") -> Path:
        root = tmp_path / name
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        commit(root, message, files or {"README.md": f"# {name}\n"})
        return Path(os.path.realpath(root))

    return make
