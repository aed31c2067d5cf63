"""The node tables that hold rows only for an opt-in (shell commands, transcripts, embeddings:
`schema.OPTIONAL_TABLES`) are made at their first row and dropped again at open while empty: each node table
costs ~5.3 MB of resident memory in Kuzu 0.11.3 from the moment the database opens. Every read and delete of
history works without them, a rolled-back transaction takes a table it made with it, and a compaction carries
the ones the file has, empty or not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from nexusd import schema
from nexusd.store import Store, StoreError
from tests.helpers import REPO_ROOT, DaemonProcess, git

TABLES = r"""
import sys
from pathlib import Path
from nexusd.store import Store
s = Store(Path(sys.argv[1]))
s.ensure_schema()
print(sorted(r[0] for r in s._admin.rows("CALL SHOW_TABLES() RETURN name")))
s.close()
"""


def _tables(db: Path) -> set[str]:
    """The tables a database has once opened as the daemon opens it (empty optional tables dropped)."""
    out = subprocess.run([sys.executable, "-c", TABLES, str(db)], capture_output=True, text=True, cwd=REPO_ROOT,
                         timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return set(eval(out.stdout.strip()))  # noqa: S307 (a sorted list of table names printed by TABLES)


def _repo(root: Path) -> Path:
    root.mkdir()
    (root / "a.py").write_text("def build_wheel():\n    return 1\n")
    (root / "README.md").write_text("# r\n\n## Install\n\npip install r\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "add the wheel builder")
    return root


def test_optional_tables_come_with_their_first_row_and_go_when_empty(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")
    history = tmp_path / "home" / ".bash_history"
    history.parent.mkdir()
    history.write_text("make wheel\npytest -x tests/test_wheel.py\n")
    d = DaemonProcess(env={"HOME": str(tmp_path / "home")})
    d.start()
    try:
        with d.client() as c:
            c.request("index", {"repo": str(repo)}, timeout=120)
            out = c.request("history.sync", {"repo": str(repo)}, timeout=120)
            assert out["counts"]["ShellCommand"] == 0 and out["counts"]["ConversationTurn"] == 0
            # Every read and delete of history, with none of the optional tables there.
            assert c.request("query", {"repo": str(repo), "text": "wheel builder"})["results"]
            assert c.request("query", {"repo": str(repo), "text": "make wheel", "kinds": ["shell"]})["results"] == []
            c.request("forget.value", {"value": "wheel builder"})
        d.stop()
        assert not _tables(d.dirs.db) & schema.OPTIONAL_TABLES
        d.start()
        with d.client() as c:
            out = c.request("history.sync", {"repo": str(repo), "scrape": [{"path": str(history), "shell": "bash"}]},
                            timeout=120)  # fmt: skip
            assert out["shell"]["scraped"] == 2 and out["counts"]["ShellCommand"] == 2
            hits = c.request("query", {"repo": str(repo), "text": "pytest wheel", "kinds": ["shell"]})["results"]
            assert [h["command"] for h in hits] == ["pytest -x tests/test_wheel.py", "make wheel"], hits
        d.stop()
        assert "ShellCommand" in _tables(d.dirs.db)  # kept: it holds rows
        d.start()
        with d.client() as c:
            c.request("forget.value", {"value": "wheel"})  # both commands name it
            assert c.request("history.sync", {"repo": str(repo)}, timeout=120)["counts"]["ShellCommand"] == 0
        d.stop()
        assert "ShellCommand" not in _tables(d.dirs.db)  # empty again: dropped at the next open
    finally:
        d.cleanup()


def test_a_rolled_back_transaction_takes_the_table_it_made(tmp_path: Path) -> None:
    store = Store(tmp_path / "g.kuzu")
    store.open()
    store.ensure_schema()
    c = store.connect()
    assert not c.has_table("ShellCommand") and c.has_table("Commit")
    try:
        with c.transaction():
            c.ensure_table("ShellCommand")
            c.execute("CREATE (:ShellCommand {id: 's1', text: 'make'})")
            assert c.has_table("ShellCommand")
            c.execute("MATCH (n:NoSuchTable) RETURN n")
    except StoreError:
        pass
    assert not c.has_table("ShellCommand")
    c.ensure_table("ShellCommand")  # and made again on the next write
    c.execute("CREATE (:ShellCommand {id: 's1', text: 'make'})")
    assert c.scalar("MATCH (n:ShellCommand) RETURN count(n)") == 1
    store.close()


def test_a_compaction_carries_the_optional_tables_the_file_has(tmp_path: Path) -> None:
    store = Store(tmp_path / "g.kuzu", compact_min_mb=0)
    store.open()
    store.ensure_schema()
    c = store.connect()
    c.ensure_table("ShellCommand")
    c.execute("CREATE (:ShellCommand {id: 's1', text: 'make'})")
    c.ensure_table("HistoryVector")  # made, then left empty
    c.execute("CHECKPOINT")
    assert store.compact(c), store.compactions.get("lastError")
    assert c.has_table("HistoryVector") and not c.has_table("ConversationTurn")
    assert c.scalar("MATCH (n:ShellCommand) RETURN n.text") == "make"
    store.close()


def test_another_connection_sees_a_table_made_inside_a_transaction_once_it_commits(tmp_path: Path) -> None:
    store = Store(tmp_path / "g.kuzu")
    store.open()
    store.ensure_schema()
    writer, reader = store.connect(), store.connect()
    assert not reader.has_table("ShellCommand")
    with writer.transaction():
        writer.ensure_table("ShellCommand")
        writer.execute("CREATE (:ShellCommand {id: 's1', text: 'make'})")
        assert writer.has_table("ShellCommand")
        # The reader cannot see the table yet; what it reads meanwhile must not be kept past the commit.
        assert not reader.has_table("ShellCommand")
    assert reader.has_table("ShellCommand") and writer.has_table("ShellCommand")
    assert reader.scalar("MATCH (n:ShellCommand) RETURN count(n)") == 1
    store.close()


def test_the_memory_tables_come_with_the_first_memory_and_go_when_none_is_left(tmp_path: Path) -> None:
    """A database that never held memory has none of its tables (~37 MB of an open database): every memory read
    answers nothing, a code edit keeps working, the first write makes the group, and forgetting it all lets the
    group go at the next open, after which the journal's replay brings nothing back."""
    repo = _repo(tmp_path / "r")
    scope = {"user": "alice", "repo": str(repo)}
    d = DaemonProcess()
    d.start()
    try:
        with d.client() as c:
            c.request("index", scope, timeout=120)
            # Every memory read, with no memory table there.
            assert c.request("recall", {**scope, "query": "wheel"})["items"] == []
            assert c.request("session.list", scope)["sessions"] == []
            assert c.request("handoff.read", scope)["handoff"] is None
            assert c.request("memory.export", scope)["records"] == []
            assert c.request("memory.forget", {**scope, "all": True})["deleted"] == 0
            shown = c.request("show", {**scope, "symbol": "build_wheel"})
            assert shown["node"]["name"] == "build_wheel" and shown["memory"] == []
            c.request("history.sync", scope, timeout=120)
            assert c.request("query", {**scope, "text": "wheel builder"})["results"]
            (repo / "a.py").write_text("def build_wheel():\n    return 2\n")
            c.request("sync", scope, timeout=120)
        d.stop()
        assert not _tables(d.dirs.db) & (schema.MEMORY_TABLES | {"Position"})
        d.start()
        with d.client() as c:
            fact = c.request("remember", {**scope, "text": "the wheel builder returns a version", "about": "build_wheel"})
            (repo / "a.py").write_text("def build_wheel():\n    return 3\n")  # (its ABOUT edge kept across the edit)
            c.request("sync", scope, timeout=120)
            [item] = c.request("recall", {**scope, "query": "wheel version"})["items"]
            assert item["id"] == fact["id"] and item["status"] == "stale"
        d.stop()
        assert _tables(d.dirs.db) >= schema.MEMORY_TABLES  # kept: it holds a fact
        d.start()
        with d.client() as c:
            assert [i["id"] for i in c.request("recall", {**scope, "query": "wheel version"})["items"]] == [fact["id"]]
            assert c.request("memory.forget", {**scope, "all": True})["deleted"] == 1
        d.stop()
        tables = _tables(d.dirs.db)
        assert not tables & schema.MEMORY_TABLES  # none left: dropped at the next open
        assert "Position" in tables  # (which the replay starts from: nothing is replayed)
        d.start()
        with d.client() as c:
            assert c.request("status", scope)["memory"]["replayed"] == 0
            assert c.request("recall", {**scope, "query": "wheel version"})["items"] == []
    finally:
        d.cleanup()
