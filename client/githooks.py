"""Git hooks that tell the daemon a repository changed: post-commit, post-checkout, post-merge, post-rewrite.

Each hook is a few lines of plain shell. It runs any hook that was there before (moved aside to
`<name>.nexus-orig`, never overwritten) with the same arguments and keeps its exit status, then appends one
line (event, repository root, time) to the daemon's hook spool with a single `printf >>`. No Python starts
(that alone costs ~45 ms of CPU beside git); git never waits for the daemon and never sees output. The
daemon watches the spool, reconciles the repository and reads its new commits; lines written while it is
down are read when it starts. `remove` puts the original hooks back exactly.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from pathlib import Path
from typing import Any

HOOKS = ("post-commit", "post-checkout", "post-merge", "post-rewrite")
MARKER = "# nexus-hook v1"
ORIG_SUFFIX = ".nexus-orig"


def hooks_dir(repo: Path) -> Path:
    """Where git looks for hooks (honours core.hooksPath and worktrees)."""
    out = subprocess.run(
        ["git", "rev-parse", "--git-path", "hooks"], cwd=repo, capture_output=True, text=True, timeout=10
    )
    if out.returncode != 0:
        raise ValueError(f"{repo} is not a git repository: {out.stderr.strip()}")
    path = Path(out.stdout.strip())
    return path if path.is_absolute() else (repo / path)


def script(name: str, spool: Path) -> str:
    target = shlex.quote(str(spool))
    return f"""#!/bin/sh
{MARKER}: installed by `nexus hook install --git`; `nexus hook remove --git` restores what was here.
nexus_status=0
if [ -x "$0{ORIG_SUFFIX}" ]; then
  "$0{ORIG_SUFFIX}" "$@"
  nexus_status=$?
fi
printf '%s\t%s\t%s\n' {name} "$(pwd -P)" "$(date +%s)" >> {target} 2>/dev/null
exit $nexus_status
"""


def _ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(errors="replace")[:400]
    except OSError:
        return False


def install(repo: Path, spool: Path | None = None) -> dict[str, Any]:
    """Install the hooks; they append to `spool` (default: this user's daemon's hook spool)."""
    directory = hooks_dir(repo)
    directory.mkdir(parents=True, exist_ok=True)
    if spool is None:
        from nexusd import paths

        spool = paths.dirs().hook_spool
    spool.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    done: dict[str, str] = {}
    for name in HOOKS:
        path = directory / name
        orig = directory / f"{name}{ORIG_SUFFIX}"
        if path.exists() and not _ours(path):
            if orig.exists():
                raise ValueError(f"both {path} and {orig} exist; move one aside first")
            path.rename(orig)  # chain it: our hook runs it first, with the same arguments
            done[name] = "installed (chaining the existing hook)"
        else:
            done[name] = "updated" if path.exists() else "installed"
        tmp = path.with_suffix(".nexus-tmp")
        tmp.write_text(script(name, spool))
        tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.replace(tmp, path)
    return {"repo": str(repo), "hooksDir": str(directory), "hooks": done}


def remove(repo: Path) -> dict[str, Any]:
    directory = hooks_dir(repo)
    done: dict[str, str] = {}
    for name in HOOKS:
        path = directory / name
        orig = directory / f"{name}{ORIG_SUFFIX}"
        if path.exists() and _ours(path):
            path.unlink()
            if orig.exists():
                orig.rename(path)
                done[name] = "removed (original restored)"
            else:
                done[name] = "removed"
        else:
            done[name] = "not installed"
    return {"repo": str(repo), "hooksDir": str(directory), "hooks": done}


def status(repo: Path) -> dict[str, Any]:
    try:
        directory = hooks_dir(repo)
    except (ValueError, OSError) as exc:
        return {"repo": str(repo), "error": str(exc), "hooks": {}}
    out: dict[str, str] = {}
    for name in HOOKS:
        path = directory / name
        if path.exists() and _ours(path):
            chained = (directory / f"{name}{ORIG_SUFFIX}").exists()
            out[name] = "installed, chaining the previous hook" if chained else "installed"
        elif path.exists():
            out[name] = "another hook (not nexus)"
        else:
            out[name] = "absent"
    return {"repo": str(repo), "hooksDir": str(directory), "hooks": out}
