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
from .launcher import socket_alive

ProgressFn = Callable[[dict[str, Any]], None]
DEFAULT_TIMEOUT_S = 30.0
LIVENESS_CHECK_S = 0.5
_ids = itertools.count(1)


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

    def _daemon_alive(self) -> bool:
        """The process that answered `hello` still exists and something still accepts on the socket."""
        pid = self.daemon_info.get("pid")
        if isinstance(pid, int) and pid > 0:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                pass
        return socket_alive(str(self.dirs.socket))

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
        if self._sock is None:
            self._connect()
        assert self._sock is not None
        req_id = f"{self._prefix}{next(_ids)}"
        self._sock.send(protocol.request_frame(req_id, op, args or {}))
        return self._await(req_id, op, progress, self.timeout if timeout is None else timeout)

    def _await(self, req_id: str, op: str, progress: ProgressFn | None, timeout: float) -> Any:
        assert self._sock is not None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            # Wait in slices: between them, a daemon that died (kill -9, a crash) is noticed within ~0.5 s
            # instead of at the end of a timeout that may be minutes long.
            wait_ms = max(0, int(min(left, LIVENESS_CHECK_S) * 1000))
            if not self._sock.poll(wait_ms, zmq.POLLIN):
                if left > LIVENESS_CHECK_S:
                    if self._daemon_alive():
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
            raise from_wire(frame.get("error"))


def connect(
    dirs: paths.Dirs | None = None, *, autostart: bool = False, timeout: float = DEFAULT_TIMEOUT_S
) -> Client:
    client = Client(dirs, timeout=timeout)
    try:
        return client.open(autostart=autostart)
    except (NexusError, OSError):
        client.close()
        raise
