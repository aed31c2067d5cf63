"""Storing history: git commits and changes, shell commands, doc sections and transcript turns, into the graph.

The sources (`git`, `shell`, `docs`, `transcripts`) produce redacted facts with content-addressed ids; this
module turns them into rows and writes them on the writer's connection, one transaction per unit:
- every write first drops ids already stored, so re-ingesting is a no-op (COPY, not MERGE: MERGE is ~7x slower
  and COPY fails on a duplicate key, so the filter is also what keeps a re-sync idempotent);
- anything matching the user's deny-list (`nexus forget VALUE`) is dropped before it is stored;
- rows go in with `COPY ... FROM (UNWIND $rows ...)` in chunks, never UNWIND+MATCH (docs/field-notes.md, bulk loading).

Git: the first sync reads the latest `limit` commits (default the whole history, `NEXUS_HISTORY_COMMITS`) as
messages, and the latest `patches` non-merge commits (default 5,000, `NEXUS_HISTORY_PATCHES`; merges do not
count) with their diffs; later syncs read only `cursor..HEAD`; the cursor lives on the Repository node and is trusted only while its commit is still stored
(a code-layer rebuild drops history, and then the next sync starts over). When the cursor is no longer an
ancestor of HEAD (rebase, reset), stored commits that HEAD cannot reach are pruned.

Each change carries the qualified names of the symbols its hunks touched, judged on the file as it was at its
commit and at its parent (`symbols_at.py`: the old blobs are parsed, definitions only), so a function that
moved keeps the right commits. Changes link to their File and, by those names, to the Symbols of that path as
indexed now; links are redone when the code graph changes a path, and `history SYMBOL` reads the names, not
the links, so it never depends on them.

Shell: the spool is renamed aside before it is read (a shell that appends meanwhile creates a fresh file), the
parsed, redacted commands are appended to an archive (`shell.archive`, 0600) so a rebuild of the derived
history layer can replay them, and the aside file is deleted only after the write committed. Commands are
attributed to the registered repository containing their cwd; commands outside every registered repository are
dropped (the daemon stores nothing about directories it was not asked to look at), as are those the
deny-list matches.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexusd.history import changelog, symbols_at
from nexusd.history import docs as docs_source
from nexusd.history import git as git_source
from nexusd.history import shell as shell_source
from nexusd.history import transcripts as transcripts_source
from nexusd.history.facts import (
    ChangeFacts,
    CommitFacts,
    ConversationTurnFacts,
    DocSectionFacts,
    ShellCommandFacts,
)
from nexusd.history.redact import DenyList, redact
from nexusd.retrieve import index as retrieve_index
from nexusd.textsplit import split_identifier

from .. import config

if TYPE_CHECKING:
    from nexusd.repos import Repo, RepoRegistry
    from nexusd.store import Conn

log = logging.getLogger(__name__)

DEFAULT_COMMIT_LIMIT = 100_000  # the whole history: messages are cheap
DEFAULT_PATCH_COMMITS = 5000  # the latest non-merge commits whose diffs are read (NEXUS_HISTORY_PATCHES)
CHUNK_ROWS = 1000
CHANGE_SEARCH_CHARS = 2000  # how much of a patch is searchable (the stored patch is bounded by git.py)
DOC_SUFFIXES = {".md": "md", ".markdown": "md", ".mdx": "md", ".rst": "rst"}
MAX_DOC_BYTES = 512_000
MAX_DOC_FILES = 2000
SCRAPE_LIMIT = 500
ARCHIVE_MAX_BYTES = 16 << 20
PENDING_MAX_BYTES = 4 << 20
HISTORY_TABLES = ("Commit", "Change", "ShellCommand", "DocSection", "ConversationTurn")


def commit_limit() -> int:
    try:
        return max(1, int(config.get("NEXUS_HISTORY_COMMITS")))
    except ValueError:
        return DEFAULT_COMMIT_LIMIT


def patch_limit() -> int:
    """How many of the latest non-merge commits are read with their diffs (`NEXUS_HISTORY_PATCHES`)."""
    try:
        return max(0, int(config.get("NEXUS_HISTORY_PATCHES")))
    except ValueError:
        return DEFAULT_PATCH_COMMITS


def transcripts_enabled() -> bool:
    return bool(config.get("NEXUS_HISTORY_TRANSCRIPTS"))


# -- searchable text ----------------------------------------------------------------------------------------


def index_text(*parts: str) -> str:
    """Lower-cased text for an FTS index: the words as written (term frequency kept for BM25) followed by the
    parts of identifiers the FTS tokenizer cannot split (camelCase, PascalCase, snake_case, digits)."""
    body = " ".join(p for p in parts if p).lower()
    extras: list[str] = []
    seen: set[str] = set()
    for text in parts:
        for word in (text or "").replace("/", " ").replace(".", " ").split():
            if len(word) > 2 and (any(c.isupper() for c in word[1:]) or "_" in word or "-" in word):
                for token in split_identifier(word):
                    if token not in seen:
                        seen.add(token)
                        extras.append(token)
    return body + (" " + " ".join(extras) if extras else "")


# -- rows ---------------------------------------------------------------------------------------------------

COMMIT_COLS = (
    "id", "repoId", "sha", "message", "author", "time", "signal", "isMerge", "searchText", "kind", "isRevert",
    "isBreaking", "parents", "fileCount",
)  # fmt: skip
CHANGE_COLS = (
    "id", "repoId", "sha", "path", "oldPath", "status", "additions", "deletions", "patch", "time", "symbolIds",
    "hunks", "skipped", "truncated", "signal", "searchText", "symbolNames", "symbolRenames",
)  # fmt: skip
SHELL_COLS = (
    "id", "userId", "repoId", "text", "cwd", "exitCode", "startedAt", "durationMs", "shell", "source",
    "searchText",
)  # fmt: skip
DOC_COLS = ("id", "repoId", "path", "headingPath", "level", "startLine", "text", "searchText", "part", "mtime")
TURN_COLS = ("id", "userId", "repoId", "sessionId", "ordinal", "role", "at", "text", "searchText", "part")


def commit_row(repo_id: str, c: CommitFacts) -> dict[str, Any]:
    paths = "" if c.is_merge else " ".join(ch.path for ch in c.changes)  # a merge's files are its parents' work
    return {
        "id": c.id, "repoId": repo_id, "sha": c.sha, "message": c.message, "author": c.author_name,
        "time": float(c.time), "signal": c.signal, "isMerge": c.is_merge,
        "searchText": index_text(c.message, paths), "kind": c.kind, "isRevert": c.is_revert,
        "isBreaking": c.is_breaking, "parents": list(c.parents), "fileCount": len(c.changes),
    }  # fmt: skip


def _patch_words(patch: str) -> str:
    lines = [ln[1:] for ln in patch.split("\n") if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    return "\n".join(lines)[:CHANGE_SEARCH_CHARS]


def change_row(
    repo_id: str, c: CommitFacts, ch: ChangeFacts, names: tuple[Sequence[str], Sequence[str]] = ((), ())
) -> dict[str, Any]:
    return {
        "id": ch.id, "repoId": repo_id, "sha": c.sha, "path": ch.path, "oldPath": ch.old_path or "",
        "status": ch.status, "additions": ch.additions, "deletions": ch.deletions, "patch": ch.patch,
        "time": float(c.time), "symbolIds": [], "hunks": json.dumps(ch.hunks), "skipped": ch.skipped or "",
        "truncated": ch.truncated, "signal": c.signal,
        "searchText": index_text(ch.path, c.subject, _patch_words(ch.patch)), "symbolNames": list(names[0]),
        "symbolRenames": list(names[1]),
    }  # fmt: skip


def exit_words(code: int | None) -> str:
    """Words for how a command ended, so "failed", "killed" or "interrupted" find it (the FTS sees no codes).
    A success gets as many words, so BM25's length normalisation does not favour one outcome."""
    if code is None:
        return ""
    if code == 0:
        return "succeeded passed"
    if code == 130:
        return "failed interrupted"
    if code in (137, 9):
        return "failed error killed"
    if code > 128:
        return "failed error crashed signal"
    return "failed error"


def shell_row(user_id: str, repo_id: str, s: ShellCommandFacts) -> dict[str, Any]:
    return {
        "id": s.id, "userId": user_id, "repoId": repo_id, "text": s.text, "cwd": s.cwd,
        "exitCode": s.exit_code, "startedAt": s.started_at, "durationMs": s.duration_ms, "shell": s.shell,
        "source": s.source, "searchText": index_text(s.text, exit_words(s.exit_code)),
    }  # fmt: skip


def doc_row(repo_id: str, d: DocSectionFacts, mtime: float) -> dict[str, Any]:
    heading = " > ".join(d.heading_path)
    return {
        "id": d.id, "repoId": repo_id, "path": d.path, "headingPath": heading, "level": d.level,
        "startLine": d.start_line, "text": d.text, "searchText": index_text(heading, heading, d.path, d.text),
        "part": d.part, "mtime": mtime,
    }  # fmt: skip


def turn_row(user_id: str, repo_id: str, t: ConversationTurnFacts) -> dict[str, Any]:
    return {
        "id": t.id, "userId": user_id, "repoId": repo_id, "sessionId": t.session_id, "ordinal": t.ordinal,
        "role": t.role, "at": _iso_epoch(t.timestamp), "text": t.text, "searchText": index_text(t.text),
        "part": t.part,
    }  # fmt: skip


def _iso_epoch(stamp: str) -> float:
    if not stamp:
        return 0.0
    from datetime import datetime

    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


# -- writing ------------------------------------------------------------------------------------------------


def chunks(items: Sequence[Any], n: int = CHUNK_ROWS) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def existing_ids(conn: Conn, table: str, ids: Iterable[str]) -> set[str]:
    found: set[str] = set()
    id_list = list(dict.fromkeys(ids))
    for part in chunks(id_list):
        rows = conn.rows(f"MATCH (n:{table}) WHERE n.id IN $ids RETURN n.id", {"ids": list(part)})
        found.update(r[0] for r in rows)
    return found


def insert_nodes(conn: Conn, table: str, cols: Sequence[str], rows: list[dict[str, Any]]) -> int:
    """COPY rows not yet stored (by id); returns how many were new."""
    have = existing_ids(conn, table, (r["id"] for r in rows))
    seen: set[str] = set()
    fresh = []
    for r in rows:
        if r["id"] not in have and r["id"] not in seen:
            seen.add(r["id"])
            fresh.append(r)
    ret = ", ".join(f"r.{c}" for c in cols)
    for part in chunks(fresh):
        conn.execute(f"COPY {table} FROM (UNWIND $rows AS r RETURN {ret})", {"rows": list(part)})
    return len(fresh)


TABLE_KIND = {"Commit": "commit", "Change": "change", "ShellCommand": "shell", "DocSection": "doc",
              "ConversationTurn": "turn"}  # fmt: skip


def insert_history(conn: Conn, table: str, cols: Sequence[str], rows: list[dict[str, Any]]) -> int:
    """insert_nodes, plus each new node's searchable text in the shared HistoryText index."""
    from nexusd.history.rank import search_document

    fresh_ids = {r["id"] for r in rows} - existing_ids(conn, table, (r["id"] for r in rows))
    count = insert_nodes(conn, table, cols, rows)
    # A merge's changes are not searched (no patch text; what the merge brings in is its parents' commits):
    # they are there for function history.
    docs = [search_document(TABLE_KIND[table], r) for r in rows if r["id"] in fresh_ids and r.get("skipped") != "merge"]
    insert_nodes(conn, "HistoryText", SEARCH_DOC_COLS, docs)
    retrieve_index.touch_rows(conn, docs)
    return count


SEARCH_DOC_COLS = ("id", "kind", "repoId", "userId", "searchText", "signal", "at", "parent", "shown", "meta")


def insert_rels(conn: Conn, table: str, pairs: list[tuple[str, str]], from_to: tuple[str, str] | None = None) -> int:
    opts = f" (from='{from_to[0]}', to='{from_to[1]}')" if from_to else ""
    for part in chunks(pairs):
        conn.execute(
            f"COPY {table} FROM (UNWIND $rows AS r RETURN r[1], r[2]){opts}",
            {"rows": [[a, b] for a, b in part]},
        )
    return len(pairs)


def delete_nodes(conn: Conn, table: str, ids: Iterable[str]) -> int:
    """Delete nodes by id (with their edges); for history tables also their HistoryText and vectors."""
    id_list = list(dict.fromkeys(ids))
    extra = ["HistoryText", "HistoryVector"] if table in TABLE_KIND else []
    if extra:
        retrieve_index.touch(conn)
    names = [name for name in (table, *extra) if conn.has_table(name)]
    for part in chunks(id_list, 500):
        for name in names:
            conn.execute(f"MATCH (n:{name}) WHERE n.id IN $ids DETACH DELETE n", {"ids": list(part)})
    return len(id_list)


# -- git ----------------------------------------------------------------------------------------------------


@dataclass
class GitPlan:
    """What a git sync would store: the dry run of `scan git` and the input of `store_git`."""

    commits: list[CommitFacts] = field(default_factory=list)
    denied: int = 0
    rewritten: bool = False
    truncated: bool = False
    head: str | None = None
    since: str | None = None


def stored_cursor(conn: Conn, repo_id: str) -> str | None:
    """The history cursor, trusted only while its commit is still stored (a rebuild drops history)."""
    cursor = conn.scalar("MATCH (r:Repository {id: $r}) RETURN r.historyCursor", {"r": repo_id})
    if not cursor:
        return None
    stored = conn.scalar(
        "MATCH (c:Commit) WHERE c.repoId = $r AND c.sha = $s RETURN count(c)", {"r": repo_id, "s": cursor}
    )
    return str(cursor) if stored else None


def plan_git(root: str, since: str | None, limit: int, deny: DenyList, patches: int | None = None) -> GitPlan:
    """`patches`: the latest non-merge commits read with diffs (default `patch_limit()`); older: messages."""
    commits = git_source.read_commits(root, since, limit, patch_limit() if patches is None else patches)
    plan = GitPlan(rewritten=commits.rewritten, truncated=commits.truncated, head=commits.head, since=since)
    for c in commits:
        if deny.matches(c.message):
            plan.denied += 1
            continue
        kept = [ch for ch in c.changes if not (ch.patch and deny.matches(ch.patch)) and not deny.matches(ch.path)]
        plan.denied += len(c.changes) - len(kept)
        c.changes = kept
        plan.commits.append(c)
    return plan


def reachable_shas(root: str, limit: int = 200_000) -> set[str] | None:
    cmd = [
        "git", "--no-pager", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-C", root,
        "rev-list", f"--max-count={limit}", "HEAD",
    ]  # fmt: skip
    try:
        proc = subprocess.run(
            cmd, capture_output=True, env=git_source.git_env(), timeout=120, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return set(proc.stdout.decode().split())


def prune_unreachable(conn: Conn, repo: Repo) -> int:
    reachable = reachable_shas(repo.root)
    if reachable is None:
        return 0
    for view in repo.live_views():  # a worktree's branch commits stay while that worktree's HEAD reaches them
        reachable |= reachable_shas(view.root) or set()
    stored = conn.rows("MATCH (c:Commit) WHERE c.repoId = $r RETURN c.sha, c.id", {"r": repo.id})
    gone = [(sha, cid) for sha, cid in stored if sha not in reachable]
    if not gone:
        return 0
    shas = [sha for sha, _ in gone]
    change_ids = [
        r[0]
        for part in chunks(shas, 500)
        for r in conn.rows(
            "MATCH (ch:Change) WHERE ch.repoId = $r AND ch.sha IN $s RETURN ch.id", {"r": repo.id, "s": list(part)}
        )
    ]
    delete_nodes(conn, "Change", change_ids)
    delete_nodes(conn, "Commit", [cid for _, cid in gone])
    return len(gone)


def _merge_base(root: str, other: str) -> str | None:
    cmd = ["git", "--no-pager", *git_source.SAFE_CONFIG, "-C", root, "merge-base", "HEAD", other]
    try:
        proc = subprocess.run(cmd, capture_output=True, env=git_source.git_env(), timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.decode().strip() or None


def store_view_commits(conn: Conn, repo: Repo, deny: DenyList, patches: int | None = None) -> dict[str, Any]:
    """The commits of each worktree's branch that the repository's root HEAD does not reach (from where the two
    meet up to the worktree's HEAD), stored like the root's; the history cursor stays the root's. By view root:
    how many were read and stored."""
    out: dict[str, Any] = {}
    head = stored_cursor(conn, repo.id)
    if head is None:
        return out
    for view in repo.live_views():
        base = _merge_base(view.root, head)
        if base is None:
            continue
        plan = plan_git(view.root, base, commit_limit(), deny, patches)
        plan.head, plan.rewritten = None, False  # the cursor follows the root; nothing here was rewritten
        if plan.commits:
            done = store_git(conn, repo, plan)
            out[view.root] = {"read": done["read"], "commits": done["commits"]}
    return out


def store_git(
    conn: Conn, repo: Repo, plan: GitPlan, between: Callable[[], Any] | None = None
) -> dict[str, Any]:
    """Write a plan in one transaction: prune (after a rewrite), commits, changes, links, cursor. `between` is
    called at safe points of the naming before it (no transaction open): the writer's queued work runs there."""
    out: dict[str, Any] = {"read": len(plan.commits), "denied": plan.denied, "rewritten": plan.rewritten}
    names = symbols_at.name_changes(repo.root, plan.commits, between)  # git and parsing, before the transaction
    with conn.transaction(deletes=True):
        out["pruned"] = prune_unreachable(conn, repo) if plan.rewritten else 0
        commit_rows = [commit_row(repo.id, c) for c in plan.commits]
        change_rows = [change_row(repo.id, c, ch, names.get(ch.id, ((), ()))) for c in plan.commits for ch in c.changes]
        out["commits"] = insert_history(conn, "Commit", COMMIT_COLS, commit_rows)
        had = existing_ids(conn, "Change", (r["id"] for r in change_rows))
        out["changes"] = insert_history(conn, "Change", CHANGE_COLS, change_rows)
        pairs = [(c.id, ch.id) for c in plan.commits for ch in c.changes if ch.id not in had]
        insert_rels(conn, "HAS_CHANGE", pairs)
        new_change_ids = {chid for _, chid in pairs}
        paths = sorted({ch.path for c in plan.commits for ch in c.changes if ch.id in new_change_ids})
        out["linked"] = link_changes(conn, repo.id, paths, only=new_change_ids) if paths else {}
        if plan.head:
            conn.execute(
                "MATCH (r:Repository {id: $r}) SET r.historyCursor = $h", {"r": repo.id, "h": plan.head}
            )
    out["head"] = plan.head
    out["truncated"] = plan.truncated
    return out


def link_changes(conn: Conn, repo_id: str, paths: Sequence[str], only: set[str] | None = None) -> dict[str, int]:
    """(Re)link the changes of `paths` to their File and to the Symbols of that path indexed now whose
    qualified names the change touched (named on the file as it was at its commit, see history/symbols_at.py).

    The changes are read first, and the (deleting, so checkpointing) transaction is opened only when there are
    some: the relink after every code sync names the edited files, most of which no stored change touches (a
    checkpoint for nothing cost ~70 ms of each kernel edit). Inside a caller's transaction it joins that one."""
    from nexusd.parse.facts import file_id

    changes = []
    for part in chunks(list(paths), 500):
        changes.extend(
            conn.rows(
                "MATCH (ch:Change) WHERE ch.repoId = $r AND ch.path IN $p RETURN ch.id, ch.path, ch.symbolNames",
                {"r": repo_id, "p": list(part)},
            )
        )
    if only is not None:
        changes = [c for c in changes if c[0] in only]
    if not changes:
        return {"files": 0, "symbols": 0}
    wanted = sorted({c[1] for c in changes})
    files: set[str] = set()
    symbols: dict[tuple[str, str], list[str]] = {}
    for part in chunks(wanted, 500):
        fids = {file_id(repo_id, p): p for p in part}
        for (fid,) in conn.rows("MATCH (f:File) WHERE f.id IN $ids RETURN f.id", {"ids": list(fids)}):
            files.add(fids[fid])
        for path, qname, sid in conn.rows(
            "MATCH (s:Symbol) WHERE s.repoId = $r AND s.path IN $p RETURN s.path, s.qualifiedName, s.id",
            {"r": repo_id, "p": list(part)},
        ):
            symbols.setdefault((path, qname), []).append(sid)
    file_pairs: list[tuple[str, str]] = []
    touched_pairs: list[tuple[str, str]] = []
    for cid, path, names in changes:
        if path in files:
            file_pairs.append((cid, file_id(repo_id, path)))
        for name in names or ():
            touched_pairs.extend((cid, sid) for sid in symbols.get((path, name), ()))
    with conn.transaction(deletes=only is None):
        if only is None:  # relinking: drop the old links of these changes first
            for part in chunks([c[0] for c in changes], 500):
                conn.execute("MATCH (ch:Change)-[e:TOUCHED|CHANGED_FILE]->() WHERE ch.id IN $ids DELETE e", {"ids": list(part)})
        insert_rels(conn, "CHANGED_FILE", file_pairs)
        insert_rels(conn, "TOUCHED", touched_pairs)
    return {"files": len(file_pairs), "symbols": len(touched_pairs)}


# -- docs ---------------------------------------------------------------------------------------------------


def doc_files(root: str) -> list[tuple[str, str, float]]:
    """(relative path, kind md|rst, mtime) of the repository's documents, by the code walk's rules."""
    from nexusd.sync.walk import WalkRules

    out: list[tuple[str, str, float]] = []
    for entry in WalkRules(root).walk():
        kind = DOC_SUFFIXES.get(os.path.splitext(entry.path)[1].lower())
        if kind is not None and entry.size <= MAX_DOC_BYTES:
            out.append((entry.path, kind, entry.stat.st_mtime))
        if len(out) >= MAX_DOC_FILES:
            break
    return sorted(out)


def plan_docs(root: str, deny: DenyList) -> tuple[list[tuple[DocSectionFacts, float]], int]:
    sections: list[tuple[DocSectionFacts, float]] = []
    denied = 0
    for rel, kind, mtime in doc_files(root):
        from nexusd.sync.walk import read_source_checked

        data, _reason = read_source_checked(root, rel, MAX_DOC_BYTES)  # no symlink swapped in, no FIFO, bounded
        if data is None:
            continue
        text = data.decode("utf-8", errors="replace")
        split = docs_source.split_markdown if kind == "md" else docs_source.split_rst
        found = split(rel, text)
        dated = (
            changelog.dated_sections(root, rel, data, found, mtime)
            if changelog.is_changelog(rel)
            else [(section, mtime) for section in found]
        )  # a changelog: one section per bullet, dated by the commit that added it
        for section, when in dated:
            section.text = redact(section.text)[0]
            if deny.matches(section.text) or deny.matches(" ".join(section.heading_path)):
                denied += 1
                continue
            sections.append((section, when))
    return sections, denied


def store_docs(conn: Conn, repo: Repo, sections: list[tuple[DocSectionFacts, float]]) -> dict[str, int]:
    """Make the stored sections equal the current ones: unchanged ids stay, edited or removed ones go."""
    rows = [doc_row(repo.id, d, mtime) for d, mtime in sections]
    current = {r["id"] for r in rows}
    with conn.transaction(deletes=True):
        stored = {r[0] for r in conn.rows("MATCH (d:DocSection) WHERE d.repoId = $r RETURN d.id", {"r": repo.id})}
        removed = delete_nodes(conn, "DocSection", stored - current)
        added = insert_history(conn, "DocSection", DOC_COLS, rows)
    return {"sections": len(rows), "added": added, "removed": removed}


# -- shell --------------------------------------------------------------------------------------------------


def history_user() -> str:
    """The owner of shell commands and transcripts: the daemon's user (the spool is in its state dir)."""
    import getpass

    return config.get("NEXUS_USER") or getpass.getuser()


def attribute(
    commands: Iterable[ShellCommandFacts], repos: RepoRegistry, deny: DenyList
) -> tuple[list[tuple[str, ShellCommandFacts]], dict[str, int], list[ShellCommandFacts]]:
    """(repo id, command) for commands run inside a registered repository; counts of what was left out; the
    commands outside every registered repository."""
    kept: list[tuple[str, ShellCommandFacts]] = []
    outside: list[ShellCommandFacts] = []
    dropped = {"outsideRepos": 0, "denied": 0}
    for cmd in commands:
        if deny.matches(cmd.text):
            dropped["denied"] += 1
            continue
        repo = repos.containing(cmd.cwd) if cmd.cwd else None
        if repo is None:
            dropped["outsideRepos"] += 1
            if cmd.cwd:
                outside.append(cmd)
            continue
        kept.append((repo.id, cmd))
    return kept, dropped, outside


def store_shell(conn: Conn, user_id: str, attributed: list[tuple[str, ShellCommandFacts]]) -> int:
    rows = [shell_row(user_id, repo_id, cmd) for repo_id, cmd in attributed]
    if not rows:
        return 0
    conn.ensure_table("ShellCommand")
    with conn.transaction():
        return insert_history(conn, "ShellCommand", SHELL_COLS, rows)


def spool_line(cmd: ShellCommandFacts) -> str:
    """A command back in spool format (used for the archive of redacted, ingested commands)."""

    def esc(value: str) -> str:
        return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")

    end = cmd.started_at + (cmd.duration_ms or 0) / 1000.0
    code = cmd.exit_code if cmd.exit_code is not None else 0
    return f"N1\t{cmd.shell}\t{cmd.started_at:.6f}\t{end:.6f}\t{code}\t{esc(cmd.cwd)}\t{esc(cmd.text)}\n"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def take_spool(spool: Path) -> Path | None:
    """Rename the spool aside (atomic; shells appending meanwhile start a new file). Leftover asides from an
    interrupted ingest are merged first, so they are read again rather than lost."""
    aside = spool.with_name(spool.name + ".ingesting")
    if _size(spool) > 0:
        if aside.exists():
            with open(aside, "ab") as dst, open(spool, "rb") as src:
                dst.write(src.read())
            spool.unlink()
        else:
            os.replace(spool, aside)
        # Shells append to the next spool with their own umask (often 0644): an empty private one is waiting.
        from nexusd.paths import create_private_file

        create_private_file(spool)
    return aside if aside.exists() else None


def archive_commands(archive: Path, commands: Iterable[ShellCommandFacts], max_bytes: int = ARCHIVE_MAX_BYTES) -> None:
    data = "".join(spool_line(c) for c in commands).encode("utf-8", "surrogateescape")
    if not data:
        return
    fd = os.open(archive, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    if archive.stat().st_size > max_bytes:  # keep the newest half
        raw = archive.read_bytes()[-max_bytes // 2 :]
        _atomic_write(archive, raw[raw.find(b"\n") + 1 :])


def rewrite_archive(archive: Path, deny: DenyList) -> int:
    """Drop archived commands the deny-list now matches; returns how many were dropped."""
    if not archive.exists():
        return 0
    lines = archive.read_bytes().split(b"\n")
    kept = [ln for ln in lines if ln and not deny.matches(ln.decode("utf-8", "replace"))]
    dropped = len([ln for ln in lines if ln]) - len(kept)
    if dropped:
        _atomic_write(archive, b"".join(ln + b"\n" for ln in kept))
    return dropped


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def ingest_spool(
    conn: Conn, spool: Path, archive: Path, repos: RepoRegistry, deny: DenyList, user_id: str,
    pending: Path | None = None, retry_pending: bool = False,
) -> dict[str, int]:  # fmt: skip
    """Ingest everything spooled so far. Safe to call at any time from the writer thread.

    Commands whose cwd is in no registered repository are kept, redacted, in `pending` (bounded to the newest
    PENDING_MAX_BYTES) and attributed again when `retry_pending` is set (the caller does so when the set of
    registered repositories changed): typing in a repository before `nexus index` loses nothing.
    """
    aside = take_spool(spool)
    data = aside.read_bytes() if aside is not None else b""
    # A torn last line (a crash mid-write) has no newline: parse_spool ignores it, and so do we.
    commands, bad = shell_source.parse_spool(data[: data.rfind(b"\n") + 1])
    retried = 0
    if pending is not None and retry_pending and pending.exists():
        older, _ = shell_source.parse_spool(pending.read_bytes())
        retried = len(older)
        commands = older + commands
        pending.unlink()
    if not commands and aside is None:
        return {"read": 0, "stored": 0, "malformed": 0, "outsideRepos": 0, "denied": 0}
    attributed, dropped, outside = attribute(commands, repos, deny)
    stored = store_shell(conn, user_id, attributed)
    archive_commands(archive, (cmd for _, cmd in attributed))
    if pending is not None and outside:
        archive_commands(pending, outside, PENDING_MAX_BYTES)
    if aside is not None:
        # A shell that opened the spool just before the rename writes into the aside file: keep what arrived
        # after our read for the next ingest. A torn last line we already saw is dropped (a crashed writer).
        with open(aside, "rb") as handle:
            handle.seek(len(data))
            late = handle.read()
        if late:
            _atomic_write(aside, late)
        else:
            aside.unlink()
    return {"read": len(commands) - retried, "retried": retried, "stored": stored, "malformed": bad, **dropped}


def replay_archive(conn: Conn, archive: Path, repos: RepoRegistry, deny: DenyList, user_id: str) -> int:
    """Refill ShellCommand from the archive (after a rebuild of the history layer dropped it)."""
    if not archive.exists():
        return 0
    commands, _ = shell_source.parse_spool(archive.read_bytes())
    attributed, _, _ = attribute(commands, repos, deny)
    return store_shell(conn, user_id, attributed)


def scrape_shell(files: Iterable[tuple[str, str]], limit: int = SCRAPE_LIMIT) -> list[ShellCommandFacts]:
    """The clearly-labelled fallback (source="scraped", no exit code, no cwd) from bash/zsh history files."""
    out: list[ShellCommandFacts] = []
    for path, kind in files:
        out.extend(shell_source.scrape_history(path, kind, limit))
    return out[-limit:]


def store_scraped(conn: Conn, repo: Repo, user_id: str, commands: list[ShellCommandFacts], deny: DenyList) -> int:
    """Scraped commands have no cwd: they are attributed to the repository the user asked to sync."""
    kept = [(repo.id, c) for c in commands if not deny.matches(c.text)]
    return store_shell(conn, user_id, kept)


# -- transcripts --------------------------------------------------------------------------------------------


def plan_transcripts(root: str, deny: DenyList, claude_dir: str | None = None) -> tuple[list[ConversationTurnFacts], int]:
    turns: list[ConversationTurnFacts] = []
    denied = 0
    for path in transcripts_source.find_transcripts(root, claude_dir):
        for turn in transcripts_source.read_transcript(path):
            if deny.matches(turn.text):
                denied += 1
                continue
            turns.append(turn)
    return turns, denied


def store_transcripts(conn: Conn, repo: Repo, user_id: str, turns: list[ConversationTurnFacts]) -> int:
    rows = [turn_row(user_id, repo.id, t) for t in turns]
    if not rows:
        return 0
    conn.ensure_table("ConversationTurn")
    with conn.transaction():
        return insert_history(conn, "ConversationTurn", TURN_COLS, rows)


# -- forget -------------------------------------------------------------------------------------------------

_FORGET_FIELDS = {
    "Commit": ["message"],
    "Change": ["patch", "path"],
    "ShellCommand": ["text"],
    "DocSection": ["text", "headingPath"],
    "ConversationTurn": ["text"],
}


def forget_value(conn: Conn, value: str, deny: DenyList, repo_ids: Sequence[str] | None = None) -> dict[str, int]:
    """Delete every history node holding `value` (case-insensitive, any whitespace) in any repository of
    `repo_ids` (None: all). The caller adds the value to the deny-list so a re-ingest leaves it out."""
    probe = DenyList(values=[value])
    needle = " ".join(value.split()).lower()
    first = needle.split(" ")[0] if needle else ""
    counts: dict[str, int] = {}
    with conn.transaction(deletes=True):
        for table, props in _FORGET_FIELDS.items():
            if not conn.has_table(table):
                continue
            where = " OR ".join(f"lower(n.{p}) CONTAINS $w" for p in props)
            scope = " AND n.repoId IN $repos" if repo_ids is not None else ""
            params: dict[str, Any] = {"w": first}
            if repo_ids is not None:
                params["repos"] = list(repo_ids)
            rows = conn.rows(
                f"MATCH (n:{table}) WHERE ({where}){scope} RETURN n.id, {', '.join('n.' + p for p in props)}", params
            )
            ids = [r[0] for r in rows if any(probe.matches(str(v or "")) for v in r[1:])]
            if table == "Commit" and ids:  # a forgotten commit takes its changes with it
                extra = conn.rows(
                    "MATCH (c:Commit)-[:HAS_CHANGE]->(ch:Change) WHERE c.id IN $ids RETURN ch.id", {"ids": ids}
                )
                counts["Change"] = counts.get("Change", 0) + delete_nodes(conn, "Change", [r[0] for r in extra])
            counts[table] = counts.get(table, 0) + delete_nodes(conn, table, ids)
    return counts


def delete_repo_history(conn: Conn, repo_id: str) -> None:
    retrieve_index.touch(conn, repo_id)
    for table in (*HISTORY_TABLES, "HistoryText", "HistoryVector"):
        if not conn.has_table(table):
            continue
        conn.execute(f"MATCH (n:{table}) WHERE n.repoId = $r DETACH DELETE n", {"r": repo_id})


def forget_repo_state(conn: Conn, repo_id: str) -> None:
    """After `delete_repo_history` committed: drop what the daemon keeps of the repository's history beside the
    graph (the in-daemon BM25 shards), so a forgotten repository leaves nothing behind in memory."""
    retrieve_index.drop(conn, repo_id)

