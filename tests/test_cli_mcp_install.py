"""`nexus mcp install` merges into an existing config: other servers and settings stay, a backup is kept, a file
that is not JSON is left alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    return subprocess.run([sys.executable, "-m", "nexus_client.cli_main", "mcp", "install", *args], env=env,
                          cwd=home, capture_output=True, text=True, timeout=60)  # fmt: skip


def test_merge_keeps_other_servers_and_backs_up(tmp_path: Path) -> None:
    config = tmp_path / ".claude.json"
    original = {"numStartups": 7, "projects": {"/x": {"allowedTools": []}},
                "mcpServers": {"other": {"type": "stdio", "command": "/usr/bin/other", "args": []},
                               "nexus": {"command": "nexus", "args": ["mcp"]}}}  # fmt: skip
    config.write_text(json.dumps(original))
    out = _run(tmp_path, "--client", "claude-code", "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    merged = json.loads(config.read_text())
    assert merged["numStartups"] == 7 and merged["projects"] == original["projects"]
    assert merged["mcpServers"]["other"] == original["mcpServers"]["other"]
    server = merged["mcpServers"]["nexus"]
    assert Path(server["command"]).is_absolute() and server["args"] == ["mcp"] and server["type"] == "stdio"
    assert r["otherServers"] == ["other"] and json.loads(Path(r["backup"]).read_text()) == original
    again = json.loads(_run(tmp_path, "--client", "claude-code", "--json").stdout)
    assert again["written"] is False and again["backup"] is None  # idempotent: no new backup
    assert not (tmp_path / ".claude.json.bak.1").exists()


def test_vscode_and_opencode_shapes(tmp_path: Path) -> None:
    assert _run(tmp_path, "--client", "vscode").returncode == 0
    vs = json.loads((tmp_path / ".config" / "Code" / "User" / "mcp.json").read_text())
    assert vs["servers"]["nexus"]["cwd"] == "${workspaceFolder}" and vs["servers"]["nexus"]["args"] == ["mcp"]
    assert _run(tmp_path, "--client", "opencode").returncode == 0
    oc = json.loads((tmp_path / ".config" / "opencode" / "opencode.json").read_text())
    nexus = oc["mcp"]["nexus"]
    assert nexus["type"] == "local" and nexus["enabled"] is True and nexus["command"][-1] == "mcp"
    assert Path(nexus["command"][0]).is_absolute() and oc["$schema"].endswith("config.json")
    assert _run(tmp_path, "--client", "cursor").returncode == 0
    assert "nexus" in json.loads((tmp_path / ".cursor" / "mcp.json").read_text())["mcpServers"]


def test_invalid_json_is_left_alone(tmp_path: Path) -> None:
    config = tmp_path / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text("{ this is not json")
    out = _run(tmp_path, "--client", "cursor")
    assert out.returncode == 2 and "not valid JSON" in out.stderr
    assert config.read_text() == "{ this is not json"
    printed = _run(tmp_path, "--client", "cursor", "--print")
    assert printed.returncode == 0 and "not valid JSON" in printed.stderr  # the entry to merge by hand
    assert "nexus" in json.loads(printed.stdout)["mcpServers"]
