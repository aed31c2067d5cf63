"""Every operation the daemon serves, one module per area. Importing this package registers them all.

A module may define `start(daemon)` and `stop(daemon)` for per-daemon services (watchers, caches); they run
after the store is open and before the socket loop stops, in the order of MODULES.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import code, core, history, memory, query

if TYPE_CHECKING:
    from ..daemon import Daemon

MODULES = [core, code, memory, history, query]


def start_services(daemon: Daemon) -> None:
    for module in MODULES:
        start = getattr(module, "start", None)
        if start is not None:
            start(daemon)


def stop_services(daemon: Daemon) -> None:
    for module in reversed(MODULES):
        stop = getattr(module, "stop", None)
        if stop is not None:
            stop(daemon)
