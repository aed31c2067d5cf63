"""`nexus help [COMMAND...]` (the same text as `nexus [COMMAND...] --help`) and `nexus completion SHELL`."""

from __future__ import annotations

import click

from ..app import App, json_option, pass_app


def register(main: click.Group) -> None:
    main.add_command(help_command)
    main.add_command(completion)


@click.command("help")
@click.argument("command", nargs=-1)
@json_option
@pass_app
@click.pass_context
def help_command(ctx: click.Context, app: App, command: tuple[str, ...]) -> None:
    """Show the help of the CLI, or of one command (`nexus help impact`, `nexus help daemon install`)."""
    root = ctx.find_root()
    cmd: click.Command = root.command
    path = [root.info_name or "nexus"]
    sub_ctx = click.Context(cmd, info_name=path[0], help_option_names=ctx.find_root().help_option_names)
    for name in command:
        if not isinstance(cmd, click.Group):
            raise click.UsageError(f"`{' '.join(path)}` has no subcommand {name!r}")
        found = cmd.get_command(sub_ctx, name)
        if found is None:
            raise click.UsageError(f"no command {' '.join([*path, name])!r}; `nexus help` lists them")
        cmd = found
        path.append(name)
        sub_ctx = click.Context(cmd, info_name=name, parent=sub_ctx)
    text = cmd.get_help(sub_ctx)
    if app.json:
        app.emit({"command": " ".join(path), "help": text})
    else:
        click.echo(text)


@click.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@json_option
@pass_app
@click.pass_context
def completion(ctx: click.Context, app: App, shell: str) -> None:
    """Print the shell completion script: `eval "$(nexus completion bash)"` in ~/.bashrc (zsh, fish alike)."""
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    assert cls is not None
    root = ctx.find_root().command
    script = cls(root, {}, "nexus", "_NEXUS_COMPLETE").source()
    if app.json:
        app.emit({"shell": shell, "script": script})
    else:
        click.echo(script)
