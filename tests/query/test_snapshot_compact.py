"""The compact snapshot (one string table and arrays, `query/compact.py`) answers exactly as the dict form does,
through edits applied on top of it, and survives a save and a load; a damaged or stale file is never used.

In-process (no daemon): a real store and sync engine (tests/query/test_snapshot_build.py's harness); after every
batch the dict-form snapshot, the compact one followed by the same batches, and a compact one loaded back from
its file are compared field by field with `dump`.
"""

from __future__ import annotations

import copy
import gc
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nexusd.query import compact
from nexusd.query import snapshot as snapshot_mod
from nexusd.query.snapshot import Snapshot, Snapshots
from nexusd.store import StoreError
from tests.query.conftest import FILES
from tests.query.test_snapshot_build import REPO, Harness, dump

EDITS: list[dict[str, str | None]] = [
    {"pkg/util.py": FILES["pkg/util.py"].replace("def normalize(x)", "def normalise(x)")},
    {"pkg/plugins.py": None, "pkg/extra.py": "from pkg.app import App\n\n\ndef boot():\n    App().go()\n",
     "pkg/app.py": "# moved down a line\n" + FILES["pkg/app.py"]},
    {"pkg/util.py": FILES["pkg/util.py"]},
    {"pkg/cli.py": FILES["pkg/cli.py"] + "\n\ndef more():\n    return run(1)\n", "pkg/extra.py": None},
]  # fmt: skip


def _edit(h: Harness, edit: dict[str, str | None]) -> dict[str, Any]:
    time.sleep(0.01)
    for rel, text in edit.items():
        path = h.root / rel
        if text is None:
            path.unlink()
        else:
            path.write_text(text)
    report = h.sync()
    changed = set(report.changed_paths) | set(report.deleted_paths) | set(report.affected_paths)
    return h.files(sorted(changed - set(report.deleted_paths)), report.deleted_paths)


def _frozen_copy(s: Snapshot) -> Snapshot:
    out = Snapshot(s.repo_id)
    out.adopt(compact.freeze(s), s.version)
    return out


def _built(h: Harness) -> Snapshot:
    """The dict-form snapshot of the harness's repository after a first sync."""
    report = h.sync()
    plain = Snapshot(REPO)
    plain.build([(p, d) for p, d in h.files(report.changed_paths, []).items() if d is not None], h.version)
    return plain


def through_file(snap: Snapshot, path: Path, version: int) -> Snapshot:
    """`snap` frozen, saved to `path` and read back, as a restarted daemon adopts it."""
    stamp = compact.stamp_of(REPO, version, 1.5)
    compact.save(compact.freeze(snap), path, stamp)
    loaded = Snapshot(REPO)
    loaded.adopt(compact.load_file(path, stamp), version)
    return loaded


def _saved(repo_id: str, snaps: Snapshots, within_s: float = 10.0) -> None:
    """Wait (up to `within_s`) for the registry's first save of the repository's snapshot (made in the background)."""
    deadline = time.monotonic() + within_s
    while repo_id not in snaps.saves and time.monotonic() < deadline:
        time.sleep(0.02)


def ordered(s: Snapshot) -> dict[str, Any]:
    """Every table as its (key, value) pairs in iteration order, every slot, the sorted names: stricter than
    `dump` (orders and slot numbers count)."""
    out: dict[str, Any] = {name: [(k, v if isinstance(v, tuple) else list(v) if not hasattr(v, "slot") else v)
                                  for k, v in getattr(s, name).items()] for name in compact.TABLES}  # fmt: skip
    out["slots"] = list(s.slots)
    out["names"] = list(s.sorted_names)
    return out


def test_arrays_made_straight_from_the_files_equal_the_dict_form_frozen(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    try:
        report = h.sync()
        files = [(p, d) for p, d in h.files(report.changed_paths, []).items() if d is not None]
        plain = Snapshot(REPO)
        plain.build(files, h.version)
        direct = Snapshot(REPO)
        direct.adopt(compact.build(REPO, files), h.version)
        assert direct.frozen is not None and direct.frozen.ids_are_slots
        assert ordered(direct) == ordered(_frozen_copy(plain)) == ordered(plain)
        assert dump(direct) == dump(plain) == dump(h.loaded())
        assert len(plain.by_id) > 10 and dump(direct)["calls_out"] and dump(direct)["children"]
        assert direct.counts() == plain.counts()
        for step, edit in enumerate(EDITS):  # batches on top of it, as on top of a freeze
            changed = _edit(h, edit)
            plain.apply_files(h.version, changed)
            direct.apply_files(h.version, changed)
            assert dump(direct) == dump(plain), step
        # a file repeated under two paths keeps its first symbols (ids are unique), as the dict form does
        twice = files + [(files[0][0] + "x", files[0][1])]
        plain2 = Snapshot(REPO)
        plain2.build(twice, 1)
        direct2 = Snapshot(REPO)
        direct2.adopt(compact.build(REPO, twice), 1)
        assert ordered(direct2) == ordered(plain2)
    finally:
        h.close()


def test_arrays_made_straight_group_repeated_edges_as_the_dict_form_does() -> None:
    """`compact.build` groups its edges and postings in flat arrays (`_Edges`, `_Postings`): repeated pairs (the
    first kept), an import repeated on one line and made again on another, edges to ids nobody holds, a token
    seen once and tokens seen often, in the orders the dict form keeps."""
    from nexusd.parse.facts import FileFacts, SymbolFact, file_id, symbol_id
    from nexusd.resolve.base import CallEdge, FileResolution, ImportEdge

    def sym(name: str, start: int) -> SymbolFact:
        return SymbolFact("function", name, name, start, start + 2, signature=f"def {name}(load_data)")

    a = FileFacts("a.py", "python", "source", "h1", 30, [sym("first", 1), sym("load", 5), sym("zeta", 9)])
    b = FileFacts("b.py", "python", "source", "h2", 30, [sym("alpha", 1), sym("load_b", 5)])
    ids = {s.name: symbol_id(REPO, f.path, "function", s.name, 0) for f in (a, b) for s in f.symbols}
    e = CallEdge
    res_a = FileResolution("a.py", imports=[
        ImportEdge("a.py", "b.py", "b", 1, "import-bound", 1.0), ImportEdge("a.py", "b.py", "b", 1, "import-bound", 1.0),
        ImportEdge("a.py", "b.py", "b", 7, "import-bound", 0.9), ImportEdge("a.py", "gone.py", "gone", 2, "x", 1.0),
    ], calls=[
        e(ids["zeta"], ids["alpha"], 12, "name-only", 0.5), e(ids["first"], ids["load_b"], 3, "import-bound", 1.0),
        e(ids["first"], ids["alpha"], 4, "import-bound", 1.0), e(ids["first"], ids["load_b"], 2, "name-only", 0.4),
        e(ids["load"], "no-such-id", 6, "name-only", 0.3), e(ids["load"], ids["first"], 7, "same-scope", 1.0),
    ])  # fmt: skip
    res_b = FileResolution("b.py", imports=[ImportEdge("b.py", "a.py", "a", 1, "import-bound", 1.0)], calls=[
        e(ids["load_b"], ids["load"], 6, "import-bound", 1.0), e(ids["alpha"], ids["load"], 2, "import-bound", 1.0),
        e(ids["alpha"], ids["alpha"], 3, "same-scope", 1.0),
    ])  # fmt: skip
    files = [("a.py", (a, res_a)), ("b.py", (b, res_b))]
    assert file_id(REPO, "gone.py")  # (an import to a file outside the batch is left out by both)
    plain = Snapshot(REPO)
    plain.build(files, 1)
    direct = Snapshot(REPO)
    direct.adopt(compact.build(REPO, files), 1)
    assert ordered(direct) == ordered(plain)
    assert dump(direct) == dump(plain)
    out = dump(direct)["calls_out"]
    assert len(out) == 5 and sum(len(v) for v in out.values()) == 7  # (the repeated pair once, the dangling none)


def test_compact_snapshot_equals_dict_snapshot_through_edits_and_a_file(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    try:
        plain = _built(h)
        packed = _frozen_copy(plain)
        assert packed.frozen is not None and not isinstance(packed.by_id, dict)
        assert dump(packed) == dump(plain)
        assert len(plain.by_id) > 10 and dump(packed)["calls_out"] and dump(packed)["unresolved_by_tail"]
        assert packed.counts() == plain.counts()
        ever: set[str] = set(plain.by_id)
        for step, edit in enumerate(EDITS):
            files = _edit(h, edit)
            plain.apply_files(h.version, files)
            packed.apply_files(h.version, files)
            assert dump(packed) == dump(plain), step
            assert packed.counts() == plain.counts(), step
            ever |= set(plain.by_id)  # (and the ids of symbols gone since: no path)
            for sid in ever:  # a symbol's path read from the path column (`path_of`) is its path, over edits
                want = plain.by_id[sid].path if sid in plain.by_id else None
                assert packed.path_of(sid) == plain.path_of(sid) == want, (step, sid)
            assert dump(_frozen_copy(packed)) == dump(plain), step  # frozen again over its own overlay
            assert dump(through_file(packed, tmp_path / "s.snap", h.version)) == dump(plain), step
        assert dump(plain) == dump(h.loaded())
    finally:
        h.close()


def test_a_saved_snapshot_is_mapped_and_a_newer_save_leaves_the_mapping_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file is mapped read-only, each array a view of it (`compact._map`): the daemon's own memory holds none
    # of it. A save writes a new file and renames it over the old, so a snapshot mapping the old one answers as
    # before; where a file cannot be mapped it is read into arrays, with the same answers.
    h = Harness(tmp_path)
    try:
        plain = _built(h)
        path = tmp_path / "s.snap"
        stamp = compact.stamp_of(REPO, h.version, 1.5)
        compact.save(compact.freeze(plain), path, stamp)
        fz = compact.load_file(path, stamp)
        assert fz.source == str(path) and isinstance(fz.strings.blob, memoryview)
        assert all(isinstance(a, memoryview) for _, a in fz.arrays())
        mapped = Snapshot(REPO)
        mapped.adopt(fz, h.version)
        before = copy.deepcopy(dump(plain))  # (dump hands out the dict form's own lists, changed by its batches)
        assert dump(mapped) == before
        files = _edit(h, EDITS[0])
        plain.apply_files(h.version, files)
        compact.save(compact.freeze(plain), path, compact.stamp_of(REPO, h.version, 1.5))  # renamed over it
        assert dump(mapped) == before != dump(plain)
        mapped.apply_files(h.version, files)  # a batch over a mapped base: its overlays are copies
        assert dump(mapped) == dump(plain)

        def unmappable(f: Any, stamp: Any) -> Any:
            raise compact._Unmappable("not here")

        monkeypatch.setattr(compact, "_map", unmappable)
        stamp = compact.stamp_of(REPO, h.version, 1.5)
        read = compact.load_file(path, stamp)
        assert read.source is None and isinstance(read.strings.blob, bytearray)
        again = Snapshot(REPO)
        again.adopt(read, h.version)
        assert dump(again) == dump(plain)
    finally:
        h.close()


def test_a_snapshot_compacted_in_the_daemon_answers_from_its_file_once_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Compacted in this process (no fork, or a cold index's arrays): once saved, its arrays are swapped for the
    # saved file, mapped (`Snapshots._map_saved`), and the answers stay the graph's.
    monkeypatch.setattr(Snapshots, "_compact_apart", lambda self, deadline: False)
    h = Harness(tmp_path)
    try:
        h.sync()
        repo: Any = _Repo(h)
        snaps = Snapshots(tmp_path / "snaps", save_delay_s=0.05)
        snap = snaps.get(h.conn, repo)
        _saved(REPO, snaps)
        assert not snaps.saves[REPO]["apart"]
        (path,) = (tmp_path / "snaps").glob("*.snap")
        assert snap.frozen is not None and snap.frozen.source == str(path)
        assert dump(snap) == dump(h.loaded())
    finally:
        h.close()


def test_a_damaged_or_stale_snapshot_file_is_refused(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    try:
        plain = _built(h)
        path = tmp_path / "s.snap"
        stamp = compact.stamp_of(REPO, h.version, 2.0)
        size = compact.save(compact.freeze(plain), path, stamp)
        assert path.stat().st_size == size
        compact.load_file(path, stamp)  # as written: accepted
        for other in (compact.stamp_of(REPO, h.version + 1, 2.0), compact.stamp_of(REPO, h.version, 3.0),
                      compact.stamp_of("another", h.version, 2.0)):  # fmt: skip
            with pytest.raises(compact.BadFile, match="another graph version"):
                compact.load_file(path, other)
        good = path.read_bytes()
        for where in (len(good) - 3, len(good) // 2, len(compact.MAGIC) + 10):
            bad = bytearray(good)
            bad[where] ^= 0x5A
            path.write_bytes(bytes(bad))
            with pytest.raises(compact.BadFile):
                compact.load_file(path, stamp)
        path.write_bytes(good[: len(good) // 3])  # cut short
        with pytest.raises(compact.BadFile):
            compact.load_file(path, stamp)
        path.write_bytes(b"")
        with pytest.raises(compact.BadFile):
            compact.load_file(path, stamp)
        with pytest.raises(compact.BadFile):
            compact.load_file(tmp_path / "missing.snap", stamp)
        # Checksummed, but its arrays do not fit together: refused too.
        for table, column in (("name_exact", "slot"), ("calls_out", "conf")):
            fz = compact.freeze(plain)
            fz.tables[table].cols[column].append(fz.tables[table].cols[column][0])
            compact.save(fz, path, stamp)
            with pytest.raises(compact.BadFile, match=f"table {table}.{column}"):
                compact.load_file(path, stamp)
    finally:
        h.close()


class _Repo:
    def __init__(self, h: Harness) -> None:
        self.id, self.root, self.name = REPO, str(h.root), "repo"
        self.graph_version, self.indexed_at = h.version, 100.0


def test_a_restarted_registry_answers_from_the_saved_file_and_never_from_a_stale_or_damaged_one(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    try:
        h.sync()
        repo: Any = _Repo(h)
        first = Snapshots(tmp_path / "snaps", save_delay_s=0.05)
        snap = first.get(h.conn, repo)  # read from the graph, compacted, saved at once (in the background)
        assert first.loads[REPO]["source"] == "graph"
        _saved(REPO, first)
        assert snap.frozen is not None and first.saves[REPO]["apart"]  # (compacted by a forked process)
        assert first.saves[REPO]["version"] == h.version and len(list((tmp_path / "snaps").glob("*.snap"))) == 1

        restarted = Snapshots(tmp_path / "snaps")
        assert dump(restarted.get(h.conn, repo)) == dump(h.loaded())
        assert restarted.loads[REPO]["source"] == "file"

        # An edit the file never saw (the daemon stopped before saving): stale, so the graph is read.
        files_changed = _edit(h, EDITS[0])
        assert files_changed
        repo.graph_version, repo.indexed_at = h.version, 101.0
        stale = Snapshots(tmp_path / "snaps", save_delay_s=0)  # (saves nothing)
        assert dump(stale.get(h.conn, repo)) == dump(h.loaded())
        assert stale.loads[REPO]["source"] == "graph"

        # A batch followed by a save: the file is current again, compacted over the batch.
        live = Snapshots(tmp_path / "snaps", save_delay_s=0.5)
        live.get(h.conn, repo)
        live_snap = live.get(h.conn, repo)
        files_changed = _edit(h, EDITS[1])
        repo.graph_version, repo.indexed_at = h.version, 102.0
        live.on_batch(repo, set(files_changed), reload=False, conn=h.conn, files=files_changed)
        assert live_snap.dirty
        deadline = time.monotonic() + 10
        while live.saves.get(REPO, {}).get("version") != h.version and time.monotonic() < deadline:
            time.sleep(0.02)
        assert live.saves[REPO]["version"] == h.version and not live_snap.dirty  # compacted again
        assert dump(live_snap) == dump(h.loaded())
        # Saved: the snapshot answers from the saved file, mapped (compacted apart, read back from that file)
        assert live_snap.frozen is not None and live_snap.frozen.source is not None
        assert isinstance(live_snap.frozen.strings.blob, memoryview)
        again = Snapshots(tmp_path / "snaps")
        assert dump(again.get(h.conn, repo)) == dump(h.loaded())
        assert again.loads[REPO]["source"] == "file"

        # Damaged: refused by its checksum, the graph is read, the answers are the graph's.
        (path,) = (tmp_path / "snaps").glob("*.snap")
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
        damaged = Snapshots(tmp_path / "snaps", save_delay_s=0)
        assert dump(damaged.get(h.conn, repo)) == dump(h.loaded())
        assert damaged.loads[REPO]["source"] == "graph"
        damaged.drop(REPO)  # a repository forgotten takes its file with it
        assert not path.exists()
    finally:
        h.close()


def test_a_graph_read_that_fails_leaves_nothing_half_read_to_answer_follow_or_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel's graph read once failed on a full Kuzu buffer pool after the files were read: the half-read
    snapshot then took the next batch, was saved at the stop, and answered `locate` with nothing from then on.
    Here the read fails the same way after three symbols (the error the store raised there)."""
    h = Harness(tmp_path)
    try:
        h.sync()
        repo: Any = _Repo(h)
        snaps = Snapshots(tmp_path / "snaps", save_delay_s=0.05)
        read = Snapshot._add_symbol
        added: list[Any] = []

        def full_pool(self: Snapshot, row: Any, incremental: bool) -> None:
            if len(added) == 3:
                raise StoreError("Buffer manager exception: Unable to allocate memory! The buffer pool is full")
            added.append(row)
            read(self, row, incremental)

        monkeypatch.setattr(Snapshot, "_add_symbol", full_pool)
        with pytest.raises(StoreError):
            snaps.get(h.conn, repo)
        # A batch meanwhile (there, the start-up sync: nothing parsed) is not applied to the half-read state,
        # which is never saved.
        snaps.on_batch(repo, set(), reload=False, conn=h.conn, files={})
        time.sleep(0.5)
        assert REPO not in snaps.saves and not list((tmp_path / "snaps").glob("*.snap"))
        monkeypatch.undo()
        # The next reader reads the whole graph again.
        assert dump(snaps.get(h.conn, repo)) == dump(h.loaded())
        assert snaps.loads[REPO]["source"] == "graph"
    finally:
        h.close()


def test_a_saved_file_that_holds_fewer_symbols_than_the_graph_is_refused(tmp_path: Path) -> None:
    """What a build before the fix above left: half a graph read saved under a good stamp."""
    h = Harness(tmp_path)
    try:
        report = h.sync()
        repo: Any = _Repo(h)
        files = [(p, d) for p, d in h.files(report.changed_paths, []).items() if p == "pkg/util.py" and d is not None]
        part = Snapshot(REPO)
        part.build(files, h.version)  # one file's symbols, as if the read had stopped there
        assert 0 < part.counts()["symbols"] < h.loaded().counts()["symbols"]
        snaps = Snapshots(tmp_path / "snaps", save_delay_s=0)
        path = snaps._file(REPO)
        assert path is not None
        path.parent.mkdir(parents=True, exist_ok=True)
        compact.save(compact.freeze(part), path, compact.stamp_of(REPO, h.version, repo.indexed_at))
        assert dump(snaps.get(h.conn, repo)) == dump(h.loaded())
        assert snaps.loads[REPO]["source"] == "graph"
    finally:
        h.close()


def test_a_reader_that_comes_during_a_graph_read_waits_for_all_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = Harness(tmp_path)
    try:
        h.sync()
        repo: Any = _Repo(h)
        snaps = Snapshots(tmp_path / "snaps", save_delay_s=0)
        reading, go = threading.Event(), threading.Event()
        read = Snapshot._add_symbol

        def slow(self: Snapshot, row: Any, incremental: bool) -> None:
            reading.set()
            go.wait(10)
            read(self, row, incremental)

        monkeypatch.setattr(Snapshot, "_add_symbol", slow)
        got: dict[str, Any] = {}

        def reader() -> None:
            snap = snaps.get(h.conn, repo)  # (the load under way took it off the stale list: no graph read here)
            with snap.lock.read():
                got["dump"] = dump(snap)

        loader = threading.Thread(target=snaps.get, args=(h.conn, repo))
        loader.start()
        assert reading.wait(10)
        second = threading.Thread(target=reader)
        second.start()
        second.join(0.5)
        assert second.is_alive() and "dump" not in got  # waiting for the load, not reading half of it
        go.set()
        loader.join(10)
        second.join(10)
        monkeypatch.undo()
        assert got["dump"] == dump(h.loaded())
    finally:
        h.close()


def _mapped_kb(path: Path) -> int:
    """This process's resident KB of mappings of `path` (`/proc/self/smaps`)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            if "-" in line.split(" ", 1)[0] and len(line.split()) >= 5:  # a mapping's header line
                inside = line.rstrip().endswith(str(path))
            elif inside and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total


def test_an_idle_snapshot_hands_its_mapped_pages_back_and_answers_as_before(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    try:
        h.sync()
        repo: Any = _Repo(h)
        saver = Snapshots(tmp_path / "snaps", save_delay_s=0.05)
        saver.get(h.conn, repo)
        _saved(REPO, saver)
        del saver  # (its snapshot maps the saved file too)
        gc.collect()
        snaps = Snapshots(tmp_path / "snaps")
        snap = snaps.get(h.conn, repo)
        assert snaps.loads[REPO]["source"] == "file" and snap.frozen is not None and snap.frozen.mapping is not None
        (path,) = (tmp_path / "snaps").glob("*.snap")
        want = dump(h.loaded())
        assert dump(snap) == want  # (reads every array: their pages are mapped now)
        assert _mapped_kb(path) > 0
        assert snaps.drop_pages(idle_s=60) == []  # read a moment ago: kept
        assert snaps.drop_pages(idle_s=0) == [REPO]
        assert _mapped_kb(path) == 0
        assert snaps.drop_pages(idle_s=0) == []  # nothing read since
        assert dump(snap) == want  # read back from the page cache
        assert _mapped_kb(path) > 0
        snaps.get(h.conn, repo)  # a reader asked again: once more
        assert snaps.drop_pages(idle_s=0) == [REPO] and _mapped_kb(path) == 0
    finally:
        h.close()


def test_a_worktree_view_over_a_compacted_baseline_equals_one_over_the_dict_form(tmp_path: Path) -> None:
    from nexusd.query.overlay import build_view

    h = Harness(tmp_path)
    try:
        plain = _built(h)
        packed = _frozen_copy(plain)
        before = dump(packed)
        files = _edit(h, EDITS[1])  # (the view's overlay: an edit the baseline does not have)
        view_plain = build_view(plain, files)
        view_packed = build_view(packed, files)
        assert dump(view_packed) == dump(view_plain)
        assert dump(view_packed)["symbols"] != before["symbols"]
        assert dump(packed) == before  # the baseline is never written through a view
    finally:
        h.close()


def test_a_compaction_gives_way_to_a_batch_waiting_for_the_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compacting holds the snapshot's read lock, and on the kernel's 1.8M symbols it took 200 s: the next edit,
    and every query queued behind it, waited all that time. A compaction stops as soon as a writer waits, leaves
    the snapshot as it was, and is tried again once quiet."""
    h = Harness(tmp_path)
    try:
        h.sync()
        repo: Any = _Repo(h)
        reg = Snapshots(tmp_path / "snaps", save_delay_s=600)  # (no timer fires during the test)
        snap = reg.get(h.conn, repo)
        files_changed = _edit(h, EDITS[1])
        repo.graph_version, repo.indexed_at = h.version, 102.0
        reg.on_batch(repo, set(files_changed), reload=False, conn=h.conn, files=files_changed)
        assert snap.dirty
        before = dump(snap)

        applied = threading.Event()

        def batch() -> None:
            with snap.lock.write():
                applied.set()

        with snap.lock.read():  # what a save holds while it compacts
            writer = threading.Thread(target=batch)
            writer.start()
            deadline = time.monotonic() + 10
            while not snap.lock.writer_waiting() and time.monotonic() < deadline:
                time.sleep(0.005)
            assert snap.lock.writer_waiting()
            with pytest.raises(compact.Abandoned):
                compact.freeze(snap, stop=snap.lock.writer_waiting)
            assert not applied.is_set()
        assert applied.wait(10)
        writer.join()
        assert snap.dirty and dump(snap) == before

        # Given way inside a save: counted, nothing written, the save tried again later.
        def abandoned(*_: Any, **__: Any) -> Any:
            raise compact.Abandoned

        with monkeypatch.context() as m:
            m.setattr(compact, "freeze", abandoned)
            reg._save(REPO, snap)
        assert reg.abandoned[REPO] == 1 and REPO in reg._timers and snap.dirty
        assert reg.saves[REPO]["version"] < h.version  # (the save of the graph read, before the batch)
        reg._save(REPO, snap)  # quiet now: compacted and saved
        assert not snap.dirty and reg.saves[REPO]["version"] == h.version
        assert dump(snap) == dump(h.loaded())
        reg.drop(REPO)
    finally:
        h.close()


def test_a_compaction_runs_in_a_forked_process_and_a_batch_meanwhile_goes_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compacting after an edit runs in a forked process that saves the arrays; the daemon reads them back. In
    process it held the interpreter ~5 s on the standard library and left ~40 MB of arenas behind. A batch
    applied while the process runs wins: its result is dropped and the next save compacts the newer state. A
    process that fails leaves the compaction to this process, as before."""
    snaps = tmp_path / "snaps"
    h = Harness(tmp_path)
    try:
        h.sync()
        repo: Any = _Repo(h)
        reg = Snapshots(snaps, save_delay_s=600)  # (no timer fires during the test but the graph read's, at once)
        snap = reg.get(h.conn, repo)
        _saved(REPO, reg)

        def batch(edit: dict[str, str | None]) -> None:
            files = _edit(h, edit)
            repo.graph_version = h.version
            reg.on_batch(repo, set(files), reload=False, conn=h.conn, files=files)
            assert snap.dirty

        batch(EDITS[1])
        reg._save(REPO, snap)
        assert reg.saves[REPO] == {**reg.saves[REPO], "version": h.version, "apart": True} and not snap.dirty
        assert dump(snap) == dump(h.loaded())
        assert dump(Snapshots(snaps).get(h.conn, repo)) == dump(h.loaded())  # the file it saved
        assert sorted(p.name for p in snaps.iterdir()) == [f"{REPO}.snap"]  # (no part left beside it)

        batch(EDITS[0])
        wait = snapshot_mod._FreezeApart.wait

        def wait_then_batch(self: Any) -> Any:
            got = wait(self)
            batch(EDITS[2])  # (while the process ran, as far as the save can tell)
            return got

        with monkeypatch.context() as m:
            m.setattr(snapshot_mod._FreezeApart, "wait", wait_then_batch)
            reg._save(REPO, snap)
        assert snap.dirty and reg.saves[REPO]["version"] < h.version
        assert sorted(p.name for p in snaps.iterdir()) == [f"{REPO}.snap"]
        reg._save(REPO, snap)
        assert not snap.dirty and reg.saves[REPO]["version"] == h.version and dump(snap) == dump(h.loaded())

        batch(EDITS[3])
        with monkeypatch.context() as m:
            m.setattr(snapshot_mod, "_freeze_in_child", lambda *_: os._exit(3))
            reg._save(REPO, snap)
        assert reg.saves[REPO] == {**reg.saves[REPO], "version": h.version, "apart": False} and not snap.dirty
        assert dump(snap) == dump(h.loaded())
        reg.drop(REPO)
    finally:
        h.close()


def test_the_stop_saves_what_it_can_within_its_budget(tmp_path: Path) -> None:
    """At the daemon's stop, pending saves compact for at most a budget (a service manager kills a daemon that
    takes longer, and a killed daemon rebuilds every graph). Over budget, nothing is saved and the old file stays
    stale, so a restart reads the graph; within it, the snapshot is saved."""
    h = Harness(tmp_path)
    try:
        h.sync()
        repo: Any = _Repo(h)
        reg = Snapshots(tmp_path / "snaps", save_delay_s=600)
        snap = reg.get(h.conn, repo)
        _saved(REPO, reg)
        first = dict(reg.saves[REPO])
        files_changed = _edit(h, EDITS[1])
        repo.graph_version, repo.indexed_at = h.version, 102.0
        reg.on_batch(repo, set(files_changed), reload=False, conn=h.conn, files=files_changed)
        assert snap.dirty and REPO in reg._timers

        reg.flush(budget_s=-1)  # no time at all: the compaction stops at once
        assert reg.saves[REPO] == first and reg.abandoned[REPO] == 1 and not reg._timers and snap.dirty
        restarted = Snapshots(tmp_path / "snaps")
        assert dump(restarted.get(h.conn, repo)) == dump(h.loaded())
        assert restarted.loads[REPO]["source"] == "graph"  # the file was stale: not used

        reg._save_soon(REPO, snap, 600)
        reg.flush()
        assert reg.saves[REPO]["version"] == h.version and not snap.dirty
        again = Snapshots(tmp_path / "snaps")
        assert dump(again.get(h.conn, repo)) == dump(h.loaded()) and again.loads[REPO]["source"] == "file"
    finally:
        h.close()
