"""Memory attached to code: which symbol a fact is about, and whether that symbol is still the same.

A fact about a symbol keeps the symbol's id, key, name, kind, path and content hash as properties (they
survive a rebuild of the code layer) plus an ABOUT edge. Reading it computes its status:

    current    the symbol id exists with the remembered content hash
    stale      the symbol id exists, its code changed
    moved      the id is gone; a symbol with the same name, kind and content hash lives elsewhere
    renamed    the id is gone; in the same file a symbol of the same kind has the same content hash, or the
               same text once the names are masked out (the content hash covers the name)
    orphaned   none of the above: the symbol disappeared

moved and renamed facts follow their symbol (a write queued for the writer), so the next read says current.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import Ambiguous, NotFound
from ..schema import hash_text, stored_hash
from .model import held

if TYPE_CHECKING:
    from ..store import Conn

log = logging.getLogger(__name__)

SYMBOL_COLUMNS = (
    "s.id AS id, s.key AS key, s.name AS name, s.qualifiedName AS qualifiedName, s.kind AS kind, "
    "s.path AS path, s.contentHash AS contentHash, s.startLine AS startLine, s.endLine AS endLine"
)
# Bare-name candidates: definitions people talk about first.
_KIND_RANK = {"class": 0, "function": 1, "interface": 1, "type": 2, "method": 2, "enum": 2}


def _symbol_dicts(conn: Conn, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """`conn.dicts` of a query that returns SYMBOL_COLUMNS, the content hash as hex (the facts keep hex)."""
    rows = conn.dicts(query, params)
    for row in rows:
        row["contentHash"] = hash_text(row["contentHash"])
    return rows


def symbol_table_exists(conn: Conn) -> bool:
    try:
        conn.rows("MATCH (s:Symbol) RETURN s.id LIMIT 1")
        return True
    except Exception:
        return False


def resolve_symbol(conn: Conn, repo_id: str, ref: str) -> dict[str, Any]:
    """The symbol `ref` names: an id, a semantic key, a qualified name or a bare name (ranked if ambiguous)."""
    rows = _symbol_dicts(conn, f"MATCH (s:Symbol {{id: $ref}}) WHERE s.repoId = $r RETURN {SYMBOL_COLUMNS}", {"ref": ref, "r": repo_id})
    if not rows:
        rows = _symbol_dicts(conn, f"MATCH (s:Symbol) WHERE s.repoId = $r AND s.key = $ref RETURN {SYMBOL_COLUMNS}", {"ref": ref, "r": repo_id})
    if not rows:
        rows = _symbol_dicts(
            conn,
            f"MATCH (s:Symbol) WHERE s.repoId = $r AND s.qualifiedName = $ref RETURN {SYMBOL_COLUMNS}",
            {"ref": ref, "r": repo_id},
        )
    if not rows and ":" in ref:  # path:qualifiedName
        path, _, qname = ref.rpartition(":")
        rows = _symbol_dicts(
            conn,
            f"MATCH (s:Symbol) WHERE s.repoId = $r AND s.path = $p AND s.qualifiedName = $q RETURN {SYMBOL_COLUMNS}",
            {"p": path, "q": qname, "r": repo_id},
        )
    if not rows:
        rows = _symbol_dicts(conn, f"MATCH (s:Symbol) WHERE s.repoId = $r AND s.name = $ref RETURN {SYMBOL_COLUMNS}", {"ref": ref, "r": repo_id})
    if not rows:
        raise NotFound(f"no symbol {ref!r} in this repository", hint="`nexus locate` finds symbols by name or words")
    if len(rows) > 1:
        rows.sort(key=lambda s: (_KIND_RANK.get(s["kind"] or "", 5), len(s["path"] or ""), s["path"] or "", s["key"] or ""))
        candidates = [{k: s[k] for k in ("id", "key", "name", "qualifiedName", "kind", "path")} for s in rows[:20]]
        raise Ambiguous(
            f"{ref!r} names {len(rows)} symbols",
            hint="pass the symbol's key or id (see the candidates)",
            data={"candidates": candidates},
        )
    return rows[0]


def shape_hash(root: str | None, symbol: dict[str, Any]) -> str | None:
    """A hash of the symbol's source with its own name masked out: equal for a pure rename."""
    if not root or not symbol.get("path") or not symbol.get("startLine"):
        return None
    from ..sourcefile import read_source_checked

    # Inside the root, never through a symlink, a regular file only (a FIFO swapped in must not block a reader).
    data, _reason = read_source_checked(root, str(symbol["path"]))
    if data is None:
        return None
    lines = data.decode("utf-8", errors="replace").splitlines()
    start, end = int(symbol["startLine"]), int(symbol.get("endLine") or symbol["startLine"])
    text = "\n".join(lines[start - 1 : end])
    name = symbol.get("name") or ""
    if name:
        text = re.sub(rf"\b{re.escape(name)}\b", "\x00", text)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


# (symbol path, symbol id) -> [(worktree root, the symbol's content hash there)]: the worktrees' views whose own
# version of the file holds the symbol (the query layer's overlays, handed in by the caller).
ViewLookup = Callable[[str, str], list[tuple[str, str]]]


def _against(fact: dict[str, Any], content_hash: str | None) -> str:
    return "stale" if fact.get("symbolHash") and content_hash and content_hash != fact["symbolHash"] else "current"


def fact_status(
    conn: Conn, fact: dict[str, Any], root: str | None, views: ViewLookup | None = None, here: str | None = None
) -> tuple[str, dict[str, Any] | None]:
    """(status, the symbol to follow when moved/renamed). `fact` carries the symbol* properties. `here`: the
    worktree the question was asked from; where its view has its own version of the symbol, the status is
    against that version. A symbol the graph lacks but a view has is current or stale against the view (the
    caller marks the fact as that view's only: `view_only`)."""
    sym_id = fact.get("symbolId")
    if not sym_id:
        return "unattached", None
    held = views(str(fact.get("symbolPath") or ""), str(sym_id)) if views is not None else []
    for view_root, content_hash in held:
        if view_root == here:
            return _against(fact, content_hash), None
    rows = _symbol_dicts(conn, f"MATCH (s:Symbol {{id: $id}}) RETURN {SYMBOL_COLUMNS}", {"id": sym_id})
    if rows:
        return _against(fact, rows[0]["contentHash"]), None
    if held:  # only in worktrees' views: current while one of them has it as remembered
        return min((_against(fact, h) for _, h in held), key=lambda st: st != "current"), None
    repo_id, kind, name, path = fact.get("repoId"), fact.get("symbolKind"), fact.get("symbolName"), fact.get("symbolPath")
    remembered = stored_hash(fact.get("symbolHash"))
    if remembered is not None:
        moved = _symbol_dicts(
            conn,
            f"MATCH (s:Symbol) WHERE s.repoId = $r AND s.name = $n AND s.kind = $k AND s.contentHash = $h "
            f"RETURN {SYMBOL_COLUMNS} ORDER BY s.path LIMIT 2",
            {"r": repo_id, "n": name, "k": kind, "h": remembered},
        )
        if len(moved) == 1:
            return "moved", moved[0]
    if path:
        siblings = _symbol_dicts(
            conn,
            f"MATCH (s:Symbol) WHERE s.repoId = $r AND s.path = $p AND s.kind = $k AND s.name <> $n "
            f"RETURN {SYMBOL_COLUMNS} ORDER BY s.startLine",
            {"r": repo_id, "p": path, "k": kind, "n": name or ""},
        )
        same = [s for s in siblings if fact.get("symbolHash") and s["contentHash"] == fact["symbolHash"]]
        if not same and fact.get("symbolShape"):
            same = [s for s in siblings if shape_hash(root, s) == fact["symbolShape"]]
        if len(same) == 1:
            return "renamed", same[0]
    return "orphaned", None


def view_only(conn: Conn, fact: dict[str, Any], views: ViewLookup | None) -> list[str]:
    """The worktrees whose view alone has the fact's symbol (the graph, the repository's root, does not)."""
    sym_id, path = fact.get("symbolId"), fact.get("symbolPath")
    if views is None or not sym_id or not path:
        return []
    held = views(str(path), str(sym_id))
    if not held or conn.scalar("MATCH (s:Symbol {id: $id}) RETURN count(s)", {"id": sym_id}):
        return []
    return [root for root, _ in held]


def memory_for_symbol(
    conn: Conn, user: str, repo_id: str, symbol_id: str, *, here: tuple[str, str] | None = None
) -> list[dict[str, Any]]:
    """The facts this user remembered about a symbol, each with its status (for `show` and `context`). `here`:
    (worktree root, the symbol's content hash in that worktree's view) when asked from a view that has its own
    version of the symbol: the status is against it, and a symbol the graph lacks marks the fact `viewOnly`."""
    if not held(conn):
        return []
    rows = conn.dicts(
        "MATCH (f:Fact) WHERE f.userId = $u AND f.repoId = $r AND f.symbolId = $s "
        "RETURN f.id AS id, f.text AS text, f.createdAt AS createdAt, f.usedCount AS usedCount, "
        "f.symbolHash AS symbolHash ORDER BY f.createdAt",
        {"u": user, "r": repo_id, "s": symbol_id},
    )
    if not rows:
        return []
    in_graph = conn.dicts("MATCH (s:Symbol {id: $id}) RETURN s.contentHash AS h", {"id": symbol_id})
    current = here[1] if here is not None else (hash_text(in_graph[0]["h"]) if in_graph else None)
    out = []
    for row in rows:
        stale = bool(row["symbolHash"] and current and current != row["symbolHash"])
        item = {
            "id": row["id"],
            "type": "fact",
            "text": row["text"],
            "createdAt": row["createdAt"],
            "usedCount": row["usedCount"] or 0,
            "status": "stale" if stale else "current",
        }
        if here is not None and not in_graph:
            item["viewOnly"] = [here[0]]
        out.append(item)
    return out
