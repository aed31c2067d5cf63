"""When an idle daemon restarts itself in place: what it freed stays resident otherwise.

Python's small-object allocator hands a 1 MiB arena back to the system only when nothing in it is alive. The
daemon's big short-lived heaps (a cold index's facts and rows, a symbol table let go when idle) are made among
objects that live on (caches, the history index, interned strings), so after they are freed most of their
arenas stay mapped, each kept by a few live objects: the standard library indexed, its symbol table let go
after 600 s idle, the daemon held 369 MB resident where the same daemon restarted holds 205 MB, and the
allocator's report said 171 MB of arenas for 19 MB of live objects (`gcpause.pymalloc_stats`). Nothing in
Python can move a live object, so the only way to give that memory back is a new process image.

So when the writer is idle, neither a request came nor the writer wrote for NEXUS_RECYCLE_QUIET_S (30 s; only
NEXUS_RECYCLE_AFTER_INDEX_S, 5 s, once this image has indexed a repository whole, see below), no
worktree view is held (its overlays are resolved against its repository's symbol table) and the arenas hold at
least NEXUS_RECYCLE_MB more than the live objects beyond what they held when the daemon began to serve (what
starting up left: a restart would leave it again, so it never counts; or, on a small daemon, at least SHARE of
its anonymous memory and SHARE_MIN_MB), the writer asks the daemon to restart in
place (`Daemon.request_recycle`): same pid, the PID lock handed over across the exec, the socket bound again; the
query snapshots the old image held are read back from their files at once (`Snapshots.preload`), and its symbol
tables are rebuilt at once from the facts cache (`LiveSync.rebuild_tables`), so neither the next question nor the
next edit pays for them. The standard library right after its cold index: 394 MB settled while its table was
held, for as long as it was; restarted 30 s after the index, 248 MB with the table rebuilt (2.5 s), 294 MB after
the next query, and an edit then took 0.11 s. A table of over `live.RELEASE_MAX_FILES` files holds the writer
longer while it is rebuilt (the kernel's 78,000 files: 26 s, an edit saved meanwhile waits for it), so with one
held the daemon waits BIG_TABLE_QUIET times as long. It looks only after something was let go or written since it
last looked (`note`), and never sooner than MIN_INTERVAL_S after the last restart in place of this pid (should
some start-up work leave that much behind each time, the daemon would otherwise restart over and over).

A first index fragments the most, and right after it is when a restart costs least, so an image that indexed a
repository whole (`LiveSync.built_cold`; the next image has not) waits only NEXUS_RECYCLE_AFTER_INDEX_S of quiet:
with every setting at its default, the standard library's daemon sat at 331-369 MB for the 33 s between the
queries and its restart, now for 9 s, then 232 MB (`memory_bench.py --defaults`). A question asked during the
restart waits ~1 s for it (the exec, the database's open and the snapshot's load), once: 0.88-1.01 s
(`memory_bench.py --restart-gap`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from . import config
from .parse import gcpause
from .store import anon_rss

MIN_INTERVAL_S = 600.0  # between two restarts in place of one pid
# A small daemon restarts for less than NEXUS_RECYCLE_MB: once what its allocator keeps freed is at least SHARE of
# its anonymous memory (and SHARE_MIN_MB). 1,000 generated files, their table let go and their database rested:
# 10 MB kept beyond the start's of 52 MB anonymous, and the restarted image holds 35 MB (a restart gives back more
# than the arenas' share: the C heap's free pages and the other threads' arenas too). At a fifth it did not restart.
SHARE = 0.15
SHARE_MIN_MB = 8
BIG_TABLE_QUIET = 10  # x NEXUS_RECYCLE_QUIET_S while a symbol table of over live.RELEASE_MAX_FILES files is held


class Recycler:
    """The writer's idle check (`Server._idle`); `request` is the daemon's `request_recycle`."""

    def __init__(self, request: Callable[[str], None], last_at: float | None = None) -> None:
        self.request = request
        self.last_at = last_at  # when this pid last restarted in place (time.time()), if it did
        self._due = False  # something was let go or written since the last look
        self.wrote_at = float("-inf")  # when the writer last wrote (monotonic; `note(wrote=True)`)
        self.requested = False
        self.baseline_mb: int | None = None  # what the arenas kept beyond their live objects once started

    def start(self) -> None:
        """The daemon begins to serve: what its allocator keeps now is what any start leaves."""
        self.baseline_mb = self.kept_mb()[0]

    @staticmethod
    def kept_mb() -> tuple[int, int]:
        """(MB the arenas keep beyond their live objects, MB of arenas) of this process."""
        stats = gcpause.pymalloc_stats()
        arenas = stats.get("arenasKB", 0)
        return (arenas - stats.get("blocksKB", 0)) // 1024, arenas // 1024

    def note(self, wrote: bool = False) -> None:
        """A symbol table was let go, or the writer wrote (`wrote`: the quiet starts again): worth a look once
        the daemon is quiet."""
        self._due = True
        if wrote:
            self.wrote_at = time.monotonic()

    def consider(self, live: Any, last_request_at: float) -> bool:
        """Ask for a restart in place when it is due (see the module docstring); True when asked."""
        limit_mb = int(config.get("NEXUS_RECYCLE_MB"))
        quiet_s = float(config.get("NEXUS_RECYCLE_QUIET_S"))
        quiet_for = time.monotonic() - max(last_request_at, self.wrote_at)
        if self.requested or not self._due or limit_mb <= 0:
            return False
        if self.last_at is not None and time.time() - self.last_at < MIN_INTERVAL_S:
            return False
        if live.long_rebuild():
            quiet_s *= BIG_TABLE_QUIET
        elif live.built_cold:
            quiet_s = min(quiet_s, float(config.get("NEXUS_RECYCLE_AFTER_INDEX_S")))
        if quiet_for < quiet_s:
            return False  # (still due: looked at again while the quiet lasts)
        self._due = False
        tables = live.tables_to_rebuild()
        if tables is None:
            return False
        kept, arenas = self.kept_mb()
        extra = kept - (self.baseline_mb or 0)
        anon_mb = (anon_rss() or 0) / 2**20
        if extra < limit_mb and not (extra >= SHARE_MIN_MB and extra >= SHARE * anon_mb):
            return False
        self.requested = True
        held = f"{len(tables)} symbol table(s) rebuilt after it" if tables else "no symbol table is held"
        self.request(f"Python's allocator keeps {kept} MB it freed in {arenas} MB of arenas ({self.baseline_mb} MB "
                     f"at start; NEXUS_RECYCLE_MB={limit_mb}; {anon_mb:.0f} MB anonymous in all); {held}")  # fmt: skip
        return True
