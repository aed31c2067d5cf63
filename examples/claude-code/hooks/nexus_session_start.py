#!/usr/bin/env python3
"""Claude Code SessionStart hook: put the latest NEXUS handoff and what memory recalls about it into context.

Claude Code adds a SessionStart hook's stdout to the session's context. This script never fails the session:
any problem (no `nexus` on PATH, daemon trouble, a slow answer) prints nothing and exits 0.
Standard library only; it talks to NEXUS through the `nexus` CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

TIMEOUT_S = 8


def nexus(project: str, *args: str) -> dict | None:
    try:
        out = subprocess.run(
            ["nexus", "-C", project, "--json", *args], capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    try:
        return json.loads(out.stdout)
    except ValueError:
        return None


def main() -> None:
    try:
        event = json.load(sys.stdin)
    except ValueError:
        event = {}
    project = os.environ.get("CLAUDE_PROJECT_DIR") or event.get("cwd") or os.getcwd()
    lines: list[str] = []
    handoff = nexus(project, "handoff", "read") or {}
    latest = handoff.get("handoff") or handoff
    query = os.path.basename(project.rstrip("/"))
    if latest.get("done"):
        lines += ["## NEXUS: handoff from the previous session", f"Done: {latest['done']}"]
        if latest.get("open") or latest.get("openItems"):
            lines.append(f"Open: {latest.get('open') or latest.get('openItems')}")
        if latest.get("next") or latest.get("nextSteps"):
            lines.append(f"Next: {latest.get('next') or latest.get('nextSteps')}")
        query = " ".join(str(latest.get(k) or "") for k in ("next", "nextSteps", "open", "openItems", "done"))[:500]
    recalled = nexus(project, "recall", query, "--budget", "800", "--type", "fact", "--type", "procedure") or {}
    items = recalled.get("items") or []
    if items:
        lines.append("## NEXUS: what earlier sessions learned (recall)")
        for item in items[:10]:
            text = item.get("text") or item.get("title") or ""
            symbol = (item.get("symbol") or {}).get("key")
            lines.append(f"- {text}" + (f" [{symbol}]" if symbol else ""))
    if lines:
        lines.append("(The `nexus` MCP tools answer code questions: locate, impact, context, recall, remember.)")
        print("\n".join(lines))


if __name__ == "__main__":
    try:
        main()
    except Exception:  # a hook never fails the session
        pass
    sys.exit(0)
