"""The history operations' reads, as Cypher in one place (the handlers in ops/history.py hold none)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ingest import HISTORY_TABLES

if TYPE_CHECKING:
    from ..store import Conn


def counts(conn: Conn, repo_id: str) -> dict[str, int]:
    """Nodes per history table of one repository."""
    return {
        table: int(conn.scalar(f"MATCH (n:{table}) WHERE n.repoId = $r RETURN count(n)", {"r": repo_id}) or 0)
        if conn.has_table(table)
        else 0
        for table in HISTORY_TABLES
    }


def change_cols(with_patch: bool) -> str:
    return (
        "c.sha AS sha, c.message AS message, c.author AS author, c.time AS time, c.kind AS kind, "
        "c.signal AS signal, ch.path AS path, ch.status AS status, ch.additions AS additions, "
        "ch.deletions AS deletions" + (", ch.patch AS patch" if with_patch else "")
    )


def is_changed_file(conn: Conn, repo_id: str, path: str) -> bool:
    """Some stored change touched this path (as its path or its old path)."""
    return bool(
        conn.scalar(
            "MATCH (ch:Change) WHERE ch.repoId = $r AND (ch.path = $p OR ch.oldPath = $p) RETURN count(ch)",
            {"r": repo_id, "p": path},
        )
    )


def file_changes(conn: Conn, repo_id: str, path: str, limit: int, with_patch: bool) -> list[dict[str, Any]]:
    """The changes of one file with their commits, newest first."""
    return conn.dicts(
        f"MATCH (c:Commit)-[:HAS_CHANGE]->(ch:Change) WHERE ch.repoId = $r AND (ch.path = $p OR ch.oldPath = $p) "
        f"RETURN {change_cols(with_patch)} ORDER BY c.time DESC, c.sha LIMIT $n",
        {"r": repo_id, "p": path, "n": limit},
    )
