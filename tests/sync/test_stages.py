"""The stages of `RepoSync.sync`, each on its own: stat diff, parse outcomes -> changes, resolve, write + publish.

Real parts: files on disk, facts from the real extractor, the real symbol table; the write stage uses a real Kuzu
store in a temp directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nexusd.parse.extract import extract
from nexusd.parse.facts import FileFacts
from nexusd.resolve import RepoIndex
from nexusd.store import Store
from nexusd.sync import graphwrite
from nexusd.sync.graphwrite import Batch, FileStat
from nexusd.sync.indexer import Changes, RepoSync, Scan, SyncReport, deleted_paths, stat_diff
from nexusd.sync.parsepool import ParseOutcome, ParseTask

REPO = "r-stages"
A = "def helper():\n    return 1\n"
B = "from a import helper\n\n\ndef main():\n    return helper()\n"


def engine(tmp_path: Path) -> RepoSync:
    root = tmp_path / "repo"
    root.mkdir(exist_ok=True)
    return RepoSync(REPO, str(root), tmp_path / "cache", lambda: pytest.fail("no pool for a handful of files"))


def facts(path: str, text: str) -> FileFacts:
    return extract(path, text.encode())


# -- walk/diff ---------------------------------------------------------------------------------------------


def test_stat_diff_reads_only_what_stat_cannot_clear() -> None:
    known = {
        "same.py": ("h1", 10, 100),
        "touched.py": ("h2", 10, 100),
        "nohash.py": ("", 5, 5),
        "slow.py": ("h3", 7, 7),
    }
    entries = [("same.py", 10, 100), ("touched.py", 10, 101), ("nohash.py", 5, 5), ("new.py", 3, 3), ("slow.py", 8, 8)]
    report = SyncReport("incremental")
    stats, tasks, present = stat_diff(entries, known, False, {"slow.py": (8, 8)}, report)
    # Same stat and a hash: not read. Timed out with these very bytes: not retried. The rest carry their hash.
    assert tasks == [ParseTask("touched.py", "h2"), ParseTask("nohash.py", None), ParseTask("new.py", None)]
    assert present == {p for p, _, _ in entries} and report.scanned == 5
    assert stats["touched.py"] == FileStat(10, 101)

    cold_tasks = stat_diff(entries, known, True, {"slow.py": (8, 8)}, SyncReport("cold"))[1]
    assert cold_tasks == [ParseTask(p) for p, _, _ in entries]  # a rebuild reads everything


def test_deleted_paths_only_among_the_scanned_ones() -> None:
    known = {"a.py": ("h", 1, 1), "b.py": ("h", 1, 1), "c.py": ("h", 1, 1)}
    assert deleted_paths(known, {"a.py"}, None) == {"b.py", "c.py"}
    assert deleted_paths(known, {"a.py"}, ["a.py", "b.py", "zzz.py"]) == {"b.py"}  # c.py was not scanned


def test_scan_walks_the_repository(tmp_path: Path) -> None:
    eng = engine(tmp_path)
    root = Path(eng.root)
    (root / "a.py").write_text(A)
    (root / "b.py").write_text(B)
    report = SyncReport("incremental")
    scan = eng.scan({"a.py": ("x", 0, 0), "gone.py": ("y", 1, 1)}, None, False, report)
    assert {t.path for t in scan.tasks} == {"a.py", "b.py"} and scan.deleted == {"gone.py"}
    assert [t.known_hash for t in scan.tasks if t.path == "a.py"] == ["x"]


# -- hash + parse ------------------------------------------------------------------------------------------


def test_parse_outcomes_become_changes(tmp_path: Path) -> None:
    eng = engine(tmp_path)
    stats = {p: FileStat(10, 20) for p in ("a.py", "same.py", "slow.py", "now_secret.env", "new_secret.env")}
    scan = Scan(stats, [], {"gone.py"})
    known = {"a.py": ("h", 1, 1), "same.py": ("h", 1, 1), "now_secret.env": ("h", 1, 1)}
    outcomes = [
        ParseOutcome("a.py", "parsed", facts("a.py", A), "ha"),
        ParseOutcome("same.py", "unchanged", None, "h"),
        ParseOutcome("slow.py", "skipped", reason="timeout"),
        ParseOutcome("now_secret.env", "skipped", reason="secret"),
        ParseOutcome("new_secret.env", "skipped", reason="secret"),
    ]
    report = SyncReport("incremental")
    calls: list[int] = []
    changes = eng.parse_changes(outcomes, scan, known, report, between=lambda: calls.append(1))
    assert set(changes.changed) == {"a.py", "slow.py"}  # a timed-out file is kept as a File with a diagnostic
    assert [d.code for d in changes.changed["slow.py"].diagnostics] == ["timeout"]
    assert changes.touched == {"same.py": FileStat(10, 20)}
    assert changes.deleted == {"gone.py", "now_secret.env"}  # a known file that became a secret leaves the graph
    assert eng.timed_out == {"slow.py": (10, 20)} and eng.parse_skipped["new_secret.env"] == "secret"
    assert (report.parsed, report.unchanged, len(report.skipped)) == (1, 1, 3)
    assert calls  # the writer got its chance to run quick writes between outcomes


# -- resolve -----------------------------------------------------------------------------------------------


def test_resolve_redoes_the_files_a_change_reaches(tmp_path: Path) -> None:
    eng = engine(tmp_path)
    index = RepoIndex(REPO, Path(eng.root))
    first = Changes(changed={"a.py": facts("a.py", A), "b.py": facts("b.py", B)})
    stats = {"a.py": FileStat(1, 1), "b.py": FileStat(1, 1)}
    plan = eng.resolve(index, first, stats, {}, cold=True)
    assert plan.to_resolve == {"a.py", "b.py"} and plan.batch.new_paths == {"a.py", "b.py"}
    calls = [e for e in plan.batch.resolutions["b.py"].calls]
    assert len(calls) == 1 and calls[0].resolution == "import-bound"
    eng.publish(plan.batch, cold=True)

    # `helper` is renamed: only a.py changed, but b.py's call now binds to nothing, so b.py is resolved again,
    # and its old resolution is kept for the diff.
    known = dict(eng.known or {})
    renamed = Changes(changed={"a.py": facts("a.py", A.replace("helper", "helper2"))})
    plan = eng.resolve(index, renamed, {"a.py": FileStat(2, 2)}, known, cold=False)
    assert plan.to_resolve == {"a.py", "b.py"} and plan.diffable
    assert plan.old_resolutions["b.py"] is not None and len(plan.old_resolutions["b.py"].calls) == 1
    assert plan.batch.resolutions["b.py"].calls == []
    assert plan.batch.new_paths == set()


# -- write + publish ---------------------------------------------------------------------------------------


def test_write_then_publish_keeps_the_engine_in_step_with_the_graph(tmp_path: Path) -> None:
    store = Store(tmp_path / "graph.kuzu")
    store.ensure_schema()
    conn = store.connect()
    eng = engine(tmp_path)
    conn.execute("CREATE (:Repository {id: $id, root: $root, name: 'repo'})", {"id": REPO, "root": eng.root})
    index = RepoIndex(REPO, Path(eng.root))
    stats = {"a.py": FileStat(3, 30), "b.py": FileStat(4, 40)}
    plan = eng.resolve(index, Changes(changed={"a.py": facts("a.py", A), "b.py": facts("b.py", B)}), stats, {}, True)
    written = eng.write(conn, plan, index, cold=True)
    assert written["files"] == 2 and written["calls"] == 1
    assert eng.known is None  # nothing is published before the write returns
    eng.publish(plan.batch, cold=True)
    assert eng.known == graphwrite.known_files(conn, REPO)
    assert set(eng.last_batch) == {"a.py", "b.py"}

    # A touched file (same content, new stat) keeps its hash; a deleted one leaves both views.
    touched = Batch(REPO, touched={"a.py": FileStat(3, 31)}, deleted={"b.py"})
    eng.publish(touched, cold=False)
    assert eng.known == {"a.py": (plan.batch.changed["a.py"].hash, 3, 31)}
    assert eng.last_batch == {}  # only the last batch's resolutions are held, and this one resolved nothing
    store.close()


def test_sync_releases_the_resolver_memo_and_edits_resolve_as_a_fresh_index(tmp_path: Path) -> None:
    """After each batch the symbol table drops its memoised bindings and lookups (memory); the next edit's
    resolution must still equal what a table built from scratch over the same files computes."""
    from tests.helpers import make_repo
    from tests.query.conftest import FILES

    root = make_repo(tmp_path / "repo", FILES, commit=False)
    store = Store(tmp_path / "graph.kuzu")
    store.ensure_schema()
    conn = store.connect()
    conn.execute("CREATE (:Repository {id: $id, root: $root, name: 'repo'})", {"id": REPO, "root": str(root)})
    eng = RepoSync(REPO, str(root), tmp_path / "cache", lambda: pytest.fail("no pool for a small repository"))
    assert eng.sync(conn, lambda _: None).mode == "cold"
    assert eng.index is not None and not eng.index.memo and not eng.index._bindings

    util = root / "pkg" / "util.py"
    util.write_text(util.read_text() + "\n\ndef helper2(x):\n    return helper(x)\n")
    report = eng.sync(conn, lambda _: None)
    assert report.mode == "incremental" and report.parsed == 1
    assert not eng.index.memo and not eng.index._bindings
    assert not eng.index._ids, "symbol ids are made again on demand"

    fresh = RepoIndex(REPO, root)
    for f in eng.facts.values():
        fresh.set_file(f)
    assert eng.last_batch, "the engine holds the last batch's resolutions until they are handed over"
    for path in eng.facts:
        assert eng.index.resolve_file(path) == fresh.resolve_file(path), path
    for path, res in eng.last_batch.items():
        assert res == fresh.resolve_file(path), path
    batch = eng.committed(report, 2)
    assert batch.files is not None and eng.last_batch == {}, "handed over: the engine keeps no copy"
    store.close()
