"""`nexus hook install|remove|status`: the shell prompt hook (bash, zsh) and, later, the git hooks.

The shell hook is a block of plain shell between two marker lines in the rc file (~/.bashrc, ~/.zshrc, or
`--rc FILE` / `NEXUS_SHELL_RC` so tests never touch a real home). It appends one line per command to the
daemon's spool file (`client/shellhook.py` explains why plain shell and what it records); the daemon ingests
the spool, so the prompt never waits for it and nothing is lost while it is down. Installing twice replaces the
block in place; `remove` deletes exactly the block.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import click

from nexusd import config

from ..app import App, json_option, pass_app

SHELLS = ("bash", "zsh")


def register(main: click.Group) -> None:
    main.add_command(hook)


def _markers(shell: str) -> tuple[str, str]:
    return f"# >>> nexus shell hook ({shell}) >>>", f"# <<< nexus shell hook ({shell}) <<<"


def rc_path(shell: str, rc: str | None) -> Path:
    if rc:
        return Path(rc).expanduser()
    env = config.get("NEXUS_SHELL_RC")
    if env:
        return Path(env).expanduser()
    if shell == "zsh":
        return Path(os.environ.get("ZDOTDIR") or Path.home()) / ".zshrc"
    return Path.home() / ".bashrc"


def _block_re(shell: str) -> re.Pattern[str]:
    start, end = _markers(shell)
    return re.compile(rf"(?:\n)?{re.escape(start)}\n.*?{re.escape(end)}\n?", re.DOTALL)


def shell_block(shell: str, spool: Path) -> str:
    from ..shellhook import hook_script

    start, end = _markers(shell)
    return f"{start}\n{hook_script(shell, str(spool)).rstrip()}\n{end}\n"


def install_shell_hook(shell: str, rc: Path, spool: Path) -> dict[str, Any]:
    spool.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    block = shell_block(shell, spool)
    text = rc.read_text(encoding="utf-8") if rc.exists() else ""
    pattern = _block_re(shell)
    if pattern.search(text):
        new = pattern.sub(lambda m: ("\n" if m.group(0).startswith("\n") else "") + block, text, count=1)
        action = "updated" if new != text else "unchanged"
    else:
        new = text + ("" if not text or text.endswith("\n") else "\n") + ("\n" if text else "") + block
        action = "installed"
    if new != text:
        rc.parent.mkdir(parents=True, exist_ok=True)
        tmp = rc.with_name(rc.name + ".nexus-tmp")
        tmp.write_text(new, encoding="utf-8")
        if rc.exists():
            os.chmod(tmp, rc.stat().st_mode & 0o7777)
        os.replace(tmp, rc)
    return {"shell": shell, "rc": str(rc), "spool": str(spool), "action": action}


def remove_shell_hook(shell: str, rc: Path) -> dict[str, Any]:
    if not rc.exists():
        return {"shell": shell, "rc": str(rc), "action": "absent"}
    text = rc.read_text(encoding="utf-8")
    new, count = _block_re(shell).subn("", text, count=1)
    if not count:
        return {"shell": shell, "rc": str(rc), "action": "absent"}
    tmp = rc.with_name(rc.name + ".nexus-tmp")
    tmp.write_text(new, encoding="utf-8")
    os.chmod(tmp, rc.stat().st_mode & 0o7777)
    os.replace(tmp, rc)
    return {"shell": shell, "rc": str(rc), "action": "removed"}


def _git_root(app: App, path: str | None) -> Path:
    from ..app import find_repo_root

    return find_repo_root(Path(path)) if path else Path(app.repo)


def install_git_hooks(app: App, path: str | None) -> dict[str, Any]:
    """post-commit/post-checkout/post-merge/post-rewrite hooks that notify the daemon (client/githooks.py)."""
    from .. import githooks

    try:
        return githooks.install(_git_root(app, path), app.dirs.hook_spool)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def remove_git_hooks(app: App, path: str | None) -> dict[str, Any]:
    from .. import githooks

    try:
        return githooks.remove(_git_root(app, path))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


@click.group()
def hook() -> None:
    """Install, remove or inspect the shell prompt hook (and git hooks)."""


@hook.command("install")
@click.option("--git", "git_hooks", is_flag=True, help="Install the git hooks (post-commit, post-checkout, post-merge).")
@click.option("--shell", "shell", type=click.Choice(SHELLS), help="Install the prompt hook for this shell.")
@click.option("--rc", type=click.Path(dir_okay=False), help="The rc file to edit (default ~/.bashrc or ~/.zshrc).")
@click.argument("path", required=False, type=click.Path(file_okay=False))
@json_option
@pass_app
def install(app: App, git_hooks: bool, shell: str | None, rc: str | None, path: str | None) -> None:
    """Record every shell command (exit code, cwd, duration) for history recall; open a new shell after."""
    if not git_hooks and not shell:
        raise click.UsageError("say which hook: --shell bash|zsh (and/or --git)")
    out: dict[str, Any] = {}
    if shell:
        out["shell"] = install_shell_hook(shell, rc_path(shell, rc), app.dirs.spool)
    if git_hooks:
        out["git"] = install_git_hooks(app, path)

    def render(r: dict[str, Any]) -> str:
        lines = []
        if "shell" in r:
            s = r["shell"]
            lines.append(f"{s['shell']} hook {s['action']} in {s['rc']} (spool {s['spool']})")
            if s["action"] != "unchanged":
                lines.append(f"  start a new shell or run: source {s['rc']}")
        if "git" in r:
            lines += render_git_hooks(r["git"])
        return "\n".join(lines)

    app.emit(out, render)


def render_git_hooks(g: dict[str, Any]) -> list[str]:
    """`git hooks in REPO/.git/hooks:` then one aligned line per hook and what was done to it."""
    from ..style import fields, state

    lines = [f"git hooks in {g.get('hooksDir') or g.get('repo')}:"]
    lines += fields((name, state(str(action))) for name, action in (g.get("hooks") or {}).items())
    return lines


@hook.command("remove")
@click.option("--git", "git_hooks", is_flag=True, help="Remove the git hooks.")
@click.option("--shell", "shell", type=click.Choice(SHELLS), help="Remove the prompt hook of this shell.")
@click.option("--rc", type=click.Path(dir_okay=False), help="The rc file to edit (default ~/.bashrc or ~/.zshrc).")
@click.argument("path", required=False, type=click.Path(file_okay=False))
@json_option
@pass_app
def remove(app: App, git_hooks: bool, shell: str | None, rc: str | None, path: str | None) -> None:
    """Delete exactly the block `install` wrote."""
    if not git_hooks and not shell:
        raise click.UsageError("say which hook: --shell bash|zsh (and/or --git)")
    out: dict[str, Any] = {}
    if shell:
        out["shell"] = remove_shell_hook(shell, rc_path(shell, rc))
    if git_hooks:
        out["git"] = remove_git_hooks(app, path)
    def render_removed(r: dict[str, Any]) -> str:
        lines = [f"{r['shell']['shell']} hook: {r['shell']['action']} ({r['shell']['rc']})"] if "shell" in r else []
        if "git" in r:
            lines += render_git_hooks(r["git"])
        return "\n".join(lines)

    app.emit(out, render_removed)


@hook.command("status")
@click.option("--rc", type=click.Path(dir_okay=False), help="Check this rc file instead of the default.")
@json_option
@pass_app
def status(app: App, rc: str | None) -> None:
    """Which prompt hooks are installed, and how much the spool holds for the daemon to ingest."""
    spool = app.dirs.spool
    shells = []
    for shell in SHELLS:
        path = rc_path(shell, rc)
        text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        shells.append({"shell": shell, "rc": str(path), "installed": bool(_block_re(shell).search(text))})
    pending = spool.stat().st_size if spool.exists() else 0
    from .. import githooks

    out = {"shells": shells, "spool": str(spool), "pendingBytes": pending, "git": githooks.status(Path(app.repo))}

    def render(r: dict[str, Any]) -> str:
        lines = [f"{s['shell']:5} {'installed' if s['installed'] else 'not installed':14} {s['rc']}" for s in r["shells"]]
        lines.append(f"spool {r['spool']} ({r['pendingBytes']} bytes waiting)")
        git = r.get("git") or {}
        for name, state in (git.get("hooks") or {}).items():
            lines.append(f"git   {name:14} {state}")
        if git.get("error"):
            lines.append(f"git   {git['error']}")
        return "\n".join(lines)

    app.emit(out, render)
