"""`nexus forget`: one command, several things to forget, chosen by a flag.

    nexus forget --value VALUE     delete history nodes holding VALUE and deny-list it (history layer)
    nexus forget --memory ID...    delete memory nodes (memory layer; see client/commands/memory.py)
    nexus forget PATH              unregister a repository (code layer; owned by the code-graph commands)

Each area owns its branch; this module only dispatches, so the three never fight over the command name.
It is registered after the memory commands and replaces their standalone `forget`.
"""

from __future__ import annotations

import os

import click

from ..app import App, json_option, pass_app


def register(main: click.Group) -> None:
    main.add_command(forget)


def forget_value(app: App, value: str) -> None:
    r = app.call("forget.value", {"value": value, "user": app.user})
    app.emit(
        r,
        lambda r: f"forgot {r['total']} history nodes "
        f"({', '.join(f'{k} {v}' for k, v in r['deleted'].items() if v) or 'none matched'}); "
        "the value stays on the deny-list, so re-ingesting will not bring it back",
    )


def forget_repo(app: App, path: str) -> None:
    """Unregister a repository and drop its code graph and history (the code-graph area owns this branch)."""
    r = app.call("repo.forget", {"repo": os.path.realpath(path), "user": app.user})
    app.emit(r, lambda r: f"unregistered {r['forgotten']} (memory kept)")


@click.command()
@click.argument("targets", nargs=-1)
@click.option("--value", "value_flag", is_flag=True, help="TARGET is a value (a secret, a name) to purge from history.")
@click.option("--memory", "memory_flag", is_flag=True, help="TARGETs are memory ids (facts, procedures, handoffs).")
@click.option("--all", "all_", is_flag=True, help="With --memory: everything you have in this repository.")
@json_option
@pass_app
@click.pass_context
def forget(ctx: click.Context, app: App, targets: tuple[str, ...], value_flag: bool, memory_flag: bool, all_: bool) -> None:
    """Forget a value from history (--value), memory (--memory ID...), or a repository (PATH)."""
    if value_flag and memory_flag:
        raise click.UsageError("--value and --memory forget different things; pick one")
    if value_flag:
        if len(targets) != 1:
            raise click.UsageError("give exactly one VALUE (quote it if it has spaces)")
        forget_value(app, targets[0])
        return
    if memory_flag:
        from . import memory

        ctx.invoke(memory.forget, memory_flag=True, all_=all_, ids=targets)
        return
    if len(targets) == 1 and os.path.isdir(targets[0]):
        forget_repo(app, targets[0])
        return
    if len(targets) == 1 and not os.path.exists(targets[0]):
        # A registered repository whose directory was deleted or moved away can still be forgotten.
        from nexusd.errors import NotIndexed

        try:
            forget_repo(app, targets[0])
            return
        except NotIndexed:
            raise click.UsageError(
                f"{targets[0]} is neither a directory nor a registered repository; to purge a value from history "
                "use `--value VALUE`, for memory `--memory ID...`"
            ) from None
    raise click.UsageError(
        "say what to forget: `--value VALUE` (history), `--memory ID...` (memory), or a repository PATH"
    )
