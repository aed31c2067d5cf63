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
        for key in ("files", "symbols", "edges", "diagnostics", "graphVersion"):
            if key in repo:
                lines.append(f"  {key:12} {repo[key]}")
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
