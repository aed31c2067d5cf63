"""What the daemon's parts may ask of the one writer thread (served by `server.Server`).

A part that has to write from outside a write request (a watcher batch, a usage flush, a rebuild) is handed a
`Writer` (or only its `Submit`) by the composition root (`app.py`), never the server or the daemon.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .store import Conn

Task = Callable[["Conn"], Any]


class Submit(Protocol):
    """Queue `task` for the writer thread; with `wait`, block until it ran and return its outcome."""

    def __call__(self, task: Task, *, wait: bool = False, timeout: float = 600.0) -> Any: ...


class Writer(Protocol):
    stopping: threading.Event
    handled: int  # requests accepted so far (status shows it)

    def submit_internal(self, task: Task, *, wait: bool = False, timeout: float = 600.0) -> Any: ...

    def service_quick(self, conn: Conn) -> int:
        """Run quick writes queued meanwhile, from a safe point of a long job on the writer thread."""
        ...

    def service_writes(self, conn: Conn) -> int:
        """Run quick writes and the daemon's own queued work (watcher batches), from a safe point of a long job
        on the writer thread that holds no transaction."""
        ...
