from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import DaemonProcess, make_repo

SOURCE = {
    "pkg/__init__.py": "",
    "pkg/mod.py": (
        "def normalizeParams(params):\n"
        "    \"\"\"Drop None values.\"\"\"\n"
        "    return {k: v for k, v in params.items() if v is not None}\n"
        "\n\n"
        "def helper(x):\n"
        "    return x + 1\n"
    ),
}


def has_op(client, name: str) -> bool:  # type: ignore[no-untyped-def]
    return any(e["name"] == name for e in client.catalogue)


def register(client, repo: Path, user: str) -> None:  # type: ignore[no-untyped-def]
    """Register (and index, when the daemon has `index`) a repository for `user`."""
    if has_op(client, "index"):
        client.request("index", {"repo": str(repo), "user": user}, timeout=120)
    else:
        client.request("debug.register_repo", {"repo": str(repo), "user": user})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", SOURCE)


@pytest.fixture
def shared_daemon_env() -> Iterator[DaemonProcess]:
    """A daemon whose repositories every user may use (NEXUS_SHARED_REPOS=1): memory must still be per user."""
    d = DaemonProcess(env={"NEXUS_SHARED_REPOS": "1"}).start()
    try:
        yield d
    finally:
        d.cleanup()
