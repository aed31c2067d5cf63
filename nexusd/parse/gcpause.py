"""A window without cyclic garbage collection, around work that allocates many small acyclic objects.

A cold index builds millions of lists, tuples and records (decoded facts, resolutions, graph rows) and keeps
most of them. Each young-generation collection walks what was allocated since the last one, and every tenth
promotes into the older generations, which are walked again as the heap grows: on the standard library,
decoding the parser processes' outcomes cost 2.6-3.3 CPU-s with collection on and 0.6-0.7 s with it paused
per outcome; resolving, 9.6 s against 6.4 s. Nothing in such a window makes cycles that outlive it, and
collection resumes as it was when the window closes (so a window per file, not per sync, keeps other
threads' garbage collected as before). See ARCHITECTURE.md, "CPU per file".

Also here, the process's C heap (glibc): handing its free pages back (`trim_heap`), capping its arenas
(`limit_arenas`), and a census of where the memory sits (`heap_census`, for the op fuzz's `debug.heap`).
"""

from __future__ import annotations

import ctypes
import functools
import gc
import logging
import os
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger(__name__)


@contextmanager
def paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# A stage of at least this many units freezes what survived it (`Windows`).
FREEZE_AFTER_UNITS = 1_000


class Windows:
    """Collection paused over a stage of many units (files), with one young collection every `every` units:
    what the units allocated is walked once (and any cycle among it freed), instead of the young and middle
    generations being walked again and again as the heap grows. Use as a context manager and call `tick()`
    once per unit. Collection resumes as it was at the end of the stage.

    A stage of `FREEZE_AFTER_UNITS` units or more first freezes what survived it (`gc.freeze()`: a file's facts,
    the symbol table, the resolutions, all long-lived), or the first full collection after it walked the whole
    heap holding the interpreter: on the Linux kernel's cold index 1.7, 2.4 and 6.8 s after its parse, symbol
    table and resolution stages (py-spy), every query of every repository waiting (a small repository's `locate`
    up to 4.8 s). Frozen objects are still freed by reference counting; a cycle among them waits for
    `reclaim` like the rest of the frozen heap (see "cyclic garbage among frozen objects" below)."""

    def __init__(self, every: int = 256) -> None:
        self.every = every
        self._count = 0
        self._units = 0
        self._was_enabled = False

    def __enter__(self) -> Windows:
        self._was_enabled = gc.isenabled()
        gc.disable()
        return self

    def tick(self) -> None:
        self._count += 1
        self._units += 1
        if self._count >= self.every:
            self._count = 0
            if self._was_enabled:
                gc.collect(1)

    def __exit__(self, *exc: object) -> None:
        if self._was_enabled:
            if self._units >= FREEZE_AFTER_UNITS:
                gc.freeze()
            gc.enable()


def trim_heap() -> None:
    """Hand the C heap's free pages back to the system (glibc `malloc_trim`; nothing elsewhere). After a big batch
    or a snapshot build, glibc keeps the memory of the rows and buffers just freed mapped otherwise
    (ARCHITECTURE.md, "Memory of the code graph")."""
    trim = _libc_function("malloc_trim")
    if trim is not None:
        trim(0)


M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)


def limit_arenas(count: int) -> bool:
    """Let glibc keep at most `count` malloc arenas in this process (`mallopt(M_ARENA_MAX)`), unless the user set
    MALLOC_ARENA_MAX, which glibc has read already. Call before threads start. By default glibc gives each new
    thread that allocates an arena of its own (up to 8 per core); the daemon's writer, readers and Kuzu's
    worker threads each free into theirs, and the free space, scattered over many arenas, stayed resident:
    under the op fuzz glibc held up to ~390 MB free beside 160-250 MB in use (`heap_census`). Two arenas
    plus a trim after each idle checkpoint: ARCHITECTURE.md, "Memory at rest". Returns whether it was set."""
    if count <= 0 or "MALLOC_ARENA_MAX" in os.environ:
        return False
    mallopt = _libc_function("mallopt")
    return bool(mallopt is not None and mallopt(M_ARENA_MAX, count) == 1)


_REEXEC_MARK = "_NEXUS_ALLOCATOR_SET"  # set on the re-executed daemon only: its children get the user's environment


def choose_allocator(allocator: str) -> None:
    """Run this process on `allocator` ("malloc" or "pymalloc", `NEXUS_DAEMON_ALLOCATOR`): Python reads
    PYTHONMALLOC only at start-up, so for "malloc" the daemon executes itself again, same pid and command line,
    with PYTHONMALLOC=malloc, before it has a thread, a lock or a socket. A PYTHONMALLOC the user set wins. The
    re-executed daemon takes the variable out of its environment again, so the processes it starts (parser
    workers, the database builder) run on Python's default allocator, which is faster for their short lives.

    Why one would: pymalloc hands a 1 MiB arena back only when nothing in it is alive, and the daemon's long-lived
    objects (facts, symbol tables) are made among a cold index's short-lived ones: after the standard library's
    index, ~120 MB of its arenas were empty pools kept by a few live ones (`pymalloc_stats`), where glibc's malloc
    gives free pages back at the idle trim (`trim_heap`). Why it is not the default: on many small symbols and on
    the kernel tree glibc's per-chunk overhead cost more than that, and every cold index was 20-30 % slower
    (ARCHITECTURE.md, "Memory at rest")."""
    if os.environ.pop(_REEXEC_MARK, None) is not None:
        os.environ.pop("PYTHONMALLOC", None)
        return
    if allocator != "malloc" or "PYTHONMALLOC" in os.environ or not sys.orig_argv:
        return
    env = {**os.environ, "PYTHONMALLOC": "malloc", _REEXEC_MARK: "1"}
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, sys.orig_argv, env)
    except OSError as exc:  # (no executable to run again: go on, on pymalloc)
        log.warning("could not start again on malloc (%s); running on pymalloc", exc)


@functools.cache
def _libc_function(name: str) -> Any:
    """A C library function of this process (glibc's malloc controls), or None where there is no such function
    (another C library). The symbols the process already loaded: no library search."""
    try:
        return getattr(ctypes.CDLL(None), name, None)
    except OSError:
        return None


def heap_census(top: int = 12) -> dict[str, Any]:
    """A census of this process's memory, for finding what grows (the `debug.heap` op; tens of ms on a small daemon).

    `anonKB` groups /proc/self/smaps's Anonymous by mapping: `heap` (glibc's main arena), `pool` (mappings of
    1 GiB or more: Kuzu reserves its buffer pool as one), `arenas` (64 MiB mappings: glibc's per-thread arenas)
    and `other` (Python's 1 MiB object arenas, thread stacks, small mmaps). `malloc`: glibc's mallinfo2 (bytes in
    use and free, over all arenas). `pymalloc`: Python's small-object allocator
    (`pymalloc_stats`). `pyBlocks`: objects Python's allocator holds. `types`: the most numerous object types the
    collector tracks."""
    import collections

    anon = {"heap": 0, "pool": 0, "arenas": 0, "other": 0}
    try:
        with open("/proc/self/smaps", "rb") as f:
            bucket = "other"
            for line in f:
                first = line.split(None, 1)[0]
                if b"-" in first and not first.endswith(b":"):
                    lo, hi = (int(x, 16) for x in first.split(b"-"))
                    size = hi - lo
                    bucket = ("heap" if line.rstrip().endswith(b"[heap]") else "pool" if size >= 1 << 30
                              else "arenas" if size in (1 << 26, 1 << 27) else "other")  # fmt: skip
                elif first == b"Anonymous:":
                    anon[bucket] += int(line.split()[1])
    except OSError:
        pass

    class _MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]  # fmt: skip

    malloc: dict[str, int] = {}
    mallinfo2 = _libc_function("mallinfo2")
    if mallinfo2 is not None:
        mallinfo2.restype = _MallInfo2
        mi = mallinfo2()
        malloc = {"inUseKB": (mi.uordblks + mi.hblkhd) // 1024, "freeKB": mi.fordblks // 1024,
                  "mmappedKB": mi.hblkhd // 1024}  # fmt: skip
    malloc["arenas"] = _malloc_arenas()
    was_enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    gc.disable()
    try:
        gc.unfreeze()
        counts = collections.Counter(type(o).__name__ for o in gc.get_objects())
    finally:
        if frozen:
            gc.freeze()
        if was_enabled:
            gc.enable()
    return {
        "anonKB": anon,
        "malloc": malloc,
        "pymalloc": pymalloc_stats(),
        "pyBlocks": sys.getallocatedblocks(),
        "tracked": sum(counts.values()),
        "types": dict(counts.most_common(top)),
    }


def pymalloc_stats() -> dict[str, int]:
    """Python's small-object allocator in KB, from the interpreter's own report (`_PyObject_DebugMallocStats`,
    what `sys._debugmallocstats` prints, written here to a temporary file through the C library, ~1 ms; nothing
    goes through fd 2): `arenasKB` mapped in 1 MiB arenas, `blocksKB` in live objects, `freeBlocksKB` free in
    pools that hold live objects, `emptyPoolsKB` in pools with none. Arenas far above the blocks is
    fragmentation: empty pools in arenas that a few live pools keep, or free blocks in half-used pools. Empty on
    an interpreter running on malloc, or without the C functions."""
    import re
    import tempfile

    report = getattr(ctypes.pythonapi, "_PyObject_DebugMallocStats", None)
    fopen, fclose = _libc_function("fopen"), _libc_function("fclose")
    if report is None or fopen is None or fclose is None:
        return {}
    fopen.restype = ctypes.c_void_p
    report.argtypes = [ctypes.c_void_p]
    with tempfile.NamedTemporaryFile() as tmp:
        fp = fopen(tmp.name.encode(), b"w")
        if not fp:
            return {}
        try:
            report(ctypes.c_void_p(fp))
        finally:
            fclose(ctypes.c_void_p(fp))
        text = tmp.read().decode("ascii", "replace")
    found: dict[str, int] = {}
    for label, pattern in (("arenasKB", r"\d+ arenas \* \d+ bytes/arena\s+=\s+([\d,]+)"),
                           ("blocksKB", r"# bytes in allocated blocks\s+=\s+([\d,]+)"),
                           ("freeBlocksKB", r"# bytes in available blocks\s+=\s+([\d,]+)"),
                           ("emptyPoolsKB", r"\d+ unused pools \* \d+ bytes\s+=\s+([\d,]+)")):  # fmt: skip
        m = re.search(pattern, text)
        if m:
            found[label] = int(m.group(1).replace(",", "")) // 1024
    m = re.search(r"# arenas highwater mark\s+=\s+([\d,]+)", text)
    if m:
        found["arenasHighwater"] = int(m.group(1).replace(",", ""))
    return found


def _malloc_arenas() -> int:
    """How many malloc arenas glibc has made in this process (`<heap nr=...>` of malloc_info), -1 if unknown."""
    import tempfile

    fopen, info, fclose = (_libc_function(n) for n in ("fopen", "malloc_info", "fclose"))
    if fopen is None or info is None or fclose is None:
        return -1
    fopen.restype = ctypes.c_void_p
    with tempfile.NamedTemporaryFile() as tmp:
        fp = fopen(tmp.name.encode(), b"w")
        if not fp:
            return -1
        try:
            info(0, ctypes.c_void_p(fp))
        finally:
            fclose(ctypes.c_void_p(fp))
        return tmp.read().count(b"<heap nr=")


# -- cyclic garbage among frozen objects --------------------------------------------------------------------
# The query side freezes the heap after it loads a snapshot (`gc.freeze()`: a million long-lived objects are
# then left out of every collection). Frozen objects are still freed by reference counting, but a frozen
# object in a reference cycle never is: the collector does not look at the frozen generation. A symbol table
# (`RepoIndex`) and its language rules refer to each other, so every engine dropped by `repo.forget`, every
# table dropped after a failed batch and every snapshot replaced stayed in memory, facts and all: 251 tables
# of 4 repositories after a 7-minute op fuzz, the Python heap doubling (RELIABILITY.md, "What holds the RSS").
# Whoever lets go of such a structure calls `dropped()`; the writer, when idle with no read running, calls
# `reclaim()`, which thaws the heap, collects it whole and freezes what survives again. A table is also taken apart
# as it goes (`RepoIndex.dismantle`), so it is freed at once and no collection runs for it: one reaches every object
# of the heap (14-20 s with the Linux kernel's graph held).

# A collection right after a drop can come too early: what was let go may still be referred to for a moment (by
# a job or a thread finishing with it), and once it is unreachable only another collection frees it, while
# nothing asks for one. So what was let go is watched through weak references, and the idle writer collects
# again, backing off (`RETRY_S`, doubling up to `RETRY_MAX_S`, then no more), while any of it is alive: `test_forget_retention.py`
# saw a table of a forgotten repository left for good under load in 2 of 4 full runs.
RETRY_S = 2.0
RETRY_MAX_S = 300.0

_watch_lock = threading.Lock()
_watched: list[weakref.ref[Any]] = []
_retry = {"at": 0.0, "delay": RETRY_S}


def dropped(*let_go: object) -> None:
    """Something that may hold reference cycles (a symbol table, an engine, a snapshot: `let_go`, None skipped) was
    let go: the next `reclaim` collects, whatever the back-off says."""
    with _watch_lock:
        _watched.extend(weakref.ref(obj) for obj in let_go if obj is not None)
        _retry["at"] = 0.0


def _still_alive() -> int:
    with _watch_lock:
        _watched[:] = [ref for ref in _watched if ref() is not None]
        return len(_watched)


def reclaim(*, force: bool = False) -> float | None:
    """When something `dropped()` is still alive (its next reclaim after the drop, then as the back-off allows), or
    `force`: one full collection that reaches the frozen objects too, then the survivors frozen again if
    the heap was frozen. Returns the seconds it took (None when there was nothing to do). The collection holds the
    interpreter for its duration (0.03-0.1 s for a daemon holding flask; it grows with the heap), so it runs where
    nothing waits on it (the idle writer, after a big batch)."""
    now = time.monotonic()
    if not (force or (now >= _retry["at"] and _still_alive())):
        return None
    t0 = time.perf_counter()
    frozen = gc.get_freeze_count()
    gc.unfreeze()
    freed = gc.collect()
    if frozen:
        gc.freeze()
    took = time.perf_counter() - t0
    alive = _still_alive()
    if alive and _retry["delay"] >= RETRY_MAX_S:  # held on purpose (a worktree view over a replaced snapshot):
        with _watch_lock:  # no more collections for it (each one holds the interpreter)
            _watched.clear()
        _retry["delay"] = RETRY_S
    elif alive:  # (referred to still, or again: the next idle moment after the back-off tries again)
        _retry["at"] = now + _retry["delay"]
        _retry["delay"] = min(_retry["delay"] * 2, RETRY_MAX_S)
    else:
        _retry["delay"] = RETRY_S
    log.info("reclaimed %d cyclic objects (%d were frozen) in %.3f s; %d let go still alive", freed, frozen, took,
             alive)  # fmt: skip
    return took
