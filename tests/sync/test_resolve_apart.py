"""A wide resolution shared with a forked copy (`nexusd/sync/resolveapart.py`) gives the resolutions one process
gives, file for file; a copy that fails leaves its files to this process; and a daemon's cold index through it
writes the same graph."""

from __future__ import annotations

import contextlib
import logging
import os
import re
from pathlib import Path

import pytest

from nexusd import config
from nexusd.parse.extract import extract
from nexusd.resolve import RepoIndex
from nexusd.resolve.base import FileResolution
from nexusd.sync import resolveapart
from nexusd.sync.walk import WalkRules
from tests.helpers import DaemonProcess, dies_with_its_parent

NAV = Path(__file__).resolve().parent.parent / "fixtures" / "nav"
APPS = sorted(p.name for p in NAV.iterdir() if p.is_dir())

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _key(res: FileResolution) -> tuple[object, ...]:
    return (
        [(e.dst_path, e.specifier, e.line, e.resolution, e.confidence) for e in res.imports],
        [tuple(e) for e in res.calls],
        [tuple(s) for s in res.site_rows],
    )


def _index(root: Path) -> tuple[RepoIndex, list[str]]:
    paths = sorted(entry.path for entry in WalkRules(str(root), 1 << 20).walk())
    index = RepoIndex("t", root)
    for path in paths:
        index.set_file(extract(path, (root / path).read_bytes()))
    return index, paths


@pytest.fixture
def apart_from(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    def setting(files: int) -> None:
        monkeypatch.setenv("NEXUS_RESOLVE_APART_FILES", str(files))
        config.reload()

    yield setting
    monkeypatch.delenv("NEXUS_RESOLVE_APART_FILES", raising=False)
    config.reload()


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the copies `resolve_files` forks (os.fork as it is, counted)."""
    pids: list[int] = []
    real_fork = os.fork

    def counting_fork() -> int:
        pid = real_fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(resolveapart.os, "fork", counting_fork)
    return pids


@pytest.mark.parametrize("app", APPS)
def test_the_files_resolved_apart_are_resolved_as_in_one_process(app: str, apart_from, forks) -> None:  # type: ignore[no-untyped-def]
    index, paths = _index(NAV / app)
    apart_from(0)
    alone = {p: _key(r) for p, r in resolveapart.resolve_files(index, paths).items()}
    index.release_memo()
    apart_from(2)
    shared = {p: _key(r) for p, r in resolveapart.resolve_files(index, paths).items()}
    assert forks, "the resolution was not shared with a forked process"
    assert list(shared) == paths
    assert shared == alone


def test_the_split_is_two_nonempty_runs_in_order_balanced_by_calls() -> None:
    index, paths = _index(NAV / APPS[0])
    mine, theirs = resolveapart.split(index, paths)
    assert mine and theirs and mine + theirs == paths
    calls = {p: 1 + len(index.tables[p].facts.calls) for p in paths}
    first, second = sum(calls[p] for p in mine), sum(calls[p] for p in theirs)
    assert first >= second - max(calls.values())  # the cut is at the first file that reaches half
    assert first - calls[mine[-1]] < (first + second) / 2


def test_a_forked_process_that_fails_leaves_its_files_to_this_one(apart_from, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    index, paths = _index(NAV / APPS[0])
    apart_from(0)
    alone = {p: _key(r) for p, r in resolveapart.resolve_files(index, paths).items()}
    apart_from(2)

    def broken(fd: int, resolutions: object) -> None:
        raise RuntimeError("the copy fails")  # (runs in the forked process: it exits 1)

    monkeypatch.setattr(resolveapart, "_send", broken)
    with caplog.at_level(logging.WARNING, logger="nexusd.sync.resolveapart"):
        got = {p: _key(r) for p, r in resolveapart.resolve_files(index, paths).items()}
    assert got == alone
    assert "resolving them here" in caplog.text


def test_a_cold_index_resolved_apart_writes_the_graph_one_process_writes() -> None:
    root = NAV / APPS[0]
    graphs = {}
    for files in (0, 2):
        d = DaemonProcess(env={"NEXUS_RESOLVE_APART_FILES": str(files)}).start()
        try:
            with d.client() as c:
                c.request("index", {"repo": str(root)}, timeout=120)
                graphs[files] = {
                    what: sorted(map(tuple, c.request("debug.cypher", {"query": query})["rows"]))
                    for what, query in (
                        ("calls", "MATCH (a:Symbol)-[e:POSSIBLY_CALLS]->(b:Symbol) "
                                  "RETURN a.key, b.key, e.line, e.resolution, e.confidence"),
                        ("imports", "MATCH (a:File)-[e:IMPORTS]->(b:File) "
                                    "RETURN a.path, b.path, e.specifier, e.line, e.resolution"),
                        ("unresolved", "MATCH (s:Symbol) RETURN s.key, s.unresolved"),
                    )
                }  # fmt: skip
            log = (d.dirs.state / "nexusd.log").read_text()
            assert bool(re.search(r"resolved \d+ files here in .* and \d+ apart", log)) == (files == 2)
        finally:
            d.cleanup()
    assert graphs[0]["calls"] and graphs[0]["imports"]
    assert graphs[2] == graphs[0]


def test_the_forked_process_holds_no_descriptor_of_the_daemon_but_its_pipe(tmp_path: Path, apart_from, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """As the snapshot's prebuild: a copy that held the daemon's descriptors would hold its PID lock and socket
    after a kill -9 (it dies with the daemon besides, PR_SET_PDEATHSIG, `nexusd/forked.py`)."""
    index, paths = _index(NAV / APPS[0])
    apart_from(2)
    held = tmp_path / "held.txt"
    lock = open(tmp_path / "a-descriptor-the-daemon-holds", "w")  # noqa: SIM115 - (open across the fork)
    lock_fd = lock.fileno()

    def report(fd: int, resolutions: object) -> None:  # runs in the copy; the parent then resolves them itself
        fds = sorted(int(name) for name in os.listdir("/proc/self/fd"))
        held.write_text(" ".join(map(str, fds + [-1, fd])))
        os.close(fd)

    monkeypatch.setattr(resolveapart, "_send", report)
    try:
        got = resolveapart.resolve_files(index, paths)
    finally:
        lock.close()
    assert list(got) == paths  # (resolved here: the copy sent nothing)
    *fds, _, pipe = map(int, held.read_text().split())
    assert lock_fd not in fds and pipe in fds
    assert len(set(fds) - {0, 1, 2, pipe}) <= 1  # (the listing's own descriptor)


def test_a_fork_the_system_refuses_leaves_every_file_to_this_process(apart_from, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    index, paths = _index(NAV / APPS[0])
    apart_from(0)
    alone = {p: _key(r) for p, r in resolveapart.resolve_files(index, paths).items()}
    apart_from(2)

    def refused() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(resolveapart.os, "fork", refused)
    with caplog.at_level(logging.WARNING, logger="nexusd.sync.resolveapart"):
        got = {p: _key(r) for p, r in resolveapart.resolve_files(index, paths).items()}
    assert got == alone
    assert "resolution not shared" in caplog.text


def test_a_failure_in_this_process_ends_the_forked_one(apart_from, forks, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The sync fails (its error reaches the client); the copy is killed and reaped, not left running or a zombie."""
    index, paths = _index(NAV / APPS[0])
    apart_from(2)
    real_resolve = resolveapart._resolve

    def failing_here(index: RepoIndex, todo: list[str], progress=lambda _n: None):  # type: ignore[no-untyped-def]
        if os.getpid() == parent:
            raise RuntimeError("resolution failed")
        return real_resolve(index, todo, progress)

    parent = os.getpid()
    monkeypatch.setattr(resolveapart, "_resolve", failing_here)
    with pytest.raises(RuntimeError, match="resolution failed"):
        resolveapart.resolve_files(index, paths)
    assert len(forks) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(forks[0], os.WNOHANG)  # (reaped already)


def test_a_wide_resolution_shared_apart_freezes_what_it_made_as_one_stage_would(tmp_path: Path, apart_from) -> None:  # type: ignore[no-untyped-def]
    """`gcpause.Windows` freezes what a stage of FREEZE_AFTER_UNITS files or more made (else the first full collection
    after it walks the whole heap); the copy's half arrives after this process's stage ended, and this half alone may
    be shorter than that."""
    import gc

    from nexusd.parse import gcpause

    count = gcpause.FREEZE_AFTER_UNITS + 10
    index = RepoIndex("t", tmp_path)
    paths = [f"m{i:04d}.py" for i in range(count)]
    for i, path in enumerate(paths):
        index.set_file(extract(path, f"def f{i}():\n    return g{i}()\n".encode()))
    apart_from(2)
    was = gc.isenabled()
    gc.enable()
    gc.unfreeze()
    try:
        got = resolveapart.resolve_files(index, paths)
        assert len(got) == count
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        if not was:
            gc.disable()


def test_the_forked_process_dies_with_a_daemon_killed_mid_resolution(tmp_path: Path) -> None:
    """A kill -9 of the daemon while the copy resolves must not leave the copy running, holding the PID lock."""
    import signal
    import subprocess
    import sys
    import time

    script = f"""
import fcntl, os, sys, time
from pathlib import Path
from nexusd import config
from nexusd.parse.extract import extract
from nexusd.resolve import RepoIndex
from nexusd.sync import resolveapart
lock = open({str(tmp_path / 'pid.lock')!r}, 'w')
fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.environ["NEXUS_RESOLVE_APART_FILES"] = "2"
config.reload()
index = RepoIndex("t", Path({str(tmp_path)!r}))
for i in range(4):
    index.set_file(extract(f"m{{i}}.py", b"def f():\\n    return g()\\n"))
parent, real_resolve, real_fork = os.getpid(), resolveapart._resolve, os.fork
def resolve(index, paths, progress=lambda _n: None):
    if os.getpid() != parent:
        time.sleep(3600)  # the copy: still resolving when the daemon is killed
    return real_resolve(index, paths, progress)
def fork():
    pid = real_fork()
    if pid:
        print(pid, flush=True)
    return pid
resolveapart._resolve = resolve
resolveapart.os.fork = fork
resolveapart.resolve_files(index, [f"m{{i}}.py" for i in range(4)])
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        time.sleep(0.2)  # (the parent now waits for the copy)
        dies_with_its_parent(proc, child, tmp_path / "pid.lock")
    finally:
        proc.kill()
        proc.wait()
        if child:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)  # (when the test failed: no copy left sleeping)
