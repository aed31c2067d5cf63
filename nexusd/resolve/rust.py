"""Rust resolution rules: crates from Cargo.toml, the module tree from paths and `mod`, `use` paths, impls.

Crates. Every Cargo.toml with a `[package]` is a crate named by `name` (dashes read as underscores);
its root module is src/lib.rs, else src/main.rs. Workspace members are found the same way, so
`use other_crate::x` from any crate reaches the member crate's lib.rs. A file's module path comes from
its place under the crate's src/ (src/a/b.rs and src/a/b/mod.rs are `crate::a::b`); files outside src/
(tests/, examples/, benches/, build.rs) are roots of their own that see the crate by name. A tree with no
Cargo.toml above a file treats the nearest lib.rs/main.rs directory as the crate root.

IMPORTS edges. `mod foo;` links the declaring file to foo.rs / foo/mod.rs. A `use` links to the file
where the imported leaf is found (the module file for `use crate::model;`, the defining module's file for
`use crate::model::User`). `std`, `core`, `alloc` and unknown crates are external: no edge.

Calls, in order:
* `f()`: the enclosing module (the file, or the inline `mod` around the call), its `use` bindings
  (following `pub use` re-exports, bounded), glob imports; prelude names (`Some`, `Ok`, `Box`, ...) and
  macros are never edges. Tuple-struct constructors point at the struct ("constructor").
* `a::b::f()`: the path from the current module (`crate::`, `self::`, `super::`, a crate name, a `use`
  binding or a child module) -> "qualified" 0.95; `Type::f()` -> the associated function in any `impl`
  of Type in the repository ("qualified"); `Self::f()` -> the enclosing impl's type ("receiver" 0.95).
* `self.m()`: methods of the enclosing impl's type: its inherent impls and trait impls ("receiver" 0.95),
  then the default methods of the traits it implements ("receiver" 0.9); inside a trait's default method,
  the trait's own methods and supertraits. `self.f.m()` follows the struct field's written type.
* `x.m()` where the extractor wrote x's type (lang_rust.py) -> the same method lookup on that type;
  `let c = Circle::new()` types c by new's written return type (`Self` is the impl's type).
* `x.m()` with no known type: calls.py's generic rule (one uncommon same-name method -> name-only 0.35).
Which `impl Foo` belongs to which `Foo` is decided by the type's name within the crate (impl paths are not
resolved): two same-named types in one crate share their impls' methods, a known gap.
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

RUST_PRELUDE = frozenset(
    """Some None Ok Err Box Vec String Option Result drop panic assert unreachable todo unimplemented
    Default From Into Iterator Clone Copy Send Sync Sized ToString ToOwned format println print eprintln
    write writeln vec""".split()
)
RUST_EXTERNAL_CRATES = frozenset({"std", "core", "alloc", "proc_macro", "test"})
RUST_COMMON_METHODS = frozenset(
    """iter iter_mut into_iter map filter collect unwrap expect unwrap_or unwrap_or_else unwrap_or_default
    clone to_string to_owned push pop len is_empty get get_mut insert remove contains contains_key
    as_ref as_mut as_str borrow borrow_mut lock read write send recv join split trim chars bytes
    next ok err ok_or map_err and_then or_else is_some is_none is_ok is_err take replace extend
    sort sort_by first last keys values entry or_insert or_default fmt eq cmp partial_cmp hash into
    from default new with_capacity parse format flush drain any all find position sum count rev zip
    enumerate skip chain flat_map for_each fold max min""".split()
)
TYPE_KINDS = frozenset({"struct", "enum", "trait", "type"})
_CRATE_NAME = re.compile(r"^\s*name\s*=\s*\"([^\"]+)\"", re.M)


class RustRules(LanguageRules):
    languages = frozenset({"rust"})
    self_names = frozenset({"self"})
    builtins = RUST_PRELUDE
    common_methods = RUST_COMMON_METHODS

    def __init__(self, index: RepoIndex) -> None:
        super().__init__(index)
        self._crates: dict[str, str] | None = None  # crate dir -> crate name
        self._generation = -1
        self._mods: dict[tuple[str, tuple[str, ...]], str] = {}
        self._file_mod: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._impls: dict[tuple[str, str], list[tuple[str, SymbolFact]]] = {}

    def config_changed(self) -> None:
        self._crates = None
        self._generation = -1

    def release(self) -> None:
        self._generation = -1  # (`_refresh` makes the module tree and the impls again)
        self._mods, self._file_mod, self._impls = {}, {}, {}

    # ---- crates and the module tree ---------------------------------------------------------------------
    def crates(self) -> dict[str, str]:
        if self._crates is None:
            crates: dict[str, str] = {}
            for path in sorted(self.index.paths):
                if posixpath.basename(path) != "Cargo.toml":
                    continue
                try:
                    toml = (self.index.root / path).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                section = toml.split("[package]", 1)
                if len(section) == 2:
                    body = section[1].split("\n[", 1)[0]
                    match = _CRATE_NAME.search(body)
                    if match:
                        crates[posixpath.dirname(path)] = match.group(1).replace("-", "_")
            self._crates = crates
        return self._crates

    def _refresh(self) -> None:
        if self._generation == self.index.generation and self._crates is not None:
            return
        crates = self.crates()
        self._mods = {}
        self._file_mod = {}
        self._impls = defaultdict(list)
        rs = sorted(p for p in self.index.paths if p.endswith(".rs"))
        roots = {posixpath.dirname(p) for p in rs if posixpath.basename(p) in {"lib.rs", "main.rs"}}
        for path in rs:
            root, mod = _module_of(path, crates, roots)
            self._file_mod[path] = (root, mod)
            self._mods.setdefault((root, mod), path)
            table = self.index.table(path)
            if table is None:
                continue
            for sym in table.facts.symbols:
                if sym.kind == "impl":
                    self._impls[(root, sym.name)].append((path, sym))
        self._generation = self.index.generation

    def module_file(self, root: str, mod: tuple[str, ...]) -> str | None:
        self._refresh()
        return self._mods.get((root, mod))

    def module_of(self, path: str) -> tuple[str, tuple[str, ...]]:
        self._refresh()
        return self._file_mod.get(path, (posixpath.dirname(path), ()))

    def crate_root(self, name: str) -> str | None:
        for crate_dir, crate in self.crates().items():
            if crate == name:
                return crate_dir + "/src" if crate_dir else "src"
        return None

    # ---- modules as targets: "file" or "file#inline.mod" -----------------------------------------------
    def _module_target(self, root: str, mod: tuple[str, ...]) -> Target | None:
        path = self.module_file(root, mod)
        return Target("module", path) if path is not None else None

    def resolve_path(self, table: FileTable, scope: str | None, segments: list[str]) -> Target | None:
        """A `::` path as seen from `scope` in `table`'s file: a module, a symbol, or external."""
        if not segments:
            return None
        path = table.facts.path
        root, mod = self.module_of(path)
        first, rest = segments[0], segments[1:]
        prefix = _inline_prefix(table, scope)
        target: Target | None
        if first == "crate":
            target = self._module_target(root, ())
        elif first == "self":
            target = Target("module", f"{path}#{prefix}" if prefix else path)
        elif first == "super":
            target = self._super(table, path, prefix, root, mod)
            while rest and rest[0] == "super" and target is not None:
                t_path, _, t_prefix = target.path.partition("#")
                t_table = self.index.table(t_path)
                t_root, t_mod = self.module_of(t_path)
                target = self._super(t_table, t_path, t_prefix, t_root, t_mod) if t_table else None
                rest = rest[1:]
        elif first == "Self":
            owner = self._enclosing_impl(table, scope)
            target = self._type_target(table, owner.name) if owner is not None else None
        else:
            target = self.lookup(table, scope, first)
            if target is None:
                crate = self.crate_root(first)
                if crate is not None:
                    target = self._module_target(crate, ())
                elif first in RUST_EXTERNAL_CRATES or first[:1].islower():
                    return Target("external", "::".join(segments))
        for part in rest:
            if target is None or target.kind == "external":
                return target
            target = self.member(target, part, 0)
        return target

    def _super(
        self, table: FileTable | None, path: str, prefix: str, root: str, mod: tuple[str, ...]
    ) -> Target | None:
        if prefix:
            parent = prefix.rpartition(".")[0]
            return Target("module", f"{path}#{parent}" if parent else path)
        return self._module_target(root, mod[:-1]) if mod else None

    def member(self, target: Target, name: str, hops: int) -> Target | None:
        if target.kind == "module":
            return self.module_member(target.path, name, hops)
        sym = target.symbol
        if target.kind == "symbol" and sym is not None and sym.kind in TYPE_KINDS:
            hit = self.method(target.path, sym, name)
            if hit is not None:
                return Target("symbol", hit[0], hit[1], via="qualified")
        return None

    def module_member(self, path: str, name: str, hops: int) -> Target | None:
        """`name` as seen from outside module `path`, memoised: glob imports (`use super::*` both ways)
        fan out, so an unmemoised walk is exponential in the hop bound. A cycle meets the in-progress
        marker and finds nothing through that branch."""
        if hops > MAX_HOPS:
            return None
        key = ("rs-member", path, name)
        memo = self.index.memo
        if key in memo:
            return memo[key]  # type: ignore[return-value]
        memo[key] = None
        found = self._module_member(path, name, hops)
        memo[key] = found
        return found

    def _module_member(self, path: str, name: str, hops: int) -> Target | None:
        file, _, prefix = path.partition("#")
        table = self.index.table(file)
        if table is None:
            return None
        sym = self._item(table, prefix or None, name)
        if sym is not None:
            if sym.kind == "namespace":
                return Target("module", f"{file}#{sym.qualified_name}", hops=hops)
            return Target("symbol", file, sym, hops)
        if not prefix:
            bound = self.index.bindings(file).names.get(name)
            if bound is not None:
                settled = self.index.settle(bound, hops)
                if settled is not None:
                    return Target(settled.kind, settled.path, settled.symbol, max(hops + 1, settled.hops))
            root, mod = self.module_of(file)
            sub = self.module_file(root, (*mod, name))
            if sub is not None:
                return Target("module", sub, hops=hops)
            for star in self.index.bindings(file).stars:
                if star != file:
                    found = self.module_member(star, name, hops + 1)
                    if found is not None:
                        return found
        return None

    def lookup(self, table: FileTable, scope: str | None, name: str) -> Target | None:
        """A bare name from `scope`: the enclosing inline modules and the file, its `use`s, child modules."""
        path = table.facts.path
        prefix = _inline_prefix(table, scope)
        while True:
            sym = self._item(table, prefix or None, name)
            if sym is not None:
                if sym.kind == "namespace":
                    return Target("module", f"{path}#{sym.qualified_name}")
                return Target("symbol", path, sym, via="same-scope")
            if not prefix:
                break
            prefix = prefix.rpartition(".")[0]
        bindings = self.index.bindings(path)
        bound = bindings.names.get(name)
        if bound is not None:
            return self.index.settle(bound)
        root, mod = self.module_of(path)
        sub = self.module_file(root, (*mod, name))
        if sub is not None:
            return Target("module", sub)
        for star in bindings.stars:
            found = self.module_member(star, name, 1)
            if found is not None:
                return found
        return None

    # ---- imports ---------------------------------------------------------------------------------------
    def bind(self, table: FileTable) -> FileBindings:
        """`mod` and `use` bindings. Never reads another file's bindings (imports are cyclic in real
        crates: `use super::*` both ways): a leaf that is not a plain item or submodule of the module a
        path names is bound lazily and followed on use, with a hop bound (RepoIndex.settle)."""
        out = FileBindings()
        src = table.facts.path
        root, mod = self.module_of(src)
        for imp in table.facts.imports:
            if imp.kind == "mod":
                child = self.module_file(root, (*mod, imp.specifier))
                if child is not None:
                    out.edges.append(ImportEdge(src, child, imp.specifier, imp.line, "import-bound", 1.0))
                continue
            segments = [s for s in imp.specifier.split("::") if s]
            for name, alias in imp.names:
                if not segments:  # `use foo;` / `use foo as bar;`: a crate or a child module
                    found = self._use_base(table, [name])
                    if found is None or found.kind == "external":
                        out.names[alias] = Target("external", name)
                    else:
                        out.names[alias] = found
                        self._edge(out, src, found.path, name, imp.line)
                    continue
                base = self._use_base(table, segments)
                if base is None or base.kind != "module":
                    if name != "*":
                        out.names[alias] = Target("external", f"{imp.specifier}::{name}")
                    continue
                if name == "*":
                    out.stars.append(base.path)
                    self._edge(out, src, base.path, imp.specifier, imp.line)
                    continue
                step = self._step(base, name)
                out.names[alias] = step if step is not None else Target("lazy", base.path, name=name)
                where = step.path if step is not None and step.kind == "module" else base.path
                self._edge(out, src, where, imp.specifier, imp.line)
        return out

    def _step(self, target: Target, name: str) -> Target | None:
        """One path segment inside a module without following `use`s: an item or a submodule."""
        file, _, prefix = target.path.partition("#")
        table = self.index.table(file)
        if table is not None:
            sym = self._item(table, prefix or None, name)
            if sym is not None:
                if sym.kind == "namespace":
                    return Target("module", f"{file}#{sym.qualified_name}")
                return Target("symbol", file, sym)
        if not prefix:
            root, mod = self.module_of(file)
            sub = self.module_file(root, (*mod, name))
            if sub is not None:
                return Target("module", sub)
        return None

    def _use_base(self, table: FileTable, segments: list[str]) -> Target | None:
        """The module a `use` path names, walked segment by segment without reading any bindings."""
        path = table.facts.path
        root, mod = self.module_of(path)
        first, rest = segments[0], segments[1:]
        target: Target | None
        if first == "crate":
            target = self._module_target(root, ())
        elif first == "self":
            target = Target("module", path)
        elif first == "super":
            target = self._module_target(root, mod[:-1]) if mod else None
            while rest and rest[0] == "super" and target is not None:
                t_root, t_mod = self.module_of(target.path)
                target = self._module_target(t_root, t_mod[:-1]) if t_mod else None
                rest = rest[1:]
        else:
            sub = self.module_file(root, (*mod, first))
            crate = self.crate_root(first)
            if sub is not None:
                target = Target("module", sub)
            elif crate is not None:
                target = self._module_target(crate, ())
            else:
                return Target("external", "::".join(segments))
        for part in rest:
            if target is None or target.kind != "module":
                return None
            target = self._step(target, part)
        return target

    def _edge(self, out: FileBindings, src: str, where: str, spec: str, line: int) -> None:
        dst = where.partition("#")[0]
        if dst != src and not any(e.dst_path == dst and e.specifier == spec for e in out.edges):
            out.edges.append(ImportEdge(src, dst, spec, line, "import-bound", 1.0))

    # ---- types and methods -------------------------------------------------------------------------------
    def _type_target(self, table: FileTable, written: str) -> Target | None:
        segments = [s for s in written.split("::") if s]
        if not segments:
            return None
        if len(segments) == 1:
            target = self.lookup(table, None, segments[0])
        else:
            target = self.resolve_path(table, None, segments)
        if target is not None and target.kind == "symbol" and target.symbol is not None:
            if target.symbol.kind == "impl":  # an impl of a type defined elsewhere in this file's scope
                return target
            if target.symbol.kind in TYPE_KINDS:
                return target
        return None

    def method(self, path: str, typ: SymbolFact, name: str) -> tuple[str, SymbolFact, int] | None:
        """`name` in the impls of `typ` (inherent, then trait impls), then in the traits' default bodies."""
        key = ("rs-method", path, typ.qualified_name, typ.kind, name)
        if key in self.index.memo:
            return self.index.memo[key]  # type: ignore[return-value]
        found = self._method(path, typ, name)
        self.index.memo[key] = found
        return found

    def _method(self, path: str, typ: SymbolFact, name: str) -> tuple[str, SymbolFact, int] | None:
        self._refresh()
        root, _ = self.module_of(path)
        if typ.kind == "trait":
            return self._trait_method(path, typ, name, 0, set())
        impls = self._impls.get((root, typ.name), [])
        traits: list[tuple[str, SymbolFact]] = []
        for impl_path, impl in sorted(impls, key=lambda i: (bool(i[1].bases), i[0])):
            table = self.index.table(impl_path)
            if table is None:
                continue
            hit = table.children.get(impl.qualified_name, {}).get(name)
            if hit is not None and hit.kind == "method":
                return impl_path, hit, 0
            for base in impl.bases:
                trait = self._type_target(table, base)
                if trait is not None and trait.symbol is not None and trait.symbol.kind == "trait":
                    traits.append((trait.path, trait.symbol))
        for trait_path, trait_sym in traits:
            hit2 = self._trait_method(trait_path, trait_sym, name, 1, set())
            if hit2 is not None:
                return hit2
        return None

    def _trait_method(
        self, path: str, trait: SymbolFact, name: str, depth: int, seen: set[tuple[str, str]]
    ) -> tuple[str, SymbolFact, int] | None:
        if (path, trait.qualified_name) in seen or depth > MAX_HOPS:
            return None
        seen.add((path, trait.qualified_name))
        table = self.index.table(path)
        if table is None:
            return None
        hit = table.children.get(trait.qualified_name, {}).get(name)
        if hit is not None and hit.kind == "method":
            return path, hit, depth
        for base in trait.bases:
            sup = self._type_target(table, base)
            if sup is not None and sup.symbol is not None and sup.symbol.kind == "trait":
                found = self._trait_method(sup.path, sup.symbol, name, depth + 1, seen)
                if found is not None:
                    return found
        return None

    def field_type(self, path: str, typ: SymbolFact, field: str) -> Target | None:
        table = self.index.table(path)
        if table is None or typ.kind != "struct":
            return None
        sym = table.children.get(typ.qualified_name, {}).get(field)
        if sym is None or sym.kind != "field":
            return None
        written = sym.signature.partition(":")[2].strip().lstrip("&").removeprefix("mut ").strip()
        written = re.split(r"[<\s,;]", written, maxsplit=1)[0]
        return self._type_target(table, written) if written else None

    def returned_type(self, path: str, fn: SymbolFact) -> Target | None:
        table = self.index.table(path)
        _, arrow, ret = fn.signature.rpartition("->")
        if table is None or not arrow:
            return None
        ret = ret.strip().split(" where ", 1)[0].strip()
        for wrapper in ("Result<", "Option<", "Box<", "Rc<", "Arc<"):
            if ret.startswith(wrapper):
                ret = ret[len(wrapper) :]
        ret = re.split(r"[<>\s,;{]", ret.lstrip("&").removeprefix("mut ").strip(), maxsplit=1)[0]
        if ret == "Self" and fn.parent:
            impl = table.by_qn.get(fn.parent)
            return self._type_target(table, impl.name) if impl is not None else None
        return self._type_target(table, ret) if ret else None

    # ---- calls -----------------------------------------------------------------------------------------
    def resolve_call(
        self, table: FileTable, call: CallFact
    ) -> tuple[list[tuple[str, SymbolFact, str, float]], str] | None:
        receiver, name = call.receiver, call.name
        if receiver is None:
            return self._bare(table, call)
        if receiver.endswith("::"):
            return self._path_call(table, call)
        if receiver == "<expr>":
            return None
        var_path, at, written = receiver.partition("@")
        var, *fields = var_path.split(".")
        raw = ".".join([written if var == "_" else var, *fields, name])
        typ: Target | None
        if var == "self" and not at:
            impl = self._enclosing_impl(table, call.caller)
            if impl is None:
                return [], raw
            typ = self._type_target(table, impl.name)
            if typ is None or impl.kind == "trait":
                typ = Target("symbol", table.facts.path, impl)
        elif at:
            typ = self._written_type(table, call.caller, written)
            if typ is None:
                return [], raw
        else:
            return None  # an untyped variable: the generic single-candidate rule
        for field in fields:
            if typ is None or typ.symbol is None:
                return [], raw
            typ = self.field_type(typ.path, typ.symbol, field)
        if typ is None or typ.symbol is None:
            return [], raw
        hit = self.method(typ.path, typ.symbol, name)
        if hit is None:
            return [], raw
        return [(hit[0], hit[1], "receiver", 0.95 if hit[2] == 0 else 0.9)], ""

    def _written_type(self, table: FileTable, scope: str | None, written: str) -> Target | None:
        if not written.endswith("()"):
            return self._type_target(table, written)
        segments = [s for s in written[:-2].split("::") if s]
        fn = (
            self.resolve_path(table, scope, segments)
            if len(segments) > 1
            else self.lookup(table, scope, segments[0])
        )
        if fn is None or fn.kind != "symbol" or fn.symbol is None:
            return None
        if fn.symbol.kind in TYPE_KINDS:  # tuple struct literal `Meters(3)`
            return fn
        return self.returned_type(fn.path, fn.symbol)

    def _bare(self, table: FileTable, call: CallFact) -> tuple[list[tuple[str, SymbolFact, str, float]], str]:
        name = call.name
        target = self.lookup(table, call.caller, name)
        if target is not None and target.kind == "symbol" and target.symbol is not None:
            sym = target.symbol
            if sym.kind in {"function", "method"}:
                if target.via == "same-scope":
                    return [(target.path, sym, "same-scope", 1.0)], ""
                return [(target.path, sym, "import-bound", 1.0 if target.hops == 0 else 0.95)], ""
            if sym.kind == "struct":
                return [(target.path, sym, "constructor", 0.95)], ""
            return [], ""
        if target is not None and target.kind == "external":
            return [], name
        if name in self.builtins:
            return [], ""
        return [], name

    def _path_call(
        self, table: FileTable, call: CallFact
    ) -> tuple[list[tuple[str, SymbolFact, str, float]], str]:
        receiver = call.receiver or ""
        segments = [s for s in receiver.split("::") if s]
        raw = f"{receiver}{call.name}"
        base = self.resolve_path(table, call.caller, segments)
        if base is None and segments and segments[0] in self.builtins:
            return [], ""  # Vec::new(), String::from(), Box::new()
        if base is None or base.kind == "external":
            return [], raw
        if base.kind == "module":
            found = self.module_member(base.path, call.name, base.hops)
            if found is not None and found.symbol is not None and found.symbol.kind in {"function", "method"}:
                return [(found.path, found.symbol, "qualified", 0.95)], ""
            if found is not None and found.symbol is not None and found.symbol.kind == "struct":
                return [(found.path, found.symbol, "constructor", 0.95)], ""
            return [], raw
        if base.symbol is None:
            return [], raw
        hit = self.method(base.path, base.symbol, call.name)
        if hit is None:
            return [], raw
        resolution = "receiver" if segments == ["Self"] else "qualified"
        return [(hit[0], hit[1], resolution, 0.95 if hit[2] == 0 else 0.9)], ""

    def _item(self, table: FileTable, parent: str | None, name: str) -> SymbolFact | None:
        """An item named `name` directly in a module; a type beats an impl of the same name."""
        hit = table.children.get(parent, {}).get(name)
        if hit is None or hit.kind != "impl":
            return hit
        return self._types_of(table).get((parent, name), hit)

    def _types_of(self, table: FileTable) -> dict[tuple[str | None, str], SymbolFact]:
        """(parent, name) -> the type of that name; ("impl", qn) -> the first impl/trait with that qn."""
        key = ("rs-types", table.facts.path)
        cached = self.index.memo.get(key)
        if cached is None:
            out: dict[tuple[str | None, str], SymbolFact] = {}
            for sym in table.facts.symbols:
                if sym.kind in TYPE_KINDS:
                    out.setdefault((sym.parent, sym.name), sym)
                if sym.kind in {"impl", "trait"}:
                    out.setdefault(("impl", sym.qualified_name), sym)
            cached = self.index.memo[key] = out
        return cached  # type: ignore[return-value]

    def _enclosing_impl(self, table: FileTable, scope: str | None) -> SymbolFact | None:
        """The impl (or trait) whose body holds `scope`. A struct and its impls share a qualified name and
        `by_qn` keeps only one of them, so the impl is looked up by that name."""
        types = self._types_of(table)
        while scope:
            sym = table.by_qn.get(scope)
            if sym is None:
                return None
            if sym.kind in {"impl", "trait"} or sym.kind in TYPE_KINDS:
                found = types.get(("impl", sym.qualified_name))
                if found is not None:
                    return found
            scope = sym.parent
        return None


def _module_of(path: str, crates: dict[str, str], roots: set[str]) -> tuple[str, tuple[str, ...]]:
    """(crate source root dir, module path) of a .rs file."""
    best = None
    for crate_dir in crates:
        src = f"{crate_dir}/src" if crate_dir else "src"
        if path.startswith(src + "/") and (best is None or len(src) > len(best)):
            best = src
    if best is None:
        # No Cargo.toml: the nearest directory above holding lib.rs/main.rs is the root.
        d = posixpath.dirname(path)
        while True:
            if d in roots:
                best = d
                break
            if not d:
                return posixpath.dirname(path), ()
            d = posixpath.dirname(d)
    rel = path[len(best) + 1 :] if best else path
    parts = rel[:-3].split("/")
    if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in {"lib", "main"}):
        parts = parts[:-1]
    if parts and parts[0] == "bin":
        return f"{best}/bin", ()
    return best, tuple(parts)


def _inline_prefix(table: FileTable, scope: str | None) -> str:
    """Qualified name of the innermost inline `mod` around `scope` ("" at file level)."""
    while scope:
        sym = table.by_qn.get(scope)
        if sym is None:
            return ""
        if sym.kind == "namespace":
            return sym.qualified_name
        scope = sym.parent
    return ""
