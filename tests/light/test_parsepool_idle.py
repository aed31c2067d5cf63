"""Idle parser workers exit and come back on demand; the next index still works."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nexusd.sync.parsepool import ParsePool, ParseTask, PoolClosed
from tests.helpers import DaemonProcess, wait_for


def _write_repo(root: Path, files: int, tag: str = "", pad: int = 0) -> None:
    """`files` one-function modules, each with a `pad`-byte comment (to pass the daemon's inline byte bound)."""
    pkg = root / "pkg"
    pkg.mkdir(parents=True, exist_ok=True)
    filler = "".join(f"# {'x' * 70}\n" for _ in range(pad // 73))
    for i in range(files):
        (pkg / f"m{i}.py").write_text(f"{filler}def func_{i}{tag}(x):\n    return x + {i}\n")


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                kids += [int(x) for x in fh.read().split()]
        except FileNotFoundError:  # the thread ended between the listing and the read
            continue
    return kids


def _parser_children(pid: int) -> list[int]:
    out = []
    for kid in _children(pid):
        try:
            with open(f"/proc/{kid}/cmdline", "rb") as fh:
                if b"resource_tracker" not in fh.read():
                    out.append(kid)
        except OSError:
            pass
    return out


def test_pool_workers_retire_when_idle_and_return(tmp_path: Path) -> None:
    _write_repo(tmp_path, 12)
    tasks = [ParseTask(f"pkg/m{i}.py") for i in range(12)]
    pool = ParsePool(2, idle_s=0.5, warm=0)
    try:
        first = {o.path: o for o in pool.run(str(tmp_path), tasks)}
        assert {o.status for o in first.values()} == {"parsed"}
        assert first["pkg/m3.py"].facts is not None
        assert "func_3" in [s.name for s in first["pkg/m3.py"].facts.symbols]
        wait_for(lambda: pool.alive == 0, timeout=20, what="idle workers to exit")
        assert pool.retired == 2
        second = {o.path: o for o in pool.run(str(tmp_path), tasks)}
        assert {o.status for o in second.values()} == {"parsed"}
        assert pool.started == 4  # two more came back for the second run
    finally:
        pool.close()
    assert pool.alive == 0


def test_pool_keeps_warm_workers(tmp_path: Path) -> None:
    _write_repo(tmp_path, 4)
    pool = ParsePool(2, idle_s=0.3, warm=1)
    try:
        assert len(list(pool.run(str(tmp_path), [ParseTask(f"pkg/m{i}.py") for i in range(4)]))) == 4
        wait_for(lambda: pool.retired == 1, timeout=20, what="one worker to retire")
        assert pool.alive == 1
        outcomes = list(pool.run(str(tmp_path), [ParseTask("pkg/m0.py")]))
        assert [o.status for o in outcomes] == ["parsed"]
    finally:
        pool.close()


def test_daemon_parsers_exit_when_idle_and_next_sync_works(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _write_repo(repo, 30, pad=40_000)  # 1.2 MB: more than parses inline
    d = DaemonProcess(env={"NEXUS_PARSE_IDLE_S": "1", "NEXUS_NO_WATCH": "1"}).start()
    try:
        with d.client() as c:
            r = c.request("index", {"repo": str(repo)}, timeout=120)
            assert r["written"]["symbols"] >= 30
            wait_for(lambda: not _parser_children(d.pid), timeout=30, what="parser processes to exit")
            _write_repo(repo, 30, tag="_v2", pad=40_000)  # more than parses inline: the pool must come back
            r = c.request("sync", {"repo": str(repo)}, timeout=120)
            assert r["parsed"] == 30
            hits = c.request("locate", {"repo": str(repo), "query": "func_17_v2", "limit": 3})["results"]
            assert hits and hits[0]["name"] == "func_17_v2"
            wait_for(lambda: not _parser_children(d.pid), timeout=30, what="parser processes to exit again")
    finally:
        d.cleanup()


WARM = r"""
import sys, time
from nexusd.parse import extract
import pytest

from nexusd.sync.parsepool import ParsePool, ParseTask, PoolClosed
pool = ParsePool(1, idle_s=0)
before = extract._query.cache_info().currsize
outcomes = list(pool.run(sys.argv[1], [ParseTask(f"pkg/m{i}.py") for i in range(3)]))
deadline = time.monotonic() + 60
while extract._query.cache_info().currsize == 0 and time.monotonic() < deadline:
    time.sleep(0.05)
pool.close()
print(before, extract._query.cache_info().currsize, len(outcomes))
"""


def test_daemon_side_parser_is_built_after_a_pool_run(tmp_path: Path) -> None:
    """The languages the pool parsed get their parser and query built in the calling process too, so the next
    small change (parsed inline) does not pay for them."""
    import subprocess
    import sys

    from tests.helpers import REPO_ROOT

    _write_repo(tmp_path, 3)
    out = subprocess.run([sys.executable, "-c", WARM, str(tmp_path)], capture_output=True, text=True,
                         cwd=REPO_ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    before, after, parsed = out.stdout.split()
    assert (before, parsed) == ("0", "3")
    assert int(after) >= 1


def test_a_small_repository_is_parsed_without_starting_parser_processes(tmp_path: Path) -> None:
    """Starting the pool's processes costs more than parsing a few hundred KB here: a batch under the inline byte
    bound parses in the daemon, so indexing a small repository leaves no parser process behind."""
    from nexusd.sync.indexer import INLINE_MAX_FILES

    repo = tmp_path / "repo"
    _write_repo(repo, 10 * INLINE_MAX_FILES)  # many files, few bytes
    d = DaemonProcess(env={"NEXUS_PARSE_IDLE_S": "600", "NEXUS_NO_WATCH": "1"}).start()
    try:
        with d.client() as c:
            r = c.request("index", {"repo": str(repo)}, timeout=120)
            assert r["written"]["symbols"] >= 10 * INLINE_MAX_FILES
            assert not _parser_children(d.pid)  # a pool run would have left its workers (idle exit: 600 s)
            hits = c.request("locate", {"repo": str(repo), "query": "func_17", "limit": 3})["results"]
            assert hits and hits[0]["name"] == "func_17"
    finally:
        d.cleanup()


def test_a_run_that_meets_a_closed_pool_ends_with_a_clear_error_and_starts_no_worker(tmp_path: Path) -> None:
    """The daemon stopping closes the pool under a sync that is still parsing (seen on the kernel's start-up
    sync): the run used to fail with `ValueError: list.remove(x)` as it tried to replace the stopped workers."""
    _write_repo(tmp_path, 1500, pad=2000)
    pool = ParsePool(2, idle_s=0, warm=0)
    run = pool.run(str(tmp_path), [ParseTask(f"pkg/m{i}.py") for i in range(1500)])
    try:
        assert next(run).status == "parsed"
        started = pool.started
        pool.close()
        with pytest.raises(PoolClosed):
            for _ in run:
                pass
        assert pool.started == started and pool.alive == 0  # no worker replaced after the close
        with pytest.raises(PoolClosed):
            list(pool.run(str(tmp_path), [ParseTask("pkg/m0.py")]))
        assert pool.started == started and pool.alive == 0
    finally:
        run.close()
        pool.close()
