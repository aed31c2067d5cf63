"""Turn ordinals under concurrent writers, idempotent re-sends, sessions and handoff acknowledgement."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess
from tests.memory.conftest import register

CLIENTS = 20
TURNS = 50


def test_concurrent_turns_get_dense_ordinals(daemon: DaemonProcess, repo: Path) -> None:
    scope = {"user": "alice", "repo": str(repo)}
    with daemon.client() as c:
        register(c, repo, "alice")
        session = c.request("session.start", {**scope, "title": "load"})["session"]
    errors: list[BaseException] = []
    results: list[dict[str, Any]] = []
    lock = threading.Lock()
    start = threading.Barrier(CLIENTS)

    def writer(n: int) -> None:
        try:
            with daemon.client(timeout=120) as c:
                start.wait(30)
                for i in range(TURNS):
                    r = c.request("turn", {**scope, "session": session, "text": f"client {n} turn {i}"}, timeout=120)
                    with lock:
                        results.append(r)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert len(results) == CLIENTS * TURNS and all(r["created"] for r in results)
    assert sorted(r["ordinal"] for r in results) == list(range(1, CLIENTS * TURNS + 1))
    with daemon.client() as c:
        turns = [r for r in c.request("memory.export", scope)["records"] if r["type"] == "Turn"]
        assert sorted(t["ordinal"] for t in turns) == list(range(1, CLIENTS * TURNS + 1))
        assert len({t["id"] for t in turns}) == CLIENTS * TURNS
        # Each client's own turns are in its sending order.
        for n in range(CLIENTS):
            mine = sorted((t["ordinal"], t["text"]) for t in turns if t["text"].startswith(f"client {n} "))
            assert [text for _, text in mine] == [f"client {n} turn {i}" for i in range(TURNS)]
        ended = c.request("session.end", {**scope, "session": session})
        assert ended["turns"] == CLIENTS * TURNS


def test_resending_the_same_write_changes_nothing(daemon: DaemonProcess, repo: Path) -> None:
    scope = {"user": "alice", "repo": str(repo)}
    with daemon.client() as c:
        register(c, repo, "alice")
        writes: list[tuple[str, dict[str, Any]]] = [
            ("session.start", {**scope, "id": "my-session"}),
            ("turn", {**scope, "text": "first"}),
            ("turn", {**scope, "text": "second", "role": "assistant"}),
            ("turn", {**scope, "text": "first", "id": "client-chosen-1"}),
            ("remember", {**scope, "text": "the parser never raises"}),
            ("procedure", {**scope, "title": "check", "steps": ["run the tests"], "files": ["pkg/mod.py"]}),
            ("handoff.write", {**scope, "done": "parser work", "open": "docs", "next": "write docs"}),
        ]
        first = [c.request(op, args) for op, args in writes]
        assert all(r["created"] for r in first)
        assert [r["ordinal"] for r in first[1:4]] == [1, 2, 3]
        before = c.request("memory.export", scope)["records"]
        seq = c.request("status", scope)["memory"]["journalSeq"]
        again = [c.request(op, args) for op, args in writes]
        assert not any(r["created"] for r in again)
        assert [r.get("id") or r.get("session") for r in again] == [r.get("id") or r.get("session") for r in first]
        assert [r["ordinal"] for r in again[1:4]] == [1, 2, 3]
        assert c.request("memory.export", scope)["records"] == before
        assert c.request("status", scope)["memory"]["journalSeq"] == seq  # nothing journaled either


def test_handoff_read_reports_acknowledgement(daemon: DaemonProcess, repo: Path) -> None:
    scope = {"user": "alice", "repo": str(repo)}
    with daemon.client() as c:
        register(c, repo, "alice")
        assert c.request("handoff.read", scope) ["handoff"] is None
        c.request("session.start", scope)
        t = c.request("turn", {**scope, "text": "found the off-by-one in the pager"})["turn"]
        c.request("handoff.write", {**scope, "done": "old", "next": "nothing"})
        h = c.request("handoff.write", {**scope, "done": "fixed the pager", "open": "tests", "evidence": [t]})["id"]
        peek = c.request("handoff.read", {**scope, "peek": True})
        assert peek["handoff"]["id"] == h and peek["acknowledged"] is False
        first = c.request("handoff.read", scope)
        assert first["handoff"]["id"] == h and first["acknowledged"] is False
        assert [e["text"] for e in first["handoff"]["evidenceTurns"]] == ["found the off-by-one in the pager"]
        second = c.request("handoff.read", scope)
        assert second["acknowledged"] is True
        assert second["handoff"]["acknowledgedAt"] == first["handoff"]["acknowledgedAt"]
