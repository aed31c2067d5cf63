"""Java resolution rules, and the type-member machinery C# and Ruby share.

Types live in packages, not files: every Java file reports its package (an ImportFact of kind "package"
whose names are its top-level types), and `TypeRules.packages()` turns those into package -> type name ->
definitions. A simple type name, as seen from a file, is then (first match wins, as in JLS 6.4.1):
nested types of the enclosing classes and the file's own types (calls.lookup_scope), single-type imports,
the file's own package (no import needed), on-demand imports (`a.b.*`), and finally a dotted name whose
head is a package root (`com.acme.util.Strings.slug()`). Packages and external on-demand imports are
star sources with a virtual path (`pkg:a.b`, `ext:a.b`, `static:<path>\\0<Type>`) that `module_member`
decodes; an on-demand import of a package outside the repository makes its capitalised names external
(no guess), everything else that matches nothing stays unresolved.

Calls (`resolve_call`, tried before calls.py's generic order):
* a bare `m()` is a method of the innermost enclosing type that has it, its own or inherited
  ("same-scope" 1.0 in the type itself, "receiver" 0.9 through a supertype); only then a static import;
* `this.m()` / `super.m()` search the enclosing type (interfaces and enums included) and its supertypes;
  `super(...)` / `this(...)` reach the constructor, or the base class when it declares none;
* `x.m()` where the hook typed `x` by its declaration arrives as `Order.m` and resolves through the
  type's members and supertypes ("qualified"), default methods of implemented interfaces included;
* `new Foo().m()` ("receiver" 0.9). Everything else takes calls.py's generic order.

IMPORTS edges: a single-type or static import -> the file declaring the type; `import a.b.*` -> every
file of package a.b (up to `STAR_FILES`, beyond which only the files whose types the importing file
names); an import whose type is not found by package falls back to the directory layout
(`a/b/C.java`, confidence 0.9). Same-package use is no edge: there is no import statement.
"""

from __future__ import annotations

import posixpath
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
from nexusd.resolve.base import common_prefix as _common_prefix
from nexusd.resolve.base import dedupe_imports as _dedupe
from nexusd.resolve.calls import lookup_scope, member_of, resolve_dotted

TYPE_KINDS = frozenset({"class", "interface", "enum"})
STAR_FILES = 64

_Found = list[tuple[str, SymbolFact, str, float]]
_Defs = list[tuple[str, SymbolFact]]

JAVA_COMMON_METHODS = frozenset(
    """equals hashCode toString getClass compareTo clone add addAll get put putAll remove removeIf size
    isEmpty contains containsKey containsValue clear stream map filter collect forEach reduce sorted
    iterator hasNext next keySet values entrySet getKey getValue orElse orElseThrow orElseGet isPresent
    ifPresent of ofNullable length charAt substring indexOf trim split replace startsWith endsWith
    format append println print printf close read write flush apply accept test run call join
    getMessage printStackTrace valueOf parseInt intValue longValue set sort asList toList toArray
    computeIfAbsent getOrDefault lock unlock await signal submit shutdown start interrupt sleep
    """.split()
)
# Receivers from java.lang (never imported) and other everywhere-types: their calls are dropped.
JAVA_BUILTIN_RECEIVERS = frozenset(
    """System Math Objects Arrays Collections String Integer Long Double Float Boolean Character Byte
    Short Thread Runtime Class Object StringBuilder Optional Stream Collectors List Map Set
    IntStream Files Paths Path Duration Instant LocalDate LocalDateTime UUID Pattern Logger""".split()
)


class TypeRules(LanguageRules):
    """Languages whose calls resolve through types: members, supertypes, enclosing types.

    Subclasses say how a file's types are grouped (`packages`) and may add other definitions of one type
    (`parts`: C# partial classes, Ruby reopened classes).
    """

    class_scope_visible = True
    type_kinds: frozenset[str] = TYPE_KINDS
    super_names: frozenset[str] = frozenset({"super"})

    def __init__(self, index: RepoIndex) -> None:
        super().__init__(index)
        self._packages: dict[str, dict[str, _Defs]] | None = None
        self._files: dict[str, list[str]] = {}
        self._generation = -1

    def release(self) -> None:
        self._packages = None  # (`_files` is made with it; kept until then, as `_star_files` reads it alone)

    # ---- the type table ----------------------------------------------------------------------------
    def packages(self) -> dict[str, dict[str, _Defs]]:
        """Package / namespace -> simple type name -> definitions, rebuilt when any file changed."""
        if self._packages is None or self._generation != self.index.generation:
            table: dict[str, dict[str, _Defs]] = defaultdict(lambda: defaultdict(list))
            files: dict[str, list[str]] = defaultdict(list)
            for path, ft in self.index.tables.items():
                if ft.facts.language not in self.languages:
                    continue
                for package, names in self.declared_types(ft):
                    files[package].append(path)
                    for name in names:
                        sym = ft.top(name)
                        if sym is not None and sym.kind in self.type_kinds:
                            table[package][name].append((path, sym))
            for types in table.values():
                for defs in types.values():
                    # Several definitions of one type (partial classes, duplicates): the one that names
                    # its bases first, so `new Order()` lands on the main declaration, deterministically.
                    defs.sort(key=lambda d: (not d[1].bases, len(d[0]), d[0]))
            self._packages = {k: dict(v) for k, v in table.items()}
            self._files = {k: sorted(set(v)) for k, v in files.items()}
            self._generation = self.index.generation
        return self._packages

    def declared_types(self, table: FileTable) -> list[tuple[str, list[str]]]:
        """(package, top-level type names) pairs a file declares; files without a package use ""."""
        out = [
            (imp.specifier, [n for n, _ in imp.names]) for imp in table.facts.imports if imp.kind == "package"
        ]
        if not out:
            out = [("", [s.name for s in table.children.get(None, {}).values() if s.kind in self.type_kinds])]
        return out

    def package_of(self, table: FileTable) -> str:
        for imp in table.facts.imports:
            if imp.kind == "package":
                return imp.specifier
        return ""

    def find_type(self, dotted: str, near: str) -> tuple[str, SymbolFact] | None:
        """`a.b.C` or `a.b.Outer.Inner` -> (path, type symbol): the longest package prefix that has it."""
        packages = self.packages()
        parts = dotted.split(".")
        for i in range(len(parts) - 1, -1, -1):
            pkg = ".".join(parts[:i])
            types = packages.get(pkg)
            if not types or parts[i] not in types:
                continue
            path, sym = _nearest(types[parts[i]], near)
            table = self.index.table(path)
            for nested in parts[i + 1 :]:
                child = table.children.get(sym.qualified_name, {}).get(nested) if table else None
                if child is None or child.kind not in self.type_kinds:
                    return None
                sym = child
            return path, sym
        return None

    # ---- members -------------------------------------------------------------------------------------
    def parts(self, path: str, cls: SymbolFact) -> _Defs:
        """Other definitions of the same type (partial / reopened classes); none in Java."""
        return []

    def member(
        self, path: str, cls: SymbolFact, name: str, skip_self: bool = False
    ) -> tuple[str, SymbolFact, int] | None:
        """`name` in type `cls` (all its parts) or its supertypes, breadth first, bounded, cycle-safe."""
        key = ("type-member", path, cls.qualified_name, name, skip_self)
        if key in self.index.memo:
            return self.index.memo[key]  # type: ignore[return-value]
        found: tuple[str, SymbolFact, int] | None = None
        queue: list[tuple[str, SymbolFact, int]] = [(path, cls, 0)]
        seen: set[tuple[str, str]] = set()
        while queue and found is None:
            cur_path, cur, depth = queue.pop(0)
            if (cur_path, cur.qualified_name) in seen or depth > MAX_HOPS:
                continue
            seen.add((cur_path, cur.qualified_name))
            defs = [(cur_path, cur), *self.parts(cur_path, cur)]
            if not (skip_self and depth == 0):
                for def_path, sym in defs:
                    table = self.index.table(def_path)
                    hit = table.children.get(sym.qualified_name, {}).get(name) if table else None
                    if hit is not None:
                        found = (def_path, hit, depth)
                        break
            for def_path, sym in defs:
                for base_path, base in self.supertypes(def_path, sym):
                    queue.append((base_path, base, depth + 1))
        self.index.memo[key] = found
        return found

    def supertypes(self, path: str, cls: SymbolFact) -> _Defs:
        key = ("supertypes", path, cls.qualified_name)
        cached = self.index.memo.get(key)
        if cached is not None:
            return cached  # type: ignore[return-value]
        out: _Defs = []
        table = self.index.table(path)
        if table is not None:
            for base in cls.bases:
                target = resolve_dotted(self.index, self, table, cls.parent, self.base_name(base))
                if target is not None and target.kind == "symbol" and target.symbol is not None:
                    if target.symbol.kind in self.type_kinds and target.symbol is not cls:
                        out.append((target.path, target.symbol))
        self.index.memo[key] = out
        return out

    def base_name(self, written: str) -> str:
        return written

    def lookup_type(self, table: FileTable, scope: str | None, name: str) -> Target | None:
        """A simple name as a type: nested types of the enclosing types (and their supertypes), then
        what calls.lookup_scope finds when that is a type (file, imports, package)."""
        for cls in [*self.enclosing_types(table, scope), None]:
            if cls is None:
                break
            if cls.name == name:
                return Target("symbol", table.facts.path, cls, via="same-scope")
            hit = self.member(table.facts.path, cls, name)
            if hit is not None and hit[1].kind in self.type_kinds:
                return Target("symbol", hit[0], hit[1], via="same-scope")
        top = table.top(name)
        if top is not None and top.kind in self.type_kinds:
            return Target("symbol", table.facts.path, top, via="same-scope")
        target = lookup_scope(self.index, self, table, None, name)
        if target is not None and target.kind == "symbol" and target.symbol is not None:
            if target.symbol.kind not in self.type_kinds:
                return None
        return target

    def resolve_type(self, table: FileTable, scope: str | None, dotted: str) -> Target | None:
        """`a.b.C` as a type path: the head by `lookup_type`, or as calls.resolve_dotted does."""
        head, _, rest = dotted.partition(".")
        target = self.lookup_type(table, scope, head)
        if target is None:
            return resolve_dotted(self.index, self, table, scope, dotted)
        for part in rest.split(".") if rest else []:
            if target is None or target.kind == "external":
                return target
            target = member_of(self.index, self, target, part)
        return target

    def enclosing_types(self, table: FileTable, scope: str | None) -> list[SymbolFact]:
        out = []
        while scope:
            sym = table.by_qn.get(scope)
            if sym is None:
                break
            if sym.kind in self.type_kinds:
                out.append(sym)
            scope = sym.parent
        return out

    # ---- calls ---------------------------------------------------------------------------------------
    def resolve_call(self, table: FileTable, call: CallFact) -> tuple[_Found, str] | None:
        path = table.facts.path
        name, receiver = call.name, call.receiver
        if receiver is None:
            if call.is_new:
                # `new Foo()` names a type: not Foo's constructors, not a same-name property or method.
                target = self.lookup_type(table, call.caller, name)
                if target is not None and target.kind == "symbol" and target.symbol is not None:
                    return [(target.path, target.symbol, "constructor", 0.95)], ""
                return None
            for cls in self.enclosing_types(table, call.caller):
                hit = self.member(path, cls, name)
                if hit is not None:
                    return [self._edge(path, cls, hit, bare=True)], ""
            return None
        head = receiver.partition(".")[0]
        if head in self.builtin_receivers:  # Console.WriteLine, System.out.println: dropped unless shadowed
            shadow = self.lookup_type(table, call.caller, head)
            if shadow is None or shadow.kind == "external":
                return [], ""
        if receiver in self.self_names:
            types = self.enclosing_types(table, call.caller)
            if not types:
                return [], f"{receiver}.{name}"
            cls = types[0]
            if name == cls.name and receiver == "this":  # this(...): another constructor of this class
                ctor = self.member(path, cls, name)
                return (
                    [(ctor[0], ctor[1], "receiver", 0.95)] if ctor else [(path, cls, "constructor", 0.95)]
                ), ""
            hit = self.member(path, cls, name)
            if hit is not None:
                return [self._edge(path, cls, hit, bare=False)], ""
            return [], f"{receiver}.{name}"
        if receiver in self.super_names:
            types = self.enclosing_types(table, call.caller)
            if not types:
                return [], f"{receiver}.{name}"
            cls = types[0]
            hit = self.member(path, cls, name, skip_self=True)
            if hit is not None:
                return [(hit[0], hit[1], "receiver", 0.9)], ""
            for base_path, base in self.supertypes(path, cls):
                if base.name == name and base.kind == "class":  # super(...) with no declared constructor
                    return [(base_path, base, "constructor", 0.9)], ""
            return [], f"{receiver}.{name}"
        if receiver.endswith("()") and receiver != "<expr>":
            made = self.resolve_type(table, call.caller, receiver[:-2])
            if made is not None and made.kind == "symbol" and made.symbol is not None:
                if made.symbol.kind in self.type_kinds:
                    hit = self.member(made.path, made.symbol, name)
                    if hit is not None:
                        return [(hit[0], hit[1], "receiver", 0.9)], ""
                    return [], f"{receiver}.{name}"
            return None
        if receiver != "<expr>":
            target = self.resolve_type(table, call.caller, receiver)
            if target is not None and target.kind == "symbol" and target.symbol is not None:
                if target.symbol.kind in self.type_kinds:
                    hit = self.member(target.path, target.symbol, name)
                    if hit is None:
                        return [], f"{receiver}.{name}"
                    resolution = "constructor" if hit[2] == 0 and hit[1].kind == "class" else "qualified"
                    return [(hit[0], hit[1], resolution, 0.95 if hit[2] == 0 else 0.9)], ""
        return None

    def _edge(
        self, path: str, cls: SymbolFact, hit: tuple[str, SymbolFact, int], bare: bool
    ) -> tuple[str, SymbolFact, str, float]:
        dst_path, sym, depth = hit
        if sym.kind in self.type_kinds and sym.kind == "class":
            return dst_path, sym, "constructor", 0.95
        if depth == 0:
            return (dst_path, sym, "same-scope", 1.0) if bare else (dst_path, sym, "receiver", 0.95)
        return dst_path, sym, "receiver", 0.9


class JavaRules(TypeRules):
    languages = frozenset({"java"})
    self_names = frozenset({"this"})
    builtin_receivers = JAVA_BUILTIN_RECEIVERS
    common_methods = JAVA_COMMON_METHODS

    def bind(self, table: FileTable) -> FileBindings:
        out = FileBindings()
        src = table.facts.path
        packages = self.packages()
        own = self.package_of(table)
        stars: list[str] = []
        external: list[str] = []
        for imp in table.facts.imports:
            if imp.kind == "package":
                continue
            spec = imp.specifier
            for name, alias in imp.names:
                if imp.kind == "static":
                    found = self.find_type(spec, src) or self._by_layout(spec)
                    if found is None:
                        if name != "*":
                            out.names[alias] = Target("external", f"{spec}.{name}")
                        continue
                    out.edges.append(ImportEdge(src, found[0], spec, imp.line, "import-bound", 1.0))
                    if name == "*":
                        stars.append(f"static:{found[0]}\0{found[1].qualified_name}")
                    else:
                        out.names[alias] = Target("lazy", found[0], name=f"{found[1].qualified_name}\0{name}")
                elif name == "*":
                    if spec in packages:
                        stars.append(f"pkg:{spec}")
                        for dst in self._star_files(table, spec):
                            out.edges.append(ImportEdge(src, dst, spec, imp.line, "import-bound", 1.0))
                        continue
                    found = self.find_type(spec, src)  # import a.b.Outer.*: its nested types
                    if found is not None:
                        stars.append(f"static:{found[0]}\0{found[1].qualified_name}")
                        out.edges.append(ImportEdge(src, found[0], spec, imp.line, "import-bound", 1.0))
                    else:
                        external.append(f"ext:{spec}")
                else:
                    found = self.find_type(spec, src)
                    confidence = 1.0
                    if found is None:
                        found, confidence = self._by_layout(spec), 0.9
                    if found is None:
                        out.names[alias] = Target("external", spec)
                        continue
                    out.names[alias] = Target("symbol", found[0], found[1])
                    out.edges.append(ImportEdge(src, found[0], spec, imp.line, "import-bound", confidence))
        # Same package before on-demand imports (JLS 6.4.1), then package roots for fully qualified names.
        # External packages last: they claim every capitalised name, so they only catch what is left.
        out.stars = [f"pkg:{own}", *stars, *external]
        for root in {p.split(".", 1)[0] for p in packages if p}:
            out.names.setdefault(root, Target("module", f"pkg:{root}"))
        out.edges = _dedupe(out.edges)
        return out

    def _star_files(self, table: FileTable, package: str) -> list[str]:
        files = self._files.get(package, [])
        if len(files) <= STAR_FILES:
            return files
        used = {c.name for c in table.facts.calls} | {
            (c.receiver or "").split(".", 1)[0] for c in table.facts.calls
        }
        used |= {b for s in table.facts.symbols for b in s.bases}
        types = self.packages().get(package, {})
        return sorted({p for name in used for p, _ in types.get(name, [])})

    def _by_layout(self, dotted: str) -> tuple[str, SymbolFact] | None:
        """`a.b.C` -> a file `.../a/b/C.java` declaring a top-level C (a package declaration lost to
        a syntax error, or sources compiled without one)."""
        suffix = dotted.replace(".", "/") + ".java"
        name = dotted.rsplit(".", 1)[-1]
        for path in self._by_basename().get(posixpath.basename(suffix), []):
            if path == suffix or path.endswith("/" + suffix):
                table = self.index.table(path)
                sym = table.top(name) if table else None
                if sym is not None and sym.kind in self.type_kinds:
                    return path, sym
        return None

    def _by_basename(self) -> dict[str, list[str]]:
        key = ("java-basenames",)
        cached = self.index.memo.get(key)
        if cached is None:
            by_name: dict[str, list[str]] = defaultdict(list)
            for path in self.index.paths:
                if path.endswith(".java"):
                    by_name[posixpath.basename(path)].append(path)
            cached = self.index.memo[key] = dict(by_name)
        return cached  # type: ignore[return-value]

    def module_member(self, path: str, name: str, hops: int) -> Target | None:
        if hops > MAX_HOPS:
            return None
        if path.startswith("pkg:"):
            package = path[4:]
            packages = self.packages()
            defs = packages.get(package, {}).get(name)
            if defs:
                dst, sym = defs[0]
                return Target("symbol", dst, sym, hops, via="qualified")
            sub = f"{package}.{name}" if package else name
            if any(p == sub or p.startswith(sub + ".") for p in packages):
                return Target("module", f"pkg:{sub}", None, hops)
            return None
        if path.startswith("ext:"):
            return Target("external", f"{path[4:]}.{name}") if name[:1].isupper() else None
        if path.startswith("static:"):
            path, _, qn = path[7:].partition("\0")
        elif "\0" in name:
            qn, _, name = name.partition("\0")
        else:
            return None
        table = self.index.table(path)
        cls = table.by_qn.get(qn) if table else None
        if cls is None:
            return None
        hit = self.member(path, cls, name)
        if hit is None:
            return None
        return Target("symbol", hit[0], hit[1], hops, via="import-bound")


def _nearest(defs: _Defs, near: str) -> tuple[str, SymbolFact]:
    if len(defs) == 1:
        return defs[0]
    return max(defs, key=lambda d: (_common_prefix(d[0], near), d[0] == near))


