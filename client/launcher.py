"""Starting and stopping the daemon from a client: a detached `nexusd run`, then wait until it answers."""

from __future__ import annotations

import os
import signal
import socket
import struct
import sys
import time
from pathlib import Path

from nexusd import config, paths
from nexusd.errors import Forbidden, Unavailable

START_TIMEOUT_S = float(config.get("NEXUS_START_TIMEOUT"))


def socket_ident(path: str | Path) -> tuple[int, int] | None:
    """Which socket file is at `path` (inode, change time), None when there is none: a daemon that restarted in
    place (same pid) bound a new one."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_ctime_ns


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


def peer_uid(path: str | Path) -> int | None:
    """The uid of the process listening on the socket path (SO_PEERCRED), or None when nobody listens.

    pyzmq does not expose the fd of an ipc connection (libzmq's ZMQ_IPC_FILTER_UID filters on the binding
    side only), so a plain AF_UNIX connect to the same path asks the kernel who is there. The directories
    on the way are checked first (`verify_socket`), so the path cannot be swapped between this and zmq's connect.
    """
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(0.5)
    try:
        probe.connect(str(path))
        if not hasattr(socket, "SO_PEERCRED"):  # not Linux: the directory checks are what we have
            return os.geteuid()
        _pid, uid, _gid = struct.unpack("3i", probe.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        return int(uid)
    except OSError:
        return None
    finally:
        probe.close()


def verify_socket(dirs: paths.Dirs) -> None:
    """Refuse (Forbidden, naming the directory and its owner) a socket another local user could have placed:
    every directory from the per-user top down must be ours and writable by nobody else, and the process
    listening on the socket must run as our uid."""
    hint = "another local user may have created it first: remove it, or set XDG_RUNTIME_DIR or NEXUS_HOME"
    try:
        paths.check_socket_dirs(dirs)
    except FileNotFoundError:
        return  # nothing there yet: the daemon is not running (and creates the directories itself)
    except paths.UnsafePath as exc:
        raise Forbidden(str(exc), hint=hint) from None
    uid = peer_uid(dirs.socket)
    if uid is not None and uid != os.geteuid():
        owner = paths.owner_name(uid)
        raise Forbidden(f"refusing to talk to {dirs.socket}: it is served by {owner}, not by {paths.owner_name(os.geteuid())}", hint=hint)


def start_daemon(dirs: paths.Dirs, timeout: float = START_TIMEOUT_S) -> int:
    """Start `nexusd run` in its own session and wait for its socket. Returns the pid."""
    import subprocess  # (here: ~3 ms of every client's start-up, and most never start a daemon)

    paths.ensure_private_dir(dirs.state)
    start_log = dirs.state / "nexusd.start.log"
    # cwd "/": `python -m nexusd` puts the working directory first on sys.path, so started inside a source
    # checkout of another NEXUS version it would run that checkout's daemon (and a daemon should not pin a
    # directory anyway). NEXUS_HOME is made absolute for the same reason.
    env = dict(os.environ)
    if env.get("NEXUS_HOME"):
        env["NEXUS_HOME"] = str(Path(env["NEXUS_HOME"]).expanduser().absolute())
    # The daemon's early stderr: private like everything under the home (0600, whatever the client's umask).
    fd = os.open(start_log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "wb") as err:
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
    return paths.pid_holder(dirs.pidfile)


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
