"""The registry of repositories: which roots are registered, and for whom; freshness of each graph.

Repository nodes live in the graph (they survive code-layer rebuilds); this module keeps a copy in memory so
every request can resolve its `repo` argument without a query. Only the writer thread mutates the graph's
Repository nodes; this cache is updated right after those writes commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import config
from .errors import BadRequest, Forbidden, NotIndexed

if TYPE_CHECKING:
    from .opargs import Scoped
    from .store import Conn


def repo_id_for(root: Path | str) -> str:
    return hashlib.blake2b(os.path.realpath(root).encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()


@dataclass
class Repo:
    id: str
    root: str
    name: str
    user_id: str
    graph_version: int = 0
    indexed_at: float | None = None
    last_build: dict[str, Any] | None = None
    # How many changed paths the watcher has seen that are not in the graph yet (set by the watcher).
    pending_fn: Callable[[], int] | None = None
    watching: bool = False
    # Set when the graph failed its invariant counts after a failed write; cleared by the next cold build.
    damaged: list[str] | None = None

    @property
    def pending(self) -> int:
        return self.pending_fn() if self.pending_fn is not None else 0

    @property
    def missing(self) -> bool:
        """The registered directory is gone (deleted or moved): its graph and memory are kept until the user
        says `nexus forget ROOT` or `nexus repos move ROOT NEW`."""
        return not os.path.isdir(self.root)

    def freshness(self) -> dict[str, Any]:
        if self.missing:
            state = "missing"
        elif self.indexed_at is None:
            state = "unknown"
        elif self.pending or self.damaged:
            state = "stale"
        elif self.watching:
            state = "fresh"
        else:
            state = "unknown"  # not watched: we cannot vouch for changes since the last sync
        out: dict[str, Any] = {
            "graphVersion": self.graph_version,
            "indexedAt": self.indexed_at,
            "freshness": state,
        }
        if self.pending:
            out["pendingPaths"] = self.pending
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "root": self.root, "name": self.name, **self.freshness()}


class RepoRegistry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._repos: dict[str, Repo] = {}
        # A copy of the registrations outside the database (set by the composition root, app.py): when the database is moved
        # aside as unopenable, the Repository nodes go with it, and without this list nothing would say which
        # code graphs to rebuild from the files.
        self.sidecar: Path | None = None

    def save(self) -> None:
        """Rewrite the sidecar (atomically) after a registration change."""
        if self.sidecar is None:
            return
        with self._lock:
            entries = [{"id": r.id, "root": r.root, "name": r.name, "userId": r.user_id} for r in self._repos.values()]
            tmp = self.sidecar.with_name(self.sidecar.name + ".tmp")
            try:
                tmp.write_text(json.dumps(sorted(entries, key=lambda e: e["id"]), indent=1) + "\n")
                os.replace(tmp, self.sidecar)
            except OSError:  # the graph stays the source of truth; the sidecar only helps after a lost database
                pass

    def saved(self) -> list[dict[str, str]]:
        """The registrations the sidecar remembers ([] when there is none or it is unreadable)."""
        if self.sidecar is None:
            return []
        try:
            data = json.loads(self.sidecar.read_text())
        except (OSError, ValueError):
            return []
        return [e for e in data if isinstance(e, dict) and isinstance(e.get("root"), str)] if isinstance(data, list) else []

    def load(self, conn: Conn) -> None:
        rows = conn.dicts(
            "MATCH (r:Repository) RETURN r.id AS id, r.root AS root, r.name AS name, r.userId AS userId, "
            "r.graphVersion AS gv, r.indexedAt AS at, r.lastBuild AS lastBuild"
        )
        with self._lock:
            for row in rows:
                self._repos[row["id"]] = Repo(
                    id=row["id"],
                    root=row["root"],
                    name=row["name"],
                    user_id=row["userId"] or "",
                    graph_version=row["gv"] or 0,
                    indexed_at=row["at"],
                    last_build=json.loads(row["lastBuild"]) if row["lastBuild"] else None,
                )

    def all(self) -> list[Repo]:
        with self._lock:
            return sorted(self._repos.values(), key=lambda r: r.root)

    def get(self, repo_id: str) -> Repo | None:
        with self._lock:
            return self._repos.get(repo_id)

    def put(self, repo: Repo) -> None:
        with self._lock:
            self._repos[repo.id] = repo
        self.save()

    def remove(self, repo_id: str) -> Repo | None:
        with self._lock:
            repo = self._repos.pop(repo_id, None)
        self.save()
        return repo

    def by_root(self, root: str) -> Repo | None:
        """The repository registered at exactly this root (after a move its id no longer derives from it)."""
        with self._lock:
            for repo in self._repos.values():
                if repo.root == root:
                    return repo
        return None

    def containing(self, path: str | Path) -> Repo | None:
        """The registered repository whose root contains `path` (the deepest one when roots nest)."""
        if "\x00" in str(path):  # os.path.realpath raises ValueError on a NUL byte: no path holds one
            return None
        real = os.path.realpath(path)
        best: Repo | None = None
        with self._lock:
            for repo in self._repos.values():
                root = repo.root
                if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
                    if best is None or len(root) > len(best.root):
                        best = repo
        return best


def register(conn: Conn, reg: RepoRegistry, root: str, user: str) -> Repo:
    """The repository registered at `root` (by root first: a moved repository keeps its old id), or a new
    registration (a Repository node, then the cache and the sidecar)."""
    rid = repo_id_for(root)
    repo = reg.by_root(root) or reg.get(rid)
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


def save_node(conn: Conn, repo: Repo) -> None:
    """Write the Repository node of a registration made without a build (tests of memory before `index`)."""
    conn.execute(
        "MERGE (r:Repository {id: $id}) SET r.root = $root, r.name = $name, r.userId = $u, r.registeredAt = $at",
        {"id": repo.id, "root": repo.root, "name": repo.name, "u": repo.user_id, "at": time.time()},
    )


def record_build(conn: Conn, repo: Repo, summary: str, *, cold: bool) -> None:
    """A batch committed: bump the graph version, stamp indexedAt and the build summary (graph, then cache)."""
    now = time.time()
    conn.execute(
        "MATCH (r:Repository {id: $id}) SET r.graphVersion = $v, r.indexedAt = $at, r.lastBuild = $b",
        {"id": repo.id, "v": repo.graph_version + 1, "at": now, "b": summary},
    )
    repo.graph_version += 1
    repo.indexed_at = now
    repo.last_build = json.loads(summary)
    if cold:
        repo.damaged = None


def record_failure(conn: Conn, repo: Repo, summary: str) -> None:
    """A sync failed (its batch rolled back): the summary says so beside the last good graph."""
    conn.execute("MATCH (r:Repository {id: $id}) SET r.lastBuild = $b", {"id": repo.id, "b": summary})
    repo.last_build = json.loads(summary)


def rename(conn: Conn, reg: RepoRegistry, repo: Repo, root: str) -> None:
    """The repository now lives at `root` (same id, memory, history and graph)."""
    name = os.path.basename(root.rstrip(os.sep)) or root
    conn.execute("MATCH (r:Repository {id: $id}) SET r.root = $root, r.name = $name",
                 {"id": repo.id, "root": root, "name": name})  # fmt: skip
    repo.root, repo.name = root, name
    reg.put(repo)  # rewrites the sidecar with the new root


def delete_node(conn: Conn, repo_id: str) -> None:
    conn.execute("MATCH (r:Repository {id: $r}) DETACH DELETE r", {"r": repo_id})


def require_repo(reg: RepoRegistry, args: Scoped, *, user: str | None = None) -> Repo:
    """The registered repository the request's `repo` path points into, or a clear error.

    A repository registered by another user is refused (`forbidden`): one daemon may serve several users.
    """
    path = args.repo
    if not path:
        raise NotIndexed("no repository given", hint="pass `repo` (the CLI sends the git root of its cwd)")
    if not isinstance(path, str) or "\x00" in path:  # found by fuzzing: a NUL byte crashed handlers (internal)
        raise BadRequest("`repo` must be a path without NUL bytes")
    repo = reg.containing(path)
    if repo is None:
        raise NotIndexed(f"{path} is not in a registered repository", hint=f"register it: `nexus index {path}`")
    check_owner(repo, user if user is not None else args.user)
    return repo


def default_user() -> str:
    """Who a request speaks for when it names nobody: NEXUS_USER, else the daemon's OS user (as memory does)."""
    import getpass

    return os.environ.get("NEXUS_USER") or getpass.getuser()


def owner_of(repo: Repo) -> str:
    """A repository registered without a user (by an older version) belongs to the default user."""
    return repo.user_id or default_user()


def check_owner(repo: Repo, who: str | None) -> None:
    """Every request about a repository is checked against its owner, also one that names no user (it speaks
    for the default user). Within one uid `user` is a namespace, not a boundary: RELIABILITY.md, threat model."""
    if (who or default_user()) != owner_of(repo) and not repo_shared():
        raise Forbidden(f"{repo.root} is registered by another user")


def repo_shared() -> bool:
    """NEXUS_SHARED_REPOS=1 lets every user of this daemon read every repository's code graph."""
    return bool(config.get("NEXUS_SHARED_REPOS"))


def with_freshness(repo: Repo, result: dict[str, Any]) -> dict[str, Any]:
    """Every answer about a repository carries graphVersion, indexedAt and freshness."""
    result.update(repo.freshness())
    result.setdefault("repo", repo.root)
    return result

