"""A cold batch's query snapshot made in a child process while the writer writes the graph.

After a cold index the first answer waits for the snapshot's arrays (`compact.build`, ~6 CPU-s on the standard
library). Made on a thread of the daemon while Kuzu copies the batch in, they slowed the write 2-2.4x (the writer
waits for the interpreter lock each time it comes back from Kuzu); made after the commit, the first answer waits
the whole build. So they are made in a forked child instead, on the other core, from the very objects the writer
is about to write: `start` forks just before the write, the child runs `compact.build` on the inherited files
and saves the result with `compact.save` (a temporary name, fsync, rename) under a stamp nobody else uses; after
the commit `Child.result` waits for it (bounded) and loads that file (~0.1 s). On any failure, timeout or
mismatch the caller builds in-process as before, so the child can make an answer late, never wrong.

Why fork and not a fresh interpreter: the child needs the batch's facts and resolutions, and sending them costs
more than the build (pickling the standard library's took 4 CPU-s in the daemon, holding the interpreter lock,
and 6 CPU-s to read back); a forked child reads them in place (copy-on-write), and has the same string hash seed,
so its tables come out in the very order the in-process build gives. What the child may do after the fork is
kept small, since the daemon has threads (Kuzu's, ZeroMQ's, the readers') whose locks it inherits held or not:
pure Python over the inherited objects, arrays, json, zlib and its own new file; no logging, no import (every
module it runs is imported before the fork), no database, no socket, no `dlopen` (the `prctl` entry point is
looked up before the fork); it ends with `os._exit`, so no finaliser or buffered output of the daemon runs twice.
It dies with the daemon (PR_SET_PDEATHSIG), and exits at once if the daemon is already gone. ARCHITECTURE.md
("After a cold index the arrays are made in a child process") has the figures.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import secrets
import signal
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import compact

if TYPE_CHECKING:
    from ..batch import FileData

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
NAME = b"nexus-snapshot"  # the child's name in ps and /proc/<pid>/comm (its command line is the daemon's)


def _prctl() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()  # looked up now: a dlopen after the fork could wait forever on a loader lock held by a thread


def available() -> bool:
    """Whether a child can be used here: fork, and a way to make it die with the daemon (Linux)."""
    return hasattr(os, "fork") and hasattr(os, "waitid") and _PRCTL is not None and sys.platform.startswith("linux")


class Child:
    """One child making one cold batch's arrays. `result` waits for it and loads what it saved; `cancel` kills
    it. Either way it is reaped by its own watcher thread (no zombie), and its file is removed."""

    def __init__(self, pid: int, path: Path, stamp: dict[str, Any], files: Sequence[tuple[str, FileData]]) -> None:
        self.pid, self.path, self.stamp = pid, path, stamp
        self.started = time.monotonic()
        self.seconds: float | None = None  # how long the child ran
        self.cpu_seconds: float | None = None  # and the CPU time it used
        self._files: Sequence[tuple[str, FileData]] | None = files
        self._lock = threading.Lock()
        self._exited = threading.Event()
        self._status: int | None = None  # the exit code, or -signal
        threading.Thread(target=self._watch, name=f"snapshot-child-{pid}", daemon=True).start()

    def _watch(self) -> None:
        try:
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: the pid is still ours
            with self._lock:  # reaped under the lock `cancel` kills under: it never signals a reused pid
                _, status, usage = os.wait4(self.pid, 0)
                self._status = os.waitstatus_to_exitcode(status)
                self.seconds = round(time.monotonic() - self.started, 3)
                self.cpu_seconds = round(usage.ru_utime + usage.ru_stime, 3)
                self._exited.set()
        except ChildProcessError:  # reaped by someone else: its outcome is unknown
            with self._lock:
                self._status = None
                self._exited.set()

    def made_from(self, files: Sequence[tuple[str, FileData]]) -> bool:
        """Whether `files` are exactly what the child was given: the same paths in the same order, and the very
        same facts and resolution objects (the engine did not replace any between the fork and the commit)."""
        mine = self._files
        if mine is None or len(mine) != len(files):
            return False
        for (p, (facts, res)), (q, (facts2, res2)) in zip(mine, files, strict=True):
            if p != q or facts is not facts2 or res is not res2:
                return False
        return True

    def result(self, timeout: float) -> compact.Frozen | None:
        """The arrays the child made, once it exited (waiting at most `timeout` seconds), or None if it failed,
        was killed, ran too long or left no valid file (the caller then builds them itself)."""
        self._files = None
        try:
            if not self._exited.wait(timeout):
                log.warning("snapshot child %d still running after %.0f s; building in-process", self.pid, timeout)
                return None
            if self._status != 0:
                log.warning("snapshot child %d failed (status %s); building in-process", self.pid, self._status)
                return None
            try:
                return compact.load_file(self.path, self.stamp)
            except compact.BadFile as e:
                log.warning("snapshot child %d left no usable file (%s); building in-process", self.pid, e)
                return None
        finally:
            self.cancel()

    def cancel(self) -> None:
        """Kill the child if it still runs, and remove its file."""
        self._files = None
        with self._lock:
            if not self._exited.is_set():
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        remove(self.path)

    def wait_exited(self, timeout: float) -> bool:
        return self._exited.wait(timeout)


def remove(path: Path) -> None:
    """Remove a child's file and any temporary one a killed child left beside it."""
    path.unlink(missing_ok=True)
    try:
        for tmp in path.parent.glob(path.name + ".tmp*"):
            tmp.unlink(missing_ok=True)
    except OSError:
        pass


def start(repo_id: str, files: Sequence[tuple[str, FileData]], path: Path) -> Child | None:
    """Fork a child that makes `compact.build(repo_id, files)` and saves it to `path`; None if that cannot be
    done here. Called on the writer just before the batch is written; returns at once."""
    if not available():
        return None
    remove(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = {"repo": repo_id, "child": secrets.token_hex(8), "files": len(files)}
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: see the module docstring for what it may do
        code = 1
        try:
            _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:
                os._exit(2)
            _PRCTL(PR_SET_NAME, NAME)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)  # not the daemon's handlers
            try:
                signal.set_wakeup_fd(-1)  # a signal here must not wake the daemon's loop
            except (ValueError, OSError):
                pass
            gc.disable()  # the build only adds objects; and a collection would touch (copy) every inherited page
            compact.save(compact.build(repo_id, files), path, stamp)
            code = 0
        except BaseException:
            try:
                os.write(2, f"query snapshot child failed:\n{traceback.format_exc()}".encode(errors="replace"))
            except BaseException:
                pass
        finally:
            os._exit(code)
    return Child(pid, path, stamp, files)
