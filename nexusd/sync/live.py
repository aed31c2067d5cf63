"""Live sync: the path from a change on disk to a committed batch, and what hears of each batch.

    watch (watcher.py) -> settle -> flush job on the writer -> `flush_dirty` -> `run_sync` -> RepoSync.sync
                                                                                           -> listeners

One `LiveSync` per daemon, built by the composition root (`nexusd/app.py`) with the parts it needs: the
repository registry, the writer (to queue flush and rebuild jobs), the facts cache directory. It owns the
sync engines (one `RepoSync` per repository), the parse pool and the watcher. Everything here except
`watch_repo` and the watcher's own threads runs on the writer thread.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import config
from ..batch import CommittedBatch, FileData
from ..errors import Unavailable
from ..parse import gcpause
from ..parse.facts import FileFacts
from ..repos import Repo, RepoRegistry, cold_write_pending, record_build, record_failure
from ..store import StoreBusy, StoreError
from . import graphwrite
from .indexer import FactsCache, RepoSync, SyncReport, build_summary, release_heap
from .parsepool import ParsePool, PoolClosed
from .views import ViewSync
from .watcher import Watcher

if TYPE_CHECKING:
    from ..resolve.base import FileTable
    from ..store import Conn
    from ..writer import Writer

log = logging.getLogger(__name__)
# A sync slower than this is logged with its phases (what a slow edit -> queryable spent its time on).
SLOW_SYNC_S = float(config.get("NEXUS_SLOW_SYNC_MS")) / 1000

Progress = Callable[[dict[str, Any]], None]
# Called on the writer thread after a batch commits: fn(repo, batch, conn), the batch as a value. The query
# snapshots, memory's links into code and history's change links hang off this (registered by the
# composition root, nexusd/app.py).
Listener = Callable[[Repo, CommittedBatch, "Conn"], None]
# Called on the writer thread after a view's overlay changed: fn(repo, view root, overlay files). The query
# side builds the view's snapshot from it (registered by the composition root).
ViewListener = Callable[[Repo, str, "dict[str, FileData | None]"], None]
# Called on the writer thread during a cold sync, after resolution and before the graph write: fn(repo, files),
# `files` being what the listeners will get as the batch's files if it commits (so the query snapshot can be
# built while Kuzu writes); fn(repo, None) when that batch then failed.
ColdListener = Callable[[Repo, "list[tuple[str, FileData]] | None"], None]
RELEASE_MAX_FILES = 10_000  # a larger repository keeps its symbol table when idle (`release_idle`)
# How long a stop waits for a facts cache pack still being written (the standard library's takes ~1-2 s): the
# whole stop must fit in the service manager's TimeoutStopSec (30 s), the snapshots' save after it included.
PACK_FLUSH_S = 10.0
VIEW_SEP = "|"  # watch keys: a repository id, or "<repository id>|<view root>" for a view


def view_key(repo_id: str, root: str) -> str:
    return f"{repo_id}{VIEW_SEP}{root}"


def _quiet(data: dict[str, Any]) -> None:
    return None


class LiveSync:
    def __init__(self, repos: RepoRegistry, writer: Writer, cache_dir: Path, *, watch: bool = True):
        self.repos = repos
        self.writer = writer
        self.cache_dir = cache_dir
        self.pool = ParsePool()  # its processes start when a sync first needs them
        self.engines: dict[str, RepoSync] = {}
        self.listeners: list[Listener] = []
        self.cold_listeners: list[ColdListener] = []
        self.views: dict[str, ViewSync] = {}  # by view_key: the overlays of the repositories' other worktrees
        self.view_listeners: list[ViewListener] = []
        self.watcher: Watcher | None = Watcher(self._flush_job) if watch else None
        # Called with the reason when a cold write finds relationships it did not write (`graphwrite.GraphDamaged`),
        # or the idle check finds a graph failing its counts (`check_after_deletes`): the database file is damaged
        # past what a rebuild inside it mends; the daemon sets it aside and stops (True), or declines (False).
        self.on_database_damaged: Callable[[str], bool] | None = None
        self._checked_folds = 0  # Store.delete_folds when the graphs were last checked (check_after_deletes)
        # The counts scan each repository's edges, so a day of edits pays them at most once a minute (the
        # setting), in the writer's idle time.
        self._check_every_s = float(config.get("NEXUS_GRAPH_CHECK_S"))
        self._checked_at = -self._check_every_s
        # This image indexed a repository whole: what that fragmented is the most a restart in place gives back,
        # so `recycle.Recycler` waits only NEXUS_RECYCLE_AFTER_INDEX_S of quiet for it (the next image starts False).
        self.built_cold = False

    # -- engines ------------------------------------------------------------------------------------

    def engine(self, repo: Repo) -> RepoSync:
        eng = self.engines.get(repo.id)
        if eng is None:
            eng = self.engines[repo.id] = RepoSync(repo.id, repo.root, self.cache_dir, lambda: self.pool)
        return eng

    def release_idle(self) -> int:
        """The writer's idle upkeep: let go of the symbol table and facts of every repository no sync needed for
        NEXUS_SYNC_IDLE_S (`RepoSync.release`; its query snapshot stays, and its next edit rebuilds the table
        from the facts cache, ~0.8 ms a file). Kept: the tables of repositories with live worktree views (their
        overlays are resolved against them) and of repositories over RELEASE_MAX_FILES files, whose rebuild
        would hold their next edit too long (the kernel's 78,000 files). Returns how many were let go."""
        idle = float(config.get("NEXUS_SYNC_IDLE_S"))
        if idle <= 0:
            return 0
        now = time.monotonic()
        with_views = {key.split(VIEW_SEP, 1)[0] for key in self.views}
        released = 0
        for rid, eng in self.engines.items():
            files = len(eng.facts)
            if rid in with_views or now - eng.used_at < idle or files > RELEASE_MAX_FILES:
                continue
            if eng.release():
                released += 1
                log.info("let go of the symbol table of %s (%d files; no sync needed it for %.0f s)", eng.root,
                         files, now - eng.used_at)  # fmt: skip
        if released:
            # (No forced full collection: a table let go is freed as its cycles are broken, `RepoIndex.dismantle`,
            # and a collection reaches the whole heap, ~14-20 s with the Linux kernel's graph held beside it.)
            release_heap(collect=False)
        return released

    def tables_to_rebuild(self) -> list[str] | None:
        """The repositories whose symbol tables are in memory, which a restart in place would let go and the next
        image rebuild at once from the facts cache (`rebuild_tables`); None when one held may not be let go so:
        a worktree view's (its overlays are resolved against it). `recycle.Recycler` asks."""
        if self.views:
            return None
        return sorted(rid for rid, eng in self.engines.items() if eng.index is not None)

    def long_rebuild(self) -> bool:
        """A symbol table of over RELEASE_MAX_FILES files is held: its rebuild after a restart in place holds the
        writer for about 0.3 ms a file (the kernel's 78,000: 26 s), so `recycle.Recycler` waits longer for it."""
        return any(eng.index is not None and len(eng.facts) > RELEASE_MAX_FILES for eng in self.engines.values())

    def rebuild_tables(self, repo_ids: Iterable[str]) -> None:
        """Queue the rebuild of these repositories' symbol tables from the facts cache on the writer (after a
        restart in place that let them go: what a cold index fragmented goes, the table stays)."""
        for rid in repo_ids:
            self.writer.submit_internal(functools.partial(self._rebuild_table, rid))

    def _rebuild_table(self, repo_id: str, conn: Conn) -> None:
        repo = self.repos.get(repo_id)
        if repo is None or repo.missing:
            return
        eng = self.engine(repo)
        if eng.index is None:
            t0 = time.perf_counter()
            eng.warm(conn)
            log.info("rebuilt the symbol table of %s after the restart in place (%d files, %.1f s)", repo.root,
                     len(eng.facts), time.perf_counter() - t0)  # fmt: skip

    def table_state(self, repo: Repo) -> str:
        """For `status`: the repository's symbol table is in memory ("held"), was let go when idle ("released": the
        next edit rebuilds it from the facts cache), or was not built in this run ("not built": the same)."""
        eng = self.engines.get(repo.id)
        if eng is not None and eng.index is not None:
            return "held"
        return "released" if eng is not None and eng.released else "not built"

    def skipped(self, repo: Repo) -> dict[str, Any]:
        """{reason: {count, examples}} of what the walk and the parser left out (none known before a sync ran)."""
        eng = self.engines.get(repo.id)
        return eng.skipped_summary() if eng is not None else {}

    def forget(self, repo_id: str) -> None:
        """The repository left (or moved): stop watching it and drop its engine (it holds the old root)."""
        if self.watcher is not None:
            self.watcher.unwatch(repo_id)
        eng = self.engines.pop(repo_id, None)
        if eng is not None:
            eng.let_go_index()
            gcpause.dropped(eng)
        for key in [k for k in self.views if k.split(VIEW_SEP, 1)[0] == repo_id]:
            self.forget_view(repo_id, key.split(VIEW_SEP, 1)[1])

    def forget_view(self, repo_id: str, root: str) -> None:
        """A view left (its worktree removed, or forgotten): stop watching it and drop its overlay."""
        key = view_key(repo_id, root)
        if self.watcher is not None and self.watcher.get(key) is not None:
            self.watcher.unwatch(key)
        view = self.views.pop(key, None)
        if view is not None:
            gcpause.dropped(view)

    # -- views (the repository's other worktrees) ---------------------------------------------------------

    def sync_view(self, conn: Conn, repo: Repo, root: str, progress: Progress = _quiet, *,
                  paths: list[str] | None = None) -> SyncReport:  # fmt: skip
        """Scan one view and recompute its overlay against the baseline (on the writer); nothing is written to
        the graph. The baseline is synced first if it has no graph yet."""
        base = self.engine(repo)
        if repo.indexed_at is None:
            self.run_sync(conn, repo, progress)
        if base.known is None:
            base.known = graphwrite.known_files(conn, repo.id)
        key = view_key(repo.id, root)
        vs = self.views.get(key)
        if vs is None:
            vs = self.views[key] = ViewSync(repo.id, root, self.cache_dir, lambda: self.pool,
                                            functools.partial(self._shared_facts, repo.id),
                                            functools.partial(self._shared_table, repo.id))  # fmt: skip
        try:
            report = vs.sync(conn, base, progress, paths=paths)
        except Exception:
            self.views.pop(key, None)  # scanned again from nothing next time
            raise
        view = repo.views.get(root)
        if vs.status is not None and view is not None:
            # The state its answers carry, from the `git status` the scan ran (`ViewSync._git_same`).
            view.take_status(*vs.status)
            vs.status = None
        self._publish_view(repo, root, vs)
        return report

    def _views_of(self, repo_id: str) -> Iterator[ViewSync]:
        return (vs for key, vs in self.views.items() if key.split(VIEW_SEP, 1)[0] == repo_id)

    def _shared_facts(self, repo_id: str, path: str, digest: str) -> FileFacts | None:
        """Facts of `path` with content `digest` that one of the repository's views already holds."""
        return next((held for vs in self._views_of(repo_id) if (held := vs.held(path, digest)) is not None), None)

    def _shared_table(self, repo_id: str, path: str, facts: FileFacts) -> FileTable | None:
        """The symbol table one of the repository's views made of these very facts (`_shared_facts`)."""
        return next((t for vs in self._views_of(repo_id) if (t := vs.table_of(path, facts)) is not None), None)

    def _publish_view(self, repo: Repo, root: str, vs: ViewSync) -> None:
        view = repo.views.get(root)
        if view is not None:
            view.overlay_files = sum(1 for p in vs.files if p in vs.facts or vs.files[p] is None)
            view.synced_at = time.time()
            view.forget_state()  # the files moved: the next answer counts the dirty files again
        _notify(self.view_listeners, "view", repo, root, vs.files)

    def _rebase_views(self, conn: Conn, repo: Repo, batch: CommittedBatch) -> list[str]:
        """A baseline batch committed: each view of the repository whose overlay it can move re-resolves its
        overlay against it (`ViewSync.touched_by`); the others keep theirs. Returns the roots re-based."""
        base = self.engine(repo)
        rebased = []
        for key, vs in list(self.views.items()):
            rid, root = key.split(VIEW_SEP, 1)
            if rid != repo.id:
                continue
            try:
                if not vs.touched_by(base, batch):
                    continue
                rebased.append(root)
                vs.rebase(conn, base, _quiet)
            except Exception:
                log.exception("rebasing the view %s failed; scanning it again on its next sync", root)
                self.views.pop(key, None)
                continue
            self._publish_view(repo, root, vs)
        return rebased

    # -- sync ---------------------------------------------------------------------------------------

    def run_sync(
        self,
        conn: Conn,
        repo: Repo,
        progress: Progress = _quiet,
        *,
        paths: list[str] | None = None,
        full: bool = False,
        recovery: bool = False,
    ) -> SyncReport:
        """Sync one repository on the writer thread and record the outcome on its Repository node. `recovery`:
        this is the rebuild of a graph found damaged (it is not followed by another one if it fails too)."""
        eng = self.engine(repo)
        try:
            for attempt in (1, 2):
                try:
                    report = eng.sync(
                        conn, progress, paths=paths, full=full, between=lambda: self.writer.service_quick(conn),
                        resolved=functools.partial(self._resolved, repo) if self.cold_listeners else None,
                    )
                    break
                except StoreBusy as exc:
                    if attempt == 2:
                        raise
                    # A COPY's forced checkpoint timed out on a read transaction we could not hold back; the
                    # batch rolled back whole, so running it again (from a fresh in-memory view) is safe.
                    log.warning("sync of %s: %s; retrying once", repo.root, exc)
                    eng.reset()
        except Exception as exc:
            if isinstance(exc, PoolClosed):  # the daemon is stopping: the next start syncs again
                log.info("sync of %s stopped: %s", repo.root, exc)
            else:
                log.exception("sync of %s failed", repo.root)
            if self.cold_listeners:
                self._resolved(repo, None)  # what was handed before the write will not be committed
            eng.reset()  # the in-memory view may be ahead of the graph: rebuild it next time
            record_failure(conn, repo, build_summary(SyncReport("failed"), "failed", f"{type(exc).__name__}: {exc}"))
            if isinstance(exc, graphwrite.GraphDamaged) and self.on_database_damaged is not None:
                reason = f"the graph of {repo.root} held relationships no write made ({exc})"
                if self.on_database_damaged(reason):
                    raise self._database_damaged(reason) from exc
            self._check_after_failure(conn, rebuilding=recovery)
            raise
        if report.mode == "noop":
            if repo.last_build is None or repo.last_build.get("outcome") != "ok":
                repo.last_build = {"outcome": "ok", "mode": "noop"}
            if repo.indexed_at is None:
                record_build(conn, repo, build_summary(report, "ok"), cold=False)
            return report
        record_build(conn, repo, build_summary(report, "ok"), cold=report.mode == "cold")
        self.built_cold = self.built_cold or report.mode == "cold"
        t0 = time.perf_counter()
        batch = eng.committed(report, repo.graph_version)
        _notify(self.listeners, "graph", repo, batch, conn)
        if next(self._views_of(repo.id), None) is not None:
            report.views_rebased = self._rebase_views(conn, repo, batch)
        report.seconds["listeners"] = time.perf_counter() - t0
        if report.seconds.get("total", 0.0) + report.seconds["listeners"] >= SLOW_SYNC_S:
            log.info("sync of %s took long: %s, %d parsed, %d re-resolved; seconds %s", repo.root, report.mode,
                     report.parsed, report.affected, {k: round(v, 2) for k, v in report.seconds.items()})  # fmt: skip
        return report

    def _resolved(self, repo: Repo, files: list[tuple[str, FileData]] | None) -> None:
        _notify(self.cold_listeners, "cold-sync", repo, files)

    def graphs_checked(self, delete_folds: int) -> bool:
        """Whether the graphs were checked since the last checkpoint that folded in deletes (`check_after_deletes`):
        until then the database does not rest, since a kill while it rests counts as a clean stop."""
        return delete_folds == self._checked_folds

    def check_after_deletes(self, conn: Conn, delete_folds: int) -> None:
        """The writer's idle upkeep: after a checkpoint folded in deletes (`Store.delete_folds` moved), check
        every indexed repository's graph (cheap invariant counts), at most every NEXUS_GRAPH_CHECK_S. Kuzu 0.11.3
        can damage a relationship table at such a checkpoint, in a repository no write touched (a lost CONTAINS,
        HAS_FILE edges no statement wrote; `bench/kuzu_damage_probe.py`), and a rebuild inside the file rarely
        mends it. Found here, not at that repository's next cold write, the file is handed to the start-up
        recovery (`on_database_damaged`: set aside, every graph rebuilt, memory from the journal); where that
        is refused (within NEXUS_DAMAGE_REPEAT_S of a start that set a file aside), the repository is rebuilt
        as after a failed write."""
        if delete_folds == self._checked_folds or time.monotonic() - self._checked_at < self._check_every_s:
            return
        self._checked_folds, self._checked_at = delete_folds, time.monotonic()
        for repo, problems in self._failing_graphs(conn, count_errors=False):
            if repo.damaged:  # already waiting for its rebuild
                continue
            reason = f"the graph of {repo.root} failed its counts after a checkpoint that folded in deletes ({'; '.join(problems)})"
            log.error("%s", reason)
            if self.on_database_damaged is not None and self.on_database_damaged(reason):
                return  # the daemon stops; the next start sets the file aside
            self._to_rebuild(repo, problems)

    def _check_after_failure(self, conn: Conn, *, rebuilding: bool) -> None:
        """After a failed write, check every repository's graph (cheap invariant counts) and rebuild the damaged
        ones from nothing. Kuzu 0.11.3's rollback of a transaction that had copied relationships can empty whole
        relationship tables (HAS_FILE, CONTAINS, IMPORTS) while the nodes stay, so "rolled back" is not trusted:
        the last good graph is either verified intact or rebuilt. A rebuild that itself failed is not retried
        here (no loop); the next sync or restart tries again."""
        for other, problems in self._failing_graphs(conn, count_errors=True):
            log.error("the graph of %s is damaged after a failed write (%s): rebuilding it", other.root, "; ".join(problems))
            self._to_rebuild(other, problems, submit=not rebuilding)

    def _failing_graphs(self, conn: Conn, *, count_errors: bool) -> Iterator[tuple[Repo, list[str]]]:
        """Every indexed repository whose graph fails its invariant counts, with what is wrong. One that a chunked
        cold write left partial is marked damaged and not counted (its next sync rebuilds it, the marker).
        `count_errors`: a count that fails is a problem too (else it is logged and the repository passed over)."""
        try:
            partial = cold_write_pending(conn)
        except StoreError:
            partial = set()
        for repo in self.repos.all():
            if repo.id in partial:
                repo.damaged = ["a cold write failed part way: the graph is partial until it is rebuilt"]
                continue
            if repo.indexed_at is None:
                continue
            try:
                problems = graphwrite.verify_counts(conn, repo.id)
            except StoreError as exc:
                if not count_errors:
                    log.warning("checking the graph of %s failed: %s", repo.root, exc)
                    continue
                problems = [f"counting failed: {exc}"]
            if problems:
                yield repo, problems

    def _to_rebuild(self, repo: Repo, problems: list[str], *, submit: bool = True) -> None:
        """Mark a repository's graph damaged (`status` shows it stale), drop its engine's view, and queue its
        rebuild from nothing on the writer (`submit`)."""
        repo.damaged = problems
        self.engine(repo).reset()
        if submit:
            self.writer.submit_internal(functools.partial(self._rebuild, repo))

    @staticmethod
    def _database_damaged(reason: str) -> Unavailable:
        """A cold write deleted a repository's graph, wrote it whole in one go, and counted relationships it did
        not write. Kuzu 0.11.3 can damage a relationship table's storage when a checkpoint folds in deletes
        (ARCHITECTURE.md, "Invariants"), and a rebuild inside that file keeps the damage (measured: 15 of 1,549
        rebuilds mended it, `bench/kuzu_damage_probe.py`). So the daemon hands the file over to the start-up
        recovery: it is moved aside at the next start, every registered repository is indexed again from its
        files and memory comes back from the journal. This request is answered `unavailable`."""
        log.error("%s: the database file is damaged; it is set aside and rebuilt at the next start", reason)
        return Unavailable(
            "the database file is damaged (relationships no write made); the daemon restarts with a rebuilt one",
            hint="run the command again: the daemon starts afresh, re-indexes every repository from its files "
            "and restores memory from its journal",
        )

    def _rebuild(self, repo: Repo, conn: Conn) -> None:
        self.run_sync(conn, repo, full=True, recovery=True)

    # -- watching -----------------------------------------------------------------------------------

    def watch_repo(self, repo: Repo) -> None:
        w = self.watcher
        if w is None or config.get("NEXUS_NO_WATCH"):
            return
        try:
            w.watch(repo.id, repo.root)
        except OSError as exc:
            log.warning("cannot watch %s: %s", repo.root, exc)
            return
        repo.watching = True
        repo.pending_fn = lambda: w.pending(repo.id)

    def watch_view(self, repo: Repo, root: str) -> None:
        w = self.watcher
        if w is None or config.get("NEXUS_NO_WATCH"):
            return
        try:
            w.watch(view_key(repo.id, root), root)
        except OSError as exc:
            log.warning("cannot watch %s: %s", root, exc)

    def rescan_view(self, repo: Repo, root: str) -> None:
        """A checkout in a view: that view only is scanned again (once its events settle)."""
        key = view_key(repo.id, root)
        if self.watcher is not None and self.watcher.get(key) is not None:
            self.watcher.rescan(key)
        else:
            self.writer.submit_internal(lambda c: self.sync_view(c, repo, root))

    def flush_view(self, conn: Conn, repo: Repo, root: str) -> SyncReport | None:
        w = self.watcher
        if w is None:
            return None
        key = view_key(repo.id, root)
        dirty, full = w.take(key)
        try:
            view = repo.views.get(root)
            if view is None or view.missing:
                return None
            if full or dirty:
                return self.sync_view(conn, repo, root, paths=None if full else sorted(dirty))
            return None
        finally:
            w.done(key)

    def watched(self, repo: Repo) -> bool:
        return self.watcher is not None and self.watcher.get(repo.id) is not None

    def barrier(self, repo: Repo) -> bool:
        """True once the watcher has seen a cookie written now: every change made before is in the dirty set."""
        return self.watcher is not None and self.watcher.get(repo.id) is not None and self.watcher.barrier(repo.id)

    def rescan(self, repo: Repo) -> None:
        """A checkout or rebase: reconcile with a full stat walk once events settle (or sync now, unwatched)."""
        if self.watched(repo):
            assert self.watcher is not None
            self.watcher.rescan(repo.id)
        else:
            self.writer.submit_internal(lambda c: self.run_sync(c, repo))

    def flush_dirty(self, conn: Conn, repo: Repo, progress: Progress = _quiet) -> SyncReport | None:
        """On the writer: sync what the watcher collected for `repo` (None when nothing was dirty)."""
        w = self.watcher
        if w is None:
            return None
        dirty, full = w.take(repo.id)
        try:
            if repo.missing:  # the directory was deleted or moved: keep the last graph, never sync it away
                return None
            if full:
                return self.run_sync(conn, repo, progress)
            if dirty:
                return self.run_sync(conn, repo, progress, paths=sorted(dirty))
            return None
        finally:
            w.done(repo.id)

    def _flush_job(self, repo_id: str) -> None:
        def job(conn: Conn) -> None:
            if VIEW_SEP in repo_id:
                rid, root = repo_id.split(VIEW_SEP, 1)
                owner = self.repos.get(rid)
                if owner is not None:
                    self.flush_view(conn, owner, root)
                return
            repo = self.repos.get(repo_id)
            if repo is not None:
                self.flush_dirty(conn, repo)

        self.writer.submit_internal(job)

    # -- lifecycle ----------------------------------------------------------------------------------

    def watch_all(self) -> None:
        for repo in self.repos.all():
            self.watch_repo(repo)
            for view in repo.live_views():
                self.watch_view(repo, view.root)

    def catch_up(self, *, unclean_stop: bool) -> None:
        """Queue a sync of every registered repository: changes made while the daemon was down (and graphs a
        schema change dropped). After an unclean stop every code graph is rebuilt: WAL replay after kill -9 was
        seen to drop a committed CONTAINS edge (Kuzu 0.11.3), and the code layer is derived, so a rebuild is the
        cheap way to be sure."""
        for repo in self.repos.all():
            full = repo.indexed_at is None or unclean_stop
            self.writer.submit_internal(functools.partial(self._catch_up, repo, full))
            for view in repo.live_views():  # overlays live in memory only: every view is scanned again
                self.writer.submit_internal(functools.partial(self._catch_up_view, repo, view.root))

    def _catch_up(self, repo: Repo, full: bool, conn: Conn) -> None:
        self.run_sync(conn, repo, full=full)

    def _catch_up_view(self, repo: Repo, root: str, conn: Conn) -> None:
        if root in repo.views and not repo.views[root].missing:
            self.sync_view(conn, repo, root)

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        self.pool.close()
        if not FactsCache.flush_packs(PACK_FLUSH_S):
            log.warning("a facts cache pack was still being written after %s s: the next start parses its files again",
                        PACK_FLUSH_S)


def _notify(listeners: list[Callable[..., Any]], what: str, *args: Any) -> None:
    """Call each listener; one that fails is logged and never fails the sync that called it."""
    for listener in listeners:
        try:
            listener(*args)
        except Exception:
            log.exception("%s listener failed", what)
