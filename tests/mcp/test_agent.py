"""The reference agent end to end with the stub provider: `nexus agent` -> `nexus mcp` -> a real daemon."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from nexus_client.agent import AgentConfig, run_agent

from tests.helpers import DaemonProcess
from tests.mcp.conftest import has_op

FULL_ORDER = ["session_start", "recall", "locate", "impact", "remember", "handoff_write", "session_end"]


def agent(daemon: DaemonProcess, repo: Path, **kw: Any) -> dict[str, Any]:
    env = {"NEXUS_HOME": str(daemon.home), "NEXUS_DEBUG_OPS": "1", **kw.pop("env", {})}
    return run_agent(AgentConfig(symbol="normalize", repo=str(repo), provider="stub", env=env, **kw))


def rows(daemon: DaemonProcess, query: str, **params: Any) -> list[list[Any]]:
    client = daemon.client()
    try:
        return client.request("debug.cypher", {"query": query, "params": params})["rows"]
    finally:
        client.close()


def test_stub_agent_runs_the_scripted_loop_and_leaves_memory(mcp_daemon: DaemonProcess, indexed_repo: Path) -> None:
    report = agent(mcp_daemon, indexed_repo, env={"NEXUS_ALLOW_TESTS": "0"}, handoff=True)
    assert "error" not in report, report.get("error")
    client = mcp_daemon.client()
    offered = {e["name"].replace(".", "_") for e in client.catalogue if e.get("tool")}
    client.close()
    calls = report["toolCalls"]
    # which tools, in which order: the script's order, keeping the tools this daemon offers
    assert [c["name"] for c in calls] == [n for n in FULL_ORDER if n in offered]
    assert "run_tests" not in report["tools"]  # not offered unless NEXUS_ALLOW_TESTS=1
    assert all(not c["isError"] for c in calls), calls
    by_name = {c["name"]: c["arguments"] for c in calls}
    assert by_name["recall"] == {"query": "normalize"}
    session = report["memory"]["session_start"]
    assert by_name["remember"]["session"] == session and by_name["handoff_write"]["session"] == session
    assert "repo" not in by_name["remember"] and "user" not in by_name["remember"]  # the bridge injects them
    # what the run left in the graph
    facts = rows(mcp_daemon, "MATCH (f:Fact) WHERE f.id = $id RETURN f.text, f.symbolName, f.sessionId",
                 id=report["memory"]["remember"])
    assert facts and facts[0][1] == "normalize" and facts[0][2] == session
    assert facts[0][0].startswith("normalize has ")
    handoffs = rows(mcp_daemon, "MATCH (h:Handoff) WHERE h.id = $id RETURN h.sessionId", id=report["memory"]["handoff_write"])
    assert handoffs == [[session]]
    assert report["graph"]["graphVersion"] >= 1 and report["graph"]["freshness"]


def test_stub_agent_reports_cited_callers(mcp_daemon: DaemonProcess, indexed_repo: Path) -> None:
    missing = [op for op in ("locate", "impact") if not has_op(mcp_daemon, op)]
    if missing:
        pytest.skip(f"query ops not in the catalogue yet: {missing}")
    report = agent(mcp_daemon, indexed_repo, env={"NEXUS_ALLOW_TESTS": "0"})
    calls = report["toolCalls"]
    locate, impact = calls[2], calls[3]
    assert locate["name"] == "locate" and "normalize" in locate["arguments"].values()
    assert impact["name"] == "impact"
    target_id = report["target"]["id"]
    assert target_id in impact["arguments"].values()  # impact is asked about the symbol locate found
    names = {c["name"].split(".")[-1]: c for c in report["callers"]}
    assert {"helper", "other", "main"} <= set(names)
    assert names["helper"]["path"] == "pkg/util.py" and names["helper"]["hops"] == 1
    assert names["main"]["hops"] == 2
    for c in report["callers"]:
        assert c["cite"] and ":" in c["cite"]
        assert any(e.get("resolution") for e in c["edges"]), c
    main_edges = names["main"]["edges"]  # two hops, each labelled with its own resolution
    assert [e["resolution"] for e in main_edges] == ["import-bound", "same-scope"]
    assert report["files"] == ["pkg/app.py", "pkg/util.py", "tests/test_util.py"]
    assert report["complete"] is True
    fact = rows(mcp_daemon, "MATCH (f:Fact) WHERE f.id = $id RETURN f.text", id=report["memory"]["remember"])
    assert f"{len(report['callers'])} caller(s)" in fact[0][0]


def test_stub_agent_runs_tests_only_when_allowed(mcp_daemon: DaemonProcess, indexed_repo: Path) -> None:
    if not has_op(mcp_daemon, "impact"):
        pytest.skip("impact is not in the catalogue yet")
    report = agent(mcp_daemon, indexed_repo, env={"NEXUS_ALLOW_TESTS": "1"})
    assert "run_tests" in report["tools"]
    runs = [c for c in report["toolCalls"] if c["name"] == "run_tests"]
    assert runs == [] or runs[0]["arguments"]["paths"] == ["tests/test_util.py"]


def test_cli_agent_with_stub_prints_json(mcp_daemon: DaemonProcess, indexed_repo: Path) -> None:
    out = mcp_daemon.cli("agent", "--symbol", "normalize", "--provider", "stub", "--json", cwd=indexed_repo)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["provider"] == "stub" and report["toolCalls"]


def test_claude_without_a_key_fails_at_start_naming_the_variable(mcp_daemon: DaemonProcess, indexed_repo: Path) -> None:
    env = {k: v for k, v in mcp_daemon.env.items() if k != "ANTHROPIC_API_KEY"}
    saved = mcp_daemon.env
    mcp_daemon.env = env
    try:
        out = mcp_daemon.cli("agent", "--symbol", "normalize", cwd=indexed_repo)
    finally:
        mcp_daemon.env = saved
    assert out.returncode != 0
    assert "ANTHROPIC_API_KEY" in out.stdout + out.stderr
    assert "stub" in out.stdout + out.stderr  # says what else to do; never falls back silently
