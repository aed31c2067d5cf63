"""What every command prints outside its answer, without click: typed errors as messages and exit codes (the one
place, docs/conventions.md point 3), and the repository a directory is in. `nexus status` starts without click
(client/fast.py), so nothing here may import it; `echo` writes what click.echo writes for plain text."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

from nexusd.errors import NexusError


def echo(text: str, *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def find_repo_root(start: Path | str) -> Path:
    """The git root containing `start` (found by walking up, no subprocess), else `start` itself."""
    start = Path(start).absolute()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def candidate_lines(candidates: list[dict[str, Any]]) -> list[str]:
    """`key  path:12-30  method [stub] [test]`, aligned."""
    width = max(len(str(c.get("key") or c.get("id"))) for c in candidates)
    out = []
    for c in candidates:
        where = f"{c.get('path', '')}:{c.get('line', '?')}" + (f"-{c['endLine']}" if c.get("endLine") else "")
        marks = "".join(f" [{m}]" for m in ("stub", "test") if c.get(m))
        out.append(f"{str(c.get('key') or c.get('id')):<{width}}  {where}  {c.get('kind', '')}{marks}")
    return out


def fail(error: NexusError, as_json: bool) -> NoReturn:
    if as_json:
        echo(json.dumps({"ok": False, "error": error.to_wire()}, indent=2, default=str))
    else:
        echo(f"nexus: {error.message}", err=True)
        if error.hint:
            echo(f"  hint: {error.hint}", err=True)
        candidates = error.data.get("candidates") if error.data else None
        if candidates:
            total = error.data.get("total", len(candidates))
            echo(f"  candidates ({total}, best first):", err=True)
            for line in candidate_lines(candidates[:10]):
                echo(f"    {line}", err=True)
    sys.exit(error.exit_code)
