"""The first answers after a cold index come from a snapshot built while the index wrote the graph, without
waiting, and say so; they equal the answers of a snapshot read from the graph afresh (a restart with no saved
snapshot file)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess, make_repo
from tests.query.conftest import FILES

# what varies between two daemons answering from the same graph: timing, the watcher's state, how it was made
VARYING = ("tookMs", "snapshot", "freshness", "pendingPaths")


def _questions(c: Any, root: Path) -> dict[str, dict[str, Any]]:
    def ask(op: str, **args: Any) -> dict[str, Any]:
        return c.request(op, {"repo": str(root), **args}, timeout=60)

    return {
        "locate": ask("locate", query="helper"),
        "locate words": ask("locate", query="normalize params"),
        "callers": ask("neighbors", node="pkg/util.py:helper", direction="in", edgeKinds=["calls"]),
        "impact": ask("impact", symbol="pkg/util.py:normalize"),
    }


def test_first_answers_after_a_cold_index_do_not_wait_and_equal_a_graph_read(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    d = DaemonProcess().start()
    try:
        with d.client() as c:
            c.request("index", {"repo": str(root)}, timeout=120)
            first = _questions(c, root)  # right after the index's reply
        for name, answer in first.items():
            assert answer["snapshot"] == {"madeBy": "index", "waitedMs": 0}, name
        assert [r["name"] for r in first["locate"]["results"]][:1] == ["helper"]
        assert first["callers"]["neighbors"], "helper has callers"
        d.stop()
        shutil.rmtree(d.dirs.data / "snapshots")  # no saved snapshot: the restarted daemon reads the graph
        d.start()
        with d.client() as c:
            again = _questions(c, root)
        assert again["locate"]["snapshot"]["madeBy"] == "graph"
        for name in first:
            strip = lambda r: {k: v for k, v in r.items() if k not in VARYING}  # noqa: E731
            assert strip(first[name]) == strip(again[name]), name
    finally:
        d.stop()
        shutil.rmtree(d.home, ignore_errors=True)
