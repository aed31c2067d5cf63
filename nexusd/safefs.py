"""Reading files a request names (shell history files to scrape, a Claude config dir), and refusing trees that
must never be indexed: the rules are in ARCHITECTURE.md ("What a request may make the daemon read").

A path a client passes is read only when, after resolving every symlink, it is a regular file on a real
filesystem (never proc, sysfs, devtmpfs...), in a place such data lives (the user's home, `HISTFILE`,
`CLAUDE_CONFIG_DIR`) or under a registered repository; it is opened with O_NOFOLLOW | O_NONBLOCK (a FIFO or a
device never blocks a thread, a swapped-in symlink is not followed) and read within a size and time bound.
Anything else is `bad_request` with the reason.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from .errors import BadRequest, Forbidden

# Filesystems whose "files" are the kernel's state or devices, never user data.
PSEUDO_FS = frozenset(
    {
        "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs",
        "configfs", "fusectl", "bpf", "pstore", "mqueue", "hugetlbfs", "efivarfs", "binfmt_misc", "autofs",
        "rpc_pipefs", "nsfs", "selinuxfs", "ramfs",
    }
)  # fmt: skip
# Trees of the operating system: never a repository to index (nor a file to scrape).
SYSTEM_TREES = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin", "/sys",
    "/usr", "/var", "/snap", "/lost+found",
)  # fmt: skip
# Project directories that conventionally live inside those trees.
SYSTEM_TREE_EXCEPTIONS = ("/usr/src", "/usr/local/src", "/var/www")
READ_DEADLINE_S = 5.0
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


def _unescape_mount(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def fs_type(path: str) -> str | None:
    """The type of the filesystem `path` (already resolved) lies on, from /proc/self/mountinfo (None if unknown)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            lines = fh.readlines()
    except OSError:
        return None
    best, kind = "", None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) < 5 or not right:
            continue
        mount = _unescape_mount(fields[4])
        if path == mount or path.startswith(mount.rstrip("/") + "/") or mount == "/":
            if len(mount) >= len(best):
                best, kind = mount, right.split()[0]
    return kind


def _under(real: str, root: str) -> bool:
    root = root.rstrip(os.sep) or os.sep
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def system_tree(real: str) -> str | None:
    """Why `real` (a resolved directory) is not a tree to index, or None when it may be indexed."""
    if real == os.sep:
        return "it is the filesystem root"
    for tree in SYSTEM_TREES:
        if _under(real, tree) and not any(_under(real, e) and real != e for e in SYSTEM_TREE_EXCEPTIONS):
            return f"it is a system tree ({tree})"
    kind = fs_type(real)
    if kind in PSEUDO_FS:
        return f"it is on a {kind} filesystem (kernel state or devices, not files)"
    if kind in ("tmpfs", "devtmpfs") and _under(real, "/dev"):
        return "it is /dev"
    return None


def check_path_arg(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest(f"`{name}` must be a non-empty path")
    if "\x00" in value:
        raise BadRequest(f"`{name}` must not contain a NUL byte")
    return value


def home_dirs() -> list[str]:
    """The daemon user's home directories ($HOME and the password database's), resolved."""
    out: list[str] = []
    candidates = [os.environ.get("HOME")]
    try:
        import pwd

        candidates.append(pwd.getpwuid(os.geteuid()).pw_dir)
    except (KeyError, ImportError):
        pass
    for c in candidates:
        if c and os.path.isabs(c):
            real = os.path.realpath(c)
            if real != os.sep and real not in out:
                out.append(real)
    return out


def _history_name(name: str) -> bool:
    low = name.lower()
    return low.endswith(("history", "histfile"))


def history_file(value: object, repo_roots: Iterable[str]) -> str:
    """The resolved path of a shell history file a request asked to scrape, or BadRequest saying why not.

    Allowed: `$HISTFILE` (the daemon's), a file whose name ends in `history`/`histfile` under the user's home
    (`~/.bash_history`, `$ZDOTDIR/.zsh_history`, `~/.histfile`...), or any file under a registered repository."""
    path = check_path_arg(value, "path")
    if not os.path.isabs(path):
        raise BadRequest(f"{path!r}: a history file is given as an absolute path")
    real = os.path.realpath(path)
    allowed = False
    histfile = os.environ.get("HISTFILE")
    if histfile and os.path.realpath(histfile) == real:
        allowed = True
    elif _history_name(os.path.basename(real)) and any(_under(real, h) for h in home_dirs()):
        allowed = True
    elif any(_under(real, r) for r in repo_roots):
        allowed = True
    if not allowed:
        where = f" (it resolves to {real})" if real != path else ""
        raise BadRequest(
            f"{path}{where} is not a shell history file of this user: only HISTFILE, a *history file in the "
            "home directory, or a file under a registered repository may be read"
        )
    check_regular(real, path)
    return real


def check_regular(real: str, shown: str | None = None) -> os.stat_result:
    """A regular file on a real filesystem (opened without blocking, to find out), or BadRequest."""
    shown = shown or real
    kind = fs_type(real)
    if kind in PSEUDO_FS:
        raise BadRequest(f"{shown} is on a {kind} filesystem: not a file to read")
    try:
        fd = os.open(real, _FLAGS)
    except FileNotFoundError:
        raise BadRequest(f"{shown} does not exist") from None
    except OSError as exc:
        raise BadRequest(f"{shown} cannot be opened: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode):
        raise BadRequest(f"{shown} is not a regular file ({_kind(st.st_mode)})")
    return st


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"),
    ):  # fmt: skip
        if test(mode):
            return name
    return "not a regular file"


def read_tail(real: str, max_bytes: int, deadline_s: float = READ_DEADLINE_S) -> tuple[bytes, int]:
    """The last `max_bytes` of a regular file (and its size), read within `deadline_s`; OSError otherwise."""
    return _read_bounded(real, max_bytes, deadline_s, tail=True)


def read_head(real: str, max_bytes: int, deadline_s: float = READ_DEADLINE_S) -> tuple[bytes, int]:
    """The first `max_bytes` of a regular file (and its size), read within `deadline_s`; OSError otherwise."""
    return _read_bounded(real, max_bytes, deadline_s, tail=False)


def _read_bounded(real: str, max_bytes: int, deadline_s: float, tail: bool) -> tuple[bytes, int]:
    fd = os.open(real, _FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{real} is not a regular file")
        if tail:
            os.lseek(fd, max(0, st.st_size - max_bytes), os.SEEK_SET)
        chunks: list[bytes] = []
        total = 0
        end = time.monotonic() + deadline_s
        while total < max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if time.monotonic() > end:
                raise OSError(f"reading {real} took longer than {deadline_s:g}s")
        return b"".join(chunks), st.st_size
    finally:
        os.close(fd)


def config_dir(value: object, name: str, repo_roots: Iterable[str], extra: Iterable[str | None] = ()) -> Path:
    """A directory a request names for the daemon to read from (Claude's config dir): under the user's home,
    one of `extra` (the configured default), or under a registered repository; never a system tree."""
    path = check_path_arg(value, name)
    if not os.path.isabs(path):
        raise BadRequest(f"`{name}` must be an absolute path")
    real = os.path.realpath(path)
    reason = system_tree(real)
    if reason is None and (
        any(_under(real, h) for h in home_dirs())
        or any(e and os.path.realpath(e) == real for e in extra)
        or any(_under(real, r) for r in repo_roots)
    ):
        return Path(real)
    raise BadRequest(
        f"`{name}` {path} is not a directory of this user's: it must lie under the home directory or a registered "
        f"repository{f' ({reason})' if reason else ''}"
    )


def index_root(real: str, shown: str) -> None:
    """Refuse system trees and pseudo-filesystems as a repository root (`real` is already resolved)."""
    reason = system_tree(real)
    if reason:
        where = f" (it resolves to {real})" if os.path.realpath(shown) != os.path.abspath(shown) else ""
        raise Forbidden(f"refusing to index {shown}{where}: {reason}", hint="index a project directory instead")
