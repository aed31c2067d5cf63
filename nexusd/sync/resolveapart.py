"""A wide resolution (a cold index, a project file changed) shared with a forked copy of the daemon.

Resolution is pure Python on one thread (the writer's), and on two cores the other one sat idle through it: the
standard library's 2,252 files took ~6 s of a 17 s cold index. The files are split in two runs of the sorted paths,
balanced by their call counts (a file's cost is mostly its calls); a forked copy resolves the second run while this
process resolves the first, and hands its resolutions back through a pipe (pickled: the resolutions' calls and sites
are `Packed` blobs already). The copy inherits the symbol table as it is at the fork, and a file's resolution
depends only on the table, never on what was resolved before it (`tests/parse/test_memo_order.py`), so the
resolutions are the ones one process would make, file for file (`tests/sync/test_resolve_apart.py`).

The copy shares the table's pages until it touches them: reference counts are written on every read, so it ends up
holding a private copy of much of what it read. It is not forked when the system has less memory available than
this process's anonymous memory (the most the copy can come to hold privately). When it fails, is killed at its bound or its pipe does not unpickle, this process resolves its
files itself (logged). See `nexusd/forked.py` for what a forked copy may do.
"""

from __future__ import annotations

import gc
import logging
import os
import pickle
import signal
import threading
import time
from bisect import bisect_left
from collections.abc import Callable
from itertools import accumulate

from .. import config, forked
from ..parse import gcpause
from ..resolve.base import FileResolution, RepoIndex
from ..store import anon_rss

log = logging.getLogger(__name__)

# A resolution lets the resolver's memo go every this many files. The memo (type environments, bindings, include
# closures) is what a file's resolution derives and the next one may reuse; kept for a whole cold index it grew to
# ~1.3 KB per symbol (the standard library: 97 MB, the kernel's 1.8M symbols: GBs), the largest part of the
# index's peak, made among the engine's long-lived objects.
MEMO_FILES = 512
APART_WAIT_S = 1800.0  # the longest the copy may take (the Linux kernel's whole resolution: ~90 s)
PROGRESS_EVERY = 200

Progress = Callable[[int], None]


def resolve_files(index: RepoIndex, paths: list[str], progress: Progress = lambda _n: None) -> dict[str, FileResolution]:
    """The resolution of every path (sorted, each in the table), shared with a forked copy when there are at least
    NEXUS_RESOLVE_APART_FILES of them and the machine has a second core and the memory for it; `progress(n)`
    after every PROGRESS_EVERY files this process resolved."""
    least = int(config.get("NEXUS_RESOLVE_APART_FILES"))
    if least <= 0 or len(paths) < max(least, 2) or not _can_fork():
        return _resolve(index, paths, progress)
    mine, theirs = split(index, paths)
    parent = os.getpid()
    t0 = time.perf_counter()
    try:
        pid, read_end, write_end = _fork_with_pipe()
    except OSError as exc:  # (out of descriptors, memory or processes)
        log.warning("resolution not shared (%s): resolving every file here", exc)
        return _resolve(index, paths, progress)
    if pid == 0:  # the copy: resolve the second run, write it to the pipe, exit
        os.close(read_end)
        forked.in_child(parent, lambda: _send(write_end, _resolve(index, theirs)), keep=(write_end,))
    os.close(write_end)
    received = _Receiver(read_end)
    try:
        out = _resolve(index, mine, progress)
    except BaseException:
        os.kill(pid, signal.SIGKILL)  # (the sync fails: nobody wants the copy's half either)
        forked.reap(pid, APART_WAIT_S, "resolution")
        received.join()
        raise
    here_s = time.perf_counter() - t0
    status = forked.reap(pid, APART_WAIT_S, "resolution")
    data = received.join()
    got: dict[str, FileResolution] | None = None
    if os.waitstatus_to_exitcode(status) == 0:
        try:
            got = pickle.loads(data)
        except Exception:  # noqa: BLE001 - whatever the pipe held, the files are resolved here instead
            log.exception("resolutions from the forked process unreadable")
    if got is None or set(got) != set(theirs):
        log.warning("resolution of %d files apart failed (exit %s); resolving them here", len(theirs),
                    os.waitstatus_to_exitcode(status))  # fmt: skip
        got = _resolve(index, theirs, lambda n: progress(len(mine) + n))
    log.info("resolved %d files here in %.2f s and %d apart, %.2f s in all (%d bytes back)", len(mine), here_s,
             len(theirs), time.perf_counter() - t0, len(data))  # fmt: skip
    out.update(got)
    if len(paths) >= gcpause.FREEZE_AFTER_UNITS and gc.isenabled():
        gc.freeze()  # (what the copy sent, and this half when it was shorter: as one stage of this size would)
    return out


def split(index: RepoIndex, paths: list[str]) -> tuple[list[str], list[str]]:
    """Two runs of `paths` (in order) with about as many calls each, cut after the file that reaches half;
    neither empty (`paths` has two or more)."""
    totals = list(accumulate(1 + len(index.tables[p].facts.calls) if p in index.tables else 1 for p in paths))
    cut = min(bisect_left(totals, totals[-1] / 2) + 1, len(paths) - 1)
    return paths[:cut], paths[cut:]


def _fork_with_pipe() -> tuple[int, int, int]:
    """(`os.fork()`'s result, the pipe's read end, its write end); raises OSError with no descriptor left open."""
    read_end, write_end = os.pipe()
    try:
        return os.fork(), read_end, write_end
    except OSError:
        os.close(read_end)
        os.close(write_end)
        raise


def _resolve(index: RepoIndex, paths: list[str], progress: Progress = lambda _n: None) -> dict[str, FileResolution]:
    out: dict[str, FileResolution] = {}
    with gcpause.Windows() as gc_window:
        for n, path in enumerate(paths):
            out[path] = index.resolve_file(path)
            if n % PROGRESS_EVERY == 0:
                progress(n)
            if n % MEMO_FILES == MEMO_FILES - 1:
                index.release_memo()  # same answers (tests/parse/test_memo_order.py), a bounded memo
            gc_window.tick()
    return out


def _send(fd: int, resolutions: dict[str, FileResolution]) -> None:
    """In the copy: the resolutions, pickled, down the pipe."""
    data = memoryview(pickle.dumps(resolutions, protocol=pickle.HIGHEST_PROTOCOL))
    while data:
        data = data[os.write(fd, data) :]
    os.close(fd)


class _Receiver:
    """Reads the pipe on a thread while this process resolves (the copy blocks once the pipe's buffer is full)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.parts: list[bytes] = []
        self.thread = threading.Thread(target=self._run, name="resolve-apart-pipe", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 20):
                self.parts.append(chunk)
        finally:
            os.close(self.fd)

    def join(self) -> bytes:
        self.thread.join()
        return b"".join(self.parts)


def _can_fork() -> bool:
    """A second core, `os.fork`, and more memory available than this process's anonymous memory (what the copy
    may come to hold a private copy of, at most)."""
    if not hasattr(os, "fork") or _cores() < 2:
        return False
    available = _available_bytes()
    held = anon_rss()
    return available is None or held is None or available > held


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _available_bytes() -> int | None:
    """The system's `MemAvailable` (/proc/meminfo) in bytes, None where there is no such file."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
