"""A worktree's overlay: the files that differ between a view (another worktree of a registered repository) and
the repository's baseline graph, resolved against the baseline. Runs on the writer thread only.

    scan the view (stat; read + hash what stat cannot clear, parse only what differs) -> the view's files
    -> overlay = files whose content differs from the baseline's + files the baseline has and the view not
    -> apply the overlay to the baseline's symbol table, resolve the overlay's files and every baseline file
       whose edges it moves, put the baseline's facts back -> the overlay's files (facts + resolution)
    -> the view listeners (the query side builds the view's snapshot from them: `query/overlay.py`)

Nothing of a view is written to the graph: the graph holds the baseline, and a view's answers come from the
baseline's snapshot with the overlay on top. The first scan of a view takes the files git vouches have the
baseline's bytes unread (`_git_same`) and hashes the others against the baseline's hash (no parse of a file
with the same bytes), so registering a worktree costs a read of the files that may differ and a parse of those
that do, not an index. ARCHITECTURE.md ("Worktrees").
"""

from __future__ import annotations

import logging
import os
import posixpath
import stat as stat_mod
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..batch import CommittedBatch, FileData
from ..parse.extract import extract
from ..parse.facts import FileFacts, content_hash
from ..parse.languages import parsed_language
from ..repos import git_view_entries, index_stamp, same_entries
from ..resolve.base import FileTable, RepoIndex
from .graphwrite import FileStat
from .indexer import MAX_FILE_BYTES, RepoSync, SyncReport, file_size, intern_facts
from .parsepool import ParseOutcome, ParsePool, ParseTask, extract_outcome, inline
from .walk import read_source_checked

if TYPE_CHECKING:
    from ..store import Conn

log = logging.getLogger(__name__)

Progress = Callable[[dict[str, Any]], None]
Shared = Callable[[str, str], "FileFacts | None"]
SharedTable = Callable[[str, "FileFacts"], "FileTable | None"]
# A view's differing files parse in the daemon when there are at most this many (after the shared ones and the
# docs, which take no parser): starting the pool costs 0.3 s on an idle machine and seconds on a loaded one, and
# with the pool warm each file's facts cost an encode in a worker and a decode here (~12 % of a flask view's
# CPU), more than parsing a few dozen files here (the same rule, and the same lack of a per-file time limit, as
# a small incremental sync).
VIEW_INLINE_MAX = 64


@dataclass
class ViewReport(SyncReport):
    """A view's scan: a sync report, plus how many of the differing files took facts another view holds and
    how many are of a language that is not parsed (both counted in `parsed`, without a parser), and how many
    files git vouched for (counted in `unchanged`, not read)."""

    shared: int = 0
    extracted: int = 0  # differing files of a language that is not parsed: facts made in the daemon, no parser
    not_read: int = 0  # files git says have the baseline's bytes (same blob, clean in both): not read

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "shared": self.shared, "extracted": self.extracted, "notRead": self.not_read}


class ViewSync:
    """The overlay of one view (worktree root) of one repository."""

    def __init__(self, repo_id: str, root: str, cache_dir: Path, pool: Callable[[], ParsePool],
                 shared: Shared = lambda _p, _h: None,
                 shared_table: SharedTable = lambda _p, _f: None) -> None:  # fmt: skip
        self.root = root
        # Facts of a (path, content hash) another view of the repository already holds: worktrees on branches
        # of nearby commits share most of the versions that differ from the baseline, parsed once.
        self.shared = shared
        # Another view's symbol table of those very facts (a table depends on its facts only): made once too.
        self.shared_table = shared_table
        self.pool = pool
        # The baseline engine's stages, pointed at the view's root: its walk rules, parse and facts cache.
        self.scanner = RepoSync(repo_id, root, cache_dir, pool)
        self.known: dict[str, tuple[str, int, int]] | None = None  # the view's files: (hash, size, mtimeNs)
        self.facts: dict[str, FileFacts] = {}  # the view's facts of the files that differ from the baseline
        self.files: dict[str, FileData | None] = {}  # the overlay last published
        self.tables: dict[str, FileTable] = {}  # the symbol tables of `facts`, made once (`resolve_overlay`)
        # The view's `git status` its first scan ran (when, stdout): its answers' state (`repos.View`) is taken
        # from it rather than asked of git again.
        self.status: tuple[float, str | None] | None = None
        # The (differing, missing) paths the overlay was last resolved for (`touched_by`).
        self.against: tuple[frozenset[str], frozenset[str]] | None = None

    def sync(self, conn: Conn, base: RepoSync, progress: Progress, *, paths: list[str] | None = None) -> ViewReport:
        """Scan the view (all of it, or `paths`) and recompute the overlay against the baseline."""
        t0 = time.perf_counter()
        base_known = base.known if base.known is not None else {}
        first = self.known is None
        # First scan: every file is read and hashed against the baseline's hash (its size and mtime cannot
        # match the baseline's checkout), so a file with the baseline's bytes is never parsed.
        known = {p: (h, -1, -1) for p, (h, _s, _m) in base_known.items()} if first else self.known
        assert known is not None
        report = ViewReport("view")
        scan = self.scanner.scan(known, paths, False, report)
        report.seconds["walk"] = time.perf_counter() - t0
        same = self._git_same(base, scan.stats) if first and paths is None else set()
        report.seconds["git"] = time.perf_counter() - t0 - report.seconds["walk"]
        outcomes = self._outcomes(scan.tasks, progress, report, same)
        changes = self.scanner.parse_changes(outcomes, scan, known, report)
        view_known = dict(known) if not first else {}
        if first:
            present = set(scan.stats)
            for path in present:
                if path in known:
                    view_known[path] = known[path]
        for path, st in changes.touched.items():
            view_known[path] = (known.get(path, ("", 0, 0))[0], st.size, st.mtime_ns)
        for path, facts in changes.changed.items():
            stat = scan.stats.get(path)
            view_known[path] = (facts.hash, stat.size if stat else 0, stat.mtime_ns if stat else 0)
            self.facts[path] = facts  # (interned by parse_changes)
        for path in changes.deleted:
            view_known.pop(path, None)
            self.facts.pop(path, None)
        self.known = view_known
        report.seconds["scan"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        self.rebase(conn, base, progress)
        report.seconds["overlay"] = time.perf_counter() - t1
        report.changed_paths = sorted(p for p, d in self.files.items() if d is not None and p in self.facts)
        report.deleted_paths = sorted(p for p, d in self.files.items() if d is None)
        report.affected_paths = sorted(p for p, d in self.files.items() if d is not None and p not in self.facts)
        report.affected, report.deleted = len(report.affected_paths), len(report.deleted_paths)
        report.seconds["total"] = time.perf_counter() - t0
        return report

    def _git_same(self, base: RepoSync, stats: dict[str, FileStat]) -> set[str]:
        """The view's files that git says have the baseline's bytes (`repos.same_entries`: the same blob,
        clean in both worktrees), less those whose baseline file is not what the baseline's hash was taken of
        (its size or mtime moved since: an edit the baseline has not synced yet). Their known hash is the
        baseline's, so they need no read. Empty when git cannot tell, or a `.gitattributes` differs.
        The baseline's clean entries are asked of git once and kept (`RepoSync.git_clean`) while its index
        file is unchanged; a kept entry vouches for a path only while the baseline's `known` entry of it is
        the one it had when git was asked (an edit synced since has a new one), so what a kept entry says is
        what git would say now, for every path it is used for."""
        base_known = base.known or {}
        now = time.monotonic()
        stamp = index_stamp(base.root)  # before git runs: an index written meanwhile gives another stamp
        kept = base.git_clean
        base_entries: dict[str, str] | None
        known_then: dict[str, Any]
        if stamp is not None and kept is not None and kept[0] == stamp:
            view, _, status = git_view_entries(self.root, None)
            base_entries, known_then = kept[1], kept[2]
        else:
            view, base_entries, status = git_view_entries(self.root, base.root)
            known_then = {p: base_known.get(p) for p in base_entries} if base_entries is not None else {}
            base.git_clean = (stamp, base_entries, known_then) if stamp is not None and base_entries is not None else None
        self.status = (now, status)
        same = same_entries(view, base_entries)
        if not same:
            return set()
        attributes = {p for p in (*stats, *base_known) if posixpath.basename(p) == ".gitattributes"}
        if attributes - same:
            return set()  # line endings or filters may differ: every file is read
        out = set()
        for path in same:
            known = base_known.get(path)
            if known is None or not known[0] or path not in stats or known_then.get(path) != known:
                continue
            try:
                st = os.lstat(os.path.join(base.root, path))
            except OSError:
                continue
            if stat_mod.S_ISREG(st.st_mode) and st.st_size == known[1] and st.st_mtime_ns == known[2]:
                out.add(path)
        return out

    def _outcomes(self, tasks: list[ParseTask], progress: Progress, report: ViewReport,
                  same: set[str]) -> Iterator[ParseOutcome]:  # fmt: skip
        """Hash in the daemon first (a read and a hash per file, no process round trip): a file with its known
        bytes is "unchanged" here; only the others go to the parser (the pool when there are many). A file in
        `same` (git vouches it has the baseline's bytes, `_git_same`) is "unchanged" without a read."""
        rest: list[ParseTask] = []
        read: dict[str, tuple[bytes, str]] = {}  # the bytes (and hash) of `rest` (kept for the inline parse)
        t0 = time.perf_counter()
        for task in tasks:
            if task.path in same and task.known_hash:
                report.not_read += 1
                yield ParseOutcome(task.path, "unchanged", hash=task.known_hash)
                continue
            data, _reason = read_source_checked(self.root, task.path, MAX_FILE_BYTES)
            digest = content_hash(data) if data is not None else None
            if digest is not None and digest == task.known_hash:
                yield ParseOutcome(task.path, "unchanged", hash=digest)
                continue
            held = self.shared(task.path, digest) if digest is not None else None
            if held is not None:
                report.shared += 1
                yield ParseOutcome(task.path, "parsed", facts=held, hash=digest or "")
            elif data is not None and parsed_language(task.path) is None:
                # A file recorded but not parsed (docs, data: most of what differs between branches): its
                # facts are its hash, role and line count, made here from the bytes just read.
                report.extracted += 1
                yield ParseOutcome(task.path, "parsed", facts=extract(task.path, data, digest), hash=digest or "")
            else:
                rest.append(task)
                if len(rest) > VIEW_INLINE_MAX:
                    read.clear()  # the pool parses them: it reads them itself
                elif data is not None and digest is not None:
                    read[task.path] = (data, digest)
        t1 = time.perf_counter()
        report.seconds["hash"] = t1 - t0
        yield from self._parse(rest, progress, report, read)
        report.seconds["parse"] = time.perf_counter() - t1

    def _parse(self, tasks: list[ParseTask], progress: Progress, report: SyncReport,
               read: dict[str, tuple[bytes, str]] | None = None) -> Iterator[ParseOutcome]:  # fmt: skip
        """Parse `tasks`: in the daemon when few (from the bytes the hash step read, `read`, when it did: no
        second read or hash), else in the pool."""
        if tasks and len(tasks) <= VIEW_INLINE_MAX:
            progress({"phase": "parse", "done": 0, "total": len(tasks), "message": "parsing in the daemon"})
            read = read or {}
            for task in tasks:
                held = read.pop(task.path, None)
                if held is None:
                    yield from inline(self.root, [task], MAX_FILE_BYTES)
                else:
                    yield extract_outcome(task.path, held[0], held[1])
        else:
            yield from self.scanner._parse(tasks, lambda p: file_size(self.root, p), progress)

    def held(self, path: str, digest: str) -> FileFacts | None:
        """The facts this view holds for `path` when they are of the content `digest`."""
        facts = self.facts.get(path)
        return facts if facts is not None and digest and facts.hash == digest else None

    def table_of(self, path: str, facts: FileFacts) -> FileTable | None:
        """The symbol table this view made of `facts` for `path` (with what `set_file` derives from them)."""
        table = self.tables.get(path)
        return table if table is not None and table.facts is facts and table.derived is not None else None

    def differing(self, base: RepoSync) -> tuple[set[str], set[str]]:
        """(paths whose content in the view differs from the baseline's or that only the view has, baseline
        paths the view does not have)."""
        base_known = base.known or {}
        view_known = self.known or {}
        differ = {p for p, (h, _s, _m) in view_known.items() if base_known.get(p, ("",))[0] != h or not h}
        return differ, set(base_known) - set(view_known)

    def rebase(self, conn: Conn, base: RepoSync, progress: Progress) -> dict[str, FileData | None]:
        """Recompute the overlay against the baseline as it is now (after the view's scan, or after a baseline
        batch): no read of the view's files except those whose facts are not held."""
        index = base._ensure_index(conn, progress, skip=set())
        differ, missing = self.differing(base)
        view_known = self.known or {}
        for path in set(self.facts) - differ:
            del self.facts[path]  # the same bytes as the baseline now
        # Facts of the view's files that differ are parsed from the view (the facts cache is not read: its
        # packs are loaded whole, seconds for a large repository, to save a parse of a few files).
        need = []
        for path in sorted(differ - set(self.facts)):
            held = self.shared(path, view_known.get(path, ("",))[0])
            if held is not None:
                self.facts[path] = held
            else:
                need.append(path)
        if need:
            report = SyncReport("view")
            for outcome in self._parse([ParseTask(p) for p in need], progress, report):
                if outcome.facts is not None:
                    self.facts[outcome.path] = intern_facts(outcome.facts)
        differ &= set(self.facts)
        for path in differ:
            facts, table = self.facts[path], self.tables.get(path)
            if table is None or table.facts is not facts:
                other = self.shared_table(path, facts)
                if other is not None:
                    self.tables[path] = other
        self.against = None
        self.files = resolve_overlay(index, base.facts, {p: self.facts[p] for p in differ}, missing, self.tables)
        self.against = (frozenset(differ), frozenset(missing))
        return self.files

    def touched_by(self, base: RepoSync, batch: CommittedBatch) -> bool:
        """Whether a baseline batch can move this view. It cannot when every path whose rows the batch rewrote
        is one the overlay holds (so the view shows the overlay's rows, not the batch's) and the files the
        batch changed or deleted stay the view's own (still differing, or still missing, in the view): then
        the table the overlay was resolved against is, for the view, what it was, and so is every answer."""
        if batch.mode == "cold" or self.against is None:
            return True
        if not batch.paths <= set(self.files):
            return True
        differ, missing = self.differing(base)
        return bool(differ - set(self.facts)) or (frozenset(differ), frozenset(missing)) != self.against


def resolve_overlay(
    index: RepoIndex,
    base_facts: dict[str, FileFacts],
    overlay: dict[str, FileFacts],
    missing: set[str],
    tables: dict[str, FileTable] | None = None,
) -> dict[str, FileData | None]:
    """The overlay's files resolved against the baseline's symbol table: the view's facts put in (and the
    baseline files the view lacks taken out), every file whose edges that can move resolved, then the
    baseline's tables put back, so the table is the baseline's again whatever happens. `tables`: the view's
    tables of its facts from the last time (kept and updated): a table put in again, the view's or the
    baseline's, costs no recomputation of what its facts provide and refer to."""
    tables = {} if tables is None else tables
    for path in set(tables) - set(overlay):
        del tables[path]
    saved: dict[str, FileTable] = {}
    names: set[str] = set()
    config_changed = False
    try:
        for path, facts in overlay.items():
            table = tables.get(path)
            if table is None or table.facts is not facts:
                table = tables[path] = RepoIndex.keep_derived(FileTable(facts))
            old = index.table(path)
            if old is not None:
                saved[path] = RepoIndex.keep_derived(old)
            names |= index.set_file(facts, table)
            config_changed |= posixpath.basename(path) in RepoIndex.CONFIG_NAMES
        for path in missing:
            old = index.table(path)
            if old is not None:
                saved[path] = RepoIndex.keep_derived(old)
            names |= index.remove_file(path)
            config_changed |= posixpath.basename(path) in RepoIndex.CONFIG_NAMES
        live = (set(base_facts) | set(overlay)) - missing
        to_resolve = live if config_changed else (set(overlay) | (index.files_referencing(names) - missing))
        files: dict[str, FileData | None] = {}
        for path in sorted(to_resolve):
            held = overlay.get(path) or base_facts.get(path)
            if held is not None:
                files[path] = (held, index.resolve_file(path))
        for path in missing:
            files[path] = None
        return files
    finally:
        for path in (*overlay, *missing):
            own = base_facts.get(path)
            if own is not None:
                kept = saved.get(path)
                index.set_file(own, kept if kept is not None and kept.facts is own else None)
            elif path in overlay:
                index.remove_file(path)
