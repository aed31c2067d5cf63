"""Who can stand in for the daemon: without XDG_RUNTIME_DIR the socket lives under a shared $TMPDIR, where another
local user can create `nexus-$UID/` first. The daemon refuses such a directory chain before binding; the client
refuses it before connecting, and refuses a socket served by another uid (SO_PEERCRED). Two HOMEs of one user get
two sockets (the runtime path follows the data directory).

The squatter is a real second uid (`nxsquat`, created with useradd when missing), run with `runuser`."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from nexus_client.connection import Client
from nexus_client.launcher import socket_alive

from nexusd import paths
from nexusd.errors import Forbidden
from tests.helpers import REPO_ROOT, wait_for

SQUATTER = "nxsquat"
SYSTEM_PYTHON = "/usr/bin/python3"


def _squatter_uid() -> int | None:
    if os.geteuid() != 0 or not shutil.which("runuser") or not os.path.exists(SYSTEM_PYTHON):
        return None
    try:
        return pwd.getpwnam(SQUATTER).pw_uid
    except KeyError:
        pass
    if not shutil.which("useradd"):
        return None
    subprocess.run(["useradd", "-M", "-r", "-s", "/usr/sbin/nologin", SQUATTER], capture_output=True)
    try:
        return pwd.getpwnam(SQUATTER).pw_uid
    except KeyError:
        return None


UID = _squatter_uid()
needs_second_uid = pytest.mark.skipif(
    UID is None, reason="needs root, runuser, /usr/bin/python3 and a second uid (useradd) to play the squatter"
)


def as_squatter(code: str, *, background: bool = False) -> subprocess.Popen[bytes] | None:
    cmd = ["runuser", "-u", SQUATTER, "--", SYSTEM_PYTHON, "-c", code]
    if background:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return None


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A fresh world-writable sticky directory, like /tmp, used as TMPDIR."""
    base = Path(tempfile.mkdtemp(prefix="nx-sharedtmp-", dir="/tmp"))
    os.chmod(base, 0o1777)
    try:
        yield base
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)


def _env(home: Path, tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "NEXUS_"))}
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONPATH=str(REPO_ROOT))
    return env


def _where(env: dict[str, str]) -> paths.Dirs:
    """The directories a daemon started with `env` uses (computed in that environment)."""
    code = (
        "import json; from nexusd import paths; d = paths.dirs(); "
        "print(json.dumps([str(d.data), str(d.state), str(d.runtime), str(d.runtime_top)]))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    data, state, runtime, top = json.loads(out)
    return paths.Dirs(Path(data), Path(state), Path(runtime), Path(top))


def _start(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "nexusd", "run"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()


LISTENER = """
import os, socket, sys
path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o777)
s.listen(16)
open(log + ".ready", "w").close()
while True:
    c, _ = s.accept()
    c.settimeout(1.0)
    got = b""
    try:
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    with open(log, "a") as fh:
        fh.write(f"{len(got)}\\n")
    c.close()
"""


def _listen_as_squatter(sock: Path, log: Path) -> subprocess.Popen[bytes]:
    code = f"import sys; sys.argv = ['x', {str(sock)!r}, {str(log)!r}]\n" + LISTENER
    proc = as_squatter(code, background=True)
    assert proc is not None
    wait_for(lambda: Path(str(log) + ".ready").exists() or proc.poll() is not None, 20, what="squatter's socket")
    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    return proc


def _received(log: Path) -> list[int]:
    try:
        return [int(x) for x in log.read_text().split()]
    except FileNotFoundError:
        return []


@needs_second_uid
@pytest.mark.parametrize("move", ["own-top", "symlink-top", "world-writable-top"])
def test_daemon_refuses_a_squatted_runtime_chain(tmp_path: Path, shared_tmp: Path, move: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = _env(home, shared_tmp)
    d = _where(env)
    top = d.runtime_top
    assert top is not None and top.parent == shared_tmp and top.name == f"nexus-{os.getuid()}"
    if move == "own-top":  # the squatter creates nexus-$UID/ (and the leaf) first, mode 0755
        as_squatter(f"import os; os.makedirs({str(d.runtime)!r}, 0o755); os.chmod({str(top)!r}, 0o755)")
    elif move == "symlink-top":  # nexus-$UID is a link to a directory the squatter owns
        as_squatter(f"import os; os.mkdir({str(shared_tmp / 'evil')!r}, 0o777); os.symlink('evil', {str(top)!r})")
    else:  # ours, but anyone may write to it (and so rename our run dir away)
        top.mkdir(mode=0o700)
        os.chmod(top, 0o777)
    proc = _start(env)
    try:
        code = proc.wait(60)
        err = proc.stderr.read().decode() if proc.stderr else ""
    finally:
        _stop(proc)
    assert code == 4, err
    assert str(top) in err, err
    if move == "own-top":
        assert f"owned by uid {UID} ({SQUATTER})" in err, err
    elif move == "symlink-top":
        assert "symbolic link" in err, err
    else:
        assert "writable by others" in err, err
    assert not d.socket.exists() or d.socket.lstat().st_uid != os.getuid(), "the daemon bound in a squatted directory"


@needs_second_uid
def test_client_refuses_a_socket_in_a_squatted_directory(tmp_path: Path, shared_tmp: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    d = _where(_env(home, shared_tmp))
    as_squatter(f"import os; os.makedirs({str(d.runtime)!r}, 0o755); os.chmod({str(d.runtime_top)!r}, 0o755)")
    log = shared_tmp / "squatter.log"
    listener = _listen_as_squatter(d.socket, log)
    try:
        client = Client(d)
        with pytest.raises(Forbidden) as info:
            client.open(handshake=True)
        client.close()
        assert str(d.runtime_top) in info.value.message
        assert f"owned by uid {UID} ({SQUATTER})" in info.value.message
        time.sleep(0.3)
        assert _received(log) == [], "the client connected to the squatter's socket"
    finally:
        os.killpg(listener.pid, signal.SIGKILL)
        listener.wait(10)


@needs_second_uid
def test_client_refuses_a_socket_served_by_another_uid(tmp_path: Path, shared_tmp: Path) -> None:
    """Every directory is ours and private, yet the process behind the socket is not: SO_PEERCRED says so."""
    home = tmp_path / "home"
    home.mkdir()
    d = _where(_env(home, shared_tmp))
    paths.check_socket_dirs(d, create=True)
    assert d.runtime_top is not None
    os.chmod(d.runtime_top, 0o711)  # traversable, writable by nobody else: still a private chain
    os.chmod(d.socket.parent, 0o777)  # long enough for the squatter to bind, then private again
    log = shared_tmp / "squatter.log"
    listener = _listen_as_squatter(d.socket, log)
    os.chmod(d.socket.parent, 0o700)
    try:
        paths.check_socket_dirs(d)  # the chain itself passes
        client = Client(d)
        with pytest.raises(Forbidden) as info:
            client.open(handshake=True)
        client.close()
        assert f"served by uid {UID} ({SQUATTER})" in info.value.message, info.value.message
        wait_for(lambda: _received(log), 10, what="the probe's connection to be logged")
        assert _received(log) == [0], "the client sent bytes to a socket of another uid"
    finally:
        os.killpg(listener.pid, signal.SIGKILL)
        listener.wait(10)


def test_two_homes_of_one_user_get_two_sockets(tmp_path: Path) -> None:
    """No XDG_RUNTIME_DIR, one TMPDIR, two HOMEs: each shell talks to the daemon of its own data."""
    shared = tmp_path / "tmp"
    shared.mkdir(mode=0o700)
    envs = []
    for name in ("a", "b"):
        home = tmp_path / name
        home.mkdir()
        envs.append(_env(home, shared))
    da, db = _where(envs[0]), _where(envs[1])
    assert da.data != db.data
    assert da.socket != db.socket
    procs = [_start(envs[0]), _start(envs[1])]
    try:
        for d, proc in ((da, procs[0]), (db, procs[1])):
            # listening, not only there: the socket file exists a moment before the daemon accepts on it
            wait_for(lambda d=d, proc=proc: socket_alive(str(d.socket)) or proc.poll() is not None, 60, what="socket")
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        for d in (da, db):
            with Client(d).open() as c:
                assert c.request("status")["daemon"]["data"] == str(d.data)
    finally:
        for proc in procs:
            _stop(proc)
