"""Reading one repository file safely, and the name and content rules that decide which files hold secrets
or binary data. Shared by the walk and the parser processes (`sync/`), the snippets of `show` (`query/`) and
memory's staleness checks, so the rules live in one place below all of them.
"""

from __future__ import annotations

import os
import stat as stat_mod
from pathlib import Path

# Secret names. `.env.example`, `.env.sample`, `.env.template` and `.env.dist` are allowed: they are committed
# on purpose so that others can read them, and they document which settings exist.
_SECRET_EXACT: frozenset[str] = frozenset(
    {
        ".env", ".envrc", ".npmrc", ".pypirc", ".netrc", "_netrc", ".pgpass", ".git-credentials",
        ".htpasswd", ".dockercfg", "credentials", "credentials.json", "secrets.json", "secrets.yml",
        "secrets.yaml", "service-account.json", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519",
    }
)  # fmt: skip
_SECRET_SUFFIXES: tuple[str, ...] = (
    ".pem",
    ".key",
    ".p12",
    ".pfx",
    ".keystore",
    ".jks",
    ".kdbx",
    ".tfstate",
    ".tfstate.backup",
    ".ppk",
)
_SECRET_PREFIXES: tuple[str, ...] = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "client_secret")
_ENV_ALLOWED: frozenset[str] = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist"})

_SNIFF_BYTES = 8192


def classify_secret_name(name: str) -> bool:
    """True when a file *name* (not path) looks like key material or a credential store.

    Decided by name alone so that such files are never opened, not even to sniff them.
    """
    lower = name.lower()
    if lower in _SECRET_EXACT:
        return True
    if lower.startswith(".env."):
        return lower not in _ENV_ALLOWED
    if lower.endswith(_SECRET_SUFFIXES):
        return True
    return lower.startswith(_SECRET_PREFIXES)


def is_binary(head: bytes) -> bool:
    """Git's own heuristic: a NUL byte in the first 8 KiB means binary. Cheap and right for UTF-16-free repos."""
    return b"\x00" in head[:_SNIFF_BYTES]


def read_source_checked(
    root: Path | str, rel: str, max_bytes: int = 2_000_000
) -> tuple[bytes | None, str | None]:
    """Read one repo file safely; returns (bytes, None) or (None, reason).

    Safety between the walk and the read (a file may be swapped for a symlink meanwhile): the final component
    is opened with O_NOFOLLOW, and the real path of the opened file must still be inside the root, which also
    catches a symlinked parent directory. Reasons: outside-root, symlink, secret, too-large, binary, unreadable.
    """
    root_real = os.path.realpath(root)
    rel = rel.replace(os.sep, "/").strip("/")
    parts = rel.split("/")
    if not rel or os.path.isabs(rel) or any(p in ("..", ".", "") for p in parts):
        return None, "outside-root"
    if classify_secret_name(parts[-1]):
        return None, "secret"
    path = os.path.join(root_real, *parts)
    real = os.path.realpath(path)
    if real != path:
        return None, "outside-root" if not real.startswith(root_real + os.sep) else "symlink"
    flags = (
        os.O_RDONLY
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_NONBLOCK", 0)
    )
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return None, "symlink" if exc.errno == getattr(os, "ELOOP", -1) else "unreadable"
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            return None, "unreadable"
        if st.st_size > max_bytes:
            return None, "too-large"
        chunks: list[bytes] = []
        total = 0
        while True:  # read to EOF but never past the cap, even if the file grows meanwhile
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                return None, "too-large"
        data = b"".join(chunks)
    except OSError:
        return None, "unreadable"
    finally:
        os.close(fd)
    if is_binary(data):
        return None, "binary"
    return data, None


def read_source(root: Path | str, rel: str, max_bytes: int = 2_000_000) -> bytes | None:
    """The bytes of a repo file, or None when it must not or cannot be read (see `read_source_checked`)."""
    return read_source_checked(root, rel, max_bytes)[0]
