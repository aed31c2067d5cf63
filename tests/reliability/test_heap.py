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

from tests.helpers import DaemonProcess, pooled_modules
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



def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids += [int(x) for x in (task / "children").read_text().split()]
    return kids


def _on_allocator(tmp_path: Path, env: dict[str, str]) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """(what `debug.heap` says of pymalloc, the environments the daemon's parser workers started with) after a
    cold index that used the parser pool."""
    root = str(make_py_repo(tmp_path, 40))
    for rel, text in pooled_modules(name="padded", fn="padded_").items():  # so the parser pool runs
        (tmp_path / rel).write_text(text)
    d = DaemonProcess(env={"NEXUS_NO_WATCH": "1", "NEXUS_PARSE_IDLE_S": "60", **env}).start()
    try:
        c = d.client(timeout=120)
        c.request("index", {"repo": root})
        heap = c.request("debug.heap")
        assert d.proc is not None
        workers = []
        for kid in _children(d.proc.pid):
            environ = Path(f"/proc/{kid}/environ").read_bytes().split(b"\0")
            if b"multiprocessing" in Path(f"/proc/{kid}/cmdline").read_bytes():
                workers.append(dict(e.decode().split("=", 1) for e in environ if b"=" in e))
        # the daemon that answers is the process the test started: it executed itself again under its pid
        assert int(c.request("status")["daemon"]["pid"]) == d.proc.pid
        return dict(heap["pymalloc"]), workers
    finally:
        d.stop()


def test_the_daemon_runs_on_malloc_when_asked_and_its_parser_workers_on_pymalloc(tmp_path: Path) -> None:
    pymalloc, workers = _on_allocator(tmp_path / "malloc", {"NEXUS_DAEMON_ALLOCATOR": "malloc"})
    assert pymalloc == {}  # nothing in pymalloc's arenas: the daemon executed itself again on malloc
    assert workers and all("PYTHONMALLOC" not in w and "_NEXUS_ALLOCATOR_SET" not in w for w in workers)
    # The default, and a PYTHONMALLOC the user set, keep pymalloc (else the first assertion could not fail).
    for name, env in (("default", {}), ("user", {"NEXUS_DAEMON_ALLOCATOR": "malloc", "PYTHONMALLOC": "pymalloc"})):
        pymalloc, _ = _on_allocator(tmp_path / name, env)
        assert pymalloc.get("blocksKB", 0) > 1000, (name, pymalloc)
