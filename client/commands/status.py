"""`nexus status [PATH]`: the daemon's health and, per repository, what the graph holds and how fresh it is."""

from __future__ import annotations

from typing import Any

import click

from ..app import App, json_option, pass_app


def register(main: click.Group) -> None:
    main.add_command(status)


def render_status(r: dict[str, Any]) -> str:
    d = r["daemon"]
    lines = [f"nexusd {d['version']} (pid {d['pid']}, up {d['uptimeS']:.0f}s, {d['requests']} requests)"]
    if d.get("recovery"):
        lines.append(f"  recovered: {d['recovery']}")
    for repo in r.get("repos", []) or []:
        lines.append(f"{repo.get('name')}  {repo.get('root')}")
        for key in ("availability", "lastBuild", "freshness", "next"):
            if key in repo:
                lines.append(f"  {key:12} {repo[key]}")
        for key in ("files", "symbols", "graphVersion", "unresolvedReferences"):
            if key in repo:
                lines.append(f"  {key:12} {repo[key]}")
        edges = repo.get("edges") or {}
        calls = edges.get("calls") or {}
        if edges:
            by = ", ".join(f"{k} {v}" for k, v in calls.items())
            lines.append(f"  {'calls':12} {sum(calls.values())} ({by})")
            lines.append(f"  {'imports':12} {edges.get('imports', 0)}")
        diags = repo.get("diagnostics") or []
        if diags:
            lines.append(f"  {'diagnostics':12} {repo.get('filesWithDiagnostics', len(diags))} files")
            for d in diags[:5]:
                lines.append(f"    {d['path']}:{d.get('line', 0)} {d['code']}: {d['message']}")
    return "\n".join(lines)


@click.command()
@click.argument("path", required=False, type=click.Path(file_okay=False))
@json_option
@pass_app
def status(app: App, path: str | None) -> None:
    """Daemon health, and for each repository: files, symbols, edges, freshness, the last build."""
    args: dict[str, Any] = {"user": app.user}
    if path:
        from pathlib import Path

        from ..app import find_repo_root

        args["repo"] = str(find_repo_root(Path(path)))
    app.emit(app.call("status", args), render_status)
