"""An edit's write deletes (the file's old symbols and edges), and every deleting write first checkpoints what is
committed before it (a Kuzu 0.11.3 segfault otherwise: `Store.checkpoint_before_delete`). So the writer folds an
edit's write into the database file right after it (`Server._fold`), not only after CHECKPOINT_IDLE_S without
work: the next edit a moment later finds nothing to checkpoint."""

from __future__ import annotations

import os
import time
from pathlib import Path

from nexusd.server import CHECKPOINT_IDLE_S
from tests.helpers import DaemonProcess


def _wal(d: DaemonProcess) -> int:
    try:
        return os.path.getsize(str(d.dirs.db) + ".wal")
    except OSError:
        return 0


def test_an_edit_is_checkpointed_right_after_its_write(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "a.py").write_text("def old_name():\n    return 1\n\n\ndef caller():\n    return old_name()\n")
    d = DaemonProcess(env={"NEXUS_NO_WATCH": "1"})
    d.start()
    try:
        with d.client() as c:
            c.request("index", {"repo": str(repo)}, timeout=120)
            time.sleep(CHECKPOINT_IDLE_S + 1.0)  # (the cold write's own checkpoint, and the idle one after it)
            for i in range(3):
                (repo / "a.py").write_text(f"def new_name_{i}():\n    return 1\n\n\ndef caller():\n    return new_name_{i}()\n")
                c.request("sync", {"repo": str(repo), "paths": ["a.py"]}, timeout=60)
                assert _wal(d), "the edit's write left nothing in the WAL: this tests nothing"
                t0 = time.monotonic()
                while _wal(d) and time.monotonic() - t0 < CHECKPOINT_IDLE_S:
                    time.sleep(0.01)
                assert not _wal(d), f"edit {i}: not checkpointed within {CHECKPOINT_IDLE_S} s of its write"
                hits = c.request("locate", {"repo": str(repo), "query": f"new_name_{i}", "limit": 1})["results"]
                assert hits and hits[0]["name"] == f"new_name_{i}"
            # `status` shows what the last checkpoints cost: (ms waiting for the exclusive window, ms of Kuzu's, kB
            # of WAL folded in); each edit's fold had a WAL to fold.
            costs = c.request("status", {})["health"]["compaction"]["checkpointMs"]
            assert len(costs) >= 4 and all(len(row) == 3 and min(row) >= 0 for row in costs), costs
            assert sum(1 for row in costs if row[2] > 0) >= 3, costs
    finally:
        d.cleanup()
