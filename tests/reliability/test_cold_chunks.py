"""A cold write bigger than the buffer pool commits in parts, and a kill between the parts is recovered.

Kuzu 0.11.3 keeps a transaction's copied pages in the buffer pool until COMMIT, so one transaction holding a
large repository's rows fails with "the buffer pool is full" (the kernel at the default 384 MB pool did). The
writer splits such a write into transactions (graphwrite.cold_budget) behind a marker: a sync that finds the
marker rebuilds from nothing, and until then the repository says its graph is stale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess, make_repo, wait_for
from tests.reliability.common import consistency_problems, q

SMALL_POOL = {"NEXUS_BUFFER_POOL_MB": "64", "NEXUS_NO_WATCH": "1"}


def _wide_repo(root: Path, files: int = 300, per_file: int = 70) -> Path:
    """~21k documented functions calling their neighbours: about 10 MB of rows, more than one transaction of a
    64 MB pool holds (measured: it fails written in one)."""
    sources = {}
    for n in range(files):
        lines = []
        for k in range(per_file):
            doc = f"Compute the {k}th adjustment of table {n} from its inputs, rounding half to even. " * 3
            callee = f"f{n}_{(k + 1) % per_file}"
            lines += [f"def f{n}_{k}(value, scale=1):", f'    """{doc}"""', f"    return {callee}(value) * scale", ""]
        sources[f"pkg/m{n:04d}.py"] = "\n".join(lines) + "\n"
    sources["pkg/__init__.py"] = ""
    return make_repo(root, sources)


def _calls(c: Any, repo_id: str) -> set[tuple[str, str]]:
    rows = q(c, "MATCH (a:Symbol)-[:POSSIBLY_CALLS]->(b:Symbol) WHERE a.repoId = $r RETURN a.key, b.key", r=repo_id)
    return {(a, b) for a, b in rows}


def test_a_cold_write_bigger_than_the_pool_commits_in_parts_and_equals_one_transaction(tmp_path: Path) -> None:
    root = _wide_repo(tmp_path / "r")
    whole = DaemonProcess(env={"NEXUS_NO_WATCH": "1"}).start()  # the default pool: one transaction
    try:
        c = whole.client(timeout=300)
        res = c.request("index", {"repo": str(root)})
        assert "transactions" not in res["written"], res["written"]
        want = _calls(c, res["id"])
    finally:
        whole.cleanup()
    d = DaemonProcess(env=SMALL_POOL).start()
    try:
        c = d.client(timeout=300)
        res = c.request("index", {"repo": str(root)})
        assert res["written"]["transactions"] > 3, res["written"]
        assert res["written"]["symbols"] >= 21_000, res["written"]
        assert consistency_problems(c, res["id"], root) == []
        assert _calls(c, res["id"]) == want
        assert not q(c, "MATCH (m:Meta) WHERE m.key STARTS WITH 'coldwrite:' RETURN m.key")
        status = c.request("status", {"repo": str(root)})["repos"][0]
        assert status["freshness"] != "stale" and not status.get("damaged"), status
    finally:
        d.cleanup()


def test_a_kill_between_the_parts_of_a_cold_write_is_rebuilt_and_said_until_then(tmp_path: Path) -> None:
    root = _wide_repo(tmp_path / "r")
    d = DaemonProcess(env=SMALL_POOL).start()
    try:
        c = d.client(timeout=300)
        c.request("debug.kill_mid_cold_write", {})
        try:
            c.request("index", {"repo": str(root)}, timeout=300)
        except Exception:  # noqa: BLE001 - the daemon dies under the request
            pass
        assert d.proc is not None and d.proc.wait(60) == -9
        d.stop()
        d.start()
        c = d.client(timeout=300)
        # The registry says so before anything else runs: the graph holds only the first part.
        status = c.request("status", {"repo": str(root)})["repos"][0]
        rebuilt = status.get("lastBuild", {}).get("mode") == "cold" and not status.get("damaged")
        assert rebuilt or status.get("damaged"), status
        res = c.request("sync", {"repo": str(root)})
        assert res["mode"] in ("cold", "noop"), res  # noop: the restart's own catch-up sync rebuilt it first

        def whole() -> bool:
            st = c.request("status", {"repo": str(root)})["repos"][0]
            return not st.get("damaged") and not q(c, "MATCH (m:Meta) WHERE m.key STARTS WITH 'coldwrite:' RETURN m.key")

        wait_for(whole, 120, what="the interrupted cold write rebuilt")
        assert consistency_problems(c, res["id"], root) == []
        assert len(_calls(c, res["id"])) >= 21_000
    finally:
        d.cleanup()
