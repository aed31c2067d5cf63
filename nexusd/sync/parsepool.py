"""Warm parser processes with a per-file wall-clock limit.

Parsing runs outside the daemon process for two reasons (docs/field-notes.md, tree-sitter): Python-side extraction is CPU-bound
and scales with processes, not threads; and a grammar can hang on hostile input, which no callback can stop —
only killing the process can. Each worker keeps its parsers and compiled queries warm for the daemon's life.

A worker reads the file itself (through `walk.read_source_checked`, so the safety checks travel with it),
hashes it, and only parses when the hash differs from the one the caller already has: the "stat, then hash"
rule of the sync costs the daemon no bytes at all for files whose content did not change.
"""

from __future__ import annotations

import functools
import logging
import multiprocessing as mp
import os
import pickle
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from multiprocessing.connection import Connection, wait
from operator import attrgetter
from typing import Any

from .. import config
from ..parse.facts import (
    CallFact,
    Diagnostic,
    FileFacts,
    ImportFact,
    Packed,
    SymbolFact,
    TypeFact,
    content_hash,
)
from ..parse.gcpause import paused
from ..parse.languages import parsed_language
from ..protocol import pack_local, unpack_local
from ..schema import PERMANENT_SKIPS

log = logging.getLogger(__name__)

FILE_TIMEOUT_S = float(config.get("NEXUS_PARSE_TIMEOUT"))
BATCH = 16
# Workers idle this long exit, down to IDLE_WARM of them; the next batch starts them again (~0.3 s before its
# first result). Small changes never wait for that: up to INLINE_MAX_FILES files parse in the daemon itself.
START_TIMEOUT_S = 60.0  # a worker that has not started after this long is replaced like a hung one
IDLE_EXIT_S = float(config.get("NEXUS_PARSE_IDLE_S"))
IDLE_WARM = int(config.get("NEXUS_PARSE_WARM"))


class PoolClosed(RuntimeError):
    """The pool was closed (the daemon is stopping) while a run still wanted its workers."""


_STOPPING = "the parser processes were stopped: the daemon is stopping"


@dataclass(slots=True)
class ParseTask:
    path: str
    known_hash: str | None = None


@dataclass(slots=True)
class ParseOutcome:
    path: str
    status: str  # parsed | unchanged | skipped
    facts: FileFacts | None = None
    hash: str = ""
    reason: str = ""  # for skipped: too-large, binary, secret, unreadable, timeout, ...


def process_one(root: str, task: ParseTask, max_bytes: int) -> ParseOutcome:
    """Read, hash, and (if changed) extract one file. Never raises."""
    from .walk import read_source_checked

    data, reason = read_source_checked(root, task.path, max_bytes)
    if data is None:
        return ParseOutcome(task.path, "skipped", reason=reason or "unreadable")
    digest = content_hash(data)
    if task.known_hash is not None and digest == task.known_hash:
        return ParseOutcome(task.path, "unchanged", hash=digest)
    return extract_outcome(task.path, data, digest)


def extract_outcome(path: str, data: bytes, digest: str | None = None) -> ParseOutcome:
    """Extract one file already read (and hashed: `digest`, else hashed here). Never raises."""
    from ..parse.extract import extract

    try:
        _inject_faults(path)
        facts = extract(path, data, digest)
    except Exception as exc:  # extract never raises by contract; this barrier holds if it ever does
        log.warning("extracting %s failed: %s", path, exc)
        return ParseOutcome(path, "skipped", reason="extract-failed")
    return ParseOutcome(path, "parsed", facts=facts, hash=facts.hash)


def _inject_faults(path: str) -> None:
    """Fault injection for the reliability tests: NEXUS_FAULT_EXTRACT / NEXUS_FAULT_HANG hold a glob of
    repository paths whose extraction raises / never returns. Unset in normal use. Read once per process (a
    parser process or the daemon gets them at its start): two environment lookups per file were ~5 % of a
    small file's extraction."""
    fail, hang = _faults()
    if fail is None and hang is None:
        return
    import fnmatch

    if fail and fnmatch.fnmatch(path, fail):
        raise RuntimeError(f"injected extraction failure for {path}")
    if hang and fnmatch.fnmatch(path, hang):
        while True:
            time.sleep(1)


@functools.cache
def _faults() -> tuple[str | None, str | None]:
    return os.environ.get("NEXUS_FAULT_EXTRACT"), os.environ.get("NEXUS_FAULT_HANG")


def _worker_main(conn: Connection) -> None:
    # Ignore SIGINT/SIGTERM meant for the daemon's process group; the daemon stops us explicitly.
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # Parsers and queries are compiled when a batch first needs their language and then kept: warming all
    # eleven grammars up front costs ~0.7 s that a Python-only repository never needs. READY opens each batch,
    # once its languages are compiled: the daemon's per-file clock starts there (until then the start limit).
    from ..parse import extract  # noqa: F401  (the imports are the start-up cost)

    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        root, tasks, max_bytes = msg
        _warm_for(tasks)
        conn.send_bytes(READY)  # compiled: the per-file clock starts now
        for task in tasks:
            conn.send_bytes(encode_outcome(process_one(root, task, max_bytes)))
        conn.send_bytes(BATCH_DONE)


def _warm_for(tasks: list[ParseTask]) -> None:
    """Build the parsers and compile the queries of the languages a batch needs, before its first file: a fresh
    worker pays this once per language (the C++ query ~0.07 s quiet, 0.5-0.65 s before its declarator patterns were folded, more on a loaded machine), and it must
    not count against that file's time limit (ARCHITECTURE.md, "Cost of a large C tree")."""
    from ..parse.extract import supported_languages, warm

    needed = {lang for task in tasks if (lang := parsed_language(task.path))} & set(supported_languages())
    if needed:
        warm(sorted(needed))


# -- the wire between a worker and the daemon ------------------------------------------------------------
# Outcomes travel as msgpack arrays in field order, not pickled objects: on 168 standard-library files the
# worker spent 0.15-0.25 CPU-s pickling (6-9 % of its extraction time) against 0.04-0.06 s packing the same
# data, in 30 % fewer bytes; unpacking costs the daemon about what unpickling did (memory_bench.py, "wire").
# Field order is read from the dataclasses, so both ends agree on it by construction. Text msgpack cannot
# carry (lone surrogates from undecodable bytes) falls back to pickle for that one outcome.

READY = b"R"  # opens each batch: the worker started and compiled what the batch needs
BATCH_DONE = b"D"
_PICKLED = b"P"

_FILE_FIELDS = [f.name for f in fields(FileFacts)]
_NESTED = {
    "symbols": SymbolFact, "imports": ImportFact, "calls": CallFact, "types": TypeFact, "diagnostics": Diagnostic,
}  # fmt: skip
_ROW = {cls: attrgetter(*[f.name for f in fields(cls)]) for cls in _NESTED.values()}
_FILE_ROW = attrgetter(*_FILE_FIELDS)
_NESTED_AT = {i: _NESTED[name] for i, name in enumerate(_FILE_FIELDS) if name in _NESTED}
_PACKED_AT = {i for i, name in enumerate(_FILE_FIELDS) if name in {"calls", "types"}}


def encode_outcome(outcome: ParseOutcome) -> bytes:
    facts = outcome.facts
    packed: Any = None
    if facts is not None:
        packed = list(_FILE_ROW(facts))
        for i, cls in _NESTED_AT.items():
            items = packed[i]
            if i in _PACKED_AT:  # sent as the daemon keeps them (facts.Packed): made here, in parallel
                items = items if isinstance(items, Packed) else Packed.of(cls, items)
                packed[i] = [len(items), items.blob]
            else:
                row = _ROW[cls]
                packed[i] = [row(item) for item in items]
    try:
        return pack_local((outcome.path, outcome.status, packed, outcome.hash, outcome.reason))
    except (UnicodeEncodeError, TypeError, ValueError, OverflowError):
        return _PICKLED + pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)


def decode_outcome(data: bytes) -> ParseOutcome:
    if data[:1] == _PICKLED:
        out: ParseOutcome = pickle.loads(data[1:])
        return out
    with paused():  # the daemon keeps what this builds; collecting as it goes cost ~4x the decoding itself
        return _decode(data)


def _decode(data: bytes) -> ParseOutcome:
    path, status, packed, digest, reason = unpack_local(data)
    facts = None
    if packed is not None:
        for i, cls in _NESTED_AT.items():
            if i in _PACKED_AT:
                length, blob = packed[i]
                packed[i] = Packed(cls, blob, length)
            else:
                packed[i] = [cls(*item) for item in packed[i]]
        facts = FileFacts(*packed)
        for imp in facts.imports:
            imp.names = [tuple(pair) for pair in imp.names]  # type: ignore[misc]  # msgpack has no tuples
        for sym in facts.symbols:
            sym.bases = tuple(sym.bases) if sym.bases else ()
    return ParseOutcome(path, status, facts, digest, reason)


class _Worker:
    def __init__(self, ctx: Any):
        parent, child = ctx.Pipe()
        self.conn: Connection = parent
        self.proc = ctx.Process(target=_worker_main, args=(child,), daemon=True, name="nexus-parser")
        self.proc.start()
        child.close()
        self.batch: deque[ParseTask] = deque()
        self.since = time.monotonic()
        self.ready = False  # until the worker says it has started: the per-file clock runs from then
        self.languages: set[str] = set()  # the languages sent to it so far (it compiled their queries)

    def send(self, root: str, tasks: list[ParseTask], max_bytes: int) -> None:
        self.batch = deque(tasks)
        languages = {lang for task in tasks if (lang := parsed_language(task.path))}
        if not languages <= self.languages:
            # The worker compiles these first, then says READY again: until then the start limit applies.
            self.ready = False
            self.languages |= languages
        if self.ready:
            self.since = time.monotonic()
        self.conn.send((root, tasks, max_bytes))

    def overdue(self, now: float) -> bool:
        """A file past the limit, or a start that takes implausibly long (a loaded machine can take seconds)."""
        return bool(self.batch) and now - self.since > (FILE_TIMEOUT_S if self.ready else START_TIMEOUT_S)

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.join(5)
        finally:
            self.conn.close()


class ParsePool:
    """Up to `size` parser processes (spawned, not forked: the daemon has threads and a database), started on
    demand. Once the pool has been idle for `idle_s`, workers beyond `warm` exit (a reaper thread sees to it);
    the next `run` starts what it needs again."""

    def __init__(self, workers: int | None = None, *, idle_s: float | None = None, warm: int | None = None):
        self.size = workers or max(1, min(4, os.cpu_count() or 2))
        self.idle_s = IDLE_EXIT_S if idle_s is None else idle_s
        self.warm = max(0, min(self.size, IDLE_WARM if warm is None else warm))
        self._ctx = mp.get_context("spawn")
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._running = 0
        self._last_used = time.monotonic()
        self._reaper: threading.Thread | None = None
        self._closed = False
        self.started = 0  # worker processes started over the pool's life (tests and benches read it)
        self.retired = 0  # workers stopped for idling

    def _ensure(self) -> None:
        if self._closed:
            raise PoolClosed(_STOPPING)
        while len(self._workers) < self.size:
            self._workers.append(self._new_worker())

    def _new_worker(self) -> _Worker:
        self.started += 1
        return _Worker(self._ctx)

    @property
    def alive(self) -> int:
        """Worker processes running now."""
        with self._lock:
            return sum(1 for w in self._workers if w.proc.is_alive())

    def run(self, root: str, tasks: Iterable[ParseTask], max_bytes: int = 2_000_000) -> Iterator[ParseOutcome]:
        """Yield one outcome per task, in completion order. A file past the time limit kills its worker,
        yields `skipped/timeout`, and the rest of its batch is resubmitted to a fresh worker."""
        with self._lock:
            self._running += 1
            self._ensure()
        languages: set[str] = set()
        try:
            for outcome in self._run(root, tasks, max_bytes):
                if outcome.facts is not None:
                    languages.add(outcome.facts.language)
                yield outcome
        finally:
            with self._lock:
                self._running -= 1
                self._last_used = time.monotonic()
                self._start_reaper()
            _warm_inline(languages)

    def _start_reaper(self) -> None:
        """(Lock held.) One thread per pool that retires idle workers; it ends when there is nothing to retire."""
        if self._closed or self.idle_s <= 0 or len(self._workers) <= self.warm:
            return
        if self._reaper is not None and self._reaper.is_alive():
            self._wake.notify_all()
            return
        self._reaper = threading.Thread(target=self._reap, name="parse-reaper", daemon=True)
        self._reaper.start()

    def _reap(self) -> None:
        while True:
            with self._lock:
                if self._closed or len(self._workers) <= self.warm:
                    self._reaper = None
                    return
                wait = self._last_used + self.idle_s - time.monotonic()
                if self._running or wait > 0:
                    self._wake.wait(max(0.05, wait) if not self._running else self.idle_s)
                    continue
                leaving = self._workers[self.warm:]
                self._workers = self._workers[: self.warm]
                self.retired += len(leaving)
            _stop(leaving)
            log.info("parser pool idle for %.0fs: %d worker(s) stopped, %d kept", self.idle_s, len(leaving), self.warm)

    def _run(self, root: str, tasks: Iterable[ParseTask], max_bytes: int) -> Iterator[ParseOutcome]:
        pending: deque[ParseTask] = deque(tasks)
        idle = list(self._workers)
        busy: dict[Connection, _Worker] = {}
        while pending or busy:
            while idle and pending:
                worker = idle.pop()
                # A few files are split evenly (22 files: 11 + 11, not 16 + 6, which doubles the wall time).
                size = min(BATCH, -(-len(pending) // max(1, len(self._workers))))
                chunk = [pending.popleft() for _ in range(size)]
                worker.send(root, chunk, max_bytes)
                busy[worker.conn] = worker
            try:
                if self._closed:
                    raise PoolClosed(_STOPPING)
                ready = wait(list(busy), timeout=0.5)
            except OSError as e:  # (`close` closed the connections under the wait)
                if self._closed:
                    raise PoolClosed(_STOPPING) from e
                raise
            for ready_conn in ready:
                conn: Any = ready_conn
                worker = busy[conn]
                try:
                    data = conn.recv_bytes()
                except (EOFError, OSError):
                    yield from self._replace(worker, busy, idle, pending, "worker-died")
                    continue
                if data == READY:
                    worker.ready = True
                    worker.since = time.monotonic()
                    continue
                if data == BATCH_DONE:
                    del busy[conn]
                    idle.append(worker)
                    continue
                outcome = decode_outcome(data)
                if worker.batch:
                    worker.batch.popleft()
                worker.since = time.monotonic()
                yield outcome
            now = time.monotonic()
            for worker in list(busy.values()):
                if worker.overdue(now):
                    yield from self._replace(worker, busy, idle, pending, "timeout")

    def _replace(
        self,
        worker: _Worker,
        busy: dict[Connection, _Worker],
        idle: list[_Worker],
        pending: deque[ParseTask],
        reason: str,
    ) -> Iterator[ParseOutcome]:
        busy.pop(worker.conn, None)
        stuck = worker.batch.popleft() if worker.batch else None
        pending.extendleft(reversed(worker.batch))
        worker.kill()
        with self._lock:
            if self._closed:  # (`close` stopped every worker, this one too: none is started after it)
                raise PoolClosed(_STOPPING)
            self._workers.remove(worker)
            fresh = self._new_worker()
            self._workers.append(fresh)
        idle.append(fresh)
        if stuck is not None:
            log.warning("parsing %s: %s; worker replaced", stuck.path, reason)
            yield ParseOutcome(stuck.path, "skipped", reason=reason)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers, self._workers = self._workers, []
            self._wake.notify_all()
        _stop(workers)


_warmed: set[str] = set()


def _warm_inline(languages: set[str]) -> None:
    """Build, in this process and off the caller's thread, the parsers and queries of the languages the pool just
    parsed: the next small change parses inline here (`inline`), and its first parse would otherwise pay for
    them (~0.3 s measured for Python under load, against ~3-6 ms once built)."""
    fresh = sorted(lang for lang in languages - _warmed if lang)
    if not fresh:
        return
    _warmed.update(fresh)
    from ..parse.extract import supported_languages
    from ..parse.extract import warm as build

    # (Only parsed languages: `build([])` builds every language, ~2 CPU-s, for a file of `ini` or `text`.)
    wanted = [lang for lang in fresh if lang in supported_languages()]
    if not wanted:
        return

    def warm() -> None:
        try:
            build(wanted)
        except Exception:  # a failed warm-up only costs the first inline parse its time
            log.exception("warming the in-process parsers failed")

    threading.Thread(target=warm, name="parse-warm", daemon=True).start()


def _stop(workers: list[_Worker]) -> None:
    """Ask each worker to exit, then kill what has not within two seconds."""
    for worker in workers:
        try:
            worker.conn.send(None)
        except OSError:
            pass
    for worker in workers:
        worker.proc.join(2)
        if worker.proc.is_alive():
            worker.kill()
        else:
            worker.conn.close()


def inline(root: str, tasks: Iterable[ParseTask], max_bytes: int = 2_000_000) -> Iterator[ParseOutcome]:
    """Parse in this process: for a handful of files the round trip to a worker costs more than the parse.
    Only allow-listed grammars run here and files are size-capped, so the hang risk stays in the pool."""
    for task in tasks:
        yield process_one(root, task, max_bytes)


# Skips that the same bytes will always repeat (`schema.PERMANENT_SKIPS`): their File keeps a marker hash, so the
# next sync's stat clears them. Other failures (timeout, a dead worker, extract-failed) keep an empty hash and
# are retried.


def skipped_facts(path: str, reason: str) -> FileFacts:
    """A File with no symbols and a diagnostic: binary, too large, timed out..."""
    from ..parse.languages import classify_role, language_for

    return FileFacts(
        path=path,
        language=language_for(path),
        role=classify_role(path),
        hash=f"skipped:{reason}" if reason in PERMANENT_SKIPS else "",
        line_count=0,
        diagnostics=[Diagnostic(path, "warning", reason, f"not indexed: {reason}")],
    )
