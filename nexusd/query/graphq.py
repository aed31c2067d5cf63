"""The answers of show, context, neighbors, impact, paths, imports and importers.

Walks run over the repository's snapshot (snapshot.py) under its read lock; Cypher is used only for what the
snapshot leaves out (doc strings, file hashes and diagnostics) and always by primary key. Every list is sorted
with the semantic key as the last tie-breaker, so an answer is a function of (request, graphVersion).
"""

from __future__ import annotations

import heapq
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..errors import BadRequest, Forbidden, NotFound
from ..schema import hash_text
from . import paging
from .resolve_arg import resolve_symbol
from .snapshot import Edge, Snapshot, Sym, kind_rank

if TYPE_CHECKING:
    from ..opargs import Args
    from ..repos import Repo
    from ..store import Conn
    from .overlay import ViewSource

MAX_DEPTH = 6  # docs/field-notes.md (lookups): interactive walks stay bounded at six hops
SNIPPET_MAX_LINES = 400
SNIPPET_MAX_BYTES = 32_000


@dataclass
class Req:
    """One request as the answer builders see it: for cursors, bounds and the time budget. The builders take
    the request's arguments as parameters; `args` (the op's typed arguments) is what a cursor is bound to."""

    op: str
    args: Args
    snap: Snapshot
    repo: Repo
    conn: Conn
    user: str = ""
    clock: paging.Clock = field(default_factory=lambda: paging.Clock(5000))
    # A worktree's view (query/overlay.py): its root and its overlay's facts; None for the repository's own root.
    source: ViewSource | None = None

    @property
    def root(self) -> str:
        """The checkout the question is about: the worktree's root for a view, else the repository's."""
        return self.source.root if self.source is not None else self.repo.root

    @property
    def version(self) -> int:
        return self.snap.version

    @cached_property
    def wire(self) -> dict[str, Any]:
        return self.args.as_wire()

    def offset(self) -> int:
        return paging.read_cursor(self.op, self.wire, self.version)

    def page(self, items: list[Any], limit: int, *, total: int | None, more: bool = False) -> tuple[list[Any], dict[str, Any] | None]:
        return paging.page(self.op, self.wire, self.version, items, total=total, offset=self.offset(), limit=limit, more=more)


# -- paths and files ----------------------------------------------------------------------------------


def confine(repo: Repo, path: str, root: str | None = None) -> str:
    """A repository-relative path for `path`, refusing anything outside the root (`..`, absolute, symlinks);
    `root`: the checkout's root when it is not the repository's own (a worktree's view)."""
    if "\x00" in path:  # found by fuzzing: os.path.realpath raises ValueError on NUL, which surfaced as `internal`
        raise BadRequest("a path cannot hold a NUL byte")
    shown = root or repo.root
    root = os.path.realpath(shown)
    raw = path if os.path.isabs(path) else os.path.join(root, path)
    full = os.path.realpath(raw)
    if full != root and not full.startswith(root + os.sep):
        raise Forbidden(f"{path} is outside the repository root {shown}")
    return os.path.relpath(full, root).replace(os.sep, "/")


def resolve_file(req: Req, path: str) -> str:
    rel = confine(req.repo, path, req.root)
    if rel not in req.snap.files:
        raise NotFound(f"{rel} is not in the graph", hint="the walk may skip it (see `nexus status`), or sync first")
    return rel


def file_ref(snap: Snapshot, path: str) -> dict[str, Any]:
    ref: dict[str, Any] = {"kind": "file", "path": path}
    if snap.is_test(path):
        ref["test"] = True
    return ref


def _edge_ref(snap: Snapshot, edge: Edge) -> dict[str, Any]:
    return {"resolution": edge.resolution, "confidence": round(edge.confidence, 4), "line": edge.line}


# -- show ---------------------------------------------------------------------------------------------


def show_symbol(req: Req, sym: Sym, *, limit: int, with_snippet: bool) -> dict[str, Any]:
    snap = req.snap
    row = req.conn.dicts(
        "MATCH (s:Symbol {id: $id}) RETURN s.doc AS doc, s.contentHash AS contentHash", {"id": sym.id}
    )
    extra = {**row[0], "contentHash": hash_text(row[0]["contentHash"])} if row else {}
    own = req.source.symbol_fact(sym.path, sym.id) if req.source is not None else None
    if own is not None:  # a symbol of the view's overlay: its doc and hash are the view's (the graph's are not)
        extra = {"doc": own.fact.doc[:500], "contentHash": own.content_hash}
    node: dict[str, Any] = {
        **sym.ref(),
        "qualifiedName": sym.qname,
        "signature": sym.signature,
        "endLine": sym.end,
        "exported": sym.exported,
        "doc": extra.get("doc") or "",
        "contentHash": extra.get("contentHash") or "",
        "unresolvedCount": sym.unresolved_count,
        "callers": len(snap.calls_in.get(sym.id, ())),
        "callees": len(snap.calls_out.get(sym.id, ())),
    }
    if snap.is_test(sym.path):
        node["test"] = True
    container = snap.by_id[sym.parent].ref() if sym.parent and sym.parent in snap.by_id else file_ref(snap, sym.path)
    members = [snap.by_id[c].ref() for c in snap.children.get(sym.id, ()) if c in snap.by_id]
    shown, cut = req.page(members, limit, total=len(members))
    out: dict[str, Any] = {"node": node, "container": container, "members": shown, "memberCount": len(members)}
    if sym.unresolved:
        out["unresolved"] = list(sym.unresolved[:20])
    out["memory"] = attached_memory(req, sym)
    if with_snippet:
        out["snippet"] = snippet(req, sym.path, sym.start, sym.end)
    if cut:
        out["truncated"] = cut
    return out


def show_file(req: Req, rel: str, *, limit: int, with_snippet: bool) -> dict[str, Any]:
    snap = req.snap
    fid = snap.files[rel][0]
    row = req.conn.dicts(
        "MATCH (f:File {id: $id}) RETURN f.hash AS hash, f.language AS language, f.role AS role, "
        "f.lineCount AS lineCount, f.diagnostics AS diagnostics",
        {"id": fid},
    )
    facts = {**row[0], "hash": hash_text(row[0]["hash"])} if row else {}
    own = req.source.file_facts(rel) if req.source is not None else None
    if own is not None:  # a file of the view's overlay: its hash, role and diagnostics are the view's
        diags = [{"severity": d.severity, "code": d.code, "message": d.message[:300], "line": d.line}
                 for d in own.diagnostics[:20]]  # fmt: skip
        facts = {"hash": own.hash, "language": own.language, "role": own.role, "lineCount": own.line_count,
                 "diagnostics": json.dumps(diags) if diags else ""}  # fmt: skip
    top = sorted(
        (snap.by_id[s] for s in snap.by_file.get(rel, ()) if snap.by_id[s].parent is None),
        key=lambda s: (s.start, s.key),
    )
    members = [s.ref() for s in top if s.kind != "module"]
    shown, cut = req.page(members, limit, total=len(members))
    node = {"kind": "file", "id": fid, "path": rel, **{k: facts.get(k) for k in ("language", "role", "lineCount", "hash")}}
    if facts.get("diagnostics"):
        node["diagnostics"] = facts["diagnostics"]
    out: dict[str, Any] = {
        "node": node,
        "container": None,
        "members": shown,
        "memberCount": len(members),
        "imports": len(snap.imports_out.get(rel, ())),
        "importers": len(snap.imports_in.get(rel, ())),
    }
    if with_snippet:
        out["snippet"] = snippet(req, rel, 1, None)
    if cut:
        out["truncated"] = cut
    return out


def snippet(req: Req, rel: str, start: int, end: int | None) -> dict[str, Any]:
    """Source lines, only when the file on disk still has the indexed content (its hash is checked first)."""
    from ..parse.facts import content_hash
    from ..sourcefile import read_source_checked

    fid = req.snap.files[rel][0]
    own = req.source.file_facts(rel) if req.source is not None else None
    if own is not None:  # the view's version of the file: its bytes are checked against the view's hash
        indexed = own.hash
    else:
        indexed = hash_text(req.conn.scalar("MATCH (f:File {id: $id}) RETURN f.hash", {"id": fid}))
    data, reason = read_source_checked(req.root, rel)
    if data is None:
        if reason == "outside-root":
            raise Forbidden(f"{rel} resolves outside the repository root")
        return {"path": rel, "verified": False, "text": None, "reason": f"cannot read the file: {reason}"}
    current = content_hash(data)
    if current != indexed:
        return {
            "path": rel,
            "verified": False,
            "text": None,
            "reason": "the file changed on disk since it was indexed: its lines no longer match the graph",
            "indexedHash": indexed,
            "currentHash": current,
            "hint": "run `nexus sync` (or wait for the watcher), then ask again",
        }
    lines = data.decode("utf-8", errors="replace").splitlines()
    last = len(lines) if end is None else min(end, len(lines))
    first = max(1, start)
    cut: dict[str, Any] | None = None
    if last - first + 1 > SNIPPET_MAX_LINES:
        cut = {"bound": "lines", "limit": SNIPPET_MAX_LINES, "remainingLines": last - first + 1 - SNIPPET_MAX_LINES}
        last = first + SNIPPET_MAX_LINES - 1
    from ..history.redact import redact

    text = redact("\n".join(lines[first - 1 : last]))[0]  # source text reaches agents: no secrets in it
    if len(text) > SNIPPET_MAX_BYTES:
        text = text[:SNIPPET_MAX_BYTES]
        cut = {"bound": "bytes", "limit": SNIPPET_MAX_BYTES}
    out: dict[str, Any] = {"path": rel, "verified": True, "startLine": first, "endLine": last, "text": text, "hash": current}
    if cut:
        out["truncated"] = cut
    return out


def attached_memory(req: Req, sym: Sym) -> list[dict[str, Any]]:
    try:
        from ..memory import memory_for_symbol
    except ImportError:  # the memory layer is optional for the code questions
        return []
    own = req.source.symbol_fact(sym.path, sym.id) if req.source is not None else None
    here = (req.source.root, own.content_hash) if req.source is not None and own is not None else None
    try:  # asked from a worktree whose view has its own version of the symbol: the facts' status is against it
        return list(memory_for_symbol(req.conn, req.user, req.repo.id, sym.id, here=here))
    except Exception:  # a memory failure must not take the code answer down with it
        import logging

        logging.getLogger(__name__).exception("memory_for_symbol failed")
        return []


# -- walks --------------------------------------------------------------------------------------------


@dataclass
class Reached:
    sym: Sym
    depth: int
    confidence: float  # product of edge confidences along the path
    via: Sym | None  # the next symbol on the path toward the start (None at depth 1: the start itself)
    edge: Edge  # the first hop from this symbol toward the start
    path: list[str]  # ids from this symbol to the start, both included
    interface: Sym | None = None  # a `dispatch` hop: the interface member the call is bound to


# A call bound to an interface member reaches whichever implementation the receiver holds at run time: a
# possible caller of each implementing class's method, never a bound one (ARCHITECTURE.md, "Interface dispatch").
DISPATCH = "dispatch"
DISPATCH_FACTOR = 0.5  # times the confidence of the call's edge to the interface member
DISPATCH_LANGUAGES = frozenset({"ts", "tsx"})


def implemented_members(snap: Snapshot, sym: Sym) -> list[Sym]:
    """The interface members a class method implements: members of the same name of every interface its class
    inherits, through `implements`, base classes and interfaces extending interfaces. Empty for anything else."""
    if sym.kind != "method" or sym.parent is None or sym.key.split(":", 1)[0] not in DISPATCH_LANGUAGES:
        return []
    cls = snap.by_id.get(sym.parent)
    if cls is None or cls.kind != "class":
        return []
    out: list[Sym] = []
    seen = {cls.id}
    stack = [cls]
    while stack:
        for base in heritage(snap, stack.pop()):
            if base.id in seen:
                continue
            seen.add(base.id)
            stack.append(base)
            if base.kind == "interface":
                for child in snap.children.get(base.id, ()):
                    member = snap.by_id.get(child)
                    if member is not None and member.kind == "method" and member.name == sym.name:
                        out.append(member)
    return sorted(out, key=lambda m: m.key)


_HERITAGE: dict[tuple[str, int], dict[str, list[Sym]]] = {}  # (repository, graph version) -> class id -> bases
_HERITAGE_WORD = re.compile(r"\b(extends|implements)\b")
_HERITAGE_HOPS = 3  # import hops followed to find a base's definition (a barrel's re-export chain)


def heritage_names(signature: str) -> list[str]:
    """The names a TypeScript class or interface signature extends or implements, in order, type arguments
    dropped: `class E<T extends X> extends B<T> implements G<T>, ns.H` -> [B, G, ns.H]."""
    flat: list[str] = []
    depth = 0
    for ch in signature:
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]" and depth:
            depth -= 1
        elif depth == 0:
            flat.append(ch)
    parts = _HERITAGE_WORD.split("".join(flat))
    out: list[str] = []
    for i in range(1, len(parts) - 1, 2):
        for item in parts[i + 1].split(","):
            name = item.strip()
            if re.fullmatch(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*", name):
                out.append(name)
    return out


def heritage(snap: Snapshot, cls: Sym) -> list[Sym]:
    """The classes and interfaces a TypeScript class or interface names after `extends`/`implements` (read from
    its signature): each bound to the definition of that name in its own file, else in the nearest file it
    imports (through up to three re-export hops), else the only one of that name in the repository. A name bound
    to none of these is left out: unknown stays unknown."""
    memo = _HERITAGE.setdefault((snap.repo_id, snap.version), {})
    found = memo.get(cls.id)
    if found is not None:
        return found
    if len(_HERITAGE) > 8:
        _HERITAGE.clear()
        memo = _HERITAGE.setdefault((snap.repo_id, snap.version), {})
    found = []
    for name in heritage_names(cls.signature):
        tail = name.rsplit(".", 1)[-1]
        cands = [
            s for s in snap.live(snap.name_exact.get(tail, ()))
            if s.kind in {"class", "interface"} and s.id != cls.id and s.key.split(":", 1)[0] in DISPATCH_LANGUAGES
        ]  # fmt: skip
        if not cands:
            continue
        by_path: dict[str, list[Sym]] = {}
        for c in cands:
            by_path.setdefault(c.path, []).append(c)
        chosen = by_path.get(cls.path, [])
        frontier, visited = [cls.path], {cls.path}
        for _ in range(_HERITAGE_HOPS):
            if chosen:
                break
            nxt = []
            for path in frontier:
                for imp in snap.imports_out.get(path, ()):
                    if imp.other not in visited:
                        visited.add(imp.other)
                        nxt.append(imp.other)
            chosen = [c for path in sorted(nxt) for c in by_path.get(path, [])]
            frontier = nxt
        if not chosen and len(cands) == 1:
            chosen = cands
        if chosen:  # several of that name in the nearest file: the first by key, so answers are stable
            found.append(min(chosen, key=lambda c: c.key))
    memo[cls.id] = found
    return found


def _callers_of(snap: Snapshot, node: Sym, dispatch: bool) -> list[tuple[Edge, Sym | None]]:
    """A symbol's incoming call edges; with `dispatch`, then those of the interface members it implements,
    as `dispatch` edges with their confidence scaled down (one per caller: the most confident)."""
    edges: list[tuple[Edge, Sym | None]] = [(e, None) for e in snap.calls_in.get(node.id, ())]
    if not dispatch:
        return edges
    direct = {e.other for e in snap.calls_in.get(node.id, ())}
    best: dict[str, tuple[Edge, Sym]] = {}
    for member in implemented_members(snap, node):
        for e in snap.calls_in.get(member.id, ()):
            if e.other in direct or e.other == node.id:
                continue
            hop = Edge(e.other, e.confidence * DISPATCH_FACTOR, DISPATCH, e.line)
            cur = best.get(e.other)
            if cur is None or hop.confidence > cur[0].confidence:
                best[e.other] = (hop, member)
    edges.extend(best[k] for k in sorted(best))
    return edges


def walk_calls(
    snap: Snapshot, start: Sym, depth: int, incoming: bool, clock: paging.Clock, min_confidence: float = 0.0,
    below: set[str] | None = None,
) -> tuple[list[Reached], bool]:
    """BFS by hops over POSSIBLY_CALLS (callers when `incoming`), one shortest path per symbol reached.

    Among equally short paths the one with the higher confidence wins, then the smaller semantic key of the
    next hop. A recursive symbol is reached at depth 1 by its own call (`recursive` in its row). Edges under
    `min_confidence` are not followed; when `below` is given it collects the symbols
    such edges lead to. Returns (reached, cut by time).
    """
    adj = snap.calls_in if incoming else snap.calls_out
    best: dict[str, Reached] = {}
    hops: Callable[[Sym], list[tuple[Edge, Sym | None]]] = (
        (lambda n: _callers_of(snap, n, True)) if incoming else (lambda n: [(e, None) for e in adj.get(n.id, ())])
    )
    frontier: list[tuple[Sym, float, list[str]]] = [(start, 1.0, [start.id])]
    seen = {start.id}
    timed_out = False
    for d in range(1, depth + 1):
        layer: dict[str, Reached] = {}
        for node, conf, path in frontier:
            for edge, member in hops(node):
                if edge.confidence < min_confidence:
                    if below is not None:
                        below.add(edge.other)
                    continue
                if edge.other in seen:
                    if d == 1 and edge.other == start.id:  # a recursive call: the symbol is its own caller
                        layer[start.id] = Reached(start, 1, edge.confidence, None, edge, [start.id, start.id])
                    continue
                other = snap.by_id.get(edge.other)
                if other is None:
                    continue
                c = conf * edge.confidence
                cur = layer.get(other.id)
                if cur is None or c > cur.confidence or (c == cur.confidence and node.key < _key(cur.via, start)):
                    layer[other.id] = Reached(other, d, c, None if node is start else node, edge, [other.id, *path], member)
            if clock.over():
                timed_out = True
                break
        if not layer:
            break
        best.update(layer)
        seen.update(layer)
        frontier = sorted(((r.sym, r.confidence, r.path) for r in layer.values()), key=lambda t: t[0].key)
        if timed_out:
            break
    return sorted(best.values(), key=lambda r: (r.depth, -r.confidence, r.sym.key)), timed_out


def _key(via: Sym | None, start: Sym) -> str:
    return (via or start).key


def reached_row(snap: Snapshot, r: Reached, start: Sym) -> dict[str, Any]:
    row = r.sym.ref()
    row["depth"] = r.depth
    row["confidence"] = round(r.confidence, 4)
    row["via"] = (r.via or start).key
    row["resolution"] = r.edge.resolution
    row["callPath"] = [snap.by_id[i].key for i in r.path]
    if r.interface is not None:
        row["interface"] = r.interface.key
    if r.sym is start:
        row["recursive"] = True
    if snap.is_test(r.sym.path):
        row["test"] = True
    return row


# -- impact -------------------------------------------------------------------------------------------


def min_confidence(value: float | None) -> float:
    if value is None:
        return 0.0
    if not 0.0 <= value <= 1.0:
        raise BadRequest(f"minConfidence must be between 0 and 1, not {value}")
    return value


def impact(req: Req, target: Sym, *, depth: int, limit: int, confidence: float | None, tests: str) -> dict[str, Any]:
    snap = req.snap
    floor = min_confidence(confidence)
    below: set[str] = set()
    reached, timed_out = walk_calls(snap, target, depth, True, req.clock, floor, below)
    listed = reached
    if tests != "include":  # the walk still goes through test code; only the listing is filtered
        listed = [r for r in reached if snap.is_test(r.sym.path) == (tests == "only")]
    rows = [reached_row(snap, r, target) for r in listed]
    shown, cut = req.page(rows, limit, total=len(rows))
    by_depth: dict[str, int] = {}
    for r in reached:
        by_depth[str(r.depth)] = by_depth.get(str(r.depth), 0) + 1
    out: dict[str, Any] = {
        "target": {**target.ref(), "qualifiedName": target.qname},
        "depth": depth,
        "total": len(rows),
        "byDepth": by_depth,
        "callers": shown,
        "testCallers": sum(1 for r in reached if snap.is_test(r.sym.path)),
    }
    if floor:
        out["minConfidence"] = floor
    if tests != "include":
        out["tests"] = tests
        out["allCallers"] = len(reached)
    out.update(completeness(snap, target, reached, depth, below, broken_files(req)))
    if timed_out:
        out["completeness"] = "lower_bound"
        out["timeBound"] = {"bound": "time", "limitMs": round(req.clock.limit * 1000)}
        out.setdefault("incompleteBecause", []).append("time-bound")
    if cut:
        out["truncated"] = cut
    return out


SCOPE_TEXT = (
    "for the target and every caller the walk expanded (all but the last hop): unresolved calls of the same name "
    "whose receiver is untyped (`x.name()`, `self.name()`), anywhere in the repository, when that symbol is a "
    "method or an object-literal member; and unresolved calls of that name held by symbols in that symbol's file "
    "or in files importing it (or its package __init__), for any symbol. Calls whose head is bound outside the "
    "repository cannot reach it and are not counted. A file that did not parse cleanly, among those files, "
    "holding a caller, or importing one of those symbols' files through any chain of imports (a barrel's "
    "re-export), may hide calls or credit them to the wrong definition: it makes the answer a lower bound"
)
MEMBER_KINDS = frozenset({"method", "property_function"})
EXAMPLES_MAX = 20


def _bound_to_same_named(snap: Snapshot, expanded: list[Sym], shown: set[str]) -> list[tuple[str, int, str, str, str]]:
    """Bare-name calls the resolver bound, by the file's own bindings, to another definition of the same name in
    the same scope of the same file (`let f = ...` declared again in a nested block, a function defined twice
    under two conditions). The graph keeps one binding per name and scope, and block scopes are not tracked, so
    such a call may be a call of the symbol asked about: not a caller the answer can show, nor one it can rule
    out. (holder key, line, call, path, the symbol it was bound to), for holders the answer does not list."""
    out: list[tuple[str, int, str, str, str]] = []
    by_path: dict[str, list[Sym]] = {}
    for sym in expanded:
        by_path.setdefault(sym.path, []).append(sym)
    for path, syms in by_path.items():  # one pass over each file's symbols, however many of them were expanded
        wanted = {(s.qname, s.kind) for s in syms}
        same: dict[tuple[str, str], list[Sym]] = {}
        for sid in snap.by_file.get(path, ()):
            other = snap.by_id.get(sid)
            if other is not None and (other.qname, other.kind) in wanted:
                same.setdefault((other.qname, other.kind), []).append(other)
        for sym in syms:
            for other in same.get((sym.qname, sym.kind), ()):
                if other.id == sym.id:
                    continue
                for edge in snap.calls_in.get(other.id, ()):
                    holder = snap.by_id.get(edge.other)
                    if edge.resolution != "same-scope" or holder is None or edge.other in shown:
                        continue
                    out.append((holder.key, edge.line, sym.name, holder.path, other.key))
    out.sort()
    return out


_BROKEN: dict[tuple[str, int], frozenset[str]] = {}  # (repository, graph version) -> paths with syntax errors


def broken_files(req: Req) -> frozenset[str]:
    return broken_paths(req.conn, req.snap.repo_id, req.snap.version)


def broken_paths(conn: Conn, repo_id: str, version: int) -> frozenset[str]:
    """Paths of the repository whose last parse reported a syntax error (one File scan per graph version). The
    writer scans ahead before the database rests (`Parts.before_rest`), so an `impact` asked while it rests
    answers without opening it."""
    key = (repo_id, version)
    found = _BROKEN.get(key)
    if found is None:
        rows = conn.rows("MATCH (f:File) WHERE f.repoId = $r AND f.diagnostics CONTAINS 'syntax-error' RETURN f.path",
                         {"r": repo_id})  # fmt: skip
        found = frozenset(r[0] for r in rows)
        if len(_BROKEN) > 64:
            _BROKEN.clear()
        _BROKEN[key] = found
    return found


def completeness(
    snap: Snapshot,
    target: Sym,
    reached: list[Reached],
    depth: int,
    below: set[str] | None = None,
    broken: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """`complete`, or `lower_bound` with the unresolved call sites that could reach a symbol whose callers the
    walk looked for (the target and every caller short of the last hop), so a miss at any depth is seen; and
    why (`incompleteBecause`): unresolved calls in scope, callers cut by --min-confidence, files in scope that
    did not parse."""
    expanded = [target, *(r.sym for r in reached if r.depth < depth)]
    by_name: dict[str, list[Sym]] = {}
    for sym in expanded:
        by_name.setdefault(sym.name, []).append(sym)
    scope_cache: dict[str, set[str]] = {}

    def scope_files(path: str) -> set[str]:
        files = scope_cache.get(path)
        if files is None:
            files = scope_cache[path] = {path}
            package_init = _package_init(path)
            for p in (path, package_init):
                if p:
                    files.update(i.other for i in snap.imports_in.get(p, ()))
        return files

    hits: list[tuple[str, int, str, str]] = []  # (holder key, line, call, path)
    seen: set[tuple[str, str, int]] = set()
    elsewhere = 0
    for name, syms in by_name.items():
        for site in snap.sites(name):
            holder = snap.by_id.get(site.holder)
            if holder is None or (site.holder, site.call, site.line) in seen:
                continue
            reach = False
            if not site.external:
                member_call = "." in site.call
                for sym in syms:
                    if sym.id == site.holder:
                        continue  # a call inside the symbol itself adds no caller
                    if (member_call and sym.kind in MEMBER_KINDS) or holder.path in scope_files(sym.path):
                        reach = True
                        break
            if reach:
                seen.add((site.holder, site.call, site.line))
                hits.append((holder.key, site.line, site.call, holder.path))
            else:
                elsewhere += 1
    hits.sort()
    rebound = _bound_to_same_named(snap, expanded, {target.id, *(r.sym.id for r in reached)})
    # Callers left out by --min-confidence (and not reached another way) are callers the answer does not show.
    excluded = len((below or set()) - {r.sym.id for r in reached} - {target.id})
    damaged: list[str] = []
    if broken:
        in_scope = {r.sym.path for r in reached}
        for sym in expanded:
            in_scope |= scope_files(sym.path)
        in_scope |= importers_through_imports(snap, {sym.path for sym in expanded})
        damaged = sorted(in_scope & broken)
    complete = not hits and not rebound and not excluded and not damaged
    out: dict[str, Any] = {"completeness": "complete" if complete else "lower_bound", "unresolvedInScope": len(hits)}
    reasons = []
    if hits:
        reasons.append("unresolved-calls")
        out["unresolvedExamples"] = [
            {"in": key, "call": call, "path": path, "line": line} for key, line, call, path in hits[:EXAMPLES_MAX]
        ]
    if rebound:
        reasons.append("same-named-bindings")
        out["boundToSameNamed"] = len(rebound)
        out["sameNamedExamples"] = [
            {"in": key, "call": call, "path": path, "line": line, "boundTo": to}
            for key, line, call, path, to in rebound[:EXAMPLES_MAX]
        ]
    if excluded:
        reasons.append("below-min-confidence")
        out["belowMinConfidence"] = excluded
    if damaged:
        reasons.append("parse-errors")
        out["parseErrorFiles"] = damaged[:EXAMPLES_MAX]
        out["parseErrorFileCount"] = len(damaged)
    if reasons:
        out["incompleteBecause"] = reasons
    out["unresolvedOutOfScope"] = elsewhere
    out["scope"] = SCOPE_TEXT
    return out


MAX_REACH_FILES = 100_000  # files the importer walk of the parse-error check visits before it stops


def importers_through_imports(snap: Snapshot, paths: set[str]) -> set[str]:
    """Every file that imports one of `paths` directly or through a chain of imports: a barrel's
    `export * from "./core"`, a package `__init__` or a plain module importing and so re-exporting a name. The
    graph does not record which imports re-export, so every chain counts; for the parse-error check that can
    only turn an answer into a lower bound, never hide a miss."""
    seen = set(paths)
    frontier = list(paths)
    while frontier and len(seen) < MAX_REACH_FILES:
        nxt = []
        for f in frontier:
            for imp in snap.imports_in.get(f, ()):
                if imp.other not in seen:
                    seen.add(imp.other)
                    nxt.append(imp.other)
        frontier = nxt
    return seen - paths


def _package_init(path: str) -> str | None:
    head, _, _ = path.rpartition("/")
    init = f"{head}/__init__.py" if head else "__init__.py"
    return None if init == path else init


# -- context ------------------------------------------------------------------------------------------


def context(req: Req, sym: Sym, *, depth: int, budget: int, confidence: float | None) -> dict[str, Any]:
    snap = req.snap
    items: list[tuple[float, dict[str, Any]]] = []

    def add(score: float, row: dict[str, Any], why: str, relation: str) -> None:
        items.append((score, {"relation": relation, "why": why, **row}))

    for fact in attached_memory(req, sym):
        status = fact.get("status", "current")
        add(1.0 if status == "current" else 0.6, {"memory": fact}, f"memory attached to this symbol ({status})", "memory")
    if sym.parent and sym.parent in snap.by_id:
        add(0.95, snap.by_id[sym.parent].ref(), "container of this symbol", "container")
    else:
        add(0.95, file_ref(snap, sym.path), "file containing this symbol", "container")
    timed_out = False
    floor = min_confidence(confidence)
    for incoming, relation in ((True, "caller"), (False, "callee")):
        reached, cut = walk_calls(snap, sym, depth, incoming, req.clock, floor)
        timed_out |= cut
        for r in reached:
            score = (0.9 if r.depth == 1 else 0.6 / (r.depth - 1)) * r.confidence
            why = f"{relation} at depth {r.depth} ({r.edge.resolution}, {r.confidence:.2f})"
            row = reached_row(snap, r, sym)
            if r.depth == 1:
                row.pop("callPath")
            add(score, row, why, relation)
    for cid in snap.children.get(sym.id, ()):
        member = snap.by_id.get(cid)
        if member is not None:
            add(0.7, member.ref(), f"member of this {sym.kind}", "member")
    for imp in snap.imports_out.get(sym.path, ()):
        add(
            0.4 * imp.confidence,
            {**file_ref(snap, imp.other), "specifier": imp.specifier},
            f"imported by this symbol's file ({imp.resolution}, {imp.confidence:.2f})",
            "import",
        )
    ranked = [row for _, row in sorted(items, key=lambda t: (-t[0], _row_key(t[1])))]
    offset = req.offset()
    shown, used = paging.budget_cut(ranked, offset, budget)
    head = show_head(req, sym)
    out: dict[str, Any] = {
        "symbol": head,
        "depth": depth,
        "items": shown,
        "total": len(ranked),
        "budget": {"tokens": budget, "used": used, "note": paging.TOKEN_NOTE},
    }
    end = offset + len(shown)
    if end < len(ranked):
        left = ranked[end:]
        out["truncated"] = {
            "bound": "budget",
            "shown": len(shown),
            "remaining": len(left),
            "remainingByRelation": _count_by(left, "relation"),
            "cursor": paging.make_cursor(req.op, req.wire, req.version, end),
        }
    if timed_out:
        out["timeBound"] = {"bound": "time", "limitMs": round(req.clock.limit * 1000)}
    return out


def show_head(req: Req, sym: Sym) -> dict[str, Any]:
    own = req.source.symbol_fact(sym.path, sym.id) if req.source is not None else None
    if own is not None:
        doc = own.fact.doc[:500]
    else:
        doc = req.conn.scalar("MATCH (s:Symbol {id: $id}) RETURN s.doc", {"id": sym.id}) or ""
    return {**sym.ref(), "qualifiedName": sym.qname, "signature": sym.signature, "endLine": sym.end, "doc": doc}


def _row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row.get("relation", ""), row.get("key") or row.get("path") or str(row.get("memory", {}).get("id", "")))


def _count_by(rows: Iterable[dict[str, Any]], field_name: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in rows:
        out[row[field_name]] = out.get(row[field_name], 0) + 1
    return dict(sorted(out.items()))


# -- neighbors ----------------------------------------------------------------------------------------

EDGE_KINDS = ("calls", "contains", "inherits", "imports")


def neighbors(req: Req, start: str, *, direction: str, depth: int, edge_kinds: list[str] | None, limit: int) -> dict[str, Any]:
    """BFS from a symbol id or `file:PATH`, over the chosen edge kinds (None: all), in the chosen direction."""
    snap = req.snap
    kinds = set(edge_kinds or EDGE_KINDS)
    bad = kinds - set(EDGE_KINDS)
    if bad:
        raise BadRequest(f"unknown edge kinds {sorted(bad)}", hint=f"choose from {', '.join(EDGE_KINDS)}")
    seen = {start}
    frontier = [start]
    rows: list[dict[str, Any]] = []
    timed_out = False
    for d in range(1, depth + 1):
        nxt: list[str] = []
        for node in frontier:
            for other, kind, dir_, props in _adjacent(snap, node, direction, kinds):
                if other in seen:
                    continue
                seen.add(other)
                nxt.append(other)
                rows.append({**_node_ref(snap, other), "depth": d, "edge": {"kind": kind, "direction": dir_,
                             "from": _node_name(snap, node), **props}})  # fmt: skip
            if req.clock.over():
                timed_out = True
                break
        frontier = nxt
        if not frontier or timed_out:
            break
    rows.sort(key=lambda r: (r["depth"], r["edge"]["kind"], r["edge"]["direction"], r.get("key") or r["path"]))
    shown, cut = req.page(rows, limit, total=len(rows))
    out: dict[str, Any] = {
        "node": _node_ref(snap, start),
        "direction": direction,
        "depth": depth,
        "edgeKinds": sorted(kinds),
        "total": len(rows),
        "neighbors": shown,
    }
    if cut:
        out["truncated"] = cut
    if timed_out:
        out["timeBound"] = {"bound": "time", "limitMs": round(req.clock.limit * 1000)}
    return out


def _node_ref(snap: Snapshot, node: str) -> dict[str, Any]:
    if node.startswith("file:"):
        return file_ref(snap, node[5:])
    return snap.by_id[node].ref()


def _node_name(snap: Snapshot, node: str) -> str:
    return node[5:] if node.startswith("file:") else snap.by_id[node].key


def _adjacent(snap: Snapshot, node: str, direction: str, kinds: set[str]) -> list[tuple[str, str, str, dict[str, Any]]]:
    out: list[tuple[str, str, str, dict[str, Any]]] = []
    want_out = direction in ("out", "both")
    want_in = direction in ("in", "both")
    if node.startswith("file:"):
        path = node[5:]
        if "contains" in kinds and want_out:
            top = sorted((snap.by_id[s] for s in snap.by_file.get(path, ()) if snap.by_id[s].parent is None), key=lambda s: s.key)
            out += [(s.id, "contains", "out", {}) for s in top]
        if "imports" in kinds:
            if want_out:
                out += [(f"file:{i.other}", "imports", "out", _imp_props(i)) for i in snap.imports_out.get(path, ())]
            if want_in:
                out += [(f"file:{i.other}", "imports", "in", _imp_props(i)) for i in snap.imports_in.get(path, ())]
        return out
    sym = snap.by_id[node]
    if "contains" in kinds:
        if want_in:
            parent = sym.parent if sym.parent in snap.by_id else None
            out.append((parent or f"file:{sym.path}", "contains", "in", {}))
        if want_out:
            out += [(c, "contains", "out", {}) for c in snap.children.get(node, ()) if c in snap.by_id]
    for kind, fwd, back in (("calls", snap.calls_out, snap.calls_in), ("inherits", snap.inherits_out, snap.inherits_in)):
        if kind not in kinds:
            continue
        if want_out:
            out += [(e.other, kind, "out", _edge_ref(snap, e)) for e in fwd.get(node, ())]
        if want_in:
            out += [(e.other, kind, "in", _edge_ref(snap, e)) for e in back.get(node, ())]
    return out


def _imp_props(imp: Any) -> dict[str, Any]:
    return {"specifier": imp.specifier, "line": imp.line, "resolution": imp.resolution, "confidence": round(imp.confidence, 4)}


# -- paths --------------------------------------------------------------------------------------------

MAX_EXPANSIONS = 200_000


def paths(req: Req, src: Sym, dst: Sym, *, direction: str, max_depth: int, max_paths: int) -> dict[str, Any]:
    """Simple paths between two symbols over POSSIBLY_CALLS taken either way, shortest first.

    Each hop says `out` (the left symbol calls the right one) or `in` (the right one calls the left).
    Order: length, then higher confidence, then fewer direction changes, then the keys along the path.
    `direction`: `callees` keeps paths of `out` hops only (FROM calls ... calls TO), `callers` of `in` hops only
    (TO calls ... calls FROM); default both.
    """
    snap = req.snap
    only = {"callees": "out", "callers": "in"}.get(direction)
    offset = req.offset()
    want = offset + max_paths + 1
    balls = _Balls(snap, src, dst)
    shortest = balls.shortest(max_depth)
    found: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    budget = {"n": 0}
    cut_reason = None
    if shortest is not None:
        for length in range(max(1, shortest), max_depth + 1):
            found += _best_paths(snap, src, dst, length, balls.pruning(length), want - len(found), budget, req.clock,
                                 only)  # fmt: skip
            if budget["n"] >= MAX_EXPANSIONS:
                cut_reason = "expansions"
                break
            if req.clock.over():
                cut_reason = "time"
                break
            if len(found) >= want:
                break
    rows = [row for _, row in found]
    shown, cut = req.page(rows, max_paths, total=None, more=len(rows) > offset + max_paths)
    out: dict[str, Any] = {
        "from": src.ref(),
        "to": dst.ref(),
        "maxDepth": max_depth,
        "paths": shown,
        "shortest": shortest,
    }
    if cut:
        cut["bound"] = "maxPaths"
        out["truncated"] = cut
    if cut_reason:
        out["searchBound"] = {"bound": cut_reason, "note": "longer or later paths were not enumerated"}
    if only:
        out["direction"] = direction
        out["shortest"] = min((r["length"] for r in rows), default=None)
    if not shown and offset == 0:
        way = {"out": "FROM calling toward TO", "in": "TO calling toward FROM"}.get(only or "", "either direction")
        out["none"] = f"no path of at most {max_depth} call hops ({way}) between them"
    return out


class _Balls:
    """Undirected call-distance balls around both ends, grown one layer at a time on the cheaper side.

    `_best_paths` prunes a step to `v` with `left` hops to go unless dist(v, dst) <= left - 1. Walking the whole
    radius-maxDepth ball around `dst` to know that (the old way) touched most of a large graph through its hubs.
    Instead, for a path length L, take the ball S around src and T around dst with radii a + b = L, and measure
    distances to dst inside S | T only: for any v the enumeration reaches at step k (so dist(src, v) <= k), a
    shortest v->dst path of length <= L - k stays inside S | T (its node j hops on has dist(src, .) <= k + j, so
    it is in S while k + j <= a, and dist(., dst) <= L - k - j < b after that). The test passes for exactly the
    same nodes, so the answer is unchanged; only the work shrinks (two radius-L/2 balls, not one radius-L ball).
    """

    def __init__(self, snap: Snapshot, src: Sym, dst: Sym):
        self.snap = snap
        self.dst = dst.id
        self.src = src.id
        self.sides = [{src.id: 0}, {dst.id: 0}]  # node -> hops, around src and around dst
        self.frontiers = [[src.id], [dst.id]]
        self.radius = [0, 0]

    def _neighbours(self, node: str) -> Iterator[str]:
        for adj in (self.snap.calls_out, self.snap.calls_in):
            for e in adj.get(node, ()):
                yield e.other

    def _grow(self, side: int) -> None:
        dist, nxt = self.sides[side], []
        d = self.radius[side] + 1
        for node in self.frontiers[side]:
            for other in self._neighbours(node):
                if other not in dist:
                    dist[other] = d
                    nxt.append(other)
        self.frontiers[side] = nxt
        self.radius[side] = d

    def _cheaper(self) -> int:
        """The side whose next layer costs less to grow (by adjacency entries); an exhausted side never."""
        cost = [sum(len(self.snap.calls_out.get(n, ())) + len(self.snap.calls_in.get(n, ())) for n in f)
                for f in self.frontiers]  # fmt: skip
        return 0 if cost[0] <= cost[1] else 1

    def _reach(self, total: int) -> None:
        while self.radius[0] + self.radius[1] < total:
            if not self.frontiers[0] and not self.frontiers[1]:
                return  # both components exhausted: every distance is known
            self._grow(self._cheaper())

    def shortest(self, max_depth: int) -> int | None:
        """Hops between src and dst ignoring direction (bidirectional BFS), None beyond max_depth."""
        best: int | None = None
        while True:
            a, b = self.sides
            small, large = (a, b) if len(a) <= len(b) else (b, a)
            for node, d in small.items():
                other = large.get(node)
                if other is not None and (best is None or d + other < best):
                    best = d + other
            if best is not None and best <= self.radius[0] + self.radius[1] + 1:
                return best if best <= max_depth else None  # no undiscovered path can be shorter
            if self.radius[0] + self.radius[1] >= max_depth or not (self.frontiers[0] or self.frontiers[1]):
                return None
            self._grow(self._cheaper())

    def pruning(self, length: int) -> dict[str, int]:
        """Distances to dst that decide every pruning test of a length-`length` enumeration (see above)."""
        self._reach(length)
        inside = self.sides[0].keys() | self.sides[1].keys()
        dist = {self.dst: 0}
        frontier = [self.dst]
        for d in range(1, length):
            nxt = []
            for node in frontier:
                for other in self._neighbours(node):
                    if other not in dist and other in inside:
                        dist[other] = d
                        nxt.append(other)
            frontier = nxt
            if not frontier:
                break
        return dist


def _best_paths(
    snap: Snapshot, src: Sym, dst: Sym, length: int, dist: dict[str, int], need: int, budget: dict[str, int],
    clock: paging.Clock, only: str | None = None,
) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """The first `need` simple paths of exactly `length` hops, in answer order: (-confidence, turns, keys).

    Best-first over partial paths instead of enumerating every path of the length and sorting: each part of
    the order can only grow along a path (confidence never rises since every edge's is at most 1, turns never
    decrease, and a key sequence sorts before its extensions), so a complete path leaves the heap only after
    every path that sorts before it. Paths through hubs run to the thousands; the answer needs a handful.
    `only` ("out" or "in") keeps hops of that direction only; the undirected distances still prune soundly.
    """
    out: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    far = 1 << 30
    step_cache: dict[tuple[str, int], list[tuple[str, str, Edge]]] = {}
    # (-confidence, turns, keys, ids, hops as (direction, edge)); keys name a path uniquely, so no ties.
    heap: list[tuple[float, int, tuple[str, ...], tuple[str, ...], tuple[tuple[str, Edge], ...]]] = [
        (-1.0, 0, (src.key,), (src.id,), ())
    ]
    while heap and len(out) < need:
        neg_conf, turns, keys, ids, hops = heapq.heappop(heap)
        node = ids[-1]
        left = length - len(hops)
        if node == dst.id:
            if left == 0:
                rows = [{"from": keys[i], "to": keys[i + 1], "direction": d, "resolution": e.resolution,
                         "confidence": round(e.confidence, 4)} for i, (d, e) in enumerate(hops)]  # fmt: skip
                row = {"length": len(hops), "confidence": round(-neg_conf, 4), "nodes": list(keys), "hops": rows}
                out.append(((neg_conf, turns, list(keys)), row))
            continue
        if left == 0 or budget["n"] >= MAX_EXPANSIONS or (budget["n"] & 1023 == 0 and clock.over()):
            if left:
                break  # a bound: what was found so far is the answer's beginning
            continue
        budget["n"] += 1
        steps = step_cache.get((node, left))
        if steps is None:  # a hub is reached by many prefixes: scan its thousands of edges once per `left`
            found: dict[str, tuple[str, Edge]] = {}
            for direction, adj in (("out", snap.calls_out), ("in", snap.calls_in)):
                if only is not None and direction != only:
                    continue
                for e in adj.get(node, ()):
                    if e.other not in found and dist.get(e.other, far) <= left - 1:
                        found[e.other] = (direction, e)
            steps = step_cache[(node, left)] = [(o, d, e) for o, (d, e) in found.items()]
        last = hops[-1][0] if hops else None
        for other_id, direction, e in steps:
            if other_id in ids:
                continue
            heapq.heappush(heap, (
                neg_conf * round(e.confidence, 4),
                turns + (1 if last is not None and last != direction else 0),
                (*keys, snap.by_id[other_id].key),
                (*ids, other_id),
                (*hops, (direction, e)),
            ))  # fmt: skip
    return out


# -- imports ------------------------------------------------------------------------------------------


def imports(req: Req, rel: str, incoming: bool, *, limit: int) -> dict[str, Any]:
    snap = req.snap
    lst = (snap.imports_in if incoming else snap.imports_out).get(rel, [])
    rows = [{**file_ref(snap, i.other), **_imp_props(i)} for i in lst]
    rows.sort(key=lambda r: (r["path"], r["line"]))
    shown, cut = req.page(rows, limit, total=len(rows))
    out: dict[str, Any] = {"file": rel, "direction": "importers" if incoming else "imports", "total": len(rows), "files": shown}
    if cut:
        out["truncated"] = cut
    return out


def sym_arg(req: Req, arg: str) -> Sym:
    return resolve_symbol(req.snap, arg)


def node_arg(req: Req, arg: str) -> str:
    """A neighbors start: a file path (when it names an indexed file) or a symbol argument."""
    if "/" in arg or arg.endswith((".py", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs")):
        try:
            rel = confine(req.repo, arg, req.root)
        except Forbidden:
            raise
        if rel in req.snap.files:
            return f"file:{rel}"
    return resolve_symbol(req.snap, arg).id


def kinds_sorted(syms: Iterable[Sym]) -> list[Sym]:
    return sorted(syms, key=lambda s: (kind_rank(s.kind), s.key))
