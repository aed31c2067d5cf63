"""C and C++ resolution rules: include paths, declarations -> definitions, classes, namespaces.

Includes. `#include "x.h"` is looked up next to the including file, then in the include directories;
`#include <x.h>` only in the include directories. Include directories come from compile_commands.json
(`-I`, `-iquote`, `-isystem` flags, relative to each entry's `directory`) when the repository has one,
else the conventional layout: every folder named `include`, `inc` or `src`, and the repository root.
When that finds nothing, a unique repository file whose path ends with the written path is taken at
confidence 0.9 (projects built with flags we cannot see). Anything else (<stdio.h>, <vector>) is
external: no edge, and calls into it stay raw strings.

Declarations and definitions. A header's prototype and the .c/.cpp body are one function: a call that
reaches a declaration (kind "declaration") is linked to the definition with the same qualified name
anywhere in the repository; with several definitions (one per platform file, say) each edge gets
0.9 / n; with none the declaration itself is the target (a library's API, a pure virtual method).

Calls, in order (C++ name lookup, simplified):
* `f()`: inside a method, members of the class and its bases ("receiver" 0.95 / 0.9); the enclosing
  namespaces and the file ("same-scope"); the transitively included headers ("import-bound"); then, when
  exactly one repository function of that name exists, a name-only edge (0.35): C code calls functions
  declared by hand (`extern int f(void);`) or through headers we could not resolve.
* `ns::f()` / `Class::m()`: the scope is looked up like a bare name (namespace or class), then the member
  ("qualified" 0.95); `Base::m()` from a derived class's method is the base's method.
* `this->m()`, `m()` in a method, `this->field.m()`, `field.m()`: the class, its bases, and declared
  field types ("receiver").
* `x.m()` / `p->m()` with x's type written at its declaration: that class and its bases ("receiver").
* `new X()`: the class X ("constructor").
* `x.m()` with no known type: one uncommon same-name method in the repository -> name-only 0.35.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nexusd.parse.facts import CallFact, SymbolFact
from nexusd.resolve.base import FileBindings, FileTable, ImportEdge, LanguageRules, RepoIndex
from nexusd.resolve.calls import _name_only

C_BUILTINS = frozenset(
    """printf fprintf sprintf snprintf vprintf vfprintf vsnprintf puts fputs putchar fputc scanf sscanf
    fscanf malloc calloc realloc free memcpy memmove memset memcmp strlen strcpy strncpy strcat strncat
    strcmp strncmp strchr strrchr strstr strdup strndup strtol strtoul strtod atoi atol atof abort exit
    assert fopen fclose fread fwrite fflush fgets getc fgetc perror qsort bsearch abs labs sizeof
    offsetof va_start va_end va_arg isalpha isdigit isspace isalnum toupper tolower time clock
    static_cast dynamic_cast reinterpret_cast const_cast move forward make_unique make_shared
    make_pair get swap min max""".split()
)
C_COMMON_METHODS = frozenset(
    """size empty begin end cbegin cend rbegin rend push_back pop_back emplace_back emplace insert erase
    find count clear reserve resize at front back data c_str str length append substr get reset release
    lock unlock load store first second value has_value what swap operator""".split()
)
CLASS_KINDS = frozenset({"class", "struct"})
TYPE_KINDS = frozenset({"class", "struct", "enum", "type", "namespace"})
CALLABLE = frozenset({"function", "method", "declaration", "macro"})
INCLUDE_DIR_NAMES = frozenset({"include", "inc", "src"})
MAX_INCLUDE_FILES = 400
HEADER_EXTS = (".h", ".hpp", ".hh", ".hxx", ".inl", ".ipp")

_Found = list[tuple[str, SymbolFact, str, float]]
_CALLABLE_OR_CLASS = CALLABLE | CLASS_KINDS
# Memo keys (RepoIndex.memo, cleared at every change): the include closures, and find_qn's answers per file.
_CLOSURES = ("c-closures",)
_FOUND = "c-found"
_DEFS_OF = ("c-defs-of",)
_FEW_HOLDERS = 8
_DEF_KINDS = frozenset({"function", "method"})  # what `definitions` lists
# Up to this many files changed since the lookups were made, they follow the change; above, they are rebuilt (a
# one-file edit of the kernel's 78k files rebuilt them whole: most of its 11-13 s to queryable).
_FOLLOW_MAX_PATHS = 256
# Kept across content-only changes (`_follow_kept`): the include closures most recently asked for, and each include's
# answer. A kernel edit recomputed ~400-file closures and re-resolved every include in them (each angle include
# tried against every `include` folder): most of the resolution time of a one-file edit.
_KEEP_CLOSURES = 512
_KEEP_INCLUDE_SIGS = 65_536
_INCLUDE_ANSWERS_MAX = 262_144
_IncludeSig = tuple[tuple[str, str], ...]


def _itself(p: str) -> str:
    return p


def _first(entry: tuple[str, SymbolFact]) -> str:
    return entry[0]


def _insert_block(items: list[Any], path: str, block: list[Any], path_of: Callable[[Any], str]) -> None:
    """Put `block` (the entries of `path`) into `items`, kept sorted by path, after every entry of an earlier
    path: what appending in sorted path order gives."""
    i = len(items)
    while i > 0 and path_of(items[i - 1]) > path:
        i -= 1
    items[i:i] = block


def _entries(symbols: Sequence[SymbolFact]) -> tuple[set[str], set[str], set[str], set[str]]:
    """The keys a file's `symbols` have in the lookups: (qualified names, function names, class names, class
    tails), as `CFamilyRules._add_path` put them there."""
    qns = {sym.qualified_name for sym in symbols}
    defs = {sym.qualified_name for sym in symbols if sym.kind in _DEF_KINDS}
    classes = {sym.qualified_name for sym in symbols if sym.kind in CLASS_KINDS}
    tails = {sym.name for sym in symbols if sym.kind in CLASS_KINDS}
    return qns, defs, classes, tails


def _drop_from(lookup: dict[str, list[Any]], key: str, gone: Callable[[Any], bool]) -> None:
    kept = [e for e in lookup.get(key, ()) if not gone(e)]
    if kept:
        lookup[key] = kept
    else:
        lookup.pop(key, None)
_BARE = "c-bare"
_SCOPE_KINDS = CLASS_KINDS | {"namespace"}


class CFamilyRules(LanguageRules):
    languages = frozenset({"c", "cpp"})
    self_names = frozenset({"this"})
    builtins = C_BUILTINS
    common_methods = C_COMMON_METHODS

    def __init__(self, index: RepoIndex) -> None:
        super().__init__(index)
        self._dirs: list[str] | None = None
        self._generation = -1
        self._defs: dict[str, list[tuple[str, SymbolFact]]] = {}
        self._by_suffix: dict[str, list[str]] = {}
        self._classes: dict[str, list[tuple[str, SymbolFact]]] = {}
        self._class_tail: dict[str, list[tuple[str, SymbolFact]]] = {}
        # qualified name -> the files holding a symbol of that name, in path order: the path itself when one file
        # does (most names: a list each was ~80 bytes of the kernel's 1.45M names), else a list (`_holders`)
        self._qn_files: dict[str, str | list[str]] = {}
        self._qn_sets: dict[str, frozenset[str]] = {}  # the same as sets, for names many files hold
        self._mark = (-1, 0)  # the index's touch log when the lookups above were last brought up to date
        # The symbols each file's entries in them were made from (the facts' own list, not a copy): what
        # `_forget_path` takes out again once the file's facts are replaced.
        self._held: dict[str, Sequence[SymbolFact]] = {}
        # Valid while no path appears or disappears and no project config changes; unlike `index.memo`, not
        # cleared by a change to a file's contents (`_follow_kept`).
        self._includes: dict[tuple[str, str, bool], tuple[str, float] | None] = {}
        self._kept: OrderedDict[str, tuple[list[str], dict[str, int]]] = OrderedDict()
        self._kept_sigs: dict[str, _IncludeSig] = {}  # the includes of each file in a kept closure, as it was
        self._kept_at = (-1, -1)  # (index.path_generation, index.generation) the kept answers were checked at
        self._kept_mark = (-1, 0)

    def config_changed(self) -> None:
        self._dirs = None
        self._drop_kept()

    def release(self) -> None:
        self._drop_kept()

    def prepare(self) -> None:
        if any(t.facts.language in self.languages for t in self.index.tables.values()):
            self._refresh()

    def _drop_kept(self) -> None:
        self._includes.clear()
        self._kept.clear()
        self._kept_sigs.clear()

    def _follow_kept(self) -> None:
        """Bring the kept answers up to date. A path appearing or disappearing (or many changes) drops them all:
        any include may now find another file. A content change keeps them, except the closures holding a file
        whose own includes changed: a file's includes are found from what it writes, the repository's paths and
        the include directories, nothing else."""
        index = self.index
        if self._kept_at == (index.path_generation, index.generation):
            return
        same_paths = self._kept_at[0] == index.path_generation
        touched = index.touched_since(self._kept_mark) if same_paths else None
        if touched is None or len(touched) > _FOLLOW_MAX_PATHS:
            self._drop_kept()
        else:
            for path in set(touched):
                sig = self._kept_sigs.get(path)
                if sig is None or sig == _include_sig(index.tables.get(path)):
                    continue
                for stale in [p for p, (_, rank) in self._kept.items() if path in rank]:
                    del self._kept[stale]
                del self._kept_sigs[path]
        self._kept_at = (index.path_generation, index.generation)
        self._kept_mark = index.touch_mark()

    def _keep(self, path: str, closure: tuple[list[str], dict[str, int]]) -> None:
        """Keep `closure` across content-only changes when every file in it is C/C++ (another language's
        bindings may depend on more than its own text), evicting the least recently asked."""
        tables = self.index.tables
        sigs: list[tuple[str, _IncludeSig]] = []
        for p in closure[0]:
            table = tables.get(p)
            if table is None or table.facts.language not in self.languages:
                return
            if p not in self._kept_sigs:
                sigs.append((p, _include_sig(table)))
        if len(self._kept_sigs) + len(sigs) > _KEEP_INCLUDE_SIGS:
            self._kept.clear()
            self._kept_sigs.clear()
            sigs = [(p, _include_sig(tables.get(p))) for p in closure[0]]
        self._kept_sigs.update(sigs)
        self._kept[path] = closure
        if len(self._kept) > _KEEP_CLOSURES:
            self._kept.popitem(last=False)

    # ---- include directories -------------------------------------------------------------------------
    def include_dirs(self) -> list[str]:
        if self._dirs is None:
            dirs = self._from_compile_commands()
            if dirs is None:
                dirs = sorted(d for d in self.index.dirs if posixpath.basename(d) in INCLUDE_DIR_NAMES)
                dirs.append("")
            self._dirs = dirs
        return self._dirs

    def _from_compile_commands(self) -> list[str] | None:
        found = [p for p in self.index.paths if posixpath.basename(p) == "compile_commands.json"]
        if not found:
            return None
        root = self.index.root.resolve()
        dirs: list[str] = []
        for path in sorted(found, key=len):
            try:
                entries = json.loads((self.index.root / path).read_text(encoding="utf-8", errors="replace"))
            except (OSError, ValueError):
                continue
            for entry in entries if isinstance(entries, list) else []:
                if not isinstance(entry, dict):
                    continue
                base = Path(str(entry.get("directory") or root))
                args = entry.get("arguments")
                if not isinstance(args, list):
                    try:
                        args = shlex.split(str(entry.get("command") or ""))
                    except ValueError:
                        continue
                for i, arg in enumerate(args):
                    value = None
                    for flag in ("-I", "-iquote", "-isystem"):
                        if arg == flag and i + 1 < len(args):
                            value = str(args[i + 1])
                        elif arg.startswith(flag) and len(arg) > len(flag):
                            value = arg[len(flag) :]
                    if value is None:
                        continue
                    full = (base / value).resolve() if not Path(value).is_absolute() else Path(value)
                    try:
                        rel = full.relative_to(root).as_posix()
                    except ValueError:
                        continue  # outside the repository: system or third-party headers
                    rel = "" if rel == "." else rel
                    if rel not in dirs:
                        dirs.append(rel)
        return dirs

    def _refresh(self) -> None:
        """Bring the whole-repository lookups up to date with the index: the files changed since the last time
        when they are few (an edit), else all of them. Both give the same lists in the same (path) order."""
        if self._generation == self.index.generation:
            return
        touched = self.index.touched_since(self._mark) if self._generation >= 0 else None
        if touched is None or len(touched) > _FOLLOW_MAX_PATHS:
            self._rebuild()
        else:
            for path in sorted(set(touched)):
                # the names the file held before and holds still keep their place among each name's holders (a
                # kernel file's names are held by hundreds of files each: taking them out and back was most of it)
                held = self._held.get(path)
                table = self.index.tables.get(path)
                keep = ({sym.qualified_name for sym in held} & {sym.qualified_name for sym in table.facts.symbols}
                        if held is not None and table else set())  # fmt: skip
                self._forget_path(path, keep)
                self._add_path(path, keep=keep)
        self._generation = self.index.generation
        self._mark = self.index.touch_mark()

    def _rebuild(self) -> None:
        """Every lookup made again from the index, each list in path order: what `_add_path` for every path in
        path order gives, appended directly (the kernel's 78,000 files: 5.9 s, 7.2 s through `_add_path`)."""
        by_suffix: dict[str, list[str]] = {}
        qn_files: dict[str, str | list[str]] = {}
        defs: dict[str, list[tuple[str, SymbolFact]]] = {}
        classes: dict[str, list[tuple[str, SymbolFact]]] = {}
        tails: dict[str, list[tuple[str, SymbolFact]]] = {}
        held: dict[str, Sequence[SymbolFact]] = {}
        tables, languages, basename = self.index.tables, self.languages, posixpath.basename
        for path in sorted(self.index.paths):
            by_suffix.setdefault(basename(path), []).append(path)
            table = tables.get(path)
            if table is None or table.facts.language not in languages:
                continue
            symbols = held[path] = table.facts.symbols
            for qn in {sym.qualified_name for sym in symbols}:
                have = qn_files.get(qn)
                if have is None:
                    qn_files[qn] = path
                elif isinstance(have, str):
                    qn_files[qn] = [have, path]  # (paths come in order)
                else:
                    have.append(path)
            for sym in symbols:
                qn = sym.qualified_name
                kind = sym.kind
                if kind in _DEF_KINDS:
                    defs.setdefault(qn, []).append((path, sym))
                elif kind in CLASS_KINDS:
                    classes.setdefault(qn, []).append((path, sym))
                    tails.setdefault(sym.name, []).append((path, sym))
        self._by_suffix, self._qn_files, self._defs, self._classes, self._class_tail = (
            by_suffix, qn_files, defs, classes, tails)  # fmt: skip
        self._held = held
        self._qn_sets = {qn: frozenset(files) for qn, files in qn_files.items()
                         if not isinstance(files, str) and len(files) > _FEW_HOLDERS}  # fmt: skip

    def _forget_path(self, path: str, keep: set[str] | frozenset[str] = frozenset()) -> None:
        """Take what `path` added out of the lookups (`_held` says where, whatever its facts are now), except its
        place among the holders of the qualified names in `keep`."""
        base = posixpath.basename(path)
        if path in self._by_suffix.get(base, ()):
            _drop_from(self._by_suffix, base, lambda p: p == path)
        held = self._held.pop(path, None)
        if held is None:
            return
        qns, def_qns, class_qns, tails = _entries(held)
        for qn in qns - keep:
            self._drop_holder(qn, path)
            self._set_holders(qn)
        for qn in def_qns:
            _drop_from(self._defs, qn, lambda e: e[0] == path)
        for qn in class_qns:
            _drop_from(self._classes, qn, lambda e: e[0] == path)
        for name in tails:
            _drop_from(self._class_tail, name, lambda e: e[0] == path)

    def _add_path(self, path: str, *, holders: bool = True, keep: set[str] | frozenset[str] = frozenset()) -> None:
        """Put `path`'s definitions in the lookups, each list kept in path order (`holders`: `_qn_sets` too;
        `keep`: names whose holders still list it)."""
        if path not in self.index.paths:
            return
        _insert_block(self._by_suffix.setdefault(posixpath.basename(path), []), path, [path], _itself)
        table = self.index.tables.get(path)
        if table is None or table.facts.language not in self.languages:
            return
        defs: dict[str, list[tuple[str, SymbolFact]]] = defaultdict(list)
        classes: dict[str, list[tuple[str, SymbolFact]]] = defaultdict(list)
        tails: dict[str, list[tuple[str, SymbolFact]]] = defaultdict(list)
        qns = {sym.qualified_name for sym in table.facts.symbols}
        for sym in table.facts.symbols:
            if sym.kind in _DEF_KINDS:
                defs[sym.qualified_name].append((path, sym))
            elif sym.kind in CLASS_KINDS:
                classes[sym.qualified_name].append((path, sym))
                tails[sym.name].append((path, sym))
        for qn in qns - keep:
            self._add_holder(qn, path)
            if holders:
                self._set_holders(qn)
        for target, rows in ((self._defs, defs), (self._classes, classes), (self._class_tail, tails)):
            for key, entries in rows.items():
                _insert_block(target.setdefault(key, []), path, entries, _first)
        self._held[path] = table.facts.symbols

    def _holders(self, qn: str) -> Sequence[str]:
        """The files holding a symbol named `qn`, in path order."""
        files = self._qn_files.get(qn, ())
        return (files,) if isinstance(files, str) else files

    def _add_holder(self, qn: str, path: str) -> None:
        files = self._qn_files.get(qn)
        if files is None:
            self._qn_files[qn] = path
        elif isinstance(files, str):
            self._qn_files[qn] = [files, path] if files <= path else [path, files]
        else:
            _insert_block(files, path, [path], _itself)

    def _drop_holder(self, qn: str, path: str) -> None:
        files = self._qn_files.get(qn)
        if files is None or isinstance(files, str):
            if files == path:
                del self._qn_files[qn]
            return
        kept = [p for p in files if p != path]
        if len(kept) > 1:
            self._qn_files[qn] = kept
        elif kept:
            self._qn_files[qn] = kept[0]
        else:
            del self._qn_files[qn]

    def _set_holders(self, qn: str) -> None:
        files = self._holders(qn)
        if len(files) > _FEW_HOLDERS:
            self._qn_sets[qn] = frozenset(files)
        else:
            self._qn_sets.pop(qn, None)

    def resolve_include(self, src: str, spec: str, quoted: bool) -> tuple[str, float] | None:
        """The repository file `#include "spec"` (quoted) or `#include <spec>` in `src` names, and how sure."""
        spec = spec.replace("\\", "/")
        self._follow_kept()
        key = (posixpath.dirname(src) if quoted else "", spec, quoted)
        try:
            return self._includes[key]
        except KeyError:
            pass
        if len(self._includes) >= _INCLUDE_ANSWERS_MAX:
            self._includes.clear()
        found = self._includes[key] = self._find_include(src, spec, quoted)
        return found

    def _find_include(self, src: str, spec: str, quoted: bool) -> tuple[str, float] | None:
        paths = self.index.paths
        if quoted:
            cand = posixpath.normpath(posixpath.join(posixpath.dirname(src), spec))
            if cand in paths:
                return cand, 1.0
        for d in self.include_dirs():
            cand = posixpath.normpath(posixpath.join(d, spec)) if d else posixpath.normpath(spec)
            if cand in paths:
                return cand, 1.0
        self._refresh()
        hits = [
            p
            for p in self._by_suffix.get(posixpath.basename(spec), [])
            if p.endswith("/" + spec) or p == spec
        ]
        return (hits[0], 0.9) if len(hits) == 1 else None

    # ---- imports ---------------------------------------------------------------------------------------
    def bind(self, table: FileTable) -> FileBindings:
        out = FileBindings()
        src = table.facts.path
        for imp in table.facts.imports:
            found = self.resolve_include(src, imp.specifier, imp.kind == "include")
            if found is not None and found[0] != src:
                out.edges.append(ImportEdge(src, found[0], imp.specifier, imp.line, "import-bound", found[1]))
                out.stars.append(found[0])
        return out

    def module_member(self, path: str, name: str, hops: int) -> None:
        return None

    def visible(self, path: str) -> list[str]:
        """Files whose declarations `path` sees: itself, then its includes, breadth first, bounded."""
        return self._closure(path)[0]

    def _closure(self, path: str) -> tuple[list[str], dict[str, int]]:
        """(`visible(path)`, file -> its rank in that order), memoised together: every call of a file asks."""
        closures = self.index.memo.get(_CLOSURES)
        if closures is None:
            closures = self.index.memo[_CLOSURES] = {}
        cached = closures.get(path)  # type: ignore[attr-defined]
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        self._follow_kept()
        kept = self._kept.get(path)
        if kept is not None:
            self._kept.move_to_end(path)
            closures[path] = kept  # type: ignore[index]
            return kept
        bindings = self.index.bindings
        order = [path]
        rank = {path: 0}
        i = 0
        while i < len(order) and len(order) < MAX_INCLUDE_FILES:
            for inc in bindings(order[i]).stars:
                if inc not in rank:
                    rank[inc] = len(order)
                    order.append(inc)
            i += 1
        found = closures[path] = (order, rank)  # type: ignore[index]
        self._keep(path, found)
        return found

    def _foreign(self, path: str) -> list[str]:
        """The files of `visible(path)` in another language than C/C++ (included `.inc`-like files parsed as
        something else): they can hold a name without being among `_qn_files`' holders."""
        tables = self.index.tables
        return [
            f for f in self.visible(path)
            if (t := tables.get(f)) is not None and t.facts.language not in self.languages
        ]  # fmt: skip

    # ---- lookups -----------------------------------------------------------------------------------------
    def definitions(self, qn: str) -> list[tuple[str, SymbolFact]]:
        self._refresh()
        return self._defs.get(qn, [])

    def settle_decl(self, path: str, sym: SymbolFact, resolution: str, confidence: float) -> _Found:
        """A declaration becomes its definition(s); everything else stays as it is."""
        if sym.kind != "declaration":
            return [(path, sym, resolution, confidence)]
        picked = self._definitions_of(path, sym.qualified_name)
        if picked is None:
            return [(path, sym, resolution, confidence)]
        defs, share = picked
        if share is None:
            return [(defs[0][0], defs[0][1], resolution, confidence)]
        if share < 0:
            return [(defs[0][0], defs[0][1], resolution, min(confidence, 0.9))]
        return [(p, s, resolution, share) for p, s in defs]

    def _definitions_of(
        self, path: str, qn: str
    ) -> tuple[list[tuple[str, SymbolFact]], float | None] | None:
        """The definitions a declaration `qn` in file `path` stands for, memoised per (file, name): every call
        reaching one header prototype asks the same. None: no definition (the declaration is the target);
        (one, None): the only one; (one, -1): picked among several (confidence at most 0.9); (up to five, share):
        several, each 0.9 / n."""
        memo = self.index.memo.get(_DEFS_OF)
        if memo is None:
            memo = self.index.memo[_DEFS_OF] = {}
        key = (path, qn)
        if key in memo:  # type: ignore[operator]
            return memo[key]  # type: ignore[index, no-any-return]
        defs = [d for d in self.definitions(qn) if d[1].kind in {"function", "method"}]
        out: tuple[list[tuple[str, SymbolFact]], float | None] | None
        if not defs:
            out = None
        elif len(defs) == 1:
            out = (defs, None)
        else:
            # The implementing file usually includes its own header; then a matching file name.
            same = [d for d in defs if path in self._visible_rank(d[0])]
            if len(same) != 1:
                stem = posixpath.splitext(posixpath.basename(path))[0]
                same = [d for d in same or defs if posixpath.splitext(posixpath.basename(d[0]))[0] == stem]
            out = (same, -1.0) if len(same) == 1 else (defs[:5], round(0.9 / len(defs), 3))
        memo[key] = out  # type: ignore[index]
        return out

    def find_qn(self, path: str, qn: str, kinds: frozenset[str]) -> tuple[str, SymbolFact] | None:
        """A symbol by qualified name in the files `path` sees (itself first), definitions preferred.

        The files holding the name are few and the include closure is up to MAX_INCLUDE_FILES: walk the
        holders in closure order rather than the closure (a kernel tree made the closure walk the whole cost
        of resolution). Memoised per file: a file calls the same names many times."""
        if self._generation != self.index.generation:
            self._refresh()
        holders = self._holders(qn)
        if not holders:
            return None
        found_by = self.index.memo.get((_FOUND, path))
        if found_by is None:
            found_by = self.index.memo[(_FOUND, path)] = {}
        key = (qn, kinds)
        if key in found_by:  # type: ignore[operator]
            return found_by[key]  # type: ignore[index, no-any-return]
        visible, rank = self._closure(path)
        held = self._qn_sets.get(qn)
        if held is not None:  # many holders: intersected with the closure as sets
            files = sorted(held.intersection(rank), key=rank.__getitem__)
        else:
            files = sorted((f for f in holders if f in rank), key=rank.__getitem__)
        if len(holders) >= len(visible) and (foreign := self._foreign(path)):
            # the whole closure is walked then: included files of another language can hold the name too
            files = sorted({*files, *foreign}, key=rank.__getitem__)
        decl: tuple[str, SymbolFact] | None = None
        hit: tuple[str, SymbolFact] | None = None
        for file in files:
            table = self.index.table(file)
            if table is None:
                continue
            sym = next((s for s in self._qns(file, table).get(qn, ()) if s.kind in kinds), None)
            if sym is None:
                continue
            if sym.kind != "declaration":
                hit = (file, sym)
                break
            decl = decl or (file, sym)
        found_by[key] = hit = hit or decl  # type: ignore[index]
        return hit

    def _visible_rank(self, path: str) -> dict[str, int]:
        return self._closure(path)[1]

    def _qns(self, path: str, table: FileTable) -> dict[str, list[SymbolFact]]:
        """Qualified name -> every symbol of that name in one file, definitions first (memoised)."""
        key = ("c-qns", path)
        cached = self.index.memo.get(key)
        if cached is None:
            out: dict[str, list[SymbolFact]] = defaultdict(list)
            for sym in table.facts.symbols:
                out[sym.qualified_name].append(sym)
            for syms in out.values():
                syms.sort(key=lambda s: s.kind == "declaration")
            cached = self.index.memo[key] = dict(out)
        return cached  # type: ignore[return-value]

    def scopes(self, table: FileTable, scope: str | None) -> list[str]:
        """Enclosing namespace/class prefixes of `scope`, innermost first, ending with "" (global)."""
        out: list[str] = []
        sym = table.by_qn.get(scope) if scope else None
        prefix = sym.parent if sym is not None else None
        if sym is not None and sym.kind in CLASS_KINDS | {"namespace"}:
            prefix = sym.qualified_name
        while prefix:
            out.append(prefix)
            prefix = prefix.rpartition(".")[0]
        out.append("")
        return out

    def find_type(
        self, path: str, table: FileTable, scope: str | None, written: str
    ) -> tuple[str, SymbolFact] | None:
        dotted = written.replace("::", ".").strip(".")
        if not dotted:
            return None
        for prefix in self.scopes(table, scope):
            qn = f"{prefix}.{dotted}" if prefix else dotted
            hit = self.find_qn(path, qn, TYPE_KINDS)
            if hit is not None:
                return hit
        self._refresh()
        tail = dotted.rpartition(".")[2]
        named = self._class_tail.get(tail, [])
        cands = [
            c for c in named if c[1].qualified_name == dotted or c[1].qualified_name.endswith("." + dotted)
        ]
        return cands[0] if len(cands) == 1 else None

    def class_member(self, path: str, cls: SymbolFact, name: str) -> tuple[str, SymbolFact, int] | None:
        """`name` in class `cls` (body or out-of-line definition) or its bases, breadth first."""
        key = ("c-member", path, cls.qualified_name, name)
        if key in self.index.memo:
            return self.index.memo[key]  # type: ignore[return-value]
        found: tuple[str, SymbolFact, int] | None = None
        queue = [(path, cls, 0)]
        seen: set[tuple[str, str]] = set()
        while queue and found is None:
            cur_path, cur, depth = queue.pop(0)
            if (cur_path, cur.qualified_name) in seen or depth > 8:
                continue
            seen.add((cur_path, cur.qualified_name))
            qn = f"{cur.qualified_name}.{name}"
            defs = [d for d in self.definitions(qn)]
            table = self.index.table(cur_path)
            inner = table.children.get(cur.qualified_name, {}).get(name) if table is not None else None
            if defs:
                found = (defs[0][0], defs[0][1], depth)
            elif inner is not None:
                found = (cur_path, inner, depth)
            if found is not None or table is None:
                break
            for base in cur.bases:
                hit = self.find_type(cur_path, table, cur.parent, base)
                if hit is not None and hit[1].kind in CLASS_KINDS:
                    queue.append((hit[0], hit[1], depth + 1))
        self.index.memo[key] = found
        return found

    def enclosing_class(
        self, table: FileTable, path: str, scope: str | None
    ) -> tuple[str, SymbolFact] | None:
        sym = table.by_qn.get(scope) if scope else None
        while sym is not None:
            if sym.kind in CLASS_KINDS:
                return path, sym
            if sym.kind in {"method", "declaration"} and sym.parent:
                owner = table.by_qn.get(sym.parent)
                if owner is not None and owner.kind in CLASS_KINDS:
                    return path, owner
                self._refresh()
                cands = self._classes.get(sym.parent, [])
                visible = self._visible_rank(path)
                pick = [c for c in cands if c[0] in visible] or cands
                return pick[0] if pick else None
            sym = table.by_qn.get(sym.parent) if sym.parent else None
        return None

    # ---- calls -----------------------------------------------------------------------------------------
    def resolve_call(self, table: FileTable, call: CallFact) -> tuple[_Found, str] | None:
        path = table.facts.path
        name, receiver = call.name, call.receiver
        if call.is_new:
            hit = self.find_type(path, table, call.caller, f"{receiver[:-2] + '.' if receiver else ''}{name}")
            if hit is not None and hit[1].kind in CLASS_KINDS:
                return [(hit[0], hit[1], "constructor", 0.95)], ""
            return [], f"new {name}"
        if receiver is None:
            return self._bare(table, call)
        if receiver.endswith("::"):
            return self._qualified(table, call)
        var_path, at, written = receiver.partition("@")
        var, *fields = var_path.split(".")
        raw = f"{var_path}.{name}"
        owner = self.enclosing_class(table, path, call.caller)
        typ: tuple[str, SymbolFact] | None = None
        if var == "this" and not at:
            typ = owner
        elif at:
            typ = self.find_type(path, table, call.caller, written)
        elif owner is not None:
            member = self.class_member(owner[0], owner[1], var)
            if member is not None and member[1].kind == "field":
                typ = owner
                fields = [var, *fields]
        if typ is None:
            if receiver == "<expr>" or at or var == "this":
                return [], raw if receiver != "<expr>" else f"<expr>.{name}"
            if name in self.common_methods:
                return [], raw
            guesses = _name_only(self.index, name, path, frozenset({"method"}), limit=1)
            return [(p, s, r, min(c, 0.35)) for p, s, r, c in guesses], raw
        for field in fields:
            member = self.class_member(typ[0], typ[1], field)
            if member is None or member[1].kind != "field":
                return [], raw
            field_table = self.index.table(member[0])
            written_field = _field_type(member[1])
            typ = (
                self.find_type(member[0], field_table, member[1].parent, written_field)
                if field_table is not None and written_field
                else None
            )
            if typ is None or typ[1].kind not in CLASS_KINDS:
                return [], raw
        method = self.class_member(typ[0], typ[1], name)
        if method is None or method[1].kind not in CALLABLE:
            return [], raw
        return self.settle_decl(method[0], method[1], "receiver", 0.95 if method[2] == 0 else 0.9), ""

    def _bare(self, table: FileTable, call: CallFact) -> tuple[_Found, str]:
        caller = table.by_qn.get(call.caller) if call.caller else None
        if caller is None or (caller.parent is None and caller.kind not in _SCOPE_KINDS):
            # No enclosing class and no scope but the global one (all of C): the answer depends on the file and
            # the name only, and a file calls the same names many times (kfree, mutex_lock...).
            memo = self.index.memo.get((_BARE, table.facts.path))
            if memo is None:
                memo = self.index.memo[(_BARE, table.facts.path)] = {}
            found = memo.get(call.name)  # type: ignore[attr-defined]
            if found is None:
                found = memo[call.name] = self._bare_in(table, call)  # type: ignore[index]
            return found  # type: ignore[no-any-return]
        return self._bare_in(table, call)

    def _bare_in(self, table: FileTable, call: CallFact) -> tuple[_Found, str]:
        path = table.facts.path
        name = call.name
        owner = self.enclosing_class(table, path, call.caller)
        if owner is not None:
            hit = self.class_member(owner[0], owner[1], name)
            if hit is not None and hit[1].kind in CALLABLE:
                return self.settle_decl(hit[0], hit[1], "receiver", 0.95 if hit[2] == 0 else 0.9), ""
            if hit is not None and hit[1].kind == "field":
                return [], ""  # a member initializer `r_(r)`, or calling a callable member: not an edge
        for prefix in self.scopes(table, call.caller):
            qn = f"{prefix}.{name}" if prefix else name
            found = self.find_qn(path, qn, _CALLABLE_OR_CLASS)
            if found is None:
                continue
            dst_path, sym = found
            if sym.kind in CLASS_KINDS:
                return [(dst_path, sym, "constructor", 0.95)], ""  # Foo(1, 2) / Foo{...} as a call
            resolution = "same-scope" if dst_path == path else "import-bound"
            return self.settle_decl(dst_path, sym, resolution, 1.0), ""
        if name in self.builtins:
            return [], ""
        defs = [d for d in self.definitions(name) if d[1].kind == "function" and d[1].exported]
        if len(defs) == 1:
            return [(defs[0][0], defs[0][1], "name-only", 0.35)], name
        return [], name

    def _qualified(self, table: FileTable, call: CallFact) -> tuple[_Found, str]:
        path = table.facts.path
        scope = (call.receiver or "")[:-2]
        raw = f"{scope}::{call.name}"
        if scope.startswith("std") and (scope == "std" or scope.startswith("std::")):
            return [], raw
        dotted = scope.replace("::", ".").strip(".")
        typ = self.find_type(path, table, call.caller, scope)
        if typ is not None and typ[1].kind in CLASS_KINDS:
            hit = self.class_member(typ[0], typ[1], call.name)
            if hit is not None and hit[1].kind in CALLABLE:
                return self.settle_decl(hit[0], hit[1], "qualified", 0.95), ""
            return [], raw
        for prefix in self.scopes(table, call.caller):
            qn = f"{prefix}.{dotted}.{call.name}" if prefix else f"{dotted}.{call.name}"
            found = self.find_qn(path, qn, CALLABLE)
            if found is not None:
                return self.settle_decl(found[0], found[1], "qualified", 0.95), ""
            defs = [d for d in self.definitions(qn) if d[1].kind == "function"]
            if len(defs) == 1:
                return [(defs[0][0], defs[0][1], "qualified", 0.9)], ""
        return [], raw


def _include_sig(table: FileTable | None) -> _IncludeSig:
    """What a file's includes depend on in the file itself."""
    return tuple((imp.specifier, imp.kind) for imp in table.facts.imports) if table is not None else ()


def _field_type(field: SymbolFact) -> str:
    """ "Journal* journal_;" -> "Journal"; "std::vector<Item> items" -> "std::vector"."""
    sig = re.sub(r"\b(const|static|mutable|volatile|struct|class|unsigned|signed)\b", " ", field.signature)
    sig = re.sub(r"<[^<>]*(<[^<>]*>[^<>]*)*>", "", sig)
    match = re.match(r"\s*([A-Za-z_][\w:]*)", sig)
    if not match or match.group(1) == field.name:
        return ""
    return match.group(1)
