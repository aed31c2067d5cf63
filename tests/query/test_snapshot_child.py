"""The cold batch's arrays made in a forked child (`query/snapchild.py`) equal the ones made in-process, orders
and slots included; the registry takes them only for the very files it was handed, falls back to building
in-process otherwise, and the child dies with its parent, leaving no file anyone uses.

Real parts: a real store and sync engine (tests/query/test_snapshot_build.py's harness), a real fork, and for the
death test a real parent process killed with SIGKILL.
"""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from nexusd.query import compact, snapchild
from nexusd.query.snapshot import Snapshot, Snapshots
from tests.query.test_snapshot_build import REPO, Harness, dump
from tests.query.test_snapshot_compact import ordered

pytestmark = pytest.mark.skipif(not snapchild.available(), reason="needs fork and prctl (Linux)")


def _gone(pid: int, within: float) -> bool:
    """The process has exited (gone, or a zombie nobody reaped yet)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


class _Repo:
    id = REPO
    root = "/nowhere"
    name = "repo"
    graph_version = 1
    indexed_at = 12.5


def test_the_childs_arrays_equal_the_ones_made_in_process(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    try:
        report = h.sync()
        files = [(p, d) for p, d in h.files(report.changed_paths, []).items() if d is not None]
        path = tmp_path / "snaps" / "c.cold.snap"
        child = snapchild.start(REPO, files, path)
        assert child is not None and child.made_from(files)
        fz = child.result(120)
        assert fz is not None
        assert not path.exists() and not list(path.parent.glob("c.cold.snap*"))  # the file goes once read
        here = Snapshot(REPO)
        here.adopt(compact.build(REPO, files), h.version)
        there = Snapshot(REPO)
        there.adopt(fz, h.version)
        assert ordered(there) == ordered(here)
        assert dump(there) == dump(here) == dump(h.loaded())
        assert len(here.by_id) > 10 and dump(there)["calls_out"]
        assert child.seconds is not None and child.seconds > 0
    finally:
        h.close()


def test_the_registry_takes_the_childs_arrays_only_for_the_very_files_it_was_given(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    try:
        report = h.sync()
        files = [(p, d) for p, d in h.files(report.changed_paths, []).items() if d is not None]
        repo: Any = _Repo()
        repo.graph_version = h.version
        snaps = Snapshots(tmp_path / "snaps", save_delay_s=0)
        snaps.prepare_cold(repo, files)
        snaps.build_from(repo, files, h.version)
        snap = snaps.get(h.conn, repo)
        assert snaps.loads[REPO]["source"] == "child"
        assert snaps.loads[REPO]["childSeconds"] > 0
        assert dump(snap) == dump(h.loaded())
        assert not list((tmp_path / "snaps").glob("*.cold.snap*"))

        # Handed other files at the commit (one missing; one file's facts replaced by an equal copy): the child
        # is killed and the arrays are made in-process from what was committed.
        (p0, (facts0, res0)) = files[0]
        for other in (files[:-1], [(p0, (copy.copy(facts0), res0)), *files[1:]]):
            snaps.prepare_cold(repo, files)
            child = snaps._children[REPO]
            snaps.build_from(repo, other, h.version)
            snap = snaps.get(h.conn, repo)
            assert snaps.loads[REPO]["source"] == "engine"
            assert child.wait_exited(10)
            expect = Snapshot(REPO)
            expect.adopt(compact.build(REPO, other), h.version)
            assert ordered(snap) == ordered(expect)
        assert not list((tmp_path / "snaps").glob("*.cold.snap*"))
    finally:
        h.close()


def test_a_failed_child_gives_no_arrays_and_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "c.cold.snap"
    (tmp_path / "c.cold.snap.tmp999").write_bytes(b"half a file a killed child left")
    bad: Any = [("a.py", (None, None))]  # compact.build fails on it in the child
    child = snapchild.start(REPO, bad, path)
    assert child is not None
    assert not (tmp_path / "c.cold.snap.tmp999").exists()  # a killed child's leftover is removed first
    assert child.result(60) is None
    assert child.wait_exited(1) and not list(tmp_path.iterdir())


PARENT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from nexusd.query import compact, snapchild
    compact.build = lambda repo_id, files: time.sleep(120)  # (the child inherits this: it stays in the build)
    child = snapchild.start("r", [], Path(sys.argv[1]))
    print(child.pid, flush=True)
    time.sleep(120)
""")


def test_the_child_dies_with_its_parent_killed_with_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "c.cold.snap"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                                      os.environ.get("PYTHONPATH")]))}  # fmt: skip
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        with open(f"/proc/{pid}/comm") as fh:
            assert fh.read().strip() == snapchild.NAME.decode()
        assert not _gone(pid, 0.5)  # it runs (in its long build) ...
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        assert _gone(pid, 10)  # ... and goes with its parent
        assert not path.exists() and not list(tmp_path.glob("c.cold.snap*"))
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_a_daemons_cold_index_answers_from_the_childs_arrays(tmp_path: Path) -> None:
    from tests.helpers import DaemonProcess, make_repo, wait_for
    from tests.query.conftest import FILES

    root = make_repo(tmp_path / "repo", FILES)
    d = DaemonProcess(tmp_path / "home").start()
    try:
        with d.client() as c:
            c.request("index", {"repo": str(root)}, timeout=300)
            hits = c.request("locate", {"repo": str(root), "query": "normalize"})
        assert any(h.get("name") == "normalize" for h in hits["results"]), hits
        log = d.dirs.log
        wait_for(lambda: "'source': 'child'" in log.read_text(), 20, what="the snapshot taken from the child")
        assert "building in-process" not in log.read_text()
        wait_for(lambda: [p for p in d.home.rglob("*.snap") if ".cold." not in p.name], 20, what="the saved snapshot")
        assert not list(d.home.rglob("*.cold.snap*"))  # the child's file went once read
    finally:
        d.cleanup()
