"""One connection to the daemon: DEALER socket, request ids, progress callbacks, typed errors.

Clients never hang (docs/conventions.md point 4): LINGER 0 on the context, every wait is a poll with a deadline, and a
plain AF_UNIX connect tells "daemon not running" in well under a millisecond before zmq is involved.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import zmq

from nexusd import __version__, paths, protocol
from nexusd.errors import NexusError, Timeout, Unavailable, VersionMismatch, from_wire

from . import launcher
from .launcher import socket_alive, socket_ident

ProgressFn = Callable[[dict[str, Any]], None]
DEFAULT_TIMEOUT_S = 30.0
LIVENESS_CHECK_S = 0.5
RESTART_WAIT_S = 30.0  # how long a request waits for a daemon restarting in place to listen again
RESENDS = 3  # how many times one request is sent again through restarts in place
_ids = itertools.count(1)


class _Restarting(Exception):
    """The daemon that was to answer is restarting in place (same pid): its socket went away while the process
    lives, or it refused the request as `restarting`. The request was not run; it can be sent again."""


class Client:
    def __init__(self, dirs: paths.Dirs | None = None, *, timeout: float = DEFAULT_TIMEOUT_S):
        self.dirs = dirs or paths.dirs()
        self.timeout = timeout
        # The process-wide context, never one per client: a Client dropped without close() leaves its context,
        # socket and itself in one garbage cycle, and CPython clears the context's weak set of sockets before
        # finalizers run, so the context's __del__ -> term() then waits forever for a socket nobody closes (seen
        # as a hung test process). The shared instance is never collected; a leaked socket closes itself.
        self._ctx: zmq.Context[Any] = zmq.Context.instance()
        self._sock: zmq.Socket | None = None
        self._socket_ident: tuple[int, int] | None = None  # the socket file connected to (`_wait_listening`)
        self._prefix = f"{os.getpid()}-{id(self) & 0xFFFF:x}-"
        self.daemon_info: dict[str, Any] = {}

    # -- connection ---------------------------------------------------------------------------------

    def open(self, *, autostart: bool = False, handshake: bool = True) -> Client:
        sock_path = str(self.dirs.socket)
        launcher.verify_socket(self.dirs)
        if not socket_alive(sock_path):
            if not autostart:
                raise Unavailable(
                    f"nexusd is not running (no socket at {sock_path})",
                    hint="start it with `nexus daemon start` (or `nexusd run` in a terminal)",
                )
            launcher.start_daemon(self.dirs)
        self._connect()
        if handshake:
            info = self.request("hello", {"client": f"nexus_client/{__version__}"}, timeout=5.0)
            self.daemon_info = {k: v for k, v in info.items() if k != "catalogue"}
            self.catalogue = info.get("catalogue", [])
            if info.get("daemon") != __version__:
                if not autostart:
                    raise VersionMismatch(
                        f"daemon {info.get('daemon')} differs from client {__version__}",
                        hint="restart the daemon: `nexus daemon restart`",
                    )
                # Like dmypy: a daemon from another version is restarted, not spoken to.
                self.request("shutdown", timeout=5.0)
                self._close_socket()
                launcher.wait_stopped(self.dirs, timeout=30.0)
                launcher.start_daemon(self.dirs)
                self._connect()
        return self

    def _connect(self) -> None:
        self._close_socket()
        launcher.verify_socket(self.dirs)  # the socket is our daemon's, not one another user put in its place
        sock = self._ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, protocol.HARD_FRAME_BYTES)
        sock.connect(self.dirs.endpoint)
        self._sock = sock
        self._socket_ident = socket_ident(self.dirs.socket)

    def _pid_alive(self) -> bool | None:
        """Whether the process that answered `hello` still exists (None: no `hello`, so no pid known)."""
        pid = self.daemon_info.get("pid")
        if not isinstance(pid, int) or pid <= 0:
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def _daemon_alive(self) -> bool:
        """The process that answered `hello` still exists and something still accepts on the socket."""
        return self._pid_alive() is not False and socket_alive(str(self.dirs.socket))

    def _close_socket(self) -> None:
        if self._sock is not None:
            self._sock.close(0)
            self._sock = None

    def close(self) -> None:
        self._close_socket()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # -- requests -----------------------------------------------------------------------------------

    def request(
        self,
        op: str,
        args: dict[str, Any] | None = None,
        *,
        progress: ProgressFn | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Send one request and return its result, or raise the typed error the daemon replied with.

        `timeout` bounds the silence, not the whole request: each progress frame re-arms it, so a long
        index that keeps reporting never times out, and a dead daemon is noticed within `timeout`.
        """
        if self._sock is None or socket_ident(self.dirs.socket) != self._socket_ident:
            self._connect()  # (first, or the daemon restarted since: a request waits on the socket it went to)
        assert self._sock is not None
        req_id = f"{self._prefix}{next(_ids)}"
        frame = protocol.request_frame(req_id, op, args or {})
        self._sock.send(frame)
        wait = self.timeout if timeout is None else timeout
        resends = 0
        while True:
            try:
                return self._await(req_id, op, progress, wait, resendable=resends < RESENDS)
            except _Restarting:
                # A daemon restarting in place (nexusd/recycle.py) ran nothing of this request: it answers every
                # request it had taken but not started with `restarting`, and one it never read is lost with
                # its old socket. Once its next image listens, the same request goes again.
                resends += 1
                self._wait_listening(op)
                self._connect()
                assert self._sock is not None
                self._sock.send(frame)

    def _wait_listening(self, op: str) -> None:
        """Until the daemon's next image listens: its socket seen gone and back, or a new socket file (the old
        image's may still be bound, no longer reading, when it refuses what it had queued)."""
        path = str(self.dirs.socket)
        old, gone = self._socket_ident, False
        deadline = time.monotonic() + RESTART_WAIT_S
        while True:
            alive = socket_alive(path)
            if alive and (gone or socket_ident(path) != old):
                return
            gone |= not alive
            if time.monotonic() > deadline or not self._pid_alive():
                self._close_socket()
                raise Unavailable(
                    f"nexusd restarted during {op} and is not listening again",
                    hint="check `nexus daemon logs`; it restarts with the next command",
                )
            time.sleep(0.05)

    def _await(self, req_id: str, op: str, progress: ProgressFn | None, timeout: float, *, resendable: bool) -> Any:
        """The reply to `req_id`; raises `_Restarting` for a daemon restarting in place, when `resendable`."""
        assert self._sock is not None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            # Wait in slices: between them, a daemon that died (kill -9, a crash) is noticed within ~0.5 s
            # instead of at the end of a timeout that may be minutes long.
            wait_ms = max(0, int(min(left, LIVENESS_CHECK_S) * 1000))
            if not self._sock.poll(wait_ms, zmq.POLLIN):
                if left > LIVENESS_CHECK_S:
                    alive = self._daemon_alive()
                    if alive and socket_ident(self.dirs.socket) == self._socket_ident:
                        continue
                    if resendable and self._pid_alive():
                        # The process lives and its socket went, or is a new one (a restart in place can take
                        # less than one of these checks): what it had not read is lost with its old socket.
                        raise _Restarting()
                    if alive:
                        continue
                    self._close_socket()
                    raise Unavailable(
                        f"nexusd died while answering {op} (nothing listens on {self.dirs.socket})",
                        hint="check `nexus daemon logs`; it restarts with the next command",
                    )
                self._connect()  # drop the old pipe: a late reply must not confuse the next request
                if not socket_alive(str(self.dirs.socket)):
                    raise Unavailable(
                        f"nexusd stopped answering during {op}", hint="check `nexus daemon logs`, then retry"
                    )
                raise Timeout(f"no answer to {op} within {timeout:g}s", hint="the daemon may be busy; retry")
            frame = protocol.unpack(self._sock.recv())
            if not isinstance(frame, dict) or frame.get("id") not in (req_id, None):
                continue  # a stale reply to an abandoned request
            if frame.get("event") == "progress":
                deadline = time.monotonic() + timeout
                if progress is not None:
                    progress(frame.get("data") or {})
                continue
            if frame.get("ok"):
                return frame.get("result")
            error = frame.get("error")
            if resendable and isinstance(error, dict) and (error.get("data") or {}).get("restarting"):
                raise _Restarting()
            raise from_wire(error)


def connect(
    dirs: paths.Dirs | None = None, *, autostart: bool = False, timeout: float = DEFAULT_TIMEOUT_S
) -> Client:
    client = Client(dirs, timeout=timeout)
    try:
        return client.open(autostart=autostart)
    except (NexusError, OSError):
        client.close()
        raise
