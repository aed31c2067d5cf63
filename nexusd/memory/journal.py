"""The memory journal: an append-only JSON-lines file, fsynced before a memory write is acknowledged.

Kuzu can be left unopenable by a kill -9 during a checkpoint (docs/field-notes.md, resources and durability), and memory cannot be
re-derived, so the journal is the source of truth and the graph a replayable view of it:

    write:   append {seq, op, ...payload} -> flush + fsync -> apply to the graph in one transaction
             (which also records `memory.journal.seq`/`.offset` in Meta) -> acknowledge
    start:   if Meta's seq is behind the journal's last seq (fresh or recreated database, or a crash between
             the fsync and the commit), replay the records after it; every record applies idempotently
             (MERGE by content-addressed id, absolute values, tombstones for deletions)

Only the writer thread appends (one writer, in order), so seq numbers are dense and ordered. A torn last
line (a crash in the middle of a write that was never acknowledged) is cut off when the journal is opened.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class Journal:
    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        created = not path.exists()
        self.last_seq, self.size = self._recover()
        self._fh = open(path, "ab")  # noqa: SIM115 - held open for the daemon's lifetime
        if created:
            self._fsync_dir()

    def _recover(self) -> tuple[int, int]:
        """Find the last complete record; cut off a torn tail."""
        if not self.path.exists():
            return 0, 0
        last_seq = 0
        good = 0
        with open(self.path, "rb") as fh:
            offset = 0
            for line in fh:
                end = offset + len(line)
                if not line.endswith(b"\n"):
                    break
                try:
                    last_seq = int(json.loads(line)["seq"])
                except (ValueError, KeyError, TypeError):
                    break
                good = offset = end
        size = self.path.stat().st_size
        if good < size:
            log.warning("memory journal: cutting a torn tail of %d bytes at offset %d", size - good, good)
            with open(self.path, "r+b") as fh:
                fh.truncate(good)
                fh.flush()
                os.fsync(fh.fileno())
        return last_seq, good

    def _fsync_dir(self) -> None:
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def append(self, record: dict[str, Any], *, sync: bool = True) -> tuple[int, int]:
        """Give the record the next seq, write it durably; returns (seq, offset just past it)."""
        with self._lock:
            seq = self.last_seq + 1
            line = json.dumps({"seq": seq, **record}, separators=(",", ":"), ensure_ascii=False) + "\n"
            data = line.encode("utf-8", "surrogatepass")
            self._fh.write(data)
            self._fh.flush()
            if sync:
                os.fsync(self._fh.fileno())
            self.last_seq = seq
            self.size += len(data)
            return seq, self.size

    def records(self, after_seq: int = 0, offset_hint: int = 0) -> Iterator[tuple[dict[str, Any], int]]:
        """Records with seq > after_seq, each with the offset just past it. `offset_hint` skips ahead when valid."""
        start = offset_hint if 0 < offset_hint <= self.size else 0
        with open(self.path, "rb") as fh:
            fh.seek(start)
            offset = start
            first = True
            for line in fh:
                offset += len(line)
                if offset > self.size:
                    return
                record = json.loads(line)
                if first and start and int(record["seq"]) != after_seq + 1:
                    # The hint does not point where we thought (journal replaced?): read from the start.
                    yield from self.records(after_seq, 0)
                    return
                first = False
                if int(record["seq"]) > after_seq:
                    yield record, offset

    def close(self) -> None:
        with self._lock:
            try:
                self._fh.flush()
                os.fsync(self._fh.fileno())
            finally:
                self._fh.close()
