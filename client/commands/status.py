"""`nexus status [PATH]`: the daemon's health and, per repository, what the graph holds and how fresh it is."""

from __future__ import annotations

from typing import Any

import click

from ..app import App, json_option, pass_app
from ..style import ago, duration, emphasis, fields, ok, state, warn


def register(main: click.Group) -> None:
    main.add_command(status)


def _build(b: dict[str, Any]) -> str | None:
    if not b:
        return None
    parts = [b.get("mode"), f"{b['parsed']} parsed" if b.get("parsed") is not None else None,
             f"{b['deleted']} deleted" if b.get("deleted") else None]  # fmt: skip
    detail = ", ".join(p for p in parts if p)
    text = f"{state(str(b.get('outcome', '?')))}" + (f" ({detail})" if detail else "") + f", {ago(b.get('at'))}"
    if b.get("error"):
        text += f": {b['error']}"
    return text


def render_repo(repo: dict[str, Any]) -> list[str]:
    lines = [f"{emphasis(str(repo.get('name')))}  {repo.get('root')}"]
    fresh = repo.get("freshness")
    if fresh:
        fresh = state(fresh) + (f" ({repo['pendingPaths']} paths pending)" if repo.get("pendingPaths") else "")
    edges = repo.get("edges") or {}
    calls = edges.get("calls") or {}
    by = ", ".join(f"{k} {v}" for k, v in calls.items())
    view = repo.get("view") or {}
    pairs: list[tuple[str, Any]] = [
        ("view", (f"worktree of {repo.get('repository')}, {view.get('branch') or 'detached'} at "
                  f"{(view.get('head') or '?')[:10]}, {view.get('dirty')} dirty, "
                  f"{view.get('overlayFiles')} files differ from the baseline") if view else None),  # fmt: skip
        ("availability", state(repo["availability"]) if repo.get("availability") else None),
        ("last build", _build(repo.get("lastBuild") or {})),
        ("graph", f"v{repo['graphVersion']}, indexed {ago(repo.get('indexedAt'))}" if "graphVersion" in repo else None),
        ("freshness", fresh),
        ("next", repo.get("next") if repo.get("next") not in (None, "none") else None),
        ("files", repo.get("files")),
        ("symbols", repo.get("symbols")),
        ("calls", f"{sum(calls.values())} ({by})" if edges else None),
        ("imports", edges.get("imports", 0) if edges else None),
        ("unresolved", f"{repo['unresolvedReferences']} calls" if "unresolvedReferences" in repo else None),
    ]
    diags = repo.get("diagnostics") or []
    if diags:
        pairs.append(("diagnostics", f"{repo.get('filesWithDiagnostics', len(diags))} files"))
    lines += fields(pairs)
    for d in diags[:5]:
        lines.append(f"    {d['path']}:{d.get('line', 0)} {d['code']}: {d['message']}")
    return lines


def render_status(r: dict[str, Any]) -> str:
    d = r["daemon"]
    lines = [f"nexusd {d['version']}  {ok('running')}, pid {d['pid']}, up {duration(d.get('uptimeS'))}, "
             f"{d['requests']} requests" + (", graph database not opened yet" if d.get("database") == "closed" else "")]  # fmt: skip
    if d.get("recovery"):
        lines.append(warn(f"  recovered: {d['recovery']}"))
    repos = r.get("repos", []) or []
    for repo in repos:
        lines += render_repo(repo)
    if not repos:
        asked = r.get("asked")
        lines.append(f"{asked} is not registered (`nexus index {asked}`)" if asked
                     else "no repositories registered (`nexus index PATH`)")  # fmt: skip
    return "\n".join(lines)


@click.command()
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option("--all", "all_repos", is_flag=True, help="Every registered repository, not just this one.")
@json_option
@pass_app
def status(app: App, path: str | None, all_repos: bool) -> None:
    """Daemon health, and for this repository (or --all): files, symbols, edges, freshness, the last build.

    The repository is PATH, else -C, else the git root of the working directory; when none of those was
    given and the working directory is in no registered repository, every repository is shown."""
    from pathlib import Path

    from ..app import find_repo_root

    args: dict[str, Any] = {"user": app.user}
    if all_repos:
        app.emit(app.call("status", args), render_status)
        return
    asked = str(find_repo_root(Path(path))) if path else app.repo
    r = app.call("status", {**args, "repo": asked})
    if not r.get("repos") and not path and not app.explicit_dir:
        r = app.call("status", args)
    elif not r.get("repos"):
        r["asked"] = asked
    app.emit(r, render_status)
