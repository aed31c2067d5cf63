"""`nexus status [PATH]`: the daemon's health and, per repository, what the graph holds and how fresh it is."""

from __future__ import annotations

import click

from ..app import App, json_option, pass_app
from ..status_view import fetch, render_repo, render_status

__all__ = ["register", "render_repo", "render_status", "status"]


def register(main: click.Group) -> None:
    main.add_command(status)


@click.command()
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option("--all", "all_repos", is_flag=True, help="Every registered repository, not just this one.")
@json_option
@pass_app
def status(app: App, path: str | None, all_repos: bool) -> None:
    """Daemon health, and for this repository (or --all): files, symbols, edges, freshness, the last build.

    The repository is PATH, else -C, else the git root of the working directory; when none of those was
    given and the working directory is in no registered repository, every repository is shown."""
    r = fetch(lambda op, args: app.call(op, args), user=app.user, repo=app.repo, path=path,
              explicit_dir=app.explicit_dir, all_repos=all_repos)  # fmt: skip
    app.emit(r, render_status)
