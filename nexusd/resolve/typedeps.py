"""What the type environment (types.py) adds to change tracking (base.py): which names a file's types
offer to others, which names its typed calls depend on, and which names' types depend on which.

A call in file B typed through `make()` of file A, whose return is `helper()` of file C, must be
re-resolved when C's `helper` changes its return type although B never mentions `helper`: `dependents`
maps each name mentioned in a binding to the name the binding types (helper -> make), and
`RepoIndex.files_referencing` follows it (bounded) before looking up the files that mention the names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from nexusd.parse.facts import CallFact, FileFacts, TypeFact

_WORD = re.compile(r"[A-Za-z_$][\w$]*")
_HEAD = re.compile(r"[A-Za-z_$][\w$]*")


def words(expr: str | None) -> list[str]:
    return _WORD.findall(expr) if expr else []


def _return_closure(types: Sequence[TypeFact]) -> dict[str, list[TypeFact]]:
    """Per function scope: its return facts and the local bindings those returns (transitively) name."""
    by_scope: dict[str, list[TypeFact]] = {}
    local: dict[tuple[str, str], list[TypeFact]] = {}
    for fact in types:
        if fact.scope is None:
            continue
        if fact.kind == "return":
            by_scope.setdefault(fact.scope, []).append(fact)
        elif fact.kind == "var":
            local.setdefault((fact.scope, fact.name), []).append(fact)
    for scope, found in by_scope.items():
        todo = list(found)
        seen: set[str] = set()
        while todo and len(found) < 64:
            head = _HEAD.match(todo.pop().expr)
            if head is None or head.group() in seen:
                continue
            seen.add(head.group())
            for fact in local.get((scope, head.group()), []):
                found.append(fact)
                todo.append(fact)
    return by_scope


def _bound_name(fact: TypeFact, classes: set[str]) -> str | None:
    """The name a binding types, as other files would mention it (None: local to a function)."""
    if fact.kind in {"field", "property"}:
        return fact.name
    if fact.kind == "callback" and fact.scope:  # what a function declares its callbacks receive
        parts = fact.scope.rsplit(".", 2)
        return parts[-2] if parts[-1] in {"constructor", "__init__"} and len(parts) > 1 else parts[-1]
    if fact.kind == "decorated" or (fact.kind == "var" and (fact.scope is None or fact.scope in classes)):
        return fact.name
    return None


def _classes(facts: FileFacts) -> set[str]:
    return {s.qualified_name for s in facts.symbols if s.kind == "class"}


def derive(facts: FileFacts, calls: Sequence[CallFact]) -> tuple[set[tuple[str, str]], set[str], set[tuple[str, str]]]:
    """`provided` (empty without type facts), `referenced` and `dependents` (empty without type facts) of one file,
    from one reading of its type facts (they are packed, `facts.Packed`: each reading makes the records again)
    and one closure of its returns; `calls` are the file's call sites, read once by the caller."""
    types = list(facts.types)
    if not types:
        return set(), _referenced(calls, types), set()
    closure = _return_closure(types)
    classes = _classes(facts)
    return _provided(types, closure, classes), _referenced(calls, types), _dependents(types, closure, classes)


def provided(facts: FileFacts) -> set[tuple[str, str]]:
    """(name, descriptor) pairs: a change of a return type, field type or global's type is a change of the
    name (see base._provided)."""
    types = list(facts.types)
    return _provided(types, _return_closure(types), _classes(facts))


def referenced(facts: FileFacts) -> set[str]:
    """Names whose meaning can change this file's typed calls: every part of a receiver or a chain, and
    every name its bindings mention."""
    return _referenced(facts.calls, facts.types)


def dependents(facts: FileFacts) -> set[tuple[str, str]]:
    """(mentioned name, typed name) pairs: the type of `typed name` may change when `mentioned` does."""
    types = list(facts.types)
    return _dependents(types, _return_closure(types), _classes(facts))


def _provided(types: Sequence[TypeFact], closure: dict[str, list[TypeFact]], classes: set[str]) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for scope, found in closure.items():
        name = scope.rsplit(".", 1)[-1]
        out.add((name, "ret:" + scope + ":" + ";".join(sorted(f"{f.kind}:{f.name}={f.expr}" for f in found))))
    for fact in types:
        if fact.kind != "return" and fact.kind != "shadow":
            bound = _bound_name(fact, classes)
            if bound is not None:
                out.add((bound, f"{fact.kind}:{fact.scope}:{fact.expr}"))
    return out


def _referenced(calls: Iterable[CallFact], types: Iterable[TypeFact]) -> set[str]:
    refs: set[str] = set()
    for call in calls:
        if call.receiver and "." in call.receiver:
            refs.update(words(call.receiver))
        if call.chain:
            refs.update(words(call.chain))
    for fact in types:
        if fact.kind != "shadow":
            refs.update(words(fact.expr))
    return refs


def _dependents(types: Sequence[TypeFact], closure: dict[str, list[TypeFact]], classes: set[str]) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for scope, found in closure.items():
        name = scope.rsplit(".", 1)[-1]
        for fact in found:
            out.update((w, name) for w in words(fact.expr) if w != name)
    for fact in types:
        if fact.kind in {"return", "shadow"}:
            continue
        bound = _bound_name(fact, classes)
        if bound is not None:
            out.update((w, bound) for w in words(fact.expr) if w != bound)
    return out
