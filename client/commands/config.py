"""`nexus config`: every NEXUS_* setting, the value in force and where it came from (default, file, env)."""

from __future__ import annotations

from typing import Any

import click

from nexusd import config as nconfig

from ..app import App, json_option, pass_app
from ..style import dim, emphasis, warn


def register(main: click.Group) -> None:
    main.add_command(config)


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def render(r: dict[str, Any]) -> str:
    rows = r["settings"]
    width = max(len(x["name"]) for x in rows)
    vwidth = min(40, max(len(_show(x["value"])) for x in rows))
    file_note = "" if r["fileExists"] else " (absent)"
    lines = [f"settings file {r['file']}{file_note}"]
    if r.get("fileError"):
        lines.append(warn(f"  unreadable: {r['fileError']}"))
    if r.get("unknownKeys"):
        lines.append(warn(f"  unknown keys ignored: {', '.join(r['unknownKeys'])}"))
    for x in rows:
        value = _show(x["value"])
        source = x["source"]
        shown = emphasis(f"{value:<{vwidth}}") if source != "default" else f"{value:<{vwidth}}"
        lines.append(f"{x['name']:<{width}}  {shown}  {source:<7}  {dim(x['doc'])}")
        if x.get("problem"):
            lines.append(warn(f"{'':<{width}}  {x['problem']}"))
    return "\n".join(lines)


@click.command()
@json_option
@pass_app
def config(app: App) -> None:
    """Every NEXUS_* setting: its value, where it came from (default, file, env) and what it does."""
    c = nconfig.current()
    app.emit({
        "file": str(c.file),
        "fileExists": c.file.is_file(),
        "fileError": c.file_error,
        "unknownKeys": c.unknown_keys,
        "settings": c.explain(),
    }, render)  # fmt: skip
