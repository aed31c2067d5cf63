"""`nexus status` without click: the request(s) it makes and how the answer reads. Both the click command
(client/commands/status.py) and the start-up path that skips click (client/fast.py) use these, so the two print
the same thing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .output import find_repo_root
from .style import ago, duration, emphasis, fields, ok, state, warn


def fetch(
    call: Callable[[str, dict[str, Any]], Any],
    *,
    user: str,
    repo: str,
    path: str | None,
    explicit_dir: bool,
    all_repos: bool,
) -> dict[str, Any]:
    """The status answer for PATH, else `repo` (-C or the working directory's git root); when neither PATH
    nor -C was given and that repository is not registered, every repository's."""
    args: dict[str, Any] = {"user": user}
    if all_repos:
        return call("status", args)  # type: ignore[no-any-return]
    asked = str(find_repo_root(Path(path))) if path else repo
    r = call("status", {**args, "repo": asked})
    if not r.get("repos") and not path and not explicit_dir:
        r = call("status", args)
    elif not r.get("repos"):
        r["asked"] = asked
    return r  # type: ignore[no-any-return]


def _build(b: dict[str, Any]) -> str | None:
    if not b:
        return None
    parts = [b.get("mode"), f"{b['parsed']} parsed" if b.get("parsed") is not None else None,
             f"{b['deleted']} deleted" if b.get("deleted") else None]  # fmt: skip
    detail = ", ".join(p for p in parts if p)
    text = f"{state(str(b.get('outcome', '?')))}" + (f" ({detail})" if detail else "") + f", {ago(b.get('at'))}"
    if b.get("error"):
        text += f": {b['error']}"
    return text


def render_repo(repo: dict[str, Any]) -> list[str]:
    lines = [f"{emphasis(str(repo.get('name')))}  {repo.get('root')}"]
    fresh = repo.get("freshness")
    if fresh:
        fresh = state(fresh) + (f" ({repo['pendingPaths']} paths pending)" if repo.get("pendingPaths") else "")
    edges = repo.get("edges") or {}
    calls = edges.get("calls") or {}
    by = ", ".join(f"{k} {v}" for k, v in calls.items())
    view = repo.get("view") or {}
    pairs: list[tuple[str, Any]] = [
        ("view", (f"worktree of {repo.get('repository')}, {view.get('branch') or 'detached'} at "
                  f"{(view.get('head') or '?')[:10]}, {view.get('dirty')} dirty, "
                  f"{view.get('overlayFiles')} files differ from the baseline") if view else None),  # fmt: skip
        ("availability", state(repo["availability"]) if repo.get("availability") else None),
        ("last build", _build(repo.get("lastBuild") or {})),
        ("graph", f"v{repo['graphVersion']}, indexed {ago(repo.get('indexedAt'))}" if "graphVersion" in repo else None),
        ("freshness", fresh),
        ("next", repo.get("next") if repo.get("next") not in (None, "none") else None),
        ("files", repo.get("files")),
        ("symbols", repo.get("symbols")),
        ("calls", f"{sum(calls.values())} ({by})" if edges else None),
        ("imports", edges.get("imports", 0) if edges else None),
        ("unresolved", f"{repo['unresolvedReferences']} calls" if "unresolvedReferences" in repo else None),
        ("symbol table", "let go while idle: the next edit rebuilds it from the facts cache"
         if repo.get("symbolTable") == "released" else None),  # fmt: skip
    ]
    diags = repo.get("diagnostics") or []
    if diags:
        pairs.append(("diagnostics", f"{repo.get('filesWithDiagnostics', len(diags))} files"))
    lines += fields(pairs)
    for d in diags[:5]:
        lines.append(f"    {d['path']}:{d.get('line', 0)} {d['code']}: {d['message']}")
    return lines


def _database_note(state: Any) -> str:
    if state == "closed":
        return ", graph database not opened yet"
    if state == "resting":
        return ", graph database closed while idle (the next request that needs it opens it)"
    return ""


def render_status(r: dict[str, Any]) -> str:
    d = r["daemon"]
    again = d.get("restartsInPlace") or 0
    lines = [f"nexusd {d['version']}  {ok('running')}, pid {d['pid']}, up {duration(d.get('uptimeS'))}"
             + (f" (restarted in place {again}x to give memory back)" if again else "")
             + f", {d['requests']} requests"
             + _database_note(d.get("database"))]  # fmt: skip
    if d.get("recovery"):
        lines.append(warn(f"  recovered: {d['recovery']}"))
    repos = r.get("repos", []) or []
    for repo in repos:
        lines += render_repo(repo)
    if not repos:
        asked = r.get("asked")
        lines.append(f"{asked} is not registered (`nexus index {asked}`)" if asked
                     else "no repositories registered (`nexus index PATH`)")  # fmt: skip
    return "\n".join(lines)
