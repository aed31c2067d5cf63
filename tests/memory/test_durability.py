"""Memory is user data: kill -9 after an acknowledged write, a lost database, a schema change, a forget,
and an export-import round trip never lose (or resurrect) it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nexusd.store import Store
from tests.helpers import DaemonProcess, lose_database
from tests.memory.conftest import register


def _memory(c: Any, scope: dict[str, str]) -> list[dict[str, Any]]:
    recs = c.request("memory.export", scope)["records"]
    return sorted(
        ({k: v for k, v in r.items() if k not in ("usedCount", "lastUsedAt", "status")} for r in recs),
        key=lambda r: r["id"],
    )


def _write_some(c: Any, scope: dict[str, str]) -> None:
    c.request("session.start", {**scope, "title": "durable"})
    t = c.request("turn", {**scope, "text": "the flaky test depends on wall-clock time"})["turn"]
    c.request("remember", {**scope, "text": "freeze time in test_scheduler", "evidence": [t]})
    c.request("procedure", {**scope, "title": "deflake", "steps": ["freeze time", "rerun 50x"], "files": ["pkg/mod.py"]})
    c.request("handoff.write", {**scope, "done": "found the flake", "next": "freeze time", "evidence": [t]})


def test_kill9_right_after_an_acknowledged_write(daemon: DaemonProcess, repo: Path) -> None:
    scope = {"user": "alice", "repo": str(repo)}
    with daemon.client() as c:
        register(c, repo, "alice")
        _write_some(c, scope)
        last = c.request("remember", {**scope, "text": "acknowledged just before the crash"})
    daemon.kill9()
    daemon.start()
    with daemon.client() as c:
        items = c.request("recall", {**scope, "query": "acknowledged crash"})["items"]
        assert [i["id"] for i in items] == [last["id"]]
        assert len(_memory(c, scope)) == 6
        nxt = c.request("turn", {**scope, "text": "after the restart"})
        assert nxt["ordinal"] == 2


def test_a_lost_database_is_rebuilt_from_the_journal_without_resurrecting_forgotten_memory(
    daemon: DaemonProcess, repo: Path
) -> None:
    scope = {"user": "alice", "repo": str(repo)}
    with daemon.client() as c:
        register(c, repo, "alice")
        _write_some(c, scope)
        gone = c.request("remember", {**scope, "text": "a note to forget"})["id"]
        assert c.request("memory.forget", {**scope, "ids": [gone]})["deleted"] == 1
        c.request("recall", {**scope, "query": "freeze time"})
        before = _memory(c, scope)
    daemon.kill9()
    # What the daemon does with a database it cannot open: move it aside and start fresh.
    lose_database(daemon.dirs.db)
    daemon.start()
    with daemon.client() as c:
        assert c.request("status", scope)["memory"]["replayed"] > 0
        register(c, repo, "alice")  # the code graph and the registry are derived: index again
        assert _memory(c, scope) == before
        assert c.request("recall", {**scope, "query": "note forget"})["items"] == []
        assert c.request("handoff.read", scope)["handoff"]["done"] == "found the flake"


def _written_then_stopped(daemon: DaemonProcess, repo: Path, scope: dict[str, str]) -> list[dict[str, Any]]:
    """Some memory written, then the daemon stopped: what memory held."""
    with daemon.client() as c:
        register(c, repo, "alice")
        _write_some(c, scope)
        before = _memory(c, scope)
    daemon.stop()
    return before


def test_schema_changes_keep_memory(daemon: DaemonProcess, repo: Path) -> None:
    scope = {"user": "alice", "repo": str(repo)}
    before = _written_then_stopped(daemon, repo, scope)
    store = Store(daemon.dirs.db, buffer_pool_mb=64)
    try:
        store.meta_set("schema.memory", "0")  # as if an older memory schema were on disk
        store.meta_set("schema.code", "0")
    finally:
        store.close()
    daemon.start()
    with daemon.client() as c:
        register(c, repo, "alice")
        assert _memory(c, scope) == before
        assert c.request("status", scope)["memory"]["replayed"] > 0


def test_a_store_that_kept_the_journal_position_in_meta_replays_only_what_follows_it(
    daemon: DaemonProcess, repo: Path
) -> None:
    """The journal's position is a `Position` row of integers (a Meta string before: Kuzu writes a string
    column's chunk again, with every value it held, at the checkpoint after each SET). A store from before has
    only the Meta string: it is read, so nothing already applied is replayed, and the next write sets the row."""
    scope = {"user": "alice", "repo": str(repo)}
    before = _written_then_stopped(daemon, repo, scope)
    key = "memory.journal.position"
    store = Store(daemon.dirs.db, buffer_pool_mb=64)
    try:
        conn = store.connect()
        [[seq, offset]] = conn.rows("MATCH (p:Position {key: $k}) RETURN p.seq, p.byteOffset", {"k": key})
        assert seq > 0 and offset > 0
        conn.execute("MATCH (p:Position) DELETE p")
        store.meta_set(key, f"{seq}:{offset}")
    finally:
        store.close()
    daemon.start()
    with daemon.client() as c:
        assert c.request("status", scope)["memory"]["replayed"] == 0
        assert _memory(c, scope) == before
        c.request("remember", {**scope, "text": "written after the upgrade"})
    daemon.stop()
    store = Store(daemon.dirs.db, buffer_pool_mb=64)
    try:
        [[now]] = store.connect().rows("MATCH (p:Position {key: $k}) RETURN p.seq", {"k": key})
        assert now > seq
    finally:
        store.close()


def test_export_import_round_trip(shared_daemon_env: DaemonProcess, repo: Path, tmp_path: Path) -> None:
    daemon = shared_daemon_env
    scope = {"user": "alice", "repo": str(repo)}
    with daemon.client() as c:
        register(c, repo, "alice")
        _write_some(c, scope)
    out = tmp_path / "memory.jsonl"
    r = daemon.cli("--user", "alice", "-C", str(repo), "memory", "export", "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    with daemon.client() as c:
        before = _memory(c, scope)
        assert len(out.read_text().splitlines()) == len(before) == 5
        assert c.request("memory.forget", {**scope, "all": True})["deleted"] == 5
        assert _memory(c, scope) == []
    r = daemon.cli("--user", "alice", "-C", str(repo), "memory", "import", str(out), "--json")
    assert r.returncode == 0, r.stderr
    with daemon.client() as c:
        assert _memory(c, scope) == before
        # Importing again changes nothing.
        again = daemon.cli("--user", "alice", "-C", str(repo), "memory", "import", str(out), "--json")
        assert again.returncode == 0 and '"imported": 0' in again.stdout
        assert _memory(c, scope) == before
        assert c.request("handoff.read", scope)["handoff"]["evidenceTurns"][0]["ordinal"] == 1
        # Another user importing alice's export gets copies of their own, re-keyed; alice's are untouched.
        bob = {"user": "bob", "repo": str(repo)}
        records = c.request("memory.export", scope)["records"]
        assert c.request("memory.import", {**bob, "records": records})["imported"] == 5
        assert not {r["id"] for r in c.request("memory.export", bob)["records"]} & {r["id"] for r in records}
        assert [r["userId"] for r in c.request("memory.export", scope)["records"]] == ["alice"] * 5


_RELS = ["OWNS", "HAS_TURN", "LEARNED", "FROM_SESSION", "EVIDENCE", "ABOUT", "APPLIES_TO"]


def _memory_rels(c: Any) -> list[list[str]]:
    # One statement per relationship table: one pattern over every table, filtered by `label(r)`, now and then
    # (2 runs in 10, the code of the thirty-fifth session too) gave rows whose label and ends were another
    # table's (a HAS_FILE from the repository to a session).
    rows = []
    for rel in _RELS:
        got = c.request("debug.cypher", {"query": f"MATCH (a)-[r:{rel}]->(b) RETURN a.id, b.id"})["rows"]
        rows += [[rel, *row] for row in got]
    return sorted(rows)


def test_a_replay_from_the_start_skips_what_is_forgotten_later_and_leaves_the_same_graph(
    daemon: DaemonProcess, repo: Path
) -> None:
    """A replay from the beginning (a new database, a damaged file set aside) skips the records whose every
    effect a later `forget` removes (facts, procedures and handoffs forgotten by id, a forgotten session's turns),
    and the memory it leaves, nodes and relationships, is the one the daemon had."""
    scope = {"user": "alice", "repo": str(repo)}
    with daemon.client() as c:
        register(c, repo, "alice")
        gone_session = c.request("session.start", {**scope, "title": "abandoned"})["session"]
        t1 = c.request("turn", {**scope, "text": "normalizeParams drops None"})["turn"]
        kept_fact = c.request("remember", {**scope, "text": "normalizeParams drops None values", "about": "normalizeParams",
                                           "evidence": [t1]})["id"]  # fmt: skip
        gone_fact = c.request("remember", {**scope, "text": "helper adds one", "about": "helper"})["id"]
        gone_proc = c.request("procedure", {**scope, "title": "bump", "steps": ["edit", "test"], "files": ["pkg/mod.py"]})["id"]
        gone_handoff = c.request("handoff.write", {**scope, "done": "half", "next": "rest", "evidence": [t1]})["id"]
        c.request("handoff.read", scope)  # acknowledges it (a record of its own)
        c.request("recall", {**scope, "query": "helper adds one"})  # counts it used (a record of its own)
        c.request("session.start", {**scope, "title": "kept"})
        t2 = c.request("turn", {**scope, "text": "keep this one"})["turn"]
        c.request("remember", {**scope, "text": "the kept session learned this", "evidence": [t2]})
        c.request("handoff.write", {**scope, "done": "all", "next": "ship", "evidence": [t2]})
        forgot = c.request("memory.forget", {**scope, "ids": [gone_session, gone_fact, gone_proc, gone_handoff]})
        assert forgot["missing"] == [], forgot
        before, rels = _memory(c, scope), _memory_rels(c)
        assert any(r[1] == kept_fact for r in rels)  # (its ABOUT edge; its evidence turn went with its session)
    daemon.kill9()
    lose_database(daemon.dirs.db)
    daemon.start()
    with daemon.client() as c:
        memory = c.request("status", scope)["memory"]
        # the forgotten fact, procedure, handoff, the first session's turn, its ack and its use: skipped
        assert memory["replaySkipped"] >= 5, memory
        register(c, repo, "alice")  # the code graph is derived: index again (facts re-attach to their symbols)
        assert _memory(c, scope) == before
        assert _memory_rels(c) == rels
        assert c.request("recall", {**scope, "query": "helper adds one"})["items"] == []
