"""An in-daemon copy of one repository's symbol table and call graph, for answers in milliseconds.

Kuzu answers a 1-hop lookup by id in ~5 ms and plans `WHERE id IN $list` as a scan (docs/field-notes.md, lookups; measured
1.7 s for 2,000 ids on the stdlib graph), so locate (target 2 ms) and impact at depth 3 (target 30 ms) walk this
copy instead: symbols (display fields only; doc and source stay in the graph), CONTAINS parents, POSSIBLY_CALLS
and INHERITS adjacency both ways, the names behind unresolved calls, and the identifier token indexes of
`locate.py`.

Lifecycle (see `Snapshots`): after a cold index, its arrays are made straight from the batch's files
(`compact.build`: the facts and resolutions graphwrite wrote, no Kuzu reads, no dict form) on a background
thread that starts once the batch is resolved, while Kuzu writes it (`Snapshots.prebuild`), and shown by the
batch's commit (the writer waits there for what is left of the build, so an answer right after the index does
not wait; when there was no such build, one starts after the commit and early readers wait for it); when no batch says what the graph holds (after a daemon restart), loaded from the graph by the first
reader (one load at a time). Either way kept current by `Snapshots.apply_batch`, a listener on the writer thread,
which redoes only the files a batch changed, deleted or re-resolved: from the batch's files, or by reading them
from the graph when the batch does not carry them. The snapshot never sees the sync engine.
Readers hold a shared lock for the whole of one answer; a delta holds it exclusively for a few milliseconds, so an
answer never sees half a batch. Indexes hold integer slots and are filtered on read: a symbol that leaves frees its
slot (set to None) and dead entries are skipped, so a delta never rewrites the big token lists.

Resident form (`compact.py`): one string table and flat arrays, made so after a cold index, and soon after a
graph read by a compaction in the background (readers use the dict form meanwhile); its tables then read as mappings over those
arrays (`Sym`, `Edge` and `Import` made on each read), and later batches go into a dict over each table
(`compact.Over`) until the next compaction, 30 s after the last batch (`NEXUS_SNAPSHOT_SAVE_S`). Each compaction
is also saved beside the graph (`<data>/snapshots/<repo id>.snap`), stamped with the graph version it holds; after
a restart the first reader loads that file instead of reading the graph, if its stamp matches the repository's
current graph version and its checksum holds (else the graph is read, as before).
"""

from __future__ import annotations

import bisect
import functools
import gc
import logging
import os
import re
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import forked
from ..batch import CommittedBatch, FileData, call_rows, import_rows
from ..parse import gcpause
from ..resolve.base import MAX_STORED_SITES, absolute_sites, parse_unresolved
from ..store import StoreError
from ..textsplit import split_identifier
from . import compact

if TYPE_CHECKING:
    from ..repos import Repo
    from ..store import Conn


log = logging.getLogger(__name__)

# Lower sorts first: where a name is ambiguous, a class or function is the likelier meaning than a module.
# An overload stub ranks below everything but modules: the implementation is what a reader asks for.
KIND_RANK = {
    "class": 0, "function": 1, "method": 2, "property_function": 2, "interface": 3, "type": 3, "enum": 3,
    "constant": 3, "variable": 4, "overload": 5, "module": 6,
}  # fmt: skip
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
    # The stored unresolved call sites as the graph holds them: entries joined by newlines (one string, not a
    # tuple of strings: a third of a symbol's memory went to these), no empty entry.
    unresolved_text: str = ""
    parent: str | None = None  # container symbol id (None: the file)

    @property
    def unresolved(self) -> tuple[str, ...]:
        """The stored unresolved call sites (`resolve.base.unresolved_entry` form), in stored order."""
        return tuple(self.unresolved_text.split("\n")) if self.unresolved_text else ()

    def ref(self) -> dict[str, Any]:
        """The short form every answer uses to name a symbol."""
        return {"id": self.id, "key": self.key, "name": self.name, "kind": self.kind, "path": self.path,
                "line": self.start}  # fmt: skip


class Edge(NamedTuple):  # (a tuple: a load builds two per call edge, and a frozen dataclass costs 4x as much)
    other: str  # the symbol at the far end
    confidence: float
    resolution: str
    line: int


class Site(NamedTuple):
    """One unresolved call site: who holds it, the call as written, its line, and whether its head is bound
    outside the repository (then it cannot reach a repository symbol)."""

    holder: str
    call: str
    line: int
    external: bool


class Import(NamedTuple):
    other: str  # the file path at the far end
    specifier: str
    line: int
    resolution: str
    confidence: float


def _put_in_order(lists: Mapping[str, list[Any]], touched: dict[str, int], order: Callable[[Any], Any]) -> None:
    """Each touched list had its first `touched[key]` items in `order` and got more appended: put those in order
    too, by sorting the list again, or (a few on a long list) by inserting each where it belongs."""
    for key, before in touched.items():
        lst = lists[key]
        added = len(lst) - before
        if before == 0 or added * before.bit_length() >= before:
            lst.sort(key=order)
        else:
            tail = lst[before:]
            del lst[before:]
            for item in tail:
                bisect.insort(lst, item, key=order)


def _import_order(imp: Import) -> tuple[str, int]:
    return imp.other, imp.line


def _import_other(imp: Import) -> str:
    return imp.other


def _symbol_count(conn: Conn, repo_id: str) -> int:
    """The repository's symbols in the graph (one aggregate, ~30 ms on the kernel's 1.8M)."""
    return int(conn.scalar("MATCH (s:Symbol) WHERE s.repoId = $r RETURN count(s)", {"r": repo_id}) or 0)


def _imports_without(lst: list[Import], path: str) -> list[Import]:
    """`lst` (one file's imports or importers, in `_import_order`) without those of `path`: one run of it, cut
    out in place (a header's thousands of importers lose one per edited file)."""
    lo = bisect.bisect_left(lst, path, key=_import_other)
    hi = bisect.bisect_right(lst, path, key=_import_other)
    del lst[lo:hi]
    return lst


PAGES_IDLE_S = 10.0  # a snapshot no reader nor batch read for this long hands its mapped pages back (`drop_pages`)
READ_PART_FILES = 4000  # a whole graph read of more files than this goes in parts (`Snapshot._read`)
_PAST_EVERY_PATH = "\U0010ffff"  # above every path in the order Kuzu compares strings (code points)
FLUSH_BUDGET_S = 15.0  # compaction time the daemon's stop gives the snapshots it saves (`Snapshots.flush`)


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

    def writer_waiting(self) -> bool:
        """Is a writer waiting for the readers to finish (a long reader should give way)?"""
        return self._waiting > 0

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
        self.lock = RWLock()
        self._reset()

    def _reset(self) -> None:
        """Empty, not loaded (`version` -1). The lock stays: a reader that took the snapshot while a load was
        under way waits on this lock for the load to end, so a new lock here would let it read half a load."""
        self.version = -1
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
        # "bar" -> (holder slot, offset of the entry in its unresolved_text) pairs, flat, one per unresolved call site of that name: `sites`
        # reads each site from its holder's stored entries (two ints per site instead of a tuple and a string)
        self.unresolved_by_tail: dict[str, array[int]] = {}
        self.imports_out: dict[str, list[Import]] = {}  # file path -> what it imports
        self.imports_in: dict[str, list[Import]] = {}  # file path -> who imports it
        self.frozen: compact.Frozen | None = None  # the arrays under the tables above, once compacted
        self.dirty = False  # batches were applied on top of `frozen`
        self.stamp: dict[str, Any] | None = None  # what a file saved from this state is valid for (`compact`)

    # -- reading ------------------------------------------------------------------------------------

    def live(self, slots: Iterable[int]) -> Iterator[Sym]:
        for slot in slots:
            sym = self.slots[slot]
            if sym is not None:
                yield sym

    def sites(self, tail: str) -> Iterator[Site]:
        """The unresolved call sites whose called name is `tail`: holders in the order they arrived, each
        holder's sites in stored order."""
        pairs = self.unresolved_by_tail.get(tail, ())
        slots = self.slots
        # A compacted snapshot's own slots: read the two fields from the arrays, not the whole symbol.
        fz = self.frozen if isinstance(slots, compact.SlotList) and slots.fz is self.frozen else None
        for k in range(0, len(pairs), 2):
            slot = pairs[k]
            if fz is not None and slot < fz.size:
                if slot in slots.dead:  # type: ignore[union-attr]
                    continue
                sid, text = fz.field(slot, "id"), fz.field(slot, "unresolved_text")
            else:
                sym = slots[slot]
                if sym is None:
                    continue
                sid, text = sym.id, sym.unresolved_text
            start = pairs[k + 1]
            end = text.find("\n", start)
            call, line, external = parse_unresolved(text[start:] if end < 0 else text[start:end])
            yield Site(sid, call, line, external)

    def role(self, path: str) -> str:
        entry = self.files.get(path)
        return entry[1] if entry else ""

    def is_test(self, path: str) -> bool:
        return self.role(path) == "test"

    def path_of(self, sid: str) -> str | None:
        """The path of the symbol with id `sid` (None if there is none), without making the symbol when it is in
        the compacted arrays: `locate` reads the paths of up to 512 callers of each popular candidate, and making
        each caller read every column of the snapshot's file (the kernel's first `locate` left 241 MB of its
        940 MB file resident, nearly all of every symbol column)."""
        by_id = self.by_id
        if isinstance(by_id, compact.Over) and isinstance(by_id.base, compact.FrozenMap) and sid not in by_id.top:
            if sid in by_id.gone:
                return None
            fz = by_id.base.fz
            slot = fz.slot_of(sid)
            return fz.short(fz.syms["path"][slot]) if slot >= 0 else None
        sym = by_id.get(sid)
        return sym.path if sym is not None else None

    def rank_key(self, sym: Sym) -> tuple[Any, ...]:
        """The deterministic order of equally good matches: kind, non-test first, shorter path, key."""
        return (kind_rank(sym.kind), self.is_test(sym.path), len(sym.path), sym.key)

    def counts(self) -> dict[str, int]:
        calls = self.calls_out
        if isinstance(calls, compact.Over) and isinstance(calls.base, compact.FrozenMap):
            base = calls.base
            n = len(base.t.cols["other"])  # every frozen edge, less those of the keys changed since, plus theirs
            n -= sum(len(base[k]) for k in set(calls.top) | calls.gone if k in base)
            n += sum(len(v) for v in calls.top.values())
        else:
            n = sum(len(v) for v in calls.values())
        return {"symbols": len(self.by_id), "files": len(self.files), "calls": n}

    # -- the compact form -----------------------------------------------------------------------------

    def to_compact(self) -> compact.Frozen:
        """Replace this snapshot's tables by their frozen arrays (`compact.freeze`; the same answers); the caller
        holds the write lock, or the snapshot is not visible yet."""
        fz = compact.freeze(self)
        self.adopt(fz, self.version)
        return fz

    def adopt(self, fz: compact.Frozen, version: int) -> None:
        """Take `fz` (frozen from this repository's snapshot at `version`) as the whole state."""
        self.frozen = fz
        for name, base in compact.maps(fz).items():
            setattr(self, name, compact.Over(base))
        self.slots = compact.SlotList(fz)  # type: ignore[assignment]
        self.sorted_names = compact.Names(fz.strings, array("i", fz.names))  # type: ignore[assignment]
        self.version = version
        self.dirty = False

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """While a batch is applied: the frozen tables' overlays copy what is changed in place (see `Over`)."""
        overs = [v for v in vars(self).values() if isinstance(v, compact.Over)]
        for v in overs:
            v.writing = True
        try:
            yield
        finally:
            for v in overs:
                v.writing = False

    # -- loading ------------------------------------------------------------------------------------
    #
    # Two sources, one result: the graph (`load`/`apply`, Kuzu reads) or the sync engine's facts and
    # resolutions (`build`/`apply_files`, turned into rows by the same graphwrite functions that wrote the
    # graph, so ids, keys, properties and edges are the graph's). Both feed the `_add_*` helpers below.

    def load(self, conn: Conn, version: int) -> None:
        """Read the whole repository from the graph (caller holds the write lock)."""
        self._reset()
        with _gc_paused():
            self._read(conn, None)
        self.sorted_names = sorted(self.name_lower)
        _split.cache_clear()
        _path_tokens.cache_clear()
        self.version = version

    def build(self, files: Iterable[tuple[str, FileData]], version: int) -> None:
        """The whole repository from what the sync engine wrote: every file of the graph with its facts and
        resolution (no Kuzu reads; the snapshot must not be visible to readers yet, or the caller holds the
        write lock)."""
        self._reset()
        with _gc_paused():
            self._ingest(list(files), incremental=False)
        self.sorted_names = sorted(self.name_lower)
        _split.cache_clear()
        _path_tokens.cache_clear()
        self.version = version

    def apply(self, conn: Conn, version: int, paths: set[str]) -> None:
        """Forget everything in `paths` and read those files again (caller holds the write lock)."""
        with self._writing():
            self._drop_paths(paths)
            self._read(conn, sorted(paths))
        self.version = version
        self.dirty = True

    def apply_files(self, version: int, files: dict[str, FileData | None]) -> None:
        """Forget everything in `files` and add them again from the engine's facts and resolutions (None: the
        file was deleted). Edges that files outside the batch had into these files' symbols (and imports into
        these files) survive where their target does, as they do in the graph (caller holds the write lock)."""
        with self._writing():
            self._apply_files(files)
        self.version = version
        self.dirty = True

    def _apply_files(self, files: dict[str, FileData | None]) -> None:
        batch = set(files)
        rels = ((self.calls_out, self.calls_in), (self.inherits_out, self.inherits_in))
        kept: list[list[tuple[str, str, float, str, int]]] = [[] for _ in rels]
        kept_imports: list[tuple[str, str, str, int, str, float]] = []
        for path in batch:
            for sid in self.by_file.get(path, ()):
                for n, (_, inn) in enumerate(rels):
                    for e in inn.get(sid, ()):
                        src = self.by_id.get(e.other)
                        if src is not None and src.path not in batch:
                            kept[n].append((e.other, sid, e.confidence, e.resolution, e.line))
            if files[path] is not None:
                kept_imports += [(i.other, path, i.specifier, i.line, i.resolution, i.confidence)
                                 for i in self.imports_in.get(path, ()) if i.other not in batch]  # fmt: skip
        self._drop_paths(batch)
        self._ingest([(p, d) for p, d in sorted(files.items()) if d is not None], incremental=True)
        for (out, inn), rows in zip(rels, kept, strict=True):
            self._add_edges(out, inn, rows)  # (a target that left drops its edges here)
        self._add_imports([r for r in kept_imports if r[0] in self.files and r[1] in self.files], dedupe=False)

    def _drop_paths(self, paths: Iterable[str]) -> None:
        gone: set[str] = set()
        for path in paths:
            gone.update(self.by_file.pop(path, []))
            self.files.pop(path, None)
            for mine, theirs in ((self.imports_out, self.imports_in), (self.imports_in, self.imports_out)):
                for other in {imp.other for imp in mine.pop(path, [])}:
                    lst = theirs.get(other)
                    if lst:
                        theirs[other] = _imports_without(lst, path)
        self._forget(gone)

    def _forget(self, gone: set[str]) -> None:
        """Drop these symbols and every edge at either end of them. A neighbour's edge list is filtered once
        for all of them: a batch's file may hold hundreds of callers of one function that has tens of thousands
        (the kernel's `printk`), and filtering that list once per caller cost seconds per edit."""
        neighbours: list[tuple[dict[str, list[Edge]], dict[str, list[tuple[str, int]]]]] = []
        for out, inn in ((self.calls_out, self.calls_in), (self.inherits_out, self.inherits_in)):
            of_in: dict[str, list[tuple[str, int]]] = {}  # neighbour -> (gone symbol, line) of its incoming edges
            of_out: dict[str, list[tuple[str, int]]] = {}
            for sid in gone:
                for edge in out.pop(sid, ()):
                    of_in.setdefault(edge.other, []).append((sid, edge.line))
                for edge in inn.pop(sid, ()):
                    of_out.setdefault(edge.other, []).append((sid, edge.line))
            neighbours += ((inn, of_in), (out, of_out))
        for lists, ends in neighbours:
            for other, pairs in ends.items():
                lst = lists.get(other) if other not in gone else None
                if lst:
                    lists[other] = self._edges_without(lst, pairs, gone)
        for sid in gone:
            sym = self.by_id.pop(sid, None)
            if sym is None:
                continue
            self.slots[sym.slot] = None
            held = self.by_key.get(sym.key)
            if held is not None and held.id == sid:  # (frozen symbols are made on each read: compare ids)
                del self.by_key[sym.key]
            self.children.pop(sid, None)
            if sym.parent and sym.parent not in gone and sym.parent in self.children:
                self.children[sym.parent] = [c for c in self.children[sym.parent] if c != sid]
        # (unresolved_by_tail holds slots: the freed slot is skipped on read)

    def _read(self, conn: Conn, paths: list[str] | None) -> None:
        """Read files, symbols, containment and edges from the graph: of the repository, or of some files. A
        repository of more than READ_PART_FILES files is read in parts of that many files: Kuzu holds a query's
        whole result in its buffer pool, and the kernel's symbols in one query filled it (`NEXUS_BUFFER_POOL_MB`,
        384 MB by default). Every symbol is read before any edge: an edge is kept only when both its ends are."""
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
        parts: list[dict[str, Any]] = [p]
        if paths is None and len(self.files) > READ_PART_FILES:
            # Parts by path range, two comparisons a row (an `IN` of thousands of paths is a list walk per row)
            every = sorted(self.files)
            starts = every[::READ_PART_FILES]
            only = " AND {v}.path >= $lo AND {v}.path < $hi"
            parts = [{**p, "lo": lo, "hi": hi} for lo, hi in zip(starts, [*starts[1:], _PAST_EVERY_PATH], strict=True)]
        for part in parts:
            for row in conn.rows("MATCH (s:Symbol) WHERE s.repoId = $r" + only.format(v="s") + f" RETURN {_SYM_COLS}", part):
                if row[11]:  # the graph keeps each site's line relative to its symbol's start
                    row[11] = absolute_sites(row[11], row[6] or 0)
                self._add_symbol(row, incremental)
        if len(parts) > 1:  # the ranges hold every symbol once only if Kuzu orders strings as Python does
            count = _symbol_count(conn, self.repo_id)
            if count != len(self.by_id):
                raise StoreError(f"the graph read in parts found {len(self.by_id)} symbols of {count}")
        for part in parts:
            self._add_contains(
                conn.rows(
                    "MATCH (p:Symbol)-[:CONTAINS]->(s:Symbol) WHERE s.repoId = $r" + only.format(v="s") + " RETURN p.id, s.id",
                    part,
                )
            )
        ends = ["a", "b"] if incremental else ["a"]
        for rel, out, inn in (
            ("POSSIBLY_CALLS", self.calls_out, self.calls_in),
            ("INHERITS", self.inherits_out, self.inherits_in),
        ):
            line = "e.line" if rel == "POSSIBLY_CALLS" else "0"
            for part in parts:
                rows: list[list[Any]] = []
                for end in ends:
                    q = f"MATCH (a:Symbol)-[e:{rel}]->(b:Symbol) WHERE {end}.repoId = $r" + only.format(v=end)
                    rows += conn.rows(f"{q} RETURN a.id, b.id, e.confidence, e.resolution, {line}", part)
                self._add_edges(out, inn, rows)
        for part in parts:
            imports: list[list[Any]] = []
            for end in ends:
                q = f"MATCH (a:File)-[e:IMPORTS]->(b:File) WHERE {end}.repoId = $r" + only.format(v=end)
                imports += conn.rows(f"{q} RETURN a.path, b.path, e.specifier, e.line, e.resolution, e.confidence", part)
            self._add_imports(imports, dedupe=True)

    def _ingest(self, files: list[tuple[str, FileData]], incremental: bool) -> None:
        """Add files from the engine's facts and resolutions, as graphwrite turns them into rows.

        The symbol fields and CONTAINS pairs follow graphwrite.symbol_rows/contains_rows (ids, keys, the same
        truncations) without the columns the snapshot does not keep (searchText, contentHash: a third of the
        cost); edges come from batch.import_rows/call_rows, which graphwrite's edge rows are made of.
        tests/query/test_snapshot_build.py holds the two sources equal.
        """
        from ..parse.facts import file_id, semantic_key, symbol_id

        repo = self.repo_id
        for _path, (facts, _res) in files:
            self.files[facts.path] = (file_id(repo, facts.path), facts.role or "")
        nested: list[tuple[str, str]] = []
        calls: list[tuple[Any, ...]] = []
        imports: list[tuple[Any, ...]] = []
        add_symbol = self._add_symbol
        for _path, (facts, res) in files:
            path, lang = facts.path, facts.language
            unresolved = res.stored_unresolved() if res is not None else {}
            first: dict[str, str] = {}  # qualified name -> id of its first symbol (contains_rows' parent lookup)
            ids: list[str] = []
            for sym in facts.symbols:
                sid = symbol_id(repo, path, sym.kind, sym.qualified_name, sym.occurrence)
                ids.append(sid)
                first.setdefault(sym.qualified_name, sid)
                raw = unresolved.get(sid)
                add_symbol(
                    (sid, semantic_key(lang, sym.kind, path, sym.qualified_name, sym.occurrence), sym.name,
                     sym.qualified_name, sym.kind, path, sym.start_line, sym.end_line, sym.signature[:300],
                     sym.exported, len(raw) if raw else 0, "\n".join(raw[:MAX_STORED_SITES]) if raw else "", sym.doc[:500]),
                    incremental,
                )  # fmt: skip
            for sym, sid in zip(facts.symbols, ids, strict=True):
                parent = first.get(sym.parent) if sym.parent else None
                if parent is not None and parent != sid:
                    nested.append((parent, sid))
            if res is not None:
                calls += call_rows(res)
                imports += [row for row in import_rows(res) if row[0] in self.files and row[1] in self.files]
        self._add_contains(nested)
        self._add_edges(self.calls_out, self.calls_in, [(a, b, conf, how, ln) for a, b, ln, how, conf in calls])
        self._add_imports(imports, dedupe=True)

    # Rows below are in the graph's shapes: symbols as _SYM_COLS, edges (from id, to id, confidence,
    # resolution, line), imports (from path, to path, specifier, line, resolution, confidence).

    def _add_symbol(self, row: Any, incremental: bool) -> None:
        sid = row[0]
        if sid in self.by_id:
            return
        text = stored_sites(row[11] or "")
        sym = Sym(
            slot=len(self.slots), id=sid, key=row[1] or "", name=row[2] or "", qname=row[3] or "",
            kind=row[4] or "", path=row[5] or "", start=row[6] or 0, end=row[7] or 0,
            signature=row[8] or "", exported=bool(row[9]), unresolved_count=row[10] or 0, unresolved_text=text,
        )  # fmt: skip
        self.slots.append(sym)
        self.by_id[sid] = sym
        self.by_key[sym.key] = sym
        self.by_file.setdefault(sym.path, []).append(sid)
        self._index(sym, row[12] or "")
        if text:
            by_tail = self.unresolved_by_tail
            for tail, offset in site_tails(text):
                pairs = by_tail.get(tail)
                if pairs is None:
                    by_tail[tail] = array("i", (sym.slot, offset))
                else:
                    pairs.append(sym.slot)
                    pairs.append(offset)
        if incremental:
            low = sym.name.lower()
            pos = bisect.bisect_left(self.sorted_names, low)
            if pos == len(self.sorted_names) or self.sorted_names[pos] != low:
                self.sorted_names.insert(pos, low)

    def _add_contains(self, pairs: Iterable[Any]) -> None:
        """CONTAINS between symbols (a file's top-level symbols have no parent symbol)."""
        touched_parents: set[str] = set()
        for parent, child in pairs:
            member = self.by_id.get(child)
            if member is not None and parent in self.by_id:
                member.parent = parent
                lst = self.children.setdefault(parent, [])
                if child not in lst:
                    lst.append(child)
                    touched_parents.add(parent)
        for parent in touched_parents:
            self.children[parent].sort(key=lambda c: (self.by_id[c].start, self.by_id[c].key))

    def _add_edges(self, out: dict[str, list[Edge]], inn: dict[str, list[Edge]], rows: Iterable[Any]) -> None:
        # symbol id -> the length its list had before this call (0: new); what was there is already in order
        touched_out: dict[str, int] = {}
        touched_in: dict[str, int] = {}
        # Every edge added here is new to the adjacency (_forget dropped both ends' edges): dedupe locally.
        pairs: set[tuple[str, str]] = set()
        by_id = self.by_id
        for a, b, conf, res, ln in rows:
            if a not in by_id or b not in by_id or (a, b) in pairs:
                continue  # one edge per ordered pair: the walk needs no more
            pairs.add((a, b))
            conf = float(conf if conf is not None else 1.0)
            res = res or ""
            ln = ln or 0
            lst = out.get(a)
            if lst is None:
                out[a] = [Edge(b, conf, res, ln)]
                touched_out.setdefault(a, 0)
            else:
                touched_out.setdefault(a, len(lst))
                lst.append(Edge(b, conf, res, ln))
            lst = inn.get(b)
            if lst is None:
                inn[b] = [Edge(a, conf, res, ln)]
                touched_in.setdefault(b, 0)
            else:
                touched_in.setdefault(b, len(lst))
                lst.append(Edge(a, conf, res, ln))
        self._settle(out, touched_out)
        self._settle(inn, touched_in)

    def _settle(self, lists: dict[str, list[Edge]], touched: dict[str, int]) -> None:
        """Put the edges just appended to each list in `_edge_order`. A long list that got a few is not sorted
        again (the key reads the other end's symbol, ~a microsecond each on a frozen snapshot: an edit that
        called `printk` sorted its 50,000 callers, seconds per edit on the kernel): they are inserted."""
        _put_in_order(lists, touched, self._edge_order)

    def _add_imports(self, rows: Iterable[Any], *, dedupe: bool) -> None:
        # path -> the length its list had before (0: new); a header included by thousands of files gets a few
        # imports per edit, inserted in order rather than the list sorted again (as `_settle` does for edges)
        touched: tuple[dict[str, int], dict[str, int]] = ({}, {})
        seen_imports: set[tuple[str, str, int]] = set()
        for a, b, spec, ln, res, conf in rows:
            if dedupe:
                if (a, b, ln or 0) in seen_imports:
                    continue
                seen_imports.add((a, b, ln or 0))
            conf = float(conf if conf is not None else 1.0)
            for side, (lists, here, there) in enumerate(((self.imports_out, a, b), (self.imports_in, b, a))):
                lst = lists.get(here)
                if lst is None:
                    lists[here] = lst = []
                touched[side].setdefault(here, len(lst))
                lst.append(Import(there, spec or "", ln or 0, res or "", conf))
        for lists, lengths in zip((self.imports_out, self.imports_in), touched, strict=True):
            _put_in_order(lists, lengths, _import_order)

    def _edges_without(self, lst: list[Edge], pairs: list[tuple[str, int]], gone: set[str]) -> list[Edge]:
        """`lst` (one symbol's edges, in `_edge_order`) without its edges to the gone symbols, `pairs` being
        (gone symbol, line) of each. A few out of a long list are found by bisection and deleted in place (the
        kernel's `printk` has ~50,000 callers, and an edit drops a few); if one is not where the order puts it,
        the list is filtered whole."""
        if len(pairs) * len(lst).bit_length() >= len(lst):
            return [e for e in lst if e.other not in gone]
        order = self._edge_order
        by_id = self.by_id
        for sid, line in pairs:
            sym = by_id.get(sid)
            want = (sym.key if sym is not None else sid, line)
            i = bisect.bisect_left(lst, want, key=order)
            while i < len(lst) and lst[i].other != sid and order(lst[i]) == want:
                i += 1
            if i == len(lst) or lst[i].other != sid:
                return [e for e in lst if e.other not in gone]
            del lst[i]
        return lst

    def _edge_order(self, edge: Edge) -> tuple[str, int]:
        other = self.by_id.get(edge.other)
        return (other.key if other else edge.other, edge.line)

    def _index(self, sym: Sym, doc: str) -> None:
        slot = sym.slot
        name = sym.name
        low, qlow = name.lower(), sym.qname.lower()
        low = name if low == name else low  # (one string where lowering changes nothing)
        qlow = sym.qname if qlow == sym.qname else qlow
        for index, token in ((self.name_exact, name), (self.name_lower, low), (self.qname_lower, qlow)):
            arr = index.get(token)
            if arr is None:
                index[token] = array("i", (slot,))
            else:
                arr.append(slot)
        parts, text = index_tokens(name, sym.qname, sym.path, sym.signature, doc)
        name_tokens = self.name_tokens
        for tok in parts:
            arr = name_tokens.get(tok)
            if arr is None:
                name_tokens[tok] = array("i", (slot,))
            else:
                arr.append(slot)
        text_tokens = self.text_tokens
        for tok in text:
            arr = text_tokens.get(tok)
            if arr is None:
                text_tokens[tok] = array("i", (slot,))
            else:
                arr.append(slot)


_WORD = re.compile(r"[A-Za-z0-9_]+")


def index_tokens(name: str, qname: str, path: str, signature: str, doc: str) -> tuple[tuple[str, ...], set[str]]:
    """A symbol's entries in the token indexes: the identifier parts of its name (`name_tokens`), and those plus
    the parts of its path, qualified name, signature and first doc words (`text_tokens`)."""
    parts = _split(name)
    text = set(parts)
    text.update(_path_tokens(path))
    for source in (qname, signature):
        for word in _WORD.findall(source):
            text.update(_split(word))
    if doc:
        n = 0
        for word in _WORD.findall(doc):
            for tok in _split(word):
                if len(tok) > 1 and tok not in text:
                    text.add(tok)
                    n += 1
            if n >= DOC_TOKENS:
                break
    return parts, text


def stored_sites(text: str) -> str:
    """The stored unresolved call sites as a symbol keeps them: newline-joined, no empty entry."""
    if "\n\n" in text or text.startswith("\n") or text.endswith("\n"):
        return "\n".join(x for x in text.split("\n") if x)
    return text


def site_tails(text: str) -> Iterator[tuple[str, int]]:
    """(called name, offset of the entry in `text`) for each stored site of `text` (`stored_sites` form)."""
    offset = 0
    for entry in text.split("\n"):
        yield _tail(parse_unresolved(entry)[0]), offset
        offset += len(entry) + 1


_gc_lock = threading.Lock()
_gc_state = {"pausers": 0, "resume": False}


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a whole snapshot is built: it only adds objects (about a million),
    and the collections that allocation triggers would walk all of them again and again (~40% of a build)."""
    with _gc_lock:
        if _gc_state["pausers"] == 0:
            _gc_state["resume"] = gc.isenabled()
            gc.disable()
        _gc_state["pausers"] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state["pausers"] -= 1
            if _gc_state["pausers"] == 0 and _gc_state["resume"]:
                gc.enable()


def _let_go(snap: Snapshot | None) -> None:
    """A snapshot no longer held by the store: its objects were frozen by `_loaded`, so any cycle among them is
    only freed by the writer's next `gcpause.reclaim`."""
    if snap is not None:
        gcpause.dropped(snap)


@functools.lru_cache(maxsize=262_144)
def _split(word: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(split_identifier(word)))


@functools.lru_cache(maxsize=65_536)
def _path_tokens(source: str) -> frozenset[str]:
    """The identifier parts of every word of a path (split once per file, not once per symbol)."""
    out: set[str] = set()
    for word in _WORD.findall(source):
        out.update(_split(word))
    return frozenset(out)


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


@dataclass
class _Build:
    """A snapshot being built off the writer thread from the engine's facts, and the batches that came after."""

    snap: Snapshot
    done: threading.Event
    pending: list[tuple[int, dict[str, FileData | None], dict[str, Any]]]


# The longest the writer waits at a cold batch's commit for the forked build to end (the stdlib's whole build
# takes ~7 s; most of it overlaps the write): past it the process is killed and the build runs after the commit.
PREBUILD_WAIT_S = 600.0


@dataclass
class _Prebuild:
    """A cold batch's snapshot arrays, built while the writer writes that batch to the graph (`prebuild`): in a
    forked process that saves them to `path` (`pid`), or on a thread (`fz`) where there is no directory."""

    files: list[tuple[str, FileData]]
    done: threading.Event
    t0: float
    fz: compact.Frozen | None = None
    pid: int = 0
    path: Path | None = None
    stamp: dict[str, Any] | None = None

    def wait(self, limit_s: float | None = None) -> compact.Frozen | None:
        """The arrays, once built (None if the build failed, or if the process did not end within `limit_s`:
        then it is killed, so that nothing it could block on in the forked copy, e.g. a lock another thread held
        at the fork, can hold the writer)."""
        if self.pid:
            status = forked.reap(self.pid, PREBUILD_WAIT_S if limit_s is None else limit_s, "query snapshot prebuild")
            self.pid = 0
            assert self.path is not None and self.stamp is not None
            try:
                code = os.waitstatus_to_exitcode(status)
                if code == 0:
                    self.fz = compact.load_file(self.path, self.stamp)
                else:
                    log.warning("query snapshot prebuild process exited with %s; building it after the commit", code)
            except compact.BadFile:
                log.exception("query snapshot prebuilt in %s unreadable", self.path)
            finally:
                self.path.unlink(missing_ok=True)
            self.done.set()
        self.done.wait()
        return self.fz

    def abandon(self) -> None:
        """Not wanted any more: reap the process and remove its file, off the caller's thread."""
        if self.pid:
            threading.Thread(target=self.wait, name="snapshot-pre-reap", daemon=True).start()


def _build_in_child(
    parent: int, repo_id: str, files: list[tuple[str, FileData]], path: Path, stamp: dict[str, Any]
) -> None:
    """In the forked process: build, save, exit."""
    forked.in_child(parent, lambda: compact.save(compact.build(repo_id, files), path, stamp, durable=False))


def _freeze_in_child(parent: int, snap: Snapshot, path: Path, stamp: dict[str, Any]) -> None:
    """In the forked process: compact `snap` as it was at the fork, save it (durably: the parent renames this very
    file into place), exit."""
    forked.in_child(parent, lambda: compact.save(compact.freeze(snap), path, stamp))


# The longest a compaction in a forked process may take before it is killed (the kernel's took 200 s in process).
FREEZE_APART_WAIT_S = 900.0


@dataclass
class _FreezeApart:
    """A compaction running in a forked process (`Snapshots._save`), which writes the arrays to `path`."""

    pid: int
    path: Path
    stamp: dict[str, Any]

    def wait(self) -> compact.Frozen | None:
        """The arrays the process saved, read back from its file (None when it failed, or ran past
        `FREEZE_APART_WAIT_S` and was killed; its file is then removed)."""
        status = forked.reap(self.pid, FREEZE_APART_WAIT_S, "query snapshot compaction")
        try:
            if os.waitstatus_to_exitcode(status) == 0:
                return compact.load_file(self.path, self.stamp)
            log.warning("query snapshot compaction process exited with %s; compacting in process",
                        os.waitstatus_to_exitcode(status))  # fmt: skip
        except compact.BadFile:
            log.exception("query snapshot compacted in %s unreadable; compacting in process", self.path)
        self.path.unlink(missing_ok=True)
        return None


def _same_files(a: list[tuple[str, FileData]], b: list[tuple[str, FileData]]) -> bool:
    """The same paths in the same order, each with the very facts and resolution objects."""
    return len(a) == len(b) and all(
        pa == pb and da[0] is db[0] and da[1] is db[1] for (pa, da), (pb, db) in zip(a, b, strict=True)
    )


class Snapshots:
    """The daemon's snapshots, one per repository.

    Three ways in: built in the background from a cold batch's files right after a cold index (`build_from`;
    readers that arrive meanwhile wait for it, batches that commit meanwhile queue and are applied before it is
    shown), updated per committed batch from its files (`apply_batch` -> `on_batch` with `files`), or, when no
    batch says what the graph holds (after a restart, before its first cold sync), loaded from the graph by the
    first reader and updated per batch with Kuzu reads of the batch's files.
    """

    WAIT_S = 300.0  # a reader waits this long for a background build before loading from the graph itself

    def __init__(self, directory: Path | None = None, save_delay_s: float = 30.0) -> None:
        self.directory = directory  # where each repository's compact snapshot is saved (None: nowhere)
        self.save_delay_s = save_delay_s
        self._timers: dict[str, threading.Timer] = {}
        self.saves: dict[str, dict[str, Any]] = {}  # repo id -> the last save (version, bytes, seconds)
        self.abandoned: dict[str, int] = {}  # repo id -> compactions that gave way to a batch (`compact.Abandoned`)
        self._lock = threading.Lock()
        self._snaps: dict[str, Snapshot] = {}
        self._stale: set[str] = set()
        self._builds: dict[str, _Build] = {}
        self._pre: dict[str, _Prebuild] = {}
        self.loads: dict[str, dict[str, Any]] = {}  # repo id -> how and how fast its snapshot was last made
        self._used: dict[str, float] = {}  # repo id -> when a reader last asked for its snapshot (monotonic)
        # repo id -> when a reader or a batch last read it, until its mapped pages are handed back (`drop_pages`)
        self._touched: dict[str, float] = {}
        # repo id -> the stamp of the snapshot let go while idle (`evict_idle`): its saved file holds exactly it
        self._evicted: dict[str, dict[str, Any]] = {}
        if directory is not None and directory.is_dir():  # what a prebuild or a compaction apart left when its
            for pattern in ("*.pre[0-9]*.snap", "*.freeze[0-9]*.snap", "*.snap.tmp[0-9]*"):  # daemon died
                for stale in directory.glob(pattern):
                    stale.unlink(missing_ok=True)

    def get(self, conn: Conn, repo: Repo, info: dict[str, Any] | None = None) -> Snapshot:
        """The repository's snapshot: waits for a background build, or loads it now (on the caller's reader
        connection) if missing or dropped. `info`, when given, is filled with how the snapshot was made
        (`madeBy`: index, engine, file or graph, see `loads`) and how long this call waited for it (`waitedMs`:
        0 when it was ready)."""
        t_start = time.perf_counter()
        self._used[repo.id] = self._touched[repo.id] = time.monotonic()
        snap = self._get(conn, repo)
        if info is not None:
            waited = time.perf_counter() - t_start
            info["madeBy"] = self.loads.get(repo.id, {}).get("source")
            info["waitedMs"] = round(waited * 1000, 1) if waited >= 0.0005 else 0
        return snap

    def _get(self, conn: Conn, repo: Repo) -> Snapshot:
        deadline = time.monotonic() + self.WAIT_S
        while True:
            with self._lock:
                build = self._builds.get(repo.id)
            if build is None or not build.done.wait(max(0.0, deadline - time.monotonic())):
                break  # (a build past the deadline: load from the graph rather than wait on)
        with self._lock:
            snap = self._snaps.get(repo.id)
            if snap is None:
                snap = self._snaps[repo.id] = Snapshot(repo.id)
                self._stale.add(repo.id)
                self._evicted.pop(repo.id, None)  # (its file is read below, as after a restart)
        if repo.id in self._stale:
            with snap.lock.write():
                if repo.id in self._stale:
                    self._stale.discard(repo.id)
                    self._fill(repo, snap, conn)
        return snap

    def _fill(self, repo: Repo, snap: Snapshot, conn: Conn | None) -> bool:
        """Load `snap` (under its write lock, taken off `_stale`) from its saved file when that holds the graph as
        it is, else from the graph on `conn` (compacted and saved in the background); with no `conn`, only from
        the file. False when nothing was loaded. A batch that committed meanwhile found the snapshot loading and
        left it (`on_batch`): then it is one batch behind and goes back to `_stale`, for the next reader."""
        t0 = time.perf_counter()
        version = repo.graph_version
        stamp = compact.stamp_of(repo.id, version, repo.indexed_at)
        try:
            fz = self._read_file(repo, stamp)
            if fz is not None:
                snap.adopt(fz, version)
                if conn is not None and not self._holds_graph(conn, repo, snap, version):
                    snap._reset()
                    fz = None
            if fz is not None:
                source = "file"
            elif conn is not None:
                snap.load(conn, version)
                source = "graph"
            else:
                return False
        except BaseException:
            # Half a graph read must never answer, take a batch on top or be saved as the graph (the kernel's
            # read once failed on a full buffer pool, and what it had read was saved at the stop and answered
            # `locate` with nothing): empty and stale again, for the next reader to retry.
            snap._reset()
            with self._lock:
                self._stale.add(repo.id)
            raise
        snap.stamp = stamp
        self._loaded(repo, snap, source, t0)
        if source == "graph":
            self._save_soon(repo.id, snap, 0.0)
        if repo.graph_version != version:
            with self._lock:
                self._stale.add(repo.id)
        return True

    @staticmethod
    def _holds_graph(conn: Conn, repo: Repo, snap: Snapshot, version: int) -> bool:
        """Whether a snapshot read from its file holds as many symbols as the graph at `version` (one count, ~30 ms
        on the kernel's 1.8M): its stamp says which graph version it was saved for, not that what was saved was
        whole (a build before this check saved half a failed graph read under a good stamp). A batch that
        committed meanwhile makes the count say nothing: the snapshot goes back to the stale list anyway."""
        held = len(snap.by_id)
        graph = _symbol_count(conn, repo.id)
        if held == graph or repo.graph_version != version:
            return True
        log.warning("saved query snapshot of %s not used (it holds %d symbols, the graph %d); reading the graph",
                    repo.root, held, graph)  # fmt: skip
        return False

    def preload(self, repo: Repo) -> bool:
        """Load the repository's snapshot from its saved file now, before any reader asks (after a restart in place:
        the image before held it, so the next question should not wait for the read, 3.8 s for the kernel's
        940 MB). A reader that comes meanwhile waits for it as for any load. Only the file: when it does not hold
        the graph as it is, the snapshot stays to be loaded by the first reader, from the graph. True if loaded."""
        with self._lock:
            if repo.id in self._snaps or repo.id in self._builds:
                return False
            snap = self._snaps[repo.id] = Snapshot(repo.id)
            self._stale.add(repo.id)
        with snap.lock.write():
            if repo.id not in self._stale:
                return False
            self._stale.discard(repo.id)
            if not self._fill(repo, snap, None):
                self._stale.add(repo.id)
                return False
        return True

    def loaded_ids(self) -> list[str]:
        """The repositories whose snapshots are in memory and current (for the next image of a restart in place)."""
        with self._lock:
            return sorted(rid for rid in self._snaps if rid not in self._stale)

    # -- the saved snapshots -------------------------------------------------------------------------

    def _file(self, repo_id: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / (re.sub(r"[^A-Za-z0-9_.-]", "_", repo_id) + ".snap")

    def _read_file(self, repo: Repo, stamp: dict[str, Any]) -> compact.Frozen | None:
        path = self._file(repo.id)
        if path is None or not path.exists():
            return None
        try:
            return compact.load_file(path, stamp)
        except compact.BadFile as e:  # damaged, of another format or for another graph version: read the graph
            log.info("saved query snapshot of %s not used (%s); reading the graph", repo.root, e)
            return None
        except Exception:
            log.exception("saved query snapshot of %s unreadable; reading the graph", repo.root)
            return None

    def _save_soon(self, repo_id: str, snap: Snapshot, delay: float) -> None:
        """After `delay` seconds without a new batch: compact `snap` (again, when batches were applied on top of
        its arrays, or for the first time after a build or a graph read, which readers use meanwhile) and save
        it; a batch in between restarts the wait."""
        timer = threading.Timer(delay, self._save, args=(repo_id, snap))
        timer.daemon = True
        with self._lock:
            old = self._timers.pop(repo_id, None)
            self._timers[repo_id] = timer
        if old is not None:
            old.cancel()
        timer.start()

    def _save(self, repo_id: str, snap: Snapshot, deadline: float | None = None) -> None:
        """Compact `snap` if batches changed it, then save it. The compaction runs in a forked process when the
        snapshot is saved to a file and the daemon is not stopping (`_compact_apart`); otherwise here, giving way
        to a waiting batch and stopping at `deadline` (a `time.monotonic()`): then nothing is saved."""
        with self._lock:
            if self._snaps.get(repo_id) is not snap or repo_id in self._stale:
                return  # dropped, replaced or stale since
            if self._timers.get(repo_id) is threading.current_thread():  # (a Timer is its own thread)
                del self._timers[repo_id]
        path = self._file(repo_id)
        apart: _FreezeApart | None = None
        try:
            t0 = time.perf_counter()
            with snap.lock.read():
                version, stamp, fz = snap.version, snap.stamp, snap.frozen
                if fz is None or snap.dirty:
                    if path is not None and stamp is not None and self._compact_apart(deadline):
                        apart = self._fork_freeze(snap, path, stamp)
                    else:
                        fz = self._freeze(snap, deadline)
            if apart is not None:
                fz = apart.wait()
                if snap.version != version:  # a batch came meanwhile: it re-armed the save (`_save_soon`)
                    return
                if fz is None:  # the process failed: here, as before
                    apart = None
                    with snap.lock.read():
                        fz = self._freeze(snap, deadline)
            assert fz is not None
            t1 = time.perf_counter()
            if fz is not snap.frozen:
                with snap.lock.write():  # the same state as arrays: the objects and overlays go
                    if snap.version == version and repo_id not in self._stale:
                        snap.adopt(fz, version)
                        snap.stamp = stamp
                gcpause.trim_heap()
                info = self.loads.get(repo_id)
                if info is not None and info.get("version") == version:
                    info["compactSeconds"] = round(t1 - t0, 3)
            if path is None or self.save_delay_s <= 0 or stamp is None or stamp.get("version") != version:
                return
            if apart is not None:  # saved durably by the process, with this very stamp
                size = apart.path.stat().st_size
                os.replace(apart.path, path)
            else:
                size = compact.save(fz, path, stamp)
            self.saves[repo_id] = {"version": version, "bytes": size, "freezeSeconds": round(t1 - t0, 3),
                                   "seconds": round(time.perf_counter() - t0, 3), "apart": apart is not None}  # fmt: skip
            log.info("query snapshot of %s saved: %s", repo_id, self.saves[repo_id])
            if apart is None:
                self._map_saved(repo_id, snap, fz, path, stamp)
        except compact.Abandoned:
            # A batch is waiting for the write lock: it goes first, and the save is tried again once quiet (a
            # batch applied meanwhile restarts that wait, `_save_soon`).
            self.abandoned[repo_id] = self.abandoned.get(repo_id, 0) + 1
            if deadline is not None and time.monotonic() > deadline:
                log.info("query snapshot of %s not saved: compacting it would take longer than the daemon's stop "
                         "may (a restart reads the graph)", repo_id)  # fmt: skip
                return
            log.info("query snapshot of %s: compaction gave way to a batch after %.1f s", repo_id,
                     time.perf_counter() - t0)  # fmt: skip
            self._save_soon(repo_id, snap, self.save_delay_s if self.save_delay_s > 0 else 30.0)
        except Exception:
            log.exception("query snapshot of %s could not be compacted or saved", repo_id)
        finally:
            if apart is not None:
                apart.path.unlink(missing_ok=True)  # (renamed into place, or not wanted)

    def _map_saved(self, repo_id: str, snap: Snapshot, fz: compact.Frozen, path: Path, stamp: dict[str, Any]) -> None:
        """The arrays just saved from this process's memory (or from a prebuild's file, deleted since), swapped for
        the saved file mapped (`compact._map`): the same snapshot, its pages now the page cache's (the kernel's,
        right after its index: 3.48 -> 2.78 GB of anonymous memory). Not when a batch changed the
        snapshot since (its next save does it)."""
        if fz.source == str(path):
            return
        try:
            mapped = compact.load_file(path, stamp)
        except compact.BadFile as e:
            log.warning("query snapshot of %s saved but not mapped (%s): kept in memory", repo_id, e)
            return
        with snap.lock.write():
            if snap.frozen is not fz or snap.dirty or snap.stamp != stamp or repo_id in self._stale:
                return
            snap.adopt(mapped, snap.version)
        gcpause.trim_heap()

    def _compact_apart(self, deadline: float | None) -> bool:
        """Whether a compaction runs in a forked process: where the snapshot is saved to a file (the process
        hands its arrays over through it), not when the daemon is stopping (`flush`: no process is started then),
        and where the system can fork. In process, compacting the standard library after an edit held the
        interpreter ~5 s against the readers, and left the daemon ~40 MB larger (the objects it made and freed
        kept their arenas); apart, the daemon only reads the file back (~0.1 s)."""
        return deadline is None and self.save_delay_s > 0 and hasattr(os, "fork")

    @staticmethod
    def _freeze(snap: Snapshot, deadline: float | None) -> compact.Frozen:
        """Compact in this process (the caller holds the read lock), giving way to a waiting batch (`Abandoned`)."""
        with _gc_paused():
            return compact.freeze(snap, stop=lambda: snap.lock.writer_waiting() or (
                deadline is not None and time.monotonic() > deadline))  # fmt: skip

    @staticmethod
    def _fork_freeze(snap: Snapshot, path: Path, stamp: dict[str, Any]) -> _FreezeApart:
        """Fork a process that compacts `snap` as it is now (the caller holds the read lock: no batch changes it
        during the fork) into a file beside `path`. Batches then go on in this process meanwhile."""
        out = path.with_name(f"{path.stem}.freeze{os.getpid()}.snap")
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            _freeze_in_child(parent, snap, out, stamp)
        return _FreezeApart(pid, out, stamp)

    def flush(self, budget_s: float = FLUSH_BUDGET_S) -> None:
        """Save now every snapshot whose save is pending (the daemon stopping), compacting for at most
        `budget_s` in all: the service manager kills a daemon that takes longer to stop (TimeoutStopSec=30 in the
        unit), and a killed daemon rebuilds every graph at its next start. The kernel's snapshot took 200 s to
        compact after a few edits; unsaved, a restart reads it from the graph instead."""
        with self._lock:
            timers, self._timers = self._timers, {}
        deadline = time.monotonic() + budget_s
        for timer in timers.values():
            timer.cancel()
            repo_id, snap = timer.args  # type: ignore[attr-defined]
            self._save(repo_id, snap, deadline=deadline)

    def prebuild(self, repo: Repo, files: list[tuple[str, FileData]] | None) -> None:
        """A cold listener (on the writer, after resolution, before the write): build the arrays of `files` on a
        background thread while Kuzu writes them (Kuzu's calls release the GIL), so that the batch's commit
        finds the snapshot built, or nearly (`apply_batch` takes it); None: that batch failed, forget it."""
        self._forget_pre(repo.id)
        if files is None:
            return
        pre = _Prebuild(files, threading.Event(), time.perf_counter())
        base = self._file(repo.id)
        if base is not None and hasattr(os, "fork"):
            # A process of its own: a thread would hold the GIL against the writer, which comes back from Kuzu
            # thousands of times during the write (measured: the write phase 2-2.4x as long). The child only
            # builds arrays and writes a file; the parent loads that file at the commit (~0.1 s on the stdlib).
            base.parent.mkdir(parents=True, exist_ok=True)
            pre.path = base.with_name(f"{base.stem}.pre{os.getpid()}.snap")
            pre.stamp = {"repo": repo.id, "prebuild": pre.t0}
            parent = os.getpid()
            pid = os.fork()
            if pid == 0:
                _build_in_child(parent, repo.id, files, pre.path, pre.stamp)
            pre.pid = pid
        else:
            threading.Thread(target=self._run_prebuild, args=(repo, pre), name=f"snapshot-pre-{repo.name}",
                             daemon=True).start()  # fmt: skip
        with self._lock:
            self._pre[repo.id] = pre

    def _forget_pre(self, repo_id: str) -> None:
        with self._lock:
            pre = self._pre.pop(repo_id, None)
        if pre is not None:
            pre.abandon()  # (a superseded thread finishes, and its arrays go)

    def _run_prebuild(self, repo: Repo, pre: _Prebuild) -> None:
        try:
            with _gc_paused():
                pre.fz = compact.build(repo.id, pre.files)  # (dropped with `pre` if it was superseded)
        except Exception:
            log.exception("query snapshot prebuild of %s failed; building it after the commit", repo.root)
        finally:
            pre.done.set()

    def _take_prebuilt(self, repo: Repo, files: list[tuple[str, FileData]], version: int) -> bool:
        """After a cold batch committed: show the snapshot `prebuild` made from exactly `files`, waiting on the
        writer for what is left of its build (the batch's commit makes the snapshot visible, so the first
        answer after the index does not wait); False when there is none for these files."""
        with self._lock:
            pre = self._pre.pop(repo.id, None)
        if pre is None:
            return False
        if not _same_files(pre.files, files):
            pre.abandon()
            return False
        t0 = time.perf_counter()
        fz = pre.wait()
        waited = time.perf_counter() - t0
        if fz is None:
            return False
        snap = Snapshot(repo.id)
        snap.adopt(fz, version)
        snap.stamp = compact.stamp_of(repo.id, version, repo.indexed_at)
        self._loaded(repo, snap, "index", pre.t0)
        self.loads[repo.id]["waitedAtCommitSeconds"] = round(waited, 3)
        with self._lock:
            old = self._builds.pop(repo.id, None)
            _let_go(self._snaps.get(repo.id))
            self._snaps[repo.id] = snap
            self._stale.discard(repo.id)
        if old is not None:
            old.done.set()  # (its thread sees it was superseded and stops)
        self._save_soon(repo.id, snap, 0.0)
        return True

    def build_from(self, repo: Repo, files: list[tuple[str, FileData]], version: int) -> None:
        """Replace the repository's snapshot with one built from `files` (every file of the graph) on a
        background thread; called on the writer right after the batch that wrote them committed."""
        build = _Build(Snapshot(repo.id), threading.Event(), [])
        build.snap.stamp = compact.stamp_of(repo.id, version, repo.indexed_at)
        with self._lock:
            old = self._builds.get(repo.id)
            self._builds[repo.id] = build
            _let_go(self._snaps.pop(repo.id, None))  # readers wait for the build, not for the graph
            self._stale.discard(repo.id)
        if old is not None:
            old.done.set()  # superseded: its thread sees that and stops; its waiters move to this build
        threading.Thread(
            target=self._run_build, args=(repo, build, files, version), name=f"snapshot-{repo.name}", daemon=True
        ).start()

    def _run_build(self, repo: Repo, build: _Build, files: list[tuple[str, FileData]], version: int) -> None:
        t0 = time.perf_counter()
        try:
            with _gc_paused():
                fz = compact.build(repo.id, files)  # the arrays, straight from the files: no dict form
            build.snap.adopt(fz, version)
            while True:
                with self._lock:
                    if self._builds.get(repo.id) is not build:
                        return  # superseded or abandoned
                    if not build.pending:
                        self._loaded(repo, build.snap, "engine", t0)  # (recorded before a reader can see it)
                        _let_go(self._snaps.get(repo.id))
                        self._snaps[repo.id] = build.snap
                        self._stale.discard(repo.id)
                        del self._builds[repo.id]
                        break
                    todo, build.pending = build.pending, []
                for v, batch, stamp in todo:  # the snapshot is not visible yet: no lock needed
                    build.snap.apply_files(v, batch)
                    build.snap.stamp = stamp
            self._save_soon(repo.id, build.snap, 0.0)
        except Exception:
            log.exception("query snapshot build of %s failed; loading from the graph on next use", repo.root)
            with self._lock:
                if self._builds.get(repo.id) is build:
                    del self._builds[repo.id]
        finally:
            build.done.set()

    def _loaded(self, repo: Repo, snap: Snapshot, source: str, t0: float) -> None:
        self._used.setdefault(repo.id, time.monotonic())
        # A snapshot is about a million long-lived objects: without this every full collection (triggered by
        # the allocations of any answer) walks them all again, which showed as 100+ ms stalls in `paths`.
        # Frozen objects are still freed by reference counting when a snapshot is dropped.
        gc.freeze()
        gcpause.trim_heap()
        info = {"source": source, "seconds": round(time.perf_counter() - t0, 3), "version": snap.version,
                **snap.counts()}  # fmt: skip
        self.loads[repo.id] = info
        log.info("query snapshot of %s: %s", repo.root, info)

    def on_batch(
        self, repo: Repo, changed: set[str], *, reload: bool, conn: Conn, files: dict[str, FileData | None] | None = None
    ) -> None:
        """Follow one committed batch: from the engine's `files` when given (no Kuzu reads), else by reading
        the `changed` files from the graph; `reload` drops the snapshot instead (loaded again on next use)."""
        self._touched[repo.id] = time.monotonic()
        version = repo.graph_version
        stamp = compact.stamp_of(repo.id, version, repo.indexed_at)
        with self._lock:
            build = self._builds.get(repo.id)
            if build is not None:
                if files is not None and not reload:
                    build.pending.append((version, files, stamp))
                else:  # the build cannot follow this batch: abandon it, the next reader loads from the graph
                    del self._builds[repo.id]
                    build.done.set()
                return
            snap = self._snaps.get(repo.id)
            evicted = self._evicted.pop(repo.id, None) if snap is None else None
            if evicted is not None and not reload:
                # Let go while idle: its saved file is the snapshot this batch follows. Taken back here (readers
                # asking meanwhile wait the ~0.06 s of the load), then the batch is applied as if it had stayed.
                snap = self._take_back(repo, evicted)
                if snap is None:
                    return  # (the file is gone or refused: the next reader reads the graph)
                self._snaps[repo.id] = snap
            elif snap is None or repo.id in self._stale:
                return
            elif reload:
                self._stale.add(repo.id)
                return
        with snap.lock.write():
            if repo.id in self._stale:
                return
            try:
                if files is not None:
                    snap.apply_files(version, files)
                else:
                    snap.apply(conn, version, changed)
                snap.stamp = stamp
            except Exception:
                log.exception("query snapshot delta failed; reloading on next use")
                self._stale.add(repo.id)
                return
        self._save_soon(repo.id, snap, self.save_delay_s if self.save_delay_s > 0 else 30.0)

    def _take_back(self, repo: Repo, stamp: dict[str, Any]) -> Snapshot | None:
        """The snapshot let go while idle (`evict_idle`), from its saved file (None when the file is gone or
        refused). Called with `_lock` held."""
        t0 = time.perf_counter()
        fz = self._read_file(repo, stamp)
        if fz is None:
            return None
        snap = Snapshot(repo.id)
        snap.adopt(fz, int(stamp["version"]))
        snap.stamp = stamp
        self._loaded(repo, snap, "file", t0)
        return snap

    def drop_pages(self, idle_s: float = PAGES_IDLE_S) -> list[str]:
        """Hand back the mapped file pages (`compact.Frozen.drop_pages`) of the snapshots no reader nor batch read
        for `idle_s` seconds, once after each read (the writer's idle upkeep). Returns their repository ids."""
        now = time.monotonic()
        with self._lock:
            held = list(self._snaps.items())
        out: list[str] = []
        for rid, snap in held:
            touched = self._touched.get(rid)
            if touched is None or now - touched < idle_s:
                continue
            del self._touched[rid]  # (once: until the next read)
            fz = snap.frozen
            if fz is not None and fz.drop_pages():
                out.append(rid)
        return out

    def evict_idle(self, idle_s: float, keep: set[str]) -> list[str]:
        """Let go of the snapshots no reader asked for in `idle_s` seconds whose saved file holds them as they are
        (compacted, saved at their version, nothing pending), except those of `keep` (repositories with worktree
        views, built over them). The next reader loads the file again (~0.06 s for the standard library); a batch
        that comes first takes it back and applies itself (`on_batch`). Returns the repository ids let go."""
        if idle_s <= 0:
            return []
        now = time.monotonic()
        gone: list[Snapshot] = []
        ids: list[str] = []
        with self._lock:
            for rid, snap in list(self._snaps.items()):
                # (a snapshot no reader asked for yet counts as used when the store first sees it idle)
                if (rid in keep or rid in self._stale or rid in self._builds or rid in self._timers
                        or rid in self._pre or now - self._used.setdefault(rid, now) < idle_s):  # fmt: skip
                    continue
                saved = self.saves.get(rid, {}).get("version")
                loaded = self.loads.get(rid, {})
                from_file = loaded.get("source") == "file" and loaded.get("version") == snap.version
                if snap.frozen is None or snap.dirty or snap.stamp is None or not (saved == snap.version or from_file):
                    continue
                path = self._file(rid)
                if path is None or not path.exists():
                    continue
                self._evicted[rid] = snap.stamp
                gone.append(self._snaps.pop(rid))
                ids.append(rid)
        for snap in gone:
            _let_go(snap)
        if gone:
            gcpause.trim_heap()
        return ids

    def apply_batch(self, repo: Repo, batch: CommittedBatch, conn: Conn) -> None:
        """Follow one committed batch (a listener on the writer thread): after a cold build, build the snapshot
        from the batch's files in the background (no Kuzu reads, the writer goes on), or drop it if the batch
        does not carry them; after an incremental one, redo the files it rewrote."""
        if batch.mode == "cold":
            if batch.files is not None:
                every = [(p, d) for p, d in batch.files.items() if d is not None]
                if not self._take_prebuilt(repo, every, batch.version):
                    self.build_from(repo, every, batch.version)
            else:
                self._forget_pre(repo.id)
                self.on_batch(repo, set(), reload=True, conn=conn)
            return
        self._forget_pre(repo.id)  # (one made for a batch that did not commit as cold)
        files = dict(batch.files) if batch.files is not None else None
        self.on_batch(repo, batch.paths, reload=False, conn=conn, files=files)

    def state(self, repo_id: str) -> str:
        """For `status`: the repository's query snapshot is in memory ("held"), was let go while idle and is in
        its saved file ("let go"), or is not loaded in this run or being loaded ("not loaded": the next query
        reads the file or the graph, or waits for the load under way)."""
        with self._lock:
            if repo_id in self._builds or (repo_id in self._snaps and repo_id not in self._stale):
                return "held"
            return "let go" if repo_id in self._evicted else "not loaded"

    def held(self) -> dict[str, list[str]]:
        """The repository ids each of this part's maps holds (`debug.retained`)."""
        with self._lock:
            return {"snapshots": sorted(self._snaps), "stale": sorted(self._stale), "builds": sorted(self._builds),
                    "timers": sorted(self._timers), "loads": sorted(self.loads), "saves": sorted(self.saves),
                    "prebuilds": sorted(self._pre), "abandoned": sorted(self.abandoned),
                    "evicted": sorted(self._evicted), "used": sorted(self._used)}  # fmt: skip

    def drop(self, repo_id: str) -> None:
        """Forget the repository's snapshot, its saved file and the figures of its last load and save."""
        with self._lock:
            _let_go(self._snaps.pop(repo_id, None))
            self._stale.discard(repo_id)
            build = self._builds.pop(repo_id, None)
            timer = self._timers.pop(repo_id, None)
            pre = self._pre.pop(repo_id, None)
            self.loads.pop(repo_id, None)  # (status figures of a repository that is gone)
            self._evicted.pop(repo_id, None)
            self._used.pop(repo_id, None)
            self._touched.pop(repo_id, None)
            self.saves.pop(repo_id, None)
            self.abandoned.pop(repo_id, None)
        if pre is not None:
            pre.abandon()
        if build is not None:
            build.done.set()
        if timer is not None:
            timer.cancel()
        path = self._file(repo_id)
        if path is not None:
            path.unlink(missing_ok=True)
