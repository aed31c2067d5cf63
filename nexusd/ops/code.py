"""The code graph's lifecycle operations: index (register + build), sync, repos, forget; status sections.

All graph writes run on the writer lane; a failed build rolls back, so the last good graph stays in place
and status reports the failure beside it.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import BadRequest, Forbidden, NotFound
from ..registry import REPO_ARG, USER_ARG, Ctx, op, schema
from ..repos import Repo, registry, repo_id_for, require_repo, with_freshness
from ..store import StoreError
from ..sync import graphwrite
from ..sync.indexer import RepoSync, SyncReport, build_summary
from ..sync.parsepool import ParsePool
from ..sync.watcher import FileTrigger, Watcher
from .core import STATUS_SECTIONS

if TYPE_CHECKING:
    from ..daemon import Daemon
    from ..store import Conn

log = logging.getLogger(__name__)

# Called on the writer thread after a batch commits: fn(daemon, repo, report, conn). Search indexes and
# memory staleness hang off this.
GRAPH_LISTENERS: list[Callable[[Daemon, Repo, SyncReport, Conn], None]] = []
_pool_lock = threading.Lock()


def parse_pool(daemon: Daemon) -> ParsePool:
    with _pool_lock:
        pool = daemon.services.get("parsepool")
        if pool is None:
            pool = daemon.services["parsepool"] = ParsePool()
        return pool


def engine(daemon: Daemon, repo: Repo) -> RepoSync:
    engines: dict[str, RepoSync] = daemon.services.setdefault("engines", {})
    eng = engines.get(repo.id)
    if eng is None:
        eng = engines[repo.id] = RepoSync(repo.id, repo.root, daemon.dirs.cache, lambda: parse_pool(daemon))
    return eng


def run_sync(
    daemon: Daemon,
    conn: Conn,
    repo: Repo,
    progress: Callable[[dict[str, Any]], None] = lambda d: None,
    *,
    paths: list[str] | None = None,
    full: bool = False,
    recovery: bool = False,
) -> SyncReport:
    """Sync one repository on the writer thread and record the outcome on its Repository node. `recovery`:
    this is the rebuild of a graph found damaged (it is not followed by another one if it fails too)."""
    eng = engine(daemon, repo)
    try:
        for attempt in (1, 2):
            try:
                report = eng.sync(
                    conn, progress, paths=paths, full=full, between=lambda: daemon.server.service_quick(conn)
                )
                break
            except StoreError as exc:
                if attempt == 2 or "checkpoint" not in str(exc).lower():
                    raise
                # A COPY's forced checkpoint timed out on a read transaction we could not hold back; the
                # batch rolled back whole, so running it again (from a fresh in-memory view) is safe.
                log.warning("sync of %s: %s; retrying once", repo.root, exc)
                eng.reset()
    except Exception as exc:
        log.exception("sync of %s failed", repo.root)
        eng.reset()  # the in-memory view may be ahead of the graph: rebuild it next time
        summary = build_summary(SyncReport("failed"), "failed", f"{type(exc).__name__}: {exc}")
        conn.execute("MATCH (r:Repository {id: $id}) SET r.lastBuild = $b", {"id": repo.id, "b": summary})
        repo.last_build = json.loads(summary)
        _check_after_failure(daemon, conn, rebuilding=recovery)
        raise
    if report.mode == "noop":
        if repo.last_build is None or repo.last_build.get("outcome") != "ok":
            repo.last_build = {"outcome": "ok", "mode": "noop"}
        if repo.indexed_at is None:
            _record(conn, repo, report)
        return report
    _record(conn, repo, report)
    t0 = time.perf_counter()
    for listener in GRAPH_LISTENERS:
        try:
            listener(daemon, repo, report, conn)
        except Exception:  # a listener must never fail a committed sync
            log.exception("graph listener failed")
    report.seconds["listeners"] = time.perf_counter() - t0
    return report


def _check_after_failure(daemon: Daemon, conn: Conn, *, rebuilding: bool) -> None:
    """After a failed write, check every repository's graph (cheap invariant counts) and rebuild the damaged
    ones from nothing. Kuzu 0.11.3's rollback of a transaction that had copied relationships can empty whole
    relationship tables (HAS_FILE, CONTAINS, IMPORTS) while the nodes stay, so "rolled back" is not trusted:
    the last good graph is either verified intact or rebuilt. A rebuild that itself failed is not retried
    here (no loop); the next sync or restart tries again."""
    for other in registry(daemon).all():
        if other.indexed_at is None:
            continue
        try:
            problems = graphwrite.verify_counts(conn, other.id)
        except StoreError as exc:
            problems = [f"counting failed: {exc}"]
        if not problems:
            continue
        log.error("the graph of %s is damaged after a failed write (%s): rebuilding it", other.root, "; ".join(problems))
        other.damaged = problems
        engine(daemon, other).reset()
        if not rebuilding:
            daemon.server.submit_internal(lambda c, r=other: run_sync(daemon, c, r, full=True, recovery=True))


def _record(conn: Conn, repo: Repo, report: SyncReport) -> None:
    summary = build_summary(report, "ok")
    now = time.time()
    conn.execute(
        "MATCH (r:Repository {id: $id}) SET r.graphVersion = $v, r.indexedAt = $at, r.lastBuild = $b",
        {"id": repo.id, "v": repo.graph_version + 1, "at": now, "b": summary},
    )
    repo.graph_version += 1
    repo.indexed_at = now
    repo.last_build = json.loads(summary)
    if report.mode == "cold":
        repo.damaged = None


def register(conn: Conn, daemon: Daemon, root: str, user: str) -> Repo:
    reg = registry(daemon)
    rid = repo_id_for(root)
    repo = reg.get(rid)
    if repo is not None:
        return repo
    name = os.path.basename(root.rstrip(os.sep)) or root
    conn.execute(
        "MERGE (r:Repository {id: $id}) ON CREATE SET r.root = $root, r.name = $name, r.userId = $user, "
        "r.graphVersion = 0, r.registeredAt = $at",
        {"id": rid, "root": root, "name": name, "user": user, "at": time.time()},
    )
    repo = Repo(id=rid, root=root, name=name, user_id=user)
    reg.put(repo)
    return repo


def _root_arg(args: dict[str, Any]) -> str:
    path = args.get("repo")
    if not path:
        raise BadRequest("`repo` (a directory path) is required")
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        raise NotFound(f"{path} is not a directory")
    if real == os.sep:
        raise Forbidden("refusing to index the filesystem root")
    return real


def _result(repo: Repo, report: SyncReport) -> dict[str, Any]:
    return with_freshness(repo, {"repo": repo.root, "name": repo.name, "id": repo.id, **report.to_dict()})


@op(
    "index",
    lane="write",
    long=True,
    description="Register a repository (if new) and build its code graph; later calls sync what changed.",
    args=schema(
        {"repo": REPO_ARG, "user": USER_ARG, "full": {"type": "boolean", "description": "Re-parse every file."}},
        ["repo"],
    ),
    timeout_s=3600,
)
def index(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    assert ctx.conn is not None
    root = _root_arg(args)
    existing = registry(ctx).get(repo_id_for(root))
    user = args.get("user") or ""
    if existing is not None and user and existing.user_id and existing.user_id != user:
        raise Forbidden(f"{root} is registered by another user")
    repo = register(ctx.conn, ctx.daemon, root, user)
    watch_repo(ctx.daemon, repo)  # before the build: changes made during it are caught
    report = run_sync(ctx.daemon, ctx.conn, repo, ctx.progress, full=bool(args.get("full")))
    return _result(repo, report)


@op(
    "sync",
    lane="write",
    long=True,
    description="Bring a registered repository's graph up to date with its files (stat, then hash, then parse).",
    args=schema({"repo": REPO_ARG, "user": USER_ARG, "paths": {"type": "array", "items": {"type": "string"}}}),
    tool=True,
    read_only=False,
    timeout_s=3600,
)
def sync(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    assert ctx.conn is not None
    repo = require_repo(ctx, args)
    if args.get("paths"):
        return _result(repo, run_sync(ctx.daemon, ctx.conn, repo, ctx.progress, paths=args["paths"]))
    w = watcher(ctx.daemon)
    t0 = time.perf_counter()
    if w is not None and w.get(repo.id) is not None and w.barrier(repo.id):
        # Cookie seen: every change made before this request is in the dirty set. We run on the writer,
        # so no other batch can take it first.
        waited = time.perf_counter() - t0
        report = flush_dirty(ctx.daemon, ctx.conn, repo, ctx.progress)
        if report is None:
            report = SyncReport("noop")
        report.seconds["barrier"] = waited
        return _result(repo, report)
    return _result(repo, run_sync(ctx.daemon, ctx.conn, repo, ctx.progress))


@op(
    "repos",
    lane="read",
    description="The repositories registered with this daemon (for this user), with their freshness.",
    args=schema({"user": USER_ARG}),
)
def repos(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    user = args.get("user")
    items = [r.to_dict() for r in registry(ctx).all() if not user or not r.user_id or r.user_id == user]
    return {"repos": items}


@op(
    "repo.forget",
    lane="write",
    long=True,
    description="Unregister a repository and drop its code graph and history (memory is kept).",
    args=schema({"repo": REPO_ARG, "user": USER_ARG}, ["repo"]),
)
def forget_repo(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    assert ctx.conn is not None
    repo = require_repo(ctx, args)
    conn = ctx.conn
    with conn.transaction(deletes=True):
        graphwrite.delete_repo_code(conn, repo.id)
        from ..history.ingest import delete_repo_history

        delete_repo_history(conn, repo.id)
        conn.execute("MATCH (r:Repository {id: $r}) DETACH DELETE r", {"r": repo.id})
    registry(ctx).remove(repo.id)
    ctx.daemon.services.get("engines", {}).pop(repo.id, None)
    snapshots = ctx.daemon.services.get("query.snapshots")
    if snapshots is not None:
        snapshots.drop(repo.id)  # the in-daemon copy the query ops answer from
    w = watcher(ctx.daemon)
    if w is not None:
        w.unwatch(repo.id)
    return {"forgotten": repo.root, "id": repo.id}


if os.environ.get("NEXUS_DEBUG_OPS") == "1":

    @op(
        "debug.fail_next_build",
        lane="write",
        description="Make the next cold build hand Kuzu an edge to a missing symbol (tests failed-build recovery).",
    )
    def debug_fail_next_build(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
        graphwrite.FAULTS["dangling-edge"] = True
        return {"armed": True}


def _next_action(repo: Repo) -> str:
    build = repo.last_build or {}
    if repo.indexed_at is None:
        if build.get("outcome") == "failed":
            return "the first build failed: see `nexus daemon logs`, fix, then `nexus index`"
        return "run `nexus index`"
    if repo.damaged:
        return "the graph failed its consistency check after a failed write and is being rebuilt from the files"
    if build.get("outcome") == "failed":
        return "the last sync failed (the previous graph still answers): see `nexus daemon logs`, then `nexus sync`"
    if repo.pending:
        return "wait for the watcher or run `nexus sync`"
    return "none"


# -- live sync --------------------------------------------------------------------------------------


def watcher(daemon: Daemon) -> Watcher | None:
    return daemon.services.get("watcher")


def watch_repo(daemon: Daemon, repo: Repo) -> None:
    w = watcher(daemon)
    if w is None or os.environ.get("NEXUS_NO_WATCH") == "1":
        return
    try:
        w.watch(repo.id, repo.root)
    except OSError as exc:
        log.warning("cannot watch %s: %s", repo.root, exc)
        return
    repo.watching = True
    repo.pending_fn = lambda: w.pending(repo.id)


def flush_dirty(daemon: Daemon, conn: Conn, repo: Repo, progress: Callable[[dict[str, Any]], None] = lambda d: None) -> SyncReport | None:
    """On the writer: sync what the watcher collected for `repo` (None when nothing was dirty)."""
    w = watcher(daemon)
    if w is None:
        return None
    dirty, full = w.take(repo.id)
    try:
        if full:
            return run_sync(daemon, conn, repo, progress)
        if dirty:
            return run_sync(daemon, conn, repo, progress, paths=sorted(dirty))
        return None
    finally:
        w.done(repo.id)


def _flush_job(daemon: Daemon, repo_id: str) -> None:
    def job(conn: Conn) -> None:
        repo = registry(daemon).get(repo_id)
        if repo is not None:
            flush_dirty(daemon, conn, repo)

    daemon.server.submit_internal(job)


def process_hook_spool(daemon: Daemon, conn: Conn) -> dict[str, Any]:
    """On the writer: read the git hooks' spool (renamed aside first, so a hook appending meanwhile starts a
    new one), reconcile each repository named there and read its new commits into the history layer."""
    spool = daemon.dirs.hook_spool
    taken = spool.with_name(spool.name + ".taking")
    try:
        os.replace(spool, taken)
    except FileNotFoundError:
        if not taken.exists():
            return {"events": 0}
    try:
        lines = taken.read_text(errors="replace").splitlines()
    finally:
        taken.unlink(missing_ok=True)
    roots: dict[str, set[str]] = {}
    for line in lines:
        parts = line.split("\t")
        if len(parts) >= 2 and parts[1]:
            roots.setdefault(parts[1], set()).add(parts[0])
    done = 0
    for root, events in roots.items():
        repo = registry(daemon).containing(root)
        if repo is None:
            continue
        w = watcher(daemon)
        watch = w.get(repo.id) if w is not None else None
        if w is not None and watch is not None and w.barrier(repo.id):
            flush_dirty(daemon, conn, repo)  # what the watcher saw of a checkout, merge or rebase
        else:
            run_sync(daemon, conn, repo)
        try:
            from ..history import ingest
            from . import history as history_ops

            since = ingest.stored_cursor(conn, repo.id)
            plan = ingest.plan_git(repo.root, since, ingest.commit_limit(), history_ops.deny_list(daemon))
            ingest.store_git(conn, repo, plan)
        except Exception:  # history is a bonus here: the code graph is already in line
            log.exception("reading new commits of %s after %s failed", repo.root, ",".join(sorted(events)))
        done += 1
    return {"events": len(lines), "repos": done}


@op(
    "hook.notify",
    lane="inline",
    description="Tell the daemon a repository changed (git hooks call this); returns at once, syncs later.",
    args=schema({"repo": REPO_ARG, "user": USER_ARG, "event": {"type": "string"}}, ["repo"]),
)
def hook_notify(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    repo = registry(ctx).containing(args["repo"])
    if repo is None:
        return {"queued": False, "reason": "not registered"}
    w = watcher(ctx.daemon)
    watch = w.get(repo.id) if w is not None else None
    if w is not None and watch is not None:
        w.rescan(repo.id)  # a checkout or rebase: reconcile with a full stat walk once events settle
    else:
        ctx.daemon.server.submit_internal(lambda c: run_sync(ctx.daemon, c, repo))
    return {"queued": True, "repo": repo.root}


def status_section(ctx: Ctx, args: dict[str, Any]) -> tuple[str, Any]:
    assert ctx.conn is not None
    reg = registry(ctx)
    chosen = [reg.containing(args["repo"])] if args.get("repo") else reg.all()
    user = args.get("user")
    out = []
    for repo in chosen:
        if repo is None or (user and repo.user_id and repo.user_id != user):
            continue
        counts = graphwrite.repo_counts(ctx.conn, repo.id)
        build = repo.last_build or {}
        out.append(
            {
                "name": repo.name,
                "root": repo.root,
                "availability": "ready" if repo.indexed_at is not None else "not indexed",
                "lastBuild": {k: build.get(k) for k in ("outcome", "mode", "at", "error", "parsed", "deleted") if k in build},
                **({"damaged": repo.damaged} if repo.damaged else {}),
                **repo.freshness(),
                "next": _next_action(repo),
                **counts,
                "diagnostics": graphwrite.diagnostics(ctx.conn, repo.id, limit=20),
            }
        )
    return "repos", out


STATUS_SECTIONS.append(status_section)


def _relink_memory(daemon: Daemon, repo: Repo, report: SyncReport, conn: Conn) -> None:
    """A cold build replaced every symbol: memory's links into code (ABOUT, APPLIES_TO) are rebuilt from the
    properties the memory nodes keep. Incremental batches restore those edges themselves (graphwrite)."""
    if report.mode == "cold":
        from ..memory import relink

        relink(conn, repo.id)


GRAPH_LISTENERS.append(_relink_memory)


def start(daemon: Daemon) -> None:
    reg = registry(daemon)
    reg.sidecar = daemon.dirs.data / "repos.json"
    conn = daemon.store.connect()
    try:
        reg.load(conn)
        # A database moved aside (or lost) took its Repository nodes with it: re-register what the sidecar
        # remembers, so the catch-up below rebuilds those code graphs from the files (memory comes back from the
        # journal on its own).
        if daemon.recovery is not None or not reg.all():
            for entry in reg.saved():
                if reg.get(str(entry.get("id"))) is None and os.path.isdir(entry["root"]):
                    register(conn, daemon, entry["root"], str(entry.get("userId") or ""))
                    log.warning("re-registered %s after the database was lost; rebuilding its graph", entry["root"])
        reg.save()  # databases from before the sidecar existed get one now
    finally:
        conn.close()
    if os.environ.get("NEXUS_NO_WATCH") != "1":
        daemon.services["watcher"] = Watcher(lambda rid: _flush_job(daemon, rid))

    def hook_job() -> None:
        daemon.server.submit_internal(lambda c: process_hook_spool(daemon, c))

    daemon.services["hook-trigger"] = FileTrigger(daemon.dirs.hook_spool, hook_job)
    for repo in registry(daemon).all():
        watch_repo(daemon, repo)
    if daemon.dirs.hook_spool.exists():  # commits made while the daemon was down
        daemon.server.submit_internal(lambda c: process_hook_spool(daemon, c))
    # Catch up with changes made while the daemon was down (and rebuild graphs a schema change dropped).
    # After an unclean stop every code graph is rebuilt: WAL replay after kill -9 was seen to drop a committed
    # CONTAINS edge (Kuzu 0.11.3), and the code layer is derived, so a rebuild is the cheap way to be sure.
    for repo in registry(daemon).all():
        full = repo.indexed_at is None or bool(getattr(daemon, "unclean_stop", False))
        daemon.server.submit_internal(lambda c, r=repo, f=full: run_sync(daemon, c, r, full=f))


def stop(daemon: Daemon) -> None:
    trigger = daemon.services.pop("hook-trigger", None)
    if trigger is not None:
        trigger.stop()
    w = daemon.services.pop("watcher", None)
    if w is not None:
        w.stop()
    pool = daemon.services.pop("parsepool", None)
    if pool is not None:
        pool.close()
