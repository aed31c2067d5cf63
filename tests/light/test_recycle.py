"""A daemon restarting itself in place (nexusd/recycle.py, `Daemon.request_recycle`): same pid, the PID lock never
free, the graph and memory as they were, and clients that keep working through it."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nexusd import config, recycle
from nexusd.paths import read_pid
from nexusd.recycle import Recycler
from tests.helpers import DaemonProcess, make_repo, wait_for

SOURCE = {
    "app/util.py": "def helper(x):\n    return x + 1\n",
    "app/main.py": "from app.util import helper\n\n\ndef run():\n    return helper(2)\n",
}


def _restarted(c: Any, before: int) -> bool:
    return int(c.request("status", {})["daemon"]["restartsInPlace"]) > before


def test_a_restart_in_place_keeps_the_pid_the_graph_and_memory(daemon: DaemonProcess, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", SOURCE)
    with daemon.client() as c:
        c.open()
        c.request("index", {"repo": str(repo)}, timeout=120)
        fact = c.request("remember", {"repo": str(repo), "text": "helper adds one", "about": "helper"})
        assert c.request("status", {})["daemon"]["restartsInPlace"] == 0
        assert c.request("status", {"repo": str(repo)})["repos"][0]["querySnapshot"] == "held"
        assert c.request("debug.recycle", {})["pid"] == daemon.pid
        # The same connection goes on: a request made while the daemon is away waits and is sent again.
        wait_for(lambda: _restarted(c, 0), timeout=60, what="the restart in place")
        # The query snapshot the image before held is read back from its file with no question asked.
        wait_for(lambda: c.request("status", {"repo": str(repo)})["repos"][0]["querySnapshot"] == "held",
                 timeout=30, what="the query snapshot loaded after the restart")  # fmt: skip
        found = c.request("locate", {"repo": str(repo), "query": "helper", "limit": 3})
        assert found["snapshot"]["madeBy"] == "file" and found["snapshot"]["waitedMs"] < 50, found["snapshot"]
        status = c.request("status", {})
        assert status["daemon"]["pid"] == daemon.pid
        assert daemon.proc is not None and daemon.proc.poll() is None
        assert read_pid(daemon.dirs.pidfile) == daemon.pid
        impact = c.request("impact", {"repo": str(repo), "symbol": "helper"})
        assert [r["name"] for r in impact["callers"]] == ["run"]
        items = c.request("recall", {"repo": str(repo), "query": "helper adds one"})["items"]
        assert fact["id"] in [i["id"] for i in items]
        # The symbol table the index built was held: the next image builds it again at once, with no edit.
        wait_for(lambda: c.request("status", {"repo": str(repo)})["repos"][0]["symbolTable"] == "held", timeout=30,
                 what="the symbol table rebuilt after the restart")  # fmt: skip
    shown = daemon.cli("status")
    assert shown.returncode == 0 and "restarted in place 1x" in shown.stdout, shown.stdout + shown.stderr
    log = daemon.dirs.log.read_text()
    assert "restarting in place (restart 1 of this pid): asked by debug.recycle" in log
    assert "stopped; starting again in place" in log
    assert "rebuilt the symbol table of" in log and "after the restart in place" in log
    # A clean stop before the exec: the next image trusted its graph instead of rebuilding it from the files.
    assert "did not stop cleanly" not in log


def test_requests_sent_through_the_restart_are_all_answered(daemon: DaemonProcess, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", SOURCE)
    with daemon.client() as c:
        c.open()
        c.request("index", {"repo": str(repo)}, timeout=120)
    answers: list[str] = []
    errors: list[BaseException] = []

    def ask() -> None:
        with daemon.client(timeout=60) as mine:
            mine.open()
            deadline = time.monotonic() + 8.0
            while time.monotonic() < deadline:
                try:
                    found = mine.request("locate", {"repo": str(repo), "query": "helper", "limit": 3})
                    answers.append(found["results"][0]["name"])
                except BaseException as exc:  # noqa: BLE001 (collected and asserted below)
                    errors.append(exc)
                    return

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    with daemon.client() as c:
        c.open()
        c.request("debug.recycle", {})
        wait_for(lambda: _restarted(c, 0), timeout=60, what="the restart in place")
    for t in threads:
        t.join(60)
    assert errors == []
    assert answers and set(answers) == {"helper"}


def test_no_other_daemon_takes_the_lock_while_one_restarts_in_place(daemon: DaemonProcess) -> None:
    with daemon.client() as c:
        c.open()
        c.request("debug.recycle", {})
        rivals = []
        for _ in range(4):  # before, during and after the exec: the lock is never free
            rivals.append(subprocess.run([sys.executable, "-m", "nexusd", "run"], env=daemon.env,
                                         capture_output=True, text=True, timeout=60))  # fmt: skip
            time.sleep(0.2)
        wait_for(lambda: _restarted(c, 0), timeout=60, what="the restart in place")
    assert [r.returncode for r in rivals] == [3, 3, 3, 3], [r.stderr for r in rivals]
    assert read_pid(daemon.dirs.pidfile) == daemon.pid


def test_a_stop_asked_for_during_a_restart_in_place_stops(daemon: DaemonProcess) -> None:
    with daemon.client() as c:
        c.open()
        c.request("debug.recycle", {})
        c.request("shutdown", {})
    assert daemon.proc is not None
    daemon.proc.wait(60)


def test_a_restart_asked_for_after_a_stop_for_good_does_not_happen(tmp_path: Path) -> None:
    """The idle writer's check can ask for a restart in place in the same millisecond as a SIGTERM (the bench saw
    the restart win: the daemon came back instead of stopping). Whichever comes first, a stop for good wins."""
    from nexusd.daemon import Daemon
    from nexusd.paths import dirs

    home = dirs({"NEXUS_HOME": str(tmp_path / "home")})
    late = Daemon(home)
    late.request_stop()  # (SIGTERM, SIGINT, `shutdown`)
    late.request_recycle("the writer's check, just after")
    assert not late.restarts_in_place
    early = Daemon(home)
    early.request_recycle("the writer's check")
    assert early.restarts_in_place
    early.request_stop()
    assert not early.restarts_in_place


# -- when the writer asks for it (no daemon: the decision alone) ---------------------------------------------------


class _Live:
    """`LiveSync.tables_to_rebuild` and `long_rebuild` as the test says: the tables held (rebuilt after a
    restart), or None (a worktree view's, which a restart may not let go)."""

    def __init__(self, held: bool | list[str], big: bool = False, built_cold: bool = False) -> None:
        self.held = held
        self.big = big  # a table of over RELEASE_MAX_FILES files is among them
        self.built_cold = built_cold  # this image indexed a repository whole

    def tables_to_rebuild(self) -> list[str] | None:
        if isinstance(self.held, list):
            return self.held
        return None if self.held else []

    def long_rebuild(self) -> bool:
        return self.big


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The MB the allocator keeps beyond its live objects, as the next readings will say (first: the baseline)."""
    readings: list[int] = []
    monkeypatch.setattr(Recycler, "kept_mb", staticmethod(lambda: (readings.pop(0), 400)))
    monkeypatch.setattr(recycle, "anon_rss", lambda: 4096 * 2**20)  # (a large daemon: NEXUS_RECYCLE_MB decides)
    monkeypatch.setenv("NEXUS_RECYCLE_MB", "128")
    monkeypatch.setenv("NEXUS_RECYCLE_QUIET_S", "30")
    config.reload()
    yield readings
    monkeypatch.undo()
    config.reload()


def test_the_writer_asks_only_when_quiet_with_no_table_and_past_the_start(kept: list[int]) -> None:
    asked: list[str] = []
    r = Recycler(asked.append)
    long_ago = time.monotonic() - 60
    kept.append(40)  # at start: what starting left (the baseline)
    r.start()
    assert not r.consider(_Live(False), long_ago)  # nothing let go or written since
    r.note()
    assert not r.consider(_Live(False), time.monotonic())  # a request came just now
    assert not r.consider(_Live(True), long_ago)  # a worktree view's table is held
    r.note()
    kept.append(40 + 127)
    assert not r.consider(_Live(False), long_ago)  # less than NEXUS_RECYCLE_MB beyond the start
    r.note()
    kept.append(40 + 128)
    assert r.consider(_Live(False), long_ago)
    assert len(asked) == 1 and "168 MB" in asked[0]
    r.note()
    assert not r.consider(_Live(False), long_ago)  # asked once; the restart is on its way


def test_a_held_table_of_a_small_repository_does_not_hold_the_restart_back(kept: list[int]) -> None:
    # After a cold index the table is held while what the index fragmented is kept: the restart lets both go and
    # the next image rebuilds the table at once (the standard library: ~395 MB settled -> ~297 MB).
    asked: list[str] = []
    r = Recycler(asked.append)
    kept.append(40)
    r.start()
    r.note()
    kept.append(40 + 128)
    assert r.consider(_Live(["r1"]), time.monotonic() - 60)
    assert len(asked) == 1 and "1 symbol table(s) rebuilt after it" in asked[0]


def test_a_write_starts_the_quiet_again_and_a_big_table_waits_longer(kept: list[int]) -> None:
    # The kernel's table (78,000 files) takes the writer ~26 s to rebuild after a restart: an edit saved then
    # waits for it, so with such a table held the daemon waits BIG_TABLE_QUIET x NEXUS_RECYCLE_QUIET_S (30 s).
    asked: list[str] = []
    r = Recycler(asked.append)
    kept.append(40)
    r.start()
    long_ago = time.monotonic() - 3600
    r.note(wrote=True)  # the writer wrote just now (an edit the watcher saw: no client request)
    assert not r.consider(_Live(["big"], big=True), long_ago)
    assert not r.consider(_Live(["small"]), long_ago)
    r.wrote_at = time.monotonic() - 60  # a minute since: enough for a small table, not for a big one
    assert not r.consider(_Live(["big"], big=True), long_ago)
    assert asked == [] and kept == []  # (not even measured)
    r.wrote_at = time.monotonic() - 301
    kept.append(40 + 128)
    assert r.consider(_Live(["big"], big=True), long_ago)
    assert len(asked) == 1 and "1 symbol table(s) rebuilt after it" in asked[0]


def test_after_a_cold_index_the_quiet_is_shorter_but_not_for_a_big_table(kept: list[int]) -> None:
    # A first index leaves the most behind (the standard library's: ~85 MB freed but kept): the image that made
    # one waits NEXUS_RECYCLE_AFTER_INDEX_S (5 s), not NEXUS_RECYCLE_QUIET_S (30 s); a kernel-sized table still
    # waits BIG_TABLE_QUIET x NEXUS_RECYCLE_QUIET_S, its rebuild holding the writer for half a minute.
    asked: list[str] = []
    r = Recycler(asked.append)
    kept.append(40)
    r.start()
    r.note(wrote=True)
    r.wrote_at = time.monotonic() - 6
    assert not r.consider(_Live(["r1"]), time.monotonic() - 60)  # no cold index in this image: 30 s
    assert not r.consider(_Live(["big"], big=True, built_cold=True), time.monotonic() - 60)
    assert not r.consider(_Live(["r1"], built_cold=True), time.monotonic() - 4)  # a request 4 s ago
    assert asked == [] and kept == []  # (not even measured)
    kept.append(40 + 128)
    assert r.consider(_Live(["r1"], built_cold=True), time.monotonic() - 6)
    assert len(asked) == 1


def test_a_restart_in_place_waits_its_interval_after_the_last(kept: list[int]) -> None:
    asked: list[str] = []
    r = Recycler(asked.append, last_at=time.time() - 60)  # this pid restarted in place a minute ago
    kept.append(0)
    r.start()
    r.note()
    assert not r.consider(_Live(False), time.monotonic() - 60)
    assert asked == [] and kept == []  # (not even measured)
    r.last_at = time.time() - 601
    kept.append(500)
    assert r.consider(_Live(False), time.monotonic() - 60)


def test_a_limit_of_zero_never_asks(kept: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_RECYCLE_MB", "0")
    config.reload()
    asked: list[str] = []
    r = Recycler(asked.append)
    r.note()
    assert not r.consider(_Live(False), time.monotonic() - 60)
    assert asked == [] and kept == []  # (not even measured)


def test_a_small_daemon_restarts_once_what_is_kept_is_a_share_of_it(kept: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    # 1,000 generated files, their table let go and their database rested: 10 MB kept of 52 MB anonymous, far
    # under NEXUS_RECYCLE_MB, where a restarted image holds 35 MB.
    asked: list[str] = []
    r = Recycler(asked.append)
    kept.append(2)
    r.start()
    long_ago = time.monotonic() - 60
    monkeypatch.setattr(recycle, "anon_rss", lambda: 48 * 2**20)
    r.note()
    kept.append(2 + 7)  # 7 MB: a seventh of 48, but under SHARE_MIN_MB
    assert not r.consider(_Live([]), long_ago)
    r.note()
    monkeypatch.setattr(recycle, "anon_rss", lambda: 140 * 2**20)  # the database open: 10 MB is not SHARE of it
    kept.append(2 + 10)
    assert not r.consider(_Live([]), long_ago)
    r.note()
    monkeypatch.setattr(recycle, "anon_rss", lambda: 52 * 2**20)
    kept.append(2 + 10)
    assert r.consider(_Live([]), long_ago)
    assert len(asked) == 1 and "52 MB anonymous" in asked[0]
