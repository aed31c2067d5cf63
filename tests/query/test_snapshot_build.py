"""The snapshot built from the sync engine's facts holds exactly what the snapshot read from the graph holds.

In-process (no daemon): a store, a sync engine, and after every batch three snapshots compared field by field:
one built cold from the engine and then following batches from the engine (`build` + `apply_files`), one loaded
from the graph and following batches with Kuzu reads (`load` + `apply`), and one loaded from the graph afresh.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from nexusd.query import compact
from nexusd.query import snapshot as snapshot_mod
from nexusd.query.snapshot import FileData, Snapshot, Snapshots
from nexusd.store import Store
from nexusd.sync import graphwrite, indexer
from nexusd.sync.indexer import RepoSync, SyncReport
from tests.helpers import dies_with_its_parent, make_repo
from tests.query.conftest import FILES

REPO = "r-snapshot-test"


def dump(s: Snapshot) -> dict[str, Any]:
    """Everything a query can observe, independent of slot numbers (which depend on arrival order)."""

    def index(ix: dict[str, Any]) -> dict[str, list[str]]:
        out = {}
        for tok, slots in ix.items():
            ids = sorted(sym.id for sym in s.live(slots))
            if ids:
                out[tok] = ids
        return out

    return {
        "files": dict(s.files),
        "symbols": {
            sid: (sym.key, sym.name, sym.qname, sym.kind, sym.path, sym.start, sym.end, sym.signature, sym.exported,
                  sym.unresolved_count, sym.unresolved, sym.parent)
            for sid, sym in s.by_id.items()
        },  # fmt: skip
        "by_key": {k: v.id for k, v in s.by_key.items()},
        "by_file": {k: sorted(v) for k, v in s.by_file.items() if v},
        "children": {k: v for k, v in s.children.items() if v},
        "calls_out": {k: v for k, v in s.calls_out.items() if v},
        "calls_in": {k: v for k, v in s.calls_in.items() if v},
        "inherits_out": {k: v for k, v in s.inherits_out.items() if v},
        "inherits_in": {k: v for k, v in s.inherits_in.items() if v},
        "imports_out": {k: v for k, v in s.imports_out.items() if v},
        "imports_in": {k: v for k, v in s.imports_in.items() if v},
        "unresolved_by_tail": {k: sorted(s.sites(k)) for k in s.unresolved_by_tail if any(True for _ in s.sites(k))},
        "names": [n for n in s.sorted_names if any(True for _ in s.live(s.name_lower.get(n, ())))],
        "sorted": s.sorted_names == sorted(s.sorted_names),
        **{name: index(getattr(s, name)) for name in ("name_exact", "name_lower", "qname_lower", "name_tokens", "text_tokens")},
        "version": s.version,
    }


class Harness:
    def __init__(self, tmp: Path, files: dict[str, str] = FILES):
        self.root = make_repo(tmp / "repo", files, commit=False)
        self.store = Store(tmp / "graph.kuzu")
        self.store.ensure_schema()
        self.conn = self.store.connect()
        self.conn.execute("CREATE (:Repository {id: $id, root: $root, name: 'repo'})", {"id": REPO, "root": str(self.root)})
        self.engine = RepoSync(REPO, str(self.root), tmp / "cache", lambda: pytest.fail("no pool for a small repo"))
        self.version = 0

    def sync(self) -> SyncReport:
        report = self.engine.sync(self.conn, lambda _: None)
        self.version += 1
        return report

    def files(self, paths: list[str], deleted: list[str]) -> dict[str, FileData | None]:
        out: dict[str, FileData | None] = {p: (self.engine.facts[p], self.engine.resolution_of(p)) for p in paths}
        out.update({p: None for p in deleted})
        return out

    def loaded(self) -> Snapshot:
        snap = Snapshot(REPO)
        snap.load(self.conn, self.version)
        return snap

    def close(self) -> None:
        self.conn.close()
        self.store.close()


@pytest.mark.parametrize("diff_rows", [None, 0], ids=["diff-writes", "replace-writes"])
def test_engine_snapshot_equals_graph_snapshot_through_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, diff_rows: int | None
) -> None:
    if diff_rows is not None:  # every batch through write_incremental (delete + COPY + restore) instead
        monkeypatch.setattr(graphwrite, "DIFF_MAX_ROWS", diff_rows)
    h = Harness(tmp_path)
    try:
        report = h.sync()
        assert report.mode == "cold"
        mem = Snapshot(REPO)
        mem.build([(p, d) for p, d in h.files(report.changed_paths, []).items() if d is not None], h.version)
        graph = h.loaded()
        assert dump(mem) == dump(graph)
        assert len(mem.by_id) > 10 and dump(mem)["calls_out"] and dump(mem)["imports_out"]

        edits: list[dict[str, str | None]] = [
            # a callee renamed: its callers' edges go, their unresolved calls change (affected files)
            {"pkg/util.py": FILES["pkg/util.py"].replace("def normalize(x)", "def normalise(x)")},
            # a file deleted, one added that calls into others, one edited above its symbols (ids survive)
            {"pkg/plugins.py": None, "pkg/extra.py": "from pkg.app import App\n\n\ndef boot():\n    App().go()\n",
             "pkg/app.py": "# moved down a line\n" + FILES["pkg/app.py"]},
            # the rename undone: the old callers resolve again
            {"pkg/util.py": FILES["pkg/util.py"]},
            # many files at once
            {"pkg/cli.py": FILES["pkg/cli.py"] + "\n\ndef more():\n    return run(1)\n", "pkg/extra.py": None,
             "tests/test_app.py": FILES["tests/test_app.py"] + "\n\ndef test_again():\n    test_main()\n"},
        ]  # fmt: skip
        follow(h, mem, edits, diff_rows)
    finally:
        h.close()


@pytest.mark.parametrize("part_files", [1, 3])
def test_a_graph_read_in_parts_equals_the_engine_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part_files: int
) -> None:
    """A repository of more than READ_PART_FILES files is read from the graph in parts (the kernel's read in one
    filled Kuzu's buffer pool): the same symbols, children, edges and imports, in the same order."""
    monkeypatch.setattr(snapshot_mod, "READ_PART_FILES", part_files)
    h = Harness(tmp_path)
    try:
        report = h.sync()
        mem = Snapshot(REPO)
        mem.build([(p, d) for p, d in h.files(report.changed_paths, []).items() if d is not None], h.version)
        graph = h.loaded()
        assert len(graph.files) > part_files and dump(mem)["calls_out"] and dump(mem)["imports_out"]
        assert dump(mem) == dump(graph)
        follow(h, mem, [{"pkg/util.py": FILES["pkg/util.py"].replace("def normalize(x)", "def normalise(x)")}], None)
    finally:
        h.close()


def follow(h: Harness, mem: Snapshot, edits: list[dict[str, str | None]], diff_rows: int | None) -> None:
    """Apply each edit on disk, sync, and hold the engine-followed snapshot, a graph-followed one and one
    loaded afresh equal after each."""
    if True:
        kuzu_followed = h.loaded()
        for step, edit in enumerate(edits):
            time.sleep(0.01)  # a new mtime
            for rel, text in edit.items():
                path = h.root / rel
                if text is None:
                    path.unlink()
                else:
                    path.write_text(text)
            report = h.sync()
            assert report.mode == "incremental", step
            assert ("diffPath" in report.written) == (diff_rows is None), step
            changed = set(report.changed_paths) | set(report.deleted_paths) | set(report.affected_paths)
            mem.apply_files(h.version, h.files(sorted(changed - set(report.deleted_paths)), report.deleted_paths))
            kuzu_followed.apply(h.conn, h.version, changed)
            fresh = dump(h.loaded())
            assert dump(mem) == fresh, step
            assert dump(kuzu_followed) == fresh, step


def _hub_files(n: int) -> dict[str, str]:
    files = {"pkg/__init__.py": "", "pkg/hub.py": "def hub(x=0):\n    return x\n\n\ndef spoke():\n    return hub()\n"}
    for i in range(n):
        files[f"pkg/m{i:02}.py"] = (
            f"from pkg.hub import hub, spoke\n\n\ndef a{i}():\n    return hub({i})\n\n\n"
            f"def b{i}():\n    return hub() + spoke()\n"
        )
    return files


@pytest.mark.parametrize("diff_rows", [None, 0], ids=["diff-writes", "replace-writes"])
def test_a_popular_function_and_module_follow_edits_of_a_few_of_their_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, diff_rows: int | None
) -> None:
    """A function with many callers and a module with many importers lose and gain a few per edit: those are cut
    out of and inserted into the long lists in place (`_edges_without`, `_imports_without`, `_settle`), and the
    lists must equal a snapshot read from the graph afresh."""
    if diff_rows is not None:
        monkeypatch.setattr(graphwrite, "DIFF_MAX_ROWS", diff_rows)
    monkeypatch.setattr(indexer, "INLINE_MAX_FILES", 100)  # parsed in-process: no parser pool in this harness
    files = _hub_files(30)
    h = Harness(tmp_path, files)
    try:
        report = h.sync()
        mem = Snapshot(REPO)
        mem.build([(p, d) for p, d in h.files(report.changed_paths, []).items() if d is not None], h.version)
        hub = next(sid for sid, sym in mem.by_id.items() if sym.name == "hub" and sym.kind == "function")
        assert len(mem.calls_in[hub]) == 61 and len(mem.imports_in["pkg/hub.py"]) == 30
        edits: list[dict[str, str | None]] = [
            {"pkg/m07.py": files["pkg/m07.py"].replace("return hub(7)", "return 7")},  # one caller less
            {"pkg/m12.py": None, "pkg/m29.py": "import os\n"},  # an importer gone, one that stops importing
            {"pkg/m40.py": files["pkg/m03.py"].replace("3", "40"), "pkg/m07.py": files["pkg/m07.py"]},  # more
            {"pkg/m05.py": "# a line above\n" + files["pkg/m05.py"]},  # every edge of one file moves a line
            {"pkg/hub.py": files["pkg/hub.py"] + "\n\ndef rim():\n    return spoke()\n"},  # the hub itself
        ]
        follow(h, mem, edits, diff_rows)
        assert len(mem.calls_in[hub]) == 61 - 1 - 2 - 2 + 2 + 1
    finally:
        h.close()


def fake_repo(h: Any) -> Any:
    """What the snapshot side reads of a registered repository, for the harness's one."""

    class R:
        id = REPO
        root = str(h.root)
        name = "repo"
        graph_version = h.version
        indexed_at = None

    return R()


def test_background_build_queues_batches_and_readers_wait(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    try:
        report = h.sync()

        repo = fake_repo(h)
        snaps = Snapshots()
        # Slow the build down so that a batch arrives while it runs.
        orig = compact.build

        def slow_build(repo_id: str, files: Any) -> Any:
            time.sleep(0.3)
            return orig(repo_id, files)

        compact.build = slow_build  # type: ignore[assignment]
        try:
            snaps.build_from(repo, [(p, d) for p, d in h.files(report.changed_paths, []).items() if d is not None], h.version)
            (h.root / "pkg/cli.py").write_text(FILES["pkg/cli.py"] + "\n\ndef late():\n    return run(2)\n")
            report = h.sync()
            repo.graph_version = h.version
            changed = set(report.changed_paths) | set(report.affected_paths)
            snaps.on_batch(repo, changed, reload=False, conn=h.conn, files=h.files(sorted(changed), []))
            snap = snaps.get(h.conn, repo)  # waits for the build and the queued batch
        finally:
            compact.build = orig  # type: ignore[assignment]
        assert snaps.loads[REPO]["source"] == "engine"
        assert snap.version == h.version
        assert dump(snap) == dump(h.loaded())
        assert any(s.name == "late" for s in snap.by_id.values())
    finally:
        h.close()


def test_prebuild_during_the_write_is_taken_at_commit_only_for_the_same_files(tmp_path: Path) -> None:
    """What the engine hands over before the write (`resolved`) is what `committed` hands the listeners: the
    snapshot built from it is taken at the commit; a batch of other files, or one that failed, is not."""
    h = Harness(tmp_path)
    try:
        handed: list[Any] = []
        report = h.engine.sync(h.conn, lambda _: None, resolved=handed.append)
        h.version += 1
        batch = h.engine.committed(report, h.version)
        assert len(handed) == 1 and batch.files is not None
        assert [p for p, _ in handed[0]] == [p for p, d in batch.files.items() if d is not None]

        repo = fake_repo(h)
        snaps = Snapshots()
        snaps.prebuild(repo, handed[0])
        snaps.apply_batch(repo, batch, h.conn)
        assert snaps.loads[REPO]["source"] == "index"  # shown by the commit: no build after it
        info: dict[str, Any] = {}
        snap = snaps.get(h.conn, repo, info)
        assert info == {"madeBy": "index", "waitedMs": 0}
        assert dump(snap) == dump(h.loaded())

        # the same paths with other objects (not what was written): built again after the commit
        other = Snapshots()
        other.prebuild(repo, [(p, (d[0], d[1])) for p, d in handed[0][:-1]])
        other.apply_batch(repo, batch, h.conn)
        assert dump(other.get(h.conn, repo)) == dump(h.loaded())
        assert other.loads[REPO]["source"] == "engine"
        # a batch that failed after it was handed over: forgotten
        failed = Snapshots()
        failed.prebuild(repo, handed[0])
        failed.prebuild(repo, None)
        failed.apply_batch(repo, batch, h.conn)
        failed.get(h.conn, repo)
        assert failed.loads[REPO]["source"] == "engine"
    finally:
        h.close()


def test_prebuild_in_a_process_is_taken_or_falls_back_when_it_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a snapshot directory the prebuild runs in a forked process that saves its arrays for the commit to
    load; if that process fails, the commit builds the snapshot itself, and no prebuild file is left."""
    h = Harness(tmp_path)
    try:
        handed: list[Any] = []
        report = h.engine.sync(h.conn, lambda _: None, resolved=handed.append)
        h.version += 1
        batch = h.engine.committed(report, h.version)

        repo = fake_repo(h)
        snaps = Snapshots(tmp_path / "snaps", save_delay_s=0)
        snaps.prebuild(repo, handed[0])
        snaps.apply_batch(repo, batch, h.conn)
        assert snaps.loads[REPO]["source"] == "index"
        assert dump(snaps.get(h.conn, repo)) == dump(h.loaded())

        orig = compact.build

        def broken(repo_id: str, files: Any) -> Any:
            raise RuntimeError("no arrays")

        failing = Snapshots(tmp_path / "snaps2", save_delay_s=0)
        monkeypatch.setattr(compact, "build", broken)
        failing.prebuild(repo, handed[0])  # (the child has the broken build)
        monkeypatch.setattr(compact, "build", orig)
        failing.apply_batch(repo, batch, h.conn)
        assert dump(failing.get(h.conn, repo)) == dump(h.loaded())
        assert failing.loads[REPO]["source"] == "engine"
        assert not list((tmp_path / "snaps2").glob("*.pre*"))

        # a child that never ends (stuck on something it inherited) is killed at the bound and the commit
        # builds the snapshot itself: the writer is never held for longer
        def stuck(repo_id: str, files: Any) -> Any:
            time.sleep(3600)

        hung = Snapshots(tmp_path / "snaps3", save_delay_s=0)
        monkeypatch.setattr(compact, "build", stuck)
        monkeypatch.setattr(snapshot_mod, "PREBUILD_WAIT_S", 0.5)
        hung.prebuild(repo, handed[0])
        monkeypatch.setattr(compact, "build", orig)
        t0 = time.monotonic()
        hung.apply_batch(repo, batch, h.conn)
        assert time.monotonic() - t0 < 30
        assert dump(hung.get(h.conn, repo)) == dump(h.loaded())
        assert hung.loads[REPO]["source"] == "engine"
        assert not list((tmp_path / "snaps3").glob("*.pre*"))
    finally:
        h.close()


def test_prebuild_files_left_by_a_killed_daemon_are_removed_at_start(tmp_path: Path) -> None:
    snaps = tmp_path / "snaps"
    snaps.mkdir()
    (snaps / "0123abcd.pre4242.snap").write_bytes(b"half a file")
    (snaps / "0123abcd.snap").write_bytes(b"kept: the saved snapshot")
    Snapshots(snaps)
    assert sorted(p.name for p in snaps.iterdir()) == ["0123abcd.snap"]


def test_a_prebuild_process_holds_nothing_of_the_daemon_and_dies_with_it(tmp_path: Path) -> None:
    """The forked build keeps none of the parent's descriptors (the PID lock, the bound socket) and is killed
    with its parent: a kill -9 of the daemon mid-index must not leave a process that keeps the next daemon
    from taking the lock while the old socket still accepts connections."""
    import os
    import subprocess
    import sys

    script = f"""
import fcntl, os, sys, time
from pathlib import Path
from nexusd.query import compact, snapshot
lock = open({str(tmp_path / 'pid.lock')!r}, 'w')
fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
compact.build = lambda *a: time.sleep(3600)
parent = os.getpid()
pid = os.fork()
if pid == 0:
    snapshot._build_in_child(parent, 'r', [], Path({str(tmp_path / 'x.snap')!r}), {{}})
print(pid, flush=True)
time.sleep(3600)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        fds: set[int] = set()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # (closing happens just after the fork)
            fds = {int(fd) for fd in os.listdir(f"/proc/{child}/fd")}
            if fds <= {0, 1, 2}:
                break
            time.sleep(0.02)
        assert fds <= {0, 1, 2}
        dies_with_its_parent(proc, child, tmp_path / "pid.lock")
    finally:
        proc.kill()
        proc.wait()
