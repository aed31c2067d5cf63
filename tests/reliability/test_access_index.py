"""What `index` accepts as a repository root: never a system tree or a pseudo-filesystem (symlinks resolved
first), and a first index is bounded by a file count (NEXUS_MAX_FILES) with a message saying how to raise it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from nexusd import safefs
from nexusd.errors import NexusError
from tests.helpers import DaemonProcess, make_repo

SYSTEM = ["/", "/etc", "/proc", "/sys", "/dev", "/usr", "/var", "/run", "/boot", "/etc/ssl", "/proc/self", "/dev/shm"]


def _code(c: object, args: dict[str, object]) -> NexusError:
    with pytest.raises(NexusError) as info:
        c.request("index", args, timeout=60)  # type: ignore[attr-defined]
    return info.value


def test_system_trees_and_links_to_them_are_refused(daemon: DaemonProcess, tmp_path: Path) -> None:
    links = []
    for target in ("/etc", "/proc", "/sys", "/dev"):
        link = tmp_path / f"link-{target.strip('/')}"
        link.symlink_to(target)
        links.append(str(link))
    with daemon.client() as c:
        for path in [p for p in SYSTEM if os.path.isdir(p)] + links:
            err = _code(c, {"repo": path, "user": "alice"})
            assert err.code == "forbidden", (path, err.code, err.message)
            assert "refusing to index" in err.message
            if path in links:
                assert "resolves to" in err.message, err.message
        assert c.request("repos", {})["repos"] == []
        err = _code(c, {"repo": str(tmp_path) + "/x\x00y", "user": "alice"})
        assert err.code == "bad_request" and "NUL" in err.message


def test_pseudo_filesystems_are_found_by_type() -> None:
    assert safefs.fs_type("/proc/self") == "proc"
    assert safefs.system_tree("/proc/1") is not None
    if os.path.isdir("/sys/kernel"):
        assert safefs.fs_type("/sys/kernel") in ("sysfs", "securityfs", "debugfs", "tracefs", "configfs")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a proc filesystem at a scratch directory")
def test_a_proc_mount_outside_proc_is_refused(daemon: DaemonProcess, tmp_path: Path) -> None:
    where = tmp_path / "innocent"
    where.mkdir()
    if subprocess.run(["mount", "-t", "proc", "proc", str(where)], capture_output=True).returncode != 0:
        pytest.skip("mount -t proc is not permitted here")
    try:
        with daemon.client() as c:
            err = _code(c, {"repo": str(where), "user": "alice"})
            assert err.code == "forbidden" and "proc filesystem" in err.message, err.message
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_first_index_is_bounded_by_file_count(tmp_path: Path) -> None:
    big = make_repo(tmp_path / "big", {f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(60)}, commit=False)
    small = make_repo(tmp_path / "small", {f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(30)}, commit=False)
    d = DaemonProcess(env={"NEXUS_MAX_FILES": "50"}).start()
    try:
        with d.client() as c:
            err = _code(c, {"repo": str(big), "user": "alice"})
            assert err.code == "too_large", (err.code, err.message)
            assert "more than 50 files" in err.message
            assert "NEXUS_MAX_FILES" in (err.hint or "")
            assert c.request("repos", {})["repos"] == []  # nothing half-registered
            files = c.request("debug.cypher", {"query": "MATCH (f:File) RETURN count(f)"})["rows"]
            assert files == [[0]]
            r = c.request("index", {"repo": str(small), "user": "alice"}, timeout=120)
            assert r["parsed"] == 30
            for i in range(30, 70):  # growing past the cap later is not a first index
                (small / "pkg" / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
            c.request("sync", {"repo": str(small), "user": "alice"}, timeout=120)
            n = c.request("debug.cypher", {"query": "MATCH (f:File) RETURN count(f)"})["rows"]
            assert n == [[70]]
    finally:
        d.cleanup()
