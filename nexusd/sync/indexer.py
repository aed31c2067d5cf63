"""One repository's sync: walk -> stat diff -> read+hash -> parse -> resolve -> one graph write.

    cold index    no File nodes yet: every file parsed in the pool, resolved, bulk-loaded with COPY
    incremental   stat first, hash what stat cannot clear, parse only changed content, re-resolve the
                  changed files plus the files whose references a change can affect, write one batch

Nothing changed means no parse and no write at all. A file that fails to parse or extract is indexed with a
diagnostic (and retried next sync, because a failed file stores no hash). graphVersion bumps once per batch.

The symbol table (`RepoIndex`) lives in memory for the daemon's life. Facts are cached on disk by content
hash, so after a restart the table is rebuilt without parsing anything that did not change. What was written
per file (its resolution) is not kept: it is what the table resolves the file to until the next change, so the
old resolution a diff needs is computed again on demand (see ARCHITECTURE.md, "Memory of the code graph").
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import stat as stat_mod
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from .. import config, textsplit
from ..batch import CommittedBatch, FileData
from ..errors import TooLarge
from ..parse import gcpause
from ..parse.facts import FileFacts, facts_from_plain, facts_to_plain, file_id, pack_facts
from ..repos import cold_write_pending
from ..resolve import registry
from ..resolve.base import FileResolution, RepoIndex
from ..store import Conn
from . import graphwrite, resolveapart
from .graphwrite import Batch, FileStat
from .parsepool import ParseOutcome, ParsePool, ParseTask, inline, skipped_facts
from .walk import WalkRules

log = logging.getLogger(__name__)

Progress = Callable[[dict[str, Any]], None]
# Bump when extraction output changes shape or meaning: cached facts from older versions are ignored.
FACTS_CACHE_VERSION = 10  # 2: redacted signatures and docs; 3: type facts; 4: overload/property_function/constant/variable kinds, decorator calls, PEP 263; 5: JSON packs, not pickle; 6: callback parameters typed by the callee (TS), value rebindings of a def are not symbols; 7: `copy.copy(v)` typed as v, computed-key object members, TS generic call signatures parsed; 8: TS interface method signatures are symbols; 9: TS generic call signatures with `<` alone on its line, top-level TS/JS values with a conditional initialiser, block scopes of TS/JS bindings; 10: content hashes per file (`FileFacts.symbol_hashes`), not per symbol
INLINE_MAX_FILES = 8
# A batch of small files parses inline too, when its bytes are few: starting the pool's processes and building
# their parsers costs ~0.3 s, more than parsing a megabyte of source here (1,020 small generated files, 0.5 MB:
# the pool's parse phase took 0.36 s against 0.07 s of parsing). Larger batches use the pool (both cores).
INLINE_MAX_BYTES = 1_000_000
# A batch this large (or a cold one) freed rows, CSV buffers and parse outcomes by the hundred MB: the heap's
# free pages are handed back to the system after it (`release_heap`).
TRIM_AFTER_FILES = 200
MAX_FILE_BYTES = int(config.get("NEXUS_MAX_FILE_BYTES"))


def file_size(root: str, path: str) -> int:
    """`path`'s size under `root` (0 when it cannot be read: the parse reports why)."""
    try:
        return os.stat(os.path.join(root, path)).st_size
    except OSError:
        return 0


def _few_bytes(tasks: list[ParseTask], size: Callable[[str], int]) -> bool:
    """Whether the tasks' files (their sizes as the walk or the graph has them) add up to INLINE_MAX_BYTES or less."""
    total = 0
    for task in tasks:
        total += size(task.path)
        if total > INLINE_MAX_BYTES:
            return False
    return True


@dataclass
class SyncReport:
    mode: str  # cold | incremental | noop
    scanned: int = 0
    parsed: int = 0
    unchanged: int = 0
    deleted: int = 0
    affected: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    diagnostics: int = 0
    written: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    changed_paths: list[str] = field(default_factory=list)
    deleted_paths: list[str] = field(default_factory=list)
    affected_paths: list[str] = field(default_factory=list)  # re-resolved only (their edges changed)
    # The worktrees whose overlay this baseline batch moved (None: the repository has no views).
    views_rebased: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        extra = {} if self.views_rebased is None else {"viewsRebased": self.views_rebased}
        return {
            "mode": self.mode,
            "scanned": self.scanned,
            "parsed": self.parsed,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "affected": self.affected,
            "skipped": self.skipped[:50],
            "skippedCount": len(self.skipped),
            "diagnostics": self.diagnostics,
            "written": self.written,
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
            **extra,
        }


class _Entry(NamedTuple):
    """Where one file's facts are in a pack: its line."""

    pack: Path
    offset: int
    length: int


def _index_pack(pack: Path) -> dict[str, Any]:
    """A pack's entries by digest, read a line at a time (`_Entry`: each is parsed when asked for, so a rebuild
    never holds every file's facts as nested arrays at once). A pack of one line (written before entries had a
    line each) is parsed whole. Raises ValueError when the pack is not whole (no closing line)."""
    with open(pack, "rb") as fh:
        first = fh.readline()
        if first != b"{\n":
            data = json.loads(first + fh.read())
            if not isinstance(data, dict):
                raise ValueError("not a map")
            return data
        out: dict[str, Any] = {}
        offset = fh.tell()
        for line in fh:
            if line in (b"}\n", b"}"):
                return out
            end = line.find(b'"', 1)
            if not line.startswith(b'"') or end < 0 or line[end + 1 : end + 2] != b":":
                raise ValueError("not an entry")
            out[line[1:end].decode("ascii")] = _Entry(pack, offset, len(line))
            offset += len(line)
    raise ValueError("truncated")


# Test-only faults, armed by the debug ops (ops/code.py).
FAULTS: dict[str, bool] = {}


class FactsCache:
    """Extracted facts on disk, keyed by content hash, as JSON arrays (`parse.facts.facts_to_plain`): a
    format that decodes only to data, so whatever can write this directory cannot run code in the daemon, and
    a damaged entry is a cache miss (re-parse), never a failed sync.

    A big batch (a cold index) is written as one pack file: thousands of small files cost seconds of file
    system work on the sync's critical path. Later edits add one small file each. Packs are read once,
    when a restarted daemon rebuilds its symbol table, and then dropped from memory. A pack that does not
    decode is moved aside (`*.bad`) and its files are parsed again.
    """

    PACK_OVER = 64
    # Pack writes still running, process-wide: `flush_packs` waits for them before the daemon stops or restarts
    # in place (the writer threads are daemon threads, and an exec or an exit would cut a pack off half written).
    _writing: ClassVar[set[threading.Thread]] = set()
    _writing_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, root: Path):
        self.root = root / f"facts-v{FACTS_CACHE_VERSION}"
        self._packs: dict[str, Any] | None = None
        self._open: dict[Path, Any] = {}  # pack -> its file, while a rebuild reads entries
        self.discarded: list[str] = []  # packs found damaged (status and logs say so)

    def _path(self, digest: str) -> Path:
        return self.root / digest[:2] / f"{digest}.json"

    def _load_packs(self) -> dict[str, Any]:
        """digest -> where its entry is in a pack (`_Entry`), or the entry itself for a pack of one line."""
        if self._packs is None:
            self._packs = {}
            self._drop_stale_parts()
            for pack in sorted(self.root.glob("pack-*.json")):
                try:
                    self._packs.update(_index_pack(pack))
                except (OSError, ValueError, RecursionError) as exc:
                    log.warning("facts cache pack %s is damaged (%s): moved aside, its files are parsed again", pack, exc)
                    self.discarded.append(pack.name)
                    try:
                        os.replace(pack, pack.with_suffix(".bad"))
                    except OSError:
                        pass
        return self._packs

    def _drop_stale_parts(self) -> None:
        """Delete packs another process was cut off writing (`pack-<ns>-<pid>.tmp`, never renamed): nothing
        reads them, and each can be tens of MB. This process's own may be being written now: kept."""
        mine = f"-{os.getpid()}.tmp"
        for part in self.root.glob("pack-*.tmp"):
            if not part.name.endswith(mine):
                try:
                    part.unlink()
                except OSError:
                    pass

    def release(self) -> None:
        self._packs = None
        for fh in self._open.values():
            fh.close()
        self._open.clear()

    def _read_entry(self, entry: _Entry) -> Any:
        fh = self._open.get(entry.pack)
        if fh is None:
            fh = self._open[entry.pack] = open(entry.pack, "rb")  # noqa: SIM115 - kept until `release`
        fh.seek(entry.offset)
        line = fh.read(entry.length)
        return json.loads(line[line.index(b":") + 1 :].rstrip(b",\n"))

    def put_many(self, items: list[FileFacts]) -> None:
        items = [f for f in items if f.hash and not f.hash.startswith("skipped:")]
        if len(items) <= self.PACK_OVER:
            for facts in items:
                self.put(facts)
            return
        # Off the sync's critical path: the cache only matters after a restart (written to a temp name, then
        # renamed). A pack that never got written costs the next restart a re-parse of every file in it, and
        # its first edit a graph write without a diff (the old facts of the edited file are gone): the
        # standard library's took 52 s instead of 2 s. So a stop waits for it (`flush_packs`).
        thread = threading.Thread(target=self._write_pack, args=(items,), name="facts-cache", daemon=True)
        with FactsCache._writing_lock:
            FactsCache._writing.add(thread)
        thread.start()

    @classmethod
    def flush_packs(cls, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the pack writes still running; False when one is still running."""
        deadline = time.monotonic() + timeout
        with cls._writing_lock:
            pending = list(cls._writing)
        for thread in pending:
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in pending)

    def _write_pack(self, items: list[FileFacts]) -> None:
        try:
            self._write_pack_file(items)
        finally:
            with FactsCache._writing_lock:
                FactsCache._writing.discard(threading.current_thread())

    def _write_pack_file(self, items: list[FileFacts]) -> None:
        if FAULTS.pop("slow-pack", None):  # debug.slow_next_pack: a pack as long to write as a big repository's
            time.sleep(3.0)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            target = self.root / f"pack-{time.time_ns()}-{os.getpid()}.json"
            tmp = target.with_suffix(".tmp")
            with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as fh:
                # One JSON object, written entry by entry, one entry per line (`_index_pack` reads them one at
                # a time): a file's facts as nested arrays are short-lived, where the whole pack as one value was
                # as many objects as the facts themselves, made beside the daemon's long-lived ones while it
                # settles after a cold index. (dumps, not dump: `json.dump` runs the pure-Python encoder, ~3.5x
                # slower for the same text.) A hash twice: the last wins, as it did in a dict.
                fh.write("{\n")
                for n, f in enumerate(items):
                    fh.write((",\n" if n else "") + json.dumps(f.hash) + ":")
                    fh.write(json.dumps(facts_to_plain(f), separators=(",", ":")))
                fh.write("\n}\n")
            os.replace(tmp, target)
        except (OSError, ValueError) as exc:
            log.debug("facts cache pack write failed: %s", exc)

    def get(self, digest: str, path: str) -> FileFacts | None:
        if not digest:
            return None
        plain: Any = self._load_packs().get(digest)
        if isinstance(plain, _Entry):
            try:
                plain = self._read_entry(plain)
            except (OSError, ValueError, RecursionError):
                return None
        if plain is None:
            try:
                plain = json.loads(self._path(digest).read_bytes())
            except (OSError, ValueError, RecursionError):
                return None
        try:
            facts = facts_from_plain(plain)
        except ValueError:
            return None
        if facts.path != path or facts.hash != digest:  # same content under another path: re-extract
            return None
        return facts

    def put(self, facts: FileFacts) -> None:
        if not facts.hash or facts.hash.startswith("skipped:"):
            return
        target = self._path(facts.hash)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(json.dumps(facts_to_plain(facts), separators=(",", ":")))
            os.replace(tmp, target)
        except (OSError, ValueError) as exc:  # a cache that cannot be written only costs a re-parse later
            log.debug("facts cache write failed: %s", exc)


@dataclass
class Scan:
    """The walk/diff stage's result."""

    stats: dict[str, FileStat]  # every file present, as stat saw it
    tasks: list[ParseTask]  # the files whose content must be read (hashed, and parsed if it changed)
    deleted: set[str]  # files the graph holds that are gone


@dataclass
class Changes:
    """The parse stage's result: what this batch changes."""

    changed: dict[str, FileFacts] = field(default_factory=dict)  # new or modified content: its facts
    touched: dict[str, FileStat] = field(default_factory=dict)  # same content, new stat
    deleted: set[str] = field(default_factory=set)  # gone, or no longer to be indexed (a secret now)


@dataclass
class Plan:
    """The resolve stage's result: the batch to write and what a diff against the graph needs."""

    batch: Batch
    to_resolve: set[str]  # the files resolved: changed ones plus those whose edges a change can move
    old_facts: dict[str, FileFacts | None]
    old_resolutions: dict[str, FileResolution | None]
    diffable: bool  # the old facts of every file the batch touches are known: a diff can be written


def stat_diff(
    entries: Iterable[tuple[str, int, int]],
    known: dict[str, tuple[str, int, int]],
    cold: bool,
    timed_out: dict[str, tuple[int, int]],
    report: SyncReport,
) -> tuple[dict[str, FileStat], list[ParseTask], set[str]]:
    """(stats, tasks, present) for walked (path, size, mtimeNs) entries: a file whose size and mtime match what
    the graph holds (with a hash) is not read; one that timed out with these very bytes is not retried; every
    other file becomes a task carrying its known hash, so the worker can say "unchanged" after hashing."""
    stats: dict[str, FileStat] = {}
    tasks: list[ParseTask] = []
    present: set[str] = set()
    for rel, size, mtime in entries:
        present.add(rel)
        report.scanned += 1
        stats[rel] = FileStat(size, mtime)
        old = known.get(rel)
        if not cold and old is not None and old[1] == size and old[2] == mtime and old[0]:
            continue  # stat clears it: no read, no hash
        if not cold and timed_out.get(rel) == (size, mtime):
            continue  # timed out before with these very bytes: not again at every sync
        tasks.append(ParseTask(rel, None if cold or old is None else (old[0] or None)))
    return stats, tasks, present


def deleted_paths(
    known: dict[str, tuple[str, int, int]], present: set[str], paths: Iterable[str] | None
) -> set[str]:
    """Files the graph holds that the scan did not find (of the scanned `paths` only, when given)."""
    if paths is None:
        return set(known) - present
    return {p for p in paths if p in known and p not in present}


DEFAULT_MAX_FILES = 200_000


def max_first_index_files() -> int:
    """The cap on files of a first index (NEXUS_MAX_FILES; 0 means none): a mistyped path such as a home
    directory or a mount of millions of files is refused instead of filling the graph for an hour."""
    try:
        return max(0, int(config.get("NEXUS_MAX_FILES")))
    except ValueError:
        return DEFAULT_MAX_FILES


class RepoSync:
    """The sync engine of one registered repository. Runs on the writer thread only."""

    def __init__(self, repo_id: str, root: str, cache_dir: Path, pool: Callable[[], ParsePool]):
        self.repo_id = repo_id
        self.root = root
        self.rules = WalkRules(root, MAX_FILE_BYTES)
        self.cache = FactsCache(cache_dir)
        self._pool = pool
        self.index: RepoIndex | None = None
        self.facts: dict[str, FileFacts] = {}
        self.used_at = time.monotonic()  # the last sync or view that needed the symbol table (`release`): a sync
        # that finds nothing changed does not count
        self.released = False  # the table was let go when idle (`release`) and not rebuilt since
        # The resolutions of the batch last written, until `committed` hands them to the listeners. Earlier
        # ones are not kept: with the facts, the table resolves a file to what the graph holds for it
        # (`resolution_of`), and that is what an edit diffs against.
        self.last_batch: dict[str, FileResolution] = {}
        # path -> (hash, size, mtimeNs) as the graph holds it; None until first read (and after a failure).
        self.known: dict[str, tuple[str, int, int]] | None = None
        # Files whose parse timed out, with the (size, mtimeNs) they had: not parsed again while unchanged
        # (a full rebuild or a restart retries them: a timeout on a loaded machine can be spurious).
        self.timed_out: dict[str, tuple[int, int]] = {}
        # What the last full walk and the parses since left out: path -> reason (for `status`).
        self.walk_skipped: dict[str, str] = {}
        self.parse_skipped: dict[str, str] = {}
        # The checkout's index entries git vouched for when a worktree's view was first scanned, with the index
        # file's stamp and `known`'s entry of each such path then (`ViewSync._git_same`): the next view of
        # the repository reuses them while neither has moved, instead of asking git about the baseline again.
        self.git_clean: tuple[tuple[int, int, int, int], dict[str, str], dict[str, Any]] | None = None

    # -- public -------------------------------------------------------------------------------------

    def skipped_summary(self, examples: int = 3) -> dict[str, dict[str, Any]]:
        """What the graph leaves out, by reason: {reason: {count, examples}} (symlink escapes, secrets, FIFOs,
        too-large files, timeouts...), from the last full walk and the parses since."""
        merged = {**self.walk_skipped, **self.parse_skipped}
        out: dict[str, dict[str, Any]] = {}
        for path in sorted(merged):
            entry = out.setdefault(merged[path], {"count": 0, "examples": []})
            entry["count"] += 1
            if len(entry["examples"]) < examples:
                entry["examples"].append(path)
        return out

    def reset(self) -> None:
        """Forget the in-memory view of the graph (after a failed batch): rebuilt on the next sync."""
        self.let_go_index()
        self.facts.clear()
        self.last_batch = {}
        self.known = None
        self.git_clean = None

    def release(self) -> bool:
        """Let the symbol table and the facts go (the repository was not edited for a while, `LiveSync.release_idle`):
        the next sync rebuilds them from the facts cache, as after a restart. What the graph holds per file
        (`known`) stays, so a sync that finds nothing changed still costs a stat walk only. False when there was
        nothing to let go."""
        if self.index is None:
            return False
        self.let_go_index()
        self.facts.clear()
        self.last_batch = {}
        self.released = True
        return True

    def let_go_index(self) -> None:
        """Drop the symbol table, its cycles broken so that it is freed at once (`RepoIndex.dismantle`); should
        something still hold it, `gcpause.reclaim` collects it once it is unreachable."""
        index, self.index = self.index, None
        if index is not None:
            index.dismantle()
            gcpause.dropped(index)

    def warm(self, conn: Conn) -> None:
        """Build the symbol table now (from the facts cache, as the next sync would), if it is not in memory, and
        the lookups its first resolution would build (`RepoIndex.prepare`)."""
        self._ensure_index(conn, lambda _: None, set()).prepare()

    def resolution_of(self, path: str) -> FileResolution | None:
        """What the graph holds for `path`'s edges: the last batch's resolution, or the table's resolution of
        the file now (the same, as long as no change was applied to the table since that batch was written)."""
        res = self.last_batch.get(path)
        if res is None and self.index is not None and path in self.facts:
            res = self.index.resolve_file(path)
        return res

    def committed(self, report: SyncReport, version: int) -> CommittedBatch:
        """The batch `report` describes, as a value for the listeners: its paths and what was written for each
        (None for `files` when this engine does not hold all of them). Call right after `sync` committed."""
        deleted = tuple(report.deleted_paths)
        present = sorted((set(report.changed_paths) | set(report.affected_paths)) - set(deleted))
        files: dict[str, FileData | None] = {}
        complete = True
        held, self.last_batch = self.last_batch, {}  # handed over: the engine keeps no copy
        for path in present:
            facts = self.facts.get(path)
            res = held.get(path)
            if facts is None or res is None:
                complete = False
                break
            files[path] = (facts, res)
        for path in deleted:
            files[path] = None
        return CommittedBatch(
            repo_id=self.repo_id, version=version, mode=report.mode, changed=tuple(report.changed_paths),
            deleted=deleted, affected=tuple(report.affected_paths), files=files if complete else None,
        )  # fmt: skip

    def pending_files(self, plan: Plan, changes: Changes) -> list[tuple[str, FileData]] | None:
        """Before the write: the (path, (facts, resolution)) pairs `committed` will hand over for this batch
        once it commits, in its order (None where it will not carry all of them)."""
        deleted = changes.deleted
        affected = plan.to_resolve - set(changes.changed)
        out: list[tuple[str, FileData]] = []
        for path in sorted((set(changes.changed) | affected) - deleted):
            facts = self.facts.get(path)
            res = plan.batch.resolutions.get(path)
            if facts is None or res is None:
                return None
            out.append((path, (facts, res)))
        return out

    def sync(
        self,
        conn: Conn,
        progress: Progress,
        *,
        paths: Iterable[str] | None = None,
        full: bool = False,
        between: Callable[[], Any] = lambda: None,
        resolved: Callable[[list[tuple[str, FileData]]], Any] | None = None,
    ) -> SyncReport:
        """Bring the graph in line with the files. `paths` limits the scan to those (the watcher's dirty set);
        `full` re-parses everything (a rebuild). `between` is called at points where no transaction is open
        (between parse results, before the write): the writer runs queued quick writes there. `resolved` is
        called, on a cold sync, with what `committed` will hand the listeners if this batch commits (every file
        of the graph with its facts and resolution) just before the write: the query snapshot is built from it
        while Kuzu writes.

        The stages, each a method below: walk + stat diff (`scan`), read + hash + parse (`parse_changes`, in the
        parse pool), resolve against the symbol table (`resolve`), one graph write (`write`), and `publish`:
        the engine's view of the graph follows the committed batch."""
        t0 = time.perf_counter()
        if self.known is None:  # what the graph holds per file; read once, then kept in step with writes
            self.known = graphwrite.known_files(conn, self.repo_id)
            # A cold write committed in part (killed, or a chunk failed): what the graph holds is not a whole graph.
            full = full or bool(cold_write_pending(conn, self.repo_id))
        known = self.known
        cold = full or not known
        replaces = bool(known)  # (the graph held this repository's files: a table or snapshot may be let go)
        if cold:
            # The resolvers' modules (and the tables they load) before the batch makes its short-lived objects:
            # imported among them, the code objects that stay would keep their arenas from being handed back.
            registry.rule_classes()
        report = SyncReport("cold" if cold else "incremental")
        if full:
            self.timed_out.clear()
        scan = self.scan(known, paths, cold, report)
        report.seconds["scan"] = time.perf_counter() - t0
        if not scan.tasks and not scan.deleted:
            report.mode = "noop"
            return report

        t1 = time.perf_counter()
        parsed = self._parse(scan.tasks, lambda p: scan.stats[p].size, progress)
        changes = self.parse_changes(parsed, scan, known, report, between)
        report.seconds["parse"] = time.perf_counter() - t1
        if not changes.changed and not changes.deleted and not changes.touched:
            report.mode = "noop"
            return report

        t2 = time.perf_counter()
        index = self._ensure_index(conn, progress, skip=set(changes.changed) | changes.deleted)
        plan = self.resolve(index, changes, scan.stats, known, cold, progress)
        index.release_memo()  # nothing reads the memo before the next change clears it
        report.affected_paths = sorted(plan.to_resolve - set(changes.changed))
        report.affected = len(report.affected_paths)
        report.deleted = len(changes.deleted)
        report.seconds["resolve"] = time.perf_counter() - t2

        if cold and resolved is not None:
            pending = self.pending_files(plan, changes)
            if pending is not None:
                resolved(pending)
        between()
        t3 = time.perf_counter()
        progress({"phase": "write", "message": f"writing {len(changes.changed)} files"})
        report.written = self.write(conn, plan, index, cold)
        self.publish(plan.batch, cold)
        index.release_memo()  # (a wholesale write fills the symbol id cache again)
        report.seconds["write"] = time.perf_counter() - t3
        self.cache.put_many(list(changes.changed.values()))
        report.changed_paths = sorted(changes.changed)
        report.deleted_paths = sorted(changes.deleted)
        if cold or len(changes.changed) >= TRIM_AFTER_FILES:
            del plan, changes  # (the batch's rows and outcomes: only the facts and `last_batch` stay)
            index.release_caches()
            release_heap(collect=replaces)
            conn.store.reopen_soon()  # (and Kuzu's buffer pool pages the write left resident)
        report.seconds["total"] = time.perf_counter() - t0
        return report

    # -- stages -------------------------------------------------------------------------------------

    def scan(
        self,
        known: dict[str, tuple[str, int, int]],
        paths: Iterable[str] | None,
        cold: bool,
        report: SyncReport,
    ) -> Scan:
        """Walk + stat diff: what is on disk (all of the repository, or only `paths`), which files need their
        content read (`tasks`: stat cannot clear them), and which files the graph holds that are gone."""
        entries = self._walk(known, paths, report)
        stats, tasks, present = stat_diff(entries, known, cold, self.timed_out, report)
        deleted = deleted_paths(known, present, paths)
        for path in deleted:
            self.timed_out.pop(path, None)
            self.parse_skipped.pop(path, None)
        return Scan(stats, tasks, deleted)

    def parse_changes(
        self,
        outcomes: Iterable[ParseOutcome],
        scan: Scan,
        known: dict[str, tuple[str, int, int]],
        report: SyncReport,
        between: Callable[[], Any] = lambda: None,
    ) -> Changes:
        """Hash + parse outcomes (read, hashed and extracted in the parse pool) -> what this batch changes:
        new facts, files whose stat changed but content did not, and files that leave the graph."""
        changes = Changes(deleted=set(scan.deleted))
        with gcpause.Windows() as gc_window:
            for n, outcome in enumerate(outcomes):
                if n % 16 == 0:
                    between()
                gc_window.tick()
                self._take(outcome, changes, scan, known, report)
        return changes

    def _take(
        self, outcome: ParseOutcome, changes: Changes, scan: Scan, known: dict[str, tuple[str, int, int]],
        report: SyncReport,
    ) -> None:  # fmt: skip
        """One parse outcome into `changes` (see `parse_changes`)."""
        if outcome.status == "unchanged":
            changes.touched[outcome.path] = scan.stats[outcome.path]
            report.unchanged += 1
        elif outcome.status == "parsed" and outcome.facts is not None:
            self.timed_out.pop(outcome.path, None)
            self.parse_skipped.pop(outcome.path, None)
            changes.changed[outcome.path] = intern_facts(outcome.facts)
            report.parsed += 1
            if outcome.facts.diagnostics:
                report.diagnostics += 1
        else:
            report.skipped.append({"path": outcome.path, "reason": outcome.reason})
            self.parse_skipped[outcome.path] = outcome.reason
            if outcome.reason == "timeout" and outcome.path in scan.stats:
                st = scan.stats[outcome.path]
                self.timed_out[outcome.path] = (st.size, st.mtime_ns)
            if outcome.reason in ("binary", "too-large", "timeout", "worker-died", "unreadable", "extract-failed"):
                changes.changed[outcome.path] = skipped_facts(outcome.path, outcome.reason)
                report.diagnostics += 1
            elif outcome.path in known:
                changes.deleted.add(outcome.path)  # now a secret or a symlink: it must leave the graph

    def resolve(
        self,
        index: RepoIndex,
        changes: Changes,
        stats: dict[str, FileStat],
        known: dict[str, tuple[str, int, int]],
        cold: bool,
        progress: Progress = lambda _: None,
    ) -> Plan:
        """Apply the changes to the symbol table and resolve every file whose edges they can change: the
        changed files, plus (incrementally) the files referencing a name whose meaning changed, or all of them
        when a project file changed. Before the table changes, the old facts and resolutions of every file the
        batch can touch are kept, so a small batch writes only the difference (see graphwrite.write_diff)."""
        changed, deleted = changes.changed, changes.deleted
        old_facts: dict[str, FileFacts | None] = {}
        old_res: dict[str, FileResolution | None] = {}
        diffable = not cold
        if diffable:
            preview: set[str] = set()
            for path, facts in changed.items():
                preview |= index.preview_names(facts, path)
            for path in deleted:
                preview |= index.preview_names(None, path)
            touched_paths = set(changed) | deleted | (index.files_referencing(preview) - deleted)
            for path in touched_paths:
                if path in known and path not in self.facts:
                    diffable = False  # its old facts are not cached: replace it wholesale instead
                    break
                old_facts[path] = self.facts.get(path)
                # What the graph holds: the table still holds the facts it was resolved from.
                old_res[path] = index.resolve_file(path) if path in self.facts else None
        names: set[str] = set()
        config_changed = False
        with gcpause.Windows() as gc_window:
            for path, facts in changed.items():
                names |= index.set_file(facts)
                self.facts[path] = facts
                config_changed |= posixpath.basename(path) in RepoIndex.CONFIG_NAMES
                gc_window.tick()
        for path in deleted:
            names |= index.remove_file(path)
            self.facts.pop(path, None)
            config_changed |= posixpath.basename(path) in RepoIndex.CONFIG_NAMES
        if cold:
            to_resolve = set(changed)
        elif config_changed:
            to_resolve = set(self.facts)  # path aliases or workspace packages may have moved: redo all
        else:
            to_resolve = set(changed) | (index.files_referencing(names) - deleted)
        batch = Batch(self.repo_id, changed=changed, touched=changes.touched, deleted=deleted)
        batch.new_paths = {p for p in changed if p not in known}
        batch.stats = {p: stats[p] for p in changed if p in stats}
        paths = sorted(p for p in to_resolve if p in self.facts)
        total = len(to_resolve)
        batch.resolutions.update(
            resolveapart.resolve_files(index, paths, lambda n: progress({"phase": "resolve", "done": n, "total": total}))
        )
        for path in paths:
            batch.facts[path] = self.facts[path]
        return Plan(batch, to_resolve, old_facts, old_res, diffable)

    def write(self, conn: Conn, plan: Plan, index: RepoIndex, cold: bool) -> dict[str, int]:
        """One graph write: a bulk load when cold, else the difference against the old resolutions when it is
        small, else the changed files replaced wholesale. A failure leaves the engine's view of the graph unknown,
        so it is dropped (read again on the next sync) before the error propagates."""
        batch = plan.batch
        diff = None
        if plan.diffable and set(batch.resolutions) <= set(plan.old_facts) | set(batch.changed):
            diff = graphwrite.compute_diff(batch, plan.old_facts, plan.old_resolutions)
            if diff.rows() > graphwrite.DIFF_MAX_ROWS:
                diff = None
        try:
            if cold:
                return graphwrite.write_cold(conn, batch)
            if diff is not None:
                return graphwrite.write_diff(conn, batch, diff)
            live_symbols = {
                index.symbol_id(path, sym) for path, facts in self.facts.items() for sym in facts.symbols
            }
            live_files = {file_id(self.repo_id, path) for path in self.facts}
            return graphwrite.write_incremental(conn, batch, live_symbols, live_files)
        except Exception:
            self.last_batch = {}  # the in-memory view may now be ahead of the graph
            self.known = None
            raise

    def publish(self, batch: Batch, cold: bool) -> None:
        """After the commit: what the graph holds per file (hash and stat) and the resolutions it holds follow
        the batch, so the next sync diffs against them."""
        if cold or self.known is None:
            self.known = {}
        known = self.known
        for path, facts in batch.changed.items():
            st = batch.stats.get(path, FileStat())
            known[path] = (facts.hash, st.size, st.mtime_ns)
        for path, st in batch.touched.items():
            old_hash = known.get(path, ("", 0, 0))[0]
            known[path] = (old_hash, st.size, st.mtime_ns)
        for path in batch.deleted:
            known.pop(path, None)
        self.last_batch = dict(batch.resolutions)

    # -- steps --------------------------------------------------------------------------------------

    def _walk(
        self, known: dict[str, tuple[str, int, int]], paths: Iterable[str] | None, report: SyncReport
    ) -> list[tuple[str, int, int]]:
        """(path, size, mtimeNs) of every regular file to consider: the whole walk, or the given paths."""
        entries: list[tuple[str, int, int]] = []
        if paths is None:
            cap = max_first_index_files() if not known else 0
            for e in self.rules.walk():
                entries.append((e.path, e.size, e.mtime_ns))
                if cap and len(entries) > cap:
                    raise TooLarge(
                        f"{self.root} has more than {cap:,} files to index; refusing a first index this large "
                        "(is it the right directory?)",
                        hint=f"index a project directory, or raise the cap: NEXUS_MAX_FILES={cap * 2} (0: no cap)",
                        data={"cap": cap, "setting": "NEXUS_MAX_FILES"},
                    )
            report.skipped.extend({"path": s.path, "reason": s.reason} for s in self.rules.skipped)
            self.walk_skipped = {s.path: s.reason for s in self.rules.skipped}
        else:
            for rel in paths:
                if self.rules.is_ignored(rel, False) is not None:
                    continue
                try:
                    st = os.lstat(os.path.join(self.root, rel))
                except OSError:
                    continue
                if stat_mod.S_ISREG(st.st_mode):
                    entries.append((rel, st.st_size, st.st_mtime_ns))
        return entries

    def _runner(self, tasks: list[ParseTask], size: Callable[[str], int]) -> Iterable[ParseOutcome]:
        """Parse in this process when the batch is small (a few files, or a few bytes), else in the pool."""
        if len(tasks) <= INLINE_MAX_FILES or _few_bytes(tasks, size):
            return inline(self.root, tasks, MAX_FILE_BYTES)
        return self._pool().run(self.root, tasks, MAX_FILE_BYTES)

    def _parse(self, tasks: list[ParseTask], size: Callable[[str], int], progress: Progress) -> Iterable[ParseOutcome]:
        total = len(tasks)
        runner = self._runner(tasks, size)
        for n, outcome in enumerate(runner, 1):
            if n % 25 == 0 or n == total:
                progress({"phase": "parse", "done": n, "total": total, "message": outcome.path})
            yield outcome

    def _ensure_index(self, conn: Conn, progress: Progress, skip: set[str]) -> RepoIndex:
        """The in-memory symbol table; after a restart rebuilt from the facts cache (re-parsing misses)."""
        self.used_at = time.monotonic()
        if self.index is not None:
            return self.index
        index = RepoIndex(self.repo_id, Path(self.root))
        self.released = False
        known = self.known if self.known is not None else graphwrite.known_files(conn, self.repo_id)
        missing: list[ParseTask] = []
        try:
            for path, (digest, _size, _mtime) in known.items():
                facts = self.cache.get(digest, path)  # for changed files: their *old* facts, by the old hash
                if facts is not None:
                    self.facts[path] = intern_facts(facts)
                elif path not in skip:
                    missing.append(ParseTask(path))
        finally:
            self.cache.release()  # (the packs' entries and open files: only this loop reads them)
        if missing:
            progress({"phase": "rebuild-table", "message": f"re-extracting {len(missing)} uncached files"})
            runner = self._runner(missing, lambda p: known[p][1])
            rebuilt = []
            for outcome in runner:
                if outcome.facts is not None:
                    self.facts[outcome.path] = intern_facts(outcome.facts)
                    rebuilt.append(outcome.facts)
            self.cache.put_many(rebuilt)
        with gcpause.Windows() as gc_window:
            for facts in self.facts.values():
                index.set_file(facts)
                gc_window.tick()
        self.index = index
        return index


def release_heap(*, collect: bool = True) -> None:
    """After a big batch: drop the cache of split words (`textsplit`: kept for the small batches of edits, which
    fill it again with what they touch), collect (when the batch replaced what the graph held: the first
    index of a repository lets nothing go, and a full collection of its heap held the interpreter ~0.6 s of
    the standard library's cold index, py-spy), and hand the C heap's free pages back to the system (glibc `malloc_trim`; nothing
    elsewhere). Measured on the standard library, in-process: 708 -> 541 MB resident right after the cold
    index (ARCHITECTURE.md, "Memory of the code graph")."""
    textsplit.clear_cache()
    if collect:
        gcpause.reclaim(force=True)  # (reaches what the snapshot's freeze holds: a table the batch replaced)
    gcpause.trim_heap()


# One int object per line number above 256 (Python caches those below), shared by every symbol of every file that
# starts or ends on that line: unpickled facts bring a new object for each, 32 bytes. Of the kernel's `drivers/`
# (1.12 million symbols) 1.24 million start and end lines were such objects, 14,700 of them distinct: ~35 bytes
# per symbol saved, for a map of ~1 MB. Lines from `SHARED_LINES_BELOW` up stay private (the map stays bounded).
SHARED_LINES_BELOW = 1 << 17
_LINES: dict[int, int] = {}


def intern_facts(facts: FileFacts) -> FileFacts:
    """Share the strings that recur across a repository's symbols (kinds, names, parents) and their line numbers,
    and pack its calls and type facts (`facts.Packed`): facts arrive decoded from the parser processes, one
    private copy per file, and the engine keeps them all."""
    intern = sys.intern
    line = _LINES.setdefault
    for sym in facts.symbols:
        sym.kind = intern(sym.kind)
        sym.name = intern(sym.name)
        # (the same string as the callers and scopes below that name it: 6 MB and 72,000 objects fewer on the
        # standard library's facts)
        sym.qualified_name = intern(sym.qualified_name)
        if sym.parent:
            sym.parent = intern(sym.parent)
        start, end = sym.start_line, sym.end_line
        if 256 < start < SHARED_LINES_BELOW:
            sym.start_line = line(start, start)
        if 256 < end < SHARED_LINES_BELOW:
            sym.end_line = line(end, end)
    return pack_facts(facts)


def build_summary(report: SyncReport, outcome: str, error: str | None = None) -> str:
    data = {"outcome": outcome, "at": time.time(), **report.to_dict()}
    if error:
        data["error"] = error
    return json.dumps(data)
