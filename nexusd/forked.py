"""Work done in a forked copy of the daemon: the query snapshot's builds and compactions (`query/snapshot.py`) and
the second half of a wide resolution (`sync/resolveapart.py`).

A fork copies only the thread that forked: a lock another thread held at that moment stays held in the copy for
ever. So the copy runs pure Python over what it inherited, logs nothing, takes no lock of the daemon's, hands its
result over through a file or a pipe, and leaves with `os._exit` (nothing of the daemon's runs at its exit). The
parent waits with a bound (`reap`) and kills a copy that outlives it, then does the work itself.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import signal
import time
from collections.abc import Callable, Iterable

log = logging.getLogger(__name__)


def reap(pid: int, limit_s: float, what: str) -> int:
    """The wait status of forked process `pid`, once it ended; killed if it runs past `limit_s` (so that nothing it
    could block on in the forked copy, e.g. a lock another thread held at the fork, holds the caller)."""
    deadline = time.monotonic() + limit_s
    done, status = os.waitpid(pid, os.WNOHANG)
    while done == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
        done, status = os.waitpid(pid, os.WNOHANG)
    if done == 0:
        log.warning("%s process %d still running after %.0f s; killed", what, pid, limit_s)
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    return status


def detach_from(parent: int, keep: Iterable[int] = ()) -> None:
    """In a forked process: die with `parent` (PR_SET_PDEATHSIG, or at once if it is already gone) and hold none of
    its descriptors but `keep`. Otherwise a kill -9 of the daemon during a cold index left this process holding the
    PID lock and the bound socket until its work ended: the next daemon could not take the lock, while the socket
    still accepted connections nobody would answer."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)
    low = 3
    for fd in sorted(set(keep)):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


def in_child(parent: int, work: Callable[[], object], keep: Iterable[int] = ()) -> None:
    """In a forked process: detach from `parent` (keeping the descriptors `keep`), run `work`, exit 0 (1 if it
    raised). Never returns; runs nothing of the parent's at exit. The parent sees the exit code and does the work
    itself when it is not 0."""
    code = 1
    try:
        gc.disable()  # (not `gcpause`'s pauses: their lock may have been held by another thread at the fork)
        detach_from(parent, keep)
        work()
        code = 0
    except BaseException:  # noqa: BLE001 - (see the exit code)
        pass
    finally:
        os._exit(code)
