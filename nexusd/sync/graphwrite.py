"""How a sync batch becomes graph writes. Cypher lives here; Kuzu does not (the store executes it).

Two paths, because Kuzu's costs differ by three orders of magnitude (docs/field-notes.md, bulk loading):
- cold: CSV files and `COPY` for every table (100k symbols and 300k edges in well under a second);
- incremental: per batch, delete what the changed files owned and re-insert with `COPY ... FROM (UNWIND ...)`,
  restoring the edges other files had into symbols that survived (ids are stable across edits).
Everything a batch writes happens in one transaction: a file is in the graph whole or not at all.
"""

from __future__ import annotations

import contextlib
import csv
import json
import logging
import os
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..batch import edge_rows
from ..parse import gcpause
from ..parse.facts import FileFacts, SymbolFact, file_id, semantic_key, symbol_id
from ..repos import COLD_WRITE_KEY
from ..resolve.base import MAX_STORED_SITES, FileResolution
from ..schema import hash_text, stored_hash, stored_hash_csv
from ..store import Conn

log = logging.getLogger(__name__)

FILE_COLS = ("id", "repoId", "path", "hash", "language", "role", "lineCount", "size", "mtimeNs", "diagnostics")
SYMBOL_COLS = (
    "id", "repoId", "path", "key", "name", "qualifiedName", "kind", "signature", "startLine", "endLine",
    "doc", "contentHash", "exported", "unresolved", "unresolvedCount",
)  # fmt: skip
# (Symbol.searchText is not written: nothing reads it since identifiers are searched in the query snapshot. Making
# it cost the kernel's cold write ~9 s, 5.5 s for `drivers/` alone (1.12M symbols), and 25 bytes per symbol to
# copy. The column stays, empty, so graphs written before need no rebuild.)
# Relationship tables whose edges may point into a file's symbols from elsewhere; kept across a re-extract.
INCOMING_RELS = (
    ("POSSIBLY_CALLS", "Symbol", ", r.line, r.resolution, r.confidence"),
    ("INHERITS", "Symbol", ", r.resolution, r.confidence"),
    ("ABOUT", "Fact", ""),
    ("TOUCHED", "Change", ""),
)


@dataclass
class FileStat:
    size: int = 0
    mtime_ns: int = 0


@dataclass
class Batch:
    """Everything one sync writes."""

    repo_id: str
    changed: dict[str, FileFacts] = field(default_factory=dict)  # re-extracted (new or modified)
    new_paths: set[str] = field(default_factory=set)  # subset of changed with no File node yet
    stats: dict[str, FileStat] = field(default_factory=dict)
    touched: dict[str, FileStat] = field(default_factory=dict)  # same content, new stat: update only
    deleted: set[str] = field(default_factory=set)
    resolutions: dict[str, FileResolution] = field(default_factory=dict)  # changed + affected files
    facts: dict[str, FileFacts] = field(default_factory=dict)  # facts of every file in `resolutions`

    def empty(self) -> bool:
        return not (self.changed or self.touched or self.deleted or self.resolutions)


def _doc(sym: SymbolFact) -> str:
    return sym.doc[:500]


def ids_of(repo_id: str, facts: FileFacts) -> list[str]:
    """The id of each of a file's symbols, in `facts.symbols` order (computed once per file and row kind)."""
    path = facts.path
    return [symbol_id(repo_id, path, sym.kind, sym.qualified_name, sym.occurrence) for sym in facts.symbols]


def graph_unresolved(facts: FileFacts, res: FileResolution | None, ids: list[str]) -> dict[str, list[str]]:
    """The unresolved entries of a file's symbols as the graph stores them (lines relative to each symbol's
    start: `resolve.base.graph_entry`)."""
    if res is None or not res.site_rows:
        return {}
    starts: dict[str, int] = {}
    for sym, sid in zip(facts.symbols, ids, strict=True):
        starts.setdefault(sid, sym.start_line)  # (a repeated id: the first symbol's row is the one written)
    return res.stored_unresolved(starts)


def symbol_rows(
    repo_id: str, facts: FileFacts, res: FileResolution | None, ids: list[str] | None = None, *, for_csv: bool = False
) -> list[tuple[Any, ...]]:
    """A file's Symbol rows in `SYMBOL_COLS` order; `for_csv`: their content hashes as the text a CSV COPY reads
    (`stored_hash_csv`), else as the UUIDs a statement binds."""
    rows = []
    hashed = stored_hash_csv if for_csv else stored_hash
    path, language = facts.path, facts.language
    ids = ids or ids_of(repo_id, facts)
    unresolved = graph_unresolved(facts, res, ids)
    hash_of = facts.symbol_hash
    for i, (sym, sid) in enumerate(zip(facts.symbols, ids, strict=True)):
        raw = unresolved.get(sid, ())
        rows.append(
            (
                sid, repo_id, path,
                semantic_key(language, sym.kind, path, sym.qualified_name, sym.occurrence),
                sym.name, sym.qualified_name, sym.kind, sym.signature[:300], sym.start_line, sym.end_line,
                _doc(sym), hashed(hash_of(i)), sym.exported,
                "\n".join(raw[:MAX_STORED_SITES]), len(raw),
            )
        )  # fmt: skip
    return rows


def file_row(repo_id: str, facts: FileFacts, st: FileStat) -> tuple[Any, ...]:
    diags = [
        {"severity": d.severity, "code": d.code, "message": d.message[:300], "line": d.line}
        for d in facts.diagnostics[:20]
    ]
    return (
        file_id(repo_id, facts.path), repo_id, facts.path, stored_hash(facts.hash), facts.language, facts.role,
        facts.line_count, st.size, st.mtime_ns, json.dumps(diags) if diags else "",
    )  # fmt: skip


def contains_rows(
    repo_id: str, facts: FileFacts, ids: list[str] | None = None
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(File->Symbol rows, Symbol->Symbol rows), each (from, to, ordinal)."""
    fid = file_id(repo_id, facts.path)
    if ids is None:
        ids = ids_of(repo_id, facts)
    by_qname: dict[str, str] = {}
    for sym, sid in zip(facts.symbols, ids, strict=True):
        by_qname.setdefault(sym.qualified_name, sid)
    top: list[tuple[Any, ...]] = []
    nested: list[tuple[Any, ...]] = []
    for ordinal, (sym, sid) in enumerate(zip(facts.symbols, ids, strict=True)):
        parent = by_qname.get(sym.parent) if sym.parent else None
        if parent is not None and parent != sid:
            nested.append((parent, sid, ordinal))
        else:
            top.append((fid, sid, ordinal))
    return top, nested


def _copy(conn: Conn, table: str, cols: Sequence[str], rows: list[tuple[Any, ...]], rel: tuple[str, str] | None = None) -> None:
    if rel:
        conn.copy_rels(table, rel[0], rel[1], rows)
    else:
        conn.copy_nodes(table, cols, rows)


def _edges_within(
    rows: list[tuple[Any, ...]], src: set[Any] | Callable[[Any], bool], dst: set[Any] | Callable[[Any], bool],
    dropped: list[tuple[Any, ...]],
) -> list[tuple[Any, ...]]:  # fmt: skip
    """Edges whose two ends exist (are written by this batch, or already in the graph)."""
    src_ok = src.__contains__ if isinstance(src, set) else src
    dst_ok = dst.__contains__ if isinstance(dst, set) else dst
    kept = []
    for row in rows:
        if src_ok(row[0]) and dst_ok(row[1]):
            kept.append(row)
        else:
            dropped.append(row)
    return kept


def _report_dropped(repo_id: str, dropped: list[tuple[Any, ...]], counts: dict[str, int]) -> None:
    if dropped:
        # Kuzu fails a whole relationship COPY on one missing endpoint ("Unable to find primary key value"), and
        # rolling such a transaction back loses the relationship tables' other rows (see ARCHITECTURE.md): an
        # edge to nothing is dropped here instead, and said.
        log.warning("repository %s: dropped %d edges whose endpoint is not in the graph, e.g. %s",
                    repo_id, len(dropped), [r[:2] for r in dropped[:3]])
        counts["droppedEdges"] = len(dropped)


def write_cold(conn: Conn, batch: Batch) -> dict[str, int]:
    """A repository's first graph (or a full rebuild): everything through CSV COPY, in one transaction when the
    rows fit the buffer pool's share (`cold_budget`), else in transactions of that size (`_write_cold_chunked`).

    The rows are made file by file and streamed to CSV files (`ColdRows`), each table's split into parts of at
    most the budget, before any transaction: they are never all in memory at once (a list of every row of the
    standard library was ~150 MB of tuples at the write's peak, of the Linux kernel several GB), and reads are
    held back only for the COPYs, not while the files are written. Every row is checked as it is made (unique
    keys, first one kept; both ends of each edge among the ids written), so no COPY can fail on the data, and the
    counts are checked after the commit (`verify_counts`)."""
    counts = {"files": 0, "symbols": 0, "imports": 0, "calls": 0}
    repo_id = batch.repo_id
    budget = cold_budget(conn)
    ids = {path: ids_of(repo_id, facts) for path, facts in batch.changed.items()}
    file_ids = {file_id(repo_id, facts.path) for facts in batch.changed.values()}
    symbol_ids = {sid for found in ids.values() for sid in found}
    dropped: list[tuple[Any, ...]] = []
    tmp = conn.store.tmp_dir
    tables = [ColdRows(tmp, table, cols, rel, budget) for table, cols, rel in COLD_TABLES]
    files, symbols, has_file, top, nested, imports, calls = tables
    try:
        seen_files: set[str] = set()
        seen_symbols: set[str] = set()
        seen_top: set[str] = set()
        seen_nested: set[str] = set()
        with gcpause.Windows() as gc_window:  # (each file's rows are short-lived; the id sets are kept)
            for path, facts in batch.changed.items():
                res = batch.resolutions.get(path) or FileResolution(path)
                row = file_row(repo_id, facts, batch.stats.get(path, FileStat()))
                if row[0] not in seen_files:  # a duplicate key would fail the whole COPY: the first one is kept
                    seen_files.add(row[0])
                    files.add(row)
                    has_file.add((repo_id, row[0]))
                found = ids[path]
                for row in symbol_rows(repo_id, facts, res, found, for_csv=True):
                    if row[0] not in seen_symbols:
                        seen_symbols.add(row[0])
                        symbols.add(row)
                t, n = contains_rows(repo_id, facts, found)
                for made, seen, out, src in ((t, seen_top, top, file_ids), (n, seen_nested, nested, symbol_ids)):
                    for row in made:  # one parent per symbol (column 1), both ends written
                        if row[1] not in seen:
                            seen.add(row[1])
                            _add_within(out, row, src, symbol_ids, dropped)
                i, c = edge_rows(repo_id, res)
                for row in i:
                    _add_within(imports, row, file_ids, file_ids, dropped)
                for row in c:
                    _add_within(calls, row, symbol_ids, symbol_ids, dropped)
                gc_window.tick()
        _report_dropped(repo_id, dropped, counts)
        if FAULTS.pop("dangling-edge", None) and seen_symbols:
            calls.add((next(iter(seen_symbols)), "no-such-symbol", 1, "test-fault", 1.0))  # debug.fail_next_build
        # The ids and the sets that kept the rows unique are done with: let them go before Kuzu's COPY, whose own
        # memory comes on top (the kernel's 1.8 million symbol ids, in lists and four sets, while it copied).
        del ids, symbol_ids, seen_symbols, seen_top, seen_nested
        for rows in tables:
            rows.close()
        if sum(rows.bytes for rows in tables) <= budget:
            with conn.transaction(deletes=True):
                delete_repo_code(conn, repo_id)
                for rows in tables:
                    rows.copy(conn)
        else:
            counts["transactions"] = _write_cold_chunked(conn, repo_id, tables, budget)
    finally:
        for rows in tables:
            rows.discard()
    counts.update(files=files.count, symbols=symbols.count, imports=imports.count, calls=calls.count)
    expected = {"files": files.count, "symbols": symbols.count, "hasFile": has_file.count,
                "contains": top.count + nested.count, "imports": imports.count, "calls": calls.count}  # fmt: skip
    if FAULTS.pop("phantom-edge", None) and files.count:  # debug.damage_next_build: what Kuzu's damaged storage shows
        first = next(iter(seen_files))
        with conn.transaction():
            conn.execute("MATCH (r:Repository {id: $r}), (f:File {id: $f}) CREATE (r)-[:HAS_FILE]->(f)",
                         {"r": repo_id, "f": first})  # fmt: skip
    problems = verify_counts(conn, repo_id, expected)
    if problems:
        raise GraphDamaged(f"the graph written does not hold what was written: {'; '.join(problems)}")
    return counts


# The tables of a cold write, in the order they are copied (nodes before the edges between them).
COLD_TABLES: tuple[tuple[str, Sequence[str], tuple[str, str] | None], ...] = (
    ("File", FILE_COLS, None), ("Symbol", SYMBOL_COLS, None), ("HAS_FILE", (), ("Repository", "File")),
    ("CONTAINS", (), ("File", "Symbol")), ("CONTAINS", (), ("Symbol", "Symbol")), ("IMPORTS", (), ("File", "File")),
    ("POSSIBLY_CALLS", (), ("Symbol", "Symbol")),
)  # fmt: skip


def _add_within(
    out: ColdRows, row: tuple[Any, ...], src: set[Any], dst: set[Any], dropped: list[tuple[Any, ...]]
) -> None:
    """An edge is written when its two ends are (Kuzu fails a whole COPY on one missing end)."""
    if row[0] in src and row[1] in dst:
        out.add(row)
    else:
        dropped.append(row)


class ColdRows:
    """One table's rows of a cold write, streamed to CSV files of at most `budget` bytes each (a part is one
    transaction's worth when the write is chunked). The files live in the store's temporary directory until
    `discard`."""

    CHECK_EVERY = 256  # rows between looks at the part's size

    def __init__(self, tmp_dir: str, table: str, cols: Sequence[str], rel: tuple[str, str] | None, budget: int):
        self.tmp_dir, self.table, self.cols, self.rel, self.budget = tmp_dir, table, cols, rel, budget
        self.parts: list[str] = []
        self.count = 0
        self.bytes = 0  # of the closed parts
        self._fh: Any = None
        self._writer: Any = None
        self._in_part = 0

    def add(self, row: tuple[Any, ...]) -> None:
        if self._writer is None:
            fd, name = tempfile.mkstemp(prefix=f"nexus-{self.table}-", suffix=".csv", dir=self.tmp_dir)
            self.parts.append(name)
            self._fh = os.fdopen(fd, "w", newline="", encoding="utf-8", errors="surrogateescape")
            self._writer = csv.writer(self._fh)
            self._in_part = 0
        self._writer.writerow(row)
        self.count += 1
        self._in_part += 1
        if self._in_part % self.CHECK_EVERY == 0 and self._fh.tell() >= self.budget:
            self._close_part()

    def _close_part(self) -> None:
        if self._fh is not None:
            self.bytes += self._fh.tell()
            self._fh.close()
        self._fh = self._writer = None

    def close(self) -> None:
        self._close_part()

    def copy(self, conn: Conn, parts: Sequence[str] | None = None) -> None:
        for name in self.parts if parts is None else parts:
            conn.copy_csv(self.table, self.cols, name, self.rel)

    def discard(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = self._writer = None
        for name in self.parts:
            with contextlib.suppress(OSError):
                os.unlink(name)
        self.parts = []


# What one cold-write transaction may hold, in bytes of its CSV rows (`ColdRows`). Kuzu 0.11.3 keeps a
# transaction's copied pages in the buffer pool until COMMIT, so a COPY too big for the pool fails with "the buffer
# pool is full" however it is split into statements; split into transactions it does not (each commit's pages
# are checkpointed and can be evicted). Measured in the daemon on the kernel's fs/ (77k symbols, 40 MB of rows):
# one transaction needs 96-128 MB of pool, and a 64 MB pool fails at 8 MB of rows per transaction and holds at
# 2 MB: about 60 MB of the pool is not the transaction's (tables' pages, primary-key indexes), and the rows take
# about their size again. So a transaction holds an eighth of what the pool has beyond that reserve.
COLD_TX_RESERVED_BYTES = 64 * 1024 * 1024
COLD_TX_POOL_SHARE = 8
COLD_TX_MIN_BYTES = 1024 * 1024


def cold_budget(conn: Conn) -> int:
    """The CSV bytes one cold-write transaction may hold (see COLD_TX_POOL_SHARE)."""
    spare = conn.store.buffer_pool_bytes - COLD_TX_RESERVED_BYTES
    return max(COLD_TX_MIN_BYTES, spare // COLD_TX_POOL_SHARE)


def _write_cold_chunked(conn: Conn, repo_id: str, tables: list[ColdRows], budget: int) -> int:
    """A cold write too big for one transaction: the old graph goes and a marker is set (one transaction), the
    nodes and then the edges are copied in transactions of at most `budget` bytes (one CSV part each), and the
    marker goes with the last one. Until then the repository's graph is partial, and says so: a sync that finds
    the marker (after a kill, or a failed chunk) rebuilds from nothing (`repos.cold_write_pending`), and the
    registry marks the repository damaged (stale) until that rebuild commits. Returns the number of
    transactions."""
    with conn.transaction(deletes=True):
        delete_repo_code(conn, repo_id)
        conn.execute("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": COLD_WRITE_KEY + repo_id, "v": "writing"})
    n = 1
    trims = 0.0
    for rows in tables:
        for part in rows.parts:
            with conn.transaction():
                rows.copy(conn, [part])
            n += 1
            # Kuzu frees most of what a COPY allocated by its commit, and glibc kept it mapped: the daemon grew by
            # ~1.2 GB over the Linux kernel's chunked write. `python bench/cold_write_trim.py` measures the trim.
            t0 = time.perf_counter()
            gcpause.trim_heap()
            trims += time.perf_counter() - t0
            if FAULTS.pop("kill-mid-cold-write", None):  # debug.kill_mid_cold_write: a kill -9 between commits
                os.kill(os.getpid(), signal.SIGKILL)
    with conn.transaction():
        conn.execute("MATCH (m:Meta {key: $k}) DELETE m", {"k": COLD_WRITE_KEY + repo_id})
    log.info("repository %s: cold write in %d transactions of about %d MB at most (heap trims %.2f s)", repo_id, n + 1,
             budget >> 20, trims)  # fmt: skip
    return n + 1


# Faults a test can arm through the `debug.*` ops (registered only with NEXUS_DEBUG_OPS=1):
# "dangling-edge" hands the next cold COPY one edge to a symbol that does not exist, the way Kuzu fails for real;
# "kill-mid-cold-write" kills the daemon (SIGKILL) after the first row transaction of the next chunked cold write;
# "phantom-edge" adds one HAS_FILE edge after the next cold write commits, before its counts are checked: the shape
# Kuzu 0.11.3's damaged relationship storage shows (edges no statement wrote, surviving a rebuild; ARCHITECTURE.md,
# "Invariants").
FAULTS: dict[str, bool] = {}


class GraphDamaged(RuntimeError):
    """The graph of a repository fails its invariant counts: it must be rebuilt from nothing. Raised by a cold
    write (which has just deleted the repository's graph and written it whole), it means the database file itself
    holds relationships no statement wrote: no rebuild inside that file can mend it (`LiveSync.run_sync`)."""


def integrity_counts(conn: Conn, repo_id: str) -> dict[str, int]:
    """Cheap invariant counts of one repository's code graph (a handful of aggregate queries)."""
    r = {"r": repo_id}
    return {
        "files": conn.scalar("MATCH (f:File) WHERE f.repoId = $r RETURN count(f)", r) or 0,
        "symbols": conn.scalar("MATCH (s:Symbol) WHERE s.repoId = $r RETURN count(s)", r) or 0,
        "hasFile": conn.scalar("MATCH (:Repository {id: $r})-[e:HAS_FILE]->(:File) RETURN count(e)", r) or 0,
        "contains": conn.scalar("MATCH ()-[e:CONTAINS]->(s:Symbol) WHERE s.repoId = $r RETURN count(e)", r) or 0,
        "imports": conn.scalar("MATCH (f:File)-[e:IMPORTS]->(:File) WHERE f.repoId = $r RETURN count(e)", r) or 0,
        "calls": conn.scalar("MATCH (a:Symbol)-[e:POSSIBLY_CALLS]->(:Symbol) WHERE a.repoId = $r RETURN count(e)", r) or 0,
    }


def verify_counts(conn: Conn, repo_id: str, expected: dict[str, int] | None = None) -> list[str]:
    """What is wrong with a repository's graph: against `expected` counts when given, else the invariants that
    hold for every graph this module writes (one HAS_FILE per File, one CONTAINS parent per Symbol)."""
    got = integrity_counts(conn, repo_id)
    if expected is not None:
        return [f"{k}: {got.get(k)} in the graph, {v} written" for k, v in expected.items() if got.get(k) != v]
    problems = []
    if got["hasFile"] != got["files"]:
        problems.append(f"{got['files']} files but {got['hasFile']} HAS_FILE edges")
    if got["contains"] != got["symbols"]:
        problems.append(f"{got['symbols']} symbols but {got['contains']} CONTAINS edges")
    return problems


def delete_repo_code(conn: Conn, repo_id: str) -> None:
    conn.execute("MATCH (s:Symbol) WHERE s.repoId = $r DETACH DELETE s", {"r": repo_id})
    conn.execute("MATCH (f:File) WHERE f.repoId = $r DETACH DELETE f", {"r": repo_id})


def write_incremental(
    conn: Conn, batch: Batch, live_symbols: set[str] | None = None, live_files: set[str] | None = None
) -> dict[str, int]:
    """Apply one batch: changed files re-inserted, affected files' outgoing edges redone, deleted removed.

    `live_symbols`/`live_files`: the ids the graph holds once the batch is in (the engine's view); edges with an
    end outside them are dropped before any COPY, which would fail the whole batch on one of them."""
    repo = batch.repo_id
    changed = sorted(batch.changed)
    gone = sorted(batch.deleted)
    replaced = changed + gone
    affected = sorted(p for p in batch.resolutions if p not in batch.changed)
    counts = {"files": len(changed), "deleted": len(gone), "affected": len(affected), "symbols": 0, "calls": 0,
              "imports": 0, "restored": 0}
    with conn.transaction(deletes=True):
        saved: dict[str, list[list[Any]]] = {}
        if changed:
            for rel, src, props in INCOMING_RELS:
                if not conn.has_table(rel):
                    continue  # (ABOUT, before any memory)
                own = " AND NOT (a.repoId = $repo AND a.path IN $paths)" if src == "Symbol" else ""
                saved[rel] = conn.rows(
                    f"MATCH (a:{src})-[r:{rel}]->(b:Symbol) WHERE b.repoId = $repo AND b.path IN $paths{own} "
                    f"RETURN '{src}', {'a.path' if src == 'Symbol' else 'NULL'}, a.id, b.id{props}",
                    {"repo": repo, "paths": changed},
                )
        if replaced:
            conn.execute(
                "MATCH (s:Symbol) WHERE s.repoId = $repo AND s.path IN $paths DETACH DELETE s",
                {"repo": repo, "paths": replaced},
            )
            conn.execute(
                "MATCH (f:File)-[r:IMPORTS]->(:File) WHERE f.repoId = $repo AND f.path IN $paths DELETE r",
                {"repo": repo, "paths": changed},
            )
        if gone:
            conn.execute(
                "MATCH (f:File) WHERE f.repoId = $repo AND f.path IN $paths DETACH DELETE f",
                {"repo": repo, "paths": gone},
            )
        if affected:
            conn.execute(
                "MATCH (a:Symbol)-[r:POSSIBLY_CALLS]->(:Symbol) WHERE a.repoId = $repo AND a.path IN $paths DELETE r",
                {"repo": repo, "paths": affected},
            )
            conn.execute(
                "MATCH (f:File)-[r:IMPORTS]->(:File) WHERE f.repoId = $repo AND f.path IN $paths DELETE r",
                {"repo": repo, "paths": affected},
            )
        # Files: update existing File nodes in place (incoming IMPORTS survive), create new ones.
        new_files, symbols, top, nested = [], [], [], []
        for path in changed:
            facts = batch.changed[path]
            row = file_row(repo, facts, batch.stats.get(path, FileStat()))
            if path in batch.new_paths:
                new_files.append(row)
            else:
                conn.execute(
                    "MATCH (f:File {id: $id}) SET f.hash = $hash, f.language = $lang, f.role = $role, "
                    "f.lineCount = $lines, f.size = $size, f.mtimeNs = $mtime, f.diagnostics = $diags",
                    {"id": row[0], "hash": row[3], "lang": row[4], "role": row[5], "lines": row[6],
                     "size": row[7], "mtime": row[8], "diags": row[9]},
                )
            res = batch.resolutions.get(path) or FileResolution(path)
            ids = ids_of(repo, facts)
            symbols.extend(symbol_rows(repo, facts, res, ids))
            t, n = contains_rows(repo, facts, ids)
            top.extend(t)
            nested.extend(n)
        for path, st in batch.touched.items():
            conn.execute(
                "MATCH (f:File {id: $id}) SET f.size = $size, f.mtimeNs = $mtime",
                {"id": file_id(repo, path), "size": st.size, "mtime": st.mtime_ns},
            )
        _copy(conn, "File", FILE_COLS, new_files)
        _copy(conn, "HAS_FILE", (), [(repo, f[0]) for f in new_files], ("Repository", "File"))
        _copy(conn, "Symbol", SYMBOL_COLS, symbols)
        _copy(conn, "CONTAINS", (), top, ("File", "Symbol"))
        _copy(conn, "CONTAINS", (), nested, ("Symbol", "Symbol"))
        live = {row[0] for row in symbols}
        # Edges of every re-resolved file (changed and affected).
        imports, calls = [], []
        for res in batch.resolutions.values():
            i, c = edge_rows(repo, res)
            imports.extend(i)
            calls.extend(c)
        dropped: list[tuple[Any, ...]] = []
        if live_files is not None:
            imports = _edges_within(imports, live_files, live_files, dropped)
        if live_symbols is not None:
            calls = _edges_within(calls, live_symbols, live_symbols, dropped)
        _copy(conn, "IMPORTS", (), imports, ("File", "File"))
        _copy(conn, "POSSIBLY_CALLS", (), calls, ("Symbol", "Symbol"))
        # Unresolved references of affected files' symbols may have changed.
        for path in affected:
            res = batch.resolutions[path]
            known = batch.facts.get(path)
            if known is None:
                continue
            known_ids = ids_of(repo, known)
            stored = graph_unresolved(known, res, known_ids)
            for sid in known_ids:
                raw = stored.get(sid, [])
                conn.execute(
                    "MATCH (s:Symbol {id: $id}) WHERE coalesce(s.unresolvedCount, 0) <> $n OR coalesce(s.unresolved, '') <> $u "
                    "SET s.unresolved = $u, s.unresolvedCount = $n",
                    {"id": sid, "u": "\n".join(raw[:MAX_STORED_SITES]), "n": len(raw)},
                )
        # Restore edges other files (and memory, history) had into symbols that still exist.
        restored = 0
        for rel, rows in saved.items():
            # Edges from re-resolved files were just recreated; the rest come back if both ends live (a
            # caller in a file this batch deletes went with it: restoring its edge failed the whole COPY).
            keep = [r for r in rows if r[3] in live and r[1] not in batch.resolutions and r[1] not in batch.deleted]
            if live_symbols is not None:
                keep = [r for r in keep if r[0] != "Symbol" or r[2] in live_symbols]
            by_label: dict[str, list[tuple[Any, ...]]] = {}
            for r in keep:
                by_label.setdefault(r[0], []).append(tuple(r[2:]))
            for label, rrows in by_label.items():
                _copy(conn, rel, (), rrows, (label, "Symbol"))
                restored += len(rrows)
    counts.update(symbols=len(symbols), calls=len(calls), imports=len(imports), restored=restored)
    _report_dropped(repo, dropped, counts)
    return counts


def known_files(conn: Conn, repo_id: str) -> dict[str, tuple[str, int, int]]:
    """path -> (hash, size, mtimeNs) of every File node of the repository."""
    rows = conn.rows(
        "MATCH (f:File) WHERE f.repoId = $r RETURN f.path, f.hash, f.size, f.mtimeNs", {"r": repo_id}
    )
    return {r[0]: (hash_text(r[1]), r[2] or 0, r[3] or 0) for r in rows}


def repo_counts(conn: Conn, repo_id: str) -> dict[str, Any]:
    files = conn.scalar("MATCH (f:File) WHERE f.repoId = $r RETURN count(f)", {"r": repo_id}) or 0
    symbols = conn.scalar("MATCH (s:Symbol) WHERE s.repoId = $r RETURN count(s)", {"r": repo_id}) or 0
    calls = conn.rows(
        "MATCH (a:Symbol)-[e:POSSIBLY_CALLS]->(:Symbol) WHERE a.repoId = $r RETURN e.resolution, count(*)",
        {"r": repo_id},
    )
    imports = conn.scalar(
        "MATCH (a:File)-[e:IMPORTS]->(:File) WHERE a.repoId = $r RETURN count(e)", {"r": repo_id}
    ) or 0
    unresolved = conn.scalar(
        "MATCH (s:Symbol) WHERE s.repoId = $r RETURN CAST(sum(s.unresolvedCount) AS INT64)", {"r": repo_id}
    ) or 0
    diags = conn.scalar(
        "MATCH (f:File) WHERE f.repoId = $r AND coalesce(f.diagnostics, '') <> '' RETURN count(f)", {"r": repo_id}
    ) or 0
    return {
        "files": files,
        "symbols": symbols,
        "edges": {"calls": {k: v for k, v in sorted(calls)}, "imports": imports},
        "unresolvedReferences": unresolved,
        "filesWithDiagnostics": diags,
    }


def diagnostics(conn: Conn, repo_id: str, limit: int = 50) -> list[dict[str, Any]]:
    rows = conn.rows(
        "MATCH (f:File) WHERE f.repoId = $r AND coalesce(f.diagnostics, '') <> '' RETURN f.path, f.diagnostics "
        "ORDER BY f.path LIMIT $n",
        {"r": repo_id, "n": limit},
    )
    out = []
    for path, text in rows:
        for d in json.loads(text):
            out.append({"path": path, **d})
    return out


def chunks(items: Iterable[Any], n: int) -> Iterable[list[Any]]:
    buf: list[Any] = []
    for item in items:
        buf.append(item)
        if len(buf) >= n:
            yield buf
            buf = []
    if buf:
        yield buf


# -- the small-batch path ------------------------------------------------------------------------------

# Above this many rows to create or change, per-row statements cost more than a COPY (and its checkpoint).
DIFF_MAX_ROWS = 1_500

_SYMBOL_UPDATABLE = tuple(range(3, len(SYMBOL_COLS)))  # every column but id, repoId, path
_SYMBOL_LINE_COLS = (SYMBOL_COLS.index("startLine"), SYMBOL_COLS.index("endLine"))
_SYMBOL_LINES = frozenset(_SYMBOL_LINE_COLS)
_FILE_UPDATABLE = (3, 4, 5, 6, 7, 8, 9)  # every column but id, repoId, path
_CALL_NAMES = ("from", "to", "line", "resolution", "confidence")
_IMPORT_NAMES = ("from", "to", "specifier", "line", "resolution", "confidence")
_CALL_LINE = _CALL_NAMES.index("line")
_IMPORT_LINE = _IMPORT_NAMES.index("line")


def _changed(old: tuple[Any, ...] | None, new: tuple[Any, ...], columns: tuple[int, ...]) -> tuple[int, ...]:
    """The columns of `new` that differ from `old` (all of them when there is no old row)."""
    if old is None:
        return columns
    return tuple(i for i in columns if old[i] != new[i])


def _set_statement(label: str, names: Sequence[str], columns: tuple[int, ...]) -> str:
    """`SET` of these columns only. Kuzu 0.11.3 rewrites a string column's whole node-group chunk, appending
    every row's value again, at the checkpoint after any SET of it, even to the same value (ARCHITECTURE.md,
    "Database growth and compaction"); integer columns are updated in place. So an edit that only moves
    lines sets only integers, and the statement never names a column whose value did not change."""
    var = label[0].lower()
    sets = ", ".join(f"{var}.{names[i]} = $c{i}" for i in columns)
    return f"MATCH ({var}:{label} {{id: $c0}}) SET {sets}"
_SYMBOL_PROPS = ", ".join(f"{col}: r.c{i}" for i, col in enumerate(SYMBOL_COLS))
_FILE_PROPS = ", ".join(f"{col}: $c{i}" for i, col in enumerate(FILE_COLS))


@dataclass
class Diff:
    """What a small batch changes, computed from the old and new facts and resolutions in memory."""

    create_files: list[tuple[Any, ...]] = field(default_factory=list)
    update_files: list[tuple[Any, ...]] = field(default_factory=list)
    changed_columns: dict[str, tuple[int, ...]] = field(default_factory=dict)  # row id -> columns to set
    delete_files: list[str] = field(default_factory=list)  # file ids
    delete_symbols: list[str] = field(default_factory=list)
    # parent id -> (parent label, [(ordinal, symbol row)]), parents before children
    create_symbols: dict[str, tuple[str, list[tuple[int, tuple[Any, ...]]]]] = field(default_factory=dict)
    update_symbols: list[tuple[Any, ...]] = field(default_factory=list)
    # Symbols whose lines alone moved, by (file id, how far the start moved, how far the end did): their rows.
    # One statement per group instead of one per symbol (`write_diff`).
    moved_symbols: dict[tuple[str, int, int], list[tuple[Any, ...]]] = field(default_factory=dict)
    delete_calls: list[tuple[str, str]] = field(default_factory=list)
    create_calls: list[tuple[Any, ...]] = field(default_factory=list)
    # Edges between the same pair whose line, provenance or confidence moved: (new row, the columns that did)
    update_calls: list[tuple[tuple[Any, ...], tuple[int, ...]]] = field(default_factory=list)
    # Edges whose line alone moved, by (file id, how far): their rows. A line added above a function moves all
    # its calls alike, and one above many functions all of theirs: one statement per file and shift instead of
    # one per edge (`write_diff`). Only callers all of whose edges moved alike are here (`_file_moves`); the
    # others' moves are by (caller id, how far) in `moved_caller_calls`, one statement per caller.
    moved_calls: dict[tuple[str, int], list[tuple[Any, ...]]] = field(default_factory=dict)
    moved_caller_calls: dict[tuple[str, int], list[tuple[Any, ...]]] = field(default_factory=dict)
    delete_imports: list[tuple[str, str]] = field(default_factory=list)
    create_imports: list[tuple[Any, ...]] = field(default_factory=list)
    update_imports: list[tuple[tuple[Any, ...], tuple[int, ...]]] = field(default_factory=list)
    # Imports whose line alone moved, by (importing file id, how far): one statement per file and shift.
    moved_imports: dict[tuple[str, int], list[tuple[Any, ...]]] = field(default_factory=dict)

    def moved_edges(self) -> int:
        return sum(len(v) for d in (self.moved_calls, self.moved_caller_calls, self.moved_imports) for v in d.values())

    def rows(self) -> int:
        return (
            len(self.create_files) + len(self.update_files) + len(self.delete_files) + len(self.delete_symbols)
            + sum(len(v[1]) for v in self.create_symbols.values()) + len(self.update_symbols)
            + len(self.delete_calls) + len(self.create_calls) + len(self.update_calls)
            + self.moved_edges() + sum(len(v) for v in self.moved_symbols.values())
            + len(self.delete_imports) + len(self.create_imports) + len(self.update_imports)
        )  # fmt: skip


def _symbol_table(repo: str, facts: FileFacts | None, res: FileResolution | None) -> dict[str, tuple[Any, ...]]:
    if facts is None:
        return {}
    return {row[0]: row for row in symbol_rows(repo, facts, res)}


def _parents(repo: str, facts: FileFacts) -> dict[str, tuple[str, str, int]]:
    """symbol id -> (parent label, parent id, ordinal)."""
    top, nested = contains_rows(repo, facts)
    out = {row[1]: ("File", row[0], row[2]) for row in top}
    out.update({row[1]: ("Symbol", row[0], row[2]) for row in nested})
    return out


def compute_diff(
    batch: Batch,
    old_facts: dict[str, FileFacts | None],
    old_res: dict[str, FileResolution | None],
) -> Diff:
    """The difference between the graph as last written (old facts/resolutions) and the batch."""
    repo = batch.repo_id
    diff = Diff()
    gone_symbols: set[str] = set()
    for path in sorted(batch.deleted):
        diff.delete_files.append(file_id(repo, path))
        gone_symbols |= set(_symbol_table(repo, old_facts.get(path), old_res.get(path)))
    for path in sorted(set(batch.changed) | set(batch.resolutions)):
        facts = batch.changed.get(path) or batch.facts.get(path)
        if facts is None:
            continue
        res = batch.resolutions.get(path)
        fid = file_id(repo, path)
        if path in batch.changed:
            row = file_row(repo, facts, batch.stats.get(path, FileStat()))
            if path in batch.new_paths:
                diff.create_files.append(row)
            else:
                diff.update_files.append(row)
                before_facts = old_facts.get(path)
                old_row = file_row(repo, before_facts, FileStat()) if before_facts is not None else None
                # size and mtime are integers (set in place): always set, the facts do not know the old ones.
                diff.changed_columns[row[0]] = tuple(sorted({7, 8, *_changed(old_row, row, (3, 4, 5, 6, 9))}))
        old = _symbol_table(repo, old_facts.get(path), old_res.get(path))
        new = _symbol_table(repo, facts, res)
        gone_symbols |= set(old) - set(new)
        parents = _parents(repo, facts)
        order = sorted(set(new) - set(old), key=lambda sid: (new[sid][5].count("."), parents[sid][2]))
        for sid in order:
            label, pid, ordinal = parents[sid]
            diff.create_symbols.setdefault(pid, (label, []))[1].append((ordinal, new[sid]))
        for sid in sorted(set(new) & set(old)):
            if new[sid] != old[sid]:
                cols = _changed(old[sid], new[sid], _SYMBOL_UPDATABLE)
                if _SYMBOL_LINES.issuperset(cols):
                    start, end = _SYMBOL_LINE_COLS
                    now, was = new[sid], old[sid]
                    key = (fid, now[start] - was[start], now[end] - was[end])
                    diff.moved_symbols.setdefault(key, []).append(now)
                else:
                    diff.update_symbols.append(new[sid])
                    diff.changed_columns[sid] = cols
        # Edges out of this file, old vs new.
        before = old_res.get(path)
        old_imp, old_calls = edge_rows(repo, before) if before is not None else ([], [])
        new_imp, new_calls = edge_rows(repo, res) if res else ([], [])
        moved: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        _diff_edges(old_calls, new_calls, gone_symbols, diff.delete_calls, diff.create_calls, diff.update_calls,
                    moved, _CALL_LINE)  # fmt: skip
        _file_moves(fid, old_calls, moved, diff.moved_calls, diff.moved_caller_calls)
        _diff_edges(old_imp, new_imp, set(), diff.delete_imports, diff.create_imports, diff.update_imports,
                    diff.moved_imports, _IMPORT_LINE)  # fmt: skip
    diff.delete_symbols = sorted(gone_symbols)
    return diff


def _diff_edges(
    old: list[tuple[Any, ...]], new: list[tuple[Any, ...]], gone: set[str],
    deletes: list[tuple[str, str]], creates: list[tuple[Any, ...]],
    updates: list[tuple[tuple[Any, ...], tuple[int, ...]]],
    moved: dict[tuple[str, int], list[tuple[Any, ...]]], line: int,
) -> None:  # fmt: skip
    """Edge rows (from, to, ..., properties) old vs new, one per pair of ends. A pair in both whose
    properties moved (a line above the call added or removed) is set in place, not deleted and made again: a
    delete makes the write checkpoint what came before it first (`Store.checkpoint_before_delete`). A pair whose
    line (column `line`) alone moved goes to `moved`, by (from, how far), instead of `updates`."""
    old_by = {(r[0], r[1]): r for r in old}
    new_by = {(r[0], r[1]): r for r in new}
    for key in old_by:
        if key not in new_by and key[0] not in gone and key[1] not in gone:
            deletes.append(key)  # (edges touching a deleted symbol go with it)
    for key, row in new_by.items():
        before = old_by.get(key)
        if before is None:
            creates.append(row)
        elif before != row:
            cols = _changed(before, row, tuple(range(2, len(row))))
            if cols == (line,):
                moved.setdefault((row[0], row[line] - before[line]), []).append(row)
            else:
                updates.append((row, cols))


def _file_moves(
    fid: str, old: list[tuple[Any, ...]], moved: dict[tuple[str, int], list[tuple[Any, ...]]],
    by_file: dict[tuple[str, int], list[tuple[Any, ...]]], by_caller: dict[tuple[str, int], list[tuple[Any, ...]]],
) -> None:  # fmt: skip
    """Group one file's moved call edges (`moved`, by caller and shift) for the fewest statements. A caller all
    of whose edges (`old`: every edge out of the file as last written) moved by the same amount goes to its
    file's statement for that shift (`by_file`), which moves every edge of its callers and names no callee: a
    list of callees to match makes Kuzu 0.11.3 join against the whole Symbol table (~2 s on 1.8 M symbols in a
    bare probe, against ~20 ms for the callers alone). Any other caller (an edge of it above the edit, or one
    that changed otherwise) keeps a statement of its own, from that caller to its moved callees (`by_caller`)."""
    edges_of = Counter(src for src, _dst in {(row[0], row[1]) for row in old})
    for (src, delta), rows in moved.items():
        if edges_of[src] == len(rows):
            by_file.setdefault((fid, delta), []).extend(rows)
        else:
            by_caller[(src, delta)] = rows


def _merge_edge(label: str, rel: str, names: Sequence[str], columns: tuple[int, ...]) -> str:
    """MERGE of one edge between two nodes by id: made whole when missing, else only `columns` set (the
    numbers in place; a string only when it changed, see `_set_statement`)."""
    every = ", ".join(f"e.{names[i]} = $c{i}" for i in range(2, len(names)))
    changed = ", ".join(f"e.{names[i]} = $c{i}" for i in columns)
    return (
        f"MATCH (a:{label} {{id: $c0}}), (b:{label} {{id: $c1}}) MERGE (a)-[e:{rel}]->(b) "
        f"ON CREATE SET {every} ON MATCH SET {changed}"
    )


def write_diff(conn: Conn, batch: Batch, diff: Diff) -> dict[str, int]:
    """Apply a small batch with plain statements: no COPY, so no checkpoint and no pause for readers."""
    repo = batch.repo_id
    created = 0
    deletes = bool(diff.delete_symbols or diff.delete_files or diff.delete_calls or diff.delete_imports)
    set_symbols = [(row, diff.changed_columns.get(row[0], _SYMBOL_UPDATABLE)) for row in diff.update_symbols]
    set_calls = list(diff.update_calls)
    set_imports = list(diff.update_imports)
    with conn.transaction(deletes=deletes):
        for sid in diff.delete_symbols:
            conn.execute("MATCH (s:Symbol {id: $id}) DETACH DELETE s", {"id": sid})
        for fid in diff.delete_files:
            conn.execute("MATCH (f:File {id: $id}) DETACH DELETE f", {"id": fid})
        for src, dst in diff.delete_calls:
            conn.execute(
                "MATCH (a:Symbol {id: $a})-[e:POSSIBLY_CALLS]->(b:Symbol {id: $b}) DELETE e", {"a": src, "b": dst}
            )
        for src, dst in diff.delete_imports:
            conn.execute("MATCH (a:File {id: $a})-[e:IMPORTS]->(b:File {id: $b}) DELETE e", {"a": src, "b": dst})
        for row in diff.create_files:
            conn.execute(
                f"MATCH (r:Repository {{id: $repo}}) CREATE (r)-[:HAS_FILE]->(:File {{{_FILE_PROPS}}})",
                {"repo": repo, **{f"c{i}": v for i, v in enumerate(row)}},
            )
        for row in diff.update_files:
            cols = diff.changed_columns.get(row[0], _FILE_UPDATABLE)
            conn.execute(  # Kuzu refuses unused parameters: only the id and the columns set
                _set_statement("File", FILE_COLS, cols), {"c0": row[0], **{f"c{i}": row[i] for i in cols}}
            )
        for path, st in batch.touched.items():
            conn.execute(
                "MATCH (f:File {id: $id}) SET f.size = $size, f.mtimeNs = $mtime",
                {"id": file_id(repo, path), "size": st.size, "mtime": st.mtime_ns},
            )
        for pid, (label, items) in diff.create_symbols.items():
            rows = [{"o": o, **{f"c{i}": v for i, v in enumerate(row)}} for o, row in items]
            conn.execute(
                f"MATCH (p:{label} {{id: $pid}}) UNWIND $rows AS r "
                f"CREATE (p)-[:CONTAINS {{ordinal: r.o}}]->(:Symbol {{{_SYMBOL_PROPS}}})",
                {"pid": pid, "rows": rows},
            )
            created += len(rows)
        for (fid, d_start, d_end), group in diff.moved_symbols.items():
            # Through the file's tree to its symbols by id, then moved by the same lines; a symbol the tree does
            # not reach (a lost CONTAINS) would be left behind, so a count short of the group sets each row.
            moved = conn.scalar(
                "MATCH (f:File {id: $f})-[:CONTAINS*1..30]->(s:Symbol) WHERE s.id IN $ids "
                "SET s.startLine = s.startLine + $ds, s.endLine = s.endLine + $de RETURN count(s)",
                {"f": fid, "ids": [row[0] for row in group], "ds": d_start, "de": d_end},
            )
            if moved != len(group):
                set_symbols += [(row, _SYMBOL_LINE_COLS) for row in group]  # (absolute: right whatever moved)
        # Edges by shift: every edge of a file's callers whose edges all moved alike (`_file_moves`; the list
        # names the callers, column 0), a caller's moved edges, an importing file's (the list names the other
        # ends, column 1). A count other than the group's sets each of its rows absolutely.
        shifts = (
            (diff.moved_calls, set_calls, _CALL_LINE, 0,
             "MATCH (f:File {id: $s})-[:CONTAINS*1..30]->(a:Symbol)-[e:POSSIBLY_CALLS]->() WHERE a.id IN $ids"),
            (diff.moved_caller_calls, set_calls, _CALL_LINE, 1,
             "MATCH (a:Symbol {id: $s})-[e:POSSIBLY_CALLS]->(b:Symbol) WHERE b.id IN $ids"),
            (diff.moved_imports, set_imports, _IMPORT_LINE, 1,
             "MATCH (a:File {id: $s})-[e:IMPORTS]->(b:File) WHERE b.id IN $ids"),
        )  # fmt: skip
        for groups, fallback, line, named, match in shifts:
            for (src, delta), group in groups.items():
                moved = conn.scalar(
                    f"{match} SET e.line = e.line + $d RETURN count(e)",
                    {"s": src, "ids": sorted({row[named] for row in group}), "d": delta},
                )
                if moved != len(group):
                    fallback += [(row, (line,)) for row in group]
        for row, cols in set_symbols:
            if cols:
                conn.execute(_set_statement("Symbol", SYMBOL_COLS, cols), {"c0": row[0], **{f"c{i}": row[i] for i in cols}})
        for row in diff.create_calls:
            conn.execute(
                "MATCH (a:Symbol {id: $a}), (b:Symbol {id: $b}) "
                "CREATE (a)-[:POSSIBLY_CALLS {line: $line, resolution: $res, confidence: $conf}]->(b)",
                {"a": row[0], "b": row[1], "line": row[2], "res": row[3], "conf": row[4]},
            )
        for row in diff.create_imports:
            conn.execute(
                "MATCH (a:File {id: $a}), (b:File {id: $b}) CREATE (a)-[:IMPORTS {specifier: $spec, line: $line, "
                "resolution: $res, confidence: $conf}]->(b)",
                {"a": row[0], "b": row[1], "spec": row[2], "line": row[3], "res": row[4], "conf": row[5]},
            )
        for label, rel, names, updates in (("Symbol", "POSSIBLY_CALLS", _CALL_NAMES, set_calls),
                                           ("File", "IMPORTS", _IMPORT_NAMES, set_imports)):  # fmt: skip
            for row, cols in updates:
                conn.execute(_merge_edge(label, rel, names, cols), {f"c{i}": v for i, v in enumerate(row)})
    return {
        "files": len(diff.create_files) + len(diff.update_files), "deleted": len(diff.delete_files),
        "symbols": created, "symbolsUpdated": len(diff.update_symbols) + sum(map(len, diff.moved_symbols.values())),
        "symbolsDeleted": len(diff.delete_symbols), "calls": len(diff.create_calls), "callsDeleted": len(diff.delete_calls),
        "callsUpdated": len(diff.update_calls) + sum(map(len, diff.moved_calls.values()))
        + sum(map(len, diff.moved_caller_calls.values())),
        "imports": len(diff.create_imports), "importsDeleted": len(diff.delete_imports),
        "importsUpdated": len(diff.update_imports) + sum(map(len, diff.moved_imports.values())), "diffPath": 1,
    }  # fmt: skip
