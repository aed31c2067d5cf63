"""Go resolution rules: packages are directories, imports are module paths, methods hang off types.

Packages. A package is the set of `.go` files of one directory; `_test.go` files belong to it only as seen
from other test files. An import path maps to a directory through the `module` line of every `go.mod` in
the repository (longest module path first); a `go.mod` that says `module std` (the Go source tree) maps
bare paths like `fmt` or `net/http` under its directory. Anything else is external: no edge, and calls
through it stay raw strings (`fmt.Println`).

IMPORTS edges. Go imports a package, the graph links files: one edge to every non-test file of the
imported package. Confidence 1.0: the module path is exact.

Same package, other file. Go has one scope per package, so `helper()` defined in a sibling file of the
same directory is a "same-scope" edge (1.0), exactly as if it were in the same file: the language makes
no distinction and neither does a reader. `bind` makes it so by binding every sibling's top-level names.

Calls, in order:
* `f()`: the file, then the package (same-scope), then dot-imports; Go builtins (`len`, `append`, type
  conversions) are dropped; anything else is unresolved.
* `pkg.F()`: `pkg` is an import's alias or the last element of its path -> `F` in that package
  ("qualified", 0.95, from calls.py's generic order).
* `x.M()` where the extractor wrote `x`'s declared type (see lang_go.py): the method set of
  that type across every file of its package, then of its embedded types, breadth first ("receiver",
  0.95 on the type itself, 0.9 when promoted from an embedded type). The extractor writes the type
  after an `@`: `s@Store`, `s.log@Store` (field `log` of a Store), `_@NewStore()` (a call's result). `x.f.M()` follows the struct field
  `f`'s declared type. `st := NewStore()` types `st` by NewStore's written result type. A type outside
  the repository (`*sql.DB`) leaves the call unresolved; no guessing.
* `x.M()` with no declared type: calls.py's generic rule (one uncommon same-name method in the
  repository -> a name-only edge of 0.35, else unresolved).
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict

from nexusd.parse.facts import CallFact, SymbolFact
from nexusd.resolve.base import (
    MAX_HOPS,
    FileBindings,
    FileTable,
    ImportEdge,
    LanguageRules,
    RepoIndex,
    Target,
)
from nexusd.resolve.calls import _name_only, lookup_scope, resolve_dotted

GO_BUILTINS = frozenset(
    """append cap clear close complex copy delete imag len make max min new panic print println real
    recover bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string
    uint uint8 uint16 uint32 uint64 uintptr any""".split()
)
GO_COMMON_METHODS = frozenset(
    """Error String Close Read Write Lock Unlock RLock RUnlock Len Less Swap Done Err Value Add Wait Get
    Set Del Load Store Bytes Reset Sprintf Printf Println Errorf Fatalf Fatal Logf Helper Run""".split()
)
TYPE_KINDS = frozenset({"struct", "interface", "type"})
_RESULT_HEAD = re.compile(r"\s*\(?\s*\*?\s*([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)?)")


class GoRules(LanguageRules):
    languages = frozenset({"go"})
    self_names = frozenset()
    builtins = GO_BUILTINS
    common_methods = GO_COMMON_METHODS

    def __init__(self, index: RepoIndex) -> None:
        super().__init__(index)
        self._mods: list[tuple[str, str]] | None = None
        self._packages: dict[str, list[str]] | None = None
        self._generation = -1

    def config_changed(self) -> None:
        self._mods = None

    def release(self) -> None:
        self._packages = None

    # ---- packages and modules ----------------------------------------------------------------------------
    def packages(self) -> dict[str, list[str]]:
        """Directory -> its .go files (test files included, sorted), rebuilt when the file set changed."""
        if self._packages is None or self._generation != self.index.generation:
            out: dict[str, list[str]] = defaultdict(list)
            for path in self.index.paths:
                if path.endswith(".go"):
                    out[posixpath.dirname(path)].append(path)
            for files in out.values():
                files.sort()
            self._packages = dict(out)
            self._generation = self.index.generation
        return self._packages

    def package_files(self, pkg_dir: str, tests: bool = False) -> list[str]:
        files = self.packages().get(pkg_dir, [])
        return files if tests else [f for f in files if not f.endswith("_test.go")]

    def modules(self) -> list[tuple[str, str]]:
        """(module path, directory) of every go.mod in the repository, longest module path first."""
        if self._mods is None:
            mods: list[tuple[str, str]] = []
            for path in sorted(self.index.paths):
                if posixpath.basename(path) != "go.mod":
                    continue
                try:
                    head = (self.index.root / path).read_text(encoding="utf-8", errors="replace")[:4096]
                except OSError:
                    continue
                match = re.search(r"^\s*module\s+\"?([^\s\"]+)", head, re.M)
                if match:
                    mods.append((match.group(1), posixpath.dirname(path)))
            mods.sort(key=lambda m: -len(m[0]))
            self._mods = mods
        return self._mods

    def package_dir(self, spec: str) -> str | None:
        """The repository directory an import path names, or None when it is outside the repository."""
        pkgs = self.packages()
        for mod, mod_dir in self.modules():
            if mod == "std" and "." not in spec.split("/", 1)[0]:
                rel = spec
            elif spec == mod:
                rel = ""
            elif spec.startswith(mod + "/"):
                rel = spec[len(mod) + 1 :]
            else:
                continue
            found = posixpath.join(mod_dir, rel).strip("/") if rel else mod_dir
            if found in pkgs:
                return found
        return None

    # ---- imports ---------------------------------------------------------------------------------------
    def bind(self, table: FileTable) -> FileBindings:
        out = FileBindings()
        src = table.facts.path
        src_dir = posixpath.dirname(src)
        for imp in table.facts.imports:
            spec = imp.specifier
            pkg = self.package_dir(spec)
            local = imp.module_alias or package_name(spec)
            if pkg is None:
                if local not in {"_", "."}:
                    out.names[local] = Target("external", spec)
                continue
            for dst in self.package_files(pkg):
                if dst != src:
                    out.edges.append(ImportEdge(src, dst, spec, imp.line, "import-bound", 1.0))
            if ("*", "*") in imp.names:
                out.stars.append(pkg)
            elif local != "_":
                out.names[local] = Target("module", pkg)
        # One scope per package: a sibling file's top-level names are this file's names.
        own = table.children.get(None, {})
        for sibling in self.package_files(src_dir, tests=src.endswith("_test.go")):
            other = self.index.table(sibling)
            if sibling == src or other is None:
                continue
            for name, sym in other.children.get(None, {}).items():
                if name not in own and name not in out.names:
                    out.names[name] = Target("symbol", sibling, sym, via="same-scope")
        return out

    def module_member(self, path: str, name: str, hops: int) -> Target | None:
        if hops > MAX_HOPS or path.endswith(".go"):
            return None
        for file in self.package_files(path):
            table = self.index.table(file)
            sym = table.top(name) if table is not None else None
            if sym is not None:
                return Target("symbol", file, sym, hops)
        return None

    # ---- calls -----------------------------------------------------------------------------------------
    def resolve_call(
        self, table: FileTable, call: CallFact
    ) -> tuple[list[tuple[str, SymbolFact, str, float]], str] | None:
        receiver = call.receiver
        if receiver is None or "@" not in receiver:
            return None  # bare calls, pkg.F(), untyped receivers: calls.py's generic order
        path, _, typ = receiver.rpartition("@")
        var, *fields = path.split(".")
        raw = ".".join([typ if var == "_" else var, *fields, call.name])
        found = self.type_of(table, typ)
        if found is None:
            if typ.endswith("()") and self._unknown_function(table, typ[:-2]):
                if call.name in self.common_methods:
                    return [], raw
                guesses = _name_only(self.index, call.name, table.facts.path, frozenset({"method"}), limit=1)
                return [(p, s, r, min(c, 0.35)) for p, s, r, c in guesses], raw
            return [], raw
        for field in fields:
            hit = self.member(found[0], found[1], field)
            if hit is None or hit[1].kind != "field":
                return [], raw
            field_table = self.index.table(hit[0])
            written = field_type(hit[1])
            found = self.type_in(field_table, written) if field_table and written else None
            if found is None:
                return [], raw
        hit = self.member(found[0], found[1], call.name)
        if hit is None or hit[1].kind != "method":
            return [], raw
        return [(hit[0], hit[1], "receiver", 0.95 if hit[2] == 0 else 0.9)], ""

    def _unknown_function(self, table: FileTable, dotted: str) -> bool:
        """True when `dotted` names nothing known, not even an external package (a guess may be tried)."""
        return resolve_dotted(self.index, self, table, None, dotted) is None

    def type_of(self, table: FileTable, typ: str) -> tuple[str, SymbolFact] | None:
        """The type symbol a receiver's written type denotes; `F()` is F's declared result type.

        Looked up from file scope, never from the enclosing type: a field named like a package
        (`store *store.Store`) must not shadow the package.
        """
        if typ.endswith("()"):
            fn = resolve_dotted(self.index, self, table, None, typ[:-2])
            if fn is None or fn.kind != "symbol" or fn.symbol is None:
                return None
            if fn.symbol.kind in TYPE_KINDS:  # a conversion `T(x)`
                return fn.path, fn.symbol
            result = result_type(fn.symbol.signature)
            fn_table = self.index.table(fn.path)
            return self.type_in(fn_table, result) if fn_table is not None and result else None
        return self.type_in(table, typ)

    def type_in(self, table: FileTable, typ: str) -> tuple[str, SymbolFact] | None:
        if "." in typ:
            target = resolve_dotted(self.index, self, table, None, typ)
        else:
            target = lookup_scope(self.index, self, table, None, typ)
        if target is None or target.kind != "symbol" or target.symbol is None:
            return None
        return (target.path, target.symbol) if target.symbol.kind in TYPE_KINDS else None

    def member(self, path: str, typ: SymbolFact, name: str) -> tuple[str, SymbolFact, int] | None:
        """`name` in the method set / fields of `typ`, across its package, then its embedded types."""
        key = ("go-member", path, typ.qualified_name, name)
        if key in self.index.memo:
            return self.index.memo[key]  # type: ignore[return-value]
        found: tuple[str, SymbolFact, int] | None = None
        queue: list[tuple[str, SymbolFact, int]] = [(path, typ, 0)]
        seen: set[tuple[str, str]] = set()
        while queue and found is None:
            cur_path, cur, depth = queue.pop(0)
            if (cur_path, cur.qualified_name) in seen or depth > MAX_HOPS:
                continue
            seen.add((cur_path, cur.qualified_name))
            files = self.package_files(posixpath.dirname(cur_path), tests=cur_path.endswith("_test.go"))
            for file in files or [cur_path]:
                table = self.index.table(file)
                hit = table.children.get(cur.qualified_name, {}).get(name) if table is not None else None
                if hit is not None:
                    found = (file, hit, depth)
                    break
            cur_table = self.index.table(cur_path)
            if cur_table is None:
                continue
            for base in cur.bases:
                base_type = self.type_in(cur_table, base)
                if base_type is not None:
                    queue.append((base_type[0], base_type[1], depth + 1))
        self.index.memo[key] = found
        return found


def package_name(spec: str) -> str:
    """The name an import binds without an alias: the last path element, minus a `/vN` major version."""
    parts = [p for p in spec.split("/") if p]
    if len(parts) > 1 and re.fullmatch(r"v\d+", parts[-1]):
        parts.pop()
    name = parts[-1] if parts else spec
    return name.removeprefix("go-").removesuffix(".go").replace("-", "_")


def result_type(signature: str) -> str:
    """ "func (s *S) New(a, b int) (*T, error)" -> "T": the first result's named type, "" if none."""
    depth = 0
    i = 0
    groups = 0
    # Skip the receiver (methods) and the parameter list: the first one or two top-level (...) groups.
    want = 2 if signature.startswith("func (") else 1
    while i < len(signature):
        ch = signature[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth == 0 and ch == ")":
                groups += 1
                if groups == want:
                    i += 1
                    break
        i += 1
    match = _RESULT_HEAD.match(signature[i:])
    return match.group(1) if match and match.group(1) != "func" else ""


def field_type(field: SymbolFact) -> str:
    """ "db *store.DB" -> "store.DB"."""
    written = field.signature[len(field.name) :].strip()
    match = _RESULT_HEAD.match(written.lstrip("*[]"))
    return match.group(1) if match else ""
