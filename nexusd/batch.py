"""A committed sync batch, as a value: what the write side hands the read side after each commit.

The sync engine (`sync/indexer.py`, `RepoSync.committed`) makes one `CommittedBatch` per committed batch;
`sync/live.py` hands it to the listeners the composition root registered (the query snapshots, memory's links
into code, history's change links). Readers of it never see the engine itself, so `query/` imports this module
and `parse/`/`resolve/` types, never `sync/`.

`edge_rows` (and the `import_rows`/`call_rows` it is made of) live here because both sides turn a file's
resolution into the same edge rows: the graph writer (`sync/graphwrite.py`, by file id) and the snapshot
(`query/snapshot.py`, by path), which must hold the same edges as the graph.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from .parse.facts import Packed, file_id

if TYPE_CHECKING:
    from .parse.facts import FileFacts
    from .resolve.base import FileResolution

# What the engine wrote for one file in a batch: its facts and the resolution written with them.
FileData = tuple["FileFacts", "FileResolution | None"]


@dataclass(frozen=True)
class CommittedBatch:
    repo_id: str
    version: int  # the graphVersion this batch made
    mode: str  # cold (the graph now holds exactly `files`) | incremental
    changed: tuple[str, ...]  # parsed again (new or edited)
    deleted: tuple[str, ...]  # left the graph
    affected: tuple[str, ...]  # re-resolved only: their edges changed
    # Per path of changed + affected (and None per deleted path): the facts and resolution written. None
    # when the engine does not hold all of them: a reader then reads those paths from the graph instead.
    files: Mapping[str, FileData | None] | None

    @property
    def paths(self) -> set[str]:
        """Every path whose rows this batch rewrote."""
        return set(self.changed) | set(self.deleted) | set(self.affected)


def edge_rows(repo_id: str, res: FileResolution) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(IMPORTS rows, POSSIBLY_CALLS rows); repeated calls between one pair keep the first line."""
    imports = [(file_id(repo_id, a), file_id(repo_id, b), *rest) for a, b, *rest in import_rows(res)]
    return imports, call_rows(res)


def import_rows(res: FileResolution) -> list[tuple[Any, ...]]:
    """IMPORTS rows by path: (from path, to path, specifier, line, resolution, confidence), one per pair of
    files (the first), none from a file to itself."""
    imports: dict[tuple[str, str], tuple[Any, ...]] = {}
    for e in res.imports:
        key = (e.src_path, e.dst_path)
        if key not in imports and e.src_path != e.dst_path:
            imports[key] = (e.src_path, e.dst_path, e.specifier[:300], e.line, e.resolution, float(e.confidence))
    return list(imports.values())


def call_rows(res: FileResolution) -> list[tuple[Any, ...]]:
    """POSSIBLY_CALLS rows: (from id, to id, line, resolution, confidence); repeated calls between one pair keep
    the first line."""
    calls: dict[tuple[str, str], tuple[Any, ...]] = {}
    # A `CallEdge` is a tuple of these fields in this order: packed ones are read as their plain rows, without
    # making an edge of each (~0.5 s of the standard library's cold write).
    edges = res.calls.rows() if isinstance(res.calls, Packed) else res.calls
    for src, dst, line, how, conf in sorted(edges, key=itemgetter(2)):
        if (src, dst) not in calls:
            calls[src, dst] = (src, dst, line, how, float(conf))
    return list(calls.values())
