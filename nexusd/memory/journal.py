"""The memory journal: an append-only file of framed, checksummed JSON records, fsynced before a memory write
is acknowledged.

Kuzu can be left unopenable by a kill -9 during a checkpoint (ARCHITECTURE.md, "Invariants"; RELIABILITY.md),
and memory cannot be re-derived, so the journal is the source of truth and the graph a
replayable view of it:

    write:   append {seq, op, ...payload} -> fsync -> apply to the graph in one transaction
             (which also records `memory.journal.seq`/`.offset` in Meta) -> acknowledge
    start:   if Meta's seq is behind the journal's last seq (fresh or recreated database, or a crash between
             the fsync and the commit), replay the records after it; every record applies idempotently
             (MERGE by content-addressed id, absolute values, tombstones for deletions)

One record is one line:

    J1 <length of the JSON, hex> <crc32 of the JSON, 8 hex> <JSON>\\n

(lines starting with `{` are records of the older, unframed format, still read). A line whose length or
checksum does not match is damaged: at the end of the file (a torn write that was never acknowledged) it is
cut off when the journal is opened; in the middle (a bad disk, a stray edit) it is skipped, counted and
reported in `status` with the sequence numbers lost, and every record after it is still replayed. A damaged
record is never parsed as data.

Only the writer thread appends (one writer, in order), so seq numbers are dense and ordered. A write that
fails (a full disk) is cut back off, so the file never holds a partial or unacknowledged record that a later
write would follow, and no seq number is used twice.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAGIC = b"J1 "
MAX_DAMAGE_REPORTS = 20


@dataclass
class Damage:
    """What reading the journal found wrong, for `status`."""

    torn_tail_bytes: int = 0  # cut off at open (never acknowledged)
    damaged: list[dict[str, Any]] = field(default_factory=list)  # skipped records in the middle
    damaged_count: int = 0
    legacy_records: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "tornTailBytes": self.torn_tail_bytes,
            "damagedRecords": self.damaged_count,
            "damaged": self.damaged,
            "legacyRecords": self.legacy_records,
        }


def frame(record: dict[str, Any]) -> bytes:
    payload = json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
    return b"%s%x %08x %s\n" % (MAGIC, len(payload), zlib.crc32(payload), payload)


def parse_line(line: bytes) -> dict[str, Any] | None:
    """The record a complete line holds, or None when the line is damaged (never a guess)."""
    body = line[:-1] if line.endswith(b"\n") else line
    try:
        if body.startswith(MAGIC):
            length_hex, crc_hex, payload = body[len(MAGIC):].split(b" ", 2)
            if int(length_hex, 16) != len(payload) or int(crc_hex, 16) != zlib.crc32(payload):
                return None
        elif body.startswith(b"{"):
            payload = body
        else:
            return None
        record = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("seq"), int) or isinstance(record["seq"], bool):
        return None
    return record


class Journal:
    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self.damage = Damage()
        path.parent.mkdir(parents=True, exist_ok=True)
        created = not path.exists()
        self.last_seq, self.size = self._recover()
        # A raw descriptor, not a buffered file: a failed write must leave nothing in a buffer that a later
        # flush would write after the next record (duplicated seq numbers after a full disk).
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        if created:
            self._fsync_dir()

    def _scan(self) -> Iterator[tuple[int, int, dict[str, Any] | None, bool]]:
        """(offset, end, record or None, framed) for every line of the file, complete or not."""
        with open(self.path, "rb") as fh:
            offset = 0
            for line in fh:
                end = offset + len(line)
                yield offset, end, parse_line(line) if line.endswith(b"\n") else None, line.startswith(MAGIC)
                offset = end

    def _recover(self) -> tuple[int, int]:
        """Find the last good record; cut off what follows it (a torn tail); count damaged lines before it."""
        if not self.path.exists():
            return 0, 0
        last_seq = 0
        good = 0
        pending: list[tuple[int, int]] = []  # damaged lines since the last good record
        for offset, end, record, framed in self._scan():
            if record is None:
                pending.append((offset, end))
                continue
            for start, stop in pending:
                self._note_damage(start, stop, last_seq, int(record["seq"]))
            pending = []
            if not framed:
                self.damage.legacy_records += 1
            last_seq = max(last_seq, int(record["seq"]))
            good = end
        size = self.path.stat().st_size
        if good < size:
            self.damage.torn_tail_bytes = size - good
            log.warning("memory journal: cutting a torn tail of %d bytes at offset %d", size - good, good)
            with open(self.path, "r+b") as fh:
                fh.truncate(good)
                fh.flush()
                os.fsync(fh.fileno())
        if self.damage.damaged_count:
            log.error(
                "memory journal: %d damaged records skipped (their memory is lost; every later record is kept): %s",
                self.damage.damaged_count,
                self.damage.damaged,
            )
        return last_seq, good

    def _note_damage(self, start: int, stop: int, before_seq: int, after_seq: int) -> None:
        self.damage.damaged_count += 1
        if len(self.damage.damaged) < MAX_DAMAGE_REPORTS:
            self.damage.damaged.append(
                {"offset": start, "bytes": stop - start, "afterSeq": before_seq, "beforeSeq": after_seq}
            )

    def _fsync_dir(self) -> None:
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def append(self, record: dict[str, Any], *, sync: bool = True) -> tuple[int, int]:
        """Give the record the next seq, write it durably; returns (seq, offset just past it).
        Raises OSError (ENOSPC on a full disk) with nothing of the record left in the file."""
        with self._lock:
            seq = self.last_seq + 1
            data = frame({"seq": seq, **record})
            try:
                view = memoryview(data)
                while view:
                    written = os.write(self._fd, view)
                    if written <= 0:
                        raise OSError(errno.ENOSPC, "short write to the memory journal")
                    view = view[written:]
                if sync:
                    os.fsync(self._fd)
            except OSError:
                self._cut(self.size)
                raise
            self.last_seq = seq
            self.size += len(data)
            return seq, self.size

    def mark(self) -> tuple[int, int]:
        """Where the journal ends now: `rollback(mark)` undoes what is appended after it."""
        with self._lock:
            return self.last_seq, self.size

    def rollback(self, mark: tuple[int, int]) -> bool:
        """Cut off the records appended since `mark` (a write whose transaction failed: not stored, so not
        kept either, and its seq is free again). Truncating needs no free space. False if it could not."""
        seq, size = mark
        with self._lock:
            if self.size <= size:
                return True
            if not self._cut(size):
                return False
            self.last_seq, self.size = seq, size
            return True

    def _cut(self, size: int) -> bool:
        try:
            os.ftruncate(self._fd, size)
            os.fsync(self._fd)
            return True
        except OSError:
            log.exception("memory journal: could not cut the file back to %d bytes", size)
            return False

    def records(self, after_seq: int = 0, offset_hint: int = 0) -> Iterator[tuple[dict[str, Any], int]]:
        """Good records with seq > after_seq, each with the offset just past it; damaged lines are skipped.
        `offset_hint` skips ahead when it points at the record after `after_seq`."""
        start = offset_hint if 0 < offset_hint <= self.size else 0
        with open(self.path, "rb") as fh:
            fh.seek(start)
            offset = start
            first = True
            for line in fh:
                offset += len(line)
                if offset > self.size:
                    return
                record = parse_line(line)
                if record is None:
                    continue
                if first and start and int(record["seq"]) != after_seq + 1:
                    # The hint does not point where we thought (journal replaced?): read from the start.
                    yield from self.records(after_seq, 0)
                    return
                first = False
                if int(record["seq"]) > after_seq:
                    yield record, offset

    def stats(self) -> dict[str, Any]:
        return {"path": str(self.path), "lastSeq": self.last_seq, "bytes": self.size, **self.damage.as_dict()}

    def close(self) -> None:
        with self._lock:
            try:
                os.fsync(self._fd)
            except OSError:
                log.exception("memory journal: fsync at close failed")
            finally:
                os.close(self._fd)

