"""examples/handoff_demo.py: process one writes, process two (a separate run, same daemon) recalls all three."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, DaemonProcess, make_repo

DEMO = REPO_ROOT / "examples" / "handoff_demo.py"


def test_handoff_demo_two_processes(daemon: DaemonProcess, tmp_path: Path) -> None:
    sys.path.insert(0, str(DEMO.parent))
    try:
        import handoff_demo
    finally:
        sys.path.remove(str(DEMO.parent))
    with daemon.client() as c:
        if not any(e["name"] == "index" for e in c.catalogue):
            pytest.skip("the daemon has no `index` op yet")
    repo = make_repo(tmp_path / "repo", handoff_demo.SOURCE)

    def run(step: str) -> dict:  # type: ignore[type-arg]
        out = subprocess.run([sys.executable, str(DEMO), step, str(repo)], env=daemon.env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)  # type: ignore[no-any-return]

    one = run("write")
    two = run("read")
    assert one["pid"] != two["pid"]
    recalled = {i["type"]: i for i in two["recalled"]}
    assert recalled["fact"]["id"] == one["fact"] and recalled["fact"]["status"] == "current"
    assert recalled["procedure"]["id"] == one["procedure"]
    assert recalled["handoff"]["id"] == one["handoff"]
    assert all(i["usedCount"] == 1 for i in two["recalled"])
    assert two["handoff"]["id"] == one["handoff"] and two["alreadyAcknowledged"] is False
    assert two["handoff"]["evidenceTurns"][0]["text"].startswith("normalizeParams keeps 0")
