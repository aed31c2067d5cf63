"""The repository symbol table and the edge records resolution produces.

`RepoIndex` holds the `FileFacts` of every file of one repository and answers, per file, which files it
imports and which symbols its calls may reach (`resolve_file`). It is incremental by construction:

* `set_file` / `remove_file` return the *names* whose meaning changed (a function appeared, a class lost
  a method, a barrel re-exports something else, a module file appeared). Only names, never edges:
* `files_referencing(names)` returns the files whose calls, imports or base classes mention any of them,
  i.e. exactly the files whose resolution may now differ; sync re-resolves those and nothing else.

Resolution is computed on demand and memoised until the next change (a generation counter), so a cold
index resolves every file against warm caches and an edit pays only for what it touches.

Language knowledge (how a specifier maps to a file, what a module exports, which names are builtins)
lives in `LanguageRules` subclasses (python.py, typescript.py, ...), which the language records name and
registry.py loads; the generic order of resolution lives in calls.py. This module knows neither.
"""

from __future__ import annotations

import json
import posixpath
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from nexusd.parse.facts import CallFact, FileFacts, ImportFact, SymbolFact, symbol_id
from nexusd.resolve import registry, typedeps

if TYPE_CHECKING:
    from nexusd.resolve.types import TypeTable


@dataclass(slots=True, frozen=True)
class ImportEdge:
    src_path: str
    dst_path: str
    specifier: str
    line: int
    resolution: str
    confidence: float


class CallEdge(NamedTuple):
    """One resolved call (kept packed, `FileResolution.calls`: a tuple is made ~4x faster than a frozen
    dataclass on each read)."""

    src_id: str
    dst_id: str
    line: int
    resolution: str
    confidence: float


class Site(NamedTuple):
    """One unresolved call site (`FileResolution.site_rows`)."""

    src_id: str
    raw: str  # the call as written, `unresolved_entry` without its line
    line: int
    external: bool  # its head is bound outside the repository


@dataclass(slots=True)
class FileResolution:
    path: str
    imports: list[ImportEdge] = field(default_factory=list)
    # `calls` and `site_rows` are `Packed` as resolution makes them (one blob per file, a record made for each on
    # every read): the resolutions of a cold index are held from resolution to the end of the write, and the
    # Linux kernel's 2.6 million edges and ~2.5 million unresolved sites were ~1 GB as objects.
    calls: Sequence[CallEdge] = field(default_factory=list)
    # The unresolved call sites, in call order; `unresolved` and `sites` read them by symbol.
    site_rows: Sequence[Site] = ()

    @property
    def unresolved(self) -> dict[str, list[str]]:
        """src symbol id -> its raw call strings, in call order."""
        out: dict[str, list[str]] = {}
        for sid, raw, _line, _external in self.site_rows:
            out.setdefault(sid, []).append(raw)
        return out

    @property
    def sites(self) -> dict[str, list[tuple[int, bool]]]:
        """Beside `unresolved`, entry for entry: (line of the call site, bound to something outside the repository?)."""
        out: dict[str, list[tuple[int, bool]]] = {}
        for sid, _raw, line, external in self.site_rows:
            out.setdefault(sid, []).append((line, external))
        return out

    def stored_unresolved(self, starts: Mapping[str, int] | None = None) -> dict[str, list[str]]:
        """`unresolved` as stored: one `unresolved_entry` per call site. With `starts` (symbol id -> its start
        line), the graph's form: each line relative to its symbol's start (`graph_entry`)."""
        out: dict[str, list[str]] = {}
        for sid, raw, line, external in self.site_rows:
            if starts is None:
                entry = unresolved_entry(raw, line, external)
            else:
                entry = graph_entry(raw, line, external, starts.get(sid, 0))
            out.setdefault(sid, []).append(entry)
        return out


EXTERNAL_MARK = "ext:"
# Unresolved sites stored per symbol (the count is always exact). Every stored site can turn an `impact` verdict
# into `lower_bound`, so the bound is generous: only generated or giant functions reach it.
MAX_STORED_SITES = 1000


def unresolved_entry(raw: str, line: int, external: bool) -> str:
    """How one unresolved call site is stored: `raw@line`, `ext:` in front when its head is bound outside the
    repository (`ext:requests.get@12`: it cannot reach a repository symbol, but it is still counted)."""
    return f"{EXTERNAL_MARK if external else ''}{raw}@{line}"


# The graph stores a site's line relative to its symbol's start line, `raw@+offset`: an edit above a symbol then
# moves only its integer line columns. Kuzu 0.11.3 writes a string column's node-group chunk again, with every
# value it ever held, at the checkpoint after a SET of one of them (ARCHITECTURE.md, "Database growth and
# compaction"), so rewriting the entries of every symbol below an added line made each such checkpoint slower.
RELATIVE_MARK = "@+"


def graph_entry(raw: str, line: int, external: bool, start: int) -> str:
    """`unresolved_entry` as the graph stores it: the line relative to the symbol's `start` (absolute, as
    `unresolved_entry` writes it, for a site above its symbol's start, which no extractor makes)."""
    if line < start:
        return unresolved_entry(raw, line, external)
    return f"{EXTERNAL_MARK if external else ''}{raw}{RELATIVE_MARK}{line - start}"


def absolute_sites(text: str, start: int) -> str:
    """Newline-joined entries read from the graph, with each relative line (`graph_entry`) made absolute
    again from the symbol's `start`: the form the query snapshot and `parse_unresolved` read."""
    if RELATIVE_MARK not in text:
        return text
    out = []
    for entry in text.split("\n"):
        head, sep, offset = entry.rpartition(RELATIVE_MARK)
        out.append(f"{head}@{start + int(offset)}" if sep and offset.isdigit() else entry)
    return "\n".join(out)


def parse_unresolved(entry: str) -> tuple[str, int, bool]:
    """(raw call string, line or 0, external?) of a stored entry (entries written before lines were kept
    have neither mark nor line)."""
    external = entry.startswith(EXTERNAL_MARK)
    if external:
        entry = entry[len(EXTERNAL_MARK) :]
    raw, sep, line = entry.rpartition("@")
    if sep and line.isdigit():
        return raw, int(line), external
    return entry, 0, external


@dataclass(slots=True, frozen=True)
class Target:
    """What a name denotes: a module (file) or a symbol in a file. `hops` counts re-export links followed."""

    kind: str  # "module" | "symbol" | "external" | "lazy" (= `name` as exported by module `path`)
    path: str
    symbol: SymbolFact | None = None
    hops: int = 0
    via: str = "import-bound"  # how the binding was made: import-bound | same-scope | block-scope | qualified
    name: str = ""


@dataclass(slots=True)
class FileBindings:
    """What a file's imports bind: local names, star sources, and the file->file edges."""

    names: dict[str, Target] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)  # paths whose exports are all visible
    edges: list[ImportEdge] = field(default_factory=list)


class FileTable:
    """Lookup structures over one file's symbols, built once per `set_file`."""

    __slots__ = ("facts", "children", "by_qn", "exports", "_local_imports", "derived", "scoped", "file_level", "types")

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        # parent qualified name (None = file level) -> name -> symbol; later definitions win, like Python.
        self.children: dict[str | None, dict[str, SymbolFact]] = defaultdict(dict)
        self.by_qn: dict[str, SymbolFact] = {}
        # file-level names bound only inside a block (TS/JS: `const f = ...` in a callback's body), by name, in
        # document order: `top_at` picks the one whose block holds a call; the file-level binding stays `top`
        self.scoped: dict[str, list[SymbolFact]] | None = None
        for sym in facts.symbols:
            if sym.kind == "module":
                continue
            if sym.kind == "overload" and sym.qualified_name in self.by_qn:
                continue  # an overload stub never hides the implementation, wherever it is written
            if sym.scope_end and sym.parent is None:
                if self.scoped is None:
                    self.scoped = {}
                self.scoped.setdefault(sym.name, []).append(sym)
                held = self.children[None].get(sym.name)
                if held is not None and not held.scope_end:
                    continue  # a block's binding never hides the file's own
            self.children[sym.parent][sym.name] = sym
            self.by_qn[sym.qualified_name] = sym
        # how many file-level (not block-scoped) definitions each block-scoped name also has (`top_at`)
        self.file_level: dict[str, int] | None = None
        if self.scoped is not None:
            self.file_level = {}
            for sym in facts.symbols:
                if sym.name in self.scoped and sym.parent is None and not sym.scope_end and sym.kind != "module":
                    self.file_level[sym.name] = self.file_level.get(sym.name, 0) + 1
        self.exports: dict[str, str] = dict(facts.exports)
        self._local_imports: dict[str, set[str]] | None = None
        # (provided pairs, referenced names, type dependency pairs), when kept (`RepoIndex.keep_derived`): a
        # table put in again (a worktree's overlay applied, then the baseline's table put back) costs no
        # recomputation. None for the baseline's tables otherwise (their memory).
        self.derived: tuple[set[tuple[str, str]], set[str], set[tuple[str, str]]] | None = None
        # Its facts' type environment, grouped (`types.env_table`), kept on a table that keeps `derived`.
        self.types: TypeTable | None = None

    def top(self, name: str) -> SymbolFact | None:
        return self.children.get(None, {}).get(name)

    def top_at(self, name: str, line: int) -> tuple[SymbolFact | None, bool]:
        """`top`, as seen from `line`: the innermost block-scoped binding of the name whose block holds the
        line, else the file-level one; and whether the blocks made the choice alone (no other definition of the
        name in the same block or at file level: a `block-scope` edge, where `same-scope` may be a guess)."""
        if self.scoped is None or not line or name not in self.scoped:
            return self.top(name), False
        best: SymbolFact | None = None
        twins = 0
        for sym in self.scoped[name]:
            if sym.scope_start <= line <= sym.scope_end:
                if best is None or sym.scope_start > best.scope_start:
                    best, twins = sym, 0
                elif (sym.scope_start, sym.scope_end) == (best.scope_start, best.scope_end):
                    twins += 1
        if best is not None:
            return best, twins == 0
        top = self.top(name)
        assert self.file_level is not None  # (made with `scoped`)
        return top, top is not None and not top.scope_end and self.file_level.get(name) == 1

    def local_imports(self) -> dict[str, set[str]]:
        """Function qualified name -> the local names imports written inside it bind (`def f(): from m import
        g`): inside f, `g` is the import, even when the file also defines a `g` at top level."""
        if self._local_imports is None:
            out: dict[str, set[str]] = {}
            funcs = [s for s in self.facts.symbols if s.kind in {"function", "method"}]
            first = min((s.start_line for s in funcs), default=0)
            for imp in self.facts.imports:
                if not funcs or imp.line <= first:
                    continue
                best: SymbolFact | None = None
                for sym in funcs:
                    if sym.start_line < imp.line <= sym.end_line and (best is None or sym.start_line > best.start_line):
                        best = sym
                if best is not None:
                    local = out.setdefault(best.qualified_name, set())
                    local.update(alias for name, alias in imp.names if name != "*")
                    if imp.module_alias:
                        local.add(imp.module_alias)
                    elif imp.kind == "import" and not imp.names:
                        local.add(imp.specifier.split(".", 1)[0])
            self._local_imports = out
        return self._local_imports


REF_TUPLE_MAX = 16  # `RepoIndex.referencers`: a name referenced by more files holds them in a set
MAX_HOPS = 8  # re-export chains and base-class walks are bounded: cycles exist in real code
TYPE_CLOSURE_MAX = 2000  # names a change may reach through type dependencies (typedeps.py)


class LanguageRules:
    """Language-specific resolution knowledge; one instance per language family per index."""

    languages: frozenset[str] = frozenset()
    self_names: frozenset[str] = frozenset()
    constructor_name = ""
    builtins: frozenset[str] = frozenset()  # bare call names that are never edges nor unresolved
    builtin_receivers: frozenset[str] = frozenset()  # `console` in console.log(...)
    # Method names so common on builtin types that an unknown receiver is almost never a repo class.
    common_methods: frozenset[str] = frozenset()
    self_constructor = ""  # a bare call of this name builds the enclosing class (Python `cls(...)`)
    class_scope_visible = False  # are class members callable bare from methods? (no in Python/JS)

    def __init__(self, index: RepoIndex) -> None:
        self.index = index

    def bind(self, table: FileTable) -> FileBindings:
        raise NotImplementedError

    def module_member(self, path: str, name: str, hops: int) -> Target | None:
        """The name `name` as seen from outside module file `path` (exports, re-exports, submodules)."""
        raise NotImplementedError

    def bare_name_only(self, table: FileTable) -> bool:
        """May a bare call that binds to nothing fall back to a same-name symbol elsewhere?"""
        return False

    def config_changed(self) -> None:
        """A manifest or project config file changed: drop whatever was read from it."""

    def release(self) -> None:
        """Drop the maps and answers resolution made and keeps between batches; each is made again on demand,
        with the same answers (`RepoIndex.release_caches`)."""

    def prepare(self) -> None:
        """Build now the whole-repository lookups the first resolution would build (`RepoIndex.prepare`)."""

    def resolve_call(
        self, table: FileTable, call: CallFact
    ) -> tuple[list[tuple[str, SymbolFact, str, float]], str] | None:
        """Language steps tried before calls.py's generic order (typed receivers, Go packages, C++
        declarations -> definitions): (edges, raw string if unresolved), or None to use the generic order."""
        return None


class RepoIndex:
    """Symbol table of one repository, updated file by file; see the module docstring."""

    CONFIG_NAMES = registry.project_files()

    def __init__(self, repo_id: str, root: Path) -> None:
        self.repo_id = repo_id
        self.root = Path(root)
        self.tables: dict[str, FileTable] = {}
        self.paths: set[str] = set()
        self.dirs: set[str] = set()  # every directory holding an indexed file (for package lookups)
        # name -> path, symbol, path, symbol... of every function/method/class of that name, flat, in the order
        # they were indexed (name-only fallback; `definers_of` reads them as pairs). Flat, not a list of pairs nor
        # a dict of lists by path: most names have one definition (the standard library: 38,600 of 42,700), and
        # a pair tuple per definition was ~4 MB of its table, the two containers per name ~7 MB before that.
        self.definers: dict[str, list[str | SymbolFact]] = {}
        # name -> the file(s) referencing it (change impact): the path itself when one file does (17,800 of the
        # standard library's 26,100 names: a set each was ~3.8 MB), a tuple of paths up to REF_TUPLE_MAX files
        # (a set is 216 bytes for 2-4 members and 728 for 5-18, a tuple 40 + 8 a path), a set beyond.
        self.referencers: dict[str, str | tuple[str, ...] | set[str]] = {}
        # Type dependencies (typedeps.py): mentioned name -> typed name -> how many files say so.
        self.type_users: dict[str, dict[str, int]] = defaultdict(dict)
        # What a file was indexed under is not kept: `_unindex` derives it again from the facts its table still
        # holds (the same function of the same facts; kept per file it was ~10.5 MB of the standard library's
        # table, each name a string of its own).
        self.generation = 0
        # Every path set or removed, in order (`touched_since`); cleared, with a new epoch, when it outgrows them.
        self._touch_log: list[str] = []
        self._touch_epoch = 0
        # Bumped only when a path appears or disappears: maps from module names to paths key on this, so a
        # content-only edit does not rebuild them (a 20k-file repository: ~90 ms per edit otherwise).
        self.path_generation = 0
        self._bindings: dict[str, FileBindings] = {}
        # Derived lookups (class bases, class members) valid until the next change, like `_bindings`.
        self.memo: dict[tuple[object, ...], object] = {}
        self._ids: dict[tuple[str, str, str, int], str] = {}
        self.rules: dict[str, LanguageRules] = registry.rules_for(self)

    # ---- updates -------------------------------------------------------------------------------------
    @staticmethod
    def keep_derived(table: FileTable) -> FileTable:
        """`table` with what `set_file` derives from its facts kept on it (for a table put in more than once)."""
        if table.derived is None:
            table.derived = _derive(table)
        return table

    def set_file(self, facts: FileFacts, table: FileTable | None = None) -> set[str]:
        """Add or replace a file's facts (or a table of them made before, `keep_derived`); returns the names whose
        meaning may have changed."""
        old = self.tables.get(facts.path)
        if table is None or table.facts is not facts:
            table = FileTable(facts)
        derived = _derive(table)
        changed = _provided(old) ^ derived[0]
        names = {n for n, _ in changed}
        if old is None:
            names |= _module_names(facts.path)
            self._add_dirs(facts.path)
            self.path_generation += 1
        self._unindex(facts.path)
        self.tables[facts.path] = table
        self.paths.add(facts.path)
        path = facts.path
        definers = self.definers
        for sym in facts.symbols:
            if sym.kind in {"function", "method", "class"}:
                flat = definers.get(sym.name)
                if flat is None:
                    definers[sym.name] = [path, sym]
                else:
                    flat += (path, sym)
        referencers = self.referencers
        for name in derived[1]:
            held = referencers.get(name)
            if held is None:
                referencers[name] = path
            elif type(held) is str:
                if held != path:
                    referencers[name] = (held, path)
            elif type(held) is tuple:
                if path not in held:
                    referencers[name] = held + (path,) if len(held) < REF_TUPLE_MAX else {*held, path}
            else:
                held.add(path)  # type: ignore[union-attr]
        for mentioned, typed in derived[2]:
            users = self.type_users[mentioned]
            users[typed] = users.get(typed, 0) + 1
        self._touch(facts.path)
        return names

    def remove_file(self, path: str) -> set[str]:
        old = self.tables.get(path)
        if old is None:
            return set()
        self._unindex(path)  # (while the table is still in: it names the file's definitions to drop)
        del self.tables[path]
        self.paths.discard(path)
        self.path_generation += 1
        self._touch(path)
        return {n for n, _ in _provided(old)} | _module_names(path)

    def preview_names(self, facts: FileFacts | None, path: str) -> set[str]:
        """The names `set_file(facts)` (or `remove_file(path)` when facts is None) would report, without
        changing anything: sync uses it to learn which files a change affects while their *old* resolution
        can still be computed, so it writes only the difference."""
        old = self.tables.get(path)
        if facts is None:
            return ({n for n, _ in _provided(old)} | _module_names(path)) if old is not None else set()
        names = {n for n, _ in _provided(old) ^ _provided(FileTable(facts))}
        return names | _module_names(path) if old is None else names

    def files_referencing(self, names: set[str]) -> set[str]:
        names = self._type_closure(names)
        out: set[str] = set()
        for name in names:
            held = self.referencers.get(name)
            if type(held) is str:
                out.add(held)
            elif held is not None:
                out.update(held)
        return out

    def _type_closure(self, names: set[str]) -> set[str]:
        """`names` plus the names whose types are computed from them (typedeps.py), bounded."""
        out = set(names)
        frontier = [n for n in names if n in self.type_users]
        for _ in range(MAX_HOPS):
            if not frontier or len(out) > TYPE_CLOSURE_MAX:
                break
            nxt = []
            for name in frontier:
                for typed in self.type_users.get(name, ()):
                    if typed not in out:
                        out.add(typed)
                        nxt.append(typed)
            frontier = nxt
        return out

    def _unindex(self, path: str) -> None:
        """Take out what `set_file` indexed of the file's table (still in `tables`)."""
        old = self.tables.get(path)
        if old is None:
            return
        for mentioned, typed in _type_pairs(old):
            users = self.type_users.get(mentioned)
            if users is not None and typed in users:
                users[typed] -= 1
                if users[typed] <= 0:
                    del users[typed]
                if not users:
                    del self.type_users[mentioned]
        for name in {sym.name for sym in old.facts.symbols if sym.kind in {"function", "method", "class"}}:
            if name in self.definers:
                kept: list[str | SymbolFact] = [x for p, sym in self.definers_of(name) if p != path for x in (p, sym)]
                if kept:
                    self.definers[name] = kept
                else:
                    del self.definers[name]
        for name in _refs(old):
            held = self.referencers.get(name)
            if held is None:
                continue
            if held == path:
                del self.referencers[name]
            elif type(held) is tuple:
                if path in held:
                    rest = tuple(p for p in held if p != path)
                    self.referencers[name] = rest[0] if len(rest) == 1 else rest
            elif type(held) is set:
                held.discard(path)
                if len(held) <= REF_TUPLE_MAX:
                    self.referencers[name] = next(iter(held)) if len(held) == 1 else tuple(sorted(held))

    def definers_of(self, name: str) -> list[tuple[str, SymbolFact]]:
        """(path, symbol) of every function/method/class named `name`, in the order they were indexed."""
        flat = self.definers.get(name)
        return list(zip(flat[::2], flat[1::2], strict=True)) if flat else []  # type: ignore[arg-type]

    def _add_dirs(self, path: str) -> None:
        d = posixpath.dirname(path)
        while d and d not in self.dirs:
            self.dirs.add(d)
            d = posixpath.dirname(d)

    def touched_since(self, mark: tuple[int, int]) -> list[str] | None:
        """The paths set or removed since `mark` (a `touch_mark()`), or None when that is no longer known: lets
        a language's whole-repository lookups follow an edit instead of being rebuilt for it."""
        epoch, length = mark
        if epoch != self._touch_epoch or length > len(self._touch_log):
            return None
        return self._touch_log[length:]

    def touch_mark(self) -> tuple[int, int]:
        return self._touch_epoch, len(self._touch_log)

    def _touch(self, path: str) -> None:
        if len(self._touch_log) > 2 * len(self.paths) + 1024:  # (a cold index logs every path once)
            self._touch_log = []
            self._touch_epoch += 1
        self._touch_log.append(path)
        self.generation += 1
        self._bindings.clear()
        self.memo.clear()
        if posixpath.basename(path) in self.CONFIG_NAMES:
            for rules in set(self.rules.values()):
                rules.config_changed()

    def release_memo(self) -> None:
        """Drop the memoised bindings and derived lookups; they are recomputed on demand with the same answers.
        Sync calls this once a batch is resolved and again once it is written: the next change clears them
        anyway before anything reads them, and after a cold index they are about a quarter of the engine's
        memory (ARCHITECTURE.md, memory)."""
        self._bindings.clear()
        self.memo.clear()
        # Symbol ids are made again on demand (a hash each); after a cold index they were ~11 MB of the table.
        self._ids.clear()

    def dismantle(self) -> None:
        """The table is being let go for good: break its reference cycles (each language's rules refer back to
        it), so reference counting frees it at once. Otherwise only a full collection can (`gcpause.reclaim`),
        and one reaches every object of the daemon's heap, holding the interpreter meanwhile: 14-20 s on a daemon
        holding the Linux kernel's graph. Nothing may use the table after this."""
        self.rules.clear()
        self.release_memo()

    def prepare(self) -> None:
        """Build the rules' whole-repository lookups now rather than at the first resolution (a table rebuilt
        after a restart in place: the kernel's C lookups take ~6 s, which the next edit would otherwise wait)."""
        for rules in set(self.rules.values()):
            rules.prepare()

    def release_caches(self) -> None:
        """`release_memo`, and every cache that resolution fills and keeps from one batch to the next (each
        file's local imports, the rules' module and specifier maps, include closures): all are made again on
        demand with the same answers. Sync calls this after a big batch. They are made during that batch's
        resolution, among its short-lived objects, and Python's allocator hands a 1 MiB arena back only when
        nothing in it is alive: the few thousand of them that outlived the batch kept ~95 MB of the standard
        library's resolution arenas from being returned (275 -> 180 MB in one process once they were dropped;
        ARCHITECTURE.md, "Memory of the code graph"). The next batch makes what it needs, among far fewer
        short-lived objects."""
        self.release_memo()
        for table in self.tables.values():
            table._local_imports = None
        for rules in set(self.rules.values()):
            rules.release()

    # ---- lookups used by the rules and the call resolver ----------------------------------------------
    def table(self, path: str) -> FileTable | None:
        return self.tables.get(path)

    def rules_for(self, path: str) -> LanguageRules | None:
        table = self.tables.get(path)
        return self.rules.get(table.facts.language) if table is not None else None

    def bindings(self, path: str) -> FileBindings:
        cached = self._bindings.get(path)
        if cached is None:
            table = self.tables.get(path)
            rules = self.rules_for(path)
            cached = rules.bind(table) if table is not None and rules is not None else FileBindings()
            self._bindings[path] = cached
        return cached

    def settle(self, target: Target | None, hops: int = 0) -> Target | None:
        """Follow a lazy binding (`from m import x`) to what `x` is in `m` now.

        Bindings are lazy because imports are cyclic in real code: resolving them while binding would
        recurse forever; resolving on use, with a hop bound, cannot.
        """
        if target is None or target.kind != "lazy":
            return target
        rules = self.rules_for(target.path)
        found = rules.module_member(target.path, target.name, hops + 1) if rules is not None else None
        return found if found is not None else Target("external", f"{target.path}:{target.name}")

    def symbol_id(self, path: str, sym: SymbolFact) -> str:
        key = (path, sym.kind, sym.qualified_name, sym.occurrence)
        sid = self._ids.get(key)
        if sid is None:
            if len(self._ids) > 1_000_000:
                self._ids.clear()
            sid = self._ids[key] = symbol_id(self.repo_id, *key)
        return sid

    def resolve_file(self, path: str) -> FileResolution:
        """Import and call edges of one file against the current state of the whole index."""
        from nexusd.resolve.calls import resolve_calls

        out = FileResolution(path=path)
        table = self.tables.get(path)
        rules = self.rules_for(path)
        if table is None or rules is None:
            return out
        out.imports = list(self.bindings(path).edges)
        resolve_calls(self, rules, table, out)
        return out


def _derive(table: FileTable) -> tuple[set[tuple[str, str]], set[str], set[tuple[str, str]]]:
    """(`_provided`, `_referenced`, the type dependency pairs) of a file, or what its table keeps: reading its
    calls and type facts once for the three (they are packed: each reading makes the records again)."""
    if table.derived is not None:
        return table.derived
    facts = table.facts
    calls = list(facts.calls)
    provided, referenced, dependents = typedeps.derive(facts, calls)
    return _provided_here(table) | provided, _referenced_here(facts, calls) | referenced, dependents


def _provided(table: FileTable | None) -> set[tuple[str, str]]:
    """(name, descriptor) pairs a file offers to others; a change in any pair is a change of that name."""
    if table is None:
        return set()
    if table.derived is not None:
        return table.derived[0]
    out = _provided_here(table)
    if table.facts.types:
        out |= typedeps.provided(table.facts)
    return out


def _provided_here(table: FileTable) -> set[tuple[str, str]]:
    """What `_provided` says without the type facts' part (typedeps.py)."""
    out: set[tuple[str, str]] = set()
    for sym in table.facts.symbols:
        if sym.kind == "module":
            continue
        desc = f"{sym.kind}:{sym.qualified_name}:{','.join(sym.bases)}"
        out.add((sym.name, desc))
    for imp in table.facts.imports:
        for name, alias in imp.names:
            out.add((alias, f"import:{imp.specifier}:{name}"))
        if imp.module_alias:
            out.add((imp.module_alias, f"alias:{imp.specifier}"))
        if ("*", "*") in imp.names:
            out.add(("*", f"star:{imp.specifier}"))
    for exported, local in table.exports.items():
        out.add((exported, f"export:{local}"))
    return out


def _refs(table: FileTable) -> Collection[str]:
    """The names a file is indexed under as a referencer (`_referenced`, or kept on the table: `keep_derived`)."""
    return table.derived[1] if table.derived is not None else _referenced(table.facts)


def _type_pairs(table: FileTable) -> Collection[tuple[str, str]]:
    """The (mentioned, typed) type dependencies a file is indexed under (typedeps.py)."""
    if table.derived is not None:
        return table.derived[2]
    return typedeps.dependents(table.facts) if table.facts.types else ()


def _module_names(path: str) -> set[str]:
    """Names by which other files may import this file: its stem, and its folder for index/__init__."""
    stem = posixpath.splitext(posixpath.basename(path))[0]
    if stem.endswith(".d"):
        stem = stem[:-2]
    names = {stem}
    if stem in {"__init__", "index"}:
        names.add(posixpath.basename(posixpath.dirname(path)))
    return names


def _referenced(facts: FileFacts) -> set[str]:
    """Every name whose meaning could change this file's resolution (see `files_referencing`)."""
    return _referenced_here(facts, facts.calls) | typedeps.referenced(facts)


def _referenced_here(facts: FileFacts, calls: Iterable[CallFact]) -> set[str]:
    """What `_referenced` says without the type facts' part (typedeps.py)."""
    refs: set[str] = set()
    for call in calls:
        refs.add(call.name)
        if call.receiver:
            refs.add(call.receiver.split(".", 1)[0])
    for imp in facts.imports:
        refs |= _spec_names(imp)
    for sym in facts.symbols:
        for base in sym.bases:
            refs.add(base.rsplit(".", 1)[-1])
            refs.add(base.split(".", 1)[0])
    return refs


def _spec_names(imp: ImportFact) -> set[str]:
    out = {name for name, _ in imp.names if name != "*"}
    spec = imp.specifier.rstrip("/")
    for sep in ("/", "."):
        spec = spec.replace(sep, " ")
    parts = spec.split()
    if parts:
        out.add(parts[-1])
        out.add(parts[0])
    if ("*", "*") in imp.names:
        out.add("*")
    return out


def generated_common_methods(family: str) -> frozenset[str]:
    """Method names builtin and standard-library types define, for `family` ("python" | "ecmascript"), from
    common_methods.json beside this module (written by scripts/gen_common_methods.py)."""
    data = json.loads((Path(__file__).with_name("common_methods.json")).read_text(encoding="utf-8"))
    return frozenset(data.get(family, ()))


def common_prefix(a: str, b: str) -> int:
    """How many leading path components two repository paths share (nearest-candidate ranking)."""
    n = 0
    for x, y in zip(a.split("/"), b.split("/"), strict=False):
        if x != y:
            break
        n += 1
    return n


def dedupe_imports(edges: list[ImportEdge]) -> list[ImportEdge]:
    """One edge per (target file, specifier), none to the importing file itself."""
    seen: set[tuple[str, str]] = set()
    out = []
    for edge in edges:
        key = (edge.dst_path, edge.specifier)
        if key not in seen and edge.dst_path != edge.src_path:
            seen.add(key)
            out.append(edge)
    return out
