"""A database nothing used for NEXUS_DB_IDLE_S is closed by the writer's idle upkeep and given back to the system,
and the next statement opens it again: answers, writes and a kill -9 while it rests lose nothing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess, make_repo, wait_for

SOURCE = {
    "pkg/cache.py": "def cache_key(value):\n    return hash(value)\n\n\ndef lookup(table, value):\n    return table[cache_key(value)]\n",
}


def _state(c: Any) -> str:
    return str(c.request("status", {})["daemon"]["database"])


def _rests(c: Any, limit_s: float = 20.0) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if _state(c) == "resting":
            return True
        time.sleep(0.2)
    return False


def _callers(c: Any, repo: Path, symbol: str) -> list[str]:
    return sorted(x["name"] for x in c.request("impact", {"repo": str(repo), "symbol": symbol})["callers"])


def _last_build(c: Any) -> dict[str, Any]:
    return dict(c.request("status", {})["repos"][0]["lastBuild"])


def _anon_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon")


def _indexed(tmp_path: Path, env: dict[str, str]) -> tuple[Path, DaemonProcess]:
    """A daemon with `env` and the repository of SOURCE indexed."""
    repo = make_repo(tmp_path / "repo", SOURCE)
    d = DaemonProcess(home=tmp_path / "home", env=env).start()
    try:
        with d.client() as c:
            c.request("index", {"repo": str(repo)}, timeout=120)
    except BaseException:
        d.stop()
        raise
    return repo, d


def test_an_unused_database_rests_and_the_next_request_opens_it_again(tmp_path: Path) -> None:
    repo, d = _indexed(tmp_path, {"NEXUS_DB_IDLE_S": "1"})
    try:
        with d.client() as c:
            fact = c.request("remember", {"repo": str(repo), "text": "cache keys hash the value"})
            open_mb = _anon_mb(d.pid)
            assert _rests(c), "the database never rested"
            # What the open database held went back (Kuzu's own structures alone are ~85 MB), once the close and the
            # heap's trim that follow the state's change are done.
            deadline = time.monotonic() + 10
            while _anon_mb(d.pid) >= open_mb - 40 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert _anon_mb(d.pid) < open_mb - 40
            assert "closed while idle" in d.cli("status").stdout
            # Answers while it rests: recall and impact from what the daemon holds, show's doc from the graph,
            # which opens it again.
            items = c.request("recall", {"repo": str(repo), "query": "cache keys hash"})["items"]
            assert [i["id"] for i in items] == [fact["id"]]
            assert _callers(c, repo, "cache_key") == ["lookup"]
            shown = c.request("show", {"repo": str(repo), "symbol": "cache_key"})
            assert shown["node"]["qualifiedName"] == "cache_key" and _state(c) == "open"
            # A write while it rests: opened, written, and it rests again.
            assert _rests(c)
            rests = c.request("status", {})["daemon"]["databaseRests"]
            second = c.request("remember", {"repo": str(repo), "text": "lookups go through the cache key"})
            assert _rests(c) and c.request("status", {})["daemon"]["databaseRests"] > rests
            built = _last_build(c)
        d.kill9()  # while it rests: the file was closed after a checkpoint, and the stop is marked clean
        d.start()
        with d.client() as c:
            c.request("sync", {"repo": str(repo)}, timeout=60)  # (queued behind the start's catch-up)
            assert _last_build(c) == built  # no code graph rebuilt: the kill came while the database rested
            items = c.request("recall", {"repo": str(repo), "query": "lookups cache key"})["items"]
            assert second["id"] in [i["id"] for i in items]
            assert fact["id"] in [i["id"] for i in c.request("recall", {"repo": str(repo), "query": "hash the value"})["items"]]
    finally:
        d.stop()


def test_an_edit_while_the_database_rests_is_written_and_queryable(tmp_path: Path) -> None:
    repo, d = _indexed(tmp_path, {"NEXUS_DB_IDLE_S": "1"})
    try:
        with d.client() as c:
            assert _rests(c)
            (repo / "pkg/use.py").write_text(
                'from pkg.cache import lookup\n\n\ndef fetch(t):\n    """Fetch the first entry."""\n    return lookup(t, 1)\n'
            )
            c.request("sync", {"repo": str(repo)}, timeout=60)
            assert _callers(c, repo, "lookup") == ["fetch"]
            assert _rests(c)
            shown = c.request("show", {"repo": str(repo), "symbol": "fetch"})  # (its doc is read from the graph)
            assert shown["node"]["doc"] == "Fetch the first entry."
            assert _rests(c)
        assert d.stop() == 0  # a clean stop while it rests
        d.start()
        with d.client() as c:
            assert _callers(c, repo, "lookup") == ["fetch"]
    finally:
        d.stop()


def test_reads_and_writes_around_rests_all_answer(tmp_path: Path) -> None:
    """Graph reads and memory writes from several clients in bursts, with pauses around the writer's idle tick
    (every 2 s without work), so that some requests arrive while the database closes or opens: it rests and opens
    again many times, and every answer is the right one."""
    import random
    import threading

    repo, d = _indexed(tmp_path, {"NEXUS_DB_IDLE_S": "0.3"})
    errors: list[str] = []
    written: list[str] = []
    pauses = random.Random(7)
    rounds = [pauses.uniform(1.9, 2.8) for _ in range(8)]  # the pause before each burst
    try:

        def reader(seed: int) -> None:
            rnd = random.Random(seed)
            with d.client() as rc:
                for pause in rounds:
                    time.sleep(pause + rnd.uniform(0.0, 0.3))
                    try:
                        shown = rc.request("show", {"repo": str(repo), "symbol": "lookup"}, timeout=60)
                        if shown["node"]["qualifiedName"] != "lookup":
                            errors.append(f"show answered {shown['node']}")
                    except Exception as exc:  # noqa: BLE001 - collected, asserted below
                        errors.append(repr(exc))

        def writer() -> None:
            with d.client() as wc:
                for i, pause in enumerate(rounds):
                    time.sleep(pause + 0.15)
                    try:
                        written.append(wc.request("remember", {"repo": str(repo), "text": f"note {i} on lookups"})["id"])
                    except Exception as exc:  # noqa: BLE001
                        errors.append(repr(exc))

        threads = [threading.Thread(target=reader, args=(n,)) for n in range(3)] + [threading.Thread(target=writer)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == []
        with d.client() as c:
            assert c.request("status", {})["daemon"]["databaseRests"] >= 3  # (6 of the 8 pauses in one run)
            got = {i["id"] for i in c.request("recall", {"repo": str(repo), "query": "note on lookups", "limit": 20})["items"]}
            assert set(written) <= got and len(written) == len(rounds)
    finally:
        d.stop()


def test_no_rest_before_the_graphs_are_checked_after_deletes(tmp_path: Path) -> None:
    """A checkpoint that folded in deletes is followed by a check of every graph (at most every
    NEXUS_GRAPH_CHECK_S): the database rests only after it, since a kill while it rests counts as a clean stop."""
    repo, d = _indexed(tmp_path, {"NEXUS_DB_IDLE_S": "0.3", "NEXUS_GRAPH_CHECK_S": "12"})
    try:
        with d.client() as c:
            assert _rests(c)
            cache = repo / "pkg/cache.py"
            for body in ("def cache_key(value):\n    return hash(value)\n",  # `lookup` deleted: checked at once
                         "def cache_key(value):\n    return 0\n\n\ndef spare():\n    return 1\n",
                         "def cache_key(value):\n    return 0\n"):  # `spare` deleted: its check waits
                cache.write_text(body)
                c.request("sync", {"repo": str(repo)}, timeout=60)
            time.sleep(5.0)
            assert _state(c) == "open"  # the second fold's check is due ~12 s after the first
            assert _rests(c, limit_s=30.0)
    finally:
        d.stop()


def test_an_image_restarted_in_place_while_its_database_rested_lets_it_rest_soon(tmp_path: Path) -> None:
    """The next image opens the database for its start-up work (the catch-up, the symbol table's rebuild). When the
    image before stopped while it rested, nobody used it meanwhile, so it rests again REST_AFTER_RESTART_S (5 s)
    after that work, not NEXUS_DB_IDLE_S (here 14 s); until then nothing is asked of the daemon."""
    _, d = _indexed(tmp_path, {"NEXUS_DB_IDLE_S": "14", "NEXUS_DEBUG_OPS": "1"})
    log = d.dirs.log
    try:
        with d.client() as c:
            assert _rests(c, limit_s=40.0)
            c.request("debug.recycle", {})
        restart = "stopped; starting again in place"
        wait_for(lambda: restart in log.read_text(), timeout=30, what="the restart in place")
        started = time.monotonic()

        def rested_again() -> bool:  # the table rebuilt, then the database closed: in the next image's part of the log
            after = log.read_text().split(restart, 1)[1]
            return "closed the database while idle" in after and "rebuilt the symbol table" in after

        wait_for(rested_again, timeout=30, interval=0.1, what="the next image's rest")
        assert time.monotonic() - started < 11.0  # (the start, ~1-2 s, + 5 s + the idle tick's 2 s)
        with d.client() as c:
            assert _state(c) == "resting"
            assert _callers(c, tmp_path / "repo", "cache_key") == ["lookup"]
    finally:
        d.stop()


def test_status_and_impact_answer_a_resting_database_without_opening_it(tmp_path: Path) -> None:
    """`status` is what people and prompts run most: its counts are computed before the database rests, so asking
    for them afterwards leaves it closed, for the graph's state after the index and after an edit alike (and
    after a restart in place, whose start-up work opened it). So are `impact`'s files that did not parse."""
    repo, d = _indexed(tmp_path, {"NEXUS_DB_IDLE_S": "1", "NEXUS_DEBUG_OPS": "1"})
    log = d.dirs.log
    rest = "closed the database while idle"
    try:
        # No `status` between the index and the rest: nothing had asked for the counts of this graph yet.
        wait_for(lambda: rest in log.read_text(), timeout=30, interval=0.1, what="the rest after the index")
        with d.client() as c:
            for _ in range(2):
                got = c.request("status", {})
                assert got["daemon"]["database"] == "resting"
                assert got["repos"][0]["symbols"] == 3 and sum(got["repos"][0]["edges"]["calls"].values()) == 1  # (the module too)
            assert _callers(c, repo, "cache_key") == ["lookup"] and _state(c) == "resting"
            (repo / "pkg/cache.py").write_text(SOURCE["pkg/cache.py"] + "\n\ndef spare():\n    return lookup({}, 1)\n")
            c.request("sync", {"repo": str(repo)}, timeout=60)
            assert _state(c) == "open"
            rests = log.read_text().count(rest)
            wait_for(lambda: log.read_text().count(rest) > rests, timeout=30, interval=0.1, what="the rest after the edit")
            for _ in range(2):
                got = c.request("status", {})
                assert got["daemon"]["database"] == "resting"
                assert got["repos"][0]["symbols"] == 4 and sum(got["repos"][0]["edges"]["calls"].values()) == 2
            assert _callers(c, repo, "lookup") == ["spare"] and _state(c) == "resting"
            c.request("debug.recycle", {})
        wait_for(lambda: log.read_text().count(rest) > rests + 1, timeout=40, interval=0.1, what="the next image's rest")
        with d.client() as c:
            for _ in range(2):
                got = c.request("status", {})
                assert got["daemon"]["database"] == "resting" and got["repos"][0]["symbols"] == 4
            assert _callers(c, repo, "lookup") == ["spare"] and _state(c) == "resting"
    finally:
        d.stop()


def _spool_command(d: DaemonProcess, repo: Path, command: str) -> None:
    now = time.time()
    with open(d.dirs.spool, "a") as spool:  # (what the shell hook's one `printf >>` appends)
        spool.write(f"N1\tbash\t{now - 1:.6f}\t{now:.6f}\t2\t{repo}\t{command}\n")


def _spooled(d: DaemonProcess) -> int:
    return d.dirs.spool.stat().st_size if d.dirs.spool.exists() else 0


def _shell_found(c: Any, repo: Path, words: str) -> bool:
    got = c.request("query", {"repo": str(repo), "text": words, "kinds": ["shell"], "limit": 5})["results"]
    return any(words in r.get("command", "") for r in got)


def test_shell_commands_wait_in_the_spool_while_the_database_rests(tmp_path: Path) -> None:
    """An ingest opens the database, so while it rests the shell hook's spool waits (NEXUS_SPOOL_REST_S) until
    something else opens it, or until it waited that long; `shell.ingest` takes it at once. Nothing is lost."""
    env = {"NEXUS_DB_IDLE_S": "1", "NEXUS_SPOOL_INTERVAL": "0.3"}
    repo, d = _indexed(tmp_path, {**env, "NEXUS_SPOOL_REST_S": "600"})
    try:
        with d.client() as c:
            assert _rests(c)
            _spool_command(d, repo, "make flaky-probe-one")
            time.sleep(3.0)  # (ten spool ticks)
            assert _state(c) == "resting" and _spooled(d) > 0
            c.request("show", {"repo": str(repo), "symbol": "cache_key"})  # opens the database: the spool follows
            wait_for(lambda: _spooled(d) == 0, timeout=15, what="the spool's ingest once the database opened")
            wait_for(lambda: _shell_found(c, repo, "make flaky-probe-one"), timeout=15, what="the command found")
            assert _rests(c)
            _spool_command(d, repo, "make flaky-probe-two")
            time.sleep(1.5)
            assert _state(c) == "resting" and _spooled(d) > 0
            c.request("shell.ingest", {})
            assert _shell_found(c, repo, "make flaky-probe-two")
    finally:
        d.stop()
    repo, d = _indexed(tmp_path / "again", {**env, "NEXUS_SPOOL_REST_S": "2"})
    try:
        with d.client() as c:
            assert _rests(c)
            _spool_command(d, repo, "make flaky-probe-three")
            wait_for(lambda: _spooled(d) == 0, timeout=15, what="the spool's ingest once it waited NEXUS_SPOOL_REST_S")
            wait_for(lambda: _shell_found(c, repo, "make flaky-probe-three"), timeout=15, what="the command found")
    finally:
        d.stop()
