"""Access: the daemon's directories are private to its user, path arguments cannot leave a registered root, and
one user's repository is refused to another (tests/test_daemon.py checks the socket itself against uid nobody)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nexusd.errors import Forbidden, NexusError
from tests.helpers import DaemonProcess, make_repo

SOURCE = {"pkg/mod.py": "def main():\n    return helper()\n\n\ndef helper():\n    return 1\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", SOURCE, commit=False)


def _code(exc: BaseException) -> str:
    assert isinstance(exc, NexusError), exc
    return exc.code


def test_data_state_and_run_dirs_are_private(daemon: DaemonProcess, repo: Path) -> None:
    with daemon.client() as c:
        c.request("index", {"repo": str(repo), "user": "alice"}, timeout=120)
        c.request("remember", {"repo": str(repo), "user": "alice", "text": "private note"})
    for d in (daemon.dirs.data, daemon.dirs.state, daemon.dirs.socket.parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a probe as another uid")
def test_other_uid_cannot_read_memory_or_reach_the_socket(daemon: DaemonProcess, repo: Path) -> None:
    with daemon.client() as c:
        c.request("index", {"repo": str(repo), "user": "alice"}, timeout=120)
        c.request("remember", {"repo": str(repo), "user": "alice", "text": "private note"})
    targets = [daemon.dirs.journal, daemon.dirs.db, daemon.dirs.log, daemon.dirs.socket]
    # The temp home's parents must be traversable for the probe to mean anything: make them so (0711).
    os.chmod(daemon.home, 0o711)
    pid = os.fork()
    if pid == 0:  # the child becomes `nobody`; exit 0 means every target was refused
        code = 2
        try:
            os.setgid(65534)
            os.setuid(65534)
            import socket

            code = 0
            for target in targets:
                try:
                    if target == daemon.dirs.socket:
                        s = socket.socket(socket.AF_UNIX)
                        s.connect(str(target))
                    else:
                        open(target, "rb").close()
                    code = 1
                except PermissionError:
                    pass
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, "another uid could read the daemon's files or reach its socket"


def test_path_arguments_outside_the_root_are_refused(daemon: DaemonProcess, repo: Path) -> None:
    scope = {"repo": str(repo), "user": "alice"}
    with daemon.client() as c:
        c.request("index", scope, timeout=120)
        for path in ("../../etc/passwd", "/etc/passwd", "pkg/../../outside.py", "pkg/../../../etc/shadow"):
            for op in ("show", "imports", "importers"):
                with pytest.raises(NexusError) as info:
                    c.request(op, {**scope, "path": path})
                assert _code(info.value) == "forbidden", (op, path, info.value)
        with pytest.raises(NexusError) as info:
            c.request("show", {**scope, "path": "pkg/\x00mod.py"})
        assert _code(info.value) == "bad_request"
        # sync never reads a path that leaves the root: such paths are skipped, the graph stays as it was
        before = c.request("debug.cypher", {"query": "MATCH (f:File) RETURN f.path ORDER BY f.path"})["rows"]
        c.request("sync", {**scope, "paths": ["../../etc/passwd", "/etc/passwd", "pkg/../../x.py"]}, timeout=60)
        after = c.request("debug.cypher", {"query": "MATCH (f:File) RETURN f.path ORDER BY f.path"})["rows"]
        assert before == after == [["pkg/mod.py"]]
        with pytest.raises(NexusError) as info:
            c.request("locate", {"repo": "/etc", "user": "alice", "query": "passwd"})
        assert _code(info.value) == "not_indexed"
        with pytest.raises(Forbidden):
            c.request("index", {"repo": "/", "user": "alice"})


def test_another_users_repository_is_refused(daemon: DaemonProcess, repo: Path) -> None:
    alice = {"repo": str(repo), "user": "alice"}
    bob = {"repo": str(repo), "user": "bob"}
    with daemon.client() as c:
        c.request("index", alice, timeout=120)
        c.request("remember", {**alice, "text": "alice's note"})
        calls = [
            ("index", {}),
            ("sync", {}),
            ("locate", {"query": "main"}),
            ("show", {"path": "pkg/mod.py"}),
            ("impact", {"symbol": "helper"}),
            ("remember", {"text": "bob was here"}),
            ("recall", {"query": "note"}),
            ("session.start", {}),
        ]
        for op, extra in calls:
            with pytest.raises(NexusError) as info:
                c.request(op, {**bob, **extra}, timeout=60)
            assert _code(info.value) == "forbidden", (op, info.value)
        facts = c.request("debug.cypher", {"query": "MATCH (f:Fact) RETURN f.userId, f.text"})["rows"]
        assert facts == [["alice", "alice's note"]]
