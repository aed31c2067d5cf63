"""`repo.forget` leaves nothing of the repository in the daemon's memory (issue #19: RSS under op fuzzing).

A real daemon indexes two git repositories, answers the reads that fill its per-repository maps (the query
snapshot and the figures of its load, the in-daemon history index and the cached display rows of history, status
counts), forgets one, and `debug.retained`
lists which maps still hold a repository id: the forgotten one must be in none, the other one still where it was.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess, git, make_repo
from tests.reliability.common import make_py_repo


def _holding(retained: dict[str, Any], repo_id: str) -> list[str]:
    return sorted(name for name, ids in retained.items() if repo_id in ids)


def _repo(tmp_path: Path, name: str) -> str:
    root = make_py_repo(tmp_path / name, 6)
    (root / "README.md").write_text(f"# {name}\n\nThe entry point is func_1_0; see the changelog.\n")
    make_repo(root, {})
    (root / "pkg" / "m0000.py").write_text("def entry_point():\n    return 1\n")
    git(root, "commit", "-qam", f"{name}: add the entry point (#12)")
    return str(root)


def _use(c: Any, root: str) -> None:
    """The reads that fill the per-repository maps."""
    c.request("status", {"repo": root})
    c.request("locate", {"repo": root, "query": "func_1_0"})
    c.request("query", {"repo": root, "text": "entry point"})
    c.request("recall", {"repo": root, "query": "entry point changelog"})


def test_forget_leaves_no_per_repository_state(tmp_path: Path) -> None:
    d = DaemonProcess(env={"NEXUS_NO_WATCH": "1"}).start()
    try:
        c = d.client(timeout=120)
        kept, gone = _repo(tmp_path, "kept"), _repo(tmp_path, "gone")
        ids = {}
        for root in (kept, gone):
            ids[root] = c.request("index", {"repo": root})["id"]
            c.request("history.sync", {"repo": root})
        d.stop()  # (a restart: what the history index and the snapshots hold is loaded from the graph)
        d = DaemonProcess(home=d.home, env={"NEXUS_NO_WATCH": "1"}).start()
        c = d.client(timeout=120)
        for root in (kept, gone):
            _use(c, root)
        before = c.request("debug.retained")
        held = _holding(before, ids[gone])
        # The maps this test is about were filled (else it would pass for nothing).
        assert {"historyIndex", "snapshots", "loads", "statusCounts"} <= set(held), before
        c.request("repo.forget", {"repo": gone})
        _use(c, kept)
        after = c.request("debug.retained")
        assert _holding(after, ids[gone]) == [], after
        assert _holding(after, ids[kept]) == _holding(before, ids[kept]), (before, after)
        # Indexed again under the same id, it answers as before (nothing stale was needed).
        c.request("index", {"repo": gone})
        c.request("history.sync", {"repo": gone})
        hits = c.request("query", {"repo": gone, "text": "entry point"})["results"]
        assert hits, hits
    finally:
        d.stop()


def test_what_a_forget_or_a_rebuild_lets_go_is_freed(tmp_path: Path) -> None:
    """A query snapshot's load freezes the heap (`gc.freeze`), and a symbol table and its language rules refer to
    each other, so a table let go after that is a frozen cycle: before `gcpause.reclaim` every forget kept its
    repository's table, engine and facts for good (251 tables of 4 repositories after a 7-minute op fuzz)."""
    d = DaemonProcess(env={"NEXUS_NO_WATCH": "1"}).start()
    try:
        c = d.client(timeout=120)
        root = _repo(tmp_path, "churn")
        for _ in range(4):
            c.request("index", {"repo": root})
            c.request("locate", {"repo": root, "query": "func_1_0"})  # the snapshot loads: the heap is frozen
            c.request("index", {"repo": root, "full": True})
            c.request("locate", {"repo": root, "query": "func_1_0"})
            c.request("repo.forget", {"repo": root})
        c.request("index", {"repo": root})
        assert c.request("locate", {"repo": root, "query": "func_1_0"})["results"]
        deadline = time.monotonic() + 30  # the idle writer reclaims (after 2 s without work)
        live = c.request("debug.retained")["live"]
        while time.monotonic() < deadline and (live["symbolTables"] > 1 or live["engines"] > 1 or live["snapshots"] > 1):
            time.sleep(0.5)
            live = c.request("debug.retained")["live"]
        assert live == {"symbolTables": 1, "engines": 1, "snapshots": 1}, live
    finally:
        d.stop()
