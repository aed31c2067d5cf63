"""`nexus status` starts without click (client/fast.py): the same output and exit codes as the click command.

Each case runs the console entry point (`nexus_client.cli:run`, which takes the fast path for these) and the
click group alone (`nexus_client.cli_group:run`) with the same arguments against the same daemon, and compares
stdout, stderr and the exit code. The daemon's uptime, request count and "ago" times move between two runs;
only those are masked.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import Indexed
from tests.helpers import DaemonProcess

FAST = "import sys; sys.argv[0] = 'nexus'; from nexus_client.cli import run; run()"
CLICK = "import sys; sys.argv[0] = 'nexus'; from nexus_client.cli_group import run; run()"
SHOW_CLICK = "import atexit, sys; atexit.register(lambda: print('click' in sys.modules, file=sys.stderr)); "
VOLATILE = [
    (re.compile(r"pid \d+, up [^,]+, \d+ requests"), "pid P, up U, N requests"),
    (re.compile(r"just now|in \d+ \w+|\d+ (s|min|h|days) ago"), "AGO"),
    # (`reopens`: the store reopens at its idle checkpoint after a cold index, which may fall between the two calls)
    # (`anonAfterOpenBytes` is null until the first checkpoint after the database opened, which may run between)
    (re.compile(r'"(uptimeS|requests|pid|freeBytes|fileBytes|reopens|anonAfterOpenBytes|[a-zA-Z]*At|at)": (?:[0-9.e+-]+|null)'),
     r'"\1": X'),
    (re.compile(r'"reopenReasons": \{[^}]*\}'), '"reopenReasons": X'),  # (with `reopens`, and what it measured)
    # (the last checkpoints' costs: one may run between the two calls)
    (re.compile(r'"checkpointMs": \[(?:[^\[\]]|\[[^\[\]]*\])*\]'), '"checkpointMs": X'),
]


def _mask(text: str) -> str:
    for pattern, repl in VOLATILE:
        text = pattern.sub(repl, text)
    return text


def _run(code: str, args: tuple[str, ...], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def _both(indexed: Indexed, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[str, str]:
    full_env = {**indexed.daemon.env, **(env or {})}
    where = cwd or indexed.repo
    fast = _run(FAST, args, full_env, where)
    slow = _run(CLICK, args, full_env, where)
    assert (fast.returncode, _mask(fast.stdout), _mask(fast.stderr)) == (
        slow.returncode, _mask(slow.stdout), _mask(slow.stderr)), args  # fmt: skip
    return fast.stdout, fast.stderr


CASES = [
    ("status",),
    ("status", "--json"),
    ("--json", "status"),
    ("status", "--all"),
    ("status", "--all", "--json"),
    ("--user", "someone-else", "status"),
    ("--user=someone-else", "status", "--json"),
    ("--no-autostart", "status"),
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c) for c in CASES])
def test_status_reads_the_same_through_both_paths(indexed: Indexed, args: tuple[str, ...]) -> None:
    out, _ = _both(indexed, *args)
    assert "nexusd" in out or '"daemon"' in out


def test_status_of_a_path_a_directory_and_elsewhere(indexed: Indexed, tmp_path: Path) -> None:
    out, _ = _both(indexed, "status", str(indexed.repo / "pkg"))
    assert indexed.repo.name in out
    out, _ = _both(indexed, "-C", str(indexed.repo), "status")
    assert indexed.repo.name in out
    out, _ = _both(indexed, "status", str(tmp_path))  # not registered: says so
    assert "is not registered" in out
    out, _ = _both(indexed, "-C", str(tmp_path), "status", "--json")
    assert '"repos": []' in out
    _both(indexed, "status", cwd=tmp_path)  # in no registered repository: every repository


def test_what_the_fast_path_leaves_to_click(indexed: Indexed, tmp_path: Path) -> None:
    """--help, a file as PATH (click refuses it, exit 2), two paths, an unknown option: click's answers."""
    afile = tmp_path / "a.txt"
    afile.write_text("x")
    for args in (("status", "--help"), ("--help",), ("status", str(afile)), ("status", "a", "b"),
                 ("status", "--bogus"), ("--version",), ("-h", "status")):  # fmt: skip
        _both(indexed, *args)
    env = {**indexed.daemon.env}
    help_fast = _run(SHOW_CLICK + FAST, ("status", "--help"), env, indexed.repo)
    assert help_fast.returncode == 0 and "Usage: nexus status" in help_fast.stdout
    refused = _run(FAST, ("status", str(afile)), env, indexed.repo)
    assert refused.returncode == 2 and "is a file" in refused.stderr


def test_the_fast_path_does_not_import_click(indexed: Indexed) -> None:
    env = {**indexed.daemon.env}
    fast = _run(SHOW_CLICK + FAST, ("status",), env, indexed.repo)
    assert fast.returncode == 0 and fast.stderr.strip() == "False", fast.stderr
    other = _run(SHOW_CLICK + FAST, ("repos",), env, indexed.repo)
    assert other.returncode == 0 and other.stderr.strip().splitlines()[-1] == "True"


def test_a_daemon_that_is_down_fails_alike(tmp_path: Path) -> None:
    """No daemon and --no-autostart: the same message on stderr and the same exit code, as text and JSON."""
    d = DaemonProcess(home=tmp_path / "home")
    try:
        for args in (("--no-autostart", "status"), ("--no-autostart", "status", "--json")):
            fast = _run(FAST, args, d.env, tmp_path)
            slow = _run(CLICK, args, d.env, tmp_path)
            assert fast.returncode != 0
            assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)
    finally:
        d.cleanup()


def _in_a_terminal(code: str, args: tuple[str, ...], env: dict[str, str], cwd: Path) -> str:
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=slave, stderr=slave, env=env, cwd=cwd)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(60)
    os.close(master)
    return b"".join(chunks).decode(errors="replace")


def test_colours_on_a_terminal_are_the_same(indexed: Indexed) -> None:
    env = {**indexed.daemon.env, "NO_COLOR": ""}
    fast = _in_a_terminal(FAST, ("status",), env, indexed.repo)
    slow = _in_a_terminal(CLICK, ("status",), env, indexed.repo)
    assert "\x1b[" in fast and _mask(fast) == _mask(slow)


def test_colours_are_the_codes_click_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """style.py writes ANSI codes itself (no click import); they are click.style's for the same options."""
    import click
    from nexus_client import style

    monkeypatch.setattr(style, "colour_on", lambda: True)
    cases = [(style.ok, {"fg": "green"}), (style.warn, {"fg": "yellow"}), (style.bad, {"fg": "red", "bold": True}),
             (style.emphasis, {"bold": True}), (style.dim, {"dim": True})]  # fmt: skip
    for fn, kw in cases:
        assert fn("text") == click.style("text", **kw), (fn.__name__, fn("text"))
    monkeypatch.setattr(style, "colour_on", lambda: False)
    assert style.bad("text") == "text"
