"""The daemon's parts, as one typed value: what a handler may use (`Ctx.parts`), built once at start by the
composition root (`nexusd/app.py`). Each field is one part with its own type; nothing here is looked up by
name, and no part holds the daemon.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .history.service import HistoryService
    from .memory.service import MemoryService
    from .opargs import Scoped
    from .paths import Dirs
    from .query.overlay import ViewSnapshots
    from .query.snapshot import Snapshots
    from .repos import RepoRegistry
    from .store import Conn, Store
    from .sync.counts import StatusCounts
    from .sync.hookspool import HookSpool
    from .sync.live import LiveSync
    from .writer import Writer

# An area's section of `status`: fn(conn, args) -> (name, value), in the order the composition root lists them;
# args are `status`'s arguments (which repository, which user).
StatusSection = Callable[["Conn", "Scoped"], tuple[str, Any]]


@dataclass(frozen=True)
class DaemonInfo:
    """Facts about this daemon process, fixed at start."""

    pid: int
    started_at: float
    dirs: Dirs
    recovery: dict[str, Any] | None  # the database was moved aside as unopenable: when, where, why
    unclean_stop: bool  # the last run did not stop cleanly: every code graph is rebuilt from the files
    recycles: int = 0  # how many times this pid restarted itself in place (`Daemon.request_recycle`)
    # The repositories whose symbol tables the image before a restart in place held: rebuilt at once from the
    # facts cache (`LiveSync.rebuild_tables`), so their next edit does not pay for it.
    rebuild_tables: tuple[str, ...] = ()
    # The repositories whose query snapshots that image held: loaded at once from their saved files
    # (`Snapshots.preload`), so the first question after the restart does not wait for the read.
    load_snapshots: tuple[str, ...] = ()


@dataclass
class Parts:
    info: DaemonInfo
    store: Store
    writer: Writer
    repos: RepoRegistry
    live: LiveSync
    hooks: HookSpool
    snapshots: Snapshots
    memory: MemoryService
    history: HistoryService
    counts: StatusCounts
    request_stop: Callable[[], None]
    views: ViewSnapshots  # the snapshots of the repositories' other worktrees (baseline + overlay)
    status_sections: list[StatusSection] = field(default_factory=list)
    # What the areas read of the graph ahead of its questions, run by the writer just before the database rests
    # (`Server._idle`), so the answers they give while it rests do not open it again (status's counts, impact's
    # files that did not parse; ARCHITECTURE.md, "Memory at rest").
    before_rest: list[Callable[[Conn], object]] = field(default_factory=list)
    # The daemon's restart in place (`Daemon.request_recycle`, with its reason), set by the daemon once composed.
    request_recycle: Callable[[str], None] | None = None
