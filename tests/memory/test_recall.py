"""Recall: identifier-aware full text, ranking, the token budget, usage counts as they stand after the call."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import DaemonProcess, wait_for
from tests.memory.conftest import register


def test_recall_finds_code_words_and_split_identifiers(daemon: DaemonProcess, repo: Path) -> None:
    scope = {"user": "alice", "repo": str(repo)}
    with daemon.client() as c:
        register(c, repo, "alice")
        c.request("remember", {**scope, "text": "normalizeParams drops keys whose value is None"})
        c.request("remember", {**scope, "text": "the get handler must not set the name field"})
        c.request("remember", {**scope, "text": "HTTPServer restarts are slow on CI"})
        c.request("remember", {**scope, "text": "unrelated: the logo is blue"})

        def texts(query: str) -> list[str]:
            return [i["text"] for i in c.request("recall", {**scope, "query": query})["items"]]

        assert texts("normalize params")[0].startswith("normalizeParams")
        assert texts("normalizeParams")[0].startswith("normalizeParams")
        assert texts("get")[0].startswith("the get handler")  # FTS stopwords would eat this one
        assert texts("http server")[0].startswith("HTTPServer")
        assert texts("zebra quantum") == []


def test_budget_cuts_and_reports(daemon: DaemonProcess, repo: Path) -> None:
    scope = {"user": "alice", "repo": str(repo)}
    with daemon.client() as c:
        register(c, repo, "alice")
        for i in range(30):
            c.request("remember", {**scope, "text": f"retry policy note {i}: " + "backoff doubles each attempt " * 4})
        full = c.request("recall", {**scope, "query": "retry backoff", "limit": 100, "budget": 100_000})
        assert len(full["items"]) == 30 and full["cut"] == {"items": 0, "tokens": 0}
        small = c.request("recall", {**scope, "query": "retry backoff", "limit": 100, "budget": 120})
        assert small["tokens"] <= 120
        assert 0 < len(small["items"]) < 30
        assert small["cut"]["items"] == 30 - len(small["items"]) and small["cut"]["tokens"] > 0
        assert small["tokenEstimate"] == "characters/4"
        for item in small["items"]:
            assert item["tokens"] == -(-len(item["text"] + "") // 4) or item["tokens"] >= len(item["text"]) // 4
        limited = c.request("recall", {**scope, "query": "retry backoff", "limit": 5})
        assert len(limited["items"]) == 5 and limited["cut"]["items"] == 25


def test_recall_counts_uses_as_they_stand_after_the_call(daemon: DaemonProcess, repo: Path) -> None:
    scope = {"user": "alice", "repo": str(repo)}
    with daemon.client() as c:
        register(c, repo, "alice")
        a = c.request("remember", {**scope, "text": "alpha service owns the queue"})["id"]
        b = c.request("remember", {**scope, "text": "beta service reads the queue"})["id"]
        p = c.request("procedure", {**scope, "title": "drain the queue", "steps": ["stop alpha", "wait for beta"]})["id"]

        def counts(query: str) -> dict[str, int]:
            return {i["id"]: i["usedCount"] for i in c.request("recall", {**scope, "query": query})["items"]}

        assert counts("queue") == {a: 1, b: 1, p: 1}
        assert counts("queue") == {a: 2, b: 2, p: 2}
        assert counts("alpha owns") == {a: 3, p: 3}
        assert counts("beta") == {b: 3, p: 4}

        # The graph catches up (through the journal) and export reports the same counts.
        def exported() -> dict[str, int]:
            recs = c.request("memory.export", scope)["records"]
            return {r["id"]: r["usedCount"] for r in recs if r["type"] in ("Fact", "Procedure")}

        assert wait_for(lambda: exported() == {a: 3, b: 3, p: 4}, what="usage in export")
    # ... and the counts survive a restart (they were flushed to the graph and the journal).
    daemon.stop()
    daemon.start()
    with daemon.client() as c:
        assert {i["id"]: i["usedCount"] for i in c.request("recall", {**scope, "query": "queue"})["items"]} == {
            a: 4, b: 4, p: 5,
        }
