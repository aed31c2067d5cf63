"""`nexus index [PATH]`, `nexus sync [PATH]`, `nexus repos`: building and listing code graphs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..app import App, find_repo_root, json_option, pass_app


def register(main: click.Group) -> None:
    main.add_command(index)
    main.add_command(sync)
    main.add_command(repos)


def _root(app: App, path: str | None) -> str:
    return str(find_repo_root(Path(path))) if path else app.repo


def render_sync(r: dict[str, Any]) -> str:
    w = r.get("written") or {}
    secs = r.get("seconds", {}).get("total")
    lines = [f"{r['name']} ({r['repo']}): {r['mode']}" + (f" in {secs:.2f}s" if secs else "")]
    if r["mode"] != "noop":
        lines.append(
            f"  parsed {r['parsed']}, unchanged {r['unchanged']}, deleted {r['deleted']}, "
            f"re-resolved {r['affected']}; wrote {w.get('files', 0)} files, {w.get('symbols', 0)} symbols, "
            f"{w.get('calls', 0)} calls, {w.get('imports', 0)} imports"
        )
    if r.get("skippedCount"):
        lines.append(f"  skipped {r['skippedCount']} paths (see --json for reasons)")
    if r.get("diagnostics"):
        lines.append(f"  {r['diagnostics']} files with diagnostics (`nexus status` lists them)")
    lines.append(f"  graphVersion {r['graphVersion']}, freshness {r['freshness']}")
    view = r.get("view")
    if view and not view.get("primary"):
        lines.append(f"  view {view['root']} ({view.get('branch') or 'detached'} {(view.get('head') or '')[:10]}), "
                     f"{view.get('dirty') or 0} dirty files")  # fmt: skip
    return "\n".join(lines)


@click.command()
@click.argument("path", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--full", is_flag=True, help="Re-parse every file instead of syncing what changed.")
@json_option
@pass_app
def index(app: App, path: str | None, full: bool) -> None:
    """Register a repository (default: the git root here) and build its code graph."""
    args = {"repo": _root(app, path), "user": app.user, "full": full}
    app.emit(app.call("index", args, label="indexing", timeout=120), render_sync)


@click.command()
@click.argument("path", required=False, type=click.Path(exists=True, file_okay=False))
@json_option
@pass_app
def sync(app: App, path: str | None) -> None:
    """Bring a registered repository's graph up to date; returns when every earlier change is in."""
    args = {"repo": _root(app, path), "user": app.user}
    app.emit(app.call("sync", args, label="syncing", timeout=120), render_sync)


def render_repos(r: dict[str, Any]) -> str:
    from ..style import ago, state

    if not r["repos"]:
        return "no repositories registered (`nexus index PATH`)"
    width = max(len(str(x["name"])) for x in r["repos"])
    lines = []
    for x in r["repos"]:
        fresh = state(f"{x['freshness']:<8}")
        lines.append(f"{x['name']:<{width}}  v{x['graphVersion']:<5} {fresh} {ago(x.get('indexedAt')):<12} {x['root']}")
        views = x.get("views") or []
        if len(views) > 1:  # the worktrees of one git repository: one graph, memory and history, a view each
            for v in views:
                head = (v.get("head") or "")[:10]
                where = v.get("branch") or ("detached" if head else "")
                dirty = v.get("dirty")
                mark = "*" if v.get("primary") else " "
                lines.append(f"{'':<{width}}  {mark} view {v['root']}  {where} {head}"
                             + (f"  {dirty} dirty" if dirty else ""))  # fmt: skip
    missing = [x["root"] for x in r["repos"] if x["freshness"] == "missing"]
    if missing:
        lines.append("missing: the directory is gone; `nexus repos move OLD NEW` if it moved, `nexus forget OLD` "
                     "to drop the graph (memory is kept)")  # fmt: skip
    return "\n".join(lines)


@click.group(invoke_without_command=True)
@json_option
@pass_app
@click.pass_context
def repos(ctx: click.Context, app: App) -> None:
    """List the registered repositories and how fresh their graphs are (`missing`: the directory is gone)."""
    if ctx.invoked_subcommand is None:
        app.emit(app.call("repos", {"user": app.user}), render_repos)


@repos.command("list")
@json_option
@pass_app
def repos_list(app: App) -> None:
    """List the registered repositories (the same as `nexus repos`)."""
    app.emit(app.call("repos", {"user": app.user}), render_repos)


@repos.command("move")
@click.argument("old")
@click.argument("new", type=click.Path(exists=True, file_okay=False))
@json_option
@pass_app
def repos_move(app: App, old: str, new: str) -> None:
    """OLD was moved to NEW: keep its memory, history and graph (same repository id) and re-sync it there."""
    import os

    args = {"repo": os.path.abspath(old), "to": os.path.realpath(new), "user": app.user}
    r = app.call("repo.move", args, label="syncing", timeout=600)
    app.emit(r, lambda x: f"moved {x['movedFrom']} -> {x['repo']} (memory and history kept)\n" + render_sync(x))
