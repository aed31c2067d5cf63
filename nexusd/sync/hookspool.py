"""The git hooks' spool: what `client/githooks.py` appends (one line per event: event TAB root) after a
commit, checkout, merge or rebase, read on the writer thread.

    FileTrigger (watcher.py) -> job on the writer -> `HookSpool.process`: take the spool aside, then per
    repository named there: reconcile the code graph (the watcher's barrier + flush, or a sync), then
    `on_commits(conn, repo)` (the composition root hands in the history layer's "read new commits")
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..paths import create_private_file
from ..repos import Repo, RepoRegistry
from .watcher import FileTrigger

if TYPE_CHECKING:
    from ..store import Conn
    from ..writer import Writer
    from .live import LiveSync

log = logging.getLogger(__name__)


class HookSpool:
    def __init__(
        self, spool: Path, repos: RepoRegistry, live: LiveSync, writer: Writer,
        on_commits: Callable[[Conn, Repo], None],
    ) -> None:  # fmt: skip
        self.spool = spool
        self.repos = repos
        self.live = live
        self.writer = writer
        self.on_commits = on_commits
        self.trigger: FileTrigger | None = None

    def start(self) -> None:
        """Watch the spool, and read what the hooks wrote while the daemon was down."""
        self.trigger = FileTrigger(self.spool, self.submit)
        if self.spool.exists():  # commits made while the daemon was down
            self.submit()

    def submit(self) -> None:
        self.writer.submit_internal(self.process)

    def stop(self) -> None:
        if self.trigger is not None:
            self.trigger.stop()
            self.trigger = None

    def process(self, conn: Conn) -> dict[str, Any]:
        """On the writer: read the spool (renamed aside first, so a hook appending meanwhile starts a new one),
        reconcile each repository named there and read its new commits into the history layer."""
        spool = self.spool
        taken = spool.with_name(spool.name + ".taking")
        try:
            if spool.stat().st_size == 0 and not taken.exists():
                return {"events": 0}  # the empty private spool waiting for the hooks (see below)
            os.replace(spool, taken)
        except FileNotFoundError:
            if not taken.exists():
                return {"events": 0}
        else:
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
            repo = self.repos.containing(root)
            if repo is None:
                continue
            view = repo.view_root(os.path.realpath(root))
            if view != repo.root:  # a commit or checkout in a worktree moves that view only
                self.live.sync_view(conn, repo, view)
            elif self.live.barrier(repo):
                self.live.flush_dirty(conn, repo)  # what the watcher saw of a checkout, merge or rebase
            else:
                self.live.run_sync(conn, repo)
            try:
                self.on_commits(conn, repo)
            except Exception:  # history is a bonus here: the code graph is already in line
                log.exception("reading new commits of %s after %s failed", repo.root, ",".join(sorted(events)))
            done += 1
        return {"events": len(lines), "repos": done}
