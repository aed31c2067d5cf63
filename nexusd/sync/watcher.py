"""Live sync: watchdog events -> walk rules -> a per-repository dirty set -> settle -> one writer batch.

    event (any thread of watchdog)  ->  Watcher.on_path(): ignore rules, dirty set, pending paths
    settle timer (one thread)       ->  quiet for SETTLE_S, or MAX_DELAY_S since the first event
                                    ->  flush job on the writer: takes the dirty set *when it runs*
    `sync` (cookie barrier)         ->  write a cookie file, wait until the watcher reports it, then take
                                        the dirty set itself (it runs on the writer: nothing can slip past)

A directory event, a change to an ignore file, a batch over FULL_SCAN_OVER paths (a checkout or a rebase)
or an inotify queue overflow turns the next flush into a full stat walk, which is cheap: stat clears
unchanged files without reading them. When inotify cannot be used (watch limits), the repository falls back
to polling and status says so.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

from .. import config
from .walk import DEFAULT_IGNORED_DIRS, WalkRules

log = logging.getLogger(__name__)

SETTLE_S = float(config.get("NEXUS_SETTLE_MS")) / 1000
MAX_DELAY_S = 1.0
FULL_SCAN_OVER = 500
COOKIE_PREFIX = ".nexus-cookie-"
IGNORE_FILES = (".gitignore", ".nexusignore")
# Editors' temporary names: swap files, backups, atomic-save temps. Their final rename is what counts.
_TEMP_SUFFIXES = ("~", ".swp", ".swx", ".swo", ".tmp", ".part", ".crdownload")


@dataclass
class RepoWatch:
    repo_id: str
    root: str
    rules: WalkRules
    dirty: set[str] = field(default_factory=set)
    full_scan: bool = False
    inflight: int = 0  # paths taken by a batch that has not committed yet (still stale)
    first_event: float = 0.0
    last_event: float = 0.0
    cookies: dict[str, threading.Event] = field(default_factory=dict)
    observer: Any = None
    # Directories scheduled with their own watch. watchdog gives each watch its own inotify fd and thread, so
    # events from two watches arrive in no fixed order: the barrier needs a cookie in each of them.
    watched: list[str] = field(default_factory=list)
    mode: str = "inotify"  # inotify | polling | off
    split: bool = False  # root watched alone plus one recursive watch per included top-level folder
    error: str | None = None


# The events a watch asks the kernel for: every change, and not a file's being opened or closed unwritten (by
# default inotify reports those too, and watchdog turns each into an event in Python that the handler drops:
# two per file the daemon hashes or parses, a view's scan included, or any other process reads).
_EVENTS = [FileCreatedEvent, FileModifiedEvent, FileDeletedEvent, FileMovedEvent, FileClosedEvent,
           DirCreatedEvent, DirModifiedEvent, DirDeletedEvent, DirMovedEvent]  # fmt: skip


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher, watch: RepoWatch):
        self.watcher = watcher
        self.watch = watch

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        try:
            self.watcher.on_event(self.watch, event)
        except Exception:  # a watcher callback must never die: log and rescan
            log.exception("watch event handling failed; scheduling a rescan")
            self.watch.full_scan = True


class _OverflowSpy(logging.Handler):
    """watchdog reports an inotify queue overflow only in its log; we turn it into a full rescan."""

    def __init__(self, watcher: Watcher):
        super().__init__(logging.WARNING)
        self.watcher = watcher

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.watcher.rescan_all("inotify queue overflow")


class Watcher:
    """All repositories' watches, the settle timer, and the cookie barrier."""

    def __init__(self, flush: Callable[[str], None]):
        self._flush = flush  # queues a flush job for a repo id on the writer
        self._lock = threading.Lock()
        self._watches: dict[str, RepoWatch] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._settle_loop, name="settle", daemon=True)
        self._thread.start()
        self._spy = _OverflowSpy(self)
        logging.getLogger("watchdog.observers.inotify_c").addHandler(self._spy)
        logging.getLogger("watchdog.observers.inotify").addHandler(self._spy)

    # -- watches ------------------------------------------------------------------------------------

    def watch(self, repo_id: str, root: str) -> RepoWatch:
        with self._lock:
            existing = self._watches.get(repo_id)
            if existing is not None:
                return existing
            w = RepoWatch(repo_id, root, WalkRules(root))
            self._watches[repo_id] = w
        self._start_observer(w)
        return w

    def _start_observer(self, w: RepoWatch) -> None:
        handler = _Handler(self, w)
        try:
            observer = Observer()
            tops = [e for e in os.scandir(w.root) if e.is_dir(follow_symlinks=False)]
            heavy = [e.name for e in tops if e.name in DEFAULT_IGNORED_DIRS and e.name != ".git"]
            if not heavy:
                # One recursive watch: one inotify reader thread, so one cookie orders every event.
                observer.schedule(handler, w.root, recursive=True, event_filter=_EVENTS)
                w.watched = [w.root]
            else:
                # A dependency tree or virtualenv at the top would cost thousands of watches: watch the root
                # alone and each included top-level folder (each gets its own reader thread and cookie).
                observer.schedule(handler, w.root, recursive=False, event_filter=_EVENTS)
                w.watched, w.split = [w.root], True
                for entry in sorted(tops, key=lambda e: e.name):
                    if w.rules.is_ignored(entry.name, True) is None:
                        observer.schedule(handler, entry.path, recursive=True, event_filter=_EVENTS)
                        w.watched.append(entry.path)
            observer.start()
            w.observer, w.mode = observer, "inotify"
        except OSError as exc:  # ENOSPC / EMFILE: out of inotify watches or instances
            log.warning("inotify unavailable for %s (%s); polling instead", w.root, exc)
            observer = PollingObserver(timeout=2)
            observer.schedule(handler, w.root, recursive=True)
            observer.start()
            w.observer, w.mode, w.error = observer, "polling", str(exc)

    def unwatch(self, repo_id: str) -> None:
        with self._lock:
            w = self._watches.pop(repo_id, None)
        if w is not None and w.observer is not None:
            w.observer.stop()
            w.observer.join(5)

    def held(self) -> list[str]:
        """The watched keys (repository ids, and views' keys), for `debug.retained`."""
        with self._lock:
            return sorted(self._watches)

    def get(self, repo_id: str) -> RepoWatch | None:
        with self._lock:
            return self._watches.get(repo_id)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        logging.getLogger("watchdog.observers.inotify_c").removeHandler(self._spy)
        logging.getLogger("watchdog.observers.inotify").removeHandler(self._spy)
        for repo_id in list(self._watches):
            self.unwatch(repo_id)

    # -- events -------------------------------------------------------------------------------------

    def on_event(self, w: RepoWatch, event: FileSystemEvent) -> None:
        paths = [os.fsdecode(event.src_path)]
        dest = getattr(event, "dest_path", "")
        if dest:
            paths.append(os.fsdecode(dest))  # a move is a delete of src plus an upsert of dest
        for path in paths:
            self.on_path(w, path, event.is_directory, event.event_type)

    def on_path(self, w: RepoWatch, abs_path: str, is_dir: bool, kind: str) -> None:
        rel = os.path.relpath(abs_path, w.root).replace(os.sep, "/")
        if rel == "." or rel.startswith("../"):
            return
        name = rel.rsplit("/", 1)[-1]
        if name.startswith(COOKIE_PREFIX):
            cookie = w.cookies.get(name)
            if cookie is not None:
                cookie.set()
            return
        top = rel.split("/", 1)[0]
        if top in DEFAULT_IGNORED_DIRS and w.rules.is_ignored(top, True) is not None:
            return
        if name in IGNORE_FILES:
            w.rules.invalidate()
            self._mark(w, None)
            return
        if is_dir:
            if kind in ("created", "moved", "deleted") and w.rules.is_ignored(rel, True) is None:
                if kind == "created" and "/" not in rel and w.mode == "inotify" and w.observer is not None and w.split:
                    # A new top-level folder needs a recursive watch of its own.
                    try:
                        w.observer.schedule(_Handler(self, w), abs_path, recursive=True, event_filter=_EVENTS)
                        w.watched.append(abs_path)
                    except OSError:
                        pass
                self._mark(w, None)
            return
        if name.endswith(_TEMP_SUFFIXES) or name.startswith(".#") or (name.startswith("#") and name.endswith("#")):
            return
        if w.rules.is_ignored(rel, False) is not None and kind != "deleted":
            return
        self._mark(w, rel)

    def _mark(self, w: RepoWatch, rel: str | None) -> None:
        now = time.monotonic()
        with self._lock:
            if rel is None or len(w.dirty) >= FULL_SCAN_OVER:
                w.full_scan = True
            else:
                w.dirty.add(rel)
            if not w.first_event:
                w.first_event = now
            w.last_event = now
        self._wake.set()

    def rescan(self, repo_id: str) -> None:
        """Make the next flush of a repository a full stat walk (a git checkout, merge or rebase)."""
        w = self.get(repo_id)
        if w is not None:
            self._mark(w, None)

    def rescan_all(self, why: str) -> None:
        log.warning("rescanning every repository: %s", why)
        with self._lock:
            watches = list(self._watches.values())
        for w in watches:
            self._mark(w, None)

    # -- settle -------------------------------------------------------------------------------------

    def _settle_loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(0.5)
            self._wake.clear()
            while not self._stop.is_set():
                due, wait = self._due()
                for repo_id in due:
                    self._flush(repo_id)
                if wait is None:
                    break
                time.sleep(wait)

    def _due(self) -> tuple[list[str], float | None]:
        """Repositories whose events have settled, and how long until the next one might."""
        now = time.monotonic()
        due: list[str] = []
        wait: float | None = None
        with self._lock:
            for w in self._watches.values():
                if not w.first_event:
                    continue
                quiet = now - w.last_event
                if quiet >= SETTLE_S or now - w.first_event >= MAX_DELAY_S:
                    due.append(w.repo_id)
                    w.first_event = 0.0
                else:
                    left = min(SETTLE_S - quiet, MAX_DELAY_S - (now - w.first_event))
                    wait = left if wait is None else min(wait, left)
        return due, wait

    def take(self, repo_id: str) -> tuple[set[str], bool]:
        """The dirty set and full-scan flag, emptied: called on the writer when a batch starts."""
        with self._lock:
            w = self._watches.get(repo_id)
            if w is None:
                return set(), False
            dirty, full = w.dirty, w.full_scan
            w.dirty, w.full_scan = set(), False
            w.inflight = len(dirty) + (1 if full else 0)
            return dirty, full

    def done(self, repo_id: str) -> None:
        """The batch that took the dirty set committed (or failed and was logged)."""
        with self._lock:
            w = self._watches.get(repo_id)
            if w is not None:
                w.inflight = 0

    def pending(self, repo_id: str) -> int:
        with self._lock:
            w = self._watches.get(repo_id)
            if w is None:
                return 0
            return len(w.dirty) + (1 if w.full_scan else 0) + w.inflight

    # -- cookie barrier -----------------------------------------------------------------------------

    def barrier(self, repo_id: str, timeout: float = 5.0) -> bool:
        """Return once the watcher has seen every event that happened before this call (True), or
        False if the cookie never arrived (then the caller falls back to a full scan)."""
        w = self.get(repo_id)
        if w is None or w.mode != "inotify":
            return False
        # One cookie per watched directory (see RepoWatch.watched): a cookie seen in the root proves nothing about
        # events still queued in another watch's thread.
        deadline = time.monotonic() + timeout
        cookies: list[tuple[str, Path, threading.Event]] = []
        for folder in list(w.watched) or [w.root]:
            if os.path.isdir(folder):
                name = f"{COOKIE_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
                cookies.append((name, Path(folder) / name, threading.Event()))
        for name, _path, seen in cookies:
            w.cookies[name] = seen
        try:
            for _name, path, _seen in cookies:
                path.write_bytes(b"")
            return all(seen.wait(max(0.0, deadline - time.monotonic())) for _n, _p, seen in cookies)
        except OSError:
            return False
        finally:
            for name, path, _seen in cookies:
                w.cookies.pop(name, None)
                try:
                    path.unlink()
                except OSError:
                    pass


class FileTrigger:
    """Calls `callback` (from a timer thread, debounced) when one file is created or appended to: the git
    hooks' spool. A watch on its directory alone, not recursive."""

    def __init__(self, path: Path, callback: Callable[[], None], debounce_s: float = 0.05):
        self.path = path
        self._callback = callback
        self._debounce = debounce_s
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        trigger = self

        class _H(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                if event.event_type in ("created", "modified", "closed", "moved"):
                    touched = {os.fsdecode(event.src_path), os.fsdecode(getattr(event, "dest_path", "") or "")}
                    if str(trigger.path) in touched:
                        trigger._fire()

        path.parent.mkdir(parents=True, exist_ok=True)
        self._observer = Observer()
        self._observer.schedule(_H(), str(path.parent), recursive=False)
        self._observer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self._debounce, self._callback)
            self._timer.daemon = True
            self._timer.start()

    def stop(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
        self._observer.stop()
        self._observer.join(5)
