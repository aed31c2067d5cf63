"""`history SYMBOL`: the commits whose changes touched a symbol, found by the symbol's qualified name in its
file as it was at each commit (Change.symbolNames, see symbols_at.py), following the file's renames back.

Reading names stored on the changes, not the TOUCHED links to today's symbols, means the answer depends only on
history nodes: it is the same after a code-layer rebuild, a restart after `kill -9`, or a re-index that has not
relinked yet.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nexusd.store import Conn

MAX_RENAMES = 64

SYMBOL_COLS = (
    "s.id AS id, s.key AS key, s.name AS name, s.qualifiedName AS qualifiedName, s.kind AS kind, "
    "s.path AS path, s.startLine AS startLine, s.endLine AS endLine"
)


def find_symbols(conn: Conn, repo_id: str, target: str, limit: int = 20) -> list[dict[str, Any]]:
    """Symbols a target names, best first: an id or key (as `locate` prints them), `path:QualifiedName`, a
    qualified name, then a bare name. Exact spellings win; the caller says when several remain."""
    text = target.strip()
    params = {"r": repo_id, "t": text, "n": limit}
    rows = conn.dicts(
        f"MATCH (s:Symbol) WHERE s.repoId = $r AND (s.id = $t OR s.key = $t) RETURN {SYMBOL_COLS} LIMIT $n", params
    )
    if rows:
        return rows
    if ":" in text:
        path, name = text.rsplit(":", 1)
        rows = conn.dicts(
            f"MATCH (s:Symbol) WHERE s.repoId = $r AND s.path = $p AND (s.qualifiedName = $q OR s.name = $q) "
            f"RETURN {SYMBOL_COLS} ORDER BY s.startLine LIMIT $n",
            {"r": repo_id, "p": path.strip().strip("/").removeprefix("./"), "q": name.strip(), "n": limit},
        )
        if rows:
            exact = [r for r in rows if r["qualifiedName"] == name.strip()]
            return exact or rows
    rows = conn.dicts(
        f"MATCH (s:Symbol) WHERE s.repoId = $r AND (s.qualifiedName = $t OR s.name = $t) "
        f"RETURN {SYMBOL_COLS} ORDER BY s.path, s.startLine LIMIT $n",
        params,
    )
    exact = [r for r in rows if r["qualifiedName"] == text]
    return exact or rows


def path_chain(conn: Conn, repo_id: str, path: str) -> list[str]:
    """The path and, through the stored renames, every path the file had before (newest first)."""
    chain = [path]
    seen = {path}
    frontier = [path]
    while frontier and len(chain) < MAX_RENAMES:
        rows = conn.rows(
            "MATCH (ch:Change) WHERE ch.repoId = $r AND ch.status = 'R' AND ch.path IN $p "
            "RETURN ch.oldPath ORDER BY ch.time DESC",
            {"r": repo_id, "p": frontier},
        )
        frontier = []
        for (old,) in rows:
            if old and old not in seen:
                seen.add(old)
                chain.append(old)
                frontier.append(old)
    return chain


MAX_NAMES = 64


def earlier_names(conn: Conn, repo_id: str, chain: list[str], qualified_name: str) -> dict[str, float]:
    """The names the symbol had before, each with the time up to which it held it (the current one: forever),
    through the renames the stored changes recorded (Change.symbolRenames, "new<TAB>old")."""
    rows = conn.rows(
        "MATCH (ch:Change) WHERE ch.repoId = $r AND ch.path IN $p AND size(ch.symbolRenames) > 0 "
        "RETURN ch.time, ch.symbolRenames",
        {"r": repo_id, "p": chain},
    )
    renames = [(float(t or 0), pair.split("\t", 1)) for t, pairs in rows for pair in pairs or () if "\t" in pair]
    names = {qualified_name: math.inf}
    changed = True
    while changed and len(names) < MAX_NAMES:
        changed = False
        for when, (new, old) in renames:
            if new in names and when <= names[new] and names.get(old, -math.inf) < when:
                names[old] = when
                changed = True
    return names


def symbol_changes(
    conn: Conn, repo_id: str, path: str, qualified_name: str, cols: str, limit: int
) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """The changes (newest first, with their commit's columns `cols`) that touched the symbol under its name, or
    an earlier name while it had it, in its file under any of its earlier paths; that chain of paths; the
    earlier names."""
    chain = path_chain(conn, repo_id, path)
    names = earlier_names(conn, repo_id, chain, qualified_name)
    held_any = " OR ".join(f"list_contains(ch.symbolNames, $q{i})" for i in range(len(names)))
    rows = conn.dicts(
        f"MATCH (c:Commit)-[:HAS_CHANGE]->(ch:Change) WHERE ch.repoId = $r AND ch.path IN $p "
        f"AND ({held_any}) RETURN {cols}, ch.symbolNames AS _names ORDER BY c.time DESC, c.sha",
        {"r": repo_id, "p": chain, **{f"q{i}": name for i, name in enumerate(names)}},
    )
    out = []
    for row in rows:
        held = row.pop("_names") or ()
        if any(float(row.get("time") or 0) <= names.get(n, -math.inf) for n in held):
            out.append(row)
            if len(out) >= limit:
                break
    return out, chain, [n for n in names if n != qualified_name]


def unpatched_commits(conn: Conn, repo_id: str) -> int:
    """Non-merge commits stored as messages only (older than the patch window): their changes are unknown."""
    return int(
        conn.scalar(
            "MATCH (c:Commit) WHERE c.repoId = $r AND NOT c.isMerge AND c.fileCount = 0 RETURN count(c)",
            {"r": repo_id},
        )
        or 0
    )
