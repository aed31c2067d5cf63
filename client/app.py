"""What every CLI command shares: the repository and user it speaks for, output as text or JSON, and the one
place where typed errors become messages and exit codes (docs/conventions.md point 3)."""

from __future__ import annotations

import functools
import getpass
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from nexusd import config, paths

from .output import candidate_lines, fail, find_repo_root

__all__ = ["App", "candidate_lines", "fail", "find_repo_root", "json_option", "pass_app"]

F = TypeVar("F", bound=Callable[..., Any])


class App:
    def __init__(self, directory: str | None, json_out: bool, user: str | None, autostart: bool):
        self.cwd = Path(directory).absolute() if directory else Path.cwd()
        self.explicit_dir = directory is not None  # -C was given
        self.json = json_out
        self.user = user or config.get("NEXUS_USER") or getpass.getuser()
        self.autostart = autostart and not config.get("NEXUS_NO_AUTOSTART")
        self.dirs = paths.dirs()
        self._client: Any = None

    @property
    def repo(self) -> str:
        return str(find_repo_root(self.cwd))

    def client(self) -> Any:
        if self._client is None:
            from .connection import connect

            self._client = connect(self.dirs, autostart=self.autostart)
        return self._client

    def call(self, op: str, args: dict[str, Any] | None = None, *, label: str | None = None, timeout: float | None = None) -> Any:
        """One request; with `label`, a progress bar fed by the daemon's progress frames (stderr, TTY only)."""
        if label is None or self.json or not sys.stderr.isatty():
            return self.client().request(op, args, timeout=timeout)
        from .progress import ProgressBar

        with ProgressBar(label) as bar:
            return self.client().request(op, args, progress=bar.update, timeout=timeout)

    def emit(self, result: Any, render: Callable[[Any], str] | None = None) -> None:
        if self.json or render is None:
            click.echo(json.dumps(result, indent=2, sort_keys=False, default=str))
        else:
            text = render(result)
            if text:
                click.echo(text)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def json_option(fn: F) -> F:
    """Every command takes --json (also accepted once before the command name)."""

    @click.option("--json", "json_flag", is_flag=True, help="Print the result as JSON.")
    @functools.wraps(fn)
    def wrapper(*args: Any, json_flag: bool, **kwargs: Any) -> Any:
        app = click.get_current_context().find_object(App)
        if app is not None and json_flag:
            app.json = True
        return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


pass_app = click.make_pass_decorator(App)
