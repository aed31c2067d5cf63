"""The memory commands end to end through the `nexus` CLI (every one with --json)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import DaemonProcess
from tests.memory.conftest import register


def test_cli_memory_session(daemon: DaemonProcess, repo: Path) -> None:
    with daemon.client() as c:
        register(c, repo, "carol")

    def nexus(*args: str) -> dict:  # type: ignore[type-arg]
        r = daemon.cli("--user", "carol", "-C", str(repo), *args, "--json")
        assert r.returncode == 0, r.stderr + r.stdout
        return json.loads(r.stdout)  # type: ignore[no-any-return]

    sid = nexus("session", "start", "--title", "cli")["session"]
    assert nexus("turn", "we should cache parsed configs")["ordinal"] == 1
    t2 = nexus("turn", "--role", "assistant", "--session", sid, "agreed")
    assert t2["ordinal"] == 2
    fact = nexus("remember", "configs are parsed twice at start", "--evidence", t2["turn"])
    proc = nexus("procedure", "profile config parse time", "--step", "run with -X importtime", "--step", "sort", "--file", "pkg/mod.py")
    hand = nexus("handoff", "write", "--done", "found double config parse", "--next", "cache configs")
    got = nexus("recall", "configs parse", "--budget", "500")
    assert {i["id"] for i in got["items"]} == {fact["id"], proc["id"], hand["id"]}
    assert nexus("handoff", "read")["acknowledged"] is False
    assert nexus("handoff", "read")["acknowledged"] is True
    assert nexus("session", "list")["sessions"][0]["turns"] == 2
    assert nexus("session", "end", "--summary", "done")["session"] == sid
    assert nexus("forget", "--memory", fact["id"])["deleted"] == 1
    assert fact["id"] not in {i["id"] for i in nexus("recall", "configs")["items"]}
    text = daemon.cli("--user", "carol", "-C", str(repo), "recall", "configs")
    assert text.returncode == 0 and "[procedure]" in text.stdout
    # Another user sees nothing of carol's.
    r = daemon.cli("--user", "dave", "-C", str(repo), "recall", "configs", "--json")
    assert r.returncode != 0 or json.loads(r.stdout)["items"] == []
