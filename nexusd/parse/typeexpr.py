"""Type annotations as written -> the declared-type form of `TypeFact.expr` (`{Foo}`), or `?`.

Only what names one class survives: `Optional[Foo]`, `Foo | None`, `"Foo"`, `Annotated[Foo, ...]`,
`Foo | undefined`, `Repo[T]` / `Repo<T>` (an instance of Repo), `Foo[]` (an Array). A union of two real
types, a callable type, `Type[Foo]` or a literal type is `?`: never guess. Containers keep their own name
(`list[Foo]` -> `{list}`): the receiver is the list, which is a known type outside the repository.
"""

from __future__ import annotations

import re
from functools import lru_cache

_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_TYPE_OPERATOR = re.compile(r"\s*(?:typeof|keyof|unique|infer|asserts)\s")
_NONE = frozenset({"None", "NoneType", "null", "undefined", "void"})
_UNWRAP = frozenset({"Optional", "Annotated", "Final", "ClassVar", "Required", "NotRequired", "ReadOnly"})
_OPAQUE = frozenset({"Type", "type", "Callable", "Literal", "Generator", "typeof", "keyof"})
# TypeScript's predefined types that are instances of a global class.
_TS_PREDEFINED = {"string": "String", "number": "Number", "boolean": "Boolean", "bigint": "BigInt"}
_PAIRS = {"[": "]", "<": ">", "(": ")", "{": "}"}
_CLOSERS = frozenset(_PAIRS.values())
MAX_DEPTH = 32  # expression nesting followed when normalising (deeper is `?`; never a deep recursion)


def split_top(value: str, sep: str) -> list[str]:
    """`value` split at `sep` outside brackets (`Dict[a, b] | None` at "|" -> two parts)."""
    if sep not in value:
        return [value]  # the common case, without walking the characters
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(value):
        if ch in _PAIRS:
            depth += 1
        elif ch in _CLOSERS:
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(value[start:i])
            start = i + 1
    parts.append(value[start:])
    return parts


# A pure function of its arguments, and the same few annotations are written over and over (`str`, `T`,
# `Observable<T>`): remembered, a repeated one costs a lookup instead of the normalisation (a fifth of a
# TypeScript file's type facts). Bounded, so a long-running parser process does not grow with it.
@lru_cache(maxsize=4096)
def annotation(raw: str, self_name: str = "self", promise: bool = False) -> str:
    """The declared-type expression for an annotation's text; `promise` unwraps TS `Promise<T>` (returns)."""
    if _TYPE_OPERATOR.match(raw):
        return "?"
    value = "".join(raw.split())
    for _ in range(8):
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]  # a string (forward-reference) annotation
        parts = [p for p in split_top(value, "|") if p not in _NONE]
        if len(parts) != 1:
            return "?"
        value = parts[0]
        if value.startswith("(") and value.endswith(")"):
            value = value[1:-1]
            continue
        if value.endswith("[]"):
            return "{Array}"
        bracket = min((i for i in (value.find("["), value.find("<")) if i > 0), default=-1)
        if bracket > 0 and value[-1] in "]>":
            head, args = value[:bracket], split_top(value[bracket + 1 : -1], ",")
            last = head.rsplit(".", 1)[-1]
            if last in _UNWRAP or (promise and last == "Promise"):
                value = args[0]
                promise = False
                continue
            if last == "Union":
                kept = [a for a in args if a not in _NONE]
                if len(kept) != 1:
                    return "?"
                value = kept[0]
                continue
            value = head
        break
    if value in ("Self", "typing.Self", "this"):
        return self_name
    value = _TS_PREDEFINED.get(value, value)
    last = value.rsplit(".", 1)[-1]
    if last in _OPAQUE or last in _NONE or not _DOTTED.fullmatch(value):
        return "?"
    return "{" + value + "}"
