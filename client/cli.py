"""`nexus` (alias `nexus-client`): the command line on top of the client library.

`run` is the console entry point. `nexus status`, the command people and prompts run most, is answered
without importing click (client/fast.py: the same output and exit codes); any other command,
any option the fast path does not know, and every `--help` go to the click group in client/cli_group.py.
`nexus_client.cli.main` is that group (imported on first use).
"""

from __future__ import annotations

import sys
from typing import Any


def run() -> None:
    from .fast import run_fast

    code = run_fast(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from .cli_group import run as run_click

    run_click()


def __getattr__(name: str) -> Any:
    if name in ("main", "LazyGroup"):
        from . import cli_group

        return getattr(cli_group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
