"""A small Python repository indexed by a module-scoped daemon, for the CLI's human-facing behaviour."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import DaemonProcess, make_repo

FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": (
        "from typing import overload\n"
        "\n"
        "\n"
        "def helper(x):\n"
        "    return x + 1\n"
        "\n"
        "\n"
        "class Engine:\n"
        "    def run(self, x):\n"
        "        return helper(x)\n"
        "\n"
        "    def stop(self):\n"
        "        return self.run(0)\n"
        "\n"
        "\n"
        "@overload\n"
        "def parse(x: int) -> int: ...\n"
        "@overload\n"
        "def parse(x: str) -> str: ...\n"
        "def parse(x):\n"
        "    y = helper(x)\n"
        "    z = y\n"
        "    return z\n"
    ),
    "pkg/app.py": (
        "from pkg.core import Engine, helper\n"
        "\n"
        "\n"
        "def main():\n"
        "    e = Engine()\n"
        "    e.run(helper(1))\n"
        "    return e\n"
    ),
    "tests/test_core.py": (
        "from pkg.core import helper\n"
        "\n"
        "\n"
        "def test_helper():\n"
        "    assert helper(1) == 2\n"
    ),
}


class Indexed:
    def __init__(self, daemon: DaemonProcess, repo: Path):
        self.daemon = daemon
        self.repo = repo

    def cli(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None):  # type: ignore[no-untyped-def]
        saved = dict(self.daemon.env)
        self.daemon.env.update(env or {})
        try:
            return self.daemon.cli(*args, cwd=cwd or self.repo)
        finally:
            self.daemon.env = saved


@pytest.fixture(scope="module")
def indexed(shared_daemon: DaemonProcess) -> Iterator[Indexed]:
    with tempfile.TemporaryDirectory(prefix="nx-cli-") as tmp:
        repo = make_repo(Path(tmp) / "proj", FILES)
        out = shared_daemon.cli("index", str(repo), "--json")
        assert out.returncode == 0, out.stderr
        yield Indexed(shared_daemon, repo)
