"""The composition root: builds the daemon's parts once, at start, and starts and stops them in order.

    Store (built closed by daemon.py) --+
    Server (the writer, bound) ---------+--> build() --> Parts --> Ctx.parts of every handler
                                                             \\--> start(): at the store's open (at once when
                                                                  repositories are registered, else on first
                                                                  need): registrations, watches, catch-up syncs,
                                                                  memory replay, history timer

Every dependency is explicit here: a part receives the parts it uses as constructor arguments (the writer as
a `Writer`, the memory service only a `Submit`), and what listens to committed batches or adds a section to
`status` is registered here, not at import time. ARCHITECTURE.md ("Composition root") has the picture.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from . import config, recovery
from . import ops as _ops  # noqa: F401  (importing the package registers every operation)
from .history.service import HistoryService
from .memory.service import MemoryService
from .ops import code as code_ops
from .ops import memory as memory_ops
from .parts import DaemonInfo, Parts
from .query import graphq
from .query.overlay import ViewSnapshots
from .query.snapshot import Snapshots
from .repos import Repo, RepoRegistry, prune_views, register
from .sync.counts import StatusCounts
from .sync.hookspool import HookSpool
from .sync.live import LiveSync

if TYPE_CHECKING:
    from .batch import CommittedBatch
    from .paths import Dirs
    from .store import Conn, Store
    from .writer import Writer

log = logging.getLogger(__name__)

SIDECAR = "repos.json"  # the registrations, beside the database (repos.RepoRegistry.save)


def build(info: DaemonInfo, store: Store, writer: Writer, request_stop: Callable[[], None]) -> Parts:
    """Every part, wired; nothing started yet (no thread but the watcher's settle timer, no job queued)."""
    dirs = info.dirs
    repos = RepoRegistry()
    repos.sidecar = dirs.data / SIDECAR
    live = LiveSync(repos, writer, dirs.cache, watch=not config.get("NEXUS_NO_WATCH"))
    history = HistoryService(dirs, repos, writer, resting=lambda: store.dormant)
    parts = Parts(
        info=info,
        store=store,
        writer=writer,
        repos=repos,
        live=live,
        hooks=HookSpool(dirs.hook_spool, repos, live, writer, history.read_new_commits),
        snapshots=(snapshots := Snapshots(dirs.data / "snapshots", float(config.get("NEXUS_SNAPSHOT_SAVE_S")))),
        memory=MemoryService(dirs.journal, writer.submit_internal, store.connect, ensure_ready=store.open),
        history=history,
        counts=StatusCounts(),
        request_stop=request_stop,
        views=ViewSnapshots(snapshots),
    )
    # After each committed batch, in this order: memory's links into code, history's change links, the
    # query snapshot (the read model most answers come from).
    live.listeners += [_relink_memory, history.relink, parts.snapshots.apply_batch]
    live.cold_listeners += [parts.snapshots.prebuild]  # a cold batch's snapshot, built while Kuzu writes it

    def database_damaged(reason: str) -> bool:  # set aside and rebuilt at the next start (daemon.py)
        began_on_damage = info.recovery is not None and str(info.recovery.get("reason", "")).startswith(
            recovery.DAMAGED_REASON
        )
        if began_on_damage and time.time() - info.started_at < float(config.get("NEXUS_DAMAGE_REPEAT_S")):
            # This run began on a file set aside for the same reason, minutes ago: a second damage so soon
            # points at the write itself, and setting files aside again would loop. The write fails (or the
            # compaction is refused); the log says why. Later in a long run, damage is set aside again.
            log.error("the graph was found damaged again soon after the database was rebuilt; not setting it aside twice")
            return False
        recovery.mark_database_damaged(dirs.state, reason)
        request_stop()
        return True

    live.on_database_damaged = database_damaged
    store.on_damaged = database_damaged
    live.view_listeners += [parts.views.set_overlay]  # a worktree's overlay -> its view's snapshot
    parts.status_sections += [
        lambda conn, args: code_ops.status_section(parts, conn, args),
        lambda conn, args: memory_ops.status_section(parts.memory),
    ]
    parts.before_rest += [
        lambda conn: parts.counts.refresh(conn, parts.repos.all()),
        lambda conn: _prime_broken_files(conn, parts.repos.all()),
    ]
    return parts


def _prime_broken_files(conn: Conn, repos: list[Repo]) -> None:
    for repo in repos:
        if repo.indexed_at is not None:
            graphq.broken_paths(conn, repo.id, repo.graph_version)


def start(parts: Parts) -> None:
    """Before the workers start. What needs the database (registrations, watches, catch-up syncs, the hook
    spool, memory replay, the history layer) runs once the store is open: now when the daemon opened it at
    start (`store_needed_at_start`), else at its first need (the first statement of a request, or memory's
    recall index), so a daemon with nothing registered holds no database (ARCHITECTURE.md, "Memory at rest")."""
    if parts.store.opened:
        _opened(parts)
    else:
        parts.store.on_open.append(lambda _store: _opened(parts))


def store_needed_at_start(dirs: Dirs) -> bool:
    """Registrations are watched and caught up from the start: open the database at once when the sidecar
    lists one (or when a database exists whose sidecar is missing or unreadable: open it to find out)."""
    sidecar = dirs.data / SIDECAR
    if not sidecar.exists():
        return dirs.db.exists()
    try:
        data = json.loads(sidecar.read_text())
    except (OSError, ValueError):
        return True
    return not isinstance(data, list) or bool(data)


def _opened(parts: Parts) -> None:
    """Run once by the thread that opened the store, before any other statement reaches the database."""
    conn = parts.store.connect()
    try:
        _load_repos(parts, conn)
    finally:
        conn.close()
    parts.live.watch_all()
    parts.hooks.start()
    parts.live.catch_up(unclean_stop=parts.info.unclean_stop)
    parts.live.rebuild_tables(parts.info.rebuild_tables)  # (after the catch-up: queued behind it)
    if parts.info.load_snapshots:
        threading.Thread(target=_preload_snapshots, args=(parts, parts.info.load_snapshots),
                         name="snapshot-preload", daemon=True).start()  # fmt: skip
    conn = parts.store.connect()
    try:
        parts.memory.start(conn, recreated=bool(parts.store.schema_report.get("memory_recreated")))
    finally:
        conn.close()
    parts.history.start()


def _preload_snapshots(parts: Parts, repo_ids: tuple[str, ...]) -> None:
    """The query snapshots the image before a restart in place held, read back from their files before anyone
    asks (`Snapshots.preload`)."""
    for rid in repo_ids:
        repo = parts.repos.get(rid)
        if repo is None or repo.missing:
            continue
        try:
            parts.snapshots.preload(repo)
        except Exception:  # (the first reader loads it instead)
            log.exception("loading the query snapshot of %s after the restart in place failed", repo.root)


def stop(parts: Parts) -> None:
    """After the writer drained: stop in the reverse order of `start`."""
    parts.history.stop()
    # The journal stays open: every record was fsynced as it was written.
    parts.memory.stop()
    parts.hooks.stop()
    parts.live.stop()
    parts.snapshots.flush()  # a query snapshot changed since its last save: saved, so a restart answers at once


def _load_repos(parts: Parts, conn: Conn) -> None:
    reg = parts.repos
    reg.load(conn)
    # A database moved aside (or lost) took its Repository nodes with it: re-register what the sidecar
    # remembers, so the catch-up rebuilds those code graphs from the files (memory comes back from the
    # journal on its own).
    if parts.info.recovery is not None or not reg.all():
        for entry in reg.saved():
            if reg.get(str(entry.get("id"))) is None and os.path.isdir(entry["root"]):
                register(conn, reg, entry["root"], str(entry.get("userId") or ""))
                log.warning("re-registered %s after the database was lost; rebuilding its graph", entry["root"])
    prune_views(conn, reg)  # worktrees removed while the daemon was down
    reg.save()  # databases from before the sidecar existed get one now


def _relink_memory(repo: Repo, batch: CommittedBatch, conn: Conn) -> None:
    """A cold build replaced every symbol: memory's links into code (ABOUT, APPLIES_TO) are rebuilt from the
    properties the memory nodes keep. Incremental batches restore those edges themselves (graphwrite)."""
    if batch.mode == "cold":
        from .memory import relink

        relink(conn, repo.id)
