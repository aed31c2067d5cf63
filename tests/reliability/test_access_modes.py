"""Everything under the home is private: files 0600, directories 0700, whatever umask the daemon, the CLI, the
shell hook or the git hooks run with; files an earlier version (or a stderr redirect) left readable are made
private at start."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.helpers import DaemonProcess, make_repo, wait_for


def _open_modes(home: Path) -> list[str]:
    bad = []
    for dirpath, dirnames, filenames in os.walk(home):
        for name in [*dirnames, *filenames, "."]:
            path = Path(dirpath, name)
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                continue
            if st.st_mode & 0o077:
                bad.append(f"{path.relative_to(home)} {stat.S_IMODE(st.st_mode):04o}")
    return sorted(bad)


def test_everything_under_the_home_is_private(tmp_path: Path) -> None:
    home = tmp_path / "nxhome"
    home.mkdir(mode=0o755)
    leftover = home / "daemon.stderr"  # e.g. a service manager's redirect, or a file of an earlier version
    leftover.write_text("old output\n")
    leftover.chmod(0o644)
    (home / "state").mkdir(mode=0o755)
    (home / "state" / "nexusd.log").write_text("old log\n")
    (home / "state" / "nexusd.log").chmod(0o644)
    repo = make_repo(tmp_path / "repo", {"pkg/mod.py": "def main():\n    return 1\n", "README.md": "# Title\n\ntext\n"})
    d = DaemonProcess(home=home, env={"HOME": str(tmp_path)})
    old = os.umask(0o022)  # the daemon, the CLI and the "shell" below inherit a permissive umask
    try:
        started = d.cli("daemon", "start")  # through the CLI's launcher: its start log counts too
        assert started.returncode == 0, started.stderr
        with d.client() as c:
            c.request("index", {"repo": str(repo), "user": "alice"}, timeout=120)
            c.request("remember", {"repo": str(repo), "user": "alice", "text": "a private fact"})
            c.request("history.sync", {"repo": str(repo), "user": "alice"}, timeout=120)
            # the shell hook and the git hooks append to their spools with the shell's umask
            for spool in (d.dirs.spool, d.dirs.hook_spool):
                subprocess.run(["sh", "-c", f"umask 022; printf 'x\\n' >> '{spool}'"], check=True)
            c.request("shell.ingest", {})
            wait_for(lambda: not d.dirs.hook_spool.exists() or d.dirs.hook_spool.stat().st_size == 0, 20, what="hook spool")
            for spool in (d.dirs.spool, d.dirs.hook_spool):  # the next spool is waiting, already private
                subprocess.run(["sh", "-c", f"umask 022; printf 'y\\n' >> '{spool}'"], check=True)
            bad = _open_modes(home)
        stopped = d.cli("daemon", "stop")
        assert stopped.returncode == 0, stopped.stderr
    finally:
        os.umask(old)
        subprocess.run([sys.executable, "-m", "nexus_client.cli_main", "daemon", "stop"], env=d.env, capture_output=True)
        d.cleanup()
    assert bad == []
