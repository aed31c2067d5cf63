"""Questions the code graph answers: locate, show, context, neighbors, impact, paths, imports, importers.

Each handler resolves the repository, takes the repository's query snapshot (nexusd/query/snapshot.py) under
its read lock, builds the answer in nexusd/query/, and stamps it with freshness, `graphVersion` (the version
the snapshot holds, which is what the answer describes) and `tookMs` (time in the handler).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..errors import BadRequest
from ..query import graphq, paging
from ..query import locate as locate_mod
from ..registry import REPO_ARG, USER_ARG, Ctx, op, schema
from ..repos import require_repo, with_freshness

SYMBOL_ARG = {
    "type": "string",
    "description": "A symbol: its id, semantic key (py:method:pkg/app.py:Base.run), qualified name (Base.run), "
    "bare name (run), path:QualifiedName (pkg/app.py:Base.run), or module-qualified (pkg.app.Base.run, "
    "pkg.app:Base.run). An ambiguous name returns `ambiguous` with ranked candidates.",
}
CURSOR_ARG = {"type": "string", "description": "The `truncated.cursor` of an earlier answer: fetches the next page."}
LIMIT = {"type": "integer", "minimum": 1, "maximum": 500}
DEPTH = {"type": "integer", "minimum": 1, "maximum": graphq.MAX_DEPTH}
TIME_MS = {"type": "integer", "minimum": 10, "maximum": 30_000, "description": "Time bound for the walk (ms)."}
COMMON = {"repo": REPO_ARG, "user": USER_ARG, "cursor": CURSOR_ARG}
MIN_CONFIDENCE = {
    "type": "number",
    "minimum": 0,
    "maximum": 1,
    "description": "Follow only call edges of at least this confidence (0.9: bound edges only, no name-only "
    "guesses). Callers left out this way make `impact` a `lower_bound`.",
}
# The kinds the parsers emit; `locate --kind` accepts these and any other kind present in the repository.
SYMBOL_KINDS = ("class", "constant", "constructor", "enum", "field", "function", "impl", "interface", "macro",
                "method", "module", "namespace", "overload", "property", "property_function", "struct", "trait",
                "type", "variable")


def _check_kinds(req: graphq.Req, kinds: set[str] | None) -> None:
    """An unknown kind is an error that lists the allowed ones, not an empty answer."""
    unknown = (kinds or set()) - set(SYMBOL_KINDS)
    if unknown:
        unknown -= {s.kind for s in req.snap.by_id.values()}
    if unknown:
        raise BadRequest(f"unknown symbol kind {', '.join(sorted(unknown))}",
                         hint=f"kinds: {', '.join(SYMBOL_KINDS)}")  # fmt: skip


def _answer(ctx: Ctx, args: dict[str, Any], build: Callable[[graphq.Req], dict[str, Any]]) -> dict[str, Any]:
    t0 = time.perf_counter()
    assert ctx.conn is not None
    repo = require_repo(ctx.parts.repos, args)
    if repo.indexed_at is None:
        from ..errors import NotIndexed

        raise NotIndexed(f"{repo.root} has no graph yet", hint=f"`nexus index {repo.root}`")
    snap = ctx.parts.views.get(ctx.conn, repo, args.get("repo"))  # the worktree's view (baseline + overlay)
    with snap.lock.read():
        req = graphq.Req(
            op=ctx.op, args=args, snap=snap, repo=repo, conn=ctx.conn, user=args.get("user") or "",
            clock=paging.Clock(min(float(args.get("timeMs", 5000)), ctx.remaining() * 1000)),
        )  # fmt: skip
        result = build(req)
        version = snap.version
    result = with_freshness(repo, result)
    result["graphVersion"] = version
    result["tookMs"] = round((time.perf_counter() - t0) * 1000, 3)
    return result


@op(
    "locate",
    lane="read",
    tool=True,
    description=(
        "Find symbols by name or words. Tiers, in order: exact name, qualified name, name prefix, every word a "
        "part of the split name ('normalize params' finds normalizeParams and normalize_params), then every word in "
        "the qualified name, path, signature or doc. Each result says how it matched (`match`). Use this first to "
        "get a symbol's key for show/context/impact."
    ),
    args=schema(
        {
            **COMMON,
            "query": {"type": "string", "minLength": 1, "maxLength": 300,
                      "description": "A name, a qualified name, a prefix, or words of a name or its doc."},
            "kind": {"type": "string", "description": "Only these kinds, comma-separated: " + ",".join(SYMBOL_KINDS) + "."},
            "path": {"type": "string", "description": "Only under this path prefix, or matching this glob."},
            "limit": {**LIMIT, "description": "Results per page (default 20)."},
        },
        ["query"],
    ),
)
def locate(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    def build(req: graphq.Req) -> dict[str, Any]:
        limit = int(args.get("limit", 20))
        offset = req.offset()
        filters = locate_mod.Filters(args.get("kind"), args.get("path"))
        _check_kinds(req, filters.kinds)
        found, info = locate_mod.search(req.snap, args["query"], filters, offset + limit)
        rows = [locate_mod.result_row(req.snap, tier, sym) for tier, sym in found]
        exhausted = bool(info.get("exhausted"))
        shown, cut = req.page(rows, limit, total=len(rows) if exhausted else None, more=not exhausted)
        out: dict[str, Any] = {"query": args["query"], "results": shown}
        if exhausted:
            out["total"] = len(rows)
        else:
            out["totalAtLeast"] = len(rows)
        if info.get("prefixCut"):
            out["prefixBound"] = {"bound": "names", "limit": info["prefixCut"]}
        if cut:
            out["truncated"] = cut
        return out

    return _answer(ctx, args, build)


@op(
    "show",
    lane="read",
    tool=True,
    description=(
        "A symbol's or file's facts: signature, doc, lines, container, members, call counts, attached memory. "
        "With snippet=true, the source text, returned only if the file's current hash equals the indexed one "
        "(otherwise it says the file changed)."
    ),
    args=schema(
        {
            **COMMON,
            "symbol": SYMBOL_ARG,
            "path": {"type": "string", "description": "A file (repository-relative) instead of a symbol."},
            "id": {"type": "string", "description": "A symbol or file id."},
            "snippet": {"type": "boolean", "description": "Include the verified source text."},
            "limit": {**LIMIT, "description": "Members per page (default 100)."},
        }
    ),
)
def show(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    given = [k for k in ("symbol", "path", "id") if args.get(k)]
    if len(given) != 1:
        raise BadRequest("show takes exactly one of `symbol`, `path` or `id`")

    def build(req: graphq.Req) -> dict[str, Any]:
        snap = req.snap
        if args.get("path"):
            return graphq.show_file(req, graphq.resolve_file(req, args["path"]))
        if args.get("id"):
            sym = snap.by_id.get(args["id"])
            if sym is not None:
                return graphq.show_symbol(req, sym)
            for path, (fid, _) in snap.files.items():
                if fid == args["id"]:
                    return graphq.show_file(req, path)
            from ..errors import NotFound

            raise NotFound(f"no symbol or file with id {args['id']}")
        return graphq.show_symbol(req, graphq.sym_arg(req, args["symbol"]))

    return _answer(ctx, args, build)


@op(
    "context",
    lane="read",
    tool=True,
    description=(
        "Everything worth reading around a symbol, ranked and cut to a token budget: container, members, callers "
        "and callees within `depth`, imports of its file, attached memory. Each item says why it was selected. "
        "Tokens are estimated as characters / 4."
    ),
    args=schema(
        {
            **COMMON,
            "symbol": SYMBOL_ARG,
            "depth": {**DEPTH, "maximum": 3, "description": "Call hops to include (default 1)."},
            "budget": {"type": "integer", "minimum": 100, "maximum": 50_000, "description": "Token budget (default 1500)."},
            "minConfidence": MIN_CONFIDENCE,
            "timeMs": TIME_MS,
        },
        ["symbol"],
    ),
)
def context(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    return _answer(ctx, args, lambda req: graphq.context(req, graphq.sym_arg(req, args["symbol"])))


@op(
    "neighbors",
    lane="read",
    tool=True,
    description=(
        "Nodes next to a symbol or file, within `depth` hops over the chosen edge kinds (calls, contains, inherits, "
        "imports), in the chosen direction (in, out, both). Each neighbor carries the edge that reached it."
    ),
    args=schema(
        {
            **COMMON,
            "node": {"type": "string", "description": "A symbol (see `symbol`) or a repository-relative file path."},
            "direction": {"enum": ["in", "out", "both"], "description": "in: edges into the node (its callers, "
                          "importers, ...), out: edges from it, both (default)."},
            "depth": {**DEPTH, "maximum": 3, "description": "Hops (default 1)."},
            "edgeKinds": {"type": "array", "items": {"enum": list(graphq.EDGE_KINDS)},
                          "description": "Edge kinds to follow (default all: " + ", ".join(graphq.EDGE_KINDS) + ")."},
            "limit": {**LIMIT, "description": "Neighbors per page (default 100)."},
            "timeMs": TIME_MS,
        },
        ["node"],
    ),
)
def neighbors(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    return _answer(ctx, args, lambda req: graphq.neighbors(req, graphq.node_arg(req, args["node"])))


@op(
    "impact",
    lane="read",
    tool=True,
    description=(
        "What could break if a symbol changes: every caller within `depth` hops (default 3), with the shortest path "
        "to each, the `via` symbol, path confidence (product of edge confidences), the true total beside the page, "
        "and `completeness`: `complete`, or `lower_bound` with the count of unresolved calls in scope that could "
        "hide more callers (at any depth of the walk) and where the first of them are (path, line, caller); "
        "`incompleteBecause` says why (unresolved calls, the confidence floor, files in scope that did not parse)."
    ),
    args=schema(
        {
            **COMMON,
            "symbol": SYMBOL_ARG,
            "depth": {**DEPTH, "description": "Caller hops (default 3)."},
            "limit": {**LIMIT, "description": "Callers per page (default 50)."},
            "minConfidence": MIN_CONFIDENCE,
            "tests": {"enum": ["include", "exclude", "only"],
                      "description": "Callers in test files: include (default), exclude, or only those."},
            "timeMs": TIME_MS,
        },
        ["symbol"],
    ),
)
def impact(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    return _answer(ctx, args, lambda req: graphq.impact(req, graphq.sym_arg(req, args["symbol"])))


@op(
    "paths",
    lane="read",
    tool=True,
    description=(
        "Call paths between two symbols, shortest first and then most confident, following calls either way (or "
        "one way with `direction`); each hop is labelled `out` (left calls right) or `in` (right calls left), "
        "with its resolution and confidence."
    ),
    args=schema(
        {
            **COMMON,
            "from": SYMBOL_ARG,
            "to": SYMBOL_ARG,
            "maxDepth": {**DEPTH, "description": "Longest path in hops (default 4)."},
            "maxPaths": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Paths per page (default 5)."},
            "direction": {"enum": ["both", "callees", "callers"],
                          "description": "callees: FROM calls ... calls TO only; callers: TO calls ... calls FROM "
                          "only; both (default) mixes directions."},
            "timeMs": TIME_MS,
        },
        ["from", "to"],
    ),
)
def paths(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    def build(req: graphq.Req) -> dict[str, Any]:
        return graphq.paths(req, graphq.sym_arg(req, args["from"]), graphq.sym_arg(req, args["to"]))

    return _answer(ctx, args, build)


_FILE_ARGS = schema(
    {**COMMON, "path": {"type": "string", "description": "A repository-relative file path."},
     "limit": {**LIMIT, "description": "Files per page (default 100)."}},
    ["path"],
)  # fmt: skip


@op("imports", lane="read", tool=True, args=_FILE_ARGS,
    description="The files a file imports, each with the import's specifier, line, resolution and confidence.")
def imports(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    return _answer(ctx, args, lambda req: graphq.imports(req, graphq.resolve_file(req, args["path"]), False))


@op("importers", lane="read", tool=True, args=_FILE_ARGS,
    description="The files that import a file (who depends on it), each with specifier, line and resolution.")
def importers(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    return _answer(ctx, args, lambda req: graphq.imports(req, graphq.resolve_file(req, args["path"]), True))
