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


@click.command()
@json_option
@pass_app
def repos(app: App) -> None:
    """List the registered repositories and how fresh their graphs are."""

    def render(r: dict[str, Any]) -> str:
        if not r["repos"]:
            return "no repositories registered (`nexus index PATH`)"
        return "\n".join(
            f"{x['name']:24} v{x['graphVersion']:<5} {x['freshness']:8} {x['root']}" for x in r["repos"]
        )

    app.emit(app.call("repos", {"user": app.user}), render)
