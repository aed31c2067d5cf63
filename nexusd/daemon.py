"""The daemon's lifecycle and wiring: lock, directories, store, socket loop, workers, watchers.

Start order matters (docs/field-notes.md, pyzmq): take the PID lock before touching the socket (a second bind on a live
ipc path steals it), probe the database in a subprocess (a poisoned or damaged file segfaults or fails
there, not here), then open the one `Database` of this process.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__, config, paths
from .lock import AlreadyRunning, PidLock
from .parts import DaemonInfo
from .recycle import Recycler

if TYPE_CHECKING:
    from .parts import Parts
    from .recovery import DiskGuard
    from .server import Server
    from .store import Store

log = logging.getLogger("nexusd")

CLEAN_MARKER = "clean-shutdown"
RECYCLES_ENV = "_NEXUS_RECYCLES"  # how many times this pid restarted in place, and when last: "count time"
REBUILD_ENV = "_NEXUS_REBUILD_TABLES"  # the repository ids whose symbol tables the image before held
SNAPSHOTS_ENV = "_NEXUS_LOAD_SNAPSHOTS"  # the repository ids whose query snapshots the image before held
RESTED_ENV = "_NEXUS_RESTED"  # "1": the image before stopped while its database rested (`Server.rest_soon`)


class Daemon:
    def __init__(self, dirs: paths.Dirs, *, log_to_terminal: bool = False, readers: int = 4):
        self.dirs = dirs
        self.log_to_terminal = log_to_terminal
        self.readers = readers
        self.started_at = time.time()
        self.pid = os.getpid()
        self.recovery: dict[str, Any] | None = None
        # True when the last run did not stop cleanly (kill -9, power loss): Kuzu's WAL replay can then lose a
        # committed relationship (measured: tests/reliability, RELIABILITY.md), so the catch-up at start
        # (sync/live.py) rebuilds every code graph from the files instead of trusting it. Memory comes from its
        # journal either way.
        self.unclean_stop = False
        self.schema_report: dict[str, Any] = {}
        self.store: Store | None = None
        self.server: Server | None = None
        self.parts: Parts | None = None  # built by the composition root (app.py) once the store is open
        self.disk: DiskGuard | None = None  # free space of the data disk, checked before writes (recovery.py)
        self._lock = PidLock(dirs.pidfile)
        self._stop_requested = threading.Event()
        count, _, at = os.environ.pop(RECYCLES_ENV, "").partition(" ")
        self.recycles = int(count) if count.isdigit() else 0
        self.recycled_at = float(at) if self.recycles and at.replace(".", "", 1).isdigit() else None
        self.rebuild_tables = tuple(os.environ.pop(REBUILD_ENV, "").split())
        self.load_snapshots = tuple(os.environ.pop(SNAPSHOTS_ENV, "").split())
        self.rested = os.environ.pop(RESTED_ENV, "") == "1"
        self._recycle: str | None = None  # why this run ends in a restart in place (`request_recycle`)
        self._for_good = False  # a stop for good was asked for: no restart in place, whenever one is asked
        self._keep_lock = False  # the shutdown was clean: the lock goes to the next image

    # -- run ----------------------------------------------------------------------------------------

    def run(self) -> int:
        # Everything the daemon creates is private to its user (files 0600, directories 0700), whatever the
        # umask it inherited: the home holds memory, source text, logs and shell history.
        os.umask(0o077)
        from .parse.gcpause import limit_arenas

        limit_arenas(int(config.get("NEXUS_MALLOC_ARENAS")))  # before any thread of ours starts
        for d in (self.dirs.data, self.dirs.state):
            # 0700 like the socket's directory: the data dir holds the memory journal and the graph (user data,
            # source text), the state dir the log; with the default umask both were readable by every local user.
            paths.ensure_private_dir(d)
        # Private also what an earlier version or another tool left here with the default umask.
        home = os.environ.get("NEXUS_HOME")
        for top in [Path(home).expanduser()] if home else [self.dirs.data, self.dirs.state]:
            paths.tighten(top)
        try:
            # Before the lock and before any bind: a directory on the way to the socket that another local user
            # created or can write to would let them take the socket's place (README "Where data lives").
            paths.check_socket_dirs(self.dirs, create=True)
        except (paths.UnsafePath, OSError) as exc:
            print(f"nexusd: {exc}", file=sys.stderr)
            print(
                "nexusd: set XDG_RUNTIME_DIR to a private directory, or NEXUS_HOME, or remove that directory",
                file=sys.stderr,
            )
            return 4
        from . import recovery

        if not recovery.room_to_start(self):  # opening Kuzu on a full disk can abort the process
            return 12
        try:
            self._lock.acquire()
        except OSError as exc:
            if not recovery.is_space_error(exc):
                raise
            print(f"nexusd: cannot write the pid lock {self.dirs.pidfile}: {exc}", file=sys.stderr)
            return 12
        except AlreadyRunning as exc:
            print(f"nexusd: {exc}", file=sys.stderr)
            return 3
        try:
            self._setup_logging()
            log.info("nexusd %s starting (pid %d, data %s)", __version__, self.pid, self.dirs.data)
            # Signals first: a SIGTERM that arrives once the socket exists (a client sees the daemon up) must stop
            # it cleanly, not kill it with the default handler.
            self._install_signals()
            self._open_store()
            assert self.store is not None
            self.store.checkpoint_allowed = lambda: recovery.checkpoint_allowed(self)
            self._bind()
            server = self._compose()
            server.start_workers()
            if server.recycler is not None:
                server.recycler.start()
            log.info("serving on %s", self.dirs.endpoint)
            server.serve_forever()
            log.info("stopping")
        finally:
            self._shutdown()
        if self._keep_lock:  # (`restarts_in_place`, and the database closed)
            self._reexec()  # returns only when the exec failed
        return 0

    def request_stop(self) -> None:
        """Stop for good (SIGTERM, SIGINT, the `shutdown` request): a restart in place asked for before is off, and
        so is one the idle writer asks for after (its check ran as the signal came: a SIGTERM in the same
        millisecond as a restart's request restarted the daemon instead of stopping it)."""
        self._for_good = True  # (`restarts_in_place` is then false, whatever was or will be asked)
        self._stop()

    @property
    def restarts_in_place(self) -> bool:
        """This run ends in a restart in place (asked for, and no stop for good asked for before or since)."""
        return self._recycle is not None and not self._for_good

    def _stop(self) -> None:
        self._stop_requested.set()
        if self.server is not None:
            self.server.stop()

    def request_recycle(self, reason: str) -> None:
        """Stop as for SIGTERM (the write in progress finishes, the graph is checkpointed and closed, the clean
        marker written), then execute this same command again in this process: same pid, the PID lock handed
        over, the socket bound again (`_reexec`). What the previous image freed but its allocator kept resident
        is gone with it. Requests queued meanwhile are refused as `busy` with `restarting`, and a client that
        sees that, or sees the socket gone while this pid lives, waits for it and sends its request again
        (`nexus_client.Client`). The writer asks for it when idle (`recycle.Recycler`). Nothing once a stop for
        good was asked for."""
        if self._for_good:
            return
        log.info("restarting in place (restart %d of this pid): %s", self.recycles + 1, reason)
        self._recycle = reason
        if self.server is not None:
            self.server.restarting = True
        self._stop()

    def _reexec(self) -> None:
        # The symbol tables and query snapshots this image held when it stopped (the writer drained: none changes
        # now), for the next image to rebuild and load at once.
        held = (self.parts.live.tables_to_rebuild() if self.parts is not None else None) or []
        snaps = self.parts.snapshots.loaded_ids() if self.parts is not None else []
        # (whether the database rested when this image stopped: `close` leaves `dormant` as it was)
        rested = "1" if self.store is not None and self.store.dormant else ""
        env = {**os.environ, **self._lock.handover(), RECYCLES_ENV: f"{self.recycles + 1} {time.time():.0f}",
               REBUILD_ENV: " ".join(held), SNAPSHOTS_ENV: " ".join(snaps), RESTED_ENV: rested}  # fmt: skip
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.execve(sys.executable, sys.orig_argv, env)
        except OSError as exc:  # (the interpreter is gone: an upgrade moved it) stop; the next client starts one
            self._lock.release()
            print(f"nexusd: could not restart in place ({exc}); stopped", file=sys.stderr)

    # -- steps --------------------------------------------------------------------------------------

    def _compose(self) -> Server:
        from . import app, recovery  # app imports (registers) every operation

        assert self.store is not None and self.server is not None
        info = DaemonInfo(
            pid=self.pid, started_at=self.started_at, dirs=self.dirs, recovery=self.recovery,
            unclean_stop=self.unclean_stop, recycles=self.recycles, rebuild_tables=self.rebuild_tables,
            load_snapshots=self.load_snapshots,
        )  # fmt: skip
        self.parts = app.build(info, self.store, self.server, self.request_stop)
        self.server.parts = self.parts
        self.parts.request_recycle = self.request_recycle
        self.server.recycler = Recycler(self.request_recycle, self.recycled_at)
        self.server.disk = self.disk
        self.parts.status_sections.append(lambda conn, args: ("health", recovery.health(self)))
        app.start(self.parts)
        return self.server

    def _setup_logging(self) -> None:
        root = logging.getLogger()
        root.setLevel(str(config.get("NEXUS_LOG_LEVEL")).upper())
        fmt = logging.Formatter("%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s")
        handler = logging.handlers.RotatingFileHandler(self.dirs.log, maxBytes=5_000_000, backupCount=2)
        handler.setFormatter(fmt)
        root.addHandler(handler)
        if self.log_to_terminal:
            term = logging.StreamHandler(sys.stderr)
            term.setFormatter(fmt)
            root.addHandler(term)

    def _open_store(self) -> None:
        from . import recovery
        from .store import Store

        db = self.dirs.db
        marker = self.dirs.state / CLEAN_MARKER
        self.unclean_stop = db.exists() and not marker.exists()
        if not db.exists():
            self.recovery = recovery.set_aside_orphans(db) or self.recovery  # a WAL without its database
        # Probe every existing database, not only after an unclean stop: a file damaged while the daemon was
        # down (a bad disk day, a truncated copy) made the in-process open raise or segfault at every start,
        # with no move-aside. The probe costs ~0.15 s of start time.
        damaged = recovery.take_damaged_mark(self.dirs.state)  # the last run found its file damaged (app.build)
        if db.exists():
            ok, detail = (False, damaged) if damaged else recovery.probe(db)  # bounded in time and memory
            if not ok:
                aside = db.with_name(f"{db.name}.corrupt-{int(time.time())}")
                for suffix in ("", ".wal", ".shadow"):
                    src = Path(str(db) + suffix)
                    if src.exists():
                        src.rename(Path(str(aside) + suffix))
                self.recovery = {"movedAside": str(aside), "reason": detail, "at": time.time()}
                log.error(
                    "the database could not be opened (%s); moved it aside to %s. The code graph will be "
                    "rebuilt from the files and memory restored from the journal.",
                    detail,
                    aside,
                )
        marker.unlink(missing_ok=True)
        # Built closed: the database opens on first need (ARCHITECTURE.md, "Memory at rest"), or here, before
        # the socket exists, when registrations need it from the start.
        self.store = store = Store(db, lazy=True, create_whole=True)
        store.on_open.append(lambda s: self.schema_report.update(s.ensure_schema()))
        from .parse.gcpause import trim_heap

        store.on_reopen.append(trim_heap)  # what the closed Database freed goes back to the system
        # While the database rests it is closed after a checkpoint, with no WAL to replay and its graphs checked
        # (`Server._idle` lets it rest only then): a kill meanwhile is a clean stop (no code graph rebuilt at the
        # next start). The marker goes before it opens again.
        store.on_sleep.append(lambda: recovery.write_clean_marker(marker))
        store.on_wake.append(lambda: marker.unlink(missing_ok=True))
        from .app import store_needed_at_start

        if store_needed_at_start(self.dirs):
            store.open()
        else:
            store.prepare()  # a first start builds the database file meanwhile, in a child process

    def _bind(self) -> None:
        from .server import Server

        sock = self.dirs.socket
        paths.check_socket_dirs(self.dirs, create=True)  # again, right before the bind
        # We hold the lock, so a socket file left here belongs to a dead daemon: safe to remove.
        sock.unlink(missing_ok=True)
        assert self.store is not None
        self.server = server = Server(self.store, self.dirs.endpoint, readers=self.readers)
        server.rest_soon = self.rested
        if self._stop_requested.is_set():  # a signal came before there was a loop to stop
            server.stop()
        old = os.umask(0o077)
        try:
            server.bind()
        finally:
            os.umask(old)

    def _install_signals(self) -> None:
        def on_signal(signum: int, _frame: Any) -> None:
            log.info("signal %d received", signum)
            self.request_stop()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

    def _shutdown(self) -> None:
        closed = True
        try:
            drained, wait_s = True, float(config.get("NEXUS_STOP_WAIT_S"))
            if self.server is not None:  # the write in progress commits or rolls back first
                drained = self.server.drain_and_close(wait_s)
            if self.parts is not None:
                from . import app

                app.stop(self.parts)
            from . import recovery

            if drained:
                closed = recovery.close_store(self, self.dirs.state / CLEAN_MARKER)
            else:
                # A request still runs in the store (a start-up sync resolving the kernel for 30 s once held its
                # stop for good: the close waited for the writer, whose next statement waited for the close).
                # Left open, as by a kill: the next start replays the database's log.
                log.warning("a request was still running %.0f s after the stop began: exiting without closing the "
                            "database (the next start replays its log)", wait_s)  # fmt: skip
                closed = False
            if self.server is not None:
                self.dirs.socket.unlink(missing_ok=True)
            self._keep_lock = self.restarts_in_place and closed
            log.info("stopped" if not self._keep_lock else "stopped; starting again in place")
        except Exception:
            log.exception("error during shutdown")
        finally:
            if not self._keep_lock:
                self._lock.release()
            logging.shutdown()
        if not closed:
            # The database was left open on purpose (a full disk, or a request still running in it): Kuzu's
            # destructor would checkpoint and abort the process, or wait. Everything else is closed, the journal
            # fsynced, the lock released.
            os._exit(0)
