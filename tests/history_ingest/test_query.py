"""The unified `query`: the commit, the failed commands and the docs section that answer a question, inside a
token budget, competing with memory; the CLI; `--all-repos`."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import pytest

from nexusd.errors import Forbidden
from tests.helpers import DaemonProcess

from .conftest import Factory, commit, register

DOC = """# Operations

## Deploy
Run the deploy script from the release branch.

## Retry budget
The client retries each upstream call up to the retry budget (5 attempts since the March incident), because
the upstream gateway drops connections during failover.
"""


def seed(daemon: DaemonProcess, repo: Path) -> None:
    commit(repo, "feat: client with retries", {"client.py": "RETRY_BUDGET = 3\n\n\ndef call():\n    pass\n"})
    commit(repo, "fix: raise the retry budget to 5\n\nThe gateway drops connections for ~2s during failover;\n"
                 "3 attempts were not enough and requests failed.", {"client.py": "RETRY_BUDGET = 5\n\n\ndef call():\n    pass\n"})  # fmt: skip
    commit(repo, "docs: operations guide", {"docs/operations.md": DOC})
    commit(repo, "chore: bump version", {"VERSION": "1.2.3\n"})
    with open(daemon.dirs.spool, "a") as fh:
        fh.write(f"N1\tbash\t1700000000\t1700000009\t1\t{repo}\tpytest tests/test_client.py -k retry_budget\n")
        fh.write(f"N1\tbash\t1700000010\t1700000011\t0\t{repo}\tpytest tests/test_client.py -k retry_budget\n")
        fh.write(f"N1\tbash\t1700000012\t1700000013\t0\t{repo}\tgit status\n")


def test_query_answers_with_commit_failed_command_and_doc(daemon: DaemonProcess, new_repo: Factory) -> None:
    repo = new_repo()
    seed(daemon, repo)
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo)})
        out = daemon.cli("-C", str(repo), "query", "why was the retry budget raised", "--json")
        assert out.returncode == 0, out.stderr
        r = json.loads(out.stdout)
        top = r["results"][:6]
        kinds = [x["kind"] for x in top]
        assert {"commit", "shell", "doc"} <= set(kinds)
        assert any(x["kind"] == "commit" and "raise the retry budget" in x["text"] for x in r["results"][:3])
        shell = [x for x in top if x["kind"] == "shell"]
        assert shell[0]["exitCode"] == 1  # the failed run ranks above the successful one
        assert any(x["kind"] == "doc" and x["headingPath"] == "Operations > Retry budget" for x in top)
        assert r["cut"]["tokensUsed"] <= r["budget"]
        text = daemon.cli("-C", str(repo), "query", "why was the retry budget raised")
        assert "raise the retry budget to 5" in text.stdout and "tokens" in text.stdout


def test_budget_cuts_and_reports(daemon: DaemonProcess, new_repo: Factory) -> None:
    repo = new_repo()
    seed(daemon, repo)
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo)})
        r = c.request("query", {"repo": str(repo), "text": "retry budget", "budget": 60})
        assert r["cut"]["tokensUsed"] <= 60
        assert r["cut"]["budget"] > 0 and r["cut"]["budgetTokens"] > 0
        assert len(r["results"]) >= 1


def test_memory_and_history_compete(daemon: DaemonProcess, new_repo: Factory) -> None:
    repo = new_repo()
    seed(daemon, repo)
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo)})
        c.request("remember", {"repo": str(repo), "user": getpass.getuser(),
                               "text": "The retry budget was raised because the gateway failover drops connections."})  # fmt: skip
        r = c.request("query", {"repo": str(repo), "text": "why was the retry budget raised", "user": getpass.getuser()})
        kinds = [x["kind"] for x in r["results"]]
        assert "fact" in kinds and "commit" in kinds
        # Another user is refused the repository itself (its owner is checked on every request).
        with pytest.raises(Forbidden):
            c.request("query", {"repo": str(repo), "text": "why was the retry budget raised", "user": "someone-else"})


def test_all_repos_fuses_per_repository(daemon: DaemonProcess, new_repo: Factory) -> None:
    a = new_repo("alpha")
    b = new_repo("beta")
    commit(a, "fix: raise the retry budget in alpha", {"a.py": "R = 5\n"})
    commit(b, "fix: retry budget for beta's uploader", {"b.py": "R = 7\n"})
    with daemon.client() as c:
        for repo in (a, b):
            register(c, repo)
            c.request("history.sync", {"repo": str(repo)})
        single = c.request("query", {"repo": str(a), "text": "retry budget"})
        assert {x["repo"] for x in single["results"]} == {str(a)}
        both = c.request("query", {"text": "retry budget", "allRepos": True})
        assert {x["repo"] for x in both["results"][:2]} == {str(a), str(b)}
