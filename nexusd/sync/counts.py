"""`status`'s per-repository counts and diagnostics, computed once per state of a graph.

Six scans of the repository's nodes and edges (~8 ms each time on a few hundred files) instead of on every
`status`. Every write to a code graph goes through `LiveSync.run_sync`, which leaves a new `last_build` (ok or
failed, with its time) or, for a no-op, nothing changed; `graph_version` moves with every commit. So the
pair is a key that changes whenever the counts can; `repo.forget` drops the entry with the repository.

Before the database rests the writer's upkeep fills in every stale entry (`refresh`): `status` is what people and
prompts run most, and computing a count after the rest would open the database again (~90 MB for ~0.1 s and then
for NEXUS_DB_IDLE_S more) only to answer it. Measured on 1,000 generated files: a `status` after the rest took the
daemon from 54 to 144 MB anonymous until its next rest.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from . import graphwrite

if TYPE_CHECKING:
    from ..repos import Repo
    from ..store import Conn

Counts = tuple[dict[str, Any], list[dict[str, Any]]]


class StatusCounts:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[Any, dict[str, Any], list[dict[str, Any]]]] = {}

    def get(self, conn: Conn, repo: Repo) -> Counts:
        key = (repo.graph_version, repo.indexed_at, json.dumps(repo.last_build, sort_keys=True, default=str))
        with self._lock:
            hit = self._cache.get(repo.id)
        if hit is not None and hit[0] == key:
            return hit[1], hit[2]
        counts = graphwrite.repo_counts(conn, repo.id)
        diags = graphwrite.diagnostics(conn, repo.id, limit=20)
        with self._lock:
            self._cache[repo.id] = (key, counts, diags)
        return counts, diags

    def refresh(self, conn: Conn, repos: list[Repo]) -> None:
        """Compute the entries of `repos` that are stale (the graph changed since); `get` keeps the others."""
        for repo in repos:
            self.get(conn, repo)

    def held(self) -> list[str]:
        with self._lock:
            return sorted(self._cache)

    def drop(self, repo_id: str) -> None:
        with self._lock:
            self._cache.pop(repo_id, None)
