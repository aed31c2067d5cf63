"""A repository nobody edits for NEXUS_SYNC_IDLE_S lets its symbol table go (LiveSync.release_idle); queries keep
answering from the snapshot, and the next edit rebuilds the table from the facts cache and resolves as if it had
never gone: the edges of the edited file and of the files that call into it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.code.conftest import Graph
from tests.helpers import DaemonProcess, make_repo, wait_for

FILES = {
    "pkg/__init__.py": "",
    "pkg/b.py": "def f():\n    return 1\n\n\ndef h():\n    return f()\n",
    "pkg/a.py": "from pkg.b import f\n\n\ndef caller():\n    return f()\n",
    "pkg/c.py": "from pkg import b\n\n\ndef other():\n    return b.h()\n",
}


def _released(d: DaemonProcess) -> bool:
    return "let go of the symbol table of" in d.dirs.log.read_text()


def _table(c: Any, repo: Path) -> str:
    return str(c.request("status", {"repo": str(repo)})["repos"][0]["symbolTable"])


def _pairs(calls: set[tuple[str, str, str]]) -> set[tuple[str, str]]:
    return {(a.rsplit(":", 1)[1], b.rsplit(":", 1)[1]) for a, b, _ in calls}


def test_an_idle_symbol_table_goes_and_the_next_edit_resolves_as_before(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    d = DaemonProcess(env={"NEXUS_SYNC_IDLE_S": "1", "NEXUS_NO_WATCH": "1"}).start()
    try:
        with d.client() as c:
            g = Graph(c, repo)
            g.index()
            assert {("caller", "f"), ("h", "f"), ("other", "h")} <= _pairs(g.calls())
            assert _table(c, repo) == "held"
            wait_for(lambda: _released(d), timeout=30, what="the idle symbol table to be let go")
            assert _table(c, repo) == "released"  # `status` says why the next edit takes longer
            assert c.request("locate", {"repo": str(repo), "query": "caller"})["results"]  # from the snapshot
            # Rename f -> g in b.py (and its use there): a.py still imports the old name, c.py calls h.
            (repo / "pkg/b.py").write_text("def g():\n    return 1\n\n\ndef h():\n    return g()\n")
            r = c.request("sync", {"repo": str(repo), "paths": ["pkg/b.py"]}, timeout=120)
            assert r["mode"] == "incremental", r
            assert _table(c, repo) == "held"
            calls, symbols = g.calls(), set(g.symbols())
            assert {("h", "g"), ("other", "h")} <= _pairs(calls), calls
            assert not {("caller", "f"), ("caller", "g"), ("h", "f")} & _pairs(calls), calls  # f is gone
        # The graph a daemon that never let go builds from the same files.
        fresh = DaemonProcess(env={"NEXUS_SYNC_IDLE_S": "0"}).start()
        try:
            with fresh.client() as c2:
                g2 = Graph(c2, repo)
                g2.index()
                assert (g2.calls(), set(g2.symbols())) == (calls, symbols)
        finally:
            fresh.cleanup()
    finally:
        d.cleanup()
