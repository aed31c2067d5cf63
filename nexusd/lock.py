"""One daemon per home: an flock on the pid file. The kernel drops the lock when the owner dies,
so a lock left by a `kill -9`ed daemon is free again for the next start.

fcntl is used directly (not a lock library) because we need the holder's pid inside the locked file
and a non-blocking probe that names it.

A daemon that restarts itself in place (`Daemon.request_recycle`: the same pid executes its command again) hands the
locked descriptor to its next image (`handover`, then `acquire` adopts it), so no other daemon can take the
lock in between: an flock belongs to the open file, which an exec keeps when the descriptor is inheritable.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .paths import read_pid

HANDOVER_ENV = "_NEXUS_LOCK_FD"  # the locked descriptor a recycled daemon's previous image left open


class AlreadyRunning(RuntimeError):
    def __init__(self, pid: int | None, pidfile: Path):
        self.pid = pid
        super().__init__(f"nexusd is already running (pid {pid if pid else 'unknown'}; lock {pidfile})")


class PidLock:
    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        if self._adopt():
            return
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

    def _adopt(self) -> bool:
        """Take over the descriptor this process's previous image handed over, when it is this very pid file
        (device and inode) and still locked by us; else close it and lock as usual."""
        raw = os.environ.pop(HANDOVER_ENV, None)
        if raw is None or not raw.isdigit():
            return False
        fd = int(raw)
        try:
            held, here = os.fstat(fd), os.stat(self.path)
            if (held.st_dev, held.st_ino) != (here.st_dev, here.st_ino):
                raise OSError("the handed-over descriptor is not this pid file")
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ours already: succeeds at once
        except OSError:
            try:
                os.close(fd)
            except OSError:
                pass
            return False
        os.set_inheritable(fd, False)  # (the processes this image starts must not hold it)
        self._fd = fd
        return True

    def handover(self) -> dict[str, str]:
        """Keep the lock across an exec of this process: the environment entry that lets the next image adopt
        it (`acquire`). The descriptor stays open and locked."""
        if self._fd is None:
            return {}
        os.set_inheritable(self._fd, True)
        return {HANDOVER_ENV: str(self._fd)}

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None
