"""Test harness: a real `nexusd` process in a temp NEXUS_HOME, real clients, polling with deadlines."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nexus_client import connect
from nexus_client.connection import Client, socket_alive

from nexusd import paths

REPO_ROOT = Path(__file__).resolve().parent.parent
# 100 KB of comment: twelve modules holding it (1.2 MB) are more than the daemon parses inline (1 MB,
# `indexer.INLINE_MAX_BYTES`), so the parser pool runs them (its worker processes, its per-file time limit).
POOL_PAD = "# padding\n" * 10_000


def pooled_modules(count: int = 12, name: str = "m", fn: str = "f") -> dict[str, str]:
    """`pkg/<name><i>.py` -> a padded module defining `<fn><i>`: a batch the parser pool, not the daemon, parses."""
    return {f"pkg/{name}{i}.py": f"{POOL_PAD}def {fn}{i}():\n    return {i}\n" for i in range(count)}


def dies_with_its_parent(parent: subprocess.Popen[str], child: int, lock: Path, timeout: float = 10.0) -> None:
    """Kill -9 `parent` and assert that its forked process `child` is gone (or a zombie) within `timeout`, and that
    the flock the parent held on `lock` is free (the next daemon can take it)."""
    import fcntl

    parent.send_signal(signal.SIGKILL)
    parent.wait()

    def gone() -> bool:
        try:
            return Path(f"/proc/{child}/stat").read_text().split(") ", 1)[1].startswith("Z")
        except FileNotFoundError:
            return True

    deadline = time.monotonic() + timeout
    while not gone() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gone(), f"forked process {child} outlived its parent"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, interval: float = 0.02, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


class DaemonProcess:
    """`python -m nexusd run` with its own home. Always stopped (or killed) by `stop()`."""

    def __init__(self, home: Path | None = None, env: dict[str, str] | None = None):
        self.home = home or Path(tempfile.mkdtemp(prefix="nx-"))
        self.env = {**os.environ, "NEXUS_HOME": str(self.home), "NEXUS_DEBUG_OPS": "1", **(env or {})}
        self.env.pop("NEXUS_USER", None)
        self.dirs = paths.dirs({"NEXUS_HOME": str(self.home)})
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, wait: bool = True) -> DaemonProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nexusd", "run"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        def ready() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                out, err = self.proc.communicate()
                raise AssertionError(f"nexusd exited with {self.proc.returncode}: {err.decode(errors='replace')}")
            return socket_alive(str(self.dirs.socket))

        wait_for(ready, timeout, what="nexusd socket")

    def client(self, **kwargs: Any) -> Client:
        return connect(self.dirs, **kwargs)

    def cli(self, *args: str, cwd: str | Path | None = None, input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "nexus_client.cli_main", *args],
            env=self.env,
            cwd=str(cwd) if cwd else None,
            capture_output=True,
            text=True,
            input=input,
            timeout=timeout,
        )

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 30.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stdout:
            self.proc.stdout.close()
        if self.proc.stderr:
            self.proc.stderr.close()
        return self.proc.returncode

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)


def lose_database(db: Path) -> None:
    """Delete a daemon's database file with its WAL and shadow (directories too), as a lost disk or a
    set-aside leaves it: the next start builds a new one and replays memory from the journal."""
    for suffix in ("", ".wal", ".shadow"):
        p = Path(str(db) + suffix)
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    out = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return out.stdout


def make_repo(root: Path, files: dict[str, str], commit: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial")
    return root
