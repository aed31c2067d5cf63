"""A COPY or checkpoint holds the store's exclusive window: reads of the database wait for it (`Server.exclusive`).
A read answered from a query snapshot never touches the database, so it does not wait: it is let in at its first
statement (`Conn.admit`, `Server._admit`), not at its start. On the Linux kernel's cold write, whose COPYs held
the window for seconds each, a small repository's `locate` had waited up to 4.4 s for them."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess


def test_a_snapshot_read_goes_on_while_the_window_is_held_and_a_graph_read_waits(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "a.py").write_text("def helper():\n    return 1\n\n\ndef caller():\n    return helper()\n")
    d = DaemonProcess(env={"NEXUS_NO_WATCH": "1"})
    d.start()
    try:
        with d.client() as c:
            c.request("index", {"repo": str(repo)}, timeout=120)
            scope = {"repo": str(repo), "query": "helper", "limit": 5}
            assert c.request("locate", scope)["results"][0]["name"] == "helper"  # (the snapshot is loaded)
            stalled: dict[str, Any] = {}

            def stall() -> None:
                with d.client() as w:
                    stalled["reply"] = w.request("debug.stall", {"seconds": 4.0, "exclusive": True}, timeout=60)
                    stalled["at"] = time.monotonic()

            holder = threading.Thread(target=stall)
            holder.start()
            time.sleep(1.0)  # (the writer holds the window by now)
            hits = c.request("locate", scope, timeout=60)
            assert "at" not in stalled, "the snapshot read was held back until the window closed"
            assert hits["results"][0]["name"] == "helper"
            rows = c.request("debug.cypher", {"query": "MATCH (s:Symbol {name: 'helper'}) RETURN count(s)"}, timeout=60)
            after = time.monotonic()
            assert rows["rows"] == [[1]]
            holder.join(30)
            assert stalled["reply"]["stalled"] == 4.0
            assert stalled["at"] <= after, "the graph read ran inside the exclusive window"
    finally:
        d.stop()
