"""The shell prompt hook's spool format (the reader side), and a fallback scraper of shell history files.

The hook itself, plain shell appending one line per command, is written by the client
(`client/shellhook.py`, which says why plain shell and what it records); the daemon ingests the spool whenever
it runs, so nothing is lost while it is down. The daemon rotates the spool by renaming it before reading it; a
writer that appends later simply creates a fresh file.

The spool line (version 1: seven tab-separated fields, escapes, the 4,000-character cut) is specified once, in
the hook's own docstring (`client/shellhook.py`); `parse_spool` below is its reader.
"""

from __future__ import annotations

import re
from pathlib import Path

from nexusd.history.facts import ShellCommandFacts
from nexusd.history.redact import redact

__all__ = ["SPOOL_VERSION", "parse_spool", "scrape_history"]

SPOOL_VERSION = "N1"
_MAX_SCRAPE_BYTES = 4 << 20


_UNESCAPE = re.compile(r"\\(.)", re.DOTALL)
_UNESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


def _unescape(value: str) -> str:
    return _UNESCAPE.sub(lambda m: _UNESCAPES.get(m.group(1), "\\" + m.group(1)), value)


def _epoch(value: str) -> float:
    return float(value.replace(",", "."))


def parse_spool(data: bytes) -> tuple[list[ShellCommandFacts], int]:
    """Parse spool bytes into (commands, number of malformed lines).

    A last line without its newline is a write in progress (or torn by a crash): it is neither returned nor
    counted; the caller keeps `data[data.rfind(b"\\n") + 1:]` for the next read if it does not rotate the spool.
    """
    commands: list[ShellCommandFacts] = []
    bad = 0
    lines = data.split(b"\n")
    for raw in lines[:-1]:  # the element after the last "\n" is empty or a torn line
        if not raw.strip():
            continue
        fields = raw.decode("utf-8", "replace").split("\t")
        if len(fields) != 7 or fields[0] != SPOOL_VERSION or fields[1] not in ("bash", "zsh"):
            bad += 1
            continue
        _, shell, start, end, code, cwd, text = fields
        try:
            started, ended, exit_code = _epoch(start), _epoch(end), int(code)
        except ValueError:
            bad += 1
            continue
        text = _unescape(text)
        if not text.strip():
            continue
        commands.append(
            ShellCommandFacts(
                text=redact(text)[0],
                cwd=_unescape(cwd),
                exit_code=exit_code,
                started_at=started,
                duration_ms=max(0, round((ended - started) * 1000)),
                shell=shell,
                source="hook",
            )  # fmt: skip
        )
    return commands, bad


def _unmetafy(data: bytes) -> bytes:
    """zsh stores bytes >= 0x80 in its history 'metafied': 0x83 followed by the byte XOR 0x20."""
    if b"\x83" not in data:
        return data
    out = bytearray()
    it = iter(data)
    for byte in it:
        if byte == 0x83:
            nxt = next(it, None)
            if nxt is not None:
                out.append(nxt ^ 0x20)
        else:
            out.append(byte)
    return bytes(out)


_ZSH_EXTENDED = re.compile(r"^: (\d+):(\d+);(.*)$", re.DOTALL)


def scrape_history(path: Path | str, kind: str, limit: int = 1000) -> list[ShellCommandFacts]:
    """The last `limit` commands of a bash or zsh history file, oldest first, labelled source="scraped".

    A fallback for commands typed before the hook was installed: exit code and cwd are unknown (None, ""),
    start times are known only with `HISTTIMEFORMAT` (bash `#<epoch>` lines) or zsh's EXTENDED_HISTORY
    (`: <start>:<elapsed>;<command>`), else 0. Only the file's last 4 MiB are read.
    """
    if kind not in ("bash", "zsh"):
        raise ValueError(f"unsupported shell: {kind!r} (bash or zsh)")
    from nexusd.safefs import read_tail

    try:  # a regular file only (never a FIFO or a device: O_NONBLOCK, fstat), within a size and time bound
        data, size = read_tail(str(path), _MAX_SCRAPE_BYTES)
    except OSError:
        return []
    if size > _MAX_SCRAPE_BYTES:
        data = data[data.find(b"\n") + 1 :]  # drop the partial first line
    if kind == "zsh":
        data = _unmetafy(data)
    text = data.decode("utf-8", "replace")
    commands: list[ShellCommandFacts] = []
    if kind == "bash":
        stamp = 0.0
        for line in text.split("\n"):
            if line.startswith("#") and line[1:].strip().isdigit():
                stamp = float(line[1:].strip())
                continue
            if line.strip():
                commands.append(ShellCommandFacts(redact(line)[0], "", None, stamp, None, "bash", "scraped"))
                stamp = 0.0
    else:
        entries: list[str] = []
        pending = ""
        for line in text.split("\n"):
            if line.endswith("\\") and not line.endswith("\\\\"):
                pending += line[:-1] + "\n"  # a multi-line command continues on the next line
                continue
            entries.append(pending + line)
            pending = ""
        for entry in entries:
            if not entry.strip():
                continue
            m = _ZSH_EXTENDED.match(entry)
            if m:
                start, elapsed, command = float(m.group(1)), int(m.group(2)) * 1000, m.group(3)
                commands.append(
                    ShellCommandFacts(redact(command)[0], "", None, start, elapsed, "zsh", "scraped")
                )
            else:
                commands.append(ShellCommandFacts(redact(entry)[0], "", None, 0.0, None, "zsh", "scraped"))
    return commands[-limit:] if limit > 0 else []
