"""Receiver typing: a small, flow-insensitive type environment per scope, and calls resolved through it.

Extraction records, per scope, what each name is bound to (`TypeFact`, facts.py): `p = Prepared()`,
`x: Foo = ...`, `def f(r: Response)`, `with X() as x`, `self.logger = Logger()`, `private db: Db`,
`return self`, `-> Session`, `@group() def cli`. This module evaluates those expressions with the same
binding machinery as names (calls.lookup_scope / resolve_dotted: imports, same file, qualified), so a type
is a class *of the repository*, or a known type outside it, or unknown:

=====================  ==========================================================================
value                  meaning
=====================  ==========================================================================
instance               an instance of a repository class (or interface): its methods are looked up
                       through its bases (Python: C3 MRO over the repository's classes; TS/JS: the
                       `extends` chain); `implements` adds no bodies, so no edge to an interface
                       method unless the interface itself is the declared type
external               a value whose type lives outside the repository (an import that leaves it, a
                       builtin such as `str`/`list`/`Array`, a literal): calls on it are never guessed.
                       What an outside *function* returns (`make()`, `copy.copy(x)` when not spelt so
                       the parser can type it) is not known to be outside: never guessed either, but
                       its calls stay unresolved sites that count against a verdict; an outside class's
                       instance (a CapWords callee, `threading.Thread()`) is external
target                 a name that is not a value (a module, a class, a function): the generic order
                       in calls.py resolves calls on it, as before
unknown                anything else; unknown stays unknown, and the generic order decides
=====================  ==========================================================================

Rules of the environment: a name's bindings in one scope must all agree (two different classes, or one
untyped binding, make it unknown); declared types (annotations, casts) win over inferred ones in the same
scope; an inner scope's binding hides an outer one; a class body's names and `self.x`/`this.x`
assignments are the class's fields; a function's type is its declared return type, else the agreeing
type of all its `return` expressions, with `self`/`this` bound to the receiver (so fluent chains on a
subclass stay on the subclass). A decorator types the decorated name only when it evaluates to a
repository instance. Evaluation is memoised per index generation and bounded (`MAX_DEPTH`).

A call `recv.m()` whose receiver evaluates to an instance resolves to the method with provenance
`inferred` (0.9 when every step was declared, 0.85 when any was inferred from a constructor or a return);
a receiver of external type resolves to nothing and is never guessed (the raw call stays unresolved).
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass
from functools import cache

from nexusd.parse.facts import CallFact, SymbolFact
from nexusd.resolve.base import EXTERNAL_MARK, LanguageRules, RepoIndex, Target
from nexusd.resolve.calls import _bases, enclosing_class, lookup_scope, resolve_dotted

MAX_DEPTH = 12  # nested evaluations (a variable typed by a call typed by a return...) followed at most
DECLARED_CONFIDENCE = 0.9
INFERRED_CONFIDENCE = 0.85
TYPE_KINDS = frozenset({"class", "interface"})
_TOKEN = re.compile(r"\{[^}]*\}|\(\)|~\d+:\d+|\.[^.(~]+|[^.(~]+")


@dataclass(slots=True, frozen=True)
class Value:
    kind: str  # instance | external | target | method
    path: str = ""
    sym: SymbolFact | None = None  # instance: the class; method: the method
    target: Target | None = None
    declared: bool = True
    owner: Value | None = None  # method: the instance it was read from (binds self/this)

    def same(self, other: Value) -> bool:
        if self.kind != other.kind:
            return False
        if self.kind == "external":
            return True
        if self.kind == "target":
            a, b = self.target, other.target
            return a is not None and b is not None and (a.kind, a.path, a.symbol and a.symbol.qualified_name) == (
                b.kind,
                b.path,
                b.symbol and b.symbol.qualified_name,
            )
        return self.path == other.path and self.sym is not None and other.sym is not None and (
            self.sym.qualified_name == other.sym.qualified_name
        )


EXTERNAL = Value("external")
# What a function outside the repository returns may be an object of the repository (`copy.copy(self)`,
# `functools.reduce(...)`, `dataclasses.replace(obj)`): unknown, but never guessed. A call on it stays an
# unresolved site that counts against a verdict (not marked external); its members and calls stay the same.
EXTERNAL_RESULT = Value("external", "result")
# A builtin container (`list`, `Array`, `Map`...) is external, but what its methods return may be an element, an
# object of the repository: `xs.pop().save()` is unknown, not external (its site counts against a verdict).
CONTAINER_CLASS = Value("external", "container-class")
CONTAINER = Value("external", "container")
CONTAINER_METHOD = Value("external", "container-method")
_CONTAINER_NAMES = frozenset(
    "list dict set frozenset tuple Array Map Set WeakMap WeakSet".split()
)
_Bindings = dict[tuple[str | None, str], tuple[list[tuple[str, str | None]], list[tuple[str, str | None]]]]


class TypeTable:
    """One file's type facts, grouped for lookup: (scope, name) -> (declared, inferred) expressions, each
    with the scope it is evaluated in."""

    __slots__ = ("vars", "shadows", "decorated", "returns", "fields", "properties", "names", "callbacks")

    def __init__(self, index: RepoIndex, path: str) -> None:
        self.vars: _Bindings = {}
        self.shadows: set[tuple[str | None, str]] = set()
        self.decorated: dict[tuple[str | None, str], tuple[str, str | None]] = {}
        self.returns: _Bindings = {}
        self.fields: _Bindings = {}  # (class qualified name, field) -> expressions
        self.properties: set[tuple[str, str]] = set()  # (class qualified name, getter name)
        self.names: set[str] = set()  # every name bound in some scope of the file
        self.callbacks: _Bindings = {}  # (function, "i:j") -> what parameter j of a callback given as argument i is
        table = index.tables.get(path)
        if table is None:
            return
        by_qn = table.by_qn
        names = self.names
        for fact in table.facts.types:
            kind, scope = fact.kind, fact.scope
            if kind == "shadow":
                for name in fact.name.split():
                    self.shadows.add((scope, name))
                    names.add(name)
                continue
            names.add(fact.name)
            if kind == "decorated":
                self.decorated[(scope, fact.name)] = (fact.expr, scope)
                continue
            if kind == "property":
                cls = enclosing_class(table, scope)
                if cls is not None:
                    self.properties.add((cls.qualified_name, fact.name))
                continue
            if kind == "var":
                sym = by_qn.get(scope) if scope else None
                if sym is not None and sym.kind == "class":
                    _add(self.fields, (scope, fact.name), fact.expr, scope)  # a class-body name is a field
                _add(self.vars, (scope, fact.name), fact.expr, scope)
            elif kind == "field":
                cls = enclosing_class(table, scope)
                if cls is not None:
                    _add(self.fields, (cls.qualified_name, fact.name), fact.expr, scope)
            elif kind == "return" and scope is not None:
                _add(self.returns, (scope, ""), fact.expr, scope)
            elif kind == "callback" and scope is not None:
                _add(self.callbacks, (scope, fact.name), fact.expr, scope)


def _add(table: _Bindings, key: tuple[str | None, str], expr: str, scope: str | None) -> None:
    entry = table.get(key)
    if entry is None:
        entry = table[key] = ([], [])
    (entry[0] if expr.startswith("{") else entry[1]).append((expr, scope))


class Evaluator:
    """Evaluates `TypeFact.expr` strings against one index; every result is memoised in `index.memo`."""

    def __init__(self, index: RepoIndex, rules: LanguageRules) -> None:
        self.index = index
        self.rules = rules
        self.active: set[tuple[object, ...]] = set()

    def types(self, path: str) -> TypeTable:
        return env_table(self.index, path)

    # ---- expressions ---------------------------------------------------------------------------------
    def expr(self, path: str, scope: str | None, expr: str, this: Value | None, depth: int) -> Value | None:
        if depth > MAX_DEPTH or not expr or expr == "?":
            return None
        tokens = _TOKEN.findall(expr)
        if not tokens:
            return None
        head = tokens[0]
        value = (
            self.declared(path, scope, head[1:-1])
            if head.startswith("{")
            else self.name(path, scope, head, this, depth)
        )
        declared = True
        for token in tokens[1:]:
            if value is None:
                return None
            declared = declared and value.declared
            if token == "()":
                value = self.call(value, depth)
            elif token[0] == "~":
                value = self.callback_param(value, token[1:], depth)
            else:
                value = self.attr(value, token[1:], depth)
        if value is not None and value.declared and not declared:
            value = _with_declared(value, False)  # a step inferred on the way makes the whole inferred
        return value

    def declared(self, path: str, scope: str | None, dotted: str) -> Value | None:
        """A type name as written in an annotation or a cast: an instance of it."""
        table = self.index.tables.get(path)
        if table is None:
            return None
        target = resolve_dotted(self.index, self.rules, table, scope, dotted)
        if target is None:
            head = dotted.split(".", 1)[0]
            if head not in builtin_types(self.rules):
                return None
            return CONTAINER if head in _CONTAINER_NAMES else EXTERNAL
        if target.kind == "external":
            return None if _repo_miss(self.index, target) else EXTERNAL
        if target.kind == "symbol" and target.symbol is not None and target.symbol.kind in TYPE_KINDS:
            return Value("instance", target.path, target.symbol)
        return None

    def name(self, path: str, scope: str | None, name: str, this: Value | None, depth: int) -> Value | None:
        index = self.index
        table = index.tables.get(path)
        if table is None:
            return None
        if name in self.rules.self_names:
            if name == "cls":
                cls = enclosing_class(table, scope)
                return Value("target", path, target=Target("symbol", path, cls)) if cls is not None else None
            if this is not None:
                return this
            cls = enclosing_class(table, scope)
            return Value("instance", path, cls) if cls is not None else None
        types = self.types(path)
        cur, first = scope, True
        while True:
            sym = table.by_qn.get(cur) if cur is not None else None
            if first or sym is None or sym.kind != "class":  # a class body's names are not seen by its methods
                key = (cur, name)
                if key in types.shadows:
                    return None
                if key in types.vars:
                    return self.binding(path, types.vars[key], this, depth, ("var", path, cur, name))
                deco = types.decorated.get(key)
                if deco is not None:
                    value = self.expr(path, deco[1], deco[0], None, depth + 1)
                    if value is not None and value.kind == "instance":
                        return value
                    break  # the decorated function itself, below
            if sym is None:
                break
            cur, first = sym.parent, False
        bound = index.bindings(path).names.get(name)
        if bound is not None and bound.kind == "lazy" and table.top(name) is None:
            found = self.rules.module_member(bound.path, bound.name, 1)
            if found is None:
                return self.module_var(bound.path, bound.name, depth)
            return self.target(found, depth)
        target = lookup_scope(index, self.rules, table, scope, name)
        if target is None:
            if name in _CONTAINER_NAMES and name in builtin_types(self.rules):
                return CONTAINER_CLASS
            return EXTERNAL if name in builtin_types(self.rules) else None
        if target.kind == "external" and not _repo_miss(index, target):
            return Value("external", "name:" + name)  # the local name says what calling it makes
        return self.target(target, depth)

    def target(self, target: Target, depth: int) -> Value | None:
        if target.kind == "external":
            return None if _repo_miss(self.index, target) else _external_name(target.path)
        sym = target.symbol
        if target.kind == "symbol" and sym is not None and sym.parent is None:
            if sym.kind not in _VALUE_KINDS:
                value = self.module_var(target.path, sym.name, depth)
                if value is not None:
                    return value
            deco = self.types(target.path).decorated.get((None, sym.name))
            if deco is not None:
                value = self.expr(target.path, deco[1], deco[0], None, depth + 1)
                if value is not None and value.kind == "instance":
                    return value
        return Value("target", target.path, target=target)

    def module_var(self, path: str, name: str, depth: int) -> Value | None:
        entry = self.types(path).vars.get((None, name))
        if entry is None:
            return None
        return self.binding(path, entry, None, depth, ("var", path, None, name))

    def binding(
        self,
        path: str,
        entry: tuple[list[tuple[str, str | None]], list[tuple[str, str | None]]],
        this: Value | None,
        depth: int,
        key: tuple[object, ...],
    ) -> Value | None:
        """The one value all of a name's bindings agree on (declared ones first), else None."""
        memo_key = (*key, _this_key(this))
        memo = self.index.memo
        if memo_key in memo:
            return memo[memo_key]  # type: ignore[return-value]
        if memo_key in self.active:
            return None
        self.active.add(memo_key)
        try:
            declared, inferred = entry
            result: Value | None = None
            all_declared = True  # every value on the way came from an annotation or a cast
            for expr, scope in declared or inferred:
                value = self.expr(path, scope, expr, this, depth + 1)
                if value is None or value.kind == "method" or (result is not None and not result.same(value)):
                    result = None
                    break
                all_declared = all_declared and value.declared
                if result is None:
                    result = value
            if result is not None and result.declared != all_declared:
                result = _with_declared(result, all_declared)
        finally:
            self.active.discard(memo_key)
        memo[memo_key] = result
        return result

    # ---- steps ---------------------------------------------------------------------------------------
    def attr(self, value: Value, name: str, depth: int) -> Value | None:
        if value.kind == "external":
            if value.path == "container":
                return CONTAINER_METHOD
            if value.path == "result":
                return EXTERNAL_RESULT
            if value.path.startswith("name:"):
                return Value("external", "name:" + name)  # a member of an outside module or class
            return EXTERNAL
        if value.kind == "target":
            target = value.target
            if target is None:
                return None
            if target.kind == "module":
                found = self.rules.module_member(target.path, name, target.hops)
                if found is None:
                    return self.module_var(target.path, name, depth)
                return self.target(found, depth)
            sym = target.symbol
            if target.kind == "symbol" and sym is not None and sym.kind in TYPE_KINDS:
                for cls_path, cls in self.mro(target.path, sym):
                    entry = self.types(cls_path).fields.get((cls.qualified_name, name))
                    if entry is not None:
                        return self.binding(cls_path, entry, None, depth, ("field", cls_path, cls.qualified_name, name))
                hit = self.member(target.path, sym, name)
                if hit is not None:
                    return Value("target", hit[0], target=Target("symbol", hit[0], hit[1], via="qualified"))
            return None
        if value.kind != "instance" or value.sym is None:
            return None
        for cls_path, cls in self.mro(value.path, value.sym):
            qn = cls.qualified_name
            types = self.types(cls_path)
            if (qn, name) in types.properties:
                table = self.index.tables.get(cls_path)
                getter = table.children.get(qn, {}).get(name) if table is not None else None
                return self.returns(cls_path, getter, value, depth) if getter is not None else None
            entry = types.fields.get((qn, name))
            if entry is not None:
                return self.binding(cls_path, entry, value, depth, ("field", cls_path, qn, name))
            table = self.index.tables.get(cls_path)
            method = table.children.get(qn, {}).get(name) if table is not None else None
            if method is not None:
                return Value("method", cls_path, method, owner=value, declared=value.declared)
        return None

    def call(self, value: Value, depth: int) -> Value | None:
        if value.kind == "external":
            if value.path == "container-method":
                return None  # maybe an element: unknown
            if value.path == "result":
                return EXTERNAL_RESULT
            if value.path.startswith("name:"):
                return external_call_result(value.path[5:])
            return CONTAINER if value.path == "container-class" else EXTERNAL
        if value.kind == "method":
            return self.returns(value.path, value.sym, value.owner, depth) if value.sym is not None else None
        if value.kind == "instance":
            hit = self.attr(value, "__call__", depth)
            return self.call(hit, depth) if hit is not None and hit.kind == "method" else None
        target = value.target
        if target is None or target.kind != "symbol" or target.symbol is None:
            return None
        sym = target.symbol
        if sym.kind == "class":
            return Value("instance", target.path, sym, declared=False)
        if sym.kind in {"function", "method"}:
            if (sym.parent, sym.name) in self.types(target.path).decorated:
                return None  # the decorator's wrapper is called, not this body
            return self.returns(target.path, sym, None, depth)
        return None

    def callback_param(self, value: Value, position: str, depth: int) -> Value | None:
        """`f~i:j`: parameter j of a function given to `f` as argument i, typed by what f declares for it
        (TS contextual typing: `operate((source, subscriber) => ...)` with `init: (s: Observable<T>,
        d: Subscriber<R>) => void`). `f` is a function, a method read from a typed receiver, or a class
        (its constructor)."""
        this = None
        if value.kind == "method":
            path, fn, this = value.path, value.sym, value.owner
        elif value.kind == "target" and value.target is not None and value.target.kind == "symbol":
            path, fn = value.target.path, value.target.symbol
            if fn is not None and fn.kind in TYPE_KINDS:
                ctor = "__init__" if "python" in self.rules.languages else "constructor"
                hit = self.member(path, fn, ctor)
                path, fn = hit if hit is not None else (path, None)
        else:
            return None
        if fn is None or fn.kind not in {"function", "method"}:
            return None
        entry = self.types(path).callbacks.get((fn.qualified_name, position))
        if entry is None:
            return None
        return self.binding(path, entry, this, depth, ("callback", path, fn.qualified_name, position))

    def returns(self, path: str, fn: SymbolFact | None, this: Value | None, depth: int) -> Value | None:
        if fn is None or fn.kind not in {"function", "method"}:
            return None
        entry = self.types(path).returns.get((fn.qualified_name, ""))
        if entry is None:
            return None
        return self.binding(path, entry, this, depth, ("return", path, fn.qualified_name))

    # ---- classes -------------------------------------------------------------------------------------
    def member(self, path: str, cls: SymbolFact, name: str) -> tuple[str, SymbolFact] | None:
        for cls_path, cur in self.mro(path, cls):
            table = self.index.tables.get(cls_path)
            hit = table.children.get(cur.qualified_name, {}).get(name) if table is not None else None
            if hit is not None:
                return cls_path, hit
        return None

    def mro(self, path: str, cls: SymbolFact) -> list[tuple[str, SymbolFact]]:
        """The class and its repository bases in method-resolution order: C3 (Python's) where it exists,
        else breadth first; bounded and cycle-safe."""
        key = ("mro", path, cls.qualified_name)
        found = self.index.memo.get(key)
        if found is None:
            found = self.index.memo[key] = self._mro(path, cls, set())
        return found  # type: ignore[return-value]

    def _mro(self, path: str, cls: SymbolFact, seen: set[tuple[str, str]]) -> list[tuple[str, SymbolFact]]:
        here = (path, cls.qualified_name)
        table = self.index.tables.get(path)
        if here in seen or table is None or len(seen) > 64:
            return [(path, cls)]
        seen = seen | {here}
        bases = _bases(self.index, self.rules, table, cls)
        lines = [self._mro(p, b, seen) for p, b in bases]
        merged = _c3([list(line) for line in lines] + [list(bases)])
        if merged is None:  # inconsistent hierarchy: breadth first instead
            merged = []
            for line in lines:
                merged.extend(item for item in line if _key(item) not in {_key(m) for m in merged})
        return [(path, cls), *merged]


# Builtin names that are classes whose instances are never repository objects. Builtin *functions* are not
# here: `next(it)`, `max(xs)`, `getattr(o, n)` return whatever they are given; nor `type`/`object`/`Proxy`.
_PY_BUILTIN_TYPES = frozenset(
    n for n in dir(builtins) if isinstance(getattr(builtins, n), type) and n not in {"type", "object", "super"}
)
_ES_BUILTIN_TYPES = frozenset(
    """String Number Boolean Array Date RegExp Error TypeError RangeError SyntaxError Promise Map Set WeakMap
    WeakSet BigInt URL URLSearchParams AbortController TextEncoder TextDecoder Event CustomEvent Headers
    Request Response FormData Blob Symbol""".split()
)


@cache
def _builtin_types_of(languages: frozenset[str]) -> frozenset[str]:
    if "python" in languages:
        return _PY_BUILTIN_TYPES
    if "typescript" in languages or "javascript" in languages:
        return _ES_BUILTIN_TYPES
    return frozenset()


def builtin_types(rules: LanguageRules) -> frozenset[str]:
    return _builtin_types_of(rules.languages)


_VALUE_KINDS = frozenset({"class", "interface", "function", "method", "module", "namespace", "enum", "type"})


def _key(item: tuple[str, SymbolFact]) -> tuple[str, str]:
    return item[0], item[1].qualified_name


def _c3(seqs: list[list[tuple[str, SymbolFact]]]) -> list[tuple[str, SymbolFact]] | None:
    out: list[tuple[str, SymbolFact]] = []
    seqs = [s for s in seqs if s]
    for _ in range(256):
        if not seqs:
            return out
        for seq in seqs:
            head = _key(seq[0])
            if not any(head in {_key(x) for x in other[1:]} for other in seqs):
                break
        else:
            return None
        chosen = seq[0]
        out.append(chosen)
        seqs = [[x for x in s if _key(x) != _key(chosen)] for s in seqs]
        seqs = [s for s in seqs if s]
    return None


def _external_name(spec: str) -> Value:
    """A name bound outside the repository (`import copy`, `from copy import copy`, `import lib from "lib"`):
    external, remembering its last name, which tells what calling it makes (`external_call_result`)."""
    last = re.split(r"[./:]", spec)[-1]
    return Value("external", "name:" + last) if last else EXTERNAL


def external_call_result(name: str) -> Value:
    """What calling an outside name `name` gives: a class's instance (CapWords, `threading.Thread()`) is
    external; any other function's result is `EXTERNAL_RESULT`, unknown and never guessed (it may be an
    argument given back, `copy.copy(self)`), so a call on it still counts against a verdict."""
    return EXTERNAL if name[:1].isupper() else EXTERNAL_RESULT


def _with_declared(value: Value, declared: bool) -> Value:
    return Value(value.kind, value.path, value.sym, value.target, declared, value.owner)


def _this_key(this: Value | None) -> tuple[str, str, bool] | None:
    """What of `this` a memoised value depends on. Its `declared` too: a value reached through `this` is declared
    only if `this` was, so without it the first evaluation's confidence stuck to every later one (the standard
    library's pathlib: `self.parent.stat()` got 0.85 or 0.9 by which file had been resolved before)."""
    return (this.path, this.sym.qualified_name, this.declared) if this is not None and this.sym is not None else None


def _repo_miss(index: RepoIndex, target: Target) -> bool:
    """`settle` reports a name a repository module does not define as external "path:name"; that is not
    a type outside the repository, just an unknown one."""
    head = target.path.rsplit(":", 1)[0]
    return head in index.tables


def env_table(index: RepoIndex, path: str) -> TypeTable:
    """The type facts of `path`, grouped (memoised per index generation). A `TypeTable` depends on its file's
    table only, so a table kept with what it derives (`RepoIndex.keep_derived`: a worktree's overlay tables
    and the baseline's tables they stand in for, put in and back at every re-base) keeps its grouping too."""
    key = ("types", path)
    found = index.memo.get(key)
    if found is None:
        table = index.tables.get(path)
        kept = table is not None and table.derived is not None
        found = table.types if table is not None and kept else None
        if found is None:
            found = TypeTable(index, path)
            if table is not None and kept:
                table.types = found
        index.memo[key] = found
    return found  # type: ignore[return-value]


def env_names(index: RepoIndex, path: str) -> set[str]:
    """Names some scope of `path` binds (a receiver whose head is not one needs no environment)."""
    return env_table(index, path).names


def receiver_value(index: RepoIndex, rules: LanguageRules, path: str, call: CallFact) -> Value | None:
    """What the receiver of `call` evaluates to in its scope (None: unknown). Memoised per scope and
    receiver: a file repeats its receivers (`self.db`, `os.path`) many times."""
    expr = call.chain or call.receiver
    if not expr or expr == "<expr>":
        return None
    key = ("recv", path, call.caller, expr)
    memo = index.memo
    if key in memo:
        return memo[key]  # type: ignore[return-value]
    value = memo[key] = Evaluator(index, rules).expr(path, call.caller, expr, None, 0)
    return value


def typed_receiver(
    index: RepoIndex, rules: LanguageRules, path: str, call: CallFact
) -> tuple[list[tuple[str, SymbolFact, str, float]], str] | None:
    """The `inferred` step of calls.py: (edges, raw) when the receiver's type is known, else None.

    A receiver of external type gives ([], ext:raw): unresolved, marked external (it cannot reach a symbol of
    the repository, so `impact` need not count it against a verdict), and no name-only guess may follow."""
    value = receiver_value(index, rules, path, call)
    if value is None or value.kind == "target" or value.kind == "method":
        return None
    raw = f"{call.receiver}.{call.name}"
    if value.kind == "external":
        return [], raw if value is EXTERNAL_RESULT or value.path == "result" else EXTERNAL_MARK + raw
    if value.sym is None:
        return [], raw
    hit = Evaluator(index, rules).member(value.path, value.sym, call.name)
    if hit is None:
        return [], raw
    confidence = DECLARED_CONFIDENCE if value.declared else INFERRED_CONFIDENCE
    return [(hit[0], hit[1], "inferred", confidence)], ""
