"""The daemon's lifecycle: start, hello, status, stop; one per home; a killed daemon's lock is free again."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

import pytest

from nexusd import WIRE_VERSION, __version__
from nexusd.errors import ERROR_CODES
from tests.helpers import DaemonProcess, wait_for


def test_start_hello_status_stop(daemon: DaemonProcess) -> None:
    with daemon.client() as c:
        hello = c.request("hello")
        assert hello["daemon"] == __version__ and hello["wire"] == WIRE_VERSION
        assert hello["pid"] == daemon.pid
        names = {entry["name"] for entry in hello["catalogue"]}
        assert {"hello", "ping", "status", "shutdown"} <= names
        for entry in hello["catalogue"]:
            assert entry["description"] and entry["inputSchema"]["type"] == "object"
        status = c.request("status")
        assert status["daemon"]["pid"] == daemon.pid
        assert c.request("shutdown")["stopping"] is True
    assert daemon.proc is not None
    assert daemon.proc.wait(30) == 0
    assert not daemon.dirs.socket.exists()
    assert (daemon.dirs.state / "clean-shutdown").exists()


def test_second_daemon_refused_naming_pid(daemon: DaemonProcess) -> None:
    t0 = time.monotonic()
    second = subprocess.run(
        [sys.executable, "-m", "nexusd", "run"], env=daemon.env, capture_output=True, text=True, timeout=30
    )
    assert second.returncode == 3
    assert f"pid {daemon.pid}" in second.stderr
    assert time.monotonic() - t0 < 10
    with daemon.client() as c:  # the first one still serves
        assert c.request("ping")["pid"] == daemon.pid


def test_killed_daemon_lock_is_taken_over() -> None:
    first = DaemonProcess().start()
    try:
        first.kill9()
        second = DaemonProcess(home=first.home).start()
        try:
            with second.client() as c:
                assert c.request("ping")["pid"] == second.pid != first.pid
        finally:
            second.stop()
    finally:
        first.cleanup()


def test_sigterm_stops_cleanly(daemon: DaemonProcess) -> None:
    assert daemon.stop() == 0
    assert not daemon.dirs.socket.exists()
    assert (daemon.dirs.state / "clean-shutdown").exists()
    assert "stopped" in daemon.dirs.log.read_text()


def test_a_stop_does_not_wait_on_a_request_still_running_in_the_store() -> None:
    """A query still running in Kuzu when the stop's wait (NEXUS_STOP_WAIT_S) ends: the daemon exits without
    closing the database (its close waits for the statement, or for good: a kernel start-up sync once held a
    stop that way), and the next start opens it and serves."""
    import threading

    first = DaemonProcess(env={"NEXUS_STOP_WAIT_S": "1"}).start()
    try:
        slow = "UNWIND range(1, 150000) AS a UNWIND range(1, 150000) AS b RETURN sum(a * b)"  # (a minute or more)
        errors: list[BaseException] = []

        def ask() -> None:
            try:
                with first.client() as c:
                    c.request("debug.cypher", {"query": slow}, timeout=300)
            except BaseException as exc:  # the daemon goes away under it
                errors.append(exc)

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        time.sleep(2)  # the query is running
        t0 = time.monotonic()
        assert first.stop(timeout=60) == 0
        assert time.monotonic() - t0 < 15
        assert "exiting without closing the database" in first.dirs.log.read_text()
        asker.join(30)
        second = DaemonProcess(home=first.home).start()
        try:
            with second.client() as c:
                assert c.request("status")["daemon"]["pid"] == second.pid
                assert c.request("debug.cypher", {"query": "RETURN 1 + 1"})["rows"] == [[2]]
        finally:
            second.stop()
    finally:
        first.cleanup()


def test_socket_dir_private(daemon: DaemonProcess) -> None:
    run_dir = daemon.dirs.socket.parent
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(daemon.dirs.socket.stat().st_mode) & 0o077 == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a probe as another uid")
def test_socket_unreachable_for_other_user(daemon: DaemonProcess) -> None:
    import socket

    pid = os.fork()
    if pid == 0:  # the child becomes `nobody` and tries the socket; exit 0 means "refused"
        code = 2
        try:
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(str(daemon.dirs.socket))
                code = 1
            except PermissionError:
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, "another uid could connect to the socket"


def test_error_codes_are_closed_and_documented() -> None:
    doc = (os.path.join(os.path.dirname(__file__), "..", "ARCHITECTURE.md"))
    text = open(doc).read()
    for code in ERROR_CODES:
        assert f"`{code}`" in text, f"error code {code} is not documented in ARCHITECTURE.md"


def test_stale_socket_file_does_not_block_start() -> None:
    d = DaemonProcess()
    try:
        d.dirs.socket.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        d.dirs.socket.write_text("stale")
        d.start()
        with d.client() as c:
            assert c.request("ping")["pong"]
    finally:
        d.cleanup()


def test_slow_request_does_not_block_the_loop(daemon: DaemonProcess) -> None:
    import threading

    with daemon.client() as slow, daemon.client() as fast:
        progress: list[dict] = []
        t = threading.Thread(target=lambda: slow.request("debug.sleep", {"seconds": 1.5}, progress=progress.append))
        t.start()
        wait_for(lambda: progress, what="first progress frame")
        t0 = time.monotonic()
        for _ in range(50):
            fast.request("ping")
            fast.request("status")
        assert time.monotonic() - t0 < 1.5  # answered while the slow one still runs
        t.join(10)
        assert progress and "left" in progress[0]


def _stall(client, seconds: float, frames: list[dict]) -> dict:  # type: ignore[no-untyped-def]
    return client.request("debug.stall", {"seconds": seconds}, progress=frames.append, timeout=1.5)


def test_a_silent_long_request_gets_heartbeats_and_is_not_given_up() -> None:
    """A long job that reports nothing for longer than the client's timeout (a large repository's write) is
    answered: the socket loop sends a heartbeat frame every NEXUS_HEARTBEAT_S, naming the last phase, and every
    frame restarts the client's clock. A second long request waiting behind it hears "queued"."""
    import threading

    d = DaemonProcess(env={"NEXUS_DEBUG_OPS": "1", "NEXUS_HEARTBEAT_S": "0.4"}).start()
    try:
        with d.client() as first, d.client() as second:
            frames: list[dict] = []
            behind: list[dict] = []
            got: dict = {}
            t = threading.Thread(target=lambda: got.update(second=_stall(second, 0.5, behind)))
            started = threading.Thread(target=lambda: got.update(first=_stall(first, 4.0, frames)))
            started.start()
            wait_for(lambda: frames, what="the first progress frame")
            t.start()
            started.join(30)
            t.join(30)
        assert got == {"first": {"stalled": 4.0}, "second": {"stalled": 0.5}}, got
        beats = [f for f in frames if f.get("heartbeat")]
        assert len(beats) >= 5, frames
        assert {f["phase"] for f in beats} == {"stalling"}, beats
        seconds = [f["seconds"] for f in beats]
        assert seconds == sorted(seconds) and seconds[-1] >= 3, seconds
        assert [f["phase"] for f in behind if f.get("heartbeat")][:3] == ["queued"] * 3, behind
    finally:
        d.cleanup()


def test_without_heartbeats_the_same_request_is_given_up() -> None:
    """The control of the test above: with heartbeats rarer than the client's timeout, the client gives up on the
    silence (so the test above passes because of them)."""
    from nexusd.errors import Timeout

    d = DaemonProcess(env={"NEXUS_DEBUG_OPS": "1", "NEXUS_HEARTBEAT_S": "60"}).start()
    try:
        with d.client() as c:
            with pytest.raises(Timeout):
                _stall(c, 4.0, [])
    finally:
        d.cleanup()
