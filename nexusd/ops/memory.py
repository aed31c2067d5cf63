"""Memory operations: sessions, turns, facts, procedures, handoffs, recall, export/import, forget.

Every memory node carries userId and repoId and every query here filters on both (recall with `allRepos`
filters on the user only). Writes run on the writer thread and go through `MemoryService.write`: journal
(fsync) -> graph transaction -> recall index -> reply, so an acknowledged write survives kill -9.
"""

from __future__ import annotations

import dataclasses
import functools
import getpass
import os
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from .. import config
from ..errors import BadRequest, NotFound
from ..history.redact import redact
from ..memory import attach, model, reads
from ..memory.service import MemoryService, export_nodes, render
from ..memory.text import CHARS_PER_TOKEN, estimate_tokens, search_text
from ..opargs import Args, Scoped, arg, repo_arg, user_arg
from ..registry import Ctx, op
from ..repos import Repo, require_repo
from ..retrieve import pack as retrieve_pack

DEFAULT_BUDGET = 2000
MAX_TEXT = 64_000
MAX_IDS = 10_000
A = TypeVar("A", bound=Args)


# Arguments several memory operations share (one function each: a dataclass field belongs to one class).
def text_arg(description: str) -> Any:
    return arg(minLength=1, maxLength=MAX_TEXT, description=description)


def ids_arg(description: str | None = None) -> Any:
    return arg(None, items={"minLength": 1}, maxItems=MAX_IDS, description=description)


def session_arg() -> Any:
    return arg(None, description="Session id (default: this user's latest open session here).")


def service(ctx: Ctx) -> MemoryService:
    return ctx.parts.memory


def _user(args: Scoped) -> str:
    return str(args.user or config.get("NEXUS_USER") or getpass.getuser())


def _scrub(args: A, *names: str) -> A:
    """The request with secrets redacted from its free-text fields (the history layer's rules, history/redact.py)
    before anything is hashed into an id, journaled or stored: memory is served to agents."""
    changes = {name: _redacted(getattr(args, name)) for name in names}
    return dataclasses.replace(args, **changes)


def _scrub_node(node: dict[str, Any], *keys: str) -> dict[str, Any]:
    """`_scrub` for a memory record (memory.import)."""
    return {**node, **{key: _redacted(node[key]) for key in keys if key in node}}


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)[0]
    if isinstance(value, list):
        return [redact(v)[0] if isinstance(v, str) else v for v in value]
    return value


MEMORY_TEXT_FIELDS = ("text", "title", "steps", "done", "openItems", "nextSteps", "summary")


def _scope(ctx: Ctx, args: Scoped) -> tuple[str, Repo]:
    user = _user(args)
    return user, require_repo(ctx.parts.repos, args, user=user)


def _conn(ctx: Ctx) -> Any:
    assert ctx.conn is not None
    return ctx.conn


def _session(ctx: Ctx, user: str, repo: Repo, session: str | None, *, required: bool) -> dict[str, Any] | None:
    conn = _conn(ctx)
    if session:
        found = reads.session(conn, session, user, repo.id)
        if found is None:
            raise NotFound(f"no session {session} for {user} in {repo.root}", hint="`nexus session start`")
        return found
    found = reads.latest_open_session(conn, user, repo.id)
    if found is not None:
        return found
    if required:
        raise NotFound(f"no open session for {user} in {repo.root}", hint="start one: `nexus session start`")
    return None


def _exists(ctx: Ctx, label: str, node_id: str) -> bool:
    return reads.exists(_conn(ctx), label, node_id)


def _scoped(ctx: Ctx, user: str, repo: Repo, result: dict[str, Any]) -> dict[str, Any]:
    return {"user": user, "repo": repo.root, "repoId": repo.id, **result}


# -- sessions and turns ------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SessionStartArgs(Args):
    user: str | None = user_arg()
    repo: str | None = repo_arg()
    title: str | None = arg(None, maxLength=1000, description="What the session is about.")
    client: str | None = arg(None, maxLength=200, description="Which client opened it (e.g. claude-code).")
    id: str | None = arg(None, minLength=1, maxLength=200, description="Client-chosen id (idempotent).")


@op(
    "session.start",
    lane="write",
    description="Start a memory session for this user in this repository; returns its id.",
    args=SessionStartArgs,
    tool=True,
)
def session_start(ctx: Ctx, args: SessionStartArgs) -> dict[str, Any]:
    args = _scrub(args, "title")
    user, repo = _scope(ctx, args)
    now = time.time()
    # A client-chosen id makes a re-sent start idempotent; otherwise every start is a new session.
    sid = model.content_id("Session", user, repo.id, args.id) if args.id else model.content_id(
        "Session", user, repo.id, uuid.uuid4().hex
    )
    started = reads.session_started(_conn(ctx), sid)
    if started is not None:
        return _scoped(ctx, user, repo, {"session": sid, "startedAt": started["startedAt"], "created": False})
    node = {
        "id": sid, "userId": user, "repoId": repo.id, "title": args.title or "", "client": args.client,
        "startedAt": now, "endedAt": None, "summary": None, "turnCount": 0,
    }
    service(ctx).write(_conn(ctx), {"op": "Session", "node": node})
    return _scoped(ctx, user, repo, {"session": sid, "startedAt": now, "created": True})


@dataclass(frozen=True, kw_only=True)
class SessionEndArgs(Args):
    user: str | None = user_arg()
    repo: str | None = repo_arg()
    session: str | None = session_arg()
    summary: str | None = arg(None, maxLength=MAX_TEXT, description="What the session achieved.")


@op(
    "session.end",
    lane="write",
    description="End a session (default: the latest open one), optionally with a summary.",
    args=SessionEndArgs,
    tool=True,
)
def session_end(ctx: Ctx, args: SessionEndArgs) -> dict[str, Any]:
    args = _scrub(args, "summary")
    user, repo = _scope(ctx, args)
    session = _session(ctx, user, repo, args.session, required=True)
    assert session is not None
    if session["endedAt"] is not None:
        return _scoped(ctx, user, repo, {"session": session["id"], "endedAt": session["endedAt"],
                                         "turns": session["turnCount"] or 0, "changed": False})
    at = time.time()
    service(ctx).write(_conn(ctx), {"op": "session.end", "id": session["id"], "at": at, "summary": args.summary})
    return _scoped(ctx, user, repo, {"session": session["id"], "endedAt": at, "turns": session["turnCount"] or 0,
                                     "changed": True})


@dataclass(frozen=True, kw_only=True)
class SessionListArgs(Args):
    user: str | None = user_arg()
    repo: str | None = repo_arg()
    limit: int = arg(20, minimum=1, maximum=1000, description="At most this many sessions.")


@op(
    "session.list",
    lane="read",
    description="This user's sessions in this repository, newest first.",
    args=SessionListArgs,
)
def session_list(ctx: Ctx, args: SessionListArgs) -> dict[str, Any]:
    user, repo = _scope(ctx, args)
    rows = reads.sessions(_conn(ctx), user, repo.id, args.limit)
    return _scoped(ctx, user, repo, {"sessions": rows})


@dataclass(frozen=True, kw_only=True)
class TurnArgs(Args):
    user: str | None = user_arg()
    repo: str | None = repo_arg()
    session: str | None = session_arg()
    role: Literal["user", "assistant", "tool", "system", "note"] = arg("user", description="Who spoke.")
    text: str = text_arg("The turn's text.")
    id: str | None = arg(None, minLength=1, maxLength=200,
                         description="Client-chosen turn id; default: derived from session, role and text.")  # fmt: skip


@op(
    "turn",
    lane="write",
    description="Append a turn to a session; ordinals are 1, 2, 3... in arrival order. Re-sending is a no-op.",
    args=TurnArgs,
    tool=True,
)
def turn(ctx: Ctx, args: TurnArgs) -> dict[str, Any]:
    args = _scrub(args, "text")
    user, repo = _scope(ctx, args)
    session = _session(ctx, user, repo, args.session, required=True)
    assert session is not None
    role = args.role
    tid = model.content_id("Turn", user, repo.id, session["id"], args.id or [role, args.text])
    existing = reads.turn_ordinal(_conn(ctx), tid)
    if existing is not None:
        return _scoped(ctx, user, repo, {"session": session["id"], "turn": tid, "ordinal": existing, "created": False})
    # The writer is the only thread that appends, so turnCount + 1 is free of races.
    ordinal = int(session["turnCount"] or 0) + 1
    node = {
        "id": tid, "userId": user, "repoId": repo.id, "sessionId": session["id"], "ordinal": ordinal,
        "role": role, "text": args.text, "at": time.time(), "searchText": search_text(args.text),
    }
    service(ctx).write(_conn(ctx), {"op": "Turn", "node": node})
    return _scoped(ctx, user, repo, {"session": session["id"], "turn": tid, "ordinal": ordinal, "created": True})


# -- facts, procedures, handoffs -------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RememberArgs(Args):
    user: str | None = user_arg()
    repo: str | None = repo_arg()
    text: str = text_arg("The fact, as one self-contained sentence.")
    about: str | None = arg(None, minLength=1, description="The symbol the fact is about.")
    session: str | None = session_arg()
    evidence: list[str] | None = ids_arg("Turn ids the fact rests on.")


@op(
    "remember",
    lane="write",
    description="Remember a fact, optionally about a symbol (id, key, qualified name or name).",
    args=RememberArgs,
    tool=True,
)
def remember(ctx: Ctx, args: RememberArgs) -> dict[str, Any]:
    args = _scrub(args, "text")
    user, repo = _scope(ctx, args)
    text = args.text.strip()
    if not text:
        raise BadRequest("remember: text is empty")
    symbol: dict[str, Any] | None = None
    root = repo.view_root(os.path.realpath(args.repo)) if args.repo else repo.root
    if args.about:
        symbol = _about(ctx, repo, root, args.repo, args.about)
    fid = model.content_id("Fact", user, repo.id, text, symbol["key"] if symbol else None)
    result = {"id": fid, "symbol": _public_symbol(symbol)}
    if _exists(ctx, "Fact", fid):
        return _scoped(ctx, user, repo, {**result, "created": False})
    session = _session(ctx, user, repo, args.session, required=bool(args.session))
    node: dict[str, Any] = {
        "id": fid, "userId": user, "repoId": repo.id, "sessionId": session["id"] if session else None,
        "text": text, "createdAt": time.time(), "usedCount": 0, "lastUsedAt": None,
        "evidence": list(args.evidence or []), "status": "current" if symbol else None,
    }
    if symbol:
        node.update(
            symbolId=symbol["id"], symbolKey=symbol["key"], symbolName=symbol["name"], symbolHash=symbol["contentHash"],
            symbolPath=symbol["path"], symbolKind=symbol["kind"], symbolShape=attach.shape_hash(root, symbol),
        )
    node["searchText"] = search_text(text, node.get("symbolName"), node.get("symbolKey"))
    service(ctx).write(_conn(ctx), {"op": "Fact", "node": node})
    return _scoped(ctx, user, repo, {**result, "created": True})


def _about(ctx: Ctx, repo: Repo, root: str, path: str | None, ref: str) -> dict[str, Any]:
    """The symbol a fact is about, as the checkout it is remembered from has it: in a worktree whose view has its
    own version of the symbol's file (or a symbol only that view has), the view's symbol and content hash."""
    if root == repo.root:
        return attach.resolve_symbol(_conn(ctx), repo.id, ref)
    from ..query.resolve_arg import resolve_symbol as resolve_in

    source = ctx.parts.views.source(repo, path)
    try:
        symbol = attach.resolve_symbol(_conn(ctx), repo.id, ref)
    except NotFound:
        snap = ctx.parts.views.get(_conn(ctx), repo, path)
        with snap.lock.read():
            sym = resolve_in(snap, ref)
        symbol = {"id": sym.id, "key": sym.key, "name": sym.name, "qualifiedName": sym.qname, "kind": sym.kind,
                  "path": sym.path, "contentHash": "", "startLine": sym.start, "endLine": sym.end}  # fmt: skip
    own = source.symbol_fact(symbol["path"], symbol["id"]) if source is not None else None
    if own is not None:
        fact, digest = own
        symbol.update(contentHash=digest, startLine=fact.start_line, endLine=fact.end_line)
    return symbol


def _public_symbol(symbol: dict[str, Any] | None) -> dict[str, Any] | None:
    if symbol is None:
        return None
    return {k: symbol.get(k) for k in ("id", "key", "name", "qualifiedName", "kind", "path")}


@dataclass(frozen=True, kw_only=True)
class ProcedureArgs(Args):
    user: str | None = user_arg()
    repo: str | None = repo_arg()
    title: str = arg(minLength=1, maxLength=1000, description="What the procedure does.")
    steps: list[str] = arg(items={"minLength": 1, "maxLength": MAX_TEXT}, minItems=1, maxItems=200,
                           description="The steps, in order.")  # fmt: skip
    files: list[str] | None = arg(None, items={"minLength": 1}, maxItems=1000,
                                  description="Files the procedure applies to (repository-relative).")  # fmt: skip
    session: str | None = session_arg()


@op(
    "procedure",
    lane="write",
    description="Remember a procedure: a title, ordered steps and the files it applies to.",
    args=ProcedureArgs,
    tool=True,
)
def procedure(ctx: Ctx, args: ProcedureArgs) -> dict[str, Any]:
    args = _scrub(args, "title", "steps")
    user, repo = _scope(ctx, args)
    files = [_repo_relative(repo, f) for f in args.files or []]
    pid = model.content_id("Procedure", user, repo.id, args.title, args.steps, files)
    if _exists(ctx, "Procedure", pid):
        return _scoped(ctx, user, repo, {"id": pid, "created": False, "files": files})
    session = _session(ctx, user, repo, args.session, required=bool(args.session))
    node = {
        "id": pid, "userId": user, "repoId": repo.id, "sessionId": session["id"] if session else None,
        "title": args.title, "steps": list(args.steps), "files": files, "createdAt": time.time(),
        "usedCount": 0, "lastUsedAt": None, "searchText": search_text(args.title, *args.steps, *files),
    }
    service(ctx).write(_conn(ctx), {"op": "Procedure", "node": node})
    return _scoped(ctx, user, repo, {"id": pid, "created": True, "files": files})


def _repo_relative(repo: Repo, path: str) -> str:
    """Files as repository-relative forward-slash paths; absolute paths must lie inside the root."""
    if "\x00" in path:
        raise BadRequest("`files` must not contain a NUL byte")
    if os.path.isabs(path):
        real = os.path.realpath(path)
        if real != repo.root and not real.startswith(repo.root.rstrip(os.sep) + os.sep):
            raise BadRequest(f"{path} is outside {repo.root}")
        path = os.path.relpath(real, repo.root)
    return path.replace(os.sep, "/").removeprefix("./")


@dataclass(frozen=True, kw_only=True)
class HandoffWriteArgs(Args):
    user: str | None = user_arg()
    repo: str | None = repo_arg()
    done: str = text_arg("What was done.")
    open: str | None = arg(None, maxLength=MAX_TEXT, description="What is still open.")
    next: str | None = arg(None, maxLength=MAX_TEXT, description="What the next session should do first.")
    evidence: list[str] | None = ids_arg("Turn ids that back the handoff.")
    session: str | None = session_arg()


@op(
    "handoff.write",
    lane="write",
    description="Write a handoff for the next session: what was done, what is open, next steps, evidence turns.",
    args=HandoffWriteArgs,
    tool=True,
)
def handoff_write(ctx: Ctx, args: HandoffWriteArgs) -> dict[str, Any]:
    args = _scrub(args, "done", "open", "next")
    user, repo = _scope(ctx, args)
    session = _session(ctx, user, repo, args.session, required=bool(args.session))
    sid = session["id"] if session else None
    evidence = list(args.evidence or [])
    hid = model.content_id("Handoff", user, repo.id, sid, args.done, args.open, args.next, evidence)
    if _exists(ctx, "Handoff", hid):
        return _scoped(ctx, user, repo, {"id": hid, "created": False})
    node = {
        "id": hid, "userId": user, "repoId": repo.id, "sessionId": sid, "done": args.done,
        "openItems": args.open or "", "nextSteps": args.next or "", "createdAt": time.time(),
        "acknowledgedAt": None, "usedCount": 0, "lastUsedAt": None, "evidence": evidence,
        "searchText": search_text(args.done, args.open, args.next),
    }
    service(ctx).write(_conn(ctx), {"op": "Handoff", "node": node})
    return _scoped(ctx, user, repo, {"id": hid, "created": True})


@dataclass(frozen=True, kw_only=True)
class HandoffReadArgs(Args):
    user: str | None = user_arg()
    repo: str | None = repo_arg()
    peek: bool = arg(False, description="Read without acknowledging.")


@op(
    "handoff.read",
    lane="write",  # reading acknowledges the handoff, which is a (journaled) write
    description="The latest handoff for this user and repository, and whether it was already acknowledged; "
    "reading acknowledges it unless `peek`.",
    args=HandoffReadArgs,
    tool=True,
)
def handoff_read(ctx: Ctx, args: HandoffReadArgs) -> dict[str, Any]:
    user, repo = _scope(ctx, args)
    props = reads.latest_handoff(_conn(ctx), user, repo.id)
    if props is None:
        return _scoped(ctx, user, repo, {"handoff": None, "acknowledged": False})
    was = props["acknowledgedAt"] is not None
    handoff = {
        "id": props["id"], "sessionId": props["sessionId"], "done": props["done"], "open": props["openItems"],
        "next": props["nextSteps"], "evidence": props["evidence"] or [], "createdAt": props["createdAt"],
        "acknowledgedAt": props["acknowledgedAt"],
    }
    if props["evidence"]:
        handoff["evidenceTurns"] = reads.turns(_conn(ctx), props["evidence"], user, repo.id)
    if not was and not args.peek:
        at = time.time()
        service(ctx).write(_conn(ctx), {"op": "handoff.ack", "id": props["id"], "at": at})
        handoff["acknowledgedAt"] = at
    return _scoped(ctx, user, repo, {"handoff": handoff, "acknowledged": was})


# -- recall ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RecallArgs(Args):
    user: str | None = user_arg()
    repo: str | None = repo_arg()
    query: str = arg(minLength=1, maxLength=4000, description="What to recall, in words.")
    budget: int = arg(DEFAULT_BUDGET, minimum=1, maximum=1_000_000, description="Token budget.")
    limit: int = arg(20, minimum=1, maximum=500, description="At most this many items.")
    all_repos: bool = arg(False, description="Search every repository where this user has memory.")
    types: list[Literal["fact", "procedure", "handoff"]] | None = arg(
        None, description="Only these memory types (default all)."
    )
    peek: bool = arg(False, description="Look without counting a use (for browsing: an answer that is not acted "
                     "on). Otherwise every item returned within the budget counts one use.")  # fmt: skip


@op(
    "recall",
    lane="read",
    description="Ranked full-text recall over facts, procedures and handoffs, packed into a token budget "
    "(tokens ~ characters / 4). Counts each returned item as used.",
    args=RecallArgs,
    tool=True,
)
def recall(ctx: Ctx, args: RecallArgs) -> dict[str, Any]:
    user = _user(args)
    svc = service(ctx)
    budget = args.budget
    limit = args.limit
    types = set(args.types or ("fact", "procedure", "handoff"))
    here: Repo | None = None
    if args.all_repos:
        repo_ids = svc.index.repos_of(user)
        if args.repo:
            here = ctx.parts.repos.containing(args.repo)
    else:
        here = require_repo(ctx.parts.repos, args, user=user)
        repo_ids = [here.id]
    pool = max(limit * 3, 50)
    ranked: list[Any] = []
    if len(repo_ids) == 1:
        ranked = [(h.score, h) for h in svc.index.search(user, repo_ids[0], args.query, pool)]
    else:
        # Fused per repository by reciprocal rank: BM25 scores from different shards are not comparable.
        for repo_id in repo_ids:
            for rank, hit in enumerate(svc.index.search(user, repo_id, args.query, pool)):
                ranked.append((1.0 / (60 + rank), hit))
        ranked.sort(key=lambda pair: (-pair[0], -pair[1].score, pair[1].doc.id))
    items: list[dict[str, Any]] = []
    docs = []
    shown = [(score, hit, render(hit.doc.item)) for score, hit in ranked if hit.doc.item["type"] in types]
    packed = retrieve_pack.pack(shown, budget, cost=lambda s: estimate_tokens(s[2]), limit=limit)
    used_tokens = packed.used
    cut_items = len(shown) - len(packed.items)
    cut_tokens = sum(estimate_tokens(s[2]) for s in shown) - packed.used
    for (score, hit, text), cost in zip(packed.items, packed.tokens, strict=True):
        doc = hit.doc
        item = {k: v for k, v in doc.item.items() if not k.startswith("symbol") or k == "symbol"}
        item.update(text=text, score=round(score, 6), tokens=cost)
        if doc.item["type"] == "fact":
            item["text"] = doc.item["text"]
            item["status"], only = _status(ctx, svc, doc, args.repo) if doc.item.get("symbolId") else (None, [])
            item["symbol"] = doc.item.get("symbol")
            if only:
                item["viewOnly"] = only  # the symbol exists in these worktrees only
        item["repoId"] = doc.repo
        repo = ctx.parts.repos.get(doc.repo)
        item["repo"] = repo.root if repo else None
        items.append(item)
        docs.append(doc)
    # What counts as a use: an item returned within the budget of a recall that is not a peek (README,
    # "Memory"). Items cut by the limit or the budget never count. Counted now, under the index lock, so the
    # counts reported are the counts after this call; the graph gets them from the writer right after
    # (journaled like every memory write).
    if args.peek:
        for item, doc in zip(items, docs, strict=True):
            item["usedCount"] = doc.used
            item["lastUsedAt"] = doc.last_used
    else:
        for item, (count, at) in zip(items, svc.index.bump(docs, time.time()), strict=True):
            item["usedCount"] = count
            item["lastUsedAt"] = at
        if docs:
            svc.schedule_usage_flush()
    result: dict[str, Any] = {
        "user": user,
        "query": args.query,
        "items": items,
        "budget": budget,
        "tokens": used_tokens,
        "tokenEstimate": f"characters/{CHARS_PER_TOKEN}",
        "cut": {"items": cut_items, "tokens": cut_tokens},
        "repos": repo_ids,
    }
    if here is not None:
        result.update(repo=here.root, repoId=here.id, **here.freshness())
    return result


def _status(ctx: Ctx, svc: MemoryService, doc: Any, asked_from: str | None = None) -> tuple[str, list[str]]:
    """The fact's status, and the worktrees whose view alone has its symbol (none: the graph has it, or no
    view does)."""
    fact = {"repoId": doc.repo, **doc.item}
    repo = ctx.parts.repos.get(doc.repo)
    views = functools.partial(ctx.parts.views.symbol_in_views, doc.repo) if repo is not None and repo.views else None
    here = repo.view_root(os.path.realpath(asked_from)) if repo is not None and asked_from else None
    status, follow = attach.fact_status(_conn(ctx), fact, repo.root if repo else None, views, here)
    only = attach.view_only(_conn(ctx), fact, views)
    if follow is not None:
        record = {
            "op": "attach", "id": doc.id, "symbolId": follow["id"], "symbolKey": follow["key"],
            "symbolName": follow["name"], "symbolPath": follow["path"], "symbolHash": follow["contentHash"],
            "symbolKind": follow["kind"], "status": "current",
        }
        # Follow the symbol (a journaled write), and show the new symbol already in this answer.
        doc.item.update({k: record[k] for k in ("symbolId", "symbolKey", "symbolName", "symbolPath", "symbolHash")})
        doc.item["symbol"] = {"id": follow["id"], "key": follow["key"], "name": follow["name"], "path": follow["path"]}
        svc.submit(lambda conn: svc.write(conn, record))
    return status, only


# -- export, import, forget -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class MemoryExportArgs(Args):
    user: str | None = user_arg()
    repo: str | None = repo_arg()
    all_repos: bool = arg(False)


@op(
    "memory.export",
    lane="read",
    description="Every memory node of this user in this repository (or all of the user's repositories), "
    "as records for `memory.import`.",
    args=MemoryExportArgs,
)
def memory_export(ctx: Ctx, args: MemoryExportArgs) -> dict[str, Any]:
    user = _user(args)
    if args.all_repos:
        repos = None
    else:
        repos = [require_repo(ctx.parts.repos, args, user=user).id]
    nodes = export_nodes(_conn(ctx), user, repos)
    svc = service(ctx)
    for node in nodes:  # usage lives in the index first; the graph may be a few milliseconds behind
        doc = svc.index.get(node["id"]) if node["type"] in model.SEARCHABLE else None
        if doc is not None:
            node["usedCount"], node["lastUsedAt"] = doc.used, doc.last_used
    return {"user": user, "records": nodes, "count": len(nodes)}


@dataclass(frozen=True, kw_only=True)
class MemoryImportArgs(Args):
    user: str | None = user_arg()
    repo: str | None = repo_arg()
    records: list[dict[str, Any]] = arg(maxItems=50_000)


@op(
    "memory.import",
    lane="write",
    long=True,
    description="Restore exported memory records into this user's memory of this repository (idempotent).",
    args=MemoryImportArgs,
)
def memory_import(ctx: Ctx, args: MemoryImportArgs) -> dict[str, Any]:
    user, repo = _scope(ctx, args)
    nodes = [prepare_import(node, user, repo.id) for node in args.records]
    fresh = [n for n in nodes if not _exists(ctx, n["type"], n["id"])]
    if fresh:
        service(ctx).write(_conn(ctx), {"op": "import", "nodes": fresh})
    return _scoped(ctx, user, repo, {"imported": len(fresh), "existing": len(nodes) - len(fresh)})


def prepare_import(record: dict[str, Any], user: str, repo_id: str) -> dict[str, Any]:
    """A record of any owner/repository, re-owned by (user, repo_id). Ids are remapped deterministically when
    the owner or repository differs, so an import can never overwrite another user's node."""
    label = record.get("type")
    if label not in model.LABELS or not isinstance(record.get("id"), str):
        raise BadRequest(f"memory.import: not a memory record: {str(record)[:200]}")
    src = (record.get("userId"), record.get("repoId"))

    def remap(node_id: Any) -> Any:
        if not isinstance(node_id, str) or src == (user, repo_id):
            return node_id
        kind = model.label_of(node_id) or label
        return model.content_id(kind, user, repo_id, "import", node_id)

    node = _scrub_node(model.clean(label, record), *MEMORY_TEXT_FIELDS)
    node.update(type=label, id=remap(record["id"]), userId=user, repoId=repo_id)
    if node.get("sessionId"):
        node["sessionId"] = remap(node["sessionId"])
    if node.get("evidence"):
        node["evidence"] = [remap(e) for e in node["evidence"]]
    for key in ("usedCount", "turnCount", "ordinal"):
        if key in node and node[key] is None:
            node[key] = 0
    if label == "Turn":
        node["searchText"] = search_text(node.get("text"))
    elif label == "Fact":
        node["searchText"] = search_text(node.get("text"), node.get("symbolName"), node.get("symbolKey"))
    elif label == "Procedure":
        node["searchText"] = search_text(node.get("title"), *node["steps"], *node["files"])
    elif label == "Handoff":
        node["searchText"] = search_text(node.get("done"), node.get("openItems"), node.get("nextSteps"))
    return node


@dataclass(frozen=True, kw_only=True)
class MemoryForgetArgs(Args):
    user: str | None = user_arg()
    repo: str | None = repo_arg()
    ids: list[str] | None = ids_arg()
    all: bool = arg(False)


@op(
    "memory.forget",
    lane="write",
    description="Delete memory: the given ids (facts, procedures, handoffs, sessions with their turns, turns), "
    "or with `all` everything this user has in this repository. Journaled, so it stays deleted.",
    args=MemoryForgetArgs,
)
def memory_forget(ctx: Ctx, args: MemoryForgetArgs) -> dict[str, Any]:
    user, repo = _scope(ctx, args)
    if not args.ids and not args.all:
        raise BadRequest("memory.forget: pass ids or all")
    conn = _conn(ctx)
    found: dict[str, list[str]] = {}
    for label in model.LABELS:
        ids: list[str] | None = None
        if not args.all:
            ids = [i for i in args.ids or [] if model.label_of(i) == label]
            if not ids:
                continue
        hits = reads.ids_in_scope(conn, label, user, repo.id, ids)
        if hits:
            found[label] = hits
    if "Session" in found:  # a session's turns go with it
        turns = reads.session_turn_ids(conn, found["Session"], user)
        found["Turn"] = sorted(set(found.get("Turn", [])) | set(turns))
    deleted = sum(len(v) for v in found.values())
    if deleted:
        service(ctx).write(conn, {"op": "forget", "ids": found})
    missing = [] if args.all else sorted(set(args.ids or []) - {i for v in found.values() for i in v})
    return _scoped(ctx, user, repo, {"deleted": deleted, "byType": {k: len(v) for k, v in found.items()},
                                     "missing": missing})


# -- status section -------------------------------------------------------------------------------------


def status_section(svc: MemoryService) -> tuple[str, Any]:
    """`status`'s memory section (registered by the composition root)."""
    return "memory", {"journalSeq": svc.journal.last_seq, "searchable": svc.searchable, "replayed": svc.replayed,
                    "replaySkipped": svc.replay_skipped}


if config.get("NEXUS_DEBUG_OPS"):

    @dataclass(frozen=True, kw_only=True)
    class RegisterRepoArgs(Args):
        repo: str = repo_arg(required=True)
        user: str | None = user_arg()

    @op(
        "debug.register_repo",
        lane="write",
        description="Register a repository without indexing it (tests of memory before `index` exists).",
        args=RegisterRepoArgs,
    )
    def debug_register_repo(ctx: Ctx, args: RegisterRepoArgs) -> dict[str, Any]:
        from ..repos import repo_id_for, save_node

        root = os.path.realpath(args.repo)
        rid = repo_id_for(root)
        user = _user(args)
        repo = Repo(id=rid, root=root, name=os.path.basename(root), user_id=user)
        save_node(_conn(ctx), repo)
        ctx.parts.repos.put(repo)
        return {"id": rid, "root": root}
