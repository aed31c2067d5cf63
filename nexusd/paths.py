"""Where NEXUS keeps things. XDG conventions by default (via platformdirs); NEXUS_HOME puts all under one folder.

    data     the Kuzu database, the memory journal (user data: never deleted by a rebuild)
    state    logs, the pid lock, caches of derived facts, the shell spool
    runtime  the daemon's socket, in a 0700 directory

Without NEXUS_HOME the runtime directory is `$XDG_RUNTIME_DIR/nexus/<h>/` or, when there is no usable
XDG_RUNTIME_DIR (containers, su, cron, many SSH and CI sessions), `$TMPDIR/nexus-$UID/<h>/`, where <h> is a
short hash of the data directory: two shells of one user with different HOMEs (so different data) never share
a socket. A directory in a shared /tmp can be created first by another local user, so every directory from the
per-user top (`nexus-$UID`, `$XDG_RUNTIME_DIR/nexus`, NEXUS_HOME) down to the socket's must be ours, a real
directory (lstat: no symlink) and writable by nobody else: `check_private_chain` says which one is not. The
daemon checks before it binds, the client before it connects (client/launcher.py also checks the peer's uid).

Pure: clients import this to find the socket.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NamedTuple

APP = "nexus"
# AF_UNIX paths are limited to ~107 bytes; beyond this we fall back to a short per-home directory in /tmp.
_MAX_SOCKET_PATH = 100


class Dirs(NamedTuple):
    # A NamedTuple, not a dataclass: the client imports this on every start and dataclasses cost ~5 ms.
    data: Path
    state: Path
    runtime: Path
    # The first directory of the runtime path that belongs to this user alone (checked down to the socket).
    runtime_top: Path | None = None

    @property
    def db(self) -> Path:
        return self.data / "graph.kuzu"

    @property
    def journal(self) -> Path:
        return self.data / "memory.journal"

    @property
    def pidfile(self) -> Path:
        return self.state / "nexusd.pid"

    @property
    def log(self) -> Path:
        return self.state / "nexusd.log"

    @property
    def cache(self) -> Path:
        return self.state / "cache"

    @property
    def spool(self) -> Path:
        return self.state / "shell.spool"

    @property
    def hook_spool(self) -> Path:
        """Where the git hooks append one line per event (plain shell, no Python start)."""
        return self.state / "git-hooks.spool"

    @property
    def socket(self) -> Path:
        path = self.runtime / "nexusd.sock"
        if len(str(path).encode()) <= _MAX_SOCKET_PATH:
            return path
        import hashlib

        digest = hashlib.blake2b(str(self.runtime).encode(), digest_size=6).hexdigest()
        return _user_tmp() / digest / "nexusd.sock"

    @property
    def socket_top(self) -> Path:
        """Where the chain of directories that must be private starts, for the socket's directory."""
        parent = self.socket.parent
        if parent != self.runtime:  # the short fallback path for a long runtime dir
            return _user_tmp()
        return self.runtime_top or self.runtime

    @property
    def endpoint(self) -> str:
        return f"ipc://{self.socket}"


def _tmp() -> str:
    import tempfile

    return tempfile.gettempdir()


def _user_tmp() -> Path:
    return Path(_tmp()) / f"nexus-{os.getuid()}"


def data_tag(data: Path) -> str:
    """A short, stable name for a data directory (the runtime dir follows the data, not the uid alone)."""
    import hashlib

    return hashlib.blake2b(os.fsencode(os.path.abspath(data)), digest_size=5).hexdigest()


def dirs(environ: dict[str, str] | None = None) -> Dirs:
    env = os.environ if environ is None else environ
    home = env.get("NEXUS_HOME")
    if home:
        root = Path(home).expanduser().absolute()
        return Dirs(root / "data", root / "state", root / "run", root)
    data = user_dir("data", APP, env)
    tag = data_tag(data)
    # The runtime dir is decided here, not by platformdirs, which warns when XDG_RUNTIME_DIR is unset.
    xdg_runtime = env.get("XDG_RUNTIME_DIR")
    if xdg_runtime and os.path.isdir(xdg_runtime) and os.access(xdg_runtime, os.W_OK):
        top = Path(xdg_runtime) / APP
    else:  # containers and su sessions often lack /run/user/$UID: /tmp/nexus-$UID (0700) instead
        top = _user_tmp()
    return Dirs(data, user_dir("state", APP, env), top / tag, top)


_XDG = {"data": ("XDG_DATA_HOME", ".local/share"), "state": ("XDG_STATE_HOME", ".local/state"), "config": ("XDG_CONFIG_HOME", ".config")}


def user_dir(kind: str, app: str, environ: dict[str, str] | os._Environ[str] | None = None) -> Path:
    """The user's data, state or config directory for `app`: the XDG rules on Linux, written out here because
    platformdirs costs every client start ~18 ms of imports (tempfile, shutil, ...); platformdirs elsewhere."""
    env = os.environ if environ is None else environ
    if sys.platform.startswith("linux"):
        var, fallback = _XDG[kind]
        base = env.get(var, "").strip()
        root = Path(base) if base and os.path.isabs(base) else Path(os.path.expanduser("~")) / fallback
        return root / app
    import platformdirs

    return Path(getattr(platformdirs, f"user_{kind}_dir")(app))


class UnsafePath(PermissionError):
    """A directory on the way to the socket (or the socket) is not ours alone; the message names it."""

    def __init__(self, path: Path, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"refusing to use {path}: {reason}")


def owner_name(uid: int) -> str:
    try:
        import pwd

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (KeyError, ImportError):
        return f"uid {uid}"


def _check_dir(path: Path, st: os.stat_result) -> None:
    import stat as stat_mod

    me = os.geteuid()
    if stat_mod.S_ISLNK(st.st_mode):
        raise UnsafePath(path, "it is a symbolic link, not a directory")
    if not stat_mod.S_ISDIR(st.st_mode):
        raise UnsafePath(path, "it is not a directory")
    if st.st_uid != me:
        raise UnsafePath(path, f"it is owned by {owner_name(st.st_uid)}, not by {owner_name(me)}")
    if st.st_mode & 0o022:
        raise UnsafePath(path, f"it is writable by others (mode {stat_mod.S_IMODE(st.st_mode):04o})")


def _check_base(path: Path) -> None:
    """The directory holding the per-user top (/tmp, XDG_RUNTIME_DIR, the parent of NEXUS_HOME): others may
    write there only if it is sticky (then they cannot rename or delete our entry), and it is root's or ours."""
    import stat as stat_mod

    try:
        st = os.stat(path)
    except OSError:
        return  # created below, or not at all; the chain check catches the rest
    if st.st_uid not in (0, os.geteuid()):
        raise UnsafePath(path, f"it is owned by {owner_name(st.st_uid)}")
    if st.st_mode & 0o002 and not st.st_mode & stat_mod.S_ISVTX:
        raise UnsafePath(path, "it is writable by everyone and not sticky")


def _chain(top: Path, leaf: Path) -> list[Path]:
    top, leaf = Path(os.path.abspath(top)), Path(os.path.abspath(leaf))
    if leaf != top and top not in leaf.parents:
        return [leaf]
    out = [leaf]
    while out[-1] != top:
        out.append(out[-1].parent)
    return out[::-1]


def check_private_chain(top: Path, leaf: Path, *, create: bool = False) -> Path:
    """Every directory from `top` down to `leaf` is a real directory of ours that nobody else can write to
    (created 0700 one level at a time when `create`); raises UnsafePath naming the first that is not."""
    base = Path(os.path.abspath(top)).parent
    if create:
        base.mkdir(parents=True, exist_ok=True, mode=0o700)
    _check_base(base)
    for d in _chain(top, leaf):
        if create:
            try:
                os.mkdir(d, 0o700)
            except FileExistsError:
                pass
        st = os.lstat(d)
        _check_dir(d, st)
    leaf_mode = os.lstat(leaf).st_mode & 0o777
    if create and leaf_mode & 0o077:
        os.chmod(leaf, 0o700)
    return leaf


def check_socket_dirs(d: Dirs, *, create: bool = False) -> Path:
    """The socket's directory chain, checked (and created when `create`): see check_private_chain."""
    return check_private_chain(d.socket_top, d.socket.parent, create=create)


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) and make sure the leaf is 0700 and ours (data and state)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = path.stat()
    if st.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to uid {st.st_uid}, not to us; refusing to use it")
    if st.st_mode & 0o077:
        path.chmod(0o700)
    return path


def tighten(root: Path) -> int:
    """Make every file (0600) and directory (0700) of ours under `root` private; returns how many changed.

    Homes written by earlier versions (or a log another tool redirected there) were 0644/0755 under the
    default umask: the daemon runs this over its own directories at start."""
    import stat as stat_mod

    changed = 0
    me = os.geteuid()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames, None]:
            path = os.path.join(dirpath, name) if name is not None else dirpath
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if st.st_uid != me or stat_mod.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
                continue
            mode = 0o700 if stat_mod.S_ISDIR(st.st_mode) else stat_mod.S_IMODE(st.st_mode) & 0o700
            try:
                os.chmod(path, mode)
                changed += 1
            except OSError:
                pass
    return changed


def create_private_file(path: Path) -> None:
    """Create `path` empty with mode 0600 if it is missing (writers that append, such as shells, keep its mode)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        return
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def read_pid(path: Path) -> int | None:
    """The pid written in a pid file, or None (no file, empty, not a number)."""
    try:
        text = path.read_text().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def pid_holder(path: Path) -> int | None:
    """The pid holding the daemon's lock on its pid file (`Dirs.pidfile`; nexusd/lock.py takes it), or None
    when nobody does: a stale file from a killed daemon says nothing. Here, not in lock.py, because clients ask
    it (`nexus daemon status`, stop) and import only errors, protocol and paths of the daemon."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return read_pid(path)
    finally:
        os.close(fd)
    return None
