"""Memory is per user and per repository; --all-repos crosses repositories of one user only."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexusd.errors import Forbidden, NotFound
from tests.helpers import DaemonProcess, make_repo
from tests.memory.conftest import SOURCE, register


def test_two_users_never_see_each_other(shared_daemon_env: DaemonProcess, repo: Path) -> None:
    with shared_daemon_env.client() as c:
        register(c, repo, "alice")
        alice = {"user": "alice", "repo": str(repo)}
        bob = {"user": "bob", "repo": str(repo)}
        c.request("session.start", alice)
        c.request("remember", {**alice, "text": "the cache key includes the tenant id"})
        c.request("procedure", {**alice, "title": "release the cache", "steps": ["flush the tenant cache"]})
        c.request("handoff.write", {**alice, "done": "cache tenant work"})
        assert c.request("recall", {**bob, "query": "tenant cache"})["items"] == []
        assert c.request("recall", {**bob, "query": "tenant cache", "allRepos": True})["items"] == []
        assert c.request("handoff.read", bob)["handoff"] is None
        assert c.request("memory.export", bob)["count"] == 0
        with pytest.raises(NotFound):  # alice's session is not bob's
            c.request("turn", {**bob, "text": "hi"})
        alice_session = c.request("session.list", alice)["sessions"][0]["id"]
        with pytest.raises(NotFound):
            c.request("turn", {**bob, "session": alice_session, "text": "sneaky"})
        # bob's forget --all leaves alice's memory alone; his forget of her ids finds nothing.
        ids = [r["id"] for r in c.request("memory.export", alice)["records"]]
        assert c.request("memory.forget", {**bob, "ids": ids})["deleted"] == 0
        assert c.request("memory.forget", {**bob, "all": True})["deleted"] == 0
        got = c.request("recall", {**alice, "query": "tenant cache"})["items"]
        assert {i["type"] for i in got} == {"fact", "procedure", "handoff"}


def test_repository_of_another_user_is_forbidden(daemon: DaemonProcess, repo: Path) -> None:
    with daemon.client() as c:
        register(c, repo, "alice")
        with pytest.raises(Forbidden):
            c.request("remember", {"user": "bob", "repo": str(repo), "text": "x"})


def test_repositories_never_mix_and_all_repos_stays_with_the_user(
    shared_daemon_env: DaemonProcess, tmp_path: Path
) -> None:
    one = make_repo(tmp_path / "one", SOURCE)
    two = make_repo(tmp_path / "two", SOURCE)
    with shared_daemon_env.client() as c:
        register(c, one, "alice")
        register(c, two, "alice")
        c.request("remember", {"user": "alice", "repo": str(one), "text": "deploys use the blue pipeline"})
        c.request("remember", {"user": "alice", "repo": str(two), "text": "deploys use the green pipeline"})
        c.request("remember", {"user": "bob", "repo": str(two), "text": "deploys use bob's pipeline"})
        r1 = c.request("recall", {"user": "alice", "repo": str(one), "query": "deploys pipeline"})
        assert [i["text"] for i in r1["items"]] == ["deploys use the blue pipeline"]
        r2 = c.request("recall", {"user": "alice", "repo": str(two), "query": "deploys pipeline"})
        assert [i["text"] for i in r2["items"]] == ["deploys use the green pipeline"]
        both = c.request("recall", {"user": "alice", "repo": str(one), "query": "deploys pipeline", "allRepos": True})
        assert sorted(i["text"] for i in both["items"]) == [
            "deploys use the blue pipeline",
            "deploys use the green pipeline",
        ]
        assert {i["repo"] for i in both["items"]} == {str(one.resolve()), str(two.resolve())}
        bobs = c.request("recall", {"user": "bob", "repo": str(one), "query": "deploys pipeline", "allRepos": True})
        assert [i["text"] for i in bobs["items"]] == ["deploys use bob's pipeline"]
