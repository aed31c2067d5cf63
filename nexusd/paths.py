"""Where NEXUS keeps things. XDG conventions by default (via platformdirs); NEXUS_HOME puts all under one folder.

    data     the Kuzu database, the memory journal (user data: never deleted by a rebuild)
    state    logs, the pid lock, caches of derived facts, the shell spool
    runtime  the daemon's socket, in a 0700 directory

Pure: clients import this to find the socket.
"""

from __future__ import annotations

import os
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
        return Path(_tmp()) / f"nexus-{os.getuid()}" / digest / "nexusd.sock"

    @property
    def endpoint(self) -> str:
        return f"ipc://{self.socket}"


def _tmp() -> str:
    import tempfile

    return tempfile.gettempdir()


def dirs(environ: dict[str, str] | None = None) -> Dirs:
    env = os.environ if environ is None else environ
    home = env.get("NEXUS_HOME")
    if home:
        root = Path(home).expanduser().absolute()
        return Dirs(root / "data", root / "state", root / "run")
    import platformdirs

    # The runtime dir is decided here, not by platformdirs, which warns when XDG_RUNTIME_DIR is unset.
    xdg_runtime = env.get("XDG_RUNTIME_DIR")
    if xdg_runtime and os.path.isdir(xdg_runtime) and os.access(xdg_runtime, os.W_OK):
        runtime = Path(xdg_runtime) / APP
    else:  # containers and su sessions often lack /run/user/$UID: /tmp/nexus-$UID (0700) instead
        runtime = Path(_tmp()) / f"nexus-{os.getuid()}" / "run"
    return Dirs(Path(platformdirs.user_data_dir(APP)), Path(platformdirs.user_state_dir(APP)), runtime)


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) and make sure the leaf is 0700 and ours: sockets live here."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = path.stat()
    if st.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to uid {st.st_uid}, not to us; refusing to use it")
    if st.st_mode & 0o077:
        path.chmod(0o700)
    return path
