"""A failed or unlucky build must not break the graph, and `index --full` after ordinary edits must succeed.

Kuzu 0.11.3 fails a whole relationship COPY on one missing endpoint ("Unable to find primary key value"), and
rolling back a transaction that had copied relationships leaves HAS_FILE/CONTAINS/IMPORTS empty while nodes
remain. So the writer never hands COPY an edge to nothing, verifies the counts of what it wrote, and rebuilds
a repository whose graph fails its invariants from nothing.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.helpers import DaemonProcess, git, make_repo, wait_for
from tests.reliability.common import consistency_problems, make_py_repo, mutate_repo, q


def _edges(client: object, repo_id: str) -> dict[str, int]:
    out = {}
    for rel, src in (("HAS_FILE", "Repository"), ("CONTAINS", "File"), ("IMPORTS", "File")):
        where = "a.id = $r" if src == "Repository" else "a.repoId = $r"
        out[rel] = q(client, f"MATCH (a:{src})-[e:{rel}]->() WHERE {where} RETURN count(e)", r=repo_id)[0][0]
    return out


def _big_module(names: list[str]) -> str:
    return "".join(f"def {n}(x):\n    return x\n\n" for n in names)


def test_sync_deleting_a_caller_while_its_callee_file_is_rewritten_in_bulk(tmp_path: Path) -> None:
    """A batch large enough for the COPY path (over graphwrite.DIFF_MAX_ROWS rows) that deletes a file whose
    function calls into a file it rewrites: the edge from the deleted caller was restored after the caller was
    deleted, the COPY failed, and the batch rolled back."""
    root = make_repo(
        tmp_path / "r",
        {
            "big.py": _big_module(["keep"] + [f"old_{i}" for i in range(1600)]),
            "caller.py": "from big import keep\n\n\ndef use():\n    return keep(1)\n",
        },
    )
    d = DaemonProcess(env={"NEXUS_NO_WATCH": "1"}).start()
    try:
        c = d.client(timeout=120)
        rid = c.request("index", {"repo": str(root)})["id"]
        assert q(c, "MATCH (a:Symbol {name: 'use'})-[:POSSIBLY_CALLS]->(b:Symbol {name: 'keep'}) RETURN count(*)")[0][0] == 1
        (root / "caller.py").unlink()
        (root / "big.py").write_text(_big_module(["keep"] + [f"new_{i}" for i in range(1600)]))
        res = c.request("sync", {"repo": str(root)})
        assert res["mode"] == "incremental", res
        assert "diffPath" not in res["written"], res["written"]  # the COPY path, which this is about
        assert consistency_problems(c, rid, root) == []
        status = c.request("status", {"repo": str(root)})["repos"][0]
        assert status["lastBuild"]["outcome"] == "ok", status["lastBuild"]
    finally:
        d.cleanup()


@pytest.mark.parametrize("bursts", [pytest.param(4, id="4"), pytest.param(30, id="30", marks=pytest.mark.slow)])
def test_full_rebuild_after_random_edit_bursts(tmp_path: Path, bursts: int) -> None:
    """Edit bursts (rewrites that rename definitions, deleted files, new files) on a real git repository, with
    a memory fact about a symbol, each followed by `index --full`: every rebuild succeeds and equals a clean
    index of the files; no relationship table is left empty."""
    root = make_py_repo(tmp_path / "r", 60)
    make_repo(root, {})
    rng = random.Random(1900 + bursts)
    d = DaemonProcess().start()
    try:
        c = d.client(timeout=300)
        rid = c.request("index", {"repo": str(root)})["id"]
        c.request("remember", {"repo": str(root), "text": "the first module's entry", "about": "func_1_0"})
        for n in range(bursts):
            mutate_repo(root, rng, n + 1, 60)
            git(root, "add", "-A")
            git(root, "commit", "-q", "-m", f"burst {n}")
            if rng.random() < 0.5:
                c.request("sync", {"repo": str(root)})
            res = c.request("index", {"repo": str(root), "full": True})
            assert res["mode"] == "cold", res
            assert not res["written"].get("droppedEdges"), res["written"]
            problems = consistency_problems(c, rid, root)
            assert problems == [], (n, problems[:5])
            edges = _edges(c, rid)
            assert all(edges.values()), (n, edges)
    finally:
        d.cleanup()


def test_failed_full_rebuild_leaves_a_consistent_graph_and_the_next_build_succeeds(tmp_path: Path) -> None:
    """A cold build whose COPY fails for real inside Kuzu (one edge to a missing symbol, armed through a debug
    op): the request fails, and then the graph is either the last good one or, when the rollback emptied
    relationship tables, rebuilt from the files; a second repository keeps a consistent graph too, and the
    next `index --full` succeeds."""
    a = make_py_repo(tmp_path / "a", 30)
    make_repo(a, {})
    b = make_py_repo(tmp_path / "b", 20)
    make_repo(b, {})
    d = DaemonProcess(env={"NEXUS_NO_WATCH": "1"}).start()
    try:
        c = d.client(timeout=120)
        ids = {str(r): c.request("index", {"repo": str(r)})["id"] for r in (a, b)}
        before = {r: _edges(c, i) for r, i in ids.items()}
        c.request("debug.fail_next_build", {})
        with pytest.raises(Exception) as failed:
            c.request("index", {"repo": str(a), "full": True})
        assert "primary key" in str(failed.value).lower(), failed.value

        def settled() -> bool:
            st = c.request("status", {})["repos"]
            return all(not r.get("damaged") for r in st)

        wait_for(settled, 60, what="the damaged graphs rebuilt")
        for root, rid in ids.items():
            assert consistency_problems(c, rid, Path(root)) == [], root
            assert _edges(c, rid) == before[root], root
        res = c.request("index", {"repo": str(a), "full": True})
        assert res["mode"] == "cold"
        assert c.request("status", {"repo": str(a)})["repos"][0]["lastBuild"]["outcome"] == "ok"
    finally:
        d.cleanup()
