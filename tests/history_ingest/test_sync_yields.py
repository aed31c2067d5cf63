"""A first history sync names every change by parsing both versions of each file (~10 s for black's whole history),
on the writer, before its transaction. It lets the writer run the daemon's queued work there (an edit saved
meanwhile, batched by the watcher) instead of after it: `symbols_at.name_changes` calls `between` every BETWEEN_S,
and the writer's queue hands out its internal jobs, never a client's request, at such a point."""

from __future__ import annotations

import threading
import time

import pytest

from nexusd.history import git as git_source
from nexusd.history import symbols_at
from nexusd.opargs import NoArgs
from nexusd.server import Job, WriteQueue
from tests.history_ingest.conftest import Factory, commit


def test_naming_calls_between_and_names_the_same(monkeypatch: pytest.MonkeyPatch, new_repo: Factory) -> None:
    repo = new_repo()
    for i in range(12):
        body = "".join(f"def f{j}():\n    return {j + i}\n\n\n" for j in range(i + 1))
        commit(repo, f"step {i}", {"pkg/m.py": body})
    commits = list(git_source.read_commits(repo, None, 100))
    plain = symbols_at.name_changes(repo, commits)
    calls: list[float] = []
    monkeypatch.setattr(symbols_at, "BETWEEN_S", 0.0)
    yielding = symbols_at.name_changes(repo, commits, lambda: calls.append(time.monotonic()))
    assert yielding == plain and any(names for names, _links in plain.values())
    assert len(calls) >= 10  # once before each commit's naming (every 0 s), bar the first


def _job(task: bool) -> Job:
    return Job(b"client" if not task else None, 1, None, NoArgs(), time.monotonic() + 60,
               task=(lambda conn: None) if task else None, done=threading.Event())  # fmt: skip


def test_the_queue_hands_out_internal_work_only() -> None:
    q = WriteQueue()
    assert q.take_internal() is None
    request, internal = _job(task=False), _job(task=True)
    q.put(request)
    q.put(internal)
    assert q.take_internal() is None  # a client's request (another sync, a forget) is at the head: it waits its turn
    assert q.get(timeout=0) is request
    assert q.take_internal() is internal
    assert q.qsize() == 0
