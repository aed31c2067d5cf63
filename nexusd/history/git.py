"""Commit history as facts, read with one `git log` subprocess per call.

Why a subprocess and not a library: git is already on every machine that has a repository, it understands every
repository format (worktrees, packs, partial clones), and reading its output executes nothing from the repository
*provided* the repository's own configuration cannot run programs. So every call passes `--no-ext-diff`,
`--no-textconv` (a `.gitattributes` textconv driver is a program), `-c log.showSignature=false` (no gpg),
`-c core.fsmonitor=false`, `-c core.hooksPath=/dev/null`, colors off, and an environment with `LC_ALL=C`,
`GIT_OPTIONAL_LOCKS=0` (never take index.lock behind the user's back), no terminal prompt, and none of the
caller's `GIT_*` variables (a git hook runs us with `GIT_DIR`/`GIT_INDEX_FILE` set for *its* repository).

One `git log -p --unified=0` produces headers and patches together; statuses, paths, hunks and line counts are
all parsed from the patch headers, so no second `--numstat` pass is needed. Merges (in the patch window) are read
by a second `git log --merges -c`: the combined diff lists only the files whose merged content differs from every
parent, and from its lines each parent's own hunks are rebuilt (`ChangeFacts.parent_hunks`), so function history
can list a merge exactly when the function differs from every parent (what `git log -L` does). A merge's
changes keep no patch text (skipped "merge": what a merge brings in is its parents' commits). Patches are bounded (`FILE_PATCH_BYTES` per file,
`COMMIT_PATCH_BYTES` per commit, cut with a marker) and redacted, like messages.

Signal: a prior in [0.5, 1.0] from the message, used to rank history in recall (bounded, never outvoting
relevance). Conventional-commit types win over keywords:
  1.00 fix / bugfix / hotfix / security (or a subject that says fix, bug, crash, regression...)
  0.95 revert (also flagged `is_revert`)
  0.90 feat;  0.80 perf;  0.75 refactor;  0.65 anything unrecognised;  0.60 build / deps
  0.50 docs / test / chore / style / ci, and merges
  +0.10 (capped at 1.0) for a breaking change (`type!:` or a `BREAKING CHANGE:` footer, flagged `is_breaking`)
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Hashable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from nexusd.history.facts import ChangeFacts, CommitFacts, Hunk
from nexusd.history.redact import redact

__all__ = [
    "COMMIT_PATCH_BYTES",
    "FILE_PATCH_BYTES",
    "CommitList",
    "GitError",
    "classify_message",
    "git_env",
    "hunk_symbols",
    "read_commits",
    "skip_reason",
]

FILE_PATCH_BYTES = 4096
COMMIT_PATCH_BYTES = 32768
_TRUNC_MARK = "\n[... patch truncated by nexus]"
_GIT_TIMEOUT = 120.0

LOCKFILES = frozenset(
    {"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "Cargo.lock", "go.sum", "uv.lock",
     "Pipfile.lock", "composer.lock", "Gemfile.lock", "bun.lockb", "npm-shrinkwrap.json", "flake.lock"}
)  # fmt: skip
_GENERATED_SUFFIXES = (
    ".min.js",
    ".min.css",
    ".map",
    "_pb2.py",
    "_pb2_grpc.py",
    "_pb2.pyi",
    ".pb.go",
    ".snap",
)
_GENERATED_DIRS = frozenset({"dist", "build", "node_modules", "vendor", "__generated__"})

_START = "\x1eNEXUS-COMMIT\x1f"
_END = "\x1eNEXUS-END\x1f"
_FORMAT = f"{_START}%H%x1f%P%x1f%an%x1f%ae%x1f%at%x1f%B{_END}".replace("\x1e", "%x1e").replace("\x1f", "%x1f")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")

T = TypeVar("T", bound=Hashable)


class GitError(RuntimeError):
    """git failed or the directory is not a repository; the message carries git's stderr."""


class CommitList(list[CommitFacts]):
    """The commits read, newest first, plus what the caller needs to move its cursor.

    rewritten: `since` was given but is no longer an ancestor of HEAD (rebase, reset, force-push); the list is
               then the most recent `limit` commits and the caller should prune stored commits not reachable.
    truncated: more commits exist in the range than `limit` returned.
    head:      the sha of HEAD when read (the next cursor), None for an empty repository.
    """

    rewritten: bool = False
    truncated: bool = False
    head: str | None = None


def git_env() -> dict[str, str]:
    """The environment for git subprocesses: the caller's, minus its GIT_* variables, plus safe settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        LC_ALL="C", LANG="C", GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", PAGER="cat"
    )
    return env


_SAFE_CONFIG = (
    "-c", "color.ui=never", "-c", "core.quotepath=off", "-c", "log.showSignature=false",
    "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false", "-c", "i18n.logOutputEncoding=UTF-8",
)  # fmt: skip
SAFE_CONFIG = _SAFE_CONFIG  # for the other git readers of this package (cat-file in symbols_at)


def _git(root: Path | str, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    cmd = ["git", "--no-pager", *_SAFE_CONFIG, "-C", str(root), *args]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, env=git_env(), timeout=_GIT_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]} failed: {exc}") from exc
    if check and proc.returncode != 0:
        raise GitError(
            f"git {args[0]} exited {proc.returncode}: {proc.stderr.decode(errors='replace').strip()}"
        )
    return proc


def _head(root: Path | str) -> str | None:
    proc = _git(root, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
    if proc.returncode != 0:
        if _git(root, "rev-parse", "--git-dir", check=False).returncode != 0:
            raise GitError(f"not a git repository: {root}")
        return None  # repository without commits
    return proc.stdout.decode().strip()


def read_commits(root: Path | str, since: str | None, limit: int = 200, patches: int | None = None) -> CommitList:
    """Read commits newest first: `since..HEAD` when `since` is an ancestor of HEAD, else the latest `limit`.

    `patches`: only the latest `patches` non-merge commits of the range are read with their diffs (changes);
    older ones are read as messages only (one cheap `git log` without `-p`). None: every commit's diff."""
    result = CommitList()
    head = _head(root)
    result.head = head
    if head is None or limit <= 0:
        return result
    revs = [head]
    if since:
        if since == head:
            return result
        ancestor = _git(root, "merge-base", "--is-ancestor", since, head, check=False).returncode == 0
        if ancestor:
            revs = [f"{since}..{head}"]
        else:
            result.rewritten = True
    diff_args = ("-p", "--unified=0", "-M", "--no-ext-diff", "--no-textconv")
    if patches is None:
        proc = _git(root, "log", f"--format={_FORMAT}", *diff_args, "--no-color", "--encoding=UTF-8",
                    f"--max-count={limit + 1}", *revs, "--")  # fmt: skip
        commits = _parse_log(proc.stdout.decode("utf-8", "replace"))
    else:
        proc = _git(root, "log", f"--format={_FORMAT}", "--no-color", "--encoding=UTF-8", f"--max-count={limit + 1}",
                    *revs, "--")  # fmt: skip
        commits = _parse_log(proc.stdout.decode("utf-8", "replace"))
        patched: dict[str, CommitFacts] = {}
        if patches > 0:
            diffs = _git(root, "log", f"--format={_FORMAT}", *diff_args, "--no-merges", "--no-color",
                         "--encoding=UTF-8", f"--max-count={patches}", *revs, "--")  # fmt: skip
            patched = {c.sha: c for c in _parse_log(diffs.stdout.decode("utf-8", "replace"))}
        commits = [patched.get(c.sha, c) for c in commits]
    if len(commits) > limit:
        result.truncated = True
        commits = commits[:limit]
    _read_merges(root, revs, commits, patches)
    result.extend(commits)
    return result


def _read_merges(root: Path | str, revs: list[str], commits: list[CommitFacts], patches: int | None) -> None:
    """Give the merges among `commits` that lie in the patch window their combined-diff changes (in place).

    The window: every merge when every diff is read (`patches` None), else the merges newer (in log order)
    than the oldest commit read with its diff; none when no diff is read."""
    if patches is None:
        wanted = sum(1 for c in commits if c.is_merge)
    else:
        last = max((i for i, c in enumerate(commits) if c.changes and not c.is_merge), default=-1)
        wanted = sum(1 for c in commits[:last] if c.is_merge)
    if not wanted:
        return
    proc = _git(root, "log", f"--format={_FORMAT}", "--merges", "-c", "-p", "--unified=1", "--no-ext-diff",
                "--no-textconv", "--no-color", "--encoding=UTF-8", f"--max-count={wanted}", *revs, "--")  # fmt: skip
    read = {c.sha: c for c in _parse_log(proc.stdout.decode("utf-8", "replace"))}
    for c in commits:
        got = read.get(c.sha)
        if got is not None and c.is_merge:
            c.changes = got.changes


def _parse_log(text: str) -> list[CommitFacts]:
    commits: list[CommitFacts] = []
    for record in text.split(_START)[1:]:
        header, sep, diff = record.partition(_END)
        if not sep:
            continue
        fields = header.split("\x1f", 5)
        if len(fields) < 6:
            continue
        sha, parents, name, email, when, message = fields
        parent_list = parents.split()
        message = message.strip("\n")
        kind, signal, is_revert, is_breaking = classify_message(message)
        is_merge = len(parent_list) > 1
        if is_merge:
            kind, signal = "merge", 0.5
        commit = CommitFacts(
            sha=sha, parents=parent_list, author_name=name, author_email=email, time=int(when or 0),
            message=redact(message)[0], signal=signal, kind=kind, is_revert=is_revert, is_breaking=is_breaking,
            is_merge=is_merge,
        )  # fmt: skip
        if not is_merge:
            commit.changes = _parse_diff(sha, diff)
        elif "\ndiff --c" in f"\n{diff.lstrip()}":
            commit.changes = _parse_combined(sha, diff, len(parent_list))
        commits.append(commit)
    return commits


_COMBINED_HUNK = re.compile(r"^(@{3,}) (.*?) \1")


def _combined_hunks(header: str, body: list[str], parents: int) -> list[list[Hunk]] | None:
    """One combined-diff hunk (`@@@ -a,b -c,d +e,f @@@` and its lines, one prefix column per parent) as the
    hunks of the diff from each parent to the merge, in git's (new_start, new_len, old_start, old_len) form."""
    m = _COMBINED_HUNK.match(header)
    if not m or len(m.group(1)) != parents + 1:
        return None
    ranges = m.group(2).split()
    if len(ranges) != parents + 1:
        return None

    def start(spec: str) -> int:
        first, _, length = spec[1:].partition(",")
        return int(first) + (1 if length == "0" else 0)  # an empty range is numbered from the line before

    try:
        olds = [start(r) for r in ranges[:parents]]
        new0 = start(ranges[parents])
    except ValueError:
        return None
    out: list[list[Hunk]] = []
    for i in range(parents):
        hunks: list[Hunk] = []
        r, p = new0, olds[i]
        run: list[int] | None = None  # [new_start, new_len, old_start, old_len]
        for line in body:
            cols = line[:parents]
            if "-" in cols:  # a line of some parent that the merge dropped
                if cols[i] == "-":
                    run = run or [r, 0, p, 0]
                    run[3] += 1
                    p += 1
                continue
            if cols[i] == "+":  # a merge line parent i does not have
                run = run or [r, 0, p, 0]
                run[1] += 1
            else:
                if run:
                    hunks.append(_close(run))
                    run = None
                p += 1
            r += 1
        if run:
            hunks.append(_close(run))
        out.append(hunks)
    return out


def _close(run: list[int]) -> Hunk:
    new_start, new_len, old_start, old_len = run
    return (new_start if new_len else new_start - 1, new_len, old_start if old_len else old_start - 1, old_len)


def _parse_combined(sha: str, diff: str, parents: int) -> list[ChangeFacts]:
    """A merge's `git log -c -p` output: one change per file whose merged content differs from every parent,
    with no patch text; `hunks` against the first parent, `parent_hunks` against each."""
    changes: list[ChangeFacts] = []
    change: ChangeFacts | None = None
    header: str | None = None
    body: list[str] = []

    def flush() -> None:
        if change is not None and header is not None:
            per_parent = _combined_hunks(header, body, parents)
            if per_parent is not None:
                for i, hunks in enumerate(per_parent):
                    change.parent_hunks[i].extend(hunks)
        body.clear()

    for line in diff.split("\n"):
        if line.startswith(("diff --cc ", "diff --combined ")):
            flush()
            header = None
            path = _unquote(line.split(" ", 2)[2])
            change = ChangeFacts(commit_sha=sha, path=path, status="M", skipped="merge",
                                 parent_hunks=[[] for _ in range(parents)])  # fmt: skip
            changes.append(change)
            continue
        if change is None:
            continue
        if line.startswith("@@@"):
            flush()
            header = line
        elif header is not None:
            if line[:1] in (" ", "+", "-"):
                body.append(line)
        elif line.startswith("new file mode"):
            change.status = "A"
        elif line.startswith("deleted file mode"):
            change.status = "D"
        elif line.startswith("+++ "):
            change.path = _strip_prefix(line[4:]) or change.path
    flush()
    for ch in changes:
        ch.hunks = list(ch.parent_hunks[0]) if ch.parent_hunks else []
        ch.additions = sum(h[1] for h in ch.hunks)
        ch.deletions = sum(h[3] for h in ch.hunks)
    return changes


# -- diff parsing -------------------------------------------------------------------------------------------

_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual paths ("a/tab\\there", octal escapes for raw bytes)."""
    if len(path) < 2 or not (path.startswith('"') and path.endswith('"')):
        return path
    body, out, i = path[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and i + 3 < len(body) and body[i + 1 : i + 4].isdigit():
                out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(_ESCAPES.get(nxt, ord(nxt) if ord(nxt) < 128 else 63))
            i += 2
            continue
        out.extend(ch.encode("utf-8"))
        i += 1
    return out.decode("utf-8", "replace")


def _strip_prefix(path: str) -> str | None:
    path = _unquote(path.rstrip("\t"))
    if path == "/dev/null":
        return None
    return path[2:] if path[:2] in ("a/", "b/") else path


def skip_reason(path: str) -> str | None:
    """Why a changed file's patch is not kept: "lockfile", "generated", or None."""
    name = path.rsplit("/", 1)[-1]
    if name in LOCKFILES:
        return "lockfile"
    if name.endswith(_GENERATED_SUFFIXES) or any(part in _GENERATED_DIRS for part in path.split("/")[:-1]):
        return "generated"
    return None


class _FileDiff:
    """Accumulates one `diff --git` block."""

    __slots__ = ("header", "old", "new", "status", "binary", "hunks", "lines", "adds", "dels")

    def __init__(self, header: str) -> None:
        self.header = header
        self.old: str | None = None
        self.new: str | None = None
        self.status = "M"
        self.binary = False
        self.hunks: list[Hunk] = []
        self.lines: list[str] = []
        self.adds = 0
        self.dels = 0


def _header_paths(header: str) -> str:
    """Path from `diff --git a/X b/X` when no ---/+++/rename lines exist (mode change, binary, empty file)."""
    rest = header[len("diff --git ") :]
    if rest.startswith('"'):
        end = rest.find('" ', 1)
        return _strip_prefix(rest[: end + 1]) or ""
    half = (len(rest) - 5) // 2  # "a/" + X + " b/" + X
    return rest[2 : 2 + half] if half > 0 else rest


def _parse_diff(sha: str, diff: str) -> list[ChangeFacts]:
    files: list[_FileDiff] = []
    current: _FileDiff | None = None
    in_hunks = False
    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            current = _FileDiff(line)
            files.append(current)
            in_hunks = False
            continue
        if current is None:
            continue
        if in_hunks:
            first = line[:1]
            if first == "+":
                current.adds += 1
            elif first == "-":
                current.dels += 1
            elif first == "@":
                _add_hunk(current, line)
            elif first != "\\":
                continue
            current.lines.append(line)
            continue
        if line.startswith("@@"):
            in_hunks = True
            _add_hunk(current, line)
            current.lines.append(line)
        elif line.startswith("new file mode"):
            current.status = "A"
        elif line.startswith("deleted file mode"):
            current.status = "D"
        elif line.startswith(("rename from ", "copy from ")):
            current.old = _unquote(line.split(" ", 2)[2])
            current.status = "R" if line.startswith("rename") else "A"
        elif line.startswith(("rename to ", "copy to ")):
            current.new = _unquote(line.split(" ", 2)[2])
        elif line.startswith("--- "):
            current.old = current.old or _strip_prefix(line[4:])
        elif line.startswith("+++ "):
            current.new = _strip_prefix(line[4:]) or current.new
        elif line.startswith(("Binary files ", "GIT binary patch")):
            current.binary = True
    return _to_changes(sha, files)


def _add_hunk(current: _FileDiff, line: str) -> None:
    m = _HUNK.match(line)
    if m:
        old_start, old_len, new_start, new_len = m.groups()
        current.hunks.append(
            (
                int(new_start),
                1 if new_len is None else int(new_len),
                int(old_start),
                1 if old_len is None else int(old_len),
            )
        )


def _to_changes(sha: str, files: list[_FileDiff]) -> list[ChangeFacts]:
    changes: list[ChangeFacts] = []
    budget = COMMIT_PATCH_BYTES
    for f in files:
        fallback = _header_paths(f.header)
        new = f.new or fallback
        old = f.old or fallback
        path = old if f.status == "D" else new
        change = ChangeFacts(
            commit_sha=sha, path=path, status=f.status, old_path=old if f.status == "R" else None,
            additions=f.adds, deletions=f.dels, hunks=f.hunks,
        )  # fmt: skip
        changes.append(change)
        change.skipped = "binary" if f.binary else skip_reason(path)
        if change.skipped or not f.lines:
            continue
        if budget <= 0:
            change.skipped, change.truncated = "budget", True
            continue
        cap = min(FILE_PATCH_BYTES, budget)
        raw = "\n".join(f.lines)
        # Redact a little more than we keep, so that a secret straddling the cut is still recognised whole.
        text = redact(raw[: cap + 512])[0] if len(raw) > cap else redact(raw)[0]
        if len(text.encode("utf-8")) > cap:
            text = text.encode("utf-8")[: cap - len(_TRUNC_MARK)].decode("utf-8", "ignore") + _TRUNC_MARK
            change.truncated = True
        change.patch = text
        budget -= len(text.encode("utf-8"))
    return changes


# -- signal -------------------------------------------------------------------------------------------------

_CONVENTIONAL = re.compile(r"^(?P<type>[A-Za-z]+)(?:\([^)\n]*\))?(?P<bang>!)?:\s")
_TYPE_KIND = {
    "fix": "fix", "bugfix": "fix", "hotfix": "fix", "security": "fix", "feat": "feat", "feature": "feat",
    "perf": "perf", "refactor": "refactor", "docs": "docs", "doc": "docs", "test": "test", "tests": "test",
    "chore": "chore", "style": "style", "ci": "ci", "build": "build", "deps": "build", "revert": "revert",
}  # fmt: skip
_KIND_SIGNAL = {
    "fix": 1.0, "revert": 0.95, "feat": 0.9, "perf": 0.8, "refactor": 0.75, "other": 0.65, "build": 0.6,
    "docs": 0.5, "test": 0.5, "chore": 0.5, "style": 0.5, "ci": 0.5,
}  # fmt: skip
_KEYWORDS = [
    ("fix", re.compile(r"(?i)\b(fix(e[sd])?|bug|hotfix|crash|regression|leak|broken|vulnerab\w*|cve-\d+)\b")),
    ("feat", re.compile(r"(?i)^(add|implement|introduce|support|new)\b")),
    ("perf", re.compile(r"(?i)\b(speed ?up|faster|optimi[sz]e\w*|perf(ormance)?)\b")),
    ("refactor", re.compile(r"(?i)\b(refactor\w*|clean ?up|restructure|simplify|rename)\b")),
    ("docs", re.compile(r"(?i)^(docs?|readme|typo)\b")),
    ("test", re.compile(r"(?i)^(tests?|add tests?)\b")),
]
_BREAKING = re.compile(r"(?m)^BREAKING[ -]CHANGE:")


def classify_message(message: str) -> tuple[str, float, bool, bool]:
    """(kind, signal, is_revert, is_breaking) for a commit message; see the module docstring for the scale."""
    subject = message.split("\n", 1)[0].strip()
    is_revert = subject.startswith(("Revert ", "revert:", "revert(")) or "This reverts commit" in message
    is_breaking = bool(_BREAKING.search(message))
    kind = "other"
    m = _CONVENTIONAL.match(subject)
    if m and m.group("type").lower() in _TYPE_KIND:
        kind = _TYPE_KIND[m.group("type").lower()]
        is_breaking = is_breaking or bool(m.group("bang"))
    elif is_revert:
        kind = "revert"
    else:
        for candidate, pattern in _KEYWORDS:
            if pattern.search(subject):
                kind = candidate
                break
    if is_revert:
        kind = "revert"
    signal = _KIND_SIGNAL.get(kind, 0.65)
    if is_breaking:
        signal = min(1.0, signal + 0.1)
    return kind, signal, is_revert, is_breaking


# -- hunks to symbols ---------------------------------------------------------------------------------------


def hunk_symbols(hunks: Iterable[Sequence[int]], symbol_ranges: Iterable[tuple[int, int, T]]) -> set[T]:
    """Ids of the symbols whose [start, end] line range (new side, 1-based, inclusive) a hunk touches.

    Hunks are (new_start, new_len, old_start, old_len) as in ChangeFacts. A deletion-only hunk (new_len == 0)
    has no new lines; git puts new_start on the line *before* the removed text, and we count the symbol at that
    line as touched (the code around the removal changed meaning), using line 1 for a removal at the top.
    """
    spans: list[tuple[int, int]] = []
    for hunk in hunks:
        start, length = int(hunk[0]), int(hunk[1])
        if length > 0:
            spans.append((start, start + length - 1))
        else:
            line = max(start, 1)
            spans.append((line, line))
    if not spans:
        return set()
    touched: set[T] = set()
    for start, end, ident in symbol_ranges:
        for lo, hi in spans:
            if lo <= end and start <= hi:
                touched.add(ident)
                break
    return touched
