"""The history layer's per-daemon state: the forget deny-list, the shell spool and its archive, the spool
timer, and what runs after a code sync or a git hook. Built once by the composition root (`nexusd/app.py`).

The spool is ingested at start and every `NEXUS_SPOOL_INTERVAL` seconds (default 30) through the writer, so
commands typed while no client asks for anything still arrive; the pending (unattributed) commands are tried
again when the registered repositories changed. While the database rests (ARCHITECTURE.md, "Memory at rest")
the spool waits up to `NEXUS_SPOOL_REST_S` (600 s) instead, or until something else opens the database: an
ingest opens it, and with the shell hook a command every 30 s kept it open all day (~90 MB). The spool is a file,
so a command waiting in it is not lost to a stop or a kill; `shell.ingest` (which `nexus query` sends
first) takes it at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import config
from ..retrieve import index as retrieve_index
from . import ingest
from .redact import DenyList

if TYPE_CHECKING:
    from ..batch import CommittedBatch
    from ..paths import Dirs
    from ..repos import Repo, RepoRegistry
    from ..store import Conn
    from ..writer import Writer

log = logging.getLogger(__name__)


class HistoryService:
    def __init__(self, dirs: Dirs, repos: RepoRegistry, writer: Writer, resting: Callable[[], bool] = lambda: False):
        self.repos = repos
        self.resting = resting  # the database rests (`Store.dormant`): the spool may wait (NEXUS_SPOOL_REST_S)
        self.writer = writer
        self.spool = dirs.spool
        self.archive = dirs.state / "shell.archive"
        self.pending = dirs.state / "shell.pending"
        self.deny = DenyList(dirs.data / "history-denylist.json")
        self.interval_s = float(config.get("NEXUS_SPOOL_INTERVAL"))
        self.rest_wait_s = float(config.get("NEXUS_SPOOL_REST_S"))
        self._known: frozenset[str] | None = None  # the repositories the last spool ingest attributed to
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def spool_path(self) -> Path:
        self.spool.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self.spool

    def _registered(self) -> frozenset[str]:
        return frozenset(r.id for r in self.repos.all())

    # -- writer-thread work -------------------------------------------------------------------------

    def ingest_spool_now(self, conn: Conn) -> dict[str, int]:
        """Ingest the spool; retry the pending (unattributed) commands when the registered repositories changed."""
        known = self._registered()
        retry = self._known != known
        out = ingest.ingest_spool(
            conn, self.spool_path(), self.archive, self.repos, self.deny, ingest.history_user(),
            pending=self.pending, retry_pending=retry,
        )  # fmt: skip
        self._known = known
        return out

    def read_new_commits(self, conn: Conn, repo: Repo) -> None:
        """After a git hook: the commits since the stored cursor (a rebase prunes what it rewrote)."""
        since = ingest.stored_cursor(conn, repo.id)
        plan = ingest.plan_git(repo.root, since, ingest.commit_limit(), self.deny)
        ingest.store_git(conn, repo, plan, lambda: self.writer.service_writes(conn))  # (a first read is long)
        if repo.views:
            ingest.store_view_commits(conn, repo, self.deny)  # and each worktree's branch

    def relink(self, repo: Repo, batch: CommittedBatch, conn: Conn) -> None:
        """After a code sync: relink the changes of the paths it changed to the symbols as indexed now."""
        paths = sorted(set(batch.changed) | set(batch.deleted))
        if batch.mode == "cold":
            paths = [r[0] for r in conn.rows("MATCH (ch:Change) WHERE ch.repoId = $r RETURN DISTINCT ch.path", {"r": repo.id})]
        if paths:
            ingest.link_changes(conn, repo.id, paths)  # (its transaction only when some change names them)

    def _startup(self, conn: Conn) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if not conn.has_table("ShellCommand") or not conn.scalar("MATCH (s:ShellCommand) RETURN count(s)"):
            out["replayed"] = ingest.replay_archive(conn, self.archive, self.repos, self.deny, ingest.history_user())
        out.update(self.ingest_spool_now(conn))
        out["historyIndex"] = retrieve_index.index_for(conn).warm(conn)  # query's index, built before the first query
        return out

    # -- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> None:
        self.spool_path()
        self.writer.submit_internal(self._startup)
        self._thread = threading.Thread(target=self._loop, name="history-spool", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        waiting_since: float | None = None  # when the timer first saw commands in the spool, while they wait
        while not self._stop.wait(self.interval_s):
            try:
                waiting = self.spool.exists() and self.spool.stat().st_size > 0
                repos_changed = self._known != self._registered()
                if not waiting:
                    waiting_since = None
                elif waiting_since is None:
                    waiting_since = time.monotonic()
                if (waiting_since is not None and not repos_changed and self.resting()
                        and time.monotonic() - waiting_since < self.rest_wait_s):
                    continue  # (the database rests: the commands wait in the spool, see the module docstring)
                if (waiting or repos_changed) and not self.writer.stopping.is_set():
                    waiting_since = None
                    self.writer.submit_internal(self.ingest_spool_now)
            except Exception:  # the timer must survive anything
                log.exception("spool timer failed")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
