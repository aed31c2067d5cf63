"""Ruby resolution rules: require paths, one constant tree across files, mixins, reopened classes.

Constants are global in Ruby: `class Shop::Order` in one file and `module Shop; class Order` in another
define the same class. Qualified names are the lexical nesting (`Shop.Billing.Invoice.total`), so the
constant table is qualified name -> every definition of it in any Ruby file, and a class's members are
looked up in all its definitions (`parts`: reopened classes), then its superclass and mixins (bases).

A constant `X::Y` written inside `module A; class B` is looked up as A.B.X.Y, A.X.Y, then X.Y (lexical
scope, innermost first; the ancestors of the enclosing class are not searched for constants).

Calls (first match wins), on top of java.py's `TypeRules`:
* `X.new` / `A::X.new` -> class X ("constructor"); a bare `new` inside a class -> that class;
* a bare `m(...)` / `m arg` -> a method of the enclosing class or module, its reopened parts, its
  superclass chain and mixins; in an instance method of a module, then the method of the classes that
  include it ("receiver", 0.85 split over at most 5 targets: self is an instance of the includer); then a
  top-level `def` of this file ("same-scope") or of a file it requires ("import-bound"); nothing else (DSL
  calls such as `has_many` or `describe` stay unresolved strings). Bare names count as calls only when
  they are not locals (the parse hook applies Ruby's rule), so `total` alone is a call too;
* `self.m` -> the enclosing class; `super` -> the ancestor's same-named method (for `initialize` with no
  ancestor `initialize`, the superclass itself);
* `Const.m` -> a method (usually `def self.m`) of that class or module ("qualified");
* a local or instance variable assigned only `Foo.new` (typed by the hook) -> Foo's method.

IMPORTS: `require_relative 'x'` -> x.rb beside the file; `require 'a/b'` -> a/b.rb under any `lib/`
folder (gems and the app), then the repository root and the usual load-path folders (`app/*/`, `test/`,
`spec/`). A require that matches no repository file (a gem, the stdlib) is no edge.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict

from nexusd.parse.facts import CallFact, SymbolFact
from nexusd.resolve.base import MAX_HOPS, FileBindings, FileTable, ImportEdge, Target
from nexusd.resolve.base import common_prefix as _common_prefix
from nexusd.resolve.base import dedupe_imports as _dedupe
from nexusd.resolve.calls import MAX_CANDIDATES
from nexusd.resolve.java import TypeRules

RUBY_BUILTINS = frozenset(
    """puts print p pp require require_relative load raise fail loop lambda proc format sprintf printf
    attr_reader attr_writer attr_accessor include extend prepend private protected public
    module_function private_constant alias_method define_method freeze dup frozen? block_given? yield
    catch throw sleep rand srand exit exit! abort at_exit binding caller send public_send __send__
    respond_to? is_a? kind_of? instance_of? nil? tap then instance_variable_get instance_variable_set
    Integer Float String Array Hash Rational Complex gets warn autoload open system spawn trap
    private_class_method public_class_method attr method_missing respond_to_missing? super new
    instance_eval class_eval instance_exec class_exec define_singleton_method singleton_class
    using refine __method__ __dir__ require_dependency""".split()
)
RUBY_COMMON_METHODS = frozenset(
    """each map select reject find detect inject reduce sum count size length first last push pop
    shift unshift include? key? fetch merge merge! keys values join split strip gsub sub upcase
    downcase to_s to_sym to_i to_f to_a to_h empty? any? all? none? sort sort_by min max group_by
    each_with_object each_with_index flat_map compact uniq zip call dig slice delete concat times
    upto downto each_pair each_key each_value store update present? blank? nil? tap then inspect
    freeze dup clone hash eql? equal? send respond_to? is_a? kind_of? lines chars bytes start_with?
    end_with? match match? scan format round floor ceil abs succ pred between? clamp puts print
    write read close exist? exists? basename dirname expand_path now strftime parse""".split()
)
LOAD_DIRS = ("lib", "app", "test", "spec")


class RubyRules(TypeRules):
    languages = frozenset({"ruby"})
    self_names = frozenset({"self"})
    type_kinds = frozenset({"class", "namespace"})
    builtins = RUBY_BUILTINS
    builtin_receivers = frozenset()
    common_methods = RUBY_COMMON_METHODS

    # ---- the constant tree -------------------------------------------------------------------------
    def constants(self) -> dict[str, list[tuple[str, SymbolFact]]]:
        key = ("ruby-constants",)
        cached = self.index.memo.get(key)
        if cached is None:
            table: dict[str, list[tuple[str, SymbolFact]]] = defaultdict(list)
            for path, ft in self.index.tables.items():
                if ft.facts.language != "ruby":
                    continue
                for sym in ft.facts.symbols:
                    if sym.kind in self.type_kinds:
                        table[sym.qualified_name].append((path, sym))
            for defs in table.values():
                defs.sort(key=lambda d: (not d[1].bases, len(d[0]), d[0]))
            cached = self.index.memo[key] = dict(table)
        return cached  # type: ignore[return-value]

    def resolve_const(self, nesting: str | None, dotted: str, near: str) -> tuple[str, SymbolFact] | None:
        """`dotted` written inside the lexical nesting `nesting` (a qualified name, None at top level)."""
        consts = self.constants()
        dotted = dotted.removeprefix(".")
        scopes: list[str] = []
        cur = nesting
        while cur:
            scopes.append(cur)
            cur = cur.rpartition(".")[0] or None
        for scope in [*scopes, ""]:
            full = f"{scope}.{dotted}" if scope else dotted
            defs = consts.get(full)
            if defs:
                same = [d for d in defs if d[0] == near]
                return same[0] if same else defs[0]
        return None

    def parts(self, path: str, cls: SymbolFact) -> list[tuple[str, SymbolFact]]:
        return [
            (p, s) for p, s in self.constants().get(cls.qualified_name, []) if not (p == path and s is cls)
        ]

    def supertypes(self, path: str, cls: SymbolFact) -> list[tuple[str, SymbolFact]]:
        key = ("ruby-supertypes", path, cls.qualified_name, cls.occurrence)
        cached = self.index.memo.get(key)
        if cached is not None:
            return cached  # type: ignore[return-value]
        out: list[tuple[str, SymbolFact]] = []
        for base in cls.bases:
            found = self.resolve_const(cls.parent, base, path)
            if found is not None and found[1].qualified_name != cls.qualified_name:
                out.append(found)
        self.index.memo[key] = out
        return out

    def lookup_type(self, table: FileTable, scope: str | None, name: str) -> Target | None:
        found = self.resolve_const(self._nesting(table, scope), name, table.facts.path)
        return Target("symbol", found[0], found[1], via="qualified") if found is not None else None

    def resolve_type(self, table: FileTable, scope: str | None, dotted: str) -> Target | None:
        return self.lookup_type(table, scope, dotted)

    def _nesting(self, table: FileTable, scope: str | None) -> str | None:
        """The innermost class or module around `scope` (the lexical scope for constants)."""
        types = self.enclosing_types(table, scope)
        return types[0].qualified_name if types else None

    # ---- calls ---------------------------------------------------------------------------------------
    def resolve_call(
        self, table: FileTable, call: CallFact
    ) -> tuple[list[tuple[str, SymbolFact, str, float]], str] | None:
        path = table.facts.path
        name, receiver = call.name, call.receiver
        if call.is_new:
            dotted = f"{receiver}.{name}" if receiver else name
            found = self.lookup_type(table, call.caller, dotted)
            if found is not None and found.symbol is not None and found.symbol.kind == "class":
                return [(found.path, found.symbol, "constructor", 0.95)], ""
            return [], f"{dotted}.new"
        if receiver is None:
            if name == "new":
                types = [t for t in self.enclosing_types(table, call.caller) if t.kind == "class"]
                return ([(path, types[0], "constructor", 0.9)], "") if types else ([], "")
            types = self.enclosing_types(table, call.caller)
            for cls in types:
                hit = self.member(path, cls, name)
                if hit is not None:
                    return [self._edge(path, cls, hit, bare=True)], ""
            if types and types[0].kind == "namespace" and self._instance_method(table, call.caller):
                mixed = self._from_includers(path, types[0], name)
                if mixed:
                    return mixed, ""
            top = table.top(name)
            if top is not None and top.kind == "function":
                return [(path, top, "same-scope", 1.0)], ""
            for dst in self._required(table):
                other = self.index.table(dst)
                sym = other.top(name) if other is not None else None
                if sym is not None and sym.kind == "function":
                    return [(dst, sym, "import-bound", 1.0)], ""
            return [], "" if name in self.builtins else name
        if receiver == "super":
            types = self.enclosing_types(table, call.caller)
            if not types:
                return [], f"super.{name}"
            hit = self.member(path, types[0], name, skip_self=True)
            if hit is not None:
                return [(hit[0], hit[1], "receiver", 0.9)], ""
            if name == "initialize":
                for base_path, base in self.supertypes(path, types[0]):
                    if base.kind == "class":
                        return [(base_path, base, "constructor", 0.9)], ""
            return [], ""  # super into a class outside the repository (or Object)
        if receiver[:1].isupper() and receiver != "<expr>":  # a constant path, or a typed variable
            made = receiver.endswith("()")
            found = self.lookup_type(table, call.caller, receiver[:-2] if made else receiver)
            if found is not None and found.symbol is not None:
                hit = self.member(found.path, found.symbol, name)
                if hit is not None:
                    resolution = "receiver" if made else "qualified"
                    return [(hit[0], hit[1], resolution, 0.95 if hit[2] == 0 else 0.9)], ""
                return [], f"{receiver}.{name}"
            return [], f"{receiver}.{name}"
        return super().resolve_call(table, call)

    def _instance_method(self, table: FileTable, caller: str | None) -> bool:
        """Whether `caller` is a `def m` (not `def self.m`) directly in a class or module."""
        sym = table.by_qn.get(caller or "")
        return sym is not None and sym.kind == "method" and not sym.signature.startswith("def self.")

    def includers(self, path: str, mod: SymbolFact) -> list[tuple[str, SymbolFact]]:
        """Classes that `include` / `prepend` / `extend` the module `mod` directly (one of their bases)."""
        key = ("ruby-includers", mod.qualified_name)
        cached = self.index.memo.get(key)
        if cached is None:
            out: list[tuple[str, SymbolFact]] = []
            for defs in self.constants().values():
                for cls_path, cls in defs:
                    if cls.kind != "class" or not cls.bases:
                        continue
                    if any(b.qualified_name == mod.qualified_name for _, b in self.supertypes(cls_path, cls)):
                        out.append((cls_path, cls))
            cached = self.index.memo[key] = out
        return cached  # type: ignore[return-value]

    def _from_includers(
        self, path: str, mod: SymbolFact, name: str
    ) -> list[tuple[str, SymbolFact, str, float]]:
        """A self-call in a mixin method that the mixin does not define: the method of the class that
        includes it (self is an instance of that class). Several includers defining it: each, split."""
        hits: dict[tuple[str, str, int], tuple[str, SymbolFact]] = {}
        for cls_path, cls in self.includers(path, mod):
            hit = self.member(cls_path, cls, name)
            if hit is not None and hit[1].kind == "method":
                hits.setdefault((hit[0], hit[1].qualified_name, hit[1].occurrence), (hit[0], hit[1]))
        if not hits or len(hits) > MAX_CANDIDATES:
            return []
        confidence = 0.85 / len(hits)
        return [(dst_path, sym, "receiver", confidence) for dst_path, sym in hits.values()]

    # ---- requires ------------------------------------------------------------------------------------
    def _required(self, table: FileTable) -> list[str]:
        return [e.dst_path for e in self.index.bindings(table.facts.path).edges]

    def feature_map(self) -> dict[str, list[str]]:
        """`require` feature name ("shop/util") -> repository files, per load-path convention."""
        key = ("ruby-features",)
        cached = self.index.memo.get(key)
        if cached is None:
            features: dict[str, list[str]] = defaultdict(list)
            for path in sorted(self.index.paths):
                if not path.endswith(".rb"):
                    continue
                stem = path[:-3]
                parts = stem.split("/")
                features[stem].append(path)
                for i, part in enumerate(parts[:-1]):
                    if part in LOAD_DIRS:
                        features["/".join(parts[i + 1 :])].append(path)
                        if part == "app" and i + 2 < len(parts):  # app/models/order.rb -> "order"
                            features["/".join(parts[i + 2 :])].append(path)
            cached = self.index.memo[key] = dict(features)
        return cached  # type: ignore[return-value]

    def bind(self, table: FileTable) -> FileBindings:
        out = FileBindings()
        src = table.facts.path
        for imp in table.facts.imports:
            spec = imp.specifier.removesuffix(".rb")
            dst: str | None = None
            if imp.kind == "require_relative" or spec.startswith("."):
                cand = posixpath.normpath(posixpath.join(posixpath.dirname(src), spec)) + ".rb"
                dst = cand if cand in self.index.paths else None
            else:
                paths = self.feature_map().get(spec, [])
                if paths:
                    dst = max(paths, key=lambda p: (_common_prefix(p, src), -len(p)))
            if dst is not None:
                out.edges.append(ImportEdge(src, dst, imp.specifier, imp.line, "import-bound", 1.0))
        out.edges = _dedupe(out.edges)
        return out

    def module_member(self, path: str, name: str, hops: int) -> Target | None:
        if hops > MAX_HOPS:
            return None
        return None

