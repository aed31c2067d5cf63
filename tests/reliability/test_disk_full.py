"""A full disk, for real: the daemon's home is a small tmpfs (root only: `mount -t tmpfs -o size=...`), filled
with a plain file. Writes fail with `no_space` (the path and the free space in `data`), nothing answered with
an error is stored, nothing acknowledged is lost, sequence numbers stay unique, reads keep answering, a stop
and a start while full are defined (exit 0; exit 12 with the reason), and writing resumes on its own once
space returns."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nexusd.errors import NexusError
from nexusd.memory.journal import parse_line
from tests.helpers import DaemonProcess
from tests.reliability.common import make_py_repo, q

MB = 1024 * 1024


@pytest.fixture
def small_home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96m,mode=0700", "tmpfs", str(home)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield home
    finally:
        subprocess.run(["umount", "-l", str(home)], capture_output=True)


def _free(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _fill(home: Path, leave: int) -> Path:
    """A filler file that leaves `leave` bytes free (never less than 0)."""
    filler = home / "filler"
    want = max(0, _free(home) - leave)
    with open(filler, "ab") as fh:
        chunk = b"\0" * MB
        while want > 0:
            n = min(want, len(chunk))
            try:
                fh.write(chunk[:n])
                fh.flush()
            except OSError:
                break
            want -= n
    return filler


def _journal_seqs(d: DaemonProcess) -> list[int]:
    seqs = []
    with open(d.dirs.journal, "rb") as fh:
        for line in fh:
            record = parse_line(line)
            assert record is not None, f"damaged journal line: {line[:80]!r}"
            seqs.append(int(record["seq"]))
    return seqs


def _remember(c: object, scope: dict, text: str) -> tuple[str | None, str | None]:
    try:
        return c.request("remember", {**scope, "text": text})["id"], None  # type: ignore[attr-defined]
    except NexusError as exc:
        return None, exc.code


def test_writes_under_the_reserve_are_refused_and_resume_when_space_returns(small_home: Path, tmp_path: Path) -> None:
    root = make_py_repo(tmp_path / "repo", 10)
    scope = {"repo": str(root), "user": "alice"}
    d = DaemonProcess(home=small_home, env={"NEXUS_MIN_FREE_MB": "16", "NEXUS_BUFFER_POOL_MB": "64"}).start()
    try:
        with d.client(timeout=120) as c:
            c.request("index", scope, timeout=120)
            kept, _ = _remember(c, scope, "written before the disk filled up")
            assert kept
            seq_before = c.request("status")["memory"]["journalSeq"]
            filler = _fill(small_home, 8 * MB)
            fact, code = _remember(c, scope, "written while the disk is full")
            assert fact is None and code == "no_space"
            try:
                c.request("remember", {**scope, "text": "again"})
            except NexusError as exc:
                assert exc.data["path"] == str(d.dirs.data) and exc.data["freeBytes"] < 16 * MB
                assert "MB free" in exc.message
            else:
                raise AssertionError("a write under the reserve was accepted")
            # Reads keep answering, and say why writes do not.
            status = c.request("status")
            assert status["memory"]["journalSeq"] == seq_before
            assert status["health"]["disk"]["low"] and status["health"]["disk"]["refusedWrites"] >= 2
            assert c.request("locate", {**scope, "query": "func_1_0"})["results"]
            assert c.request("recall", {**scope, "query": "disk filled"})["items"]
            # Space comes back: writes resume without a restart.
            filler.unlink()
            after, code = _remember(c, scope, "written after space came back")
            assert after and code is None
            assert not c.request("status")["health"]["disk"]["low"]
            facts = {r[0] for r in q(c, "MATCH (f:Fact) RETURN f.id")}
            assert {kept, after} <= facts and len(facts) == 2
        seqs = _journal_seqs(d)
        assert len(seqs) == len(set(seqs)), "a journal seq number was used twice"
    finally:
        d.cleanup()


def test_a_disk_that_fills_to_the_last_byte(small_home: Path, tmp_path: Path) -> None:
    """No reserve: the writes themselves hit ENOSPC (journal and database). Every reply is ok or no_space,
    never internal; acknowledged writes survive a stop and a start; an error reply means not stored."""
    root = make_py_repo(tmp_path / "repo", 6)
    scope = {"repo": str(root), "user": "alice"}
    d = DaemonProcess(home=small_home, env={"NEXUS_MIN_FREE_MB": "0", "NEXUS_BUFFER_POOL_MB": "64"}).start()
    acked: list[str] = []
    refused: list[str] = []
    try:
        with d.client(timeout=120) as c:
            c.request("index", scope, timeout=120)
            session = c.request("session.start", {**scope, "title": "filling up"})["session"]
            filler = _fill(small_home, 2 * MB)
            codes = set()
            for i in range(400):
                text = f"fact {i} " + ("padding " * 2000)
                fact, code = _remember(c, scope, text)
                if fact:
                    acked.append(f"fact {i} ")
                else:
                    codes.add(code)
                    refused.append(f"fact {i} ")
                    if len(refused) >= 5:
                        break
            assert refused, "the disk never filled"
            assert codes == {"no_space"}, codes
            try:
                c.request("turn", {**scope, "session": session, "text": "a turn on a full disk"})
            except NexusError as exc:
                assert exc.code == "no_space"
            assert c.request("ping")["pong"]
            assert c.request("status")["health"]["disk"]["low"]
        # A stop while full exits cleanly (no checkpoint: Kuzu aborts on one while the disk is full).
        assert d.stop() == 0
        # A start while completely full is refused with the reason.
        _fill(small_home, 0)
        d.start(wait=False)
        assert d.proc is not None
        assert d.proc.wait(60) == 12
        err = d.proc.stderr.read().decode() if d.proc.stderr else ""
        assert "MB free" in err
        # Space returns: the daemon starts, everything acknowledged is there, nothing refused is.
        filler.unlink()
        (small_home / "filler").unlink(missing_ok=True)
        d.start()
        with d.client(timeout=300) as c:
            texts = [r[0] for r in q(c, "MATCH (f:Fact) RETURN f.text")]
            for prefix in acked:
                assert any(t.startswith(prefix) for t in texts), f"acknowledged {prefix!r} lost"
            for prefix in refused:
                assert not any(t.startswith(prefix) for t in texts), f"{prefix!r} was refused but stored"
            fact, code = _remember(c, scope, "after the disk was freed")
            assert fact and code is None
        seqs = _journal_seqs(d)
        assert len(seqs) == len(set(seqs)), "a journal seq number was used twice"
    finally:
        d.cleanup()
