"""Call resolution: the generic order in which a call is bound to a symbol, and what each step is worth.

For each `CallFact`, first match wins:

=====================  ==============================================================  ===========
step                   rule                                                            confidence
=====================  ==============================================================  ===========
same-scope             a bare name defined in an enclosing function or the same file    1.0
import-bound           a bare name bound by an import (directly, or via re-exports)     1.0 / 0.95
constructor            any of the above (or `new`) landing on a class -> the class      0.95
receiver               self/this/cls: the enclosing class, then its bases               0.95 / 0.9
receiver (super)       super().m() / super.m(): the bases only; super(...) in JS ->     0.9
                       the base constructor, or the base class when it has none
receiver (made)        Foo().m() / new Foo().m(): m on class Foo and its bases          0.9
constructor (cls)      cls(...) in a Python classmethod -> the enclosing class          0.9
qualified              mod.f() / ns.f() / Class.static() / a.b.c() through bindings     0.95
name-only              nothing bound: same-name repository symbols, see below           <= 0.5
=====================  ==============================================================  ===========

Constructors point at the *class* symbol (not `__init__`/`constructor`): the class is what a reader
asks about ("who creates Foo?"), and it exists even when no constructor is written.

Name-only is where precision is lost, so it is fenced in:
* a bare name falls back only where the language allows an unbound name to mean another file's symbol
  (JS script files; never Python, where an unbound name is a builtin or a NameError);
* a receiver of unknown type (`x.append()`, `self.repo.save()`) falls back only when exactly one method
  of that name exists in the repository and the name is not a common builtin-type method;
* a receiver bound to something outside the repository (`requests.get`) never falls back;
* with n candidates each edge gets 0.5 / n, and more than `MAX_CANDIDATES` means unresolved.

What stays unresolved is recorded as a raw string ("requests.get", "self.helper", "foo") on the caller;
builtins (`print`, `len`, `console.log`, `JSON.parse`) are dropped, since they are neither edges nor a
gap in the graph.
"""

from __future__ import annotations

from nexusd.parse.facts import CallFact, SymbolFact
from nexusd.resolve.base import (
    EXTERNAL_MARK,
    MAX_HOPS,
    CallEdge,
    FileResolution,
    FileTable,
    LanguageRules,
    RepoIndex,
    Target,
)

MAX_CANDIDATES = 5
CALLABLE = frozenset({"function", "method", "class"})


def resolve_calls(index: RepoIndex, rules: LanguageRules, table: FileTable, out: FileResolution) -> None:
    path = table.facts.path
    module = table.facts.symbols[0] if table.facts.symbols else None
    module_id = index.symbol_id(path, module) if module is not None else ""
    ids: dict[str | None, str] = {None: module_id}
    seen: set[tuple[str, str, int]] = set()
    for call in table.facts.calls:
        src_id = ids.get(call.caller)
        if src_id is None:
            sym = table.by_qn.get(call.caller or "")
            src_id = index.symbol_id(path, sym) if sym is not None else module_id
            ids[call.caller] = src_id
        found, raw = _resolve_one(index, rules, table, call)
        if not found:
            if raw:
                external = raw.startswith(EXTERNAL_MARK)
                out.unresolved.setdefault(src_id, []).append(raw[len(EXTERNAL_MARK) :] if external else raw)
                out.sites.setdefault(src_id, []).append((call.line, external))
            continue
        for dst_path, dst, resolution, confidence in found:
            dst_id = index.symbol_id(dst_path, dst)
            key = (src_id, dst_id, call.line)
            if key in seen:
                continue
            seen.add(key)
            out.calls.append(CallEdge(src_id, dst_id, call.line, resolution, round(confidence, 3)))


_Found = list[tuple[str, SymbolFact, str, float]]


def _resolve_one(
    index: RepoIndex, rules: LanguageRules, table: FileTable, call: CallFact
) -> tuple[_Found, str]:
    """Edges for one call, or ([], raw string to record as unresolved; "" to drop it as a builtin)."""
    special = rules.resolve_call(table, call)
    if special is not None:
        return special
    name, receiver = call.name, call.receiver
    path = table.facts.path
    if receiver is None:
        target = lookup_scope(index, rules, table, call.caller, name)
        if target is not None:
            found = _as_call(target, call)
            if found:
                return found, ""
            return [], EXTERNAL_MARK + name if target.kind == "external" else name
        if name == rules.self_constructor:
            cls = enclosing_class(table, call.caller)
            return ([(path, cls, "constructor", 0.9)], "") if cls is not None else ([], "")
        if name in rules.builtins:
            return [], ""
        if rules.bare_name_only(table):
            return _name_only(index, name, path, frozenset({"function", "class"})), name
        return [], name
    raw = f"{receiver}.{name}"
    head, _, rest = receiver.partition(".")
    if head in rules.self_names and not rest:
        cls = enclosing_class(table, call.caller)
        if cls is None:
            return [], raw
        hit = class_member(index, rules, path, cls, name, skip_self=False)
        if hit is not None:
            dst_path, sym, depth = hit
            return [(dst_path, sym, "receiver", 0.95 if depth == 0 else 0.9)], ""
        return [], raw
    if receiver == "super":
        cls = enclosing_class(table, call.caller)
        if cls is None:
            return [], raw
        hit = class_member(index, rules, path, cls, name, skip_self=True)
        if hit is not None:
            return [(hit[0], hit[1], "receiver", 0.9)], ""
        if name == rules.constructor_name:  # JS super(...) with no explicit base constructor
            base = first_base(index, rules, path, cls)
            if base is not None:
                return [(base[0], base[1], "constructor", 0.9)], ""
        return [], raw
    if head in rules.builtin_receivers and lookup_scope(index, rules, table, call.caller, head) is None:
        return [], ""
    if receiver.endswith("()"):
        # `Foo().m()` / `new Foo().m()`: when Foo is a class, m is looked up on it.
        made = resolve_dotted(index, rules, table, call.caller, receiver[:-2])
        if (
            made is not None
            and made.kind == "symbol"
            and made.symbol is not None
            and made.symbol.kind == "class"
        ):
            hit = class_member(index, rules, made.path, made.symbol, name, skip_self=False)
            if hit is not None:
                return [(hit[0], hit[1], "receiver", 0.9)], ""
            return [], raw
    elif receiver != "<expr>" and head not in rules.self_names:
        base_target = resolve_dotted(index, rules, table, call.caller, receiver)
        if base_target is not None:
            if base_target.kind == "external":
                return [], EXTERNAL_MARK + raw
            member = member_of(index, rules, base_target, name)
            if member is not None and member.symbol is not None:
                resolution = "constructor" if member.symbol.kind == "class" else "qualified"
                return [(member.path, member.symbol, resolution, 0.95)], ""
            return [], raw
    # Unknown receiver type: a single, uncommon method name is the only guess worth an edge. A common name
    # stops the guess, never the count: the call stays unresolved, so `impact` knows it could hide a caller.
    if name in rules.common_methods:
        return [], raw
    found = _name_only(index, name, path, frozenset({"method"}), limit=1)
    return [(p, s, r, min(c, 0.35)) for p, s, r, c in found], raw


def _as_call(target: Target, call: CallFact) -> _Found:
    sym = target.symbol
    if target.kind != "symbol" or sym is None or sym.kind not in CALLABLE:
        return []
    if sym.kind == "class":
        return [(target.path, sym, "constructor", 0.95)]
    if call.is_new:
        return [(target.path, sym, "constructor", 0.95)]
    if target.via == "same-scope":
        return [(target.path, sym, "same-scope", 1.0)]
    return [(target.path, sym, target.via, 1.0 if target.hops == 0 else 0.95)]


def _name_only(
    index: RepoIndex, name: str, path: str, kinds: frozenset[str], limit: int = MAX_CANDIDATES
) -> _Found:
    candidates: list[tuple[str, SymbolFact]] = []
    by_path = index.definers.get(name)
    if not by_path:
        return []
    for other in sorted(by_path):
        for sym in by_path[other]:
            if sym.kind in kinds and sym.occurrence == 0:
                candidates.append((other, sym))
                if len(candidates) > limit:
                    return []
    if not candidates:
        return []
    share = min(0.5, 0.5 / len(candidates))
    return [(p, s, "name-only", share) for p, s in candidates]


def lookup_scope(
    index: RepoIndex, rules: LanguageRules, table: FileTable, scope: str | None, name: str
) -> Target | None:
    """A bare name as seen from inside `scope`: enclosing functions, the file, then its imports."""
    path = table.facts.path
    while scope:
        sym = table.by_qn.get(scope)
        if sym is None:
            break
        if sym.kind != "class" or rules.class_scope_visible:
            hit = table.children.get(scope, {}).get(name)
            if hit is not None:
                return Target("symbol", path, hit, via="same-scope")
        scope = sym.parent
    hit = table.top(name)
    if hit is not None:
        return Target("symbol", path, hit, via="same-scope")
    bindings = index.bindings(path)
    bound = bindings.names.get(name)
    if bound is not None:
        return index.settle(bound)
    for star in bindings.stars:
        found = rules.module_member(star, name, 1)
        if found is not None:
            return found
    return None


def resolve_dotted(
    index: RepoIndex, rules: LanguageRules, table: FileTable, scope: str | None, dotted: str
) -> Target | None:
    """`a.b.C` from inside `scope`: the head by scope rules, the rest by module/class membership."""
    parts = dotted.split(".")
    target = lookup_scope(index, rules, table, scope, parts[0])
    for part in parts[1:]:
        if target is None or target.kind == "external":
            return target
        target = member_of(index, rules, target, part)
    return target


def member_of(index: RepoIndex, rules: LanguageRules, target: Target, name: str) -> Target | None:
    if target.kind == "module":
        return rules.module_member(target.path, name, target.hops)
    sym = target.symbol
    if (
        target.kind == "symbol"
        and sym is not None
        and sym.kind in {"class", "interface", "namespace", "enum"}
    ):
        hit = class_member(index, rules, target.path, sym, name, skip_self=False)
        if hit is not None:
            return Target("symbol", hit[0], hit[1], via="qualified")
    return None


def enclosing_class(table: FileTable, scope: str | None) -> SymbolFact | None:
    while scope:
        sym = table.by_qn.get(scope)
        if sym is None:
            return None
        if sym.kind == "class":
            return sym
        scope = sym.parent
    return None


def class_member(
    index: RepoIndex, rules: LanguageRules, path: str, cls: SymbolFact, name: str, skip_self: bool
) -> tuple[str, SymbolFact, int] | None:
    """`name` in class `cls` or its bases, breadth first (an MRO approximation), bounded and cycle-safe."""
    key = ("member", path, cls.qualified_name, name, skip_self)
    if key in index.memo:
        return index.memo[key]  # type: ignore[return-value]
    found = _class_member(index, rules, path, cls, name, skip_self)
    index.memo[key] = found
    return found


def _class_member(
    index: RepoIndex, rules: LanguageRules, path: str, cls: SymbolFact, name: str, skip_self: bool
) -> tuple[str, SymbolFact, int] | None:
    queue: list[tuple[str, SymbolFact, int]] = [(path, cls, 0)]
    seen: set[tuple[str, str]] = set()
    while queue:
        cur_path, cur, depth = queue.pop(0)
        if (cur_path, cur.qualified_name) in seen or depth > MAX_HOPS:
            continue
        seen.add((cur_path, cur.qualified_name))
        table = index.tables.get(cur_path)
        if table is None:
            continue
        if not (skip_self and depth == 0):
            hit = table.children.get(cur.qualified_name, {}).get(name)
            if hit is not None:
                return cur_path, hit, depth
        for base_path, base in _bases(index, rules, table, cur):
            queue.append((base_path, base, depth + 1))
    return None


def first_base(
    index: RepoIndex, rules: LanguageRules, path: str, cls: SymbolFact
) -> tuple[str, SymbolFact] | None:
    table = index.table(path)
    if table is None:
        return None
    bases = _bases(index, rules, table, cls)
    return bases[0] if bases else None


def _bases(
    index: RepoIndex, rules: LanguageRules, table: FileTable, cls: SymbolFact
) -> list[tuple[str, SymbolFact]]:
    key = ("bases", table.facts.path, cls.qualified_name)
    cached = index.memo.get(key)
    if cached is not None:
        return cached  # type: ignore[return-value]
    out: list[tuple[str, SymbolFact]] = []
    for base in cls.bases:
        target = resolve_dotted(index, rules, table, cls.parent, base)
        if target is not None and target.kind == "symbol" and target.symbol is not None:
            if target.symbol.kind in {"class", "interface"}:
                out.append((target.path, target.symbol))
    index.memo[key] = out
    return out
