"""The daemon's C heap stays within the arenas it allows itself (issue #19: RSS under op fuzzing).

glibc gives each thread that allocates an arena of its own, up to 8 per core. Under the op fuzz the daemon's
writer, readers, socket loop and Kuzu's worker threads each freed into theirs, and glibc held 260-390 MB of free
memory beside ~190 MB in use (`debug.heap`). The daemon caps the arenas at NEXUS_MALLOC_ARENAS (2) before its
threads start; MALLOC_ARENA_MAX, when the user set it, wins. A real daemon indexes a repository and answers reads
on several threads, and `debug.heap` counts glibc's arenas (malloc_info).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess
from tests.reliability.common import make_py_repo


def _arenas_after_work(tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    root = str(make_py_repo(tmp_path, 12))
    d = DaemonProcess(env={"NEXUS_NO_WATCH": "1", **env}).start()
    try:
        c = d.client(timeout=120)
        c.request("index", {"repo": root})
        for _ in range(3):  # reads on the reader threads, a write on the writer
            c.request("locate", {"repo": root, "query": "func_1_0"})
            c.request("impact", {"repo": root, "symbol": "func_1_0"})
            c.request("remember", {"repo": root, "text": "func_1_0 is the entry point"})
            c.request("recall", {"repo": root, "query": "entry point"})
        return dict(c.request("debug.heap")["malloc"])
    finally:
        d.stop()


def test_the_daemon_keeps_to_two_malloc_arenas(tmp_path: Path) -> None:
    capped = _arenas_after_work(tmp_path / "capped", {})
    assert 1 <= capped["arenas"] <= 2, capped
    # glibc's default on the same work: more arenas (else this test could not tell the cap from no cap).
    default = _arenas_after_work(tmp_path / "default", {"NEXUS_MALLOC_ARENAS": "0"})
    assert default["arenas"] > 2, default
