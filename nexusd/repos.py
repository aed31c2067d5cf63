"""The registry of repositories: which roots are registered, and for whom; freshness of each graph.

Repository nodes live in the graph (they survive code-layer rebuilds); this module keeps a copy in memory so
every request can resolve its `repo` argument without a query. Only the writer thread mutates the graph's
Repository nodes; this cache is updated right after those writes commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import config
from .errors import BadRequest, Forbidden, NotIndexed

if TYPE_CHECKING:
    from .opargs import Scoped
    from .store import Conn


def repo_id_for(root: Path | str) -> str:
    return hashlib.blake2b(os.path.realpath(root).encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()


# -- git identity: one repository per common git dir, one view per worktree -------------------------------


def _git(cwd: str, *argv: str, timeout: float = 10.0) -> str | None:
    """stdout of one git command in `cwd`, or None (not a repository, git missing, a failure or a timeout)."""
    return _git_all([(cwd, argv)], timeout)[0]


@dataclass(frozen=True)
class GitIdentity:
    """Where a worktree's root sits in git: the common git dir (shared by every worktree of the repository,
    the repository's identity), the worktree's own git dir, and the main worktree's root (the one `git worktree
    list` names first: for a plain checkout, its root; for a bare repository, the bare directory)."""

    common_dir: str
    git_dir: str
    main_root: str

    @property
    def repo_id(self) -> str:
        """The repository's id: the id a single checkout at the main root always had, so an existing
        registration of a plain checkout keeps its id (and its memory, history and symbol ids)."""
        return repo_id_for(self.main_root)


def git_identity(root: str) -> GitIdentity | None:
    """The git identity of `root` when it is the root of a worktree (main or linked), else None (not in git,
    or a subfolder of a repository: registered on its own, by its path, as before)."""
    out = _git(root, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir", "--git-dir")
    if out is None:
        return None
    lines = out.splitlines()
    if len(lines) != 3 or os.path.realpath(lines[0]) != os.path.realpath(root):
        return None
    common, git_dir = os.path.realpath(lines[1]), os.path.realpath(lines[2])
    main = common
    listing = _git(root, "worktree", "list", "--porcelain")
    if listing:
        first = listing.split("\n", 1)[0]
        if first.startswith("worktree "):
            main = os.path.realpath(first[len("worktree "):])
    return GitIdentity(common, git_dir, main)


_REGULAR_MODES = ("100644", "100755")


def _git_all(calls: list[tuple[str, tuple[str, ...]]], timeout: float = 30.0) -> list[str | None]:
    """stdout of each (cwd, argv) git command, run at once; None for one that failed, could not start or timed out."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    procs: list[subprocess.Popen[bytes] | None] = []
    for cwd, argv in calls:
        try:
            procs.append(subprocess.Popen(["git", "-C", cwd, *argv], stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, env=env))  # fmt: skip
        except OSError:
            procs.append(None)
    out: list[str | None] = []
    for proc in procs:
        if proc is None:
            out.append(None)
            continue
        try:
            stdout, _ = proc.communicate(timeout=timeout)
        except subprocess.SubprocessError:
            proc.kill()
            proc.communicate()
            out.append(None)
            continue
        out.append(stdout.decode("utf-8", "surrogateescape") if proc.returncode == 0 else None)
    return out


def _clean_entries(listing: str | None, dirty: str | None) -> dict[str, str] | None:
    """path -> mode + blob id of each index entry of a worktree that git vouches for, from its `git ls-files
    -s -v -z` and `git diff-files --name-only -z`: a regular file at stage 0, tracked normally (`ls-files -v`
    tag `H`: neither assume-unchanged nor skip-worktree, whose bytes git does not check), and not listed by
    `diff-files` (an entry whose file's stat does not match it, or that is racily clean and differs, is
    listed). None when git could not answer."""
    if listing is None or dirty is None:
        return None
    entries: dict[str, str] = {}
    for record in listing.split("\0"):
        meta, _, path = record.partition("\t")
        fields = meta.split(" ")
        if path and len(fields) == 4 and fields[0] == "H" and fields[1] in _REGULAR_MODES and fields[3] == "0":
            entries[path] = fields[1] + fields[2]
    for path in dirty.split("\0"):
        entries.pop(path, None)
    return entries


_LISTED = ("ls-files", "-s", "-v", "-z")
_DIRTY = ("diff-files", "--name-only", "-z")


def git_clean_entries(*roots: str) -> list[dict[str, str] | None]:
    """Each worktree's index entries that git vouches for (`_clean_entries`), its two git commands run at once
    with the others'; None for a worktree git cannot tell about (not a worktree, git missing)."""
    out = _git_all([(root, argv) for root in roots for argv in (_LISTED, _DIRTY)])
    return [_clean_entries(out[2 * i], out[2 * i + 1]) for i in range(len(roots))]


def git_view_entries(view_root: str, base_root: str | None) -> tuple[dict[str, str] | None, dict[str, str] | None, str | None]:
    """(the view's clean entries, the baseline's (None when `base_root` is None: not asked), the view's `git
    status`). The view's unclean files come from its `git status` (which its answers need anyway: HEAD,
    branch, dirty count) instead of a `diff-files`: one git command fewer per worktree registered."""
    calls = [(view_root, _LISTED), (view_root, STATUS)]
    if base_root is not None:
        calls += [(base_root, _LISTED), (base_root, _DIRTY)]
    out = _git_all(calls)
    unclean = status_unclean(out[1])
    view = _clean_entries(out[0], "\0".join(unclean) if unclean is not None else None)
    base = _clean_entries(out[2], out[3]) if base_root is not None else None
    return view, base, out[1]


def same_entries(view: dict[str, str] | None, base: dict[str, str] | None) -> set[str] | None:
    """Paths whose bytes git says are the same in two worktrees of one repository, from their clean entries
    (`git_clean_entries`): the two entries have the same mode and blob. None when git could not tell, or when a
    tracked `.gitattributes` differs between them (the same blob could then be checked out as different
    bytes: line endings, filters; the caller also checks the untracked ones it walks)."""
    if view is None or base is None:
        return None
    same = {p for p, entry in view.items() if base.get(p) == entry}
    if any(posixpath.basename(p) == ".gitattributes" for p in set(view) ^ set(base) | set(view) - same):
        return None
    return same


def git_same_files(view_root: str, base_root: str) -> set[str] | None:
    """Paths whose bytes git says are the same in the two worktrees of one repository (no file is read): each
    worktree's file matches its index entry and the two entries have the same mode and blob (`same_entries`)."""
    return same_entries(*git_clean_entries(view_root, base_root))


def index_stamp(root: str) -> tuple[int, int, int, int] | None:
    """(inode, size, mtime, ctime) of the index file of the worktree at `root` (`.git/index`, or the index in
    the git dir a linked worktree's `.git` file names), read without git; None when there is none to read.
    git rewrites the index (a new inode, or new times) whenever an entry changes: add, commit, checkout."""
    dot_git = os.path.join(root, ".git")
    try:
        if os.path.isdir(dot_git):
            git_dir = dot_git
        else:
            with open(dot_git, encoding="utf-8", errors="surrogateescape") as fh:
                line = fh.read(4096).strip()
            if not line.startswith("gitdir: "):
                return None
            git_dir = os.path.join(root, line[len("gitdir: "):])
        st = os.stat(os.path.join(git_dir, "index"))
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


@dataclass
class View:
    """One worktree of a registered repository (its root is not the repository's own root). Its state as git
    sees it (HEAD, branch, dirty file count) is read with one `git status` and kept for `STATE_TTL_S`."""

    root: str
    git_dir: str = ""
    registered_at: float = 0.0
    # Set by the sync engine after each scan of the view: how many files its overlay holds (differ from the
    # baseline, or are missing there), and when.
    overlay_files: int | None = None
    synced_at: float | None = None
    _state: tuple[float, dict[str, Any]] | None = field(default=None, repr=False, compare=False)

    STATE_TTL_S = 2.0

    @property
    def missing(self) -> bool:
        """`git worktree remove` (or rm -r) took the directory: the view is dropped, the repository kept."""
        return not os.path.isdir(self.root)

    def state(self) -> dict[str, Any]:
        return worktree_state(self)

    def forget_state(self) -> None:
        self._state = None

    def take_status(self, at: float, out: str | None) -> None:
        """Keep the state of a `git status` (`STATUS`) run at `at` (monotonic) by someone else: the scan."""
        if out is not None:
            self._state = (at, status_state(self.root, out))


STATUS = ("status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal")


def worktree_state(holder: View | Repo) -> dict[str, Any]:
    """{root, head, branch, dirty} of a worktree, cached for a few seconds (`git status` costs milliseconds
    to tens of milliseconds; answers of one burst share one)."""
    now = time.monotonic()
    cached = holder._state
    if cached is not None and now - cached[0] < View.STATE_TTL_S:
        return cached[1]
    state = status_state(holder.root, _git(holder.root, *STATUS, timeout=5.0))
    holder._state = (now, state)
    return state


def status_state(root: str, out: str | None) -> dict[str, Any]:
    """{root, head, branch, dirty} from a worktree's `git status` (`STATUS`); head, branch and dirty None
    when git could not answer."""
    state: dict[str, Any] = {"root": root, "head": None, "branch": None, "dirty": None}
    if out is not None:
        dirty = 0
        for entry in out.split("\0"):
            if entry.startswith("# branch.oid "):
                oid = entry[len("# branch.oid "):]
                state["head"] = None if oid == "(initial)" else oid
            elif entry.startswith("# branch.head "):
                head = entry[len("# branch.head "):]
                state["branch"] = None if head == "(detached)" else head
            elif entry[:2] in ("1 ", "2 ", "u ", "? "):
                dirty += 1
        state["dirty"] = dirty
    return state


def status_unclean(out: str | None) -> set[str] | None:
    """The tracked paths whose file differs from its index entry, from a worktree's `git status` (`STATUS`):
    the worktree side of its changed entries (`1`/`2` with Y not `.`), and every unmerged one. git checked
    the bytes of each file whose stat did not match its entry (status refreshes in memory), so a path not
    listed has its entry's blob. None when git could not answer."""
    if out is None:
        return None
    unclean: set[str] = set()
    entries = out.split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        kind = entry[:2]
        if kind == "1 ":
            fields = entry.split(" ", 8)
            if len(fields) == 9 and fields[1][1:] != ".":
                unclean.add(fields[8])
        elif kind == "2 ":
            fields = entry.split(" ", 9)
            i += 1  # the NUL-separated original path of the rename or copy
            if len(fields) == 10 and fields[1][1:] != ".":
                unclean.add(fields[9])
        elif kind == "u ":
            fields = entry.split(" ", 10)
            if len(fields) == 11:
                unclean.add(fields[10])
    return unclean


@dataclass
class Repo:
    id: str
    root: str
    name: str
    user_id: str
    graph_version: int = 0
    indexed_at: float | None = None
    last_build: dict[str, Any] | None = None
    # When this run last wrote an ok `last_build` to the graph (`record_build`; 0: not yet, or a failure since).
    summary_written_at: float = 0.0
    # How many changed paths the watcher has seen that are not in the graph yet (set by the watcher).
    pending_fn: Callable[[], int] | None = None
    watching: bool = False
    # Set when the graph failed its invariant counts after a failed write; cleared by the next cold build.
    damaged: list[str] | None = None
    # The common git dir when `root` is a worktree's root: the repository's identity (None outside git).
    common_dir: str | None = None
    git_dir: str = ""
    # The other worktrees registered as views of this repository, by root (realpath).
    views: dict[str, View] = field(default_factory=dict)
    _state: tuple[float, dict[str, Any]] | None = field(default=None, repr=False, compare=False)

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

    def live_views(self) -> list[View]:
        """The registered views whose worktree still exists, by root."""
        return [v for _, v in sorted(self.views.items()) if not v.missing]

    def view_root(self, path: str) -> str:
        """The root of the worktree (this repository's own root or a view's) that holds `path` (a realpath)."""
        best, best_len = self.root, len(self.root) if _inside(path, self.root) else -1
        for view in self.live_views():
            if _inside(path, view.root) and len(view.root) > best_len:
                best, best_len = view.root, len(view.root)
        return best

    def view_info(self, path: str | None = None) -> dict[str, Any]:
        """The view an answer came from: its worktree root, HEAD, branch and dirty file count."""
        root = self.view_root(os.path.realpath(path)) if path else self.root
        view = self.views.get(root)
        info = dict(worktree_state(view if view is not None else self))
        info["primary"] = view is None
        if view is not None:
            info["overlayFiles"] = view.overlay_files  # None: not scanned yet (answers are the baseline's)
            info["overlayAt"] = view.synced_at
        return info

    def to_dict(self) -> dict[str, Any]:
        out = {"id": self.id, "root": self.root, "name": self.name, **self.freshness()}
        if self.common_dir is not None:
            out["gitCommonDir"] = self.common_dir
            out["views"] = [{**worktree_state(self), "primary": True}] + [
                {**v.state(), "primary": False} for v in self.live_views()
            ]
        return out


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


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
            entries = [{"id": r.id, "root": r.root, "name": r.name, "userId": r.user_id,
                        **({"views": sorted(r.views)} if r.views else {})} for r in self._repos.values()]  # fmt: skip
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
        for repo_id in cold_write_pending(conn) & set(self._repos):
            self._repos[repo_id].damaged = ["a cold write was interrupted: the graph is partial until it is rebuilt"]
        views = {row["key"][len(VIEWS_KEY):]: row["value"] for row in conn.dicts(
            "MATCH (m:Meta) WHERE m.key STARTS WITH $p RETURN m.key AS key, m.value AS value", {"p": VIEWS_KEY})}  # fmt: skip
        for repo in self.all():
            ident = git_identity(repo.root) if os.path.isdir(repo.root) else None
            if ident is not None:
                repo.common_dir, repo.git_dir = ident.common_dir, ident.git_dir
            try:
                roots = json.loads(views.get(repo.id) or "[]")
            except ValueError:
                roots = []
            for root in roots if isinstance(roots, list) else []:
                if isinstance(root, str):
                    wt = git_identity(root) if os.path.isdir(root) else None
                    repo.views[root] = View(root, wt.git_dir if wt else "")

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
        """The repository registered at exactly this root (after a move its id no longer derives from it), or
        holding a view there."""
        with self._lock:
            for repo in self._repos.values():
                if repo.root == root or root in repo.views:
                    return repo
        return None

    def by_common_dir(self, common_dir: str) -> Repo | None:
        """The repository whose worktrees share this common git dir (the first registered when an older
        version registered two worktrees of one repository separately)."""
        with self._lock:
            found = [r for r in self._repos.values() if r.common_dir == common_dir]
        return min(found, key=lambda r: r.root) if found else None

    def containing(self, path: str | Path) -> Repo | None:
        """The registered repository whose root contains `path` (the deepest one when roots nest)."""
        if "\x00" in str(path):  # os.path.realpath raises ValueError on a NUL byte: no path holds one
            return None
        real = os.path.realpath(path)
        best: Repo | None = None
        best_len = -1
        with self._lock:
            repos = list(self._repos.values())
        for repo in repos:
            for root in (repo.root, *(v.root for v in repo.live_views())):
                if _inside(real, root) and len(root) > best_len:
                    best, best_len = repo, len(root)
        return best


# Meta key prefix set while a chunked cold write of a repository is committed only in part (sync.graphwrite).
COLD_WRITE_KEY = "coldwrite:"


def cold_write_pending(conn: Conn, repo_id: str | None = None) -> set[str]:
    """The repositories (or just `repo_id`) whose chunked cold write was committed only in part."""
    if repo_id is not None:
        found = conn.scalar("MATCH (m:Meta {key: $k}) RETURN count(m)", {"k": COLD_WRITE_KEY + repo_id})
        return {repo_id} if found else set()
    rows = conn.dicts("MATCH (m:Meta) WHERE m.key STARTS WITH $p RETURN m.key AS key", {"p": COLD_WRITE_KEY})
    return {row["key"][len(COLD_WRITE_KEY):] for row in rows}


VIEWS_KEY = "views:"  # Meta key prefix: views:<repository id> -> JSON list of the view roots


def register(conn: Conn, reg: RepoRegistry, root: str, user: str) -> Repo:
    """The repository registered at `root` (by root first: a moved repository keeps its old id), or, when
    `root` is a worktree of a registered repository (same common git dir), that repository with a new view at
    `root`; else a new registration (a Repository node, then the cache and the sidecar)."""
    ident = git_identity(root)
    rid = ident.repo_id if ident is not None else repo_id_for(root)
    repo = reg.by_root(root) or reg.get(rid)
    if repo is None and ident is not None:
        repo = reg.by_common_dir(ident.common_dir)
    if repo is not None:
        if ident is not None and repo.common_dir is None and os.path.realpath(repo.root) == root:
            repo.common_dir, repo.git_dir = ident.common_dir, ident.git_dir
        if root != repo.root and root not in repo.views and ident is not None and repo.common_dir == ident.common_dir:
            add_view(conn, reg, repo, View(root, ident.git_dir, time.time()))
        return repo
    name = os.path.basename(root.rstrip(os.sep)) or root
    conn.execute(
        "MERGE (r:Repository {id: $id}) ON CREATE SET r.root = $root, r.name = $name, r.userId = $user, "
        "r.graphVersion = 0, r.registeredAt = $at",
        {"id": rid, "root": root, "name": name, "user": user, "at": time.time()},
    )
    repo = Repo(id=rid, root=root, name=name, user_id=user)
    if ident is not None:
        repo.common_dir, repo.git_dir = ident.common_dir, ident.git_dir
    reg.put(repo)
    return repo


def _save_views(conn: Conn, repo: Repo) -> None:
    conn.execute("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": VIEWS_KEY + repo.id, "v": json.dumps(sorted(repo.views))})


def add_view(conn: Conn, reg: RepoRegistry, repo: Repo, view: View) -> None:
    """A worktree of `repo` registered: one more view of the same repository (graph, memory, history)."""
    repo.views[view.root] = view
    _save_views(conn, repo)
    reg.save()


def drop_view(conn: Conn, reg: RepoRegistry, repo: Repo, root: str) -> View | None:
    """A view left (`git worktree remove`, or forgotten): the repository and its other views stay."""
    view = repo.views.pop(root, None)
    if view is not None:
        _save_views(conn, repo)
        reg.save()
    return view


def prune_views(conn: Conn, reg: RepoRegistry) -> list[tuple[str, str]]:
    """Drop the views whose worktree directory is gone (on the writer: at start, after a hook, at `index`);
    returns (repository id, view root) of each."""
    gone = []
    for repo in reg.all():
        for root in [r for r, v in repo.views.items() if v.missing]:
            drop_view(conn, reg, repo, root)
            gone.append((repo.id, root))
    return gone


def save_node(conn: Conn, repo: Repo) -> None:
    """Write the Repository node of a registration made without a build (tests of memory before `index`)."""
    conn.execute(
        "MERGE (r:Repository {id: $id}) SET r.root = $root, r.name = $name, r.userId = $u, r.registeredAt = $at",
        {"id": repo.id, "root": repo.root, "name": repo.name, "u": repo.user_id, "at": time.time()},
    )


# Kuzu 0.11.3 keeps every value a string column ever held in the column's chunk and writes them all again at the
# checkpoint after a SET (RELIABILITY.md, "Updates of string columns"): a build summary set on every edit grew the
# Repository table's chunk, and every later checkpoint, for as long as the daemon ran. So the summary of an ok
# incremental build reaches the graph at most this often; a cold build, a failure (`record_failure`), the first
# build of a run and the first ok build after a failed one always do. The version and time are numbers, set in
# place, every build: after a restart `status` shows the last summary written, never more than this much older.
SUMMARY_EVERY_S = 300.0


def record_build(conn: Conn, repo: Repo, summary: str, *, cold: bool) -> None:
    """A batch committed: bump the graph version, stamp indexedAt and the build summary (graph, then cache)."""
    now = time.time()
    params: dict[str, Any] = {"id": repo.id, "v": repo.graph_version + 1, "at": now}
    if cold or now - repo.summary_written_at >= SUMMARY_EVERY_S:
        conn.execute(
            "MATCH (r:Repository {id: $id}) SET r.graphVersion = $v, r.indexedAt = $at, r.lastBuild = $b",
            {**params, "b": summary},
        )
        repo.summary_written_at = now
    else:
        conn.execute("MATCH (r:Repository {id: $id}) SET r.graphVersion = $v, r.indexedAt = $at", params)
    repo.graph_version += 1
    repo.indexed_at = now
    repo.last_build = json.loads(summary)
    if cold:
        repo.damaged = None


def record_failure(conn: Conn, repo: Repo, summary: str) -> None:
    """A sync failed (its batch rolled back): the summary says so beside the last good graph."""
    conn.execute("MATCH (r:Repository {id: $id}) SET r.lastBuild = $b", {"id": repo.id, "b": summary})
    repo.last_build = json.loads(summary)
    repo.summary_written_at = 0.0  # the next ok build's summary replaces this one in the graph


def rename(conn: Conn, reg: RepoRegistry, repo: Repo, root: str) -> None:
    """The repository now lives at `root` (same id, memory, history and graph)."""
    name = os.path.basename(root.rstrip(os.sep)) or root
    conn.execute("MATCH (r:Repository {id: $id}) SET r.root = $root, r.name = $name",
                 {"id": repo.id, "root": root, "name": name})  # fmt: skip
    repo.root, repo.name = root, name
    reg.put(repo)  # rewrites the sidecar with the new root


def delete_node(conn: Conn, repo_id: str) -> None:
    conn.execute("MATCH (r:Repository {id: $r}) DETACH DELETE r", {"r": repo_id})
    conn.execute("MATCH (m:Meta {key: $k}) DELETE m", {"k": VIEWS_KEY + repo_id})
    conn.execute("MATCH (m:Meta {key: $k}) DELETE m", {"k": COLD_WRITE_KEY + repo_id})


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


def annotate_view(reg: RepoRegistry, args: object, result: Any) -> Any:
    """Beside graphVersion and freshness, an answer about a git repository names the view it came from: the
    worktree holding the request's `repo` path (root, HEAD, branch, dirty file count)."""
    if not isinstance(result, dict) or "graphVersion" not in result or "view" in result:
        return result
    path = getattr(args, "repo", None)
    if not isinstance(path, str) or not path or "\x00" in path:
        return result
    repo = reg.containing(path)
    if repo is not None and repo.common_dir is not None:
        result["view"] = repo.view_info(path)
    return result

