"""The facts the history sources produce and the history ingest stores: plain data, no Kuzu, no I/O.

Every class has an `id` property: a blake2b hash of the content that identifies it (never of the time it was
read), so ingesting the same commit, spool line, doc section or transcript turn twice yields the same node and
MERGE-style writes never duplicate. The identifying content is chosen per class and documented on the property;
anything that may be re-derived differently later (a signal prior, a redaction) is left out of the id when the
underlying thing is the same.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

__all__ = [
    "ChangeFacts",
    "CommitFacts",
    "ConversationTurnFacts",
    "DocSectionFacts",
    "ShellCommandFacts",
    "content_id",
]

# A hunk as git reports it: (new_start, new_len, old_start, old_len); new_len == 0 is a pure deletion.
Hunk = tuple[int, int, int, int]


def content_id(kind: str, *parts: object) -> str:
    """A 32-hex-digit blake2b id of a kind tag and parts; parts are joined with NUL, which no part contains."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(kind.encode())
    for part in parts:
        digest.update(b"\x00")
        digest.update(str(part).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


@dataclass(slots=True)
class ChangeFacts:
    """One file's change in one commit. `patch` is bounded and redacted; empty for merges, binaries, skips."""

    commit_sha: str
    path: str  # new path (the old one for a deletion)
    status: str  # A | M | D | R (copies are reported as A)
    old_path: str | None = None  # for renames
    additions: int = 0
    deletions: int = 0
    hunks: list[Hunk] = field(default_factory=list)
    patch: str = ""
    truncated: bool = False  # the patch was cut at a bound
    skipped: str | None = None  # why no patch: binary | lockfile | generated | merge | budget
    # A merge's change (skipped "merge", from git's combined diff): the hunks against each parent in order
    # (`hunks` is the first parent's); empty for a non-merge.
    parent_hunks: list[list[Hunk]] = field(default_factory=list)

    @property
    def id(self) -> str:
        """A commit changes a path at most once."""
        return content_id("change", self.commit_sha, self.path)


@dataclass(slots=True)
class CommitFacts:
    """One commit. `signal` is a prior in [0.5, 1.0] from the message kind (see nexusd.history.git)."""

    sha: str
    parents: list[str]
    author_name: str
    author_email: str
    time: int  # author time, epoch seconds
    message: str  # subject + body, redacted
    signal: float = 0.6
    # fix | feat | refactor | perf | docs | test | chore | style | ci | build | revert | merge | other
    kind: str = "other"
    is_revert: bool = False
    is_breaking: bool = False
    is_merge: bool = False
    changes: list[ChangeFacts] = field(default_factory=list)

    @property
    def id(self) -> str:
        """The sha already is a content hash; prefixing keeps ids of different kinds apart."""
        return content_id("commit", self.sha)

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]


@dataclass(slots=True)
class DocSectionFacts:
    """A section of a Markdown or RST document, possibly one part of a long section."""

    path: str
    heading_path: list[str]  # outermost heading first; [] for text before the first heading
    level: int  # heading level 1..6, 0 for the preamble
    start_line: int  # 1-based line of the heading (or of the part's first line)
    text: str
    part: int = 0  # 0 for the first (or only) chunk of a section, 1, 2... for the next

    @property
    def id(self) -> str:
        """Path, heading path, part and text: an edited section is a new node, an unchanged one is kept."""
        return content_id("doc", self.path, "\x1f".join(self.heading_path), self.part, self.text)


@dataclass(slots=True)
class ShellCommandFacts:
    """One command typed at a prompt. `exit_code` is None when unknown (scraped from a history file)."""

    text: str  # redacted
    cwd: str
    exit_code: int | None
    started_at: float  # epoch seconds (fractional when the shell has $EPOCHREALTIME)
    duration_ms: int | None
    shell: str  # bash | zsh
    source: str = "hook"  # hook | scraped

    @property
    def id(self) -> str:
        """Start time, cwd and text identify a run; scraped and hooked copies of one run may both exist."""
        return content_id("shell", self.shell, f"{self.started_at:.6f}", self.cwd, self.text)


@dataclass(slots=True)
class ConversationTurnFacts:
    """One chunk of one turn of an assistant session transcript (redacted)."""

    session_id: str
    ordinal: int  # position in the session, counting chunks, from 0
    role: str  # user | assistant
    timestamp: str  # ISO 8601 as written by the tool, "" when missing
    text: str
    part: int = 0  # chunk number within the original message

    @property
    def id(self) -> str:
        """Session and ordinal identify a turn chunk; the text is included so a rewritten file cannot alias."""
        return content_id("turn", self.session_id, self.ordinal, self.text)
