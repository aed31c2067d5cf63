"""`nexus mcp install`: write (or print) an editor's MCP configuration for NEXUS with an absolute command.

Editors start MCP servers without the user's shell, so a bare `nexus` that lives in a virtualenv is "command not
found" there. The configuration therefore names the `nexus` executable that is running now (the one beside this
Python interpreter, else the first on PATH, else `python -m nexus_client.cli_main`), by absolute path.

Four clients, each with its own file and shape (the ones in examples/):

    client       --project (in the repository)   user-wide (default)                     servers under
    claude-code  .mcp.json                       ~/.claude.json                          mcpServers
    cursor       .cursor/mcp.json                ~/.cursor/mcp.json                      mcpServers
    vscode       .vscode/mcp.json                $XDG_CONFIG_HOME/Code/User/mcp.json     servers
    opencode     opencode.json                   $XDG_CONFIG_HOME/opencode/opencode.json mcp

An existing file is merged into, never clobbered: only the `nexus` entry under the servers key changes, every
other server and setting stays, and the file as it was is copied to `FILE.bak` (then `.bak.1`, ...) first. A file
that is not valid JSON is left alone with an error.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from nexusd.errors import BadRequest

CLIENTS = ("claude-code", "cursor", "vscode", "opencode")
SERVER_NAME = "nexus"


def nexus_command() -> list[str]:
    """The absolute command line that runs this installation's `nexus`."""
    beside = Path(sys.executable).parent / "nexus"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside.absolute())]
    found = shutil.which("nexus")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "nexus_client.cli_main"]


def _config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def config_path(client: str, project: Path | None) -> Path:
    if client == "claude-code":
        return project / ".mcp.json" if project else Path.home() / ".claude.json"
    if client == "cursor":
        return (project if project else Path.home()) / ".cursor" / "mcp.json"
    if client == "vscode":
        return project / ".vscode" / "mcp.json" if project else _config_home() / "Code" / "User" / "mcp.json"
    if client == "opencode":
        return project / "opencode.json" if project else _config_home() / "opencode" / "opencode.json"
    raise BadRequest(f"unknown client {client!r}", hint=f"one of: {', '.join(CLIENTS)}")


def entry(client: str, command: list[str], env: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """(servers key, the `nexus` server entry) in the client's own format."""
    argv = [*command, "mcp"]
    if client == "opencode":
        e: dict[str, Any] = {"type": "local", "command": argv, "enabled": True}
        if env:
            e["environment"] = env
        return "mcp", e
    e = {"command": argv[0], "args": argv[1:]}
    if client in ("claude-code", "vscode"):
        e = {"type": "stdio", **e}
    if client == "vscode":
        e["cwd"] = "${workspaceFolder}"
    e["env"] = env
    return ("servers" if client == "vscode" else "mcpServers"), e


def settings_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The NEXUS_* settings in force in this environment that the editor's process would not otherwise see:
    NEXUS_HOME (which daemon and data) and NEXUS_USER (whose memory)."""
    environ = dict(os.environ if environ is None else environ)
    return {k: environ[k] for k in ("NEXUS_HOME", "NEXUS_USER") if environ.get(k)}


def _backup(path: Path) -> Path:
    target = path.with_name(path.name + ".bak")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.bak.{n}")
        n += 1
    shutil.copy2(path, target)
    return target


def plan(client: str, project: Path | None, command: list[str] | None = None,
         env: dict[str, str] | None = None, ignore_existing: bool = False) -> dict[str, Any]:  # fmt: skip
    """What `install` would write: the file, the merged document, and whether it changes anything.
    `ignore_existing` (for --print) plans against an empty file when the existing one cannot be read."""
    path = config_path(client, project)
    command = command or nexus_command()
    key, server = entry(client, command, settings_env() if env is None else env)
    existing: dict[str, Any] = {}
    if path.exists() and not ignore_existing:
        try:
            loaded = json.loads(path.read_text() or "{}")
        except (OSError, ValueError) as exc:
            raise BadRequest(f"{path} is not valid JSON ({exc}); left unchanged",
                             hint="fix the file, or use --print and merge the entry by hand") from exc  # fmt: skip
        if not isinstance(loaded, dict):
            raise BadRequest(f"{path} does not hold a JSON object; left unchanged", hint="use --print")
        existing = loaded
    merged = json.loads(json.dumps(existing))
    if client == "opencode" and "$schema" not in merged:
        merged["$schema"] = "https://opencode.ai/config.json"
    servers = merged.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise BadRequest(f"{path}: `{key}` is not an object; left unchanged", hint="use --print")
    merged.setdefault(key, {})[SERVER_NAME] = server
    return {
        "client": client,
        "file": str(path),
        "scope": "project" if project else "user",
        "command": server["command"] if client == "opencode" else [server["command"], *server["args"]],
        "entry": {key: {SERVER_NAME: server}},
        "merged": merged,
        "exists": path.exists(),
        "changed": merged != existing,
        "otherServers": sorted(k for k in (existing.get(key) or {}) if k != SERVER_NAME),
    }


def install(client: str, project: Path | None, command: list[str] | None = None) -> dict[str, Any]:
    p = plan(client, project, command)
    path = Path(p["file"])
    p["backup"] = None
    if p["changed"]:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            p["backup"] = str(_backup(path))
        tmp = path.with_name(path.name + ".nexus-tmp")
        tmp.write_text(json.dumps(p["merged"], indent=2) + "\n")
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    p["written"] = p["changed"]
    return p
