"""The small-batch write's grouped moves (`graphwrite.write_diff`) against a real Kuzu database: a group the
graph does not hold as the diff expects is set row by row, with the rows' own values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nexusd.store import Store
from nexusd.sync.graphwrite import Batch, Diff, write_diff


def _symbol(sid: str, start: int, end: int) -> tuple[Any, ...]:
    return (sid, "r", "a.py", f"k:{sid}", sid, sid, "function", "", start, end, "", "", None, False, "", 0)


def test_a_moved_group_the_graph_does_not_hold_as_diffed_is_set_row_by_row(tmp_path: Path) -> None:
    """s2 is not under its file by CONTAINS (as after a lost edge), and one moved call edge is missing: the
    grouped statements match fewer rows than their groups, so every row of those groups is set absolutely (the
    missing edge made), and the graph ends as the diff says."""
    store = Store(tmp_path / "db.kz")
    try:
        store.ensure_schema()
        conn = store.connect()
        conn.execute("CREATE (:File {id: 'f', repoId: 'r', path: 'a.py'})")
        for sid, start in (("s1", 10), ("s2", 20)):
            conn.execute(
                "CREATE (:Symbol {id: $id, repoId: 'r', path: 'a.py', startLine: $s, endLine: $e})",
                {"id": sid, "s": start, "e": start + 1},
            )
        conn.execute("MATCH (f:File {id: 'f'}), (s:Symbol {id: 's1'}) CREATE (f)-[:CONTAINS {ordinal: 0}]->(s)")
        conn.execute(
            "MATCH (a:Symbol {id: 's1'}), (b:Symbol {id: 's2'}) "
            "CREATE (a)-[:POSSIBLY_CALLS {line: 11, resolution: 'x', confidence: 1.0}]->(b)"
        )
        diff = Diff()
        diff.moved_symbols[("f", 2, 2)] = [_symbol("s1", 12, 13), _symbol("s2", 22, 23)]
        diff.moved_calls[("s1", 2)] = [("s1", "s2", 13, "x", 1.0), ("s1", "s1", 15, "x", 1.0)]
        write_diff(conn, Batch("r"), diff)
        lines = conn.rows("MATCH (s:Symbol) RETURN s.id, s.startLine, s.endLine ORDER BY s.id")
        assert lines == [["s1", 12, 13], ["s2", 22, 23]]
        edges = conn.rows("MATCH (a:Symbol)-[e:POSSIBLY_CALLS]->(b:Symbol) RETURN a.id, b.id, e.line ORDER BY b.id")
        assert edges == [["s1", "s1", 15], ["s1", "s2", 13]]
    finally:
        store.close()
