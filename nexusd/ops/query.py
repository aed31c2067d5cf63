"""Questions the code graph answers: locate, show, context, neighbors, impact, paths, imports, importers.

Each handler resolves the repository, takes the repository's query snapshot (nexusd/query/snapshot.py) under
its read lock, builds the answer in nexusd/query/, and stamps it with freshness, `graphVersion` (the version
the snapshot holds, which is what the answer describes), `snapshot` (`madeBy`: index — built while the cold
index wrote the graph —, engine — built from the batch after its commit —, file or graph after a restart; and
`waitedMs`, how long this answer waited for it to be built or loaded) and `tookMs` (time in the handler).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import BadRequest, Forbidden
from ..opargs import REPO_MAX, Args, arg, repo_arg, user_arg
from ..query import graphq, paging
from ..query import locate as locate_mod
from ..registry import Ctx, op
from ..repos import require_repo, with_freshness

SYMBOL_TEXT = (
    "A symbol: its id, semantic key (py:method:pkg/app.py:Base.run), qualified name (Base.run), "
    "bare name (run), path:QualifiedName (pkg/app.py:Base.run), or module-qualified (pkg.app.Base.run, "
    "pkg.app:Base.run). An ambiguous name returns `ambiguous` with ranked candidates."
)
MIN_CONFIDENCE_TEXT = (
    "Follow only call edges of at least this confidence (0.9: bound edges only, no name-only "
    "guesses). Callers left out this way make `impact` a `lower_bound`."
)
WALK_MS = 5000  # the time bound of an answer's walk when the request names none


# The arguments every question shares (one function per argument: a dataclass field belongs to one class).
def symbol_arg() -> Any:
    return arg(description=SYMBOL_TEXT)


def cursor_arg() -> Any:
    return arg(None, description="The `truncated.cursor` of an earlier answer: fetches the next page.")


def limit_arg(default: int, what: str) -> Any:
    return arg(default, minimum=1, maximum=500, description=f"{what} per page.")


def depth_arg(default: int, what: str, maximum: int = graphq.MAX_DEPTH) -> Any:
    return arg(default, minimum=1, maximum=maximum, description=what)


def confidence_arg() -> Any:
    return arg(None, minimum=0, maximum=1, description=MIN_CONFIDENCE_TEXT)


def time_arg() -> Any:
    return arg(WALK_MS, minimum=10, maximum=30_000, description="Time bound for the walk (ms).")


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


@dataclass(frozen=True, kw_only=True)
class Question(Args):
    """The arguments every question shares; each op's class adds its own."""

    repo: str | None = repo_arg()
    user: str | None = user_arg()
    cursor: str | None = cursor_arg()


def _answer(ctx: Ctx, args: Question, build: Callable[[graphq.Req], dict[str, Any]], *,
            time_ms: int = WALK_MS) -> dict[str, Any]:  # fmt: skip
    t0 = time.perf_counter()
    assert ctx.conn is not None
    repo = require_repo(ctx.parts.repos, args)
    if repo.indexed_at is None:
        from ..errors import NotIndexed

        raise NotIndexed(f"{repo.root} has no graph yet", hint=f"`nexus index {repo.root}`")
    made: dict[str, Any] = {}
    snap = ctx.parts.views.get(ctx.conn, repo, getattr(args, "repo", None), made)  # the worktree's view (baseline + overlay)
    with snap.lock.read():
        req = graphq.Req(
            op=ctx.op, args=args, snap=snap, repo=repo, conn=ctx.conn, user=args.user or "",
            clock=paging.Clock(min(float(time_ms), ctx.remaining() * 1000)),
            source=ctx.parts.views.source(repo, getattr(args, "repo", None)),
        )  # fmt: skip
        result = build(req)
        version = snap.version
    result = with_freshness(repo, result)
    result["graphVersion"] = version
    result["snapshot"] = made  # how the snapshot answering was made, and how long this answer waited for it
    result["tookMs"] = round((time.perf_counter() - t0) * 1000, 3)
    return result


@dataclass(frozen=True, kw_only=True)
class LocateArgs(Question):
    query: str = arg(minLength=1, maxLength=300,
                     description="A name, a qualified name, a prefix, or words of a name or its doc.")  # fmt: skip
    kind: str | None = arg(None, description="Only these kinds, comma-separated: " + ",".join(SYMBOL_KINDS) + ".")
    path: str | None = arg(None, description="Only under this path prefix, or matching this glob.")
    near: str | None = arg(None, maxLength=REPO_MAX,
                           description="The file the question comes from (the one being edited), repository-relative: "
                           "same-named definitions are ranked by their relation to it (in scope there, same file, "
                           "imported by it, then same directory). A file not in the graph still ranks by directory; "
                           "a path outside the repository is a bad_request.")  # fmt: skip
    near_line: int | None = arg(None, minimum=1, maximum=10_000_000,
                                description="A line of `near`: definitions in scope at that line come first.")  # fmt: skip
    limit: int = limit_arg(20, "Results")


@op(
    "locate",
    lane="read",
    tool=True,
    description=(
        "Find symbols by name or words. Tiers, in order: exact name, qualified name, name prefix, every word a "
        "part of the split name ('normalize params' finds normalizeParams and normalize_params), then every word in "
        "the qualified name, path, signature or doc. Each result says how it matched (`match`). Pass `near` (and "
        "`nearLine`), the file and line you are working in, to rank same-named definitions by their relation to "
        "it. Use this first to get a symbol's key for show/context/impact."
    ),
    args=LocateArgs,
)
def locate(ctx: Ctx, args: LocateArgs) -> dict[str, Any]:
    def build(req: graphq.Req) -> dict[str, Any]:
        limit = args.limit
        offset = req.offset()
        filters = locate_mod.Filters(args.kind, args.path)
        _check_kinds(req, filters.kinds)
        near = _near(req, args.near, args.near_line)
        found, info = locate_mod.search(req.snap, args.query, filters, offset + limit, near)
        rows = [locate_mod.result_row(req.snap, tier, sym, near) for tier, sym in found]
        exhausted = bool(info.get("exhausted"))
        shown, cut = req.page(rows, limit, total=len(rows) if exhausted else None, more=not exhausted)
        out: dict[str, Any] = {"query": args.query, "results": shown}
        if near is not None:
            out["near"] = near.wire()
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


def _near(req: graphq.Req, path: str | None, line: int | None) -> locate_mod.Near | None:
    if path is None:
        if line is not None:
            raise BadRequest("nearLine needs near (the file the line belongs to)")
        return None
    try:
        rel = graphq.confine(req.repo, path)
    except Forbidden as e:
        raise BadRequest(f"near: {e.message}", hint="near is a file of this repository, repository-relative") from None
    if rel == "." or os.path.isdir(os.path.join(req.repo.root, rel)):
        raise BadRequest(f"near names a file, not a directory ({rel})", hint="pass the file you are working in")
    return locate_mod.Near(req.snap, rel, line)


@dataclass(frozen=True, kw_only=True)
class ShowArgs(Question):
    symbol: str | None = arg(None, description=SYMBOL_TEXT)
    path: str | None = arg(None, description="A file (repository-relative) instead of a symbol.")
    id: str | None = arg(None, description="A symbol or file id.")
    snippet: bool = arg(False, description="Include the verified source text.")
    limit: int = limit_arg(100, "Members")


@op(
    "show",
    lane="read",
    tool=True,
    description=(
        "A symbol's or file's facts: signature, doc, lines, container, members, call counts, attached memory. "
        "With snippet=true, the source text, returned only if the file's current hash equals the indexed one "
        "(otherwise it says the file changed)."
    ),
    args=ShowArgs,
)
def show(ctx: Ctx, args: ShowArgs) -> dict[str, Any]:
    if sum(1 for given in (args.symbol, args.path, args.id) if given) != 1:
        raise BadRequest("show takes exactly one of `symbol`, `path` or `id`")

    def build(req: graphq.Req) -> dict[str, Any]:
        snap = req.snap
        if args.path:
            return graphq.show_file(req, graphq.resolve_file(req, args.path), limit=args.limit, with_snippet=args.snippet)
        if args.id:
            sym = snap.by_id.get(args.id)
            if sym is not None:
                return graphq.show_symbol(req, sym, limit=args.limit, with_snippet=args.snippet)
            for path, (fid, _) in snap.files.items():
                if fid == args.id:
                    return graphq.show_file(req, path, limit=args.limit, with_snippet=args.snippet)
            from ..errors import NotFound

            raise NotFound(f"no symbol or file with id {args.id}")
        assert args.symbol is not None
        return graphq.show_symbol(req, graphq.sym_arg(req, args.symbol), limit=args.limit, with_snippet=args.snippet)

    return _answer(ctx, args, build)


@dataclass(frozen=True, kw_only=True)
class ContextArgs(Question):
    symbol: str = symbol_arg()
    depth: int = depth_arg(1, "Call hops to include.", maximum=3)
    budget: int = arg(1500, minimum=100, maximum=50_000, description="Token budget.")
    min_confidence: float | None = confidence_arg()
    time_ms: int = time_arg()


@op(
    "context",
    lane="read",
    tool=True,
    description=(
        "Everything worth reading around a symbol, ranked and cut to a token budget: container, members, callers "
        "and callees within `depth`, imports of its file, attached memory. Each item says why it was selected. "
        "Tokens are estimated as characters / 4."
    ),
    args=ContextArgs,
)
def context(ctx: Ctx, args: ContextArgs) -> dict[str, Any]:
    def build(req: graphq.Req) -> dict[str, Any]:
        return graphq.context(req, graphq.sym_arg(req, args.symbol), depth=args.depth, budget=args.budget,
                              confidence=args.min_confidence)  # fmt: skip

    return _answer(ctx, args, build, time_ms=args.time_ms)


@dataclass(frozen=True, kw_only=True)
class NeighborsArgs(Question):
    node: str = arg(description="A symbol (see `symbol`) or a repository-relative file path.")
    direction: Literal["in", "out", "both"] = arg(
        "both", description="in: edges into the node (its callers, importers, ...), out: edges from it, both."
    )
    depth: int = depth_arg(1, "Hops.", maximum=3)
    edge_kinds: list[str] | None = arg(None, items={"enum": list(graphq.EDGE_KINDS)},
                                       description="Edge kinds to follow (default all: " + ", ".join(graphq.EDGE_KINDS) + ").")  # fmt: skip
    limit: int = limit_arg(100, "Neighbors")
    time_ms: int = time_arg()


@op(
    "neighbors",
    lane="read",
    tool=True,
    description=(
        "Nodes next to a symbol or file, within `depth` hops over the chosen edge kinds (calls, contains, inherits, "
        "imports), in the chosen direction (in, out, both). Each neighbor carries the edge that reached it."
    ),
    args=NeighborsArgs,
)
def neighbors(ctx: Ctx, args: NeighborsArgs) -> dict[str, Any]:
    def build(req: graphq.Req) -> dict[str, Any]:
        return graphq.neighbors(req, graphq.node_arg(req, args.node), direction=args.direction, depth=args.depth,
                                edge_kinds=args.edge_kinds, limit=args.limit)  # fmt: skip

    return _answer(ctx, args, build, time_ms=args.time_ms)


@dataclass(frozen=True, kw_only=True)
class ImpactArgs(Question):
    symbol: str = symbol_arg()
    depth: int = depth_arg(3, "Caller hops.")
    limit: int = limit_arg(50, "Callers")
    min_confidence: float | None = confidence_arg()
    tests: Literal["include", "exclude", "only"] = arg(
        "include", description="Callers in test files: include, exclude, or only those."
    )
    time_ms: int = time_arg()


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
    args=ImpactArgs,
)
def impact(ctx: Ctx, args: ImpactArgs) -> dict[str, Any]:
    def build(req: graphq.Req) -> dict[str, Any]:
        return graphq.impact(req, graphq.sym_arg(req, args.symbol), depth=args.depth, limit=args.limit,
                             confidence=args.min_confidence, tests=args.tests)  # fmt: skip

    return _answer(ctx, args, build, time_ms=args.time_ms)


@dataclass(frozen=True, kw_only=True)
class PathsArgs(Question):
    from_: str = symbol_arg()
    to: str = symbol_arg()
    max_depth: int = depth_arg(4, "Longest path in hops.")
    max_paths: int = arg(5, minimum=1, maximum=50, description="Paths per page.")
    direction: Literal["both", "callees", "callers"] = arg(
        "both", description="callees: FROM calls ... calls TO only; callers: TO calls ... calls FROM only; both "
        "mixes directions."
    )
    time_ms: int = time_arg()


@op(
    "paths",
    lane="read",
    tool=True,
    description=(
        "Call paths between two symbols, shortest first and then most confident, following calls either way (or "
        "one way with `direction`); each hop is labelled `out` (left calls right) or `in` (right calls left), "
        "with its resolution and confidence."
    ),
    args=PathsArgs,
)
def paths(ctx: Ctx, args: PathsArgs) -> dict[str, Any]:
    def build(req: graphq.Req) -> dict[str, Any]:
        return graphq.paths(req, graphq.sym_arg(req, args.from_), graphq.sym_arg(req, args.to),
                            direction=args.direction, max_depth=args.max_depth, max_paths=args.max_paths)  # fmt: skip

    return _answer(ctx, args, build, time_ms=args.time_ms)


@dataclass(frozen=True, kw_only=True)
class FileArgs(Question):
    path: str = arg(description="A repository-relative file path.")
    limit: int = limit_arg(100, "Files")


@op("imports", lane="read", tool=True, args=FileArgs,
    description="The files a file imports, each with the import's specifier, line, resolution and confidence.")
def imports(ctx: Ctx, args: FileArgs) -> dict[str, Any]:
    return _answer(ctx, args, lambda req: graphq.imports(req, graphq.resolve_file(req, args.path), False, limit=args.limit))


@op("importers", lane="read", tool=True, args=FileArgs,
    description="The files that import a file (who depends on it), each with specifier, line and resolution.")
def importers(ctx: Ctx, args: FileArgs) -> dict[str, Any]:
    return _answer(ctx, args, lambda req: graphq.imports(req, graphq.resolve_file(req, args.path), True, limit=args.limit))
