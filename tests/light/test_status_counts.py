"""`status` keeps per-repository counts between calls; they stay right across syncs, failed syncs and forget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nexus_client.connection import Client

from tests.helpers import DaemonProcess


def _counts(c: Client, repo: Path) -> dict[str, Any]:
    rows = c.request("status", {"repo": str(repo)})["repos"]
    assert len(rows) == 1, rows
    return rows[0]


def _truth(c: Client, repo: Path) -> tuple[int, int]:
    rid = c.request("status", {"repo": str(repo)})["repos"][0]["root"]
    files = c.request("debug.cypher", {"query": "MATCH (r:Repository {root: $root})-[:HAS_FILE]->(f:File) RETURN count(f)",
                                       "params": {"root": rid}})["rows"][0][0]
    symbols = c.request("debug.cypher", {"query": "MATCH (r:Repository {root: $root})-[:HAS_FILE]->(f:File) "
                                         "MATCH (s:Symbol) WHERE s.path = f.path AND s.repoId = f.repoId RETURN count(s)",
                                         "params": {"root": rid}})["rows"][0][0]
    return files, symbols


def _make(root: Path, files: int) -> Path:
    (root / "pkg").mkdir(parents=True)
    for i in range(files):
        (root / "pkg" / f"m{i}.py").write_text(f"def f{i}(x):\n    return g{i}(x)\n\n\ndef g{i}(x):\n    return x\n")
    return root


def test_status_counts_follow_syncs_and_forget(tmp_path: Path) -> None:
    a, b = _make(tmp_path / "a", 3), _make(tmp_path / "b", 5)
    d = DaemonProcess(env={"NEXUS_NO_WATCH": "1"}).start()
    try:
        with d.client() as c:
            c.request("index", {"repo": str(a)}, timeout=120)
            c.request("index", {"repo": str(b)}, timeout=120)
            sa, sb = _counts(c, a), _counts(c, b)
            assert (sa["files"], sa["symbols"]) == _truth(c, a)
            assert (sb["files"], sb["symbols"]) == _truth(c, b)
            assert sa["files"] == 3 and sb["files"] == 5
            assert sum(sa["edges"]["calls"].values()) == 3

            # A change through sync: the next status sees it.
            (a / "pkg" / "extra.py").write_text("def h(x):\n    return f0(x)\n\n\ndef k():\n    return h(1)\n")
            c.request("sync", {"repo": str(a)}, timeout=120)
            sa2 = _counts(c, a)
            assert sa2["files"] == 4
            assert (sa2["files"], sa2["symbols"]) == _truth(c, a)
            assert sa2["symbols"] > sa["symbols"]
            assert sum(sa2["edges"]["calls"].values()) > sum(sa["edges"]["calls"].values())

            # A deletion, and a no-op sync right after it: still right.
            (a / "pkg" / "m0.py").unlink()
            c.request("sync", {"repo": str(a)}, timeout=120)
            c.request("sync", {"repo": str(a)}, timeout=120)
            sa3 = _counts(c, a)
            assert sa3["files"] == 3
            assert (sa3["files"], sa3["symbols"]) == _truth(c, a)

            # A file that fails to parse shows up in the diagnostics.
            (b / "pkg" / "bad.py").write_bytes(b"\x00\x01binary" * 100)
            c.request("sync", {"repo": str(b)}, timeout=120)
            sb2 = _counts(c, b)
            assert sb2["files"] == 6
            assert any(x["path"] == "pkg/bad.py" for x in sb2["diagnostics"])

            # Forget drops the repository; indexing it again counts from scratch.
            c.request("repo.forget", {"repo": str(b)}, timeout=120)
            roots = [r["root"] for r in c.request("status", {})["repos"]]
            assert roots == [str(a.resolve())]
            (b / "pkg" / "bad.py").unlink()
            c.request("index", {"repo": str(b)}, timeout=120)
            sb3 = _counts(c, b)
            assert sb3["files"] == 5 and not sb3["diagnostics"]
            assert (sb3["files"], sb3["symbols"]) == _truth(c, b)
            assert _counts(c, a)["files"] == 3
    finally:
        d.cleanup()
