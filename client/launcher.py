"""Starting and stopping the daemon from a client: a detached `nexusd run`, then wait until it answers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from nexusd import config, paths
from nexusd.errors import Unavailable

START_TIMEOUT_S = float(config.get("NEXUS_START_TIMEOUT"))


def socket_alive(path: str | Path) -> bool:
    """True when something accepts connections on the socket path (docs/field-notes.md: 0.06 ms, before any zmq)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(0.5)
    try:
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def start_daemon(dirs: paths.Dirs, timeout: float = START_TIMEOUT_S) -> int:
    """Start `nexusd run` in its own session and wait for its socket. Returns the pid."""
    dirs.state.mkdir(parents=True, exist_ok=True)
    start_log = dirs.state / "nexusd.start.log"
    # cwd "/": `python -m nexusd` puts the working directory first on sys.path, so started inside a source
    # checkout of another NEXUS version it would run that checkout's daemon (and a daemon should not pin a
    # directory anyway). NEXUS_HOME is made absolute for the same reason.
    env = dict(os.environ)
    if env.get("NEXUS_HOME"):
        env["NEXUS_HOME"] = str(Path(env["NEXUS_HOME"]).expanduser().absolute())
    with open(start_log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "nexusd", "run"],
            cwd="/",
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if socket_alive(dirs.socket):
            return proc.pid
        code = proc.poll()
        if code is not None:
            if code == 3 and socket_alive(dirs.socket):  # another start won the race: fine
                return proc.pid
            text = start_log.read_text(errors="replace").strip()
            if code == 3:  # lock held by a daemon that is still opening its database
                continue
            raise Unavailable(
                f"nexusd exited with code {code} while starting: {text[-500:] or 'no output'}",
                hint=f"see {dirs.log}",
            )
        time.sleep(0.02)
    raise Unavailable(f"nexusd did not answer within {timeout:g}s of starting", hint=f"see {dirs.log}")


def daemon_pid(dirs: paths.Dirs) -> int | None:
    from nexusd.lock import holder

    return holder(dirs.pidfile)


def wait_stopped(dirs: paths.Dirs, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if daemon_pid(dirs) is None:
            return True
        time.sleep(0.02)
    return False


def stop_daemon(dirs: paths.Dirs, timeout: float = 30.0) -> int | None:
    """SIGTERM the lock holder and wait for the lock to be released. Returns the pid stopped, if any."""
    pid = daemon_pid(dirs)
    if pid is None:
        return None
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return None
    if not wait_stopped(dirs, timeout):
        raise Unavailable(f"nexusd (pid {pid}) did not stop within {timeout:g}s", hint=f"kill {pid}")
    return pid
