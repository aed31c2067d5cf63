"""One daemon per home: an flock on the pid file. The kernel drops the lock when the owner dies,
so a lock left by a `kill -9`ed daemon is free again for the next start.

fcntl is used directly (not a lock library) because we need the holder's pid inside the locked file
and a non-blocking probe that names it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .paths import read_pid


class AlreadyRunning(RuntimeError):
    def __init__(self, pid: int | None, pidfile: Path):
        self.pid = pid
        super().__init__(f"nexusd is already running (pid {pid if pid else 'unknown'}; lock {pidfile})")


class PidLock:
    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = read_pid(self.path)
            os.close(fd)
            raise AlreadyRunning(pid, self.path) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None
