"""Short sequences of valid operations must never kill the daemon (opfuzz.py).

Kuzu 0.11.3 segfaults when DETACH DELETE removes relationships that were committed but not checkpointed and
relationships touching the same nodes are written afterwards; the daemon checkpoints before every deleting
transaction (store.Conn.transaction(deletes=True)). The sequences below killed the daemon before that.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.helpers import DaemonProcess, make_repo
from tests.reliability.common import make_py_repo, q
from tests.reliability.opfuzz import OpFuzzer


def _memory_write(client: object, kind: str, root: str) -> None:
    if kind == "fact":
        client.request("remember", {"repo": root, "text": "func_1_0 is the entry point", "about": "func_1_0"})  # type: ignore[attr-defined]
    else:
        client.request("handoff.write", {"repo": root, "done": "wired the parser", "next": "tests"})  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["fact", "handoff"])
def test_forget_index_forget_full_index_with_memory(tmp_path: Path, daemon: DaemonProcess, kind: str) -> None:
    root = make_py_repo(tmp_path / "r", 20)
    make_repo(root, {})
    c = daemon.client(timeout=60)
    repo = str(root)
    assert c.request("index", {"repo": repo})["mode"] == "cold"
    _memory_write(c, kind, repo)
    c.request("repo.forget", {"repo": repo})
    assert c.request("index", {"repo": repo})["mode"] == "cold"
    c.request("repo.forget", {"repo": repo})
    assert c.request("index", {"repo": repo, "full": True})["mode"] == "cold"
    assert daemon.proc is not None and daemon.proc.poll() is None
    assert c.request("ping", {}, timeout=1)["pong"] is True
    # Memory survived both forgets and is linked to the rebuilt code graph again.
    if kind == "fact":
        about = q(c, "MATCH (f:Fact)-[:ABOUT]->(s:Symbol) RETURN s.name")
        assert [r[0] for r in about] == ["func_1_0"]
        hits = c.request("recall", {"repo": repo, "query": "entry point"})
        assert hits["items"], hits
    else:
        assert c.request("handoff.read", {"repo": repo, "peek": True})["handoff"] is not None


def test_forget_and_reindex_repeatedly_with_facts_about_symbols(tmp_path: Path, daemon: DaemonProcess) -> None:
    root = make_py_repo(tmp_path / "r", 10)
    make_repo(root, {})
    c = daemon.client(timeout=60)
    repo = str(root)
    c.request("index", {"repo": repo})
    for n in range(4):
        c.request("remember", {"repo": repo, "text": f"fact {n}", "about": f"func_{n}_0"})
        c.request("repo.forget", {"repo": repo})
        c.request("index", {"repo": repo, "full": bool(n % 2)})
    assert daemon.proc is not None and daemon.proc.poll() is None
    assert q(c, "MATCH (f:Fact)-[:ABOUT]->(:Symbol) RETURN count(*)")[0][0] == 4


def _check(out_summary: dict[str, object]) -> None:
    assert out_summary["deaths"] == 0, out_summary["failures"]
    assert out_summary["hangs"] == 0, out_summary["failures"]
    assert out_summary["internal"] == 0, out_summary["failures"]


def test_op_sequences_seed_1() -> None:
    """The first 20 sequences of seed 1 killed the daemon (a segfault inside CHECKPOINT at sequence 18, after
    memory.forget and forget/re-index of other repositories) before every deleting transaction checkpointed."""
    fz = OpFuzzer(repos=3)
    try:
        out = fz.campaign(20, seed=1)
        summary = out.summary()
        _check(summary)
        assert summary["codes"].get("ok", 0) > 20, summary  # type: ignore[union-attr]
    finally:
        fz.close()


@pytest.mark.slow
def test_op_sequences_long_run() -> None:
    """The long run (bench/opfuzz.py writes the figures): NEXUS_OPFUZZ_SEQUENCES sequences (default 20,000)
    or NEXUS_OPFUZZ_SECONDS of them, with a client connected that sent 15,000 requests and never reads."""
    count = int(os.environ.get("NEXUS_OPFUZZ_SEQUENCES", "20000"))
    budget = float(os.environ.get("NEXUS_OPFUZZ_SECONDS", "0")) or None
    fz = OpFuzzer(repos=4)
    try:
        fz.connect_flooder()
        t0 = time.monotonic()
        out = fz.campaign(count, seed=20_000, time_budget_s=budget)
        summary = out.summary()
        _check(summary)
        rss = [kb for n, kb in out.rss_kb if n >= 1000] or [kb for _, kb in out.rss_kb]
        assert rss[-1] <= rss[0] * 1.10 or time.monotonic() - t0 < 600, out.rss_kb
    finally:
        fz.close()
