"""The memory operations' reads, as Cypher in one place (the handlers in ops/memory.py hold none). Every query
filters on userId and repoId where the node has them; writes go through `MemoryService.write`, never here. A
database that never held memory has no memory tables (`model.held`): every read answers nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .model import held

if TYPE_CHECKING:
    from ..store import Conn

_SESSION_COLS = "s.id AS id, s.turnCount AS turnCount, s.endedAt AS endedAt"


def session(conn: Conn, session_id: str, user: str, repo_id: str) -> dict[str, Any] | None:
    if not held(conn):
        return None
    rows = conn.dicts(
        f"MATCH (s:Session {{id: $id}}) WHERE s.userId = $u AND s.repoId = $r RETURN {_SESSION_COLS}",
        {"id": session_id, "u": user, "r": repo_id},
    )
    return rows[0] if rows else None


def latest_open_session(conn: Conn, user: str, repo_id: str) -> dict[str, Any] | None:
    if not held(conn):
        return None
    rows = conn.dicts(
        f"MATCH (s:Session) WHERE s.userId = $u AND s.repoId = $r AND s.endedAt IS NULL "
        f"RETURN {_SESSION_COLS} ORDER BY s.startedAt DESC LIMIT 1",
        {"u": user, "r": repo_id},
    )
    return rows[0] if rows else None


def session_started(conn: Conn, session_id: str) -> dict[str, Any] | None:
    """Any user's session with this id (ids are content-addressed by user and repository)."""
    if not held(conn):
        return None
    rows = conn.dicts(
        "MATCH (s:Session {id: $id}) RETURN s.startedAt AS startedAt, s.userId AS u, s.repoId AS r", {"id": session_id}
    )
    return rows[0] if rows else None


def sessions(conn: Conn, user: str, repo_id: str, limit: int) -> list[dict[str, Any]]:
    if not held(conn):
        return []
    return conn.dicts(
        "MATCH (s:Session) WHERE s.userId = $u AND s.repoId = $r RETURN s.id AS id, s.title AS title, "
        "s.startedAt AS startedAt, s.endedAt AS endedAt, s.turnCount AS turns ORDER BY s.startedAt DESC LIMIT $n",
        {"u": user, "r": repo_id, "n": limit},
    )


def exists(conn: Conn, label: str, node_id: str) -> bool:
    if not held(conn):
        return False
    return bool(conn.rows(f"MATCH (n:{label} {{id: $id}}) RETURN n.id", {"id": node_id}))


def turn_ordinal(conn: Conn, turn_id: str) -> Any:
    if not held(conn):
        return None
    return conn.scalar("MATCH (t:Turn {id: $id}) RETURN t.ordinal", {"id": turn_id})


def latest_handoff(conn: Conn, user: str, repo_id: str) -> dict[str, Any] | None:
    """The newest handoff's properties (unprefixed), or None."""
    if not held(conn):
        return None
    rows = conn.dicts(
        "MATCH (h:Handoff) WHERE h.userId = $u AND h.repoId = $r RETURN h.* ORDER BY h.createdAt DESC, h.id LIMIT 1",
        {"u": user, "r": repo_id},
    )
    return {k.split(".", 1)[1]: v for k, v in rows[0].items()} if rows else None


def turns(conn: Conn, ids: Sequence[str], user: str, repo_id: str) -> list[dict[str, Any]]:
    if not held(conn):
        return []
    return conn.dicts(
        "MATCH (t:Turn) WHERE t.id IN $ids AND t.userId = $u AND t.repoId = $r "
        "RETURN t.id AS id, t.sessionId AS session, t.ordinal AS ordinal, t.role AS role, t.text AS text "
        "ORDER BY t.sessionId, t.ordinal",
        {"ids": list(ids), "u": user, "r": repo_id},
    )


def ids_in_scope(conn: Conn, label: str, user: str, repo_id: str, ids: Sequence[str] | None) -> list[str]:
    """The ids of `label` nodes of this user in this repository (only among `ids` when given)."""
    if not held(conn):
        return []
    params: dict[str, Any] = {"u": user, "r": repo_id}
    where = "n.userId = $u AND n.repoId = $r"
    if ids is not None:
        where += " AND n.id IN $ids"
        params["ids"] = list(ids)
    return [r[0] for r in conn.rows(f"MATCH (n:{label}) WHERE {where} RETURN n.id", params)]


def session_turn_ids(conn: Conn, session_ids: Sequence[str], user: str) -> list[str]:
    if not held(conn):
        return []
    rows = conn.rows("MATCH (t:Turn) WHERE t.sessionId IN $s AND t.userId = $u RETURN t.id",
                     {"s": list(session_ids), "u": user})  # fmt: skip
    return [r[0] for r in rows]
