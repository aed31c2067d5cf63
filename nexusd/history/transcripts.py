"""Assistant session transcripts (Claude Code JSONL files) as conversation turns. Opt-in only (docs/conventions.md point 6).

Claude Code keeps one JSONL file per session under `~/.claude/projects/<encoded cwd>/`, where the encoded
directory is the absolute working directory with `/` and `.` (in newer versions: every character that is not a
letter, digit or `-`) replaced by `-`. `$CLAUDE_CONFIG_DIR` moves `~/.claude`. Sessions started in a
subdirectory of the repository live in a directory whose name only *starts* with the repository's encoding, and
so does a sibling such as `/work/main-old`; such candidates are confirmed by the `cwd` recorded inside the file.

Each line is a JSON object; `type` user/assistant lines carry `message.content`, a string or a list of blocks
(`text`, `tool_use`, `tool_result`, `thinking`...). Kept: text blocks verbatim, a one-line stub per tool call
(`[tool_use Bash: {"command": ...}]`, cut at 200 characters) and the first 300 characters of a tool result. A turn
made only of tool results is reported with role "tool". Thinking blocks, meta lines and summaries are dropped.
Long turns are cut at Markdown heading boundaries (then at blank lines) into chunks of at most
`MAX_TURN_CHARS`; every chunk is redacted. Malformed lines are skipped: transcripts are written while we read.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from nexusd.history.docs import chunk_lines
from nexusd.history.facts import ConversationTurnFacts
from nexusd.history.redact import redact

__all__ = ["MAX_TURN_CHARS", "encode_project_dir", "find_transcripts", "read_transcript"]

MAX_TURN_CHARS = 4000
MAX_TRANSCRIPT_BYTES = 64 << 20
_TOOL_INPUT_CHARS = 200
_TOOL_RESULT_CHARS = 300
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def encode_project_dir(path: Path | str) -> list[str]:
    """Candidate directory names Claude Code uses for a working directory (old and new encodings)."""
    absolute = os.path.abspath(str(path))
    names = [re.sub(r"[/.]", "-", absolute), re.sub(r"[^A-Za-z0-9-]", "-", absolute)]
    return list(dict.fromkeys(names))


def _default_claude_dir() -> Path:
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else Path.home() / ".claude"


def _first_cwd(path: Path, max_lines: int = 20) -> str | None:
    from nexusd.safefs import read_head

    try:
        data, _size = read_head(str(path), 1 << 20)
    except OSError:
        return None
    for line in data.decode("utf-8", "replace").splitlines()[:max_lines]:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("cwd"), str):
            return str(obj["cwd"])
    return None


def _regular(path: Path) -> bool:
    """A regular file itself, not a symlink, FIFO or device (lstat: nothing is followed or opened)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def find_transcripts(repo_root: Path | str, claude_dir: Path | str | None = None) -> list[Path]:
    """Session files of sessions run in the repository or below it, sorted by path."""
    projects = Path(claude_dir) if claude_dir is not None else _default_claude_dir()
    projects = projects / "projects"
    root = os.path.realpath(str(repo_root))
    exact = set(encode_project_dir(root)) | set(encode_project_dir(repo_root))
    try:
        dirs = [d for d in projects.iterdir() if d.is_dir()]
    except OSError:
        return []
    found: list[Path] = []
    for directory in dirs:
        name = directory.name
        if name in exact:
            found.extend(p for p in directory.glob("*.jsonl") if _regular(p))
        elif any(name.startswith(prefix + "-") for prefix in exact):
            for candidate in (p for p in directory.glob("*.jsonl") if _regular(p)):
                cwd = _first_cwd(candidate)
                if cwd and (cwd == root or cwd.startswith(root + os.sep)):
                    found.append(candidate)
    return sorted(found)


def _block_text(block: Any) -> tuple[str, bool]:
    """(text, is_tool_result) for one content block."""
    if isinstance(block, str):
        return block, False
    if not isinstance(block, dict):
        return "", False
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", "")), False
    if kind == "tool_use":
        args = json.dumps(block.get("input", {}), ensure_ascii=False, sort_keys=True)
        if len(args) > _TOOL_INPUT_CHARS:
            args = args[:_TOOL_INPUT_CHARS] + "..."
        return f"[tool_use {block.get('name', '?')}: {args}]", False
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, list):
            content = "\n".join(_block_text(item)[0] for item in content)
        text = str(content)
        if len(text) > _TOOL_RESULT_CHARS:
            text = text[:_TOOL_RESULT_CHARS] + "..."
        return f"[tool_result: {text}]", True
    return "", False  # thinking, images, unknown kinds


def _message_text(message: Any) -> tuple[str, bool]:
    """(text, only_tool_results) of a message object."""
    if not isinstance(message, dict):
        return "", False
    content = message.get("content", "")
    if isinstance(content, str):
        return content, False
    if not isinstance(content, list):
        return "", False
    parts: list[str] = []
    only_results = bool(content)
    for block in content:
        text, is_result = _block_text(block)
        only_results = only_results and is_result
        if text:
            parts.append(text)
    return "\n\n".join(parts), only_results


def _chunk_turn(text: str) -> list[str]:
    """Cut a long turn at Markdown headings (outside fences), then at blank lines, to MAX_TURN_CHARS."""
    if len(text) <= MAX_TURN_CHARS:
        return [text]
    lines = text.split("\n")
    blocks: list[list[str]] = [[]]
    fence = False
    for line in lines:
        if _FENCE.match(line):
            fence = not fence
        if not fence and _HEADING.match(line) and blocks[-1]:
            blocks.append([])
        blocks[-1].append(line)
    chunks: list[str] = []
    current: list[str] = []
    for block in blocks:  # pack whole heading blocks while they fit, split the ones that do not
        size = sum(len(line) + 1 for line in current)
        block_size = sum(len(line) + 1 for line in block)
        if current and size + block_size > MAX_TURN_CHARS:
            chunks.append("\n".join(current))
            current = []
        if block_size > MAX_TURN_CHARS:
            chunks.extend(text for _, text in chunk_lines(block, MAX_TURN_CHARS))
        else:
            current.extend(block)
    if current:
        chunks.append("\n".join(current))
    return [chunk for chunk in chunks if chunk.strip()]


def read_transcript(path: Path | str) -> list[ConversationTurnFacts]:
    """Turns of one session file in file order, chunked and redacted; bad lines are skipped."""
    turns: list[ConversationTurnFacts] = []
    fallback_session = Path(path).stem
    ordinals: dict[str, int] = {}
    from nexusd.safefs import read_head

    try:  # a regular file only (never a FIFO or a device), within a size and time bound
        data, _size = read_head(str(path), MAX_TRANSCRIPT_BYTES)
    except OSError:
        return turns
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict) or obj.get("type") not in ("user", "assistant") or obj.get("isMeta"):
            continue
        text, only_results = _message_text(obj.get("message"))
        if not text.strip():
            continue
        session = str(obj.get("sessionId") or fallback_session)
        role = "tool" if only_results else str(obj["type"])
        timestamp = str(obj.get("timestamp") or "")
        for part, chunk in enumerate(_chunk_turn(text)):
            ordinal = ordinals.get(session, 0)
            ordinals[session] = ordinal + 1
            turns.append(ConversationTurnFacts(session, ordinal, role, timestamp, redact(chunk)[0], part))
    return turns
