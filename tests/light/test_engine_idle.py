"""An idle repository lets its symbol table and facts go (NEXUS_ENGINE_IDLE_S); the next edit rebuilds them from
the facts cache and writes the same graph a fresh index of the same files writes."""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess
from tests.reliability.common import consistency_problems, make_py_repo, mutate_repo, q

CALLS = "MATCH (a:Symbol)-[e:POSSIBLY_CALLS]->(b:Symbol) WHERE a.repoId = $r RETURN a.key, b.key, e.confidence"


def _tables(c: Any) -> int:
    return int(c.request("debug.retained")["live"]["symbolTables"])


def test_an_idle_repository_lets_its_table_go_and_the_next_edit_writes_what_a_fresh_index_writes(tmp_path: Path) -> None:
    root = make_py_repo(tmp_path / "repo", 16)
    env = {"NEXUS_DEBUG_OPS": "1", "NEXUS_NO_WATCH": "1"}
    idle = DaemonProcess(home=tmp_path / "idle", env={**env, "NEXUS_ENGINE_IDLE_S": "1"}).start()
    fresh = DaemonProcess(home=tmp_path / "fresh", env=env).start()
    try:
        with idle.client(timeout=120) as c:
            repo_id = c.request("index", {"repo": str(root)}, timeout=120)["id"]
            deadline = time.monotonic() + 30
            while _tables(c):  # the writer's idle upkeep runs 2 s after its last job
                assert time.monotonic() < deadline, c.request("debug.retained")["live"]
                time.sleep(0.3)
            mutate_repo(root, random.Random(5), 1, 16)  # rewrites, deletes and additions, calls across files
            r = c.request("sync", {"repo": str(root)}, timeout=120)
            assert r["mode"] == "incremental" and r["parsed"] > 0, r
            assert _tables(c) == 1  # rebuilt from the facts cache for this batch
            assert consistency_problems(c, repo_id, root) == []
            after_release = sorted(map(tuple, q(c, CALLS, r=repo_id)))
        copy = tmp_path / "copy" / "repo"  # the same files indexed from nothing (same relative paths and keys)
        shutil.copytree(root, copy)
        with fresh.client(timeout=120) as c:
            fresh_id = c.request("index", {"repo": str(copy)}, timeout=120)["id"]
            assert sorted(map(tuple, q(c, CALLS, r=fresh_id))) == after_release
        assert after_release, "the repository has calls to compare"
    finally:
        idle.cleanup()
        fresh.cleanup()
