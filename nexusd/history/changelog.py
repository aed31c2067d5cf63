"""Changelogs: one section per bullet, dated by the commit that added the bullet.

A release section of a changelog holds many unrelated entries, and its file's modification time says when the
checkout was made, not when an entry was written. So, for a file whose name says it is a changelog
(`is_changelog`):
- each section is split at its top-level bullets (`-`, `*`, `+` at the section's smallest bullet indent; the
  lines up to the next such bullet belong to it); text before the first bullet stays a section of its own;
- each resulting section is dated by `git blame` of its first line: the author time of the commit that added
  it (the working tree is blamed, so a line not committed yet is dated now). A file git cannot blame (outside a
  repository, untracked) keeps its modification time.
Blame runs once per file content (cached in the process by content hash), about a second for a 1,700-line
changelog with 5,000 commits behind it.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import replace

from nexusd.history import git as git_source
from nexusd.history.facts import DocSectionFacts

_NAMES = ("changelog", "changes", "history", "news", "release")
_BULLET = re.compile(r"^( *)[-*+] +\S")
_CACHE: dict[tuple[str, str, str], list[float] | None] = {}
_CACHE_MAX = 64


def is_changelog(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return name.startswith(_NAMES) or "/changelog" in path.lower()


def split_bullets(section: DocSectionFacts) -> list[DocSectionFacts]:
    """A section cut at its top-level bullets; parts are renumbered from 0 in document order."""
    lines = section.text.split("\n")
    indents = [len(m.group(1)) for line in lines if (m := _BULLET.match(line))]
    if len(indents) < 2:
        return [section]
    top = min(indents)
    pieces: list[tuple[int, list[str]]] = []  # (index of first line, lines)
    for i, line in enumerate(lines):
        m = _BULLET.match(line)
        if (m and len(m.group(1)) == top) or not pieces:
            pieces.append((i, [line]))
        else:
            pieces[-1][1].append(line)
    out = []
    for index, chunk in pieces:
        while chunk and not chunk[-1].strip():
            chunk = chunk[:-1]
        if not any(line.strip() for line in chunk):
            continue
        out.append(replace(section, start_line=section.start_line + index, text="\n".join(chunk)))
    return out


def line_times(root: str, rel: str, data: bytes) -> list[float] | None:
    """The author time of the commit that added each line of the working-tree file (1-based: index 0 is line 1),
    or None when git cannot blame it."""
    key = (root, rel, hashlib.blake2b(data, digest_size=16).hexdigest())
    if key in _CACHE:
        return _CACHE[key]
    try:
        proc = git_source._git(root, "blame", "--line-porcelain", "--", rel, check=False)
    except git_source.GitError:
        proc = None
    times: list[float] | None = None
    if proc is not None and proc.returncode == 0:
        now = time.time()
        times = []
        committed = True
        for line in proc.stdout.split(b"\n"):
            if line.startswith(b"author-time "):
                stamp = float(line.split()[1])
                times.append(stamp if committed else now)
            elif len(line) > 40 and line[:40] == b"0" * 40:
                committed = False  # "Not Committed Yet": the header of a line only in the working tree
            elif line.startswith(b"\t"):
                committed = True
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[key] = times
    return times


def dated_sections(
    root: str, rel: str, data: bytes, sections: list[DocSectionFacts], mtime: float
) -> list[tuple[DocSectionFacts, float]]:
    """Bullets of a changelog with the time their first line was committed (else the file's mtime)."""
    parts = [piece for section in sections for piece in split_bullets(section)]
    times = line_times(root, rel, data)
    out = []
    counters: dict[tuple[str, ...], int] = {}
    for piece in parts:
        heading = tuple(piece.heading_path)
        part = counters.get(heading, 0)
        counters[heading] = part + 1
        when = mtime
        if times and 0 < piece.start_line <= len(times):
            when = times[piece.start_line - 1]
        out.append((replace(piece, part=part), when))
    return out
