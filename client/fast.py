"""`nexus status` without click: a start-up path for the command people and prompts run most.

Importing click costs about as much as starting Python (ARCHITECTURE.md, "Client start-up"), and `status` needs
nothing of it. `run_fast` takes the command line only when it is a plain `status` invocation it fully
understands, and then does what the click command does with the same functions (client/status_view.py,
client/output.py): the same requests, the same text or JSON, the same messages and exit codes. Anything else
(another command, `--help`, `--version`, an option spelled another way, a PATH that click would refuse) returns
None, and the click group handles it as before.
"""

from __future__ import annotations

import errno
import getpass
import json
import os
import sys
from pathlib import Path
from typing import Any

from nexusd import config, paths
from nexusd.errors import NexusError

from .output import echo, fail, find_repo_root

# Options of the group (before the command name) that take a value, and flags; then the command's flags.
_GROUP_VALUES = {"-C": "directory", "--user": "user"}
_GROUP_FLAGS = {"--json": "json", "--no-autostart": "no_autostart"}
_STATUS_FLAGS = {"--all": "all_repos", "--json": "json"}


def parse_status(argv: list[str]) -> dict[str, Any] | None:
    """The options of a `nexus [-C DIR] [--json] [--user U] [--no-autostart] status [PATH] [--all] [--json]`
    command line, or None when it is anything else."""
    opts: dict[str, Any] = {"directory": None, "user": None, "json": False, "no_autostart": False,
                            "all_repos": False, "path": None}  # fmt: skip
    i = 0
    while i < len(argv) and argv[i] != "status":
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if arg in _GROUP_FLAGS:
            opts[_GROUP_FLAGS[arg]] = True
        elif name in _GROUP_VALUES and eq and name.startswith("--"):
            opts[_GROUP_VALUES[name]] = value
        elif arg in _GROUP_VALUES and i + 1 < len(argv):
            i += 1
            opts[_GROUP_VALUES[arg]] = argv[i]
        else:
            return None
        i += 1
    if i >= len(argv):
        return None
    for arg in argv[i + 1 :]:
        if arg in _STATUS_FLAGS:
            opts[_STATUS_FLAGS[arg]] = True
        elif arg.startswith("-") or opts["path"] is not None:
            return None
        else:
            opts["path"] = arg
    for key in ("directory", "path", "user"):
        value = opts[key]
        if value is not None and (value == "" or value.startswith("-")):
            return None  # click's own reading (or error) of these is the reference
    for key in ("directory", "path"):  # click.Path(file_okay=False) refuses an existing non-directory
        if opts[key] is not None and os.path.exists(opts[key]) and not os.path.isdir(opts[key]):
            return None
    return opts


def run_fast(argv: list[str]) -> int | None:
    """Run a plain `status` command line and return its exit code, or None to leave it to the click group."""
    opts = parse_status(argv)
    if opts is None:
        return None
    from . import status_view

    client: Any = None
    try:
        cwd = Path(opts["directory"]).absolute() if opts["directory"] is not None else Path.cwd()
        user = opts["user"] or config.get("NEXUS_USER") or getpass.getuser()
        autostart = not opts["no_autostart"] and not config.get("NEXUS_NO_AUTOSTART")
        dirs = paths.dirs()

        def call(op: str, args: dict[str, Any]) -> Any:
            nonlocal client
            if client is None:
                from .connection import connect

                client = connect(dirs, autostart=autostart)
            return client.request(op, args)

        result = status_view.fetch(call, user=user, repo=str(find_repo_root(cwd)), path=opts["path"],
                                   explicit_dir=opts["directory"] is not None, all_repos=opts["all_repos"])  # fmt: skip
        if opts["json"]:
            echo(json.dumps(result, indent=2, sort_keys=False, default=str))
        else:
            text = status_view.render_status(result)
            if text:
                echo(text)
        return 0
    except NexusError as exc:
        _close(client)
        client = None
        fail(exc, opts["json"] or "--json" in sys.argv)
    except (EOFError, KeyboardInterrupt):  # as click's main: a newline on stderr, then Abort's 130
        echo("", err=True)
        return 130
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        # The reader went away (`nexus status | head`): exit 1 as click's main does, without a second error
        # when Python flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        _close(client)


def _close(client: Any) -> None:
    if client is not None:
        client.close()
