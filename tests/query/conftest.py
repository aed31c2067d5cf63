"""A fixture repository indexed once per module through a real daemon, and a client to question it."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from nexus_client.connection import Client

from tests.helpers import DaemonProcess, make_repo

FILES = {
    "pkg/__init__.py": "from .util import helper\n",
    "pkg/util.py": (
        "def helper(x):\n    \"\"\"Help with x.\"\"\"\n    return normalize(x)\n\n\n"
        "def normalize(x):\n    return x\n\n\n"
        "def normalizeParams(p):\n    return p\n\n\n"
        "def normalize_params(p):\n    return normalizeParams(p)\n"
    ),
    "pkg/app.py": (
        "from pkg.util import helper\n\n\n"
        "class Base:\n    def run(self):\n        return self.step()\n\n    def step(self):\n        return helper(1)\n\n\n"
        "class App(Base):\n    def go(self):\n        return self.run()\n\n\n"
        "def main():\n    App().go()\n"
    ),
    "pkg/cli.py": "from pkg import util\n\n\ndef run(args):\n    return util.helper(args)\n",
    "pkg/plugins.py": (
        "from pkg.util import helper\n\n\n"
        "def call_through(registry):\n    return registry.lookup().helper(2)\n"
    ),
    "tests/test_app.py": "from pkg.app import main\n\n\ndef test_main():\n    main()\n",
}


# What varies between two snapshots answering from the same graph: timing, the watcher's state, how it was made.
VARYING = ("tookMs", "snapshot", "freshness", "pendingPaths")


def snapshot_questions(c: Client, root: Path) -> dict[str, dict[str, Any]]:
    """The same questions of the FILES repository, to compare two snapshots' answers (`without_varying`)."""

    def ask(op: str, **args: Any) -> dict[str, Any]:
        return c.request(op, {"repo": str(root), **args}, timeout=60)

    return {
        "locate": ask("locate", query="helper"),
        "locate words": ask("locate", query="normalize params"),
        "callers": ask("neighbors", node="pkg/util.py:helper", direction="in", edgeKinds=["calls"]),
        "impact": ask("impact", symbol="pkg/util.py:normalize"),
    }


def without_varying(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in VARYING}


def answers_from_the_graph(
    d: DaemonProcess, ask: Callable[[Client], dict[str, dict[str, Any]]]
) -> dict[str, dict[str, Any]]:
    """`ask`'s answers from a snapshot read from the graph afresh: the daemon restarted without its saved
    snapshots."""
    d.stop()
    shutil.rmtree(d.dirs.data / "snapshots")
    d.start()
    with d.client() as c:
        answers = ask(c)
    assert all(a["snapshot"]["madeBy"] == "graph" for a in answers.values())
    return answers


class Q:
    """A client bound to one repository: `q.op(name, **args)` sends the op with `repo`."""

    def __init__(self, client: Client, repo: Path, daemon: DaemonProcess):
        self.c = client
        self.repo = repo
        self.daemon = daemon

    def op(self, name: str, **args: Any) -> dict[str, Any]:
        return self.c.request(name, {"repo": str(self.repo), **args}, timeout=60)

    def index(self) -> dict[str, Any]:
        return self.c.request("index", {"repo": str(self.repo)}, timeout=120)

    def cypher(self, query: str, **params: Any) -> list[list[Any]]:
        return self.c.request("debug.cypher", {"query": query, "params": params})["rows"]


@pytest.fixture(scope="module")
def daemon(shared_daemon: DaemonProcess) -> DaemonProcess:
    return shared_daemon  # the shared fixture of tests/conftest.py


@pytest.fixture(scope="module")
def q(daemon: DaemonProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Q]:
    repo = make_repo(tmp_path_factory.mktemp("query") / "demo", FILES)
    client = daemon.client()
    qq = Q(client, repo, daemon)
    qq.index()
    yield qq
    client.close()


@pytest.fixture
def fresh(daemon: DaemonProcess, tmp_path: Path) -> Iterator[Q]:
    """A repository of its own, for tests that edit files."""
    repo = make_repo(tmp_path / "fresh", FILES)
    client = daemon.client()
    qq = Q(client, repo, daemon)
    qq.index()
    yield qq
    client.close()
