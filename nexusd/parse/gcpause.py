"""A window without cyclic garbage collection, around work that allocates many small acyclic objects.

A cold index builds millions of lists, tuples and records (decoded facts, resolutions, graph rows) and keeps
most of them. Each young-generation collection walks what was allocated since the last one, and every tenth
promotes into the older generations, which are walked again as the heap grows: on the standard library,
decoding the parser processes' outcomes cost 2.6-3.3 CPU-s with collection on and 0.6-0.7 s with it paused
per outcome; resolving, 9.6 s against 6.4 s. Nothing in such a window makes cycles that outlive it, and
collection resumes as it was when the window closes (so a window per file, not per sync, keeps other
threads' garbage collected as before). See ARCHITECTURE.md, "CPU per file".
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Windows:
    """Collection paused over a stage of many units (files), with one young collection every `every` units:
    what the units allocated is walked once (and any cycle among it freed), instead of the young and middle
    generations being walked again and again as the heap grows. Use as a context manager and call `tick()`
    once per unit. Full collections wait for the end of the stage, when collection resumes as it was."""

    def __init__(self, every: int = 256) -> None:
        self.every = every
        self._count = 0
        self._was_enabled = False

    def __enter__(self) -> Windows:
        self._was_enabled = gc.isenabled()
        gc.disable()
        return self

    def tick(self) -> None:
        self._count += 1
        if self._count >= self.every:
            self._count = 0
            if self._was_enabled:
                gc.collect(1)

    def __exit__(self, *exc: object) -> None:
        if self._was_enabled:
            gc.enable()


def trim_heap() -> None:
    """Hand the C heap's free pages back to the system (glibc `malloc_trim`; nothing elsewhere). After a big batch
    or a snapshot build, glibc keeps the memory of the rows and buffers just freed mapped otherwise
    (ARCHITECTURE.md, "Memory of the code graph")."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Any:
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None
