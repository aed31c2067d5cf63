"""Failure -> fix through a real daemon: a failed command shows the commit that changed the file it names and the
same command passing later; an unrelated commit, another command, or a command that never passed again do not
count; an interrupted command is not a failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess

from .conftest import Factory, commit, register

T0 = 1_800_000_000


def spool(daemon: DaemonProcess, repo: Path, rows: list[tuple[int, int, str, str]]) -> None:
    """(start, exit code, cwd relative to the repository, command) rows, as the shell hook writes them."""
    daemon.dirs.spool.parent.mkdir(parents=True, exist_ok=True)
    with open(daemon.dirs.spool, "a") as fh:
        for start, code, cwd, text in rows:
            fh.write(f"N1\tbash\t{start}\t{start + 3}\t{code}\t{repo / cwd if cwd else repo}\t{text}\n")


def shell_results(c: Any, repo: Path, text: str) -> list[dict[str, Any]]:
    r = c.request("query", {"repo": str(repo), "text": text, "kinds": ["shell"], "limit": 20})
    return list(r["results"])


def by_command(results: list[dict[str, Any]], command: str, code: int) -> dict[str, Any]:
    return next(r for r in results if r["command"] == command and r["exitCode"] == code)


def test_a_failed_command_links_to_the_fixing_commit_and_the_later_success(
    daemon: DaemonProcess, new_repo: Factory
) -> None:
    repo = new_repo(files={"src/cache.py": "TTL = 1\n", "tests/test_cache.py": "def test_ttl():\n    pass\n",
                           "README.md": "# r\n"})  # fmt: skip
    commit(repo, "docs: readme words", {"README.md": "# r\nwords\n"}, T0 + 50)  # after the failure, other file
    fix = commit(repo, "fix: flaky ttl test waits for the clock", {"tests/test_cache.py": "def test_ttl():\n    assert 1\n"},
                 T0 + 100)  # fmt: skip
    commit(repo, "feat: later unrelated", {"src/cache.py": "TTL = 2\n"}, T0 + 400)
    flaky = "pytest tests/test_cache.py::test_ttl"
    spool(daemon, repo, [
        (T0, 1, "", flaky),
        (T0 + 200, 0, "", "pytest   tests/test_cache.py::test_ttl"),  # whitespace differs: the same command
        (T0 + 10, 2, "src", "python ../tests/test_cache.py"),  # relative to its cwd; never passes again
        (T0 + 20, 1, "", "make lint"),  # names no file; passes later, one commit in between
        (T0 + 300, 0, "", "make lint"),
        (T0 + 30, 1, "", "make docs"),  # names no file, never passes again: no guess
        (T0 + 40, 130, "", "pytest tests/test_cache.py::test_ttl"),  # interrupted: not a failure
    ])  # fmt: skip
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo), "docs": False})
        results = shell_results(c, repo, "flaky test_cache ttl pytest failed")
        failed = by_command(results, flaky, 1)
        assert failed["fix"]["commit"]["sha"] == fix
        assert failed["fix"]["commit"]["files"] == ["tests/test_cache.py"]
        assert failed["fix"]["command"]["command"] == "pytest   tests/test_cache.py::test_ttl"
        assert failed["fix"]["command"]["at"] == T0 + 200
        relative = by_command(results, "python ../tests/test_cache.py", 2)
        assert relative["fix"]["commit"]["sha"] == fix and relative["fix"]["command"] is None
        # successes and interrupted runs carry no fix (at most two runs of one command are shown)
        assert [r for r in results if r["exitCode"] in (0, 130) and "fix" in r] == []
        assert any(r["exitCode"] in (0, 130) for r in results)
        lint = shell_results(c, repo, "make lint docs")
        failed_lint = by_command(lint, "make lint", 1)
        assert failed_lint["fix"]["command"]["at"] == T0 + 300
        assert failed_lint["fix"]["commit"]["subject"] == "docs: readme words"  # the first commit in between
        assert "fix" not in by_command(lint, "make docs", 1)
    # what a person reads
    out = daemon.cli("-C", str(repo), "query", "flaky test_cache ttl pytest failed", "--kind", "shell")
    assert out.returncode == 0, out.stderr
    assert f"fixed by commit {fix[:10]}: fix: flaky ttl test waits for the clock" in out.stdout
    data = json.loads(daemon.cli("-C", str(repo), "query", "flaky ttl", "--kind", "shell", "--json").stdout)
    assert any(r.get("fix") for r in data["results"])
