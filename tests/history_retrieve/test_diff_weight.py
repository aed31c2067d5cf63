"""A bigger history must not make an answer worse: an old commit's diff counts as evidence at a bounded, lower
weight beyond the patch window (NEXUS_HISTORY_PATCHES), so ingesting the whole history does not let a years-old
diff that happens to hold the query's words outrank the recent commit whose message answers it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nexusd.retrieve.search import DIFF_FLOOR, diff_weight
from tests.helpers import DaemonProcess
from tests.history_ingest.conftest import Factory, register
from tests.history_retrieve.test_commit_window import change

YEAR = 365 * 86400
NOW = 1_700_000_000
QUERY = "quota overflow cache eviction order"


def build(repo: Path) -> None:
    """Five years ago: a commit whose message says nothing of the query and whose diff holds every query word;
    then 12 unrelated commits; now: a fix whose message names 3 of the 5 query words and whose diff none."""
    change(repo, NOW - 5 * YEAR, "storage.py",
           "def evict():\n    # quota overflow: drop the cache entry first (cache eviction order)\n    pass\n",
           "storage: rework the module layout")  # fmt: skip
    for i in range(12):
        change(
            repo, NOW - 4 * YEAR + i * 86400, f"filler{i}.txt", f"pelican {i}\n", f"docs: pelican page {i}"
        )
    change(repo, NOW, "limits.py", "LIMIT = 10\n", "fix: quota overflow in the cache")


def first_commit(c: Any, repo: Path) -> str:
    results = c.request("query", {"repo": str(repo), "text": QUERY, "kinds": ["commit"], "limit": 5})[
        "results"
    ]
    assert results, "the query found no commit"
    return str(results[0]["text"].split("\n")[0])


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[dict[str, DaemonProcess]]:
    """Two daemons over the same history: a patch window holding every commit, and one of 2 commits."""
    procs: dict[str, DaemonProcess] = {}
    try:
        for name, window in (("wide", "1000"), ("narrow", "2")):
            home = tmp_path / f"home-{name}"
            home.mkdir()
            procs[name] = DaemonProcess(env={"HOME": str(home), "NEXUS_HISTORY_PATCHES": window}).start()
        yield procs
    finally:
        for proc in procs.values():
            proc.cleanup()


def test_an_old_diff_weighs_less_than_a_recent_message(
    daemons: dict[str, DaemonProcess], new_repo: Factory
) -> None:
    repo = new_repo()
    build(repo)
    firsts = {}
    for name, proc in daemons.items():
        with proc.client() as c:
            register(c, repo)
            counts = c.request("history.sync", {"repo": str(repo), "patches": 100_000})["counts"]
            assert counts["Change"] >= 14  # every commit's diff is stored in both daemons
            firsts[name] = first_commit(c, repo)
    # Inside the window the old diff counts in full and its commit wins (the premise of the test)...
    assert firsts["wide"].endswith("storage: rework the module layout")
    # ...13 commits beyond a 2-commit window it counts for about half, and the recent fix ranks first.
    assert firsts["narrow"].endswith("fix: quota overflow in the cache")


def test_diff_weight_is_bounded() -> None:
    assert diff_weight(None, 200) == 1.0
    assert diff_weight(0, 200) == diff_weight(199, 200) == 1.0
    assert diff_weight(400, 200) == pytest.approx(DIFF_FLOOR + (1 - DIFF_FLOOR) * 0.5)
    weights = [diff_weight(200 + 50 * i, 200) for i in range(100)]
    assert weights == sorted(weights, reverse=True)  # further back never weighs more
    assert DIFF_FLOOR <= min(weights) < DIFF_FLOOR + 1e-6


def test_the_recent_window_does_not_grow_with_what_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading more diffs (NEXUS_HISTORY_PATCHES) must not make old diffs count in full: the window in which a
    diff weighs 1 is the latest RECENT_DIFFS commits with diffs, or fewer when fewer are read."""
    from nexusd import config
    from nexusd.retrieve.search import RECENT_DIFFS, _patch_window

    try:
        monkeypatch.setenv("NEXUS_HISTORY_PATCHES", "5000")
        config.reload()
        assert _patch_window() == RECENT_DIFFS
        monkeypatch.setenv("NEXUS_HISTORY_PATCHES", "50")
        config.reload()
        assert _patch_window() == 50
    finally:
        monkeypatch.undo()
        config.reload()
