"""The database opens on first need: a daemon with nothing registered holds none, a registration opens it, and
memory written once it is open survives kill -9 and comes back after a restart that left it closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess, make_repo

SOURCE = {"pkg/cache.py": "def cache_key(value):\n    return hash(value)\n"}


def _daemon_section(c: Any) -> dict[str, Any]:
    return dict(c.request("status", {})["daemon"])


def test_nothing_registered_opens_nothing_and_a_registration_opens_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", SOURCE)
    d = DaemonProcess(home=tmp_path / "home").start()
    try:
        with d.client() as c:
            status = c.request("status", {})
            assert status["daemon"]["database"] == "closed"
            assert status["memory"]["searchable"] is None
            assert c.request("repos", {})["repos"] == []
            assert "graph database not opened yet" in d.cli("status").stdout
            c.request("index", {"repo": str(repo)}, timeout=120)
            assert _daemon_section(c)["database"] == "open"
            assert "not opened yet" not in d.cli("status").stdout
            fact = c.request("remember", {"repo": str(repo), "text": "cache keys hash the value"})
        d.kill9()
        d.start()
        with d.client() as c:
            # Registered: the store opens at start (watch, catch-up), and memory came back from the journal.
            assert _daemon_section(c)["database"] == "open"
            items = c.request("recall", {"repo": str(repo), "query": "cache keys hash"})["items"]
            assert [i["id"] for i in items] == [fact["id"]]
    finally:
        d.stop()


def test_memory_of_a_forgotten_repository_returns_with_it_after_restarts(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", SOURCE)
    d = DaemonProcess(home=tmp_path / "home").start()
    try:
        with d.client() as c:
            c.request("index", {"repo": str(repo)}, timeout=120)
            fact = c.request("remember", {"repo": str(repo), "text": "the cache never expires entries"})
            c.request("repo.forget", {"repo": str(repo)})
        d.kill9()  # nothing registered now: the next start leaves the database closed
        d.start()
        with d.client() as c:
            status = c.request("status", {})
            assert status["daemon"]["database"] == "closed"
            assert status["memory"]["journalSeq"] >= 1
        assert d.stop() == 0
        d.start()  # a clean stop that never opened the database, then a start
        with d.client() as c:
            assert _daemon_section(c)["database"] == "closed"
            c.request("index", {"repo": str(repo)}, timeout=120)  # the first need opens it (and replays memory)
            items = c.request("recall", {"repo": str(repo), "query": "cache never expires"})["items"]
            assert [i["id"] for i in items] == [fact["id"]]
            assert c.request("status", {})["memory"]["searchable"] >= 1
    finally:
        d.stop()
