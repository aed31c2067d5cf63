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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ..batch import FileData
from ..parse.facts import FileFacts, SymbolFact, symbol_id
from .compact import Names, Over
from .snapshot import Snapshot, Snapshots

if TYPE_CHECKING:
    from ..repos import Repo
    from ..store import Conn


class Layer(Over):
    """A dict over a base dict (or a compacted baseline's `Over`): `top` holds what the overlay set, `gone` what
    it removed from the base. A view starts out `writing` (its overlay files are being applied: a list or array
    read from the base is copied into `top` first, so the caller may append to it); `build_view` turns that off."""

    __slots__ = ()

    def __init__(self, base: Mapping[Any, Any]) -> None:
        super().__init__(base)
        self.writing = True


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


class OwnSymbol(NamedTuple):
    """A symbol of a view's own version of a file, with its content hash there (`ViewSource.symbol_fact`)."""

    fact: SymbolFact
    content_hash: str


@dataclass(frozen=True)
class ViewSource:
    """What a view's answers read beside its snapshot: the worktree's own files (snippets are its bytes, checked
    against its hash) and, for the files of its overlay, the view's facts (a file's hash, role, diagnostics; a
    symbol's doc and content hash). A file outside the overlay has the baseline's bytes: the graph's row is
    right for it."""

    repo_id: str
    root: str
    files: dict[str, FileData | None]

    def file_facts(self, path: str) -> FileFacts | None:
        """The view's facts of `path` when the overlay holds it (None: the graph's row is the view's)."""
        data = self.files.get(path)
        return data[0] if data is not None else None

    def symbol_fact(self, path: str, sym_id: str) -> OwnSymbol | None:
        """The view's symbol `sym_id` of `path` with its content hash, or None when the view has no such one."""
        facts = self.file_facts(path)
        if facts is None:
            return None
        for i, sym in enumerate(facts.symbols):
            if symbol_id(self.repo_id, path, sym.kind, sym.qualified_name, sym.occurrence) == sym_id:
                return OwnSymbol(sym, facts.symbol_hash(i))
        return None


def path_counts(snap: Snapshot, paths: set[str]) -> dict[str, Any]:
    """What the files `paths` hold in `snap`, in `status`'s terms (graphwrite.repo_counts): files, symbols, call
    edges out of their symbols by resolution, imports out of them, unresolved calls."""
    files = symbols = imports = unresolved = 0
    calls: dict[str, int] = {}
    for path in paths:
        if path not in snap.files:
            continue
        files += 1
        imports += len(snap.imports_out.get(path, ()))
        for sid in snap.by_file.get(path, ()):
            sym = snap.by_id.get(sid)
            if sym is None:
                continue
            symbols += 1
            unresolved += sym.unresolved_count
            for edge in snap.calls_out.get(sid, ()):
                calls[edge.resolution] = calls.get(edge.resolution, 0) + 1
    return {"files": files, "symbols": symbols, "calls": calls, "imports": imports, "unresolved": unresolved}


def view_counts(base_counts: dict[str, Any], base: Snapshot, view: Snapshot, paths: set[str],
                base_diag_paths: set[str], own_diags: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:  # fmt: skip
    """`status`'s counts for a view: the baseline's, less what the overlay's paths hold in the baseline, plus what
    they hold in the view. `base_diag_paths`: the overlay's paths with diagnostics in the graph; `own_diags`: the
    view's diagnostics of its overlay's files, by path."""
    before, after = path_counts(base, paths), path_counts(view, paths)
    edges = base_counts.get("edges") or {}
    calls = dict(edges.get("calls") or {})
    for res in set(calls) | set(before["calls"]) | set(after["calls"]):
        n = calls.get(res, 0) - before["calls"].get(res, 0) + after["calls"].get(res, 0)
        if n > 0:
            calls[res] = n
        else:
            calls.pop(res, None)
    out = dict(base_counts)
    out["files"] = base_counts.get("files", 0) - before["files"] + after["files"]
    out["symbols"] = base_counts.get("symbols", 0) - before["symbols"] + after["symbols"]
    out["edges"] = {**edges, "calls": dict(sorted(calls.items())),
                    "imports": edges.get("imports", 0) - before["imports"] + after["imports"]}  # fmt: skip
    out["unresolvedReferences"] = base_counts.get("unresolvedReferences", 0) - before["unresolved"] + after["unresolved"]
    out["filesWithDiagnostics"] = base_counts.get("filesWithDiagnostics", 0) - len(base_diag_paths) + len(own_diags)
    return out


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

    def held(self) -> list[str]:
        """The repository ids with an overlay or a built view (`debug.retained`)."""
        with self._lock:
            return sorted({k[0] for k in self._overlays} | {k[0] for k in self._built})

    def drop(self, repo_id: str, root: str | None = None) -> None:
        with self._lock:
            for key in [k for k in self._overlays if k[0] == repo_id and (root is None or k[1] == root)]:
                self._overlays.pop(key, None)
                self._built.pop(key, None)

    def overlay_of(self, repo_id: str, root: str) -> dict[str, FileData | None] | None:
        with self._lock:
            entry = self._overlays.get((repo_id, root))
        return entry[1] if entry is not None else None

    def source(self, repo: Repo, path: str | None) -> ViewSource | None:
        """The view holding `path` (None: the repository's own root, or no path)."""
        if not path or not repo.views:
            return None
        root = repo.view_root(os.path.realpath(path))
        if root == repo.root:
            return None
        return ViewSource(repo.id, root, self.overlay_of(repo.id, root) or {})

    def symbol_in_views(self, repo_id: str, path: str, sym_id: str) -> list[tuple[str, str]]:
        """(view root, the symbol's content hash there) for each view of the repository whose overlay holds the
        symbol `sym_id` of `path` (memory's status of a fact about a symbol only a view has, or a view changed)."""
        with self._lock:
            held = [(root, files) for (rid, root), (_serial, files) in sorted(self._overlays.items()) if rid == repo_id]
        out = []
        for root, files in held:
            own = ViewSource(repo_id, root, files).symbol_fact(path, sym_id)
            if own is not None:
                out.append((root, own.content_hash))
        return out

    def status(self, conn: Conn, repo: Repo, root: str, counts: dict[str, Any],
               diags: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:  # fmt: skip
        """`status`'s counts and diagnostics (the baseline's: `counts`, `diags`) as the view at `root` has them."""
        files = self.overlay_of(repo.id, root) or {}
        if not files:
            return counts, diags
        paths = set(files)
        rows = conn.rows(
            "MATCH (f:File) WHERE f.repoId = $r AND f.path IN $paths AND coalesce(f.diagnostics, '') <> '' "
            "RETURN f.path", {"r": repo.id, "paths": sorted(paths)},
        )  # fmt: skip
        own: dict[str, list[dict[str, Any]]] = {}
        for path, data in files.items():
            if data is not None and data[0].diagnostics:
                own[path] = [{"path": path, "severity": d.severity, "code": d.code, "message": d.message[:300],
                              "line": d.line} for d in data[0].diagnostics[:20]]  # fmt: skip
        base = self.snapshots.get(conn, repo)
        view = self.get(conn, repo, root)
        with base.lock.read():
            out = view_counts(counts, base, view, paths, {r[0] for r in rows}, own)
        listed = [d for d in diags if d.get("path") not in paths] + [d for ds in own.values() for d in ds]
        listed.sort(key=lambda d: (d.get("path", ""), d.get("line") or 0))
        return out, listed[: max(20, len(diags))]

    def get(self, conn: Conn, repo: Repo, path: str | None, info: dict[str, Any] | None = None) -> Snapshot:
        base = self.snapshots.get(conn, repo, info)
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
