"""The click group of `nexus`: every command, loaded lazily (client/cli.py is the entry point).

Command groups live in client/commands/, one module per area; each exposes `register(main)`.
"""

from __future__ import annotations

import sys

import click

from nexusd.errors import NexusError

from .app import App, fail
from .commands import COMMANDS


class LazyGroup(click.Group):
    """Imports a command's module only when that command runs (or `--help` lists them all)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.commands:
            return self.commands[name]
        module_name = COMMANDS.get(name)
        if module_name is None:
            return None
        import importlib

        module = importlib.import_module(f"nexus_client.commands.{module_name}")
        scratch = click.Group()
        module.register(scratch)
        return scratch.commands.get(name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-C", "directory", type=click.Path(file_okay=False), help="Work as if started in this directory.")
@click.option("--json", "json_out", is_flag=True, help="Print results as JSON (also accepted after the command).")
@click.option("--user", help="Memory owner (default: NEXUS_USER or the OS user).")
@click.option("--no-autostart", is_flag=True, help="Fail instead of starting the daemon when it is down.")
@click.version_option(package_name="nexusd", prog_name="nexus")
@click.pass_context
def main(ctx: click.Context, directory: str | None, json_out: bool, user: str | None, no_autostart: bool) -> None:
    """NEXUS: a code graph and a memory for coding agents, served by one daemon per user."""
    app = App(directory, json_out, user, autostart=not no_autostart)
    ctx.obj = app
    ctx.call_on_close(app.close)


def run() -> None:
    try:
        main.main(prog_name="nexus", standalone_mode=False)
    except NexusError as exc:
        app = click.get_current_context(silent=True)
        fail(exc, bool(app and isinstance(app.obj, App) and app.obj.json) or "--json" in sys.argv)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
