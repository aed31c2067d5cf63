"""What a request can make the daemon read: the shell-history scrape (`scan shell`, `history.sync` with `scrape`)
and `claudeDir` take paths; only regular files (no FIFO, device, symlink out, pseudo-filesystem) from where shell
history lives or under a registered repository are read, each refusal is `bad_request` with the reason, and a
FIFO blocks no thread (readers and the writer keep answering)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nexusd.errors import NexusError
from tests.helpers import DaemonProcess, make_repo

USER = "alice"


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[DaemonProcess, Path, Path]]:
    home = tmp_path / "home"
    home.mkdir()
    repo = make_repo(tmp_path / "repo", {"pkg/mod.py": "def main():\n    return 1\n"}, commit=True)
    d = DaemonProcess(env={"HOME": str(home)}).start()
    try:
        with d.client() as c:
            c.request("index", {"repo": str(repo), "user": USER}, timeout=120)
        yield d, home, repo
    finally:
        d.cleanup()


def _refused(c: Any, op: str, args: dict[str, Any], timeout: float = 10) -> str:
    t0 = time.monotonic()
    with pytest.raises(NexusError) as info:
        c.request(op, args, timeout=timeout)
    assert time.monotonic() - t0 < 5, f"{op} took {time.monotonic() - t0:.1f}s to refuse"
    assert info.value.code == "bad_request", (op, args, info.value.code, info.value.message)
    return info.value.message


def _scrape_calls(repo: Path, path: str) -> list[tuple[str, dict[str, Any]]]:
    scrape = [{"path": path, "shell": "bash"}]
    return [
        ("scan", {"kind": "shell", "repo": str(repo), "user": USER, "scrape": scrape}),
        ("history.sync", {"repo": str(repo), "user": USER, "git": False, "docs": False, "scrape": scrape}),
    ]


def test_scrape_reads_a_real_history_file(env: tuple[DaemonProcess, Path, Path]) -> None:
    """The guard lets the real thing through: ~/.bash_history is scraped."""
    d, home, repo = env
    (home / ".bash_history").write_text("echo scraped-marker-one\nls -la\n")
    with d.client() as c:
        for op, args in _scrape_calls(repo, str(home / ".bash_history")):
            r = c.request(op, args, timeout=60)
            if op == "scan":
                assert any("scraped-marker-one" in i["command"] for i in r["scraped"])
            else:
                assert r["shell"]["scraped"] >= 2


@pytest.mark.parametrize(
    "target, why",
    [
        ("/dev/zero", "not a shell history file"),
        ("/proc/self/environ", "not a shell history file"),
        ("/etc/shadow", "not a shell history file"),
        ("/etc/passwd", "not a shell history file"),
    ],
)
def test_scrape_refuses_system_files(env: tuple[DaemonProcess, Path, Path], target: str, why: str) -> None:
    d, _home, repo = env
    with d.client() as c:
        for op, args in _scrape_calls(repo, target):
            assert why in _refused(c, op, args)
        assert c.request("status", {"repo": str(repo), "user": USER})  # still serving
        # Nothing stored: the shell-command table is made at its first row (schema.OPTIONAL_TABLES).
        tables = c.request("debug.cypher", {"query": "CALL SHOW_TABLES() RETURN name"})["rows"]
        assert ["Commit"] in tables and ["ShellCommand"] not in tables


def test_scrape_refuses_links_out_of_place_and_pseudo_files(env: tuple[DaemonProcess, Path, Path]) -> None:
    d, home, repo = env
    (home / ".bash_history").symlink_to("/etc/shadow")  # the right name, leading elsewhere
    (home / ".zsh_history").symlink_to("/dev/zero")
    (repo / "hist_link").symlink_to("/proc/self/environ")  # under a registered repository, leading out
    (home / "notes.txt").write_text("not a history file\n")  # in the home, but not shell history
    (home / ".dev_history").symlink_to("/dev/null")
    with d.client() as c:
        for path in (home / ".bash_history", home / ".zsh_history", repo / "hist_link", home / "notes.txt"):
            for op, args in _scrape_calls(repo, str(path)):
                assert "resolves to" in _refused(c, op, args) or path.name == "notes.txt"
        for op, args in _scrape_calls(repo, str(home / ".dev_history")):
            _refused(c, op, args)
        for op, args in _scrape_calls(repo, "relative/.bash_history"):
            assert "absolute" in _refused(c, op, args)
        for op, args in _scrape_calls(repo, str(home / ".bash\x00_history")):
            assert "NUL" in _refused(c, op, args)


def test_a_fifo_is_refused_and_blocks_no_thread(env: tuple[DaemonProcess, Path, Path]) -> None:
    d, home, repo = env
    fifo = home / ".bash_history"
    os.mkfifo(fifo)
    repo_fifo = repo / "shell_history"
    os.mkfifo(repo_fifo)
    errors: list[str] = []

    def scrape(path: Path) -> None:
        try:
            with d.client() as c:
                for op, args in _scrape_calls(repo, str(path)):
                    assert "FIFO" in _refused(c, op, args)
        except BaseException as exc:  # reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=scrape, args=(p,)) for p in (fifo, repo_fifo) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "a scrape of a FIFO is still waiting"
    assert errors == []
    with d.client() as c:  # readers and the writer are free
        t0 = time.monotonic()
        c.request("locate", {"repo": str(repo), "user": USER, "query": "main"}, timeout=5)
        c.request("remember", {"repo": str(repo), "user": USER, "text": "after the fifo"}, timeout=5)
        assert time.monotonic() - t0 < 5


def test_claude_dir_must_be_the_users(env: tuple[DaemonProcess, Path, Path]) -> None:
    d, home, repo = env
    mine = home / ".claude"
    (mine / "projects").mkdir(parents=True)
    base = {"repo": str(repo), "user": USER, "git": False, "docs": False, "shell": False, "transcripts": True}
    with d.client() as c:
        for bad in ("/etc", "/proc", "/dev", "relative/claude", "/tmp"):
            assert "claudeDir" in _refused(c, "history.sync", {**base, "claudeDir": bad})
            assert "claudeDir" in _refused(c, "scan", {"kind": "transcripts", "repo": str(repo), "user": USER, "claudeDir": bad})
        r = c.request("history.sync", {**base, "claudeDir": str(mine)}, timeout=60)
        assert r["transcripts"]["turns"] == 0
