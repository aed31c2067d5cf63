"""A worktree's view of a repository's snapshot: the baseline snapshot plus an overlay of the files that differ.

The baseline (`snapshot.Snapshot`, the repository's own root) is built once. A view is a `Snapshot` whose every
table is a `Layer` over the baseline's: reads fall through to the baseline, writes (the files of the overlay,
applied with the baseline's own `apply_files`) go to the layer, and a list or array the overlay changes is copied
first, so the baseline is never written through a view. A view costs what its overlay holds (the files that
differ and the entries they touch), not a second copy of the repository. ARCHITECTURE.md ("Worktrees") has the
whole picture; `sync/views.py` computes the overlay's files on the writer.

A view is built for one baseline version and one overlay (`Snapshots.view`); when either changes the next reader
builds a new one (the old one is left to the readers holding it). Readers hold the baseline's read lock (the view
shares it), so the baseline cannot change under a view that is being read.
"""

from __future__ import annotations

import os
import threading
from array import array
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from ..batch import FileData
from .compact import Names, Over, Rows
from .snapshot import Snapshot, Snapshots

if TYPE_CHECKING:
    from ..repos import Repo
    from ..store import Conn


class Layer(MutableMapping[Any, Any]):
    """A dict over a base dict: `top` holds what the overlay set, `gone` what it removed from the base (keys of
    the base, never in `top`). While `writing`, a list or array read from the base is copied into `top` first,
    so the caller may append to it."""

    __slots__ = ("base", "top", "gone", "writing")

    def __init__(self, base: dict[Any, Any] | Over) -> None:
        self.base = base
        self.top: dict[Any, Any] = {}
        self.gone: set[Any] = set()
        self.writing = True

    def __getitem__(self, key: Any) -> Any:
        top = self.top
        if key in top:
            return top[key]
        if key in self.gone:
            raise KeyError(key)
        value = self.base[key]
        if self.writing and isinstance(value, (list, array, Rows)):  # (Rows: a compacted baseline's edges)
            value = top[key] = value[:]
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return key in self.top or (key not in self.gone and key in self.base)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.top[key] = value
        self.gone.discard(key)

    def __delitem__(self, key: Any) -> None:
        if key in self.top:
            del self.top[key]
            if key in self.base:
                self.gone.add(key)
        elif key in self.base and key not in self.gone:
            self.gone.add(key)
        else:
            raise KeyError(key)

    def __iter__(self) -> Iterator[Any]:
        top, gone = self.top, self.gone
        yield from top
        for key in self.base:
            if key not in top and key not in gone:
                yield key

    def __len__(self) -> int:
        base = self.base
        return len(base) - len(self.gone) + sum(1 for key in self.top if key not in base)


class Slots:
    """The slot list over the baseline's: the baseline's slots (some freed by the overlay), then the overlay's."""

    __slots__ = ("base", "n", "extra", "dead")

    def __init__(self, base: list[Any]) -> None:
        self.base = base
        self.n = len(base)
        self.extra: list[Any] = []
        self.dead: set[int] = set()

    def __getitem__(self, slot: int) -> Any:
        if slot in self.dead:
            return None
        return self.base[slot] if slot < self.n else self.extra[slot - self.n]

    def __setitem__(self, slot: int, value: Any) -> None:
        if slot >= self.n:
            self.extra[slot - self.n] = value
        elif value is None:
            self.dead.add(slot)
        else:  # the snapshot only ever frees a baseline slot
            raise ValueError("a view never rewrites a baseline slot")

    def append(self, value: Any) -> None:
        self.extra.append(value)

    def __len__(self) -> int:
        return self.n + len(self.extra)


def fork(base: Snapshot) -> Snapshot:
    """A view of `base` that nothing was applied to yet (it shares the baseline's lock)."""
    view = Snapshot.__new__(Snapshot)
    for name, value in vars(base).items():
        if name == "slots":
            value = Slots(value)
        elif isinstance(value, (dict, Over)):  # (Over: a compacted baseline's table)
            value = Layer(value)
        elif isinstance(value, Names):
            value = value.copy()  # a compacted baseline's sorted_names
        elif isinstance(value, list):
            value = list(value)  # sorted_names: the overlay inserts its new names
        setattr(view, name, value)
    return view


def build_view(base: Snapshot, files: dict[str, FileData | None]) -> Snapshot:
    """The baseline plus the overlay `files` (path -> facts and resolution in the view, None: not in the view);
    the caller holds the baseline's read lock."""
    view = fork(base)
    if files:
        view.apply_files(base.version, files)
    for value in vars(view).values():
        if isinstance(value, Layer):
            value.writing = False
    view.version = base.version
    return view


def overlay_counts(view: Snapshot) -> dict[str, int]:
    """How much a view holds of its own (entries of its layers, slots it added): what it costs beside the
    baseline."""
    entries = sum(len(v.top) + len(v.gone) for v in vars(view).values() if isinstance(v, Layer))
    slots = view.slots
    return {"entries": entries, "symbols": len(slots.extra) if isinstance(slots, Slots) else 0}


class ViewSnapshots:
    """The views' snapshots (one per worktree that has an overlay), over the repositories' snapshots.

    `set_overlay` (a view listener, on the writer) records a view's overlay files; `get` (a reader) answers
    with the baseline's snapshot for the repository's own root or a view without an overlay, else with the
    view built for the baseline's current snapshot and the latest overlay (built by the first reader that
    needs it, under the baseline's read lock)."""

    def __init__(self, snapshots: Snapshots) -> None:
        self.snapshots = snapshots
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._serial = 0
        self._overlays: dict[tuple[str, str], tuple[int, dict[str, FileData | None]]] = {}
        # (repository id, view root) -> (the baseline snapshot it was built on, its version, overlay serial, view)
        self._built: dict[tuple[str, str], tuple[Snapshot, int, int, Snapshot]] = {}

    def set_overlay(self, repo: Repo, root: str, files: dict[str, FileData | None]) -> None:
        with self._lock:
            self._serial += 1
            self._overlays[(repo.id, root)] = (self._serial, dict(files))
            self._built.pop((repo.id, root), None)

    def drop(self, repo_id: str, root: str | None = None) -> None:
        with self._lock:
            for key in [k for k in self._overlays if k[0] == repo_id and (root is None or k[1] == root)]:
                self._overlays.pop(key, None)
                self._built.pop(key, None)

    def overlay_of(self, repo_id: str, root: str) -> dict[str, FileData | None] | None:
        with self._lock:
            entry = self._overlays.get((repo_id, root))
        return entry[1] if entry is not None else None

    def get(self, conn: Conn, repo: Repo, path: str | None) -> Snapshot:
        base = self.snapshots.get(conn, repo)
        if not path or not repo.views:
            return base
        root = repo.view_root(os.path.realpath(path))
        key = (repo.id, root)
        with self._lock:
            entry = self._overlays.get(key)
        if entry is None or not entry[1]:
            return base  # the repository's own root, a view with the baseline's files, or one not scanned yet
        serial, files = entry
        with base.lock.read():
            with self._build_lock:
                built = self._built.get(key)
                if built is not None and built[0] is base and built[1] == base.version and built[2] == serial:
                    return built[3]
                view = build_view(base, files)
                with self._lock:
                    if self._overlays.get(key, (None,))[0] == serial:
                        self._built[key] = (base, base.version, serial, view)
        return view
