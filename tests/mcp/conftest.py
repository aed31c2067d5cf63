"""MCP tests: the SDK's own client over stdio against `nexus mcp` and a real daemon."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import DaemonProcess, make_repo

APP = {
    "pkg/__init__.py": "",
    "pkg/util.py": (
        "def normalize(x):\n    \"\"\"Normalise a value.\"\"\"\n    return x\n\n\n"
        "def helper(x):\n    return normalize(x)\n"
    ),
    "pkg/app.py": (
        "from pkg.util import helper, normalize\n\n\n"
        "def main():\n    return helper(1)\n\n\n"
        "def other():\n    return normalize(2)\n"
    ),
    "tests/test_util.py": "from pkg.util import normalize\n\n\ndef test_normalize():\n    assert normalize(1) == 1\n",
}


@asynccontextmanager
async def mcp_session(env: dict[str, str], cwd: str | Path, roots: list[str] | None = None,
                      args: list[str] | None = None) -> AsyncIterator[Any]:
    """`nexus mcp` spawned the way an editor spawns it, with the SDK's ClientSession on top."""
    import mcp.types as mt
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "nexus_client.cli_main", *(args or []), "mcp"], env=dict(env),
        cwd=str(cwd),
    )
    callback = None
    if roots is not None:
        listed = mt.ListRootsResult(roots=[mt.Root(uri=Path(r).as_uri(), name=Path(r).name) for r in roots])  # type: ignore[arg-type]

        async def callback(context: Any) -> Any:
            return listed

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, list_roots_callback=callback) as session:
            await session.initialize()
            yield session


def has_op(daemon: DaemonProcess, name: str) -> bool:
    client = daemon.client()
    try:
        return any(e["name"] == name for e in client.catalogue)
    finally:
        client.close()


@pytest.fixture(scope="module")
def mcp_daemon(shared_daemon: DaemonProcess) -> DaemonProcess:
    return shared_daemon  # the shared fixture of tests/conftest.py


@pytest.fixture(scope="module")
def indexed_repo(mcp_daemon: DaemonProcess, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_repo(tmp_path_factory.mktemp("mcp") / "app", APP)
    client = mcp_daemon.client()
    try:
        client.request("index", {"repo": str(repo)}, timeout=120)
    finally:
        client.close()
    return repo
