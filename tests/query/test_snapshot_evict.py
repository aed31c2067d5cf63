"""A query snapshot no query needed for NEXUS_SNAPSHOT_IDLE_S is let go once saved (`Snapshots.evict_idle`): the next
query loads its file again, and a batch that comes first takes the file back and applies itself, so no answer
changes and nothing reads the graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess, make_repo, wait_for
from tests.query.conftest import FILES, answers_from_the_graph, snapshot_questions, without_varying

QUICK = {"NEXUS_SNAPSHOT_IDLE_S": "1", "NEXUS_SNAPSHOT_SAVE_S": "0.2"}


def _questions(c: Any, root: Path) -> dict[str, dict[str, Any]]:
    return {**snapshot_questions(c, root),
            "locate new": c.request("locate", {"repo": str(root), "query": "added_later"}, timeout=60)}  # fmt: skip


def _evicted(c: Any) -> list[str]:
    return list(c.request("debug.retained", {})["evicted"])


def test_an_idle_snapshot_is_let_go_and_the_next_query_loads_its_file(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    d = DaemonProcess(env=QUICK).start()
    try:
        with d.client() as c:
            c.request("index", {"repo": str(root)}, timeout=120)
            first = _questions(c, root)
            assert first["locate"]["snapshot"]["madeBy"] == "index"
            assert c.request("status", {})["repos"][0]["querySnapshot"] == "held"
            wait_for(lambda: _evicted(c), timeout=60, what="the snapshot let go")
            assert c.request("debug.retained", {})["snapshots"] == []
            assert c.request("status", {})["repos"][0]["querySnapshot"] == "let go"
            again = _questions(c, root)
            assert again["locate"]["snapshot"]["madeBy"] == "file"
            assert _evicted(c) == []
            assert c.request("status", {})["repos"][0]["querySnapshot"] == "held"
        for name in first:
            assert without_varying(first[name]) == without_varying(again[name]), name
    finally:
        d.cleanup()


def test_an_edit_while_the_snapshot_is_let_go_takes_it_back_and_applies_itself(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    d = DaemonProcess(env={**QUICK, "NEXUS_NO_WATCH": "1"}).start()
    try:
        with d.client() as c:
            c.request("index", {"repo": str(root)}, timeout=120)
            _questions(c, root)
            wait_for(lambda: _evicted(c), timeout=60, what="the snapshot let go")
            cli = root / "pkg" / "cli.py"
            cli.write_text(cli.read_text() + "\n\ndef added_later(v):\n    return util.helper(v)\n")
            c.request("sync", {"repo": str(root)}, timeout=60)
            assert c.request("debug.retained", {})["snapshots"] != []  # taken back by the batch, not by a query
            after = _questions(c, root)
            assert after["locate"]["snapshot"]["madeBy"] == "file"  # its file, then the batch: not the graph
            assert [r["name"] for r in after["locate new"]["results"]][:1] == ["added_later"]
            assert "added_later" in {n["name"] for n in after["callers"]["neighbors"]}
        fresh = answers_from_the_graph(d, lambda c: _questions(c, root))
        for name in after:
            assert without_varying(after[name]) == without_varying(fresh[name]), name
    finally:
        d.cleanup()
