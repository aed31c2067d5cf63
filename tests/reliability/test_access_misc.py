"""Smaller input and reporting defects: a NUL byte in any path argument is `bad_request` (not `internal`);
`status` lists what the graph leaves out, by reason, with counts and examples; a client whose daemon dies while
it waits says so within about a second; a file whose parse timed out is not parsed again at every sync."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nexusd.errors import NexusError, Unavailable
from tests.helpers import DaemonProcess, make_repo, pooled_modules

SOURCE = {"pkg/__init__.py": "", "pkg/mod.py": "def main():\n    return 1\n"}


def test_a_nul_byte_in_any_path_argument_is_bad_request(daemon: DaemonProcess, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", SOURCE)
    scope = {"repo": str(repo), "user": "alice"}
    nul = "pkg/\x00mod.py"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("index", {"repo": str(repo) + "\x00"}),
        ("sync", {**scope, "paths": [nul]}),
        ("show", {**scope, "path": nul}),
        ("imports", {**scope, "path": nul}),
        ("importers", {**scope, "path": nul}),
        ("locate", {"repo": str(repo) + "\x00/x", "user": "alice", "query": "main"}),
        ("procedure", {**scope, "title": "t", "steps": ["s"], "files": [nul]}),
        ("scan", {"kind": "shell", **scope, "scrape": [{"path": "/root/.bash\x00_history", "shell": "bash"}]}),
        ("history.sync", {**scope, "claudeDir": "/root/\x00claude", "transcripts": True}),
    ]
    with daemon.client() as c:
        c.request("index", scope, timeout=120)
        for op, args in calls:
            with pytest.raises(NexusError) as info:
                c.request(op, args, timeout=60)
            assert info.value.code == "bad_request", (op, info.value.code, info.value.message)
        assert c.request("ping")["pong"]


def test_status_lists_what_was_skipped(daemon: DaemonProcess, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", SOURCE, commit=False)
    (repo / "escape.py").symlink_to("/etc/passwd")
    (repo / "out").symlink_to("/etc")
    (repo / ".env").write_text("TOKEN=x\n")
    (repo / "id_rsa").write_text("key\n")
    os.mkfifo(repo / "pipe.py")
    with open(repo / "big.py", "wb") as fh:
        fh.truncate(3_000_000)
    scope = {"repo": str(repo), "user": "alice"}
    with daemon.client() as c:
        c.request("index", scope, timeout=120)
        skipped = c.request("status", scope)["repos"][0]["skipped"]
    assert skipped["symlink-escape"]["count"] == 2
    assert sorted(skipped["symlink-escape"]["examples"]) == ["escape.py", "out"]
    assert skipped["secret"]["count"] == 2
    assert skipped["fifo"] == {"count": 1, "examples": ["pipe.py"]}
    assert skipped["too-large"] == {"count": 1, "examples": ["big.py"]}


def test_a_client_notices_its_daemon_died_while_waiting(daemon: DaemonProcess) -> None:
    got: dict[str, Any] = {}
    asked = threading.Event()
    c = daemon.client()

    def wait_long() -> None:
        try:
            asked.set()
            c.request("debug.sleep", {"seconds": 20}, timeout=5)  # progress re-arms: it would wait 20 s
        except NexusError as exc:
            got["error"] = exc

    t = threading.Thread(target=wait_long)
    t.start()
    assert asked.wait(10)
    time.sleep(1.0)
    killed_at = time.monotonic()
    daemon.kill9()
    t.join(30)
    assert not t.is_alive()
    assert isinstance(got.get("error"), Unavailable), got
    assert "died" in got["error"].message
    assert time.monotonic() - killed_at < 3, "the client took more than ~2 s to notice the daemon's death"
    c.close()


def test_a_parse_timeout_is_not_retried_at_every_sync(tmp_path: Path) -> None:
    files = pooled_modules()  # more than the daemon parses inline: the pool (which a hang cannot stall) runs them
    repo = make_repo(tmp_path / "r", files)
    d = DaemonProcess(env={"NEXUS_FAULT_HANG": "pkg/m1.py", "NEXUS_PARSE_TIMEOUT": "4", "NEXUS_NO_WATCH": "1"}).start()
    scope = {"repo": str(repo), "user": "alice"}
    try:
        with d.client() as c:
            r = c.request("index", scope, timeout=120)
            assert {"path": "pkg/m1.py", "reason": "timeout"} in r["skipped"]
            for _ in range(2):  # full-walk syncs (no watcher): the same bytes are not parsed again
                t0 = time.monotonic()
                r = c.request("sync", scope, timeout=120)
                assert r["mode"] == "noop", r
                assert time.monotonic() - t0 < 4
            assert c.request("status", scope)["repos"][0]["skipped"]["timeout"]["examples"] == ["pkg/m1.py"]
            r = c.request("index", {**scope, "full": True}, timeout=120)  # a rebuild tries it again
            assert {"path": "pkg/m1.py", "reason": "timeout"} in r["skipped"]
        log = d.dirs.log.read_text()
        assert log.count("parsing pkg/m1.py: timeout") == 2, log[-2000:]
    finally:
        d.cleanup()
