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

from .. import config, safefs
from ..errors import BadRequest, NotFound, TooLarge
from ..registry import REPO_ARG, USER_ARG, Ctx, op, schema
from ..repos import (
    Repo,
    check_owner,
    default_user,
    owner_of,
    registry,
    repo_id_for,
    repo_shared,
    require_repo,
    with_freshness,
)
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
    repo = reg.by_root(root) or reg.get(rid)  # by root first: a moved repository keeps its old id
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
    path = safefs.check_path_arg(args.get("repo"), "repo")
    real = os.path.realpath(path)  # symlinks resolved first: a link to /etc is /etc
    if not os.path.isdir(real):
        raise NotFound(f"{path} is not a directory")
    safefs.index_root(real, path)  # never /, a system tree or a pseudo-filesystem (forbidden, with the reason)
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
    existing = registry(ctx).by_root(root) or registry(ctx).get(repo_id_for(root))
    user = args.get("user") or default_user()
    if existing is not None:
        check_owner(existing, user)
    repo = register(ctx.conn, ctx.daemon, root, user)
    watch_repo(ctx.daemon, repo)  # before the build: changes made during it are caught
    try:
        report = run_sync(ctx.daemon, ctx.conn, repo, ctx.progress, full=bool(args.get("full")))
    except TooLarge:
        if existing is None:  # a refused first index leaves nothing registered (nor rebuilt at every start)
            _unregister(ctx, repo)
        raise
    return _result(repo, report)


@op(
    "sync",
    lane="write",
    long=True,
    description="Bring a registered repository's graph up to date with its files (stat, then hash, then parse).",
    args=schema({"repo": REPO_ARG, "user": USER_ARG, "paths": {"type": "array", "items": {"type": "string"},
                                                                  "description": "Only these paths (default: everything that changed)."}}),
    tool=True,
    read_only=False,
    timeout_s=3600,
)
def sync(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    assert ctx.conn is not None
    repo = require_repo(ctx, args)
    for path in args.get("paths") or []:
        safefs.check_path_arg(path, "paths")  # a NUL byte is bad_request, not a crash in lstat
    if repo.missing:
        raise NotFound(f"{repo.root} no longer exists; its graph and memory are kept",
                       hint=f"`nexus repos move {repo.root} NEW` if it moved, `nexus forget {repo.root}` to drop it")  # fmt: skip
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
    user = args.get("user")  # a listing: without a user, every registration (roots only, no code or memory)
    items = [r.to_dict() for r in registry(ctx).all() if not user or repo_shared() or owner_of(r) == user]
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
    _unregister(ctx, repo)
    return {"forgotten": repo.root, "id": repo.id}


def _unregister(ctx: Ctx, repo: Repo) -> None:
    conn = ctx.conn
    assert conn is not None
    with conn.transaction(deletes=True):
        graphwrite.delete_repo_code(conn, repo.id)
        from ..history.ingest import delete_repo_history

        delete_repo_history(conn, repo.id)
        conn.execute("MATCH (r:Repository {id: $r}) DETACH DELETE r", {"r": repo.id})
    registry(ctx).remove(repo.id)
    ctx.daemon.services.get("engines", {}).pop(repo.id, None)
    ctx.daemon.services.get("status.counts", {}).pop(repo.id, None)
    snapshots = ctx.daemon.services.get("query.snapshots")
    if snapshots is not None:
        snapshots.drop(repo.id)  # the in-daemon copy the query ops answer from
    w = watcher(ctx.daemon)
    if w is not None:
        w.unwatch(repo.id)


@op(
    "repo.move",
    lane="write",
    long=True,
    description="A registered repository now lives at another path: keep its id, memory, history and graph, "
    "and re-sync it there.",
    args=schema({"repo": {"type": "string", "description": "The registered root (it may no longer exist)."},
                 "to": {"type": "string", "description": "The directory it lives in now."},
                 "user": USER_ARG}, ["repo", "to"]),  # fmt: skip
    timeout_s=3600,
)
def move_repo(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    assert ctx.conn is not None
    reg = registry(ctx)
    for name in ("repo", "to"):  # found by fuzzing: a NUL byte made realpath raise (internal)
        safefs.check_path_arg(args[name], name)
    old = os.path.realpath(args["repo"])
    repo = reg.by_root(old) or reg.by_root(os.path.abspath(args["repo"]))
    if repo is None:
        raise NotFound(f"{args['repo']} is not a registered repository root", hint="`nexus repos` lists them")
    check_owner(repo, args.get("user") or default_user())
    new = _root_arg({"repo": args["to"]})
    if new == repo.root:
        raise BadRequest(f"{new} is already where the repository is registered")
    if os.path.isdir(repo.root):
        raise BadRequest(f"{repo.root} still exists: that is a copy, not a move",
                         hint=f"index the copy on its own (`nexus index {new}`), or move the directory first")  # fmt: skip
    taken = reg.containing(new)
    if taken is not None and taken.id != repo.id:
        raise BadRequest(f"{new} is inside the registered repository {taken.root}",
                         hint=f"`nexus forget {taken.root}` first if that registration is stale")  # fmt: skip
    old_root = repo.root
    w = watcher(ctx.daemon)
    if w is not None:
        w.unwatch(repo.id)
    ctx.daemon.services.get("engines", {}).pop(repo.id, None)  # it holds the old root
    snapshots = ctx.daemon.services.get("query.snapshots")
    if snapshots is not None:
        snapshots.drop(repo.id)
    name = os.path.basename(new.rstrip(os.sep)) or new
    ctx.conn.execute("MATCH (r:Repository {id: $id}) SET r.root = $root, r.name = $name",
                     {"id": repo.id, "root": new, "name": name})  # fmt: skip
    repo.root, repo.name = new, name
    reg.put(repo)  # rewrites the sidecar with the new root
    watch_repo(ctx.daemon, repo)
    report = run_sync(ctx.daemon, ctx.conn, repo, ctx.progress)
    return {**_result(repo, report), "movedFrom": old_root}


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
    if repo.missing:
        return (f"its directory is gone: `nexus repos move {repo.root} NEW` if it moved, "
                f"`nexus forget {repo.root}` to drop its graph (memory is kept either way)")  # fmt: skip
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
    if w is None or config.get("NEXUS_NO_WATCH"):
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
        if repo.missing:  # the directory was deleted or moved: keep the last graph, never sync it away
            return None
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
        if spool.stat().st_size == 0 and not taken.exists():
            return {"events": 0}  # the empty private spool waiting for the hooks (see below)
        os.replace(spool, taken)
    except FileNotFoundError:
        if not taken.exists():
            return {"events": 0}
    else:
        from ..paths import create_private_file

        create_private_file(spool)  # git hooks append with the user's umask: keep the next spool 0600
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
        if repo is None or (user and owner_of(repo) != user and not repo_shared()):
            continue
        counts, diags = _graph_counts(ctx.daemon, ctx.conn, repo)
        build = repo.last_build or {}
        out.append(
            {
                "name": repo.name,
                "root": repo.root,
                "availability": "missing" if repo.missing else "ready" if repo.indexed_at is not None else "not indexed",
                "lastBuild": {k: build.get(k) for k in ("outcome", "mode", "at", "error", "parsed", "deleted") if k in build},
                **({"damaged": repo.damaged} if repo.damaged else {}),
                **repo.freshness(),
                "next": _next_action(repo),
                **counts,
                "diagnostics": diags,
                "skipped": _skipped(ctx.daemon, repo),
            }
        )
    return "repos", out


def _skipped(daemon: Daemon, repo: Repo) -> dict[str, Any]:
    """{reason: {count, examples}} of what the walk and the parser left out (none known before a sync ran)."""
    eng = daemon.services.get("engines", {}).get(repo.id)
    return eng.skipped_summary() if eng is not None else {}


def _graph_counts(daemon: Daemon, conn: Conn, repo: Repo) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A repository's counts and diagnostics, computed once per state of its graph (six scans of the repository's
    nodes and edges: ~8 ms each time on a few hundred files) instead of on every `status`.

    Every write to a code graph goes through `run_sync`, which leaves a new `last_build` (ok or failed, with its
    time) or, for a no-op, nothing changed; `graph_version` moves with every commit. So the pair is a key that
    changes whenever the counts can; `repo.forget` drops the entry with the repository."""
    cache: dict[str, tuple[Any, dict[str, Any], list[dict[str, Any]]]] = daemon.services.setdefault("status.counts", {})
    key = (repo.graph_version, repo.indexed_at, json.dumps(repo.last_build, sort_keys=True, default=str))
    hit = cache.get(repo.id)
    if hit is not None and hit[0] == key:
        return hit[1], hit[2]
    counts = graphwrite.repo_counts(conn, repo.id)
    diags = graphwrite.diagnostics(conn, repo.id, limit=20)
    cache[repo.id] = (key, counts, diags)
    return counts, diags


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
    if not config.get("NEXUS_NO_WATCH"):
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
