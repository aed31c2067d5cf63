"""What a person reads: validation and exit codes, dotted names, impact/paths options, overload candidates,
rendering without dicts or epoch floats, colour only on a terminal without NO_COLOR."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys

import pytest
from nexus_client.progress import ProgressBar

from .conftest import Indexed

ANSI = re.compile(r"\x1b\[[0-9;]*m")
DICT_REPR = re.compile(r"\{'|': ")
EPOCH = re.compile(r"\b1[6-9]\d{8}\.\d+")


def test_validation_and_exit_codes(indexed: Indexed) -> None:
    out = indexed.cli("locate", "nothing_is_called_this")
    assert out.returncode == 4, (out.returncode, out.stdout, out.stderr)
    assert "no symbol matches" in out.stdout
    out = indexed.cli("locate", "helper", "--kind", "bogus")
    assert out.returncode == 2 and "bogus" in out.stderr and "function" in out.stderr and "method" in out.stderr
    out = indexed.cli("locate", "helper", "--kind", "function", "--json")
    assert out.returncode == 0 and {r["kind"] for r in json.loads(out.stdout)["results"]} == {"function"}
    for cmd in (["context", "helper", "--depth", "0"], ["impact", "helper", "--depth", "0"],
                ["neighbors", "helper", "--depth", "0"], ["paths", "main", "helper", "--max-depth", "0"]):  # fmt: skip
        out = indexed.cli(*cmd)
        assert out.returncode == 2 and "--" in out.stderr and "range" in out.stderr, (cmd, out.stderr)
    out = indexed.cli("impact", "helper", "--depth", "1", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["depth"] == 1
    out = indexed.cli("show", "no_such_symbol_anywhere")
    assert out.returncode == 4
    out = indexed.cli("show", "run")  # Engine.run only: unique
    assert out.returncode == 0


def test_argument_errors_point_at_a_help_that_exists(indexed: Indexed) -> None:
    from nexusd.errors import BadRequest

    client = indexed.daemon.client()
    try:
        client.request("impact", {"repo": str(indexed.repo), "symbol": "helper", "depth": 0})
        raise AssertionError("depth 0 was accepted")
    except BadRequest as exc:
        hint = exc.hint or ""
    finally:
        client.close()
    assert "nexus help COMMAND" in hint
    out = indexed.cli("help", "impact")
    assert out.returncode == 0 and "--no-tests" in out.stdout
    assert out.stdout == indexed.cli("impact", "--help").stdout
    assert indexed.cli("help").returncode == 0 and "impact" in indexed.cli("help").stdout
    out = indexed.cli("help", "daemon", "install")
    assert out.returncode == 0 and "--no-enable" in out.stdout
    assert indexed.cli("help", "no-such-command").returncode == 2


def test_dotted_and_module_names(indexed: Indexed) -> None:
    want = {
        "pkg.core.helper": "py:function:pkg/core.py:helper",
        "pkg.core.Engine.run": "py:method:pkg/core.py:Engine.run",
        "core.Engine.stop": "py:method:pkg/core.py:Engine.stop",
        "pkg.core:Engine.run": "py:method:pkg/core.py:Engine.run",
        "pkg.app:main": "py:function:pkg/app.py:main",
        "pkg.app": "py:module:pkg/app.py:<module>",
        "pkg/core.py:Engine.run": "py:method:pkg/core.py:Engine.run",
    }
    for arg, key in want.items():
        out = indexed.cli("show", arg, "--json")
        assert out.returncode == 0, (arg, out.stderr)
        assert json.loads(out.stdout)["node"]["key"] == key, arg
    out = indexed.cli("impact", "pkg.core.helper", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["target"]["key"] == want["pkg.core.helper"]
    assert indexed.cli("show", "pkg.nowhere.helper").returncode == 4
    assert indexed.cli("show", "pkg.core.Engine.fly").returncode == 4


def test_impact_test_filters_and_grouping(indexed: Indexed) -> None:
    every = json.loads(indexed.cli("impact", "helper", "--json").stdout)
    assert every["testCallers"] >= 1
    no_tests = json.loads(indexed.cli("impact", "helper", "--no-tests", "--json").stdout)
    only = json.loads(indexed.cli("impact", "helper", "--tests-only", "--json").stdout)
    assert not any(c.get("test") for c in no_tests["callers"]) and all(c.get("test") for c in only["callers"])
    assert no_tests["total"] + only["total"] == every["total"] == no_tests["allCallers"]
    assert only["total"] == every["testCallers"]
    assert indexed.cli("impact", "helper", "--no-tests", "--tests-only").returncode == 2
    text = indexed.cli("impact", "helper").stdout.splitlines()
    headers = [ln for ln in text if re.match(r"^  \S+\.py( \[test\])?$", ln)]
    files = {c["path"] for c in every["callers"]}
    assert sorted(h.strip().split()[0] for h in headers) == sorted(files)  # one heading per file


def test_paths_direction_and_order(indexed: Indexed) -> None:
    both = json.loads(indexed.cli("paths", "main", "helper", "--max-paths", "10", "--json").stdout)
    assert both["paths"]
    for a, b in zip(both["paths"], both["paths"][1:], strict=False):
        assert (a["length"], -a["confidence"]) <= (b["length"], -b["confidence"])
    callees = json.loads(indexed.cli("paths", "main", "helper", "--direction", "callees", "--json").stdout)
    assert callees["paths"] and all(h["direction"] == "out" for p in callees["paths"] for h in p["hops"])
    callers = json.loads(indexed.cli("paths", "main", "helper", "--direction", "callers", "--json").stdout)
    assert callers["paths"] == [] and "TO calling toward FROM" in callers["none"]
    back = json.loads(indexed.cli("paths", "helper", "main", "--direction", "callers", "--json").stdout)
    assert back["paths"] and all(h["direction"] == "in" for p in back["paths"] for h in p["hops"])


def test_overload_candidates_show_lines_and_stubs(indexed: Indexed) -> None:
    out = indexed.cli("show", "parse", "--json")
    if out.returncode == 0:  # the parser folded the overloads into one symbol: nothing to disambiguate
        return
    assert out.returncode == 5
    cands = json.loads(out.stdout)["error"]["data"]["candidates"]
    overloads = [c for c in cands if c["path"] == "pkg/core.py" and c["name"] == "parse"]
    assert len(overloads) >= 2
    assert all(isinstance(c["line"], int) and c["endLine"] >= c["line"] for c in overloads)
    body = max(overloads, key=lambda c: c["endLine"] - c["line"])
    assert not body.get("stub") and all(c.get("stub") for c in overloads if c is not body)
    text = indexed.cli("show", "parse").stderr
    assert re.search(r"pkg/core\.py:\d+-\d+\s+function \[stub\]", text), text
    assert re.search(rf"pkg/core\.py:{body['line']}-{body['endLine']}\s+function$", text, re.M), text


def test_human_rendering(indexed: Indexed) -> None:
    for args in (["status"], ["show", "--path", "pkg/core.py"], ["hook", "install", "--git"], ["repos"],
                 ["query", "helper"], ["daemon", "status"]):  # fmt: skip
        out = indexed.cli(*args)
        assert out.returncode == 0, (args, out.stderr)
        assert not DICT_REPR.search(out.stdout) and not EPOCH.search(out.stdout), (args, out.stdout)
        assert not ANSI.search(out.stdout), args  # not a terminal: no colour
    status = indexed.cli("status").stdout
    assert re.search(r"last build\s+ok \(cold, \d+ parsed\), (just now|\d+ (s|min) ago)", status), status
    hooks = indexed.cli("hook", "install", "--git").stdout.splitlines()
    assert hooks[0].startswith("git hooks in ") and re.match(r"^  post-commit\s{2,}\w+", hooks[1])
    footer = indexed.cli("query", "helper").stdout.splitlines()[-1]
    assert re.match(r"^-- \d+ of \d+ candidates shown, \d+ of \d+ tokens", footer), footer


def _in_a_terminal(indexed: Indexed, *args: str, env: dict[str, str]) -> str:
    master, slave = pty.openpty()
    full_env = {**indexed.daemon.env, **env}
    proc = subprocess.Popen([sys.executable, "-m", "nexus_client.cli_main", *args], stdout=slave, stderr=slave,
                            env=full_env, cwd=indexed.repo)  # fmt: skip
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


def test_colour_on_a_terminal_and_never_with_no_color(indexed: Indexed) -> None:
    env = {k: "" for k in ("NO_COLOR",)}
    coloured = _in_a_terminal(indexed, "status", env=env)
    assert ANSI.search(coloured), coloured
    plain = _in_a_terminal(indexed, "status", env={"NO_COLOR": "1"})
    assert "availability" in plain and not ANSI.search(plain), plain
    as_json = _in_a_terminal(indexed, "status", "--json", env=env)
    assert not ANSI.search(as_json) and json.loads(as_json)["repos"]


def test_progress_bar_ends_at_100_percent_even_without_the_last_frame() -> None:
    bar = ProgressBar("indexing")
    with bar:
        for done in (1, 5, 9):  # the daemon's throttle dropped the frame saying 10 of 10
            bar.update({"phase": "parse", "done": done, "total": 10})
    assert bar.percent == 100.0
    failed = ProgressBar("indexing")
    try:
        with failed:
            failed.update({"phase": "parse", "done": 3, "total": 10})
            raise RuntimeError("the request failed")
    except RuntimeError:
        pass
    assert failed.percent == 30.0  # a failure is not drawn as done


def test_heartbeats_draw_one_line_that_says_the_step_still_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """A long silent step (the daemon's heartbeat frames) is one line rewritten in place below the finished
    bar, naming the step and how long the request has run; a bar of that very step still moving wins."""
    bar = ProgressBar("indexing")
    with bar:
        bar.update({"phase": "resolve", "done": 4, "total": 10})
        bar.update({"phase": "resolve", "heartbeat": True, "seconds": 11})  # its own bar says enough
        assert "still running" not in capsys.readouterr().err
        bar.update({"phase": "write", "heartbeat": True, "seconds": 12})
        bar.update({"phase": "write", "heartbeat": True, "seconds": 22})
    err = capsys.readouterr().err
    assert (
        "indexing (write): still running, 12 s" in err and "indexing (write): still running, 22 s" in err
    ), err
    assert err.count("\r") >= 2 and err.endswith("\n"), repr(err)
    assert bar.percent == 100.0  # the resolve bar was drawn complete when the write began


def test_completion_scripts(indexed: Indexed) -> None:
    for shell in ("bash", "zsh", "fish"):
        out = indexed.cli("completion", shell)
        assert out.returncode == 0 and "_NEXUS_COMPLETE" in out.stdout
    env = {**indexed.daemon.env, "_NEXUS_COMPLETE": "bash_complete", "COMP_WORDS": "nexus imp", "COMP_CWORD": "1"}
    out = subprocess.run([sys.executable, "-m", "nexus_client.cli_main"], env=env, capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert "impact" in out.stdout and "imports" in out.stdout
