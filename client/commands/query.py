"""Questions to the code graph: `nexus locate`, `show`, `context`, `neighbors`, `impact`, `paths`, `imports`,
`importers`.

Human text by default, `--json` for the daemon's answer as it is, and `--format mermaid|dot` for the subgraph
answers (impact, paths, neighbors). A cut answer prints how to continue: `--cursor` with the cursor it names.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from ..app import App, json_option, pass_app

NO_MATCH = 4  # `locate` found nothing: the exit code of not_found, so scripts can test it


def register(main: click.Group) -> None:
    for cmd in (locate, show, context, neighbors, impact, paths, imports, importers):
        main.add_command(cmd)


cursor_option = click.option("--cursor", help="Continue a cut answer (the cursor it printed).")
format_option = click.option(
    "--format", "fmt", type=click.Choice(["text", "mermaid", "dot"]), default="text", show_default=True,
    help="Render the subgraph as Mermaid or Graphviz DOT instead of text.",
)  # fmt: skip


min_confidence_option = click.option(
    "--min-confidence", type=click.FloatRange(0.0, 1.0),
    help="Follow only call edges of at least this confidence (0.9: bound edges only, no name-only guesses).",
)  # fmt: skip


def _args(app: App, **extra: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"repo": app.repo, "user": app.user}
    # `is` checks: 0 == False, so `v not in (None, False)` would drop `--depth 0` and answer for the default.
    args.update({k: v for k, v in extra.items() if v is not None and v is not False and v != () and v != []})
    return args


def _emit(app: App, op: str, result: dict[str, Any], render: Callable[[dict[str, Any]], str], fmt: str = "text") -> None:
    if fmt != "text" and not app.json:
        from .. import graphviz

        click.echo(graphviz.mermaid(op, result) if fmt == "mermaid" else graphviz.dot(op, result))
        return
    app.emit(result, lambda r: "\n".join(x for x in (render(r), _footer(r)) if x))


def _where(r: dict[str, Any]) -> str:
    return f"{r.get('path', '')}:{r.get('line', '')}" if r.get("line") else str(r.get("path", ""))


def _sym(r: dict[str, Any]) -> str:
    name = r.get("key") or r.get("path") or r.get("id")
    return f"{name}  ({_where(r)})" if r.get("key") else str(name)


def _footer(r: dict[str, Any]) -> str:
    lines = []
    cut = r.get("truncated")
    if cut:
        left = f", {cut['remaining']} more" if cut.get("remaining") is not None else ", more available"
        lines.append(f"-- cut by {cut['bound']} ({cut.get('shown', '?')} shown{left}); continue: --cursor {cut['cursor']}")
    for key in ("timeBound", "searchBound"):
        if r.get(key):
            lines.append(f"-- search stopped by its {r[key]['bound']} bound: the answer may be partial")
    if r.get("freshness") and r["freshness"] != "fresh":
        lines.append(f"-- graph v{r.get('graphVersion')} is {r['freshness']}")
    return "\n".join(lines)


# -- locate -------------------------------------------------------------------------------------------


def render_locate(r: dict[str, Any]) -> str:
    if not r["results"]:
        return f"no symbol matches {r['query']!r}"
    width = max(len(x["match"]) for x in r["results"])
    lines = [f"{x['match']:<{width}}  {x['kind']:<8} {x['key']}  ({_where(x)}){_related(x)}" for x in r["results"]]
    total = r.get("total")
    lines.append(f"{total} matches" if total is not None else f"at least {r.get('totalAtLeast')} matches")
    return "\n".join(lines)


def _related(x: dict[str, Any]) -> str:
    rel = x.get("relation")
    if not rel:
        return ""
    return f"  [{rel}, {x['importHops']} hop{'s' if x['importHops'] != 1 else ''}]" if "importHops" in x else f"  [{rel}]"


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--kind", help="Only these kinds, comma-separated (class, function, method, interface, struct, ...; "
              "an unknown kind is an error that lists them).")
@click.option("--path", help="Only under this path prefix, or matching this glob.")
@click.option("--near", metavar="FILE", help="The file you are working in: same-named definitions are ranked by "
              "their relation to it (in scope, same file, imported by it, same directory).")
@click.option("--near-line", type=click.IntRange(1, 10_000_000), metavar="LINE",
              help="A line of --near: definitions in scope at that line come first.")
@click.option("--limit", type=click.IntRange(1, 500), help="Results per page (default 20).")
@cursor_option
@json_option
@pass_app
def locate(app: App, query: tuple[str, ...], kind: str | None, path: str | None, near: str | None,
           near_line: int | None, limit: int | None, cursor: str | None) -> None:  # fmt: skip
    """Find symbols by name, prefix or words ("normalize params" finds normalizeParams)."""
    rel = _rel(app, near) if near else None
    r = app.call("locate", _args(app, query=" ".join(query), kind=kind, path=path, near=rel, nearLine=near_line,
                                 limit=limit, cursor=cursor))  # fmt: skip
    _emit(app, "locate", r, render_locate)
    if not r["results"] and not cursor:
        sys.exit(NO_MATCH)


# -- show ---------------------------------------------------------------------------------------------


def render_show(r: dict[str, Any]) -> str:
    n = r["node"]
    lines = []
    if n.get("kind") == "file":
        from ..style import ago, emphasis, fields, state

        lines.append(f"file {emphasis(n['path'])}")
        diags = n.get("diagnostics")
        lines += fields([
            ("language", n.get("language") or "?"),
            ("role", n.get("role") or "?"),
            ("lines", n.get("lineCount")),
            ("imports", f"{r.get('imports', 0)} files (`nexus imports {n['path']}`)"),
            ("imported by", f"{r.get('importers', 0)} files (`nexus importers {n['path']}`)"),
            ("hash", (n.get("hash") or "")[:12] or None),
            ("graph", f"v{r.get('graphVersion')}, indexed {ago(r.get('indexedAt'))}, {state(str(r.get('freshness')))}"
             if r.get("graphVersion") is not None else None),
            ("diagnostics", _diagnostics(diags) if diags else None),
        ])  # fmt: skip
    else:
        lines.append(f"{n['kind']} {n['qualifiedName']}  ({n['path']}:{n['line']}-{n.get('endLine')})")
        lines.append(f"  key {n['key']}")
        if n.get("signature"):
            lines.append(f"  {n['signature']}")
        if n.get("doc"):
            lines.append(f"  \"{n['doc']}\"")
        lines.append(f"  {n.get('callers', 0)} callers, {n.get('callees', 0)} callees, {n.get('unresolvedCount', 0)} unresolved calls")
        if r.get("container"):
            lines.append(f"  in {_sym(r['container'])}")
    if r.get("members"):
        lines.append(f"  members ({r.get('memberCount')}):")
        lines += [f"    {m['kind']:<8} {m['name']}  :{m['line']}" for m in r["members"]]
    for fact in r.get("memory") or []:
        lines.append(f"  memory [{fact.get('status')}]: {fact.get('text')}")
    snip = r.get("snippet")
    if snip:
        if snip.get("verified"):
            lines.append(f"--- {snip['path']}:{snip['startLine']}-{snip['endLine']} (hash verified)")
            lines.append(snip["text"])
        else:
            lines.append(f"--- no snippet: {snip.get('reason')}")
            if snip.get("hint"):
                lines.append(f"    {snip['hint']}")
    return "\n".join(lines)


def _diagnostics(d: Any) -> str:
    if isinstance(d, list):
        return "; ".join(f"{x.get('code')}: {x.get('message')}" if isinstance(x, dict) else str(x) for x in d)
    if isinstance(d, dict):
        return ", ".join(f"{k} {v}" for k, v in d.items())
    return str(d)


@click.command()
@click.argument("symbol", required=False)
@click.option("--path", help="Show a file (repository-relative) instead of a symbol.")
@click.option("--id", "node_id", help="Show a symbol or file by id.")
@click.option("--snippet", is_flag=True, help="Include the source text (verified against the indexed hash).")
@cursor_option
@json_option
@pass_app
def show(app: App, symbol: str | None, path: str | None, node_id: str | None, snippet: bool, cursor: str | None) -> None:
    """A symbol's or file's facts, container and members; --snippet adds verified source."""
    if sum(1 for x in (symbol, path, node_id) if x) != 1:
        raise click.UsageError("give exactly one of SYMBOL, --path or --id")
    rel = _rel(app, path) if path else None
    r = app.call("show", _args(app, symbol=symbol, path=rel, id=node_id, snippet=snippet, cursor=cursor))
    _emit(app, "show", r, render_show)


# -- context ------------------------------------------------------------------------------------------


def render_context(r: dict[str, Any]) -> str:
    s = r["symbol"]
    lines = [f"{s['kind']} {s['qualifiedName']}  ({s['path']}:{s['line']})"]
    if s.get("signature"):
        lines.append(f"  {s['signature']}")
    for item in r["items"]:
        if item["relation"] == "memory":
            lines.append(f"  [{item['why']}] {item['memory'].get('text')}")
        else:
            lines.append(f"  [{item['why']}] {_sym(item)}")
    b = r["budget"]
    lines.append(f"{len(r['items'])} of {r['total']} items, {b['used']}/{b['tokens']} tokens ({b['note']})")
    return "\n".join(lines)


@click.command()
@click.argument("symbol")
@click.option("--depth", type=click.IntRange(1, 3), help="Call hops to include (1-3, default 1).")
@click.option("--budget", type=click.IntRange(100, 50_000), help="Token budget (default 1500).")
@min_confidence_option
@cursor_option
@json_option
@pass_app
def context(app: App, symbol: str, depth: int | None, budget: int | None, min_confidence: float | None,
            cursor: str | None) -> None:  # fmt: skip
    """A symbol's neighbourhood, ranked and cut to a token budget, each item with why it was chosen."""
    r = app.call("context", _args(app, symbol=symbol, depth=depth, budget=budget, minConfidence=min_confidence,
                                  cursor=cursor))  # fmt: skip
    _emit(app, "context", r, render_context)


# -- neighbors ----------------------------------------------------------------------------------------


def render_neighbors(r: dict[str, Any]) -> str:
    lines = [f"{r['total']} neighbors of {_sym(r['node'])} (depth {r['depth']}, {r['direction']}, {','.join(r['edgeKinds'])})"]
    for n in r["neighbors"]:
        e = n["edge"]
        arrow = "->" if e["direction"] == "out" else "<-"
        extra = f" {e['resolution']} {e['confidence']}" if e.get("resolution") else ""
        lines.append(f"  {n['depth']} {e['kind']:<8} {arrow} {_sym(n)}{extra}")
    return "\n".join(lines)


@click.command()
@click.argument("node")
@click.option("--direction", type=click.Choice(["in", "out", "both"]), help="Edge direction (default both).")
@click.option("--depth", type=click.IntRange(1, 3), help="Hops (1-3, default 1).")
@click.option("--edge-kinds", help="Comma-separated: calls,contains,inherits,imports (default all).")
@click.option("--limit", type=click.IntRange(1, 500), help="Neighbors per page (default 100).")
@format_option
@cursor_option
@json_option
@pass_app
def neighbors(app: App, node: str, direction: str | None, depth: int | None, edge_kinds: str | None, limit: int | None,
              fmt: str, cursor: str | None) -> None:  # fmt: skip
    """Nodes next to a symbol or file, over the chosen edge kinds."""
    kinds = [k.strip() for k in edge_kinds.split(",") if k.strip()] if edge_kinds else None
    r = app.call("neighbors", _args(app, node=node, direction=direction, depth=depth, edgeKinds=kinds, limit=limit, cursor=cursor))
    _emit(app, "neighbors", r, render_neighbors, fmt)


# -- impact -------------------------------------------------------------------------------------------


def render_impact(r: dict[str, Any]) -> str:
    t = r["target"]
    tests = r.get("tests")
    scope = {"exclude": ", tests left out", "only": ", tests only"}.get(tests or "", "")
    floor = f", confidence >= {r['minConfidence']}" if r.get("minConfidence") else ""
    head = f"impact of {t['key']}: {r['total']} callers within {r['depth']} hops ({r['testCallers']} in tests{scope}{floor})"
    if tests:
        head += f"; {r['allCallers']} in all"
    lines = [head]
    by_file: dict[str, list[dict[str, Any]]] = {}
    for c in r["callers"]:
        by_file.setdefault(str(c.get("path", "")), []).append(c)
    for path, callers in by_file.items():
        lines.append(f"  {path}" + (" [test]" if callers[0].get("test") else ""))
        for c in callers:
            via = "" if c["depth"] == 1 else f"  via {c['via']}"
            name = c.get("key", "").rsplit(":", 1)[-1] or c.get("name")
            lines.append(f"    {c['depth']}  {c['confidence']:<6} {c.get('resolution', ''):<12} {name}  :{c.get('line', '')}{via}")
    if r["completeness"] == "complete":
        lines.append("complete: no unresolved call in scope could hide another caller")
    else:
        reasons = []
        if r.get("unresolvedInScope"):
            reasons.append(f"{r['unresolvedInScope']} unresolved calls in scope could hide more callers")
        if r.get("boundToSameNamed"):
            reasons.append(
                f"{r['boundToSameNamed']} callers were bound to another definition of the same name in its file,"
                " and may call this one"
            )
        if r.get("belowMinConfidence"):
            reasons.append(f"{r['belowMinConfidence']} callers are under the confidence floor")
        if r.get("timeBound"):
            reasons.append("the walk was cut by its time bound")
        if r.get("parseErrorFileCount"):
            files = ", ".join(r.get("parseErrorFiles", [])[:3])
            reasons.append(f"{r['parseErrorFileCount']} files in scope did not parse cleanly ({files})")
        lines.append("lower bound: " + ("; ".join(reasons) or "callers may be missing"))
        for ex in r.get("unresolvedExamples", []):
            where = f"{ex['path']}:{ex['line']}" if ex.get("line") else ex.get("path", "")
            lines.append(f"    {ex['call']}  at {where}  in {ex['in']}")
        for ex in r.get("sameNamedExamples", [])[:5]:
            lines.append(f"    {ex['call']}  at {ex['path']}:{ex['line']}  in {ex['in']}  bound to {ex['boundTo']}")
        if r.get("unresolvedInScope", 0) > len(r.get("unresolvedExamples", [])):
            lines.append(f"    ... {r['unresolvedInScope'] - len(r['unresolvedExamples'])} more (--json lists the first 20)")
    return "\n".join(lines)


@click.command()
@click.argument("symbol")
@click.option("--depth", type=click.IntRange(1, 6), help="Caller hops (1-6, default 3).")
@click.option("--limit", type=click.IntRange(1, 500), help="Callers per page (default 50).")
@min_confidence_option
@click.option("--no-tests", is_flag=True, help="Leave out callers in test files.")
@click.option("--tests-only", is_flag=True, help="Only callers in test files.")
@format_option
@cursor_option
@json_option
@pass_app
def impact(app: App, symbol: str, depth: int | None, limit: int | None, min_confidence: float | None,
           no_tests: bool, tests_only: bool, fmt: str, cursor: str | None) -> None:  # fmt: skip
    """Every caller within N hops, with shortest path, via, confidence, how each edge was resolved and a
    completeness verdict."""
    if no_tests and tests_only:
        raise click.UsageError("--no-tests and --tests-only exclude each other")
    tests = "exclude" if no_tests else "only" if tests_only else None
    r = app.call("impact", _args(app, symbol=symbol, depth=depth, limit=limit, minConfidence=min_confidence,
                                 tests=tests, cursor=cursor))  # fmt: skip
    _emit(app, "impact", r, render_impact, fmt)


# -- paths --------------------------------------------------------------------------------------------


def render_paths(r: dict[str, Any]) -> str:
    if not r["paths"]:
        return r.get("none") or "no more paths"
    lines = []
    for p in r["paths"]:
        lines.append(f"length {p['length']}, confidence {p['confidence']}:")
        lines.append(f"  {p['hops'][0]['from']}")
        for h in p["hops"]:
            arrow = "calls ->" if h["direction"] == "out" else "<- called by"
            lines.append(f"    {arrow} {h['to']}  ({h['resolution']} {h['confidence']})")
    return "\n".join(lines)


@click.command()
@click.argument("source", metavar="FROM")
@click.argument("target", metavar="TO")
@click.option("--max-depth", type=click.IntRange(1, 6), help="Longest path in hops (1-6, default 4).")
@click.option("--max-paths", type=click.IntRange(1, 50), help="Paths per page (default 5).")
@click.option("--direction", type=click.Choice(["both", "callers", "callees"]),
              help="callees: FROM calls ... TO only; callers: TO calls ... FROM only (default both).")
@format_option
@cursor_option
@json_option
@pass_app
def paths(app: App, source: str, target: str, max_depth: int | None, max_paths: int | None, direction: str | None,
          fmt: str, cursor: str | None) -> None:  # fmt: skip
    """Call paths between two symbols, shortest and most confident first, each hop labelled outgoing or incoming."""
    args = _args(app, maxDepth=max_depth, maxPaths=max_paths, direction=direction, cursor=cursor)
    args["from"], args["to"] = source, target
    r = app.call("paths", args)
    _emit(app, "paths", r, render_paths, fmt)


# -- imports ------------------------------------------------------------------------------------------


def render_imports(r: dict[str, Any]) -> str:
    verb = "imports" if r["direction"] == "imports" else "is imported by"
    lines = [f"{r['file']} {verb} {r['total']} files"]
    lines += [f"  {f['path']}  (line {f['line']}: {f['specifier']}; {f['resolution']} {f['confidence']})" for f in r["files"]]
    return "\n".join(lines)


def _file_command(op: str, doc: str) -> click.Command:
    @click.command(name=op, help=doc)
    @click.argument("file")
    @click.option("--limit", type=int, help="Files per page (default 100).")
    @cursor_option
    @json_option
    @pass_app
    def cmd(app: App, file: str, limit: int | None, cursor: str | None) -> None:
        r = app.call(op, _args(app, path=_rel(app, file), limit=limit, cursor=cursor))
        _emit(app, op, r, render_imports)

    return cmd


def _rel(app: App, file: str) -> str:
    """A path typed relative to the working directory, made relative to the repository (the daemon confines it)."""
    import os

    full = os.path.normpath(os.path.join(str(app.cwd), file))
    return os.path.relpath(full, app.repo)


imports = _file_command("imports", "The files FILE imports.")
importers = _file_command("importers", "The files that import FILE.")
