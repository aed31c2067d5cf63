"""Code ops check the repository's owner always: a request that names no `user` speaks for the default user
(NEXUS_USER, else the daemon's OS user) and is refused another user's repository, like one that names the wrong
user. (Within one uid `user` is a namespace, not a boundary: RELIABILITY.md, threat model.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nexusd.errors import NexusError
from tests.helpers import DaemonProcess, make_repo

SOURCE = {"pkg/mod.py": "def main():\n    return helper()\n\n\ndef helper():\n    return 1\n"}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("index", {}),
    ("sync", {}),
    ("locate", {"query": "main"}),
    ("show", {"path": "pkg/mod.py"}),
    ("impact", {"symbol": "helper"}),
    ("context", {"symbol": "main"}),
    ("imports", {"path": "pkg/mod.py"}),
    ("history", {"target": "pkg/mod.py"}),
    ("history.sync", {}),
    ("repo.forget", {}),
]


def _forbidden(c: Any, op: str, args: dict[str, Any]) -> None:
    with pytest.raises(NexusError) as info:
        c.request(op, args, timeout=60)
    assert info.value.code == "forbidden", (op, args, info.value.code, info.value.message)


def test_code_ops_check_the_owner_also_without_a_user(tmp_path: Path) -> None:
    alices = make_repo(tmp_path / "alice", SOURCE)
    mine = make_repo(tmp_path / "mine", SOURCE)
    d = DaemonProcess()
    d.env["NEXUS_USER"] = "carol"  # the default user of this daemon
    d.start()
    try:
        with d.client() as c:
            c.request("index", {"repo": str(alices), "user": "alice"}, timeout=120)
            c.request("index", {"repo": str(mine)}, timeout=120)  # no user: registered for carol
            for op, extra in CALLS:
                _forbidden(c, op, {"repo": str(alices), **extra})  # no user named at all
                _forbidden(c, op, {"repo": str(mine), "user": "bob", **extra})
            # listings name only the asker's registrations
            assert [r["root"] for r in c.request("repos", {"user": "carol"})["repos"]] == [str(mine.resolve())]
            assert [r["root"] for r in c.request("status", {"user": "carol"})["repos"]] == [str(mine.resolve())]
            assert c.request("status", {"user": "bob"})["repos"] == []
            # the owners themselves are served
            assert c.request("locate", {"repo": str(alices), "user": "alice", "query": "main"})["results"]
            assert c.request("locate", {"repo": str(mine), "query": "main"})["results"]
            assert c.request("locate", {"repo": str(mine), "user": "carol", "query": "main"})["results"]
    finally:
        d.cleanup()
