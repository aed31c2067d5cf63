"""Real git repositories in temp dirs, with a fixed identity and no user or system config."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

GitRunner = Callable[..., str]


def git_environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="Ada", GIT_AUTHOR_EMAIL="ada@example.com",
        GIT_COMMITTER_NAME="Ada", GIT_COMMITTER_EMAIL="ada@example.com", LC_ALL="C",
    )  # fmt: skip
    return env


@pytest.fixture
def git_repo(tmp_path: Path) -> tuple[Path, GitRunner]:
    root = tmp_path / "repo"
    root.mkdir()
    env = git_environment(tmp_path)

    def git(*args: str, stdin: str | None = None) -> str:
        proc = subprocess.run(
            ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
            cwd=root, env=env, input=stdin, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return proc.stdout.strip()

    git("init", "-q")
    return root, git
