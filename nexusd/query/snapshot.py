"""An in-daemon copy of one repository's symbol table and call graph, for answers in milliseconds.

Kuzu answers a 1-hop lookup by id in ~5 ms and plans `WHERE id IN $list` as a scan (FIELD-NOTES.md; measured
1.7 s for 2,000 ids on the stdlib graph), so locate (target 2 ms) and impact at depth 3 (target 30 ms) walk this
copy instead: symbols (display fields only; doc and source stay in the graph), CONTAINS parents, POSSIBLY_CALLS
and INHERITS adjacency both ways, the names behind unresolved calls, and the identifier token indexes of
`locate.py`.

Lifecycle: loaded per repository on first use by a reader (one load at a time), then kept current by a
GRAPH_LISTENER on the writer thread, which re-reads only the files a batch changed (plus the files it
re-resolved, when the sync report lists them; otherwise the copy is dropped and reloaded on next use).
Readers hold a shared lock for the whole of one answer; a delta holds it exclusively for a few milliseconds, so an
answer never sees half a batch. Indexes hold integer slots and are filtered on read: a symbol that leaves frees its
slot (set to None) and dead entries are skipped, so a delta never rewrites the big token lists.
"""

from __future__ import annotations

import bisect
import functools
import logging
import re
import threading
from array import array
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..textsplit import split_identifier

if TYPE_CHECKING:
    from ..repos import Repo
    from ..store import Conn

log = logging.getLogger(__name__)

# Lower sorts first: where a name is ambiguous, a class or function is the likelier meaning than a module.
KIND_RANK = {"class": 0, "function": 1, "method": 2, "interface": 3, "type": 3, "enum": 3, "module": 6}
DOC_TOKENS = 40  # doc words per symbol kept for the full-text tier (memory: ~4 bytes each)


def kind_rank(kind: str) -> int:
    return KIND_RANK.get(kind, 4)


@dataclass(slots=True)
class Sym:
    slot: int
    id: str
    key: str
    name: str
    qname: str
    kind: str
    path: str
    start: int
    end: int
    signature: str
    exported: bool
    unresolved_count: int
    unresolved: tuple[str, ...] = ()
    parent: str | None = None  # container symbol id (None: the file)

    def ref(self) -> dict[str, Any]:
        """The short form every answer uses to name a symbol."""
        return {"id": self.id, "key": self.key, "name": self.name, "kind": self.kind, "path": self.path,
                "line": self.start}  # fmt: skip


@dataclass(slots=True, frozen=True)
class Edge:
    other: str  # the symbol at the far end
    confidence: float
    resolution: str
    line: int


@dataclass(slots=True, frozen=True)
class Import:
    other: str  # the file path at the far end
    specifier: str
    line: int
    resolution: str
    confidence: float


class RWLock:
    """Many readers or one writer; a waiting writer stops new readers (no writer starvation)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


_SYM_COLS = (
    "s.id, s.key, s.name, s.qualifiedName, s.kind, s.path, s.startLine, s.endLine, s.signature, s.exported, "
    "s.unresolvedCount, s.unresolved, s.doc"
)


class Snapshot:
    """One repository's symbols and edges. Mutated only under `lock.write()`; read under `lock.read()`."""

    def __init__(self, repo_id: str):
        self.repo_id = repo_id
        self.version = -1
        self.lock = RWLock()
        self.slots: list[Sym | None] = []
        self.by_id: dict[str, Sym] = {}
        self.by_key: dict[str, Sym] = {}
        self.by_file: dict[str, list[str]] = {}  # path -> symbol ids
        self.files: dict[str, tuple[str, str]] = {}  # path -> (file id, role)
        self.children: dict[str, list[str]] = {}  # container id -> member ids (ordered by line)
        self.calls_out: dict[str, list[Edge]] = {}
        self.calls_in: dict[str, list[Edge]] = {}
        self.inherits_out: dict[str, list[Edge]] = {}
        self.inherits_in: dict[str, list[Edge]] = {}
        # Lazily filtered indexes of slots (see module docstring).
        self.name_exact: dict[str, array[int]] = {}  # name -> slots
        self.name_lower: dict[str, array[int]] = {}  # lower(name) -> slots
        self.qname_lower: dict[str, array[int]] = {}  # lower(qualifiedName) -> slots
        self.sorted_names: list[str] = []  # distinct lower(name), sorted: prefix search by bisect
        self.name_tokens: dict[str, array[int]] = {}  # identifier parts of the name -> slots
        self.text_tokens: dict[str, array[int]] = {}  # parts of qualified name, path, signature, doc -> slots
        self.unresolved_by_tail: dict[str, list[tuple[str, str]]] = {}  # "bar" -> [(symbol id, "self.foo.bar")]
        self.imports_out: dict[str, list[Import]] = {}  # file path -> what it imports
        self.imports_in: dict[str, list[Import]] = {}  # file path -> who imports it

    # -- reading ------------------------------------------------------------------------------------

    def live(self, slots: Iterable[int]) -> Iterator[Sym]:
        for slot in slots:
            sym = self.slots[slot]
            if sym is not None:
                yield sym

    def role(self, path: str) -> str:
        entry = self.files.get(path)
        return entry[1] if entry else ""

    def is_test(self, path: str) -> bool:
        return self.role(path) == "test"

    def rank_key(self, sym: Sym) -> tuple[Any, ...]:
        """The deterministic order of equally good matches: kind, non-test first, shorter path, key."""
        return (kind_rank(sym.kind), self.is_test(sym.path), len(sym.path), sym.key)

    def counts(self) -> dict[str, int]:
        return {
            "symbols": len(self.by_id),
            "files": len(self.files),
            "calls": sum(len(v) for v in self.calls_out.values()),
        }

    # -- loading ------------------------------------------------------------------------------------

    def load(self, conn: Conn, version: int) -> None:
        """Read the whole repository (caller holds the write lock)."""
        self.__init__(self.repo_id)  # type: ignore[misc]
        self._read(conn, None)
        self.sorted_names = sorted(self.name_lower)
        _split.cache_clear()
        self.version = version

    def apply(self, conn: Conn, version: int, paths: set[str]) -> None:
        """Forget everything in `paths` and read those files again (caller holds the write lock)."""
        for path in paths:
            for sid in self.by_file.pop(path, []):
                self._forget(sid)
            self.files.pop(path, None)
            for imp in self.imports_out.pop(path, []):
                self.imports_in[imp.other] = [i for i in self.imports_in.get(imp.other, []) if i.other != path]
            for imp in self.imports_in.pop(path, []):
                self.imports_out[imp.other] = [i for i in self.imports_out.get(imp.other, []) if i.other != path]
        self._read(conn, sorted(paths))
        self.version = version

    def _forget(self, sid: str) -> None:
        sym = self.by_id.pop(sid, None)
        if sym is None:
            return
        self.slots[sym.slot] = None
        if self.by_key.get(sym.key) is sym:
            del self.by_key[sym.key]
        self.children.pop(sid, None)
        if sym.parent and sym.parent in self.children:
            self.children[sym.parent] = [c for c in self.children[sym.parent] if c != sid]
        for out, inn in ((self.calls_out, self.calls_in), (self.inherits_out, self.inherits_in)):
            for edge in out.pop(sid, []):
                lst = inn.get(edge.other)
                if lst:
                    inn[edge.other] = [e for e in lst if e.other != sid]
            for edge in inn.pop(sid, []):
                lst = out.get(edge.other)
                if lst:
                    out[edge.other] = [e for e in lst if e.other != sid]
        for raw in sym.unresolved:
            lst2 = self.unresolved_by_tail.get(_tail(raw))
            if lst2:
                self.unresolved_by_tail[_tail(raw)] = [x for x in lst2 if x[0] != sid]

    def _read(self, conn: Conn, paths: list[str] | None) -> None:
        """Read files, symbols, containment and edges: of the repository, or of some of its files."""
        p: dict[str, Any] = {"r": self.repo_id}
        only = ""
        if paths is not None:
            p["paths"] = paths
            only = " AND {v}.path IN $paths"
        for fid, path, role in conn.rows(
            "MATCH (f:File) WHERE f.repoId = $r" + only.format(v="f") + " RETURN f.id, f.path, f.role", p
        ):
            self.files[path] = (fid, role or "")
        incremental = paths is not None
        fresh: list[Sym] = []
        for row in conn.rows("MATCH (s:Symbol) WHERE s.repoId = $r" + only.format(v="s") + f" RETURN {_SYM_COLS}", p):
            sid = row[0]
            if sid in self.by_id:
                continue
            raw = tuple(x for x in (row[11] or "").split("\n") if x)
            sym = Sym(
                slot=len(self.slots), id=sid, key=row[1] or "", name=row[2] or "", qname=row[3] or "",
                kind=row[4] or "", path=row[5] or "", start=row[6] or 0, end=row[7] or 0,
                signature=row[8] or "", exported=bool(row[9]), unresolved_count=row[10] or 0, unresolved=raw,
            )  # fmt: skip
            self.slots.append(sym)
            self.by_id[sid] = sym
            self.by_key[sym.key] = sym
            self.by_file.setdefault(sym.path, []).append(sid)
            fresh.append(sym)
            self._index(sym, row[12] or "")
            for r in raw:
                self.unresolved_by_tail.setdefault(_tail(r), []).append((sid, r))
            if incremental:
                low = sym.name.lower()
                pos = bisect.bisect_left(self.sorted_names, low)
                if pos == len(self.sorted_names) or self.sorted_names[pos] != low:
                    self.sorted_names.insert(pos, low)
        # CONTAINS between symbols (a file's top-level symbols have no parent symbol).
        touched_parents: set[str] = set()
        for parent, child in conn.rows(
            "MATCH (p:Symbol)-[:CONTAINS]->(s:Symbol) WHERE s.repoId = $r" + only.format(v="s") + " RETURN p.id, s.id",
            p,
        ):
            member = self.by_id.get(child)
            if member is not None and parent in self.by_id:
                member.parent = parent
                lst = self.children.setdefault(parent, [])
                if child not in lst:
                    lst.append(child)
                    touched_parents.add(parent)
        for parent in touched_parents:
            self.children[parent].sort(key=lambda c: (self.by_id[c].start, self.by_id[c].key))
        for rel, out, inn in (
            ("POSSIBLY_CALLS", self.calls_out, self.calls_in),
            ("INHERITS", self.inherits_out, self.inherits_in),
        ):
            line = "e.line" if rel == "POSSIBLY_CALLS" else "0"
            ends = ["a", "b"] if incremental else ["a"]
            touched: set[tuple[int, str]] = set()
            # Every edge read here is new to the adjacency (_forget dropped both ends' edges): dedupe locally.
            pairs: set[tuple[str, str]] = set()
            for end in ends:
                q = f"MATCH (a:Symbol)-[e:{rel}]->(b:Symbol) WHERE {end}.repoId = $r" + only.format(v=end)
                for a, b, conf, res, ln in conn.rows(f"{q} RETURN a.id, b.id, e.confidence, e.resolution, {line}", p):
                    if a not in self.by_id or b not in self.by_id or (a, b) in pairs:
                        continue  # one edge per ordered pair: the walk needs no more
                    pairs.add((a, b))
                    conf = float(conf if conf is not None else 1.0)
                    out.setdefault(a, []).append(Edge(b, conf, res or "", ln or 0))
                    inn.setdefault(b, []).append(Edge(a, conf, res or "", ln or 0))
                    touched.add((0, a))
                    touched.add((1, b))
            for side, sid in touched:
                (out if side == 0 else inn)[sid].sort(key=self._edge_order)

        touched_files: set[tuple[int, str]] = set()
        seen_imports: set[tuple[str, str, int]] = set()
        for end in (["a", "b"] if incremental else ["a"]):
            q = f"MATCH (a:File)-[e:IMPORTS]->(b:File) WHERE {end}.repoId = $r" + only.format(v=end)
            for a, b, spec, ln, res, conf in conn.rows(
                f"{q} RETURN a.path, b.path, e.specifier, e.line, e.resolution, e.confidence", p
            ):
                if (a, b, ln or 0) in seen_imports:
                    continue
                seen_imports.add((a, b, ln or 0))
                conf = float(conf if conf is not None else 1.0)
                self.imports_out.setdefault(a, []).append(Import(b, spec or "", ln or 0, res or "", conf))
                self.imports_in.setdefault(b, []).append(Import(a, spec or "", ln or 0, res or "", conf))
                touched_files.add((0, a))
                touched_files.add((1, b))
        for side, path in touched_files:
            (self.imports_out if side == 0 else self.imports_in)[path].sort(key=lambda i: (i.other, i.line))

    def _edge_order(self, edge: Edge) -> tuple[str, int]:
        other = self.by_id.get(edge.other)
        return (other.key if other else edge.other, edge.line)

    def _index(self, sym: Sym, doc: str) -> None:
        slot = sym.slot
        _add(self.name_exact, sym.name, slot)
        _add(self.name_lower, sym.name.lower(), slot)
        _add(self.qname_lower, sym.qname.lower(), slot)
        parts = _split(sym.name)
        for tok in parts:
            _add(self.name_tokens, tok, slot)
        text = set(parts)
        for source in (sym.qname, sym.path, sym.signature):
            for word in _WORD.findall(source):
                text.update(_split(word))
        n = 0
        for word in _WORD.findall(doc):
            for tok in _split(word):
                if len(tok) > 1 and tok not in text:
                    text.add(tok)
                    n += 1
            if n >= DOC_TOKENS:
                break
        for tok in text:
            _add(self.text_tokens, tok, slot)


_WORD = re.compile(r"[A-Za-z0-9_]+")


@functools.lru_cache(maxsize=262_144)
def _split(word: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(split_identifier(word)))


def _add(index: dict[str, array[int]], token: str, slot: int) -> None:
    arr = index.get(token)
    if arr is None:
        index[token] = array("i", (slot,))
    else:
        arr.append(slot)


def _tail(raw: str) -> str:
    """The called name inside a raw call string: "self.foo.bar" -> "bar", "reg.lookup().helper" -> "helper"."""
    names = _IDENT.findall(raw)
    return names[-1] if names else raw


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# -- the per-daemon registry of snapshots -------------------------------------------------------------


class Snapshots:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snaps: dict[str, Snapshot] = {}
        self._stale: set[str] = set()

    def get(self, conn: Conn, repo: Repo) -> Snapshot:
        """The repository's snapshot, loaded now if missing or dropped (on the caller's reader connection)."""
        with self._lock:
            snap = self._snaps.get(repo.id)
            if snap is None:
                snap = self._snaps[repo.id] = Snapshot(repo.id)
                self._stale.add(repo.id)
        if repo.id in self._stale:
            with snap.lock.write():
                if repo.id in self._stale:
                    self._stale.discard(repo.id)
                    snap.load(conn, repo.graph_version)
                    log.info("query snapshot of %s: %s", repo.root, snap.counts())
        return snap

    def on_batch(self, repo: Repo, changed: set[str], *, reload: bool, conn: Conn) -> None:
        with self._lock:
            snap = self._snaps.get(repo.id)
            if snap is None or repo.id in self._stale:
                return
            if reload:
                self._stale.add(repo.id)
                return
        with snap.lock.write():
            if repo.id in self._stale:
                return
            try:
                snap.apply(conn, repo.graph_version, changed)
            except Exception:
                log.exception("query snapshot delta failed; reloading on next use")
                self._stale.add(repo.id)

    def drop(self, repo_id: str) -> None:
        with self._lock:
            self._snaps.pop(repo_id, None)
            self._stale.discard(repo_id)
