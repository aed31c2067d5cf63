"""`nexusd`: the daemon's own command line. Clients use `nexus`; this only runs the daemon."""

from __future__ import annotations

import sys

import click

from . import __version__, paths


@click.group()
@click.version_option(__version__, prog_name="nexusd")
def main() -> None:
    """NEXUS daemon: one per user, serving the code graph and memory over a local socket."""


@main.command()
@click.option("--log-to-terminal", "-v", is_flag=True, help="Also log to stderr (always logs to the state dir).")
@click.option("--readers", default=4, show_default=True, help="Reader threads (each has its own connection).")
def run(log_to_terminal: bool, readers: int) -> None:
    """Serve in the foreground until SIGTERM or a `shutdown` request."""
    from . import config
    from .parse.gcpause import choose_allocator

    choose_allocator(str(config.get("NEXUS_DAEMON_ALLOCATOR")))  # may execute this command again
    from .daemon import Daemon

    sys.exit(Daemon(paths.dirs(), log_to_terminal=log_to_terminal, readers=readers).run())


@main.command()
def where() -> None:
    """Print the directories and socket this daemon would use."""
    d = paths.dirs()
    for name in ("data", "state", "runtime", "db", "journal", "log", "pidfile", "socket"):
        click.echo(f"{name:8} {getattr(d, name)}")


if __name__ == "__main__":
    main()
