"""Claude Code transcripts: finding a repository's sessions, turns from JSONL, chunking, redaction."""

from __future__ import annotations

import json
from pathlib import Path

from nexusd.history.transcripts import MAX_TURN_CHARS, encode_project_dir, find_transcripts, read_transcript


def write_session(path: Path, lines: list[object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def entry(
    kind: str, content: object, cwd: str, session: str = "s1", ts: str = "2025-01-01T00:00:00Z"
) -> dict:
    return {"type": kind, "sessionId": session, "cwd": cwd, "timestamp": ts,
            "message": {"role": kind, "content": content}}  # fmt: skip


def test_find_transcripts_by_encoded_dir_and_cwd(tmp_path: Path) -> None:
    repo = tmp_path / "my.repo"
    (repo / "sub").mkdir(parents=True)
    claude = tmp_path / ".claude"
    encoded = encode_project_dir(repo)[0]
    assert encoded == str(repo).replace("/", "-").replace(".", "-")
    own = write_session(claude / "projects" / encoded / "a.jsonl", [entry("user", "hi", str(repo))])
    sub = write_session(
        claude / "projects" / (encoded + "-sub") / "b.jsonl", [entry("user", "x", str(repo / "sub"))]
    )
    sibling_dir = claude / "projects" / (encoded + "-old")
    write_session(sibling_dir / "c.jsonl", [entry("user", "y", str(tmp_path / "my.repo-old"))])
    (claude / "projects" / encoded / "notes.txt").write_text("not a session")
    assert find_transcripts(repo, claude_dir=claude) == sorted([own, sub])
    assert find_transcripts(repo, claude_dir=tmp_path / "nowhere") == []


def test_read_transcript_turns(tmp_path: Path) -> None:
    cwd = "/work/app"
    key = "sk-ant-" + "api03-ZyXwVu987654_TsRqPo-321abcD"
    path = write_session(tmp_path / "s.jsonl", [
        {"type": "summary", "summary": "Fixing the parser"},
        entry("user", f"Please fix the parser. My key is {key}", cwd, ts="2025-01-01T00:00:01Z"),
        "{not json",
        entry("assistant", [{"type": "thinking", "thinking": "hmm"},
                            {"type": "text", "text": "Looking at it."},
                            {"type": "tool_use", "name": "Bash", "input": {"command": "pytest -x"}}], cwd),
        entry("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "1 failed " + "x" * 1000}], cwd),
        {"type": "user", "isMeta": True, "sessionId": "s1", "message": {"content": "<command-name>/clear"}},
        entry("assistant", [{"type": "text", "text": "Done."}], cwd),
        entry("user", "", cwd),
    ])  # fmt: skip
    turns = read_transcript(path)
    assert [(t.ordinal, t.role) for t in turns] == [
        (0, "user"),
        (1, "assistant"),
        (2, "tool"),
        (3, "assistant"),
    ]
    assert key not in turns[0].text and "[REDACTED:anthropic-key]" in turns[0].text
    assert turns[0].timestamp == "2025-01-01T00:00:01Z" and turns[0].session_id == "s1"
    assert "Looking at it." in turns[1].text and '[tool_use Bash: {"command": "pytest -x"}]' in turns[1].text
    assert "hmm" not in turns[1].text
    assert turns[2].text.startswith("[tool_result: 1 failed") and len(turns[2].text) < 400
    assert [t.id for t in read_transcript(path)] == [t.id for t in turns]  # re-reading yields the same ids


def test_long_turn_is_chunked_at_headings(tmp_path: Path) -> None:
    sections = [f"## Step {i}\n\n" + ("detail " * 120 + "\n\n") * 3 for i in range(6)]
    text = "# Plan\n\n" + "".join(sections)
    path = write_session(tmp_path / "s.jsonl", [entry("assistant", [{"type": "text", "text": text}], "/w")])
    turns = read_transcript(path)
    assert len(turns) > 1
    assert [t.part for t in turns] == list(range(len(turns))) and [t.ordinal for t in turns] == list(
        range(len(turns))
    )
    assert all(len(t.text) <= MAX_TURN_CHARS for t in turns)
    assert all(t.text.lstrip().startswith("#") for t in turns)  # every chunk starts at a heading
    assert sum(t.text.count("detail") for t in turns) == 6 * 3 * 120


def test_missing_file_is_empty(tmp_path: Path) -> None:
    assert read_transcript(tmp_path / "none.jsonl") == []
