"""What the daemon survived and how it is now, in one place: the `health` section of `status`.

Sources: the socket loop's outbox (peers that do not read their replies), the store open at start (a
database moved aside), the memory journal (damaged records skipped at replay), and full-disk episodes of
writes. Each part reports plain counts and the last event, so a user or an agent can tell what happened
without reading the log.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import NoSpace
from .store import StoreError

if TYPE_CHECKING:
    from .daemon import Daemon

log = logging.getLogger(__name__)

SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
CHECKPOINT_MARGIN = 8 * 1024 * 1024
RESUME_MARGIN = 8 * 1024 * 1024  # free space writes need again after one ran out of space


def is_space_error(exc: BaseException) -> bool:
    if isinstance(exc, NoSpace):
        return True
    if isinstance(exc, OSError) and exc.errno in SPACE_ERRNOS:
        return True
    return isinstance(exc, StoreError) and exc.no_space  # told by the store, which reads Kuzu's wording


class DiskGuard:
    """Free space of the filesystem holding the data directory, checked before every write.

    Kuzu 0.11.3 survives a failed write (the transaction rolls back, and once there is room the next write
    and a CHECKPOINT work), but a CHECKPOINT or a close *while* the disk is full aborts the process (measured
    on a full tmpfs). So: writes are refused with `no_space` while free space is under the reserve
    (NEXUS_MIN_FREE_MB), a write that hits the disk's end anyway becomes `no_space` too, and no checkpoint
    runs unless the free space covers the WAL plus a margin. Space coming back needs nothing: the next
    check sees it."""

    def __init__(self, path: Path, min_free_bytes: int):
        self.path = path
        self.min_free = max(0, min_free_bytes)
        self._lock = threading.Lock()
        self.refused = 0
        self.failed = 0
        self.low_since: float | None = None
        self.last: dict[str, Any] | None = None

    def free(self) -> int:
        try:
            st = os.statvfs(self.path)
        except OSError:
            return 1 << 62  # cannot tell: do not refuse on a guess
        return int(st.f_bavail * st.f_frsize)

    def error(self, free: int | None = None, *, needed: int | None = None, what: str = "the write") -> NoSpace:
        free = self.free() if free is None else free
        needed = self.min_free if needed is None else needed
        self.last = {"at": time.time(), "freeBytes": free, "what": what}
        return NoSpace(
            f"no space left for {what}: {free // (1024 * 1024)} MB free on the disk holding {self.path} "
            f"(writes need at least {needed // (1024 * 1024)} MB); nothing of it was stored",
            hint="free some space there (or lower NEXUS_MIN_FREE_MB); the daemon resumes writing on its own",
            data={"path": str(self.path), "freeBytes": free, "neededBytes": needed},
        )

    def check_write(self, what: str = "the write") -> None:
        """Raise NoSpace while the free space is under the reserve."""
        free = self.free()
        with self._lock:
            # After a write ran out of space, writing resumes only with a margin free (not at the first
            # freed kilobyte, which the next write would fill again).
            need = self.min_free if self.low_since is None else max(self.min_free, RESUME_MARGIN)
            if free >= need and free > 0:
                if self.low_since is not None:
                    log.warning("disk space is back (%d MB free): writes resume", free // (1024 * 1024))
                self.low_since = None
                return
            if self.low_since is None:
                self.low_since = time.time()
                log.error("only %d MB free on the disk holding %s: refusing writes", free // (1024 * 1024), self.path)
            self.refused += 1
        raise self.error(free, needed=need, what=what)

    def failed_write(self, exc: BaseException, what: str = "the write") -> NoSpace:
        """A write that ran out of space although the check let it through: count it, describe it."""
        with self._lock:
            self.failed += 1
            if self.low_since is None:
                self.low_since = time.time()
        log.error("%s ran out of disk space: %s", what, exc)
        return self.error(what=what, needed=max(self.min_free, CHECKPOINT_MARGIN))

    def safe_to_checkpoint(self, wal_bytes: int) -> bool:
        """A checkpoint (or a close, which checkpoints) may write about the WAL's size into the database file."""
        return self.free() >= max(self.min_free, 2 * wal_bytes + CHECKPOINT_MARGIN)

    def stats(self) -> dict[str, Any]:
        free = self.free()
        return {
            "path": str(self.path),
            "freeBytes": free,
            "minFreeBytes": self.min_free,
            "low": free < self.min_free or self.low_since is not None,
            "lowSince": self.low_since,
            "refusedWrites": self.refused,
            "failedWrites": self.failed,
            "last": self.last,
        }


def space_check(guard: DiskGuard | None, what: str) -> None:
    if guard is not None:
        guard.check_write(what)


def as_no_space(guard: DiskGuard | None, exc: BaseException, what: str) -> NoSpace | None:
    """The NoSpace to answer for a failed write, or None when the failure is not about disk space."""
    if isinstance(exc, NoSpace):
        return exc
    if not is_space_error(exc):
        return None
    if guard is None:
        return NoSpace(f"no space left for {what}: {exc}")
    return guard.failed_write(exc, what)


def checkpoint_allowed(daemon: Daemon) -> bool:
    guard = daemon.disk
    store = daemon.store
    if guard is None or store is None:
        return True
    return guard.safe_to_checkpoint(store.wal_bytes())


def start_guard(daemon: Daemon) -> DiskGuard:
    from . import config

    daemon.disk = DiskGuard(daemon.dirs.data, int(config.get("NEXUS_MIN_FREE_MB")) * 1024 * 1024)
    return daemon.disk


def close_store(daemon: Daemon, marker: Path) -> bool:
    """Checkpoint and close the database at a clean stop, unless the disk is too full for that (Kuzu aborts
    the process in a checkpoint or close on a full disk). Returns False when the close was skipped: then no
    clean-stop marker is written, the next start replays the WAL (and rebuilds the code graphs), and the
    caller must leave without running Kuzu's destructors."""
    store = daemon.store
    if store is None:
        return True
    if not store.opened:
        # Never opened in this run, so nothing was written: the last stop's marker state stays as it was
        # (an unclean one still has its WAL to replay, and its code graphs to rebuild, at the next open).
        if not daemon.unclean_stop:
            write_clean_marker(marker)
        return True
    if not checkpoint_allowed(daemon):
        guard = daemon.disk
        log.error(
            "the disk is too full to checkpoint (%s bytes free, WAL %d bytes): leaving the database as it is; "
            "the next start replays its WAL",
            guard.free() if guard else "?",
            store.wal_bytes(),
        )
        return False
    try:
        store.checkpoint()
    finally:
        store.close()
    write_clean_marker(marker)
    return True


def write_clean_marker(marker: Path) -> None:
    """The next start trusts the database file as it finds it (written at a clean stop, and while the database
    rests: `Store.sleep`)."""
    try:
        marker.write_text(f"{time.time()}\n")
    except OSError as exc:  # no room even for the marker: the next start treats this stop as unclean
        log.error("could not write the clean-stop marker: %s", exc)


DAMAGED_MARKER = "database-damaged"  # in the state directory: set the database aside at the next start
DAMAGED_REASON = "the database file was found damaged"  # how the recorded reason starts


def mark_database_damaged(state: Path, reason: str) -> None:
    """Record that the database file holds what no write made, or disagrees with itself (`app.build`'s
    `database_damaged`: a cold write's counts, the idle check after deletes, a compaction's row check): the next
    start moves it aside and rebuilds, as for a file that cannot be opened (`Daemon._open_store`)."""
    try:
        (state / DAMAGED_MARKER).write_text(f"{DAMAGED_REASON}: {reason[:2000]}\n")
    except OSError as exc:
        log.error("could not record that the database is damaged: %s", exc)


def take_damaged_mark(state: Path) -> str | None:
    """The reason recorded by `mark_database_damaged`, removing the record; None when there is none."""
    marker = state / DAMAGED_MARKER
    try:
        reason = marker.read_text(errors="replace").strip()
    except OSError:
        return None
    marker.unlink(missing_ok=True)
    return reason or "the database was found damaged"


def health(daemon: Daemon) -> dict[str, Any]:
    outbox = getattr(daemon.server, "outbox", None)
    out: dict[str, Any] = {
        "peers": outbox.stats() if outbox is not None else {},
        "recovery": daemon.recovery,
    }
    guard = daemon.disk
    if guard is not None:
        out["disk"] = guard.stats()
    if daemon.parts is not None:
        out["journal"] = daemon.parts.memory.journal.stats()
    store = daemon.store
    if store is not None:
        # The database file rebuilt from its own rows when it grew far beyond them (store.Store.compact).
        out["compaction"] = store.compaction_status()
    return out


def room_to_start(daemon: Daemon) -> bool:
    """Set up the disk guard; False (with the reason on stderr and in the log) when the data disk is under
    the reserve: opening the database replays its WAL and writes, and Kuzu aborts on a full disk. The
    daemon exits 12 then; it starts once there is room."""
    import sys

    guard = start_guard(daemon)
    free = guard.free()
    if free >= guard.min_free and free > 0:
        return True
    message = (
        f"only {free // (1024 * 1024)} MB free on the disk holding {guard.path}; the daemon needs "
        f"{guard.min_free // (1024 * 1024)} MB (NEXUS_MIN_FREE_MB) to open its database safely"
    )
    print(f"nexusd: {message}", file=sys.stderr)  # before the lock: there is no log file yet
    return False


def set_aside_orphans(db: Path) -> dict[str, Any] | None:
    """A WAL (or shadow file) whose database file is gone (deleted by hand, a half-finished cleanup): Kuzu
    would replay it into a fresh database and fail at every start. Move it aside; the new database is built
    from the files (code) and the journal (memory). Returns the recovery record for `status`, or None."""
    leftovers = [Path(str(db) + suffix) for suffix in (".wal", ".shadow")]
    leftovers = [p for p in leftovers if p.exists()]
    if not leftovers:
        return None
    aside = db.with_name(f"{db.name}.orphan-{int(time.time())}")
    for src in leftovers:
        src.rename(Path(str(aside) + src.name[len(db.name):]))
    reason = f"a WAL was left without its database ({', '.join(p.name for p in leftovers)})"
    log.error("%s; moved it aside to %s.*. The code graph will be rebuilt and memory replayed.", reason, aside)
    return {"movedAside": str(aside), "reason": reason, "at": time.time()}


PROBE_TIMEOUT_S = 60.0
PROBE_MIN_RSS = 1024 * 1024 * 1024  # an open needs ~200 MB; damaged pages made it grow past 13 GB

_PROBE_CODE = (
    "import sys, kuzu\n"
    "db = kuzu.Database(sys.argv[1], buffer_pool_size=64*1024*1024)\n"
    "c = kuzu.Connection(db)\n"
    "c.execute('CALL SHOW_TABLES() RETURN count(*)')\n"
    "print('ok')\n"
)


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def probe(path: Path, *, timeout_s: float = PROBE_TIMEOUT_S, max_rss: int | None = None) -> tuple[bool, str]:
    """Open the database in a throwaway subprocess, within bounded time and memory: a poisoned file
    segfaults there, not in the daemon, and one whose damaged pages make Kuzu allocate without end (16 zeroed
    pages: 13 GB in a minute, measured) is killed at `max_rss` instead of taking the machine down."""
    import subprocess
    import sys
    import tempfile

    from . import config

    limit = max_rss or max(PROBE_MIN_RSS, 3 * int(config.get("NEXUS_BUFFER_POOL_MB")) * 1024 * 1024)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-c", _PROBE_CODE, str(path)], stdout=out, stderr=err)
        deadline = time.monotonic() + timeout_s
        peak = 0
        while proc.poll() is None:
            peak = max(peak, _rss(proc.pid))
            if peak > limit or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                if peak > limit:
                    return False, f"opening the database used more than {limit // (1024 * 1024)} MB"
                return False, f"opening the database took more than {timeout_s:.0f} s"
            time.sleep(0.02)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    if proc.returncode == 0 and "ok" in stdout:
        return True, ""
    detail = (stderr or stdout).strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
    return False, detail[0]
