#!/usr/bin/env python3
"""Claude Code Stop hook: write a NEXUS handoff from the end of the conversation, for the next session.

Claude Code runs Stop hooks when the assistant finishes a response; the event on stdin carries the transcript
path. The handoff's `done` is the last assistant message (bounded), `next` the last user request. Writing is
idempotent (the daemon content-addresses handoffs), the latest handoff is what the next SessionStart reads.
Never fails and never blocks the stop: every problem exits 0 silently. Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

TIMEOUT_S = 8
LIMIT = 1500


def text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def last_turns(path: str) -> tuple[str, str]:
    """The last user request and the last assistant text in a Claude Code transcript (JSON lines)."""
    user = assistant = ""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            message = entry.get("message") if isinstance(entry.get("message"), dict) else None
            if not message:
                continue
            text = text_of(message).strip()
            if not text:
                continue
            if message.get("role") == "user":
                user = text
            elif message.get("role") == "assistant":
                assistant = text
    return user[:LIMIT], assistant[:LIMIT]


def main() -> None:
    event = json.load(sys.stdin)
    if event.get("stop_hook_active"):
        return  # we are already inside a continuation caused by a Stop hook
    project = os.environ.get("CLAUDE_PROJECT_DIR") or event.get("cwd") or os.getcwd()
    transcript = event.get("transcript_path")
    if not transcript or not os.path.isfile(transcript):
        return
    user, assistant = last_turns(transcript)
    if not assistant:
        return
    args = ["nexus", "-C", project, "--json", "handoff", "write", "--done", assistant]
    if user:
        args += ["--next", f"Continue from the last request: {user}"]
    try:
        subprocess.run(args, capture_output=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        pass


if __name__ == "__main__":
    try:
        main()
    except Exception:  # a hook never fails the session
        pass
    sys.exit(0)
