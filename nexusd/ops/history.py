"""History operations: sync (git, docs, shell spool, transcripts), unified `query`, `history` of a symbol or
file, dry-run `scan`, `forget.value`, `shell.ingest`.

Every write runs on the writer lane. The history layer's per-daemon state (deny-list, spool, the spool timer,
the relinking after code syncs) is `history/service.py`'s `HistoryService`, reached as `ctx.parts.history`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .. import safefs
from ..errors import BadRequest, NotFound, NotIndexed
from ..history import fixes, ingest, lineage, rank, reads, vectors
from ..history.redact import DenyList
from ..opargs import Args, NoArgs, Scoped, arg, repo_arg, user_arg
from ..registry import Ctx, op
from ..repos import Repo, owner_of, repo_shared, require_repo, with_freshness
from ..retrieve import index as retrieve_index
from ..retrieve import search as retrieve_search

if TYPE_CHECKING:
    from ..store import Conn

log = logging.getLogger(__name__)

KINDS = ["commit", "change", "shell", "doc", "turn", "fact", "procedure", "handoff"]


@dataclass(frozen=True, kw_only=True)
class ScrapeFile(Args):
    """A shell history file to scrape: `scrape` items."""

    path: str = arg()
    shell: Literal["bash", "zsh"] = arg()


# Arguments the history sources share (one function each: a dataclass field belongs to one class).
def scrape_arg() -> Any:
    return arg(None, maxItems=4,
               description="Shell history files to scrape as a labelled fallback: [{path, shell: bash|zsh}].")  # fmt: skip


def claude_dir_arg() -> Any:
    return arg(None, description="Claude config dir holding projects/ (default ~/.claude).")


def _user(args: Scoped) -> str:
    return str(args.user or ingest.history_user())


def _user_roots(ctx: Ctx, args: Scoped) -> list[str]:
    user = _user(args)
    return [r.root for r in ctx.parts.repos.all() if repo_shared() or owner_of(r) == user]


def scrape_files(ctx: Ctx, args: Scoped, scrape: list[ScrapeFile] | None) -> list[tuple[str, str]]:
    """The history files a request asks to scrape, each checked (safefs.history_file) before anything is read:
    a path that is not a regular shell history file of this user is `bad_request` with the reason."""
    roots = _user_roots(ctx, args)
    return [(safefs.history_file(f.path, roots), f.shell) for f in scrape or []]


def claude_dir(ctx: Ctx, args: Scoped, given: str | None) -> str | None:
    if given is None:
        return None
    extra = [os.environ.get("CLAUDE_CONFIG_DIR")]
    return str(safefs.config_dir(given, "claudeDir", _user_roots(ctx, args), extra))


def _store_vectors(conn: Conn, repo_id: str, user_id: str, label: str, rows: list[tuple[str, str]]) -> int:
    embedder = vectors.configured()
    if embedder is None or not rows:
        return 0
    conn.ensure_table("HistoryVector")
    have = ingest.existing_ids(conn, "HistoryVector", (r[0] for r in rows))
    todo = [r for r in rows if r[0] not in have]
    if not todo:
        return 0
    try:
        vecs = embedder.embed([text for _, text in todo])
    except vectors.EmbedError as exc:
        log.warning("embeddings skipped: %s", exc)
        return 0
    records = [
        {"id": i, "repoId": repo_id, "userId": user_id, "label": label, "model": embedder.model, "vec": v}
        for (i, _), v in zip(todo, vecs, strict=True)
    ]
    return ingest.insert_nodes(conn, "HistoryVector", ("id", "repoId", "userId", "label", "model", "vec"), records)


# -- sync ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class HistorySyncArgs(Args):
    repo: str = repo_arg(required=True)
    user: str | None = user_arg()
    limit: int | None = arg(None, minimum=1, maximum=100000,
                            description="Commits on a first sync (default: the whole history, NEXUS_HISTORY_COMMITS).")  # fmt: skip
    patches: int | None = arg(None, minimum=0, maximum=100000,
                              description="Latest non-merge commits read with their diffs (default 5000, NEXUS_HISTORY_PATCHES).")  # fmt: skip
    git: bool = arg(True)
    docs: bool = arg(True)
    shell: bool = arg(True)
    transcripts: bool | None = arg(None, description="Opt in to Claude Code transcripts (default: NEXUS_HISTORY_TRANSCRIPTS).")
    claude_dir: str | None = claude_dir_arg()
    scrape: list[ScrapeFile] | None = scrape_arg()


@op(
    "history.sync",
    lane="write",
    long=True,
    description="Ingest a repository's history: new git commits (first sync: every message, diffs for the latest N "
    "non-merge commits), docs, the shell "
    "spool, and (opt-in) assistant transcripts. Idempotent; redacted; honours the forget deny-list.",
    args=HistorySyncArgs,
    timeout_s=1800,
)
def history_sync(ctx: Ctx, args: HistorySyncArgs) -> dict[str, Any]:
    assert ctx.conn is not None
    repo = require_repo(ctx.parts.repos, args)
    scrape = scrape_files(ctx, args, args.scrape)  # refused before anything is written
    claude = claude_dir(ctx, args, args.claude_dir)
    conn, history = ctx.conn, ctx.parts.history
    deny = history.deny
    user = _user(args)
    out: dict[str, Any] = {"repo": repo.root}
    if args.git:
        ctx.progress({"message": "reading git history"})
        since = ingest.stored_cursor(conn, repo.id)
        try:
            limit = args.limit or ingest.commit_limit()
            plan = ingest.plan_git(repo.root, since, limit, deny, args.patches)
        except ingest.git_source.GitError as exc:
            out["git"] = {"error": str(exc)}
        else:
            # The naming of each change (~10 s for black's whole history) lets the writer run queued edits.
            out["git"] = ingest.store_git(conn, repo, plan, lambda: ctx.parts.writer.service_writes(conn))
            out["git"]["since"] = since
            _store_vectors(conn, repo.id, "", "Commit", [(c.id, c.message) for c in plan.commits])
            if repo.views:  # the worktrees' branches: their own commits, once each
                out["git"]["views"] = ingest.store_view_commits(conn, repo, deny, args.patches)
    if args.docs:
        ctx.progress({"message": "splitting docs"})
        sections, denied = ingest.plan_docs(repo.root, deny)
        out["docs"] = {**ingest.store_docs(conn, repo, sections), "denied": denied}
        _store_vectors(
            conn, repo.id, "", "DocSection", [(d.id, " > ".join(d.heading_path) + "\n" + d.text) for d, _ in sections]
        )
    if args.shell:
        out["shell"] = history.ingest_spool_now(conn)
        if scrape:
            scraped = ingest.scrape_shell(scrape)
            out["shell"]["scraped"] = ingest.store_scraped(conn, repo, user, scraped, deny)
    if args.transcripts if args.transcripts is not None else ingest.transcripts_enabled():
        ctx.progress({"message": "reading transcripts"})
        turns, denied = ingest.plan_transcripts(repo.root, deny, claude)
        out["transcripts"] = {"turns": len(turns), "stored": ingest.store_transcripts(conn, repo, user, turns), "denied": denied}
        _store_vectors(conn, repo.id, user, "ConversationTurn", [(t.id, t.text) for t in turns])
    else:
        out["transcripts"] = "off (opt in with --transcripts or NEXUS_HISTORY_TRANSCRIPTS=1)"
    out["counts"] = reads.counts(conn, repo.id)
    ctx.progress({"message": "indexing for query"})
    out["indexed"] = len(retrieve_index.index_for(conn).ready(conn, repo.id).ids)  # not left to the first query
    return with_freshness(repo, out)


@op("shell.ingest", lane="write", long=True, description="Ingest the shell hook's spool now (the daemon also does so periodically).")
def shell_ingest(ctx: Ctx, args: NoArgs) -> dict[str, Any]:
    assert ctx.conn is not None
    history = ctx.parts.history
    return {"spool": str(history.spool), **history.ingest_spool_now(ctx.conn)}


# -- query --------------------------------------------------------------------------------------------------


def _memory_hits(ctx: Ctx, text: str, repo_id: str, user: str, kinds: list[str] | None) -> list[rank.Hit]:
    """Facts, procedures and handoffs as recall ranks them (the in-daemon memory index: BM25 with bounded usage
    and recency priors), the best `PER_SOURCE_TOP` of each kind wanted, their display read by id."""
    wanted = {k for k in ("fact", "procedure", "handoff") if kinds is None or k in kinds}
    if not wanted:
        return []
    assert ctx.conn is not None
    found = ctx.parts.memory.index.search(user, repo_id, text, rank.PER_SOURCE_TOP * 3)
    per_kind: dict[str, int] = {}
    scored: list[tuple[str, str, float]] = []
    for hit in found:
        kind = rank.TABLE_KIND.get(hit.doc.label)
        if kind in wanted and per_kind.get(kind, 0) < rank.PER_SOURCE_TOP:
            per_kind[kind] = per_kind.get(kind, 0) + 1
            scored.append((kind, hit.doc.id, hit.score))
    return rank.memory_candidates(ctx.conn, scored, repo_id)


def _vector_hits(
    conn: Conn, embedder: Any, text: str, repo_id: str, user: str, hits: list[rank.Hit]
) -> dict[str, Any]:
    """With an embedding endpoint configured: the nearest history nodes join as one more ranked list."""
    try:
        near = rank.vector_candidates(conn, embedder, text, repo_id, user)
    except Exception as exc:  # an endpoint failure degrades to BM25, and says so
        return {"vectors": "unavailable", "vectorError": str(exc)[:200]}
    have = {h.id for h in hits}
    for position, hit in enumerate(sorted(near, key=lambda h: -h.vector), 1):
        if hit.id in have:
            continue
        hit.score = 0.5 / (retrieve_search.K + position) * 0.8
        hits.append(hit)
    hits.sort(key=lambda h: (-h.score, h.id))
    return {"vectors": "on"}


@dataclass(frozen=True, kw_only=True)
class QueryArgs(Args):
    text: str = arg(minLength=1, maxLength=2000, description="The question, in words.")
    repo: str | None = repo_arg()
    user: str | None = user_arg()
    budget: int = arg(rank.DEFAULT_BUDGET, minimum=50, maximum=100000, description="Token budget (chars/4).")
    limit: int = arg(rank.DEFAULT_LIMIT, minimum=1, maximum=100, description="At most this many results.")
    all_repos: bool = arg(False, description="Search every repository of the user, fused per repository.")
    kinds: list[str] | None = arg(None, items={"enum": KINDS}, description="Only these kinds (default all).")


@op(
    "query",
    lane="read",
    description="Recall across history (commits, changes, failed/successful shell commands, docs, transcripts) "
    "and memory (facts, procedures, handoffs): BM25 (+ vectors when configured) fused by reciprocal rank, "
    "bounded priors, packed into a token budget; reports what was cut.",
    args=QueryArgs,
    tool=True,
)
def query(ctx: Ctx, args: QueryArgs) -> dict[str, Any]:
    assert ctx.conn is not None
    user = _user(args)
    text = args.text
    if args.all_repos:
        repos = [r for r in ctx.parts.repos.all() if repo_shared() or owner_of(r) == user]
        if not repos:
            raise NotIndexed("no repositories registered", hint="`nexus index PATH` first")
    else:
        repos = [require_repo(ctx.parts.repos, args)]
    embedder = vectors.configured()
    per_repo: list[list[rank.Hit]] = []
    notes: dict[str, Any] = {}
    kinds = args.kinds
    for repo in repos:
        memory = _memory_hits(ctx, text, repo.id, user, kinds)
        hits, notes = retrieve_search.search(ctx.conn, text, repo.id, user, kinds=kinds, memory=memory)
        if embedder is not None:
            notes.update(_vector_hits(ctx.conn, embedder, text, repo.id, user, hits))
        per_repo.append(hits)
    ranked = per_repo[0] if len(per_repo) == 1 else rank.fuse_repos(per_repo)
    budget = args.budget
    results, cut = rank.pack(ranked, budget, args.limit)
    roots = {r.id: r.root for r in repos}
    fixes.annotate(ctx.conn, results, roots, user)  # a failed command shows what fixed it
    for item in results:
        item["repo"] = roots.get(item.pop("repoId"), "")
    out: dict[str, Any] = {
        "query": text,
        "results": results,
        "candidates": len(ranked),
        "budget": budget,
        "cut": cut,
        "retrieval": {"bm25": True, "vectors": "off", **notes, "rrfK": retrieve_search.K},
    }
    if len(repos) == 1:
        return with_freshness(repos[0], out)
    out["repos"] = [r.root for r in repos]
    return out


# -- history of a symbol or file ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class HistoryArgs(Args):
    target: str = arg(minLength=1, description="A file path, or a symbol: id, key or `path:QualifiedName` (as "
                      "`locate` prints), qualified or bare name.")  # fmt: skip
    repo: str | None = repo_arg()
    user: str | None = user_arg()
    limit: int = arg(20, minimum=1, maximum=200, description="At most this many commits.")
    patch: bool = arg(True, description="Include the bounded patches.")


@op(
    "history",
    lane="read",
    description="What changed in a symbol or file, when and why: the commits whose changes touched it, newest "
    "first, with their messages and bounded patches.",
    args=HistoryArgs,
    tool=True,
)
def history(ctx: Ctx, args: HistoryArgs) -> dict[str, Any]:
    assert ctx.conn is not None
    conn = ctx.conn
    repo = require_repo(ctx.parts.repos, args)
    target = args.target
    limit = args.limit
    with_patch = args.patch
    rel = _relative(repo, target)
    if reads.is_changed_file(conn, repo.id, rel):
        rows = reads.file_changes(conn, repo.id, rel, limit, bool(with_patch))
        return with_freshness(repo, {"target": target, "kind": "file", "path": rel, "changes": rows})
    symbols = lineage.find_symbols(conn, repo.id, target)
    if not symbols:
        raise NotFound(
            f"no symbol or changed file named {target!r} in {repo.root}",
            hint="`nexus history sync` ingests commits; `nexus index` builds the symbols they link to",
        )
    out_symbols = []
    cols = reads.change_cols(bool(with_patch))
    for sym in symbols[:5]:
        rows, chain, former, moved = lineage.symbol_changes(
            conn, repo.id, sym["path"], sym["qualifiedName"], cols, limit
        )
        entry = {**sym, "changes": rows, "formerPaths": chain[1:], "formerNames": former}
        if moved:
            entry["movedFrom"] = moved
        out_symbols.append(entry)
    result: dict[str, Any] = {"target": target, "kind": "symbol", "symbols": out_symbols}
    if len(symbols) > 5:
        result["more"] = len(symbols) - 5
    result["note"] = "changes touched the symbol's qualified name in its file as it was at each commit"
    unpatched = lineage.unpatched_commits(conn, repo.id)
    if unpatched:
        result["unpatched"] = unpatched
        result["note"] += f"; {unpatched} older commits were read without diffs (NEXUS_HISTORY_PATCHES)"
    return with_freshness(repo, result)


def _relative(repo: Repo, target: str) -> str:
    if os.path.isabs(target):
        real = os.path.realpath(target)
        if real.startswith(repo.root.rstrip(os.sep) + os.sep):
            return os.path.relpath(real, repo.root)
    return target.removeprefix("./")


# -- scan (dry run) -----------------------------------------------------------------------------------------


SCAN_SHOWN = 50  # items a scan lists when the request names no limit


@dataclass(frozen=True, kw_only=True)
class ScanArgs(Args):
    kind: Literal["git", "diff", "shell", "docs", "transcripts"] = arg()
    repo: str | None = repo_arg()
    user: str | None = user_arg()
    limit: int | None = arg(None, minimum=1, maximum=5000, description=f"At most this many items (default "
                            f"{SCAN_SHOWN}); for git and diff also the commits read (default: the whole history).")  # fmt: skip
    claude_dir: str | None = claude_dir_arg()
    scrape: list[ScrapeFile] | None = scrape_arg()


@op(
    "scan",
    lane="read",
    description="Dry run: what a history sync would store from one source (git, diff, shell, docs, "
    "transcripts), with its signal. Writes nothing.",
    args=ScanArgs,
)
def scan(ctx: Ctx, args: ScanArgs) -> dict[str, Any]:
    assert ctx.conn is not None
    conn = ctx.conn
    kind = args.kind
    limit = args.limit or SCAN_SHOWN
    deny = ctx.parts.history.deny
    if kind == "shell":
        return _scan_shell(ctx, args, limit, deny)
    repo = require_repo(ctx.parts.repos, args)
    out: dict[str, Any] = {"kind": kind, "dryRun": True}
    if kind in ("git", "diff"):
        since = ingest.stored_cursor(conn, repo.id)
        try:
            plan = ingest.plan_git(repo.root, since, args.limit or ingest.commit_limit(), deny)
        except ingest.git_source.GitError as exc:
            raise BadRequest(str(exc)) from exc
        out.update(since=since, head=plan.head, rewritten=plan.rewritten, denied=plan.denied, total=len(plan.commits))
        if kind == "git":
            out["items"] = [
                {"sha": c.sha, "subject": c.subject, "kind": c.kind, "signal": c.signal, "revert": c.is_revert,
                 "breaking": c.is_breaking, "merge": c.is_merge, "files": len(c.changes), "time": c.time}
                for c in plan.commits[:limit]
            ]  # fmt: skip
        else:
            out["items"] = [
                {"sha": c.sha, "path": ch.path, "status": ch.status, "additions": ch.additions,
                 "deletions": ch.deletions, "skipped": ch.skipped, "truncated": ch.truncated, "signal": c.signal,
                 "hunks": ch.hunks, "patch": ch.patch}
                for c in plan.commits for ch in c.changes
            ][:limit]  # fmt: skip
    elif kind == "docs":
        sections, denied = ingest.plan_docs(repo.root, deny)
        out.update(total=len(sections), denied=denied)
        out["items"] = [
            {"path": d.path, "headingPath": d.heading_path, "level": d.level, "line": d.start_line,
             "part": d.part, "chars": len(d.text), "signal": 0.7}
            for d, _ in sections[:limit]
        ]  # fmt: skip
    else:
        turns, denied = ingest.plan_transcripts(repo.root, deny, claude_dir(ctx, args, args.claude_dir))
        out.update(total=len(turns), denied=denied, enabled=ingest.transcripts_enabled())
        out["items"] = [
            {"sessionId": t.session_id, "ordinal": t.ordinal, "role": t.role, "at": t.timestamp,
             "text": t.text[:300], "signal": 0.55}
            for t in turns[:limit]
        ]  # fmt: skip
    return with_freshness(repo, out)


def _scan_shell(ctx: Ctx, args: ScanArgs, limit: int, deny: DenyList) -> dict[str, Any]:
    from ..history import shell as shell_source

    scrape = scrape_files(ctx, args, args.scrape)
    spool = ctx.parts.history.spool
    data = b""
    for path in (spool.with_name(spool.name + ".ingesting"), spool):
        try:
            data += path.read_bytes()
        except OSError:
            pass
    commands, bad = shell_source.parse_spool(data)
    attributed, dropped, _ = ingest.attribute(commands, ctx.parts.repos, deny)
    roots = {r.id: r.root for r in ctx.parts.repos.all()}
    items = [
        {"command": c.text, "cwd": c.cwd, "exitCode": c.exit_code, "durationMs": c.duration_ms, "shell": c.shell,
         "repo": roots.get(rid), "source": c.source, "signal": 1.0 if c.exit_code else 0.5}
        for rid, c in attributed[-limit:]
    ]  # fmt: skip
    out: dict[str, Any] = {"kind": "shell", "dryRun": True, "spool": str(spool), "pending": len(commands),
                           "malformed": bad, **dropped, "items": items}  # fmt: skip
    if scrape:
        scraped = ingest.scrape_shell(scrape)
        out["scraped"] = [
            {"command": c.text, "shell": c.shell, "startedAt": c.started_at, "source": "scraped", "signal": 0.3}
            for c in scraped[-limit:]
            if not deny.matches(c.text)
        ]
    return out


# -- forget -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ForgetValueArgs(Args):
    value: str = arg(minLength=3, maxLength=1000)
    user: str | None = user_arg()
    repo: str | None = repo_arg()


@op(
    "forget.value",
    lane="write",
    long=True,
    description="Delete every history node containing a value (case-insensitive) from the user's repositories "
    "and add it to a deny-list, so a later re-ingest does not bring it back.",
    args=ForgetValueArgs,
)
def forget_value(ctx: Ctx, args: ForgetValueArgs) -> dict[str, Any]:
    assert ctx.conn is not None
    value = args.value
    if not value.strip():
        raise BadRequest("an empty value cannot be forgotten")
    user = _user(args)
    if args.repo:
        repo_ids = [require_repo(ctx.parts.repos, args).id]
    else:
        repo_ids = [r.id for r in ctx.parts.repos.all() if repo_shared() or owner_of(r) == user]
    history = ctx.parts.history
    deny = history.deny
    added = deny.add(value)
    deny.save()  # before the delete: a crash in between still keeps the value out of every later ingest
    deleted = ingest.forget_value(ctx.conn, value, deny, repo_ids)
    archived = ingest.rewrite_archive(history.archive, deny)
    archived += ingest.rewrite_archive(history.pending, deny)
    return {"deleted": deleted, "total": sum(deleted.values()), "denyListed": True, "new": added,
            "archiveDropped": archived, "denyListSize": len(deny)}  # fmt: skip
