"""The code graph's lifecycle operations: index (register + build), sync, repos, forget; status sections.

All graph writes run on the writer lane; a failed build rolls back, so the last good graph stays in place
and status reports the failure beside it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import safefs, store
from ..errors import BadRequest, NotFound, TooLarge
from ..opargs import Args, NoArgs, Scoped, arg, repo_arg, user_arg
from ..registry import Ctx, op
from ..repos import (
    Repo,
    check_owner,
    default_user,
    delete_node,
    drop_view,
    owner_of,
    prune_views,
    register,
    rename,
    repo_id_for,
    repo_shared,
    require_repo,
    with_freshness,
)
from ..sync import graphwrite, indexer
from ..sync.indexer import SyncReport

if TYPE_CHECKING:
    from ..parts import Parts
    from ..store import Conn


def _root_arg(repo: str | None, name: str = "repo") -> str:
    path = safefs.check_path_arg(repo, name)
    real = os.path.realpath(path)  # symlinks resolved first: a link to /etc is /etc
    if not os.path.isdir(real):
        raise NotFound(f"{path} is not a directory")
    safefs.index_root(real, path)  # never /, a system tree or a pseudo-filesystem (forbidden, with the reason)
    return real


def _result(repo: Repo, report: SyncReport) -> dict[str, Any]:
    return with_freshness(repo, {"repo": repo.root, "name": repo.name, "id": repo.id, **report.to_dict()})


@dataclass(frozen=True, kw_only=True)
class IndexArgs(Args):
    repo: str = repo_arg(required=True)
    user: str | None = user_arg()
    full: bool = arg(False, description="Re-parse every file.")


@op(
    "index",
    lane="write",
    long=True,
    description="Register a repository (if new) and build its code graph; later calls sync what changed.",
    args=IndexArgs,
    timeout_s=3600,
)
def index(ctx: Ctx, args: IndexArgs) -> dict[str, Any]:
    assert ctx.conn is not None
    repos, live = ctx.parts.repos, ctx.parts.live
    root = _root_arg(args.repo)
    existing = repos.by_root(root) or repos.get(repo_id_for(root))
    user = args.user or default_user()
    if existing is not None:
        check_owner(existing, user)
    repo = register(ctx.conn, repos, root, user)
    for gone in prune_views(ctx.conn, repos):
        live.forget_view(gone[0], gone[1])
        ctx.parts.views.drop(gone[0], gone[1])
    if root in repo.views:  # a worktree of a registered repository: a view of its graph, memory and history
        return _index_view(ctx, repo, root, full=args.full)
    live.watch_repo(repo)  # before the build: changes made during it are caught
    try:
        report = live.run_sync(ctx.conn, repo, ctx.progress, full=args.full)
    except TooLarge:
        if existing is None:  # a refused first index leaves nothing registered (nor rebuilt at every start)
            _unregister(ctx, repo)
        raise
    return _result(repo, report)


def _index_view(ctx: Ctx, repo: Repo, root: str, *, full: bool) -> dict[str, Any]:
    assert ctx.conn is not None
    live = ctx.parts.live
    live.watch_repo(repo)
    if full:
        live.run_sync(ctx.conn, repo, ctx.progress, full=True)
    live.watch_view(repo, root)  # before the scan: changes made during it are caught
    report = live.sync_view(ctx.conn, repo, root, ctx.progress)
    return _view_result(repo, root, report)


def _view_result(repo: Repo, root: str, report: SyncReport) -> dict[str, Any]:
    """A view's scan: the overlay it left (files that differ from the baseline, baseline files it lacks, baseline
    files re-resolved against it), the first 50 of each."""
    overlay = {"files": report.changed_paths[:50], "missing": report.deleted_paths[:50],
               "reResolved": len(report.affected_paths)}  # fmt: skip
    return {**_result(repo, report), "view": repo.view_info(root), "overlay": overlay}


@dataclass(frozen=True, kw_only=True)
class SyncArgs(Args):
    repo: str | None = repo_arg()
    user: str | None = user_arg()
    paths: list[str] | None = arg(None, description="Only these paths (default: everything that changed).")


@op(
    "sync",
    lane="write",
    long=True,
    description="Bring a registered repository's graph up to date with its files (stat, then hash, then parse).",
    args=SyncArgs,
    tool=True,
    read_only=False,
    timeout_s=3600,
)
def sync(ctx: Ctx, args: SyncArgs) -> dict[str, Any]:
    assert ctx.conn is not None
    live = ctx.parts.live
    repo = require_repo(ctx.parts.repos, args)
    for path in args.paths or []:
        safefs.check_path_arg(path, "paths")  # a NUL byte is bad_request, not a crash in lstat
    if repo.missing:
        raise NotFound(f"{repo.root} no longer exists; its graph and memory are kept",
                       hint=f"`nexus repos move {repo.root} NEW` if it moved, `nexus forget {repo.root}` to drop it")  # fmt: skip
    root = repo.view_root(os.path.realpath(args.repo or repo.root))
    if root != repo.root:  # a worktree's view: scan it, recompute its overlay (the graph is the baseline's)
        scanned = live.sync_view(ctx.conn, repo, root, ctx.progress, paths=args.paths or None)
        return _view_result(repo, root, scanned)
    if args.paths:
        return _result(repo, live.run_sync(ctx.conn, repo, ctx.progress, paths=args.paths))
    t0 = time.perf_counter()
    if live.barrier(repo):
        # Cookie seen: every change made before this request is in the dirty set. We run on the writer,
        # so no other batch can take it first.
        waited = time.perf_counter() - t0
        report = live.flush_dirty(ctx.conn, repo, ctx.progress)
        if report is None:
            report = SyncReport("noop")
        report.seconds["barrier"] = waited
        return _result(repo, report)
    return _result(repo, live.run_sync(ctx.conn, repo, ctx.progress))


@dataclass(frozen=True, kw_only=True)
class ReposArgs(Args):
    user: str | None = user_arg()


@op(
    "repos",
    lane="read",
    description="The repositories registered with this daemon (for this user), with their freshness.",
    args=ReposArgs,
)
def repos(ctx: Ctx, args: ReposArgs) -> dict[str, Any]:
    user = args.user  # a listing: without a user, every registration (roots only, no code or memory)
    items = [r.to_dict() for r in ctx.parts.repos.all() if not user or repo_shared() or owner_of(r) == user]
    return {"repos": items}


@dataclass(frozen=True, kw_only=True)
class ForgetRepoArgs(Args):
    repo: str = repo_arg(required=True)
    user: str | None = user_arg()


@op(
    "repo.forget",
    lane="write",
    long=True,
    description="Unregister a repository and drop its code graph and history (memory is kept).",
    args=ForgetRepoArgs,
)
def forget_repo(ctx: Ctx, args: ForgetRepoArgs) -> dict[str, Any]:
    assert ctx.conn is not None
    repo = require_repo(ctx.parts.repos, args)
    root = repo.view_root(os.path.realpath(args.repo))
    if root != repo.root:  # a worktree's view: the repository and its other views stay
        drop_view(ctx.conn, ctx.parts.repos, repo, root)
        ctx.parts.live.forget_view(repo.id, root)
        ctx.parts.views.drop(repo.id, root)
        return {"forgotten": root, "id": repo.id, "view": True, "repository": repo.root}
    _unregister(ctx, repo)
    return {"forgotten": repo.root, "id": repo.id}


def _unregister(ctx: Ctx, repo: Repo) -> None:
    from ..history.ingest import delete_repo_history, forget_repo_state

    conn = ctx.conn
    assert conn is not None
    with conn.transaction(deletes=True):
        graphwrite.delete_repo_code(conn, repo.id)
        delete_repo_history(conn, repo.id)
        delete_node(conn, repo.id)
    forget_repo_state(conn, repo.id)
    parts = ctx.parts
    parts.repos.remove(repo.id)
    parts.live.forget(repo.id)
    parts.counts.drop(repo.id)
    parts.snapshots.drop(repo.id)  # the in-daemon copy the query ops answer from
    parts.views.drop(repo.id)


@dataclass(frozen=True, kw_only=True)
class MoveRepoArgs(Args):
    repo: str = repo_arg("The registered root (it may no longer exist).", required=True)
    to: str = arg(maxLength=4096, description="The directory it lives in now.")
    user: str | None = user_arg()


@op(
    "repo.move",
    lane="write",
    long=True,
    description="A registered repository now lives at another path: keep its id, memory, history and graph, "
    "and re-sync it there.",
    args=MoveRepoArgs,
    timeout_s=3600,
)
def move_repo(ctx: Ctx, args: MoveRepoArgs) -> dict[str, Any]:
    assert ctx.conn is not None
    reg, live = ctx.parts.repos, ctx.parts.live
    for name, value in (("repo", args.repo), ("to", args.to)):  # found by fuzzing: a NUL byte made realpath raise
        safefs.check_path_arg(value, name)
    old = os.path.realpath(args.repo)
    repo = reg.by_root(old) or reg.by_root(os.path.abspath(args.repo))
    if repo is None:
        raise NotFound(f"{args.repo} is not a registered repository root", hint="`nexus repos` lists them")
    check_owner(repo, args.user or default_user())
    new = _root_arg(args.to)
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
    live.forget(repo.id)  # its engine holds the old root
    ctx.parts.snapshots.drop(repo.id)
    rename(ctx.conn, reg, repo, new)
    live.watch_repo(repo)
    report = live.run_sync(ctx.conn, repo, ctx.progress)
    return {**_result(repo, report), "movedFrom": old_root}


if os.environ.get("NEXUS_DEBUG_OPS") == "1":

    def _arming(faults: dict[str, bool], fault: str) -> Callable[[Ctx, NoArgs], dict[str, Any]]:
        def arm(ctx: Ctx, args: NoArgs) -> dict[str, Any]:
            faults[fault] = True
            return {"armed": True}

        return arm

    # Each arms one fault of the next cold write (graphwrite.FAULTS) or compaction (store.FAULTS), so a test names
    # the failure it provokes.
    for _name, _faults, _fault, _what in (
        ("debug.fail_next_build", graphwrite.FAULTS, "dangling-edge",
         "Make the next cold build hand Kuzu an edge to a missing symbol (tests failed-build recovery)."),
        ("debug.damage_next_build", graphwrite.FAULTS, "phantom-edge",
         "Make the next cold build count one HAS_FILE edge it did not write, as damaged storage does."),
        ("debug.kill_mid_cold_write", graphwrite.FAULTS, "kill-mid-cold-write",
         "SIGKILL the daemon after the first committed part of the next chunked cold write (tests recovery)."),
        ("debug.damage_next_compaction", store.FAULTS, "compaction-mismatch",
         "Make the next compaction's rebuilt file count one row more than the live one, as damaged storage does."),
        ("debug.slow_next_pack", indexer.FAULTS, "slow-pack",
         "Make the next facts cache pack take 3 s more to write, as a big repository's does (tests the stop's wait)."),
    ):  # fmt: skip
        op(_name, lane="write", description=_what)(_arming(_faults, _fault))

    @dataclass(frozen=True, kw_only=True)
    class DamageArgs(Args):
        repo: str = repo_arg(required=True)

    @op(
        "debug.damage_graph",
        lane="write",
        args=DamageArgs,
        description="Add one HAS_FILE edge no write made to a repository's graph, as damaged storage does (tests "
        "the writer's check after checkpoints that fold in deletes).",
    )
    def debug_damage_graph(ctx: Ctx, args: DamageArgs) -> dict[str, Any]:
        assert ctx.conn is not None
        repo = ctx.parts.repos.by_root(os.path.realpath(args.repo))
        if repo is None:
            raise NotFound(f"{args.repo} is not a registered repository root")
        with ctx.conn.transaction():
            ctx.conn.execute("MATCH (r:Repository {id: $r}), (f:File) WHERE f.repoId = $r WITH r, f LIMIT 1 "
                             "CREATE (r)-[:HAS_FILE]->(f)", {"r": repo.id})  # fmt: skip
        return {"damaged": repo.id}

    @op(
        "debug.compact",
        lane="write",
        long=True,
        description="Rebuild the database file from its rows now, whatever its size (tests store.Store.compact).",
    )
    def debug_compact(ctx: Ctx, args: NoArgs) -> dict[str, Any]:
        assert ctx.conn is not None
        store = ctx.conn.store
        return {"compacted": store.compact(ctx.conn), **store.compactions}


    @op(
        "debug.retained",
        lane="read",
        description="The repository ids each in-daemon map holds (tests that `repo.forget` leaves nothing behind).",
    )
    def debug_retained(ctx: Ctx, args: NoArgs) -> dict[str, Any]:
        from ..retrieve.index import index_for
        from ..sync.live import VIEW_SEP

        assert ctx.conn is not None
        parts = ctx.parts
        history = index_for(ctx.conn)
        with history.lock:
            shards = sorted(history.repos)
        watcher = parts.live.watcher
        return {
            "historyIndex": shards,
            **parts.snapshots.held(),
            "viewSnapshots": parts.views.held(),
            "statusCounts": parts.counts.held(),
            "engines": sorted(parts.live.engines),
            "views": sorted({k.split(VIEW_SEP, 1)[0] for k in parts.live.views}),
            "watches": watcher.held() if watcher is not None else [],
            "registry": sorted(r.id for r in parts.repos.all()),
            "live": _live_objects(),
        }


    @op(
        "debug.heap",
        lane="read",
        description="Where the daemon's anonymous memory sits: Python's allocator, glibc's heap (in use and free), "
        "Kuzu's buffer pool mapping and the rest; the most numerous object types (for the op fuzz's RSS samples).",
    )
    def debug_heap(ctx: Ctx, args: NoArgs) -> dict[str, Any]:
        from ..parse.gcpause import heap_census

        return heap_census()


def _live_objects() -> dict[str, int]:
    """How many symbol tables, sync engines and query snapshots exist in the process, frozen ones included
    (`gcpause.reclaim`): what a forget or a rebuild let go must not stay. Collection is off while counting, so
    counting frees nothing."""
    import gc

    from ..query.snapshot import Snapshot
    from ..resolve.base import RepoIndex
    from ..sync.indexer import RepoSync

    was_enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    gc.disable()
    try:
        gc.unfreeze()
        objects = gc.get_objects()
        kinds = {"symbolTables": RepoIndex, "engines": RepoSync, "snapshots": Snapshot}
        return {name: sum(1 for o in objects if isinstance(o, cls)) for name, cls in kinds.items()}
    finally:
        if frozen:
            gc.freeze()
        if was_enabled:
            gc.enable()


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


@dataclass(frozen=True, kw_only=True)
class HookNotifyArgs(Args):
    repo: str = repo_arg(required=True)
    user: str | None = user_arg()
    event: str | None = arg(None)


@op(
    "hook.notify",
    lane="inline",
    description="Tell the daemon a repository changed (git hooks call this); returns at once, syncs later.",
    args=HookNotifyArgs,
)
def hook_notify(ctx: Ctx, args: HookNotifyArgs) -> dict[str, Any]:
    repo = ctx.parts.repos.containing(args.repo)
    if repo is None:
        return {"queued": False, "reason": "not registered"}
    root = repo.view_root(os.path.realpath(args.repo))
    if root != repo.root:  # a checkout in a worktree moves that view only
        ctx.parts.live.rescan_view(repo, root)
        return {"queued": True, "repo": repo.root, "view": root}
    ctx.parts.live.rescan(repo)  # a checkout or rebase: a full stat walk once events settle (or a sync)
    return {"queued": True, "repo": repo.root}


def status_section(parts: Parts, conn: Conn, args: Scoped) -> tuple[str, Any]:
    """`status`'s per-repository section (registered by the composition root)."""
    reg = parts.repos
    chosen = [reg.containing(args.repo)] if args.repo else reg.all()
    user = args.user
    out = []
    for repo in chosen:
        if repo is None or (user and owner_of(repo) != user and not repo_shared()):
            continue
        counts, diags = parts.counts.get(conn, repo)
        root = repo.view_root(os.path.realpath(args.repo)) if args.repo else repo.root
        view: dict[str, Any] = {}
        if root != repo.root:  # asked from a worktree: its view's counts, diagnostics and dirty files
            counts, diags = parts.views.status(conn, repo, root, counts, diags)
            view = {"view": repo.view_info(root), "repository": repo.root}
        build = repo.last_build or {}
        out.append(
            {
                "name": repo.name,
                "root": root,
                **view,
                "availability": "missing" if repo.missing else "ready" if repo.indexed_at is not None else "not indexed",
                "lastBuild": {k: build.get(k) for k in ("outcome", "mode", "at", "error", "parsed", "deleted") if k in build},
                **({"damaged": repo.damaged} if repo.damaged else {}),
                **repo.freshness(),
                "next": _next_action(repo),
                **counts,
                "diagnostics": diags,
                "skipped": parts.live.skipped(repo),
                "symbolTable": parts.live.table_state(repo),
                "querySnapshot": parts.snapshots.state(repo.id),
            }
        )
    return "repos", out
