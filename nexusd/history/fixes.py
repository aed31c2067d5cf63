"""Failure -> fix: what fixed a failed shell command, so "how did we fix the flaky X" has an answer.

A command *failed* when it exited non-zero and was not interrupted (130, Ctrl-C) and the exit code is known (a
scraped command has none). For a failed command F, run by one user in one repository at time t:

- **the later success**: the first command of the same user and repository after t, within `WINDOW_S`, whose
  text is F's (whitespace collapsed) and which exited 0;
- **the fixing commit**: the earliest non-merge commit of the repository with an author time after t that
  changed a file F names (an argument that is a path of the repository once made relative to the repository
  root from F's directory, with a `::test` or `:line` suffix dropped), up to `AFTER_SUCCESS_S` after the later
  success (the fix is often committed once the command passes), or up to `WINDOW_S` after t without one. When F
  names no file the history knows, the earliest commit between t and `AFTER_SUCCESS_S` after the later success,
  and none without a later success (a commit with nothing in common with F would be a guess).

It is computed when a failed command is shown (`query`), from the stored shell commands and commits, so it
needs no link of its own and sees a fix that arrived after the failure was ingested.
"""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nexusd.store import Conn

WINDOW_S = 7 * 86400.0
AFTER_SUCCESS_S = 86400.0
INTERRUPTED = 130
MAX_ARGS = 64


def failed(code: Any) -> bool:
    return code is not None and int(code) not in (0, INTERRUPTED)


def _norm(text: str) -> str:
    return " ".join(text.split())


def named_paths(command: str, cwd: str, root: str) -> list[str]:
    """Repository-relative paths an argument of the command may name (whether they exist is checked later)."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    out: list[str] = []
    for word in words[1:MAX_ARGS]:
        if word.startswith("-") and "=" in word:
            word = word.split("=", 1)[1]
        elif word.startswith("-"):
            continue
        word = word.split("::", 1)[0]
        head, sep, tail = word.rpartition(":")
        if sep and tail.isdigit():
            word = head
        if not word or "/" not in word and "." not in word:
            continue
        path = os.path.normpath(os.path.join(cwd or root, word))
        if path == root or not path.startswith(root.rstrip(os.sep) + os.sep):
            continue
        rel = os.path.relpath(path, root)
        if rel not in out:
            out.append(rel)
    return out


def find_fix(conn: Conn, repo_id: str, root: str, user: str, command: str, cwd: str, at: float) -> dict[str, Any]:
    """{"command": the later success or None, "commit": the fixing commit or None} for a failed command."""
    first = command.split()[0] if command.split() else command
    rows = [] if not conn.has_table("ShellCommand") else conn.rows(
        "MATCH (s:ShellCommand) WHERE s.repoId = $r AND s.userId = $u AND s.exitCode = 0 AND s.startedAt > $t "
        "AND s.startedAt <= $until AND s.text STARTS WITH $first RETURN s.text, s.startedAt, s.durationMs "
        "ORDER BY s.startedAt",
        {"r": repo_id, "u": user, "t": at, "until": at + WINDOW_S, "first": first},
    )
    wanted = _norm(command)
    success = next(({"command": text, "at": float(when), "durationMs": dur, "exitCode": 0}
                     for text, when, dur in rows if _norm(text) == wanted), None)  # fmt: skip
    end = success["at"] + AFTER_SUCCESS_S if success else at + WINDOW_S
    commit = None
    paths = named_paths(command, cwd, root) if root else []
    if paths:
        # a named directory counts for the files under it
        found = conn.rows(
            "MATCH (c:Commit)-[:HAS_CHANGE]->(ch:Change) WHERE c.repoId = $r AND NOT c.isMerge AND c.time > $t "
            "AND c.time <= $until AND (ch.path IN $p OR ch.oldPath IN $p OR any(d IN $dirs WHERE ch.path STARTS WITH d)) "
            "RETURN c.sha, c.message, c.time, ch.path ORDER BY c.time, c.sha LIMIT 20",
            {"r": repo_id, "t": at, "until": end, "p": paths, "dirs": [p + "/" for p in paths]},
        )
        if found:
            sha, message, when, _ = found[0]
            files = sorted({row[3] for row in found if row[0] == sha})
            commit = {"sha": sha, "subject": (message or "").split("\n", 1)[0], "at": float(when), "files": files,
                      "rule": "changed a file the command names"}  # fmt: skip
    if commit is None and success is not None and not _known(conn, repo_id, paths):
        found = conn.rows(
            "MATCH (c:Commit) WHERE c.repoId = $r AND NOT c.isMerge AND c.time > $t AND c.time <= $until "
            "RETURN c.sha, c.message, c.time ORDER BY c.time, c.sha LIMIT 1",
            {"r": repo_id, "t": at, "until": end},
        )
        if found:
            sha, message, when = found[0]
            commit = {"sha": sha, "subject": (message or "").split("\n", 1)[0], "at": float(when),
                      "rule": "the first commit after the failure, before the command passed again"}  # fmt: skip
    return {"command": success, "commit": commit}


def _known(conn: Conn, repo_id: str, paths: list[str]) -> bool:
    """Whether any of the paths is a file the history has seen change (then only a commit touching it fixes)."""
    if not paths:
        return False
    return bool(
        conn.scalar(
            "MATCH (ch:Change) WHERE ch.repoId = $r AND (ch.path IN $p OR any(d IN $dirs WHERE ch.path STARTS WITH d)) "
            "RETURN count(ch) > 0",
            {"r": repo_id, "p": paths, "dirs": [p + "/" for p in paths]},
        )
    )


def annotate(conn: Conn, results: list[dict[str, Any]], roots: dict[str, str], user: str) -> int:
    """Add `fix` to each failed shell command among query results (before `repoId` is replaced by the root)."""
    n = 0
    for item in results:
        if item.get("kind") != "shell" or not failed(item.get("exitCode")) or item.get("source") == "scraped":
            continue
        repo_id = item.get("repoId", "")
        fix = find_fix(conn, repo_id, roots.get(repo_id, ""), user, item.get("command") or "", item.get("cwd") or "",
                       float(item.get("at") or 0))  # fmt: skip
        if fix["command"] or fix["commit"]:
            item["fix"] = fix
            n += 1
    return n
