"""`nexus agent` leaves a handoff only when asked; the MCP catalogue offers imports/importers and describes
every argument; `recall` with `peek` counts no use."""

from __future__ import annotations

import json
from pathlib import Path

from nexus_client.agent import AgentConfig, run_agent
from nexus_client.mcp_bridge import tool_specs

from tests.helpers import DaemonProcess


def _handoffs(daemon: DaemonProcess) -> int:
    client = daemon.client()
    try:
        tables = {r[0] for r in client.request("debug.cypher", {"query": "CALL SHOW_TABLES() RETURN name"})["rows"]}
        if "Handoff" not in tables:
            return 0  # (memory's tables come with the first memory: schema.MEMORY_TABLES)
        return int(client.request("debug.cypher", {"query": "MATCH (h:Handoff) RETURN count(h)"})["rows"][0][0])
    finally:
        client.close()


def test_agent_writes_no_handoff_unless_asked(mcp_daemon: DaemonProcess, indexed_repo: Path) -> None:
    env = {"NEXUS_HOME": str(mcp_daemon.home), "NEXUS_DEBUG_OPS": "1", "NEXUS_ALLOW_TESTS": "0"}
    before = _handoffs(mcp_daemon)
    report = run_agent(AgentConfig(symbol="normalize", repo=str(indexed_repo), provider="stub", env=env))
    assert "error" not in report, report.get("error")
    names = [c["name"] for c in report["toolCalls"]]
    assert "remember" in names and "handoff_write" not in names
    assert "handoff_write" not in report["tools"]  # not even offered to the model
    assert _handoffs(mcp_daemon) == before
    asked = run_agent(AgentConfig(symbol="normalize", repo=str(indexed_repo), provider="stub", env=env, handoff=True))
    assert "handoff_write" in [c["name"] for c in asked["toolCalls"]]
    assert _handoffs(mcp_daemon) == before + 1


def test_catalogue_offers_imports_and_describes_every_argument(mcp_daemon: DaemonProcess) -> None:
    client = mcp_daemon.client()
    try:
        catalogue = client.catalogue
    finally:
        client.close()
    specs = {s["name"]: s for s in tool_specs(catalogue)}
    assert {"imports", "importers"} <= set(specs)
    undescribed = [(name, arg) for name, s in specs.items()
                   for arg, prop in s["inputSchema"].get("properties", {}).items() if not prop.get("description")]  # fmt: skip
    assert undescribed == []


def test_recall_peek_counts_no_use(mcp_daemon: DaemonProcess, indexed_repo: Path) -> None:
    out = mcp_daemon.cli("remember", "peek test: the zebra fact", "--json", cwd=indexed_repo)
    assert out.returncode == 0, out.stderr
    fid = json.loads(out.stdout)["id"]

    def count(*extra: str) -> int:
        r = mcp_daemon.cli("recall", "zebra fact", "--json", *extra, cwd=indexed_repo)
        assert r.returncode == 0, r.stderr
        return next(i["usedCount"] for i in json.loads(r.stdout)["items"] if i["id"] == fid)

    first = count()
    assert count() == first + 1
    assert count("--peek") == first + 1 and count("--peek") == first + 1
    assert count() == first + 2
