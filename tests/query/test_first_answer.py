"""The first answers after a cold index come from a snapshot built while the index wrote the graph, without
waiting, and say so; they equal the answers of a snapshot read from the graph afresh (a restart with no saved
snapshot file)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import DaemonProcess, make_repo
from tests.query.conftest import FILES, answers_from_the_graph, snapshot_questions, without_varying


def test_first_answers_after_a_cold_index_do_not_wait_and_equal_a_graph_read(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", FILES)
    d = DaemonProcess().start()
    try:
        with d.client() as c:
            c.request("index", {"repo": str(root)}, timeout=120)
            first = snapshot_questions(c, root)  # right after the index's reply
        for name, answer in first.items():
            assert answer["snapshot"] == {"madeBy": "index", "waitedMs": 0}, name
        assert [r["name"] for r in first["locate"]["results"]][:1] == ["helper"]
        assert first["callers"]["neighbors"], "helper has callers"
        again = answers_from_the_graph(d, lambda c: snapshot_questions(c, root))
        for name in first:
            assert without_varying(first[name]) == without_varying(again[name]), name
    finally:
        d.cleanup()
