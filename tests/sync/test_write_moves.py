"""The small-batch write's grouped moves (`graphwrite.write_diff`) against a real Kuzu database: a group the
graph does not hold as the diff expects is set row by row, with the rows' own values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nexusd.store import Store
from nexusd.sync.graphwrite import Batch, Diff, _file_moves, write_diff


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
        diff.moved_caller_calls[("s1", 2)] = [("s1", "s2", 13, "x", 1.0), ("s1", "s1", 15, "x", 1.0)]
        write_diff(conn, Batch("r"), diff)
        lines = conn.rows("MATCH (s:Symbol) RETURN s.id, s.startLine, s.endLine ORDER BY s.id")
        assert lines == [["s1", 12, 13], ["s2", 22, 23]]
        edges = conn.rows("MATCH (a:Symbol)-[e:POSSIBLY_CALLS]->(b:Symbol) RETURN a.id, b.id, e.line ORDER BY b.id")
        assert edges == [["s1", "s1", 15], ["s1", "s2", 13]]
    finally:
        store.close()


def _calls(conn: Any) -> list[list[Any]]:
    return conn.rows("MATCH (a:Symbol)-[e:POSSIBLY_CALLS]->(b:Symbol) RETURN a.id, b.id, e.line ORDER BY a.id, b.id")


def test_a_files_moved_calls_go_in_one_statement_that_reaches_only_them(tmp_path: Path) -> None:
    """`_file_moves`: s1 -> s3 moved by 1, s2 -> s3 did not (its line is above the edit), s2 -> s1 moved by 1.
    The file-wide statement for shift 1 moves every edge of its callers, s2 -> s3 too, so s2's moves keep a
    statement of their own; s1's, all of its edges, join the file's. Written on a real Kuzu database, only the
    moved edges move. Imports move by their file and shift too."""
    store = Store(tmp_path / "db.kz")
    try:
        store.ensure_schema()
        conn = store.connect()
        conn.execute("CREATE (:File {id: 'f', repoId: 'r', path: 'a.py'}), (:File {id: 'g', repoId: 'r', path: 'b.py'})")
        for ordinal, sid in enumerate(("s1", "s2", "s3")):
            conn.execute("CREATE (:Symbol {id: $id, repoId: 'r', path: 'a.py', startLine: 1, endLine: 2})", {"id": sid})
            conn.execute(
                "MATCH (f:File {id: 'f'}), (s:Symbol {id: $id}) CREATE (f)-[:CONTAINS {ordinal: $o}]->(s)",
                {"id": sid, "o": ordinal},
            )
        old = [("s1", "s3", 10, "x", 1.0), ("s2", "s3", 4, "x", 1.0), ("s2", "s1", 20, "x", 1.0)]
        for a, b, line, how, conf in old:
            conn.execute(
                "MATCH (a:Symbol {id: $a}), (b:Symbol {id: $b}) "
                "CREATE (a)-[:POSSIBLY_CALLS {line: $l, resolution: $r, confidence: $c}]->(b)",
                {"a": a, "b": b, "l": line, "r": how, "c": conf},
            )
        conn.execute(
            "MATCH (a:File {id: 'f'}), (b:File {id: 'g'}) "
            "CREATE (a)-[:IMPORTS {specifier: 'b', line: 1, resolution: 'x', confidence: 1.0}]->(b)"
        )
        moved = {("s1", 1): [("s1", "s3", 11, "x", 1.0)], ("s2", 1): [("s2", "s1", 21, "x", 1.0)]}
        diff = Diff()
        _file_moves("f", old, moved, diff.moved_calls, diff.moved_caller_calls)
        assert diff.moved_calls == {("f", 1): [("s1", "s3", 11, "x", 1.0)]}
        assert diff.moved_caller_calls == {("s2", 1): [("s2", "s1", 21, "x", 1.0)]}
        diff.moved_imports[("f", 3)] = [("f", "g", "b", 4, "x", 1.0)]
        report = write_diff(conn, Batch("r"), diff)
        assert _calls(conn) == [["s1", "s3", 11], ["s2", "s1", 21], ["s2", "s3", 4]]
        assert conn.rows("MATCH (:File)-[e:IMPORTS]->(:File) RETURN e.line") == [[4]]
        assert (report["callsUpdated"], report["importsUpdated"]) == (2, 1)
        # A group whose statement reaches another number of edges than it holds (s1 -> s2 is not in the
        # graph) is set row by row, the missing edge made.
        diff = Diff()
        diff.moved_calls[("f", 5)] = [("s1", "s3", 16, "x", 1.0), ("s1", "s2", 30, "x", 1.0)]
        write_diff(conn, Batch("r"), diff)
        assert _calls(conn) == [["s1", "s2", 30], ["s1", "s3", 16], ["s2", "s1", 21], ["s2", "s3", 4]]
    finally:
        store.close()
