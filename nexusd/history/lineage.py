"""`history SYMBOL`: the commits whose changes touched a symbol, found by the symbol's qualified name in its
file as it was at each commit (Change.symbolNames, see symbols_at.py), following the file's renames back.

Reading names stored on the changes, not the TOUCHED links to today's symbols, means the answer depends only on
history nodes: it is the same after a code-layer rebuild, a restart after `kill -9`, or a re-index that has not
relinked yet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nexusd.history import symbols_at

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
        f"MATCH (s:Symbol) WHERE s.repoId = $r AND (s.id = $t OR s.key = $t) RETURN {SYMBOL_COLS} LIMIT $n",
        params,
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


@dataclass(slots=True)
class Segment:
    """A stretch of a symbol's lineage: under `name`, in the file whose paths are `chain`, up to the time `until`
    (inclusive); `how` says how it was linked to the later stretch (None: the symbol itself)."""

    chain: list[str]
    name: str
    until: float
    how: str | None = None
    path: str = ""


def _links(conn: Conn, repo_id: str, chain: list[str]) -> list[tuple[float, symbols_at.Link]]:
    rows = conn.rows(
        "MATCH (ch:Change) WHERE ch.repoId = $r AND ch.path IN $p AND size(ch.symbolRenames) > 0 "
        "RETURN ch.time, ch.symbolRenames",
        {"r": repo_id, "p": chain},
    )
    out = []
    for when, entries in rows:
        for text in entries or ():
            link = symbols_at.decode_link(text)
            if link is not None:
                out.append((float(when or 0), link))
    return out


def lineage(conn: Conn, repo_id: str, path: str, qualified_name: str) -> list[Segment]:
    """The symbol and every symbol it continues (renamed, moved inside its file or from another file, by the
    diff's lines or by body similarity: `symbols_at.Link`), each with the times it held that name there."""
    chains: dict[str, list[str]] = {}
    links: dict[str, list[tuple[float, symbols_at.Link]]] = {}

    def chain_of(p: str) -> list[str]:
        if p not in chains:
            chains[p] = path_chain(conn, repo_id, p)
        return chains[p]

    def links_of(p: str) -> list[tuple[float, symbols_at.Link]]:
        if p not in links:
            links[p] = _links(conn, repo_id, chain_of(p))
        return links[p]

    first = Segment(chain_of(path), qualified_name, math.inf, path=path)
    out = [first]
    todo = [first]
    seen = {(path, qualified_name)}
    while todo and len(out) < MAX_NAMES:
        seg = todo.pop(0)
        for when, link in sorted(links_of(seg.path), key=lambda x: -x[0]):
            if link.new != seg.name or not link.old or when > seg.until:
                continue
            where = link.old_path or seg.path
            key = (where, link.old)
            if key in seen:
                continue
            seen.add(key)
            older = Segment(chain_of(where), link.old, when, how=link.how, path=where)
            out.append(older)
            todo.append(older)
            if len(out) >= MAX_NAMES:
                break
    return out


def earlier_names(conn: Conn, repo_id: str, chain: list[str], qualified_name: str) -> dict[str, float]:
    """The names the symbol had before in its file (path `chain[0]`), each with the time up to which it held it
    (the current one: forever)."""
    out: dict[str, float] = {}
    for seg in lineage(conn, repo_id, chain[0], qualified_name):
        out[seg.name] = max(out.get(seg.name, -math.inf), seg.until)
    return out


def _segment_changes(conn: Conn, repo_id: str, seg: Segment, cols: str) -> list[dict[str, Any]]:
    rows = conn.dicts(
        f"MATCH (c:Commit)-[:HAS_CHANGE]->(ch:Change) WHERE ch.repoId = $r AND ch.path IN $p "
        f"AND list_contains(ch.symbolNames, $q) RETURN {cols}, ch.time AS _t ORDER BY c.time DESC, c.sha",
        {"r": repo_id, "p": seg.chain, "q": seg.name},
    )
    out = []
    for row in rows:
        if float(row.pop("_t") or 0) <= seg.until:
            out.append(row)
    return out


def _newest_first(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        found.setdefault(str(row.get("sha")), row)
    return sorted(found.values(), key=lambda r: (-float(r.get("time") or 0), str(r.get("sha"))))[:limit]


def symbol_changes(
    conn: Conn, repo_id: str, path: str, qualified_name: str, cols: str, limit: int
) -> tuple[list[dict[str, Any]], list[str], list[str], list[dict[str, Any]]]:
    """The symbol's history (`lineage`), newest first, one change per commit with the commit's columns `cols`:
    - the changes that touched it in its own file (following the file's renames), under its name or an earlier
      one while it held it there: the list `git log -L` would give, with renames and moves inside the file;
    - the chain of paths the file had; the earlier names in the file;
    - `moved`: where it lived before it moved in from another file (found by body similarity), each stretch
      with its path, name, the time up to which it held them, how it was linked, and that stretch's changes."""
    segments = lineage(conn, repo_id, path, qualified_name)
    chain = segments[0].chain
    own = set(chain)
    here = [seg for seg in segments if seg.path in own]
    rows = [row for seg in here for row in _segment_changes(conn, repo_id, seg, cols)]
    former = list(dict.fromkeys(seg.name for seg in here[1:] if seg.name != qualified_name))
    moved = [
        {
            "path": seg.path,
            "name": seg.name,
            "until": int(seg.until),
            "how": seg.how,
            "changes": _newest_first(_segment_changes(conn, repo_id, seg, cols), limit),
        }
        for seg in segments
        if seg.path not in own
    ]
    return _newest_first(rows, limit), chain, former, moved


def unpatched_commits(conn: Conn, repo_id: str) -> int:
    """Non-merge commits stored as messages only (older than the patch window): their changes are unknown."""
    return int(
        conn.scalar(
            "MATCH (c:Commit) WHERE c.repoId = $r AND NOT c.isMerge AND c.fileCount = 0 RETURN count(c)",
            {"r": repo_id},
        )
        or 0
    )
