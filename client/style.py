"""How answers look to a person: colour where it helps, relative times, aligned fields.

Colour is ANSI SGR codes (the ones click.style writes), only when stdout is a terminal and NO_COLOR (https://no-color.org) is unset or empty;
`--json` output never passes through here. Times on the wire are epoch seconds; people read "3 min ago".
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from typing import Any


def colour_on() -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


_FG = {"red": 31, "green": 32, "yellow": 33}


def _style(text: str, fg: str | None = None, bold: bool = False, dim: bool = False) -> str:
    """click.style's output for these options, without importing click (`nexus status` starts without it)."""
    if not colour_on():
        return text
    codes = ([f"\x1b[{_FG[fg]}m"] if fg else []) + (["\x1b[1m"] if bold else []) + (["\x1b[2m"] if dim else [])
    return "".join(codes) + text + "\x1b[0m"


def ok(text: str) -> str:
    return _style(text, fg="green")


def warn(text: str) -> str:
    return _style(text, fg="yellow")


def bad(text: str) -> str:
    return _style(text, fg="red", bold=True)


def emphasis(text: str) -> str:
    return _style(text, bold=True)


def dim(text: str) -> str:
    return _style(text, dim=True)


STATE_COLOURS = {
    "fresh": ok, "ready": ok, "complete": ok, "ok": ok, "installed": ok, "running": ok,
    "stale": warn, "unknown": warn, "indexing": warn, "lower_bound": warn, "syncing": warn,
    "missing": bad, "failed": bad, "error": bad, "not running": bad,
}  # fmt: skip


def state(text: str) -> str:
    """A state word, coloured by what it means (fresh green, stale yellow, missing red)."""
    fn = STATE_COLOURS.get(str(text).split(" ", 1)[0])
    return fn(str(text)) if fn else str(text)


def ago(epoch: float | int | None, now: float | None = None) -> str:
    """`epoch` as "just now", "42 s ago", "3 min ago", "5 h ago", "2 days ago" (or "never")."""
    if not epoch:
        return "never"
    delta = (time.time() if now is None else now) - float(epoch)
    future = delta < 0
    delta = abs(delta)
    if delta < 5:
        return "just now"
    if delta < 60:
        text = f"{delta:.0f} s"
    elif delta < 3600:
        text = f"{delta / 60:.0f} min"
    elif delta < 86400 * 2:
        text = f"{delta / 3600:.0f} h"
    else:
        text = f"{delta / 86400:.0f} days"
    return f"in {text}" if future else f"{text} ago"


def duration(seconds: float | int | None) -> str:
    if seconds is None:
        return "?"
    s = float(seconds)
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{s // 60:.0f} min {s % 60:.0f} s"
    if s < 86400:
        return f"{s // 3600:.0f} h {(s % 3600) // 60:.0f} min"
    return f"{s // 86400:.0f} days {(s % 86400) // 3600:.0f} h"


def fields(pairs: Iterable[tuple[str, Any]], indent: str = "  ") -> list[str]:
    """`label  value` lines with the values aligned; pairs whose value is None are left out."""
    rows = [(k, v) for k, v in pairs if v is not None]
    if not rows:
        return []
    width = max(len(k) for k, _ in rows)
    return [f"{indent}{k:<{width}}  {v}" for k, v in rows]
