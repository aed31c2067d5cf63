"""Typed operation arguments: each operation declares its arguments once, as a frozen dataclass.

    @dataclass(frozen=True, kw_only=True)
    class ContextArgs(Args):
        symbol: str = arg(description="A symbol ...")                       # no default: required
        depth: int = arg(1, minimum=1, maximum=3, description="Call hops to include.")
        min_confidence: float | None = arg(None, minimum=0, maximum=1)     # wire name minConfidence

From that one class come
  - `schema_of(cls)`: the JSON Schema the registry validates with and publishes in the `hello` catalogue
    (the MCP bridge renders its tool input schemas from it): types from the annotations, JSON Schema keywords
    from `arg(...)`, `required` from the fields without a default, and each default as `default`;
  - `cls.from_wire(args)`: the typed value a handler receives, built from validated wire arguments (an
    argument left out takes its declared default);
  - `defaults(cls)`: wire name -> default, which tests/test_opargs.py holds the CLI's options and help to.

Wire names are the field names in camelCase (`min_confidence` -> `minConfidence`, `from_` -> `from`). A field
typed `X | None` with default None is optional and None means "not given" (the handler decides what that
means, e.g. a default read from configuration); `null` itself is not accepted on the wire. Annotations may be
str, int, float, bool, Literal[...] of strings, list[T], dict[str, Any] (any object), a nested dataclass
(an object with those fields), and `X | None`. ARCHITECTURE.md ("Operations") shows where an op declares its
arguments.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Protocol, TypeVar

__all__ = ["Args", "NoArgs", "Scoped", "arg", "defaults", "from_wire", "repo_arg", "schema_of", "user_arg", "wire_name"]

_REQUIRED: Any = dataclasses.MISSING
_META = "nexus.arg"


def arg(default: Any = _REQUIRED, *, description: str | None = None, items: dict[str, Any] | None = None,
        **keywords: Any) -> Any:  # fmt: skip
    """A declared argument: its default (none: required), its description, and JSON Schema keywords for its
    value (`minimum`, `maxLength`, `maxItems`, ...) or, for a list, for its items (`items={...}`)."""
    meta: dict[str, Any] = {"keywords": keywords, "description": description, "items": items or {}}
    if isinstance(default, (list, dict, set)):
        raise TypeError("a mutable default is shared between requests: declare None and decide in the handler")
    if default is _REQUIRED:
        return dataclasses.field(metadata={_META: meta})
    return dataclasses.field(default=default, metadata={_META: meta})


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """The base of every operation's arguments. `open_ended = True` on a subclass accepts any further
    argument (collected, by wire name, into its `rest` field)."""

    open_ended: ClassVar[bool] = False

    @classmethod
    def from_wire(cls: type[A], args: dict[str, Any]) -> A:
        return from_wire(cls, args)

    def as_wire(self) -> dict[str, Any]:
        """The arguments by wire name, defaults included and None left out (what a cursor is bound to)."""
        out: dict[str, Any] = {}
        for f in _plan(type(self)).fields:
            value = getattr(self, f.name)
            if f.name == "rest" and type(self).open_ended:
                out.update(value)
            elif value is not None:
                out[f.wire] = _plain(value)
        return out


A = TypeVar("A", bound=Args)


@dataclasses.dataclass(frozen=True, kw_only=True)
class NoArgs(Args):
    """An operation that takes no arguments."""


class Scoped(Protocol):
    """What the repository lookups read of an operation's arguments (`repos.require_repo`)."""

    @property
    def repo(self) -> str | None: ...

    @property
    def user(self) -> str | None: ...


# Arguments many operations share, so every client spells them the same way.
REPO_MAX = 4096  # PATH_MAX


def repo_arg(description: str = "Repository path (default: the client's working directory).", *,
             required: bool = False) -> Any:  # fmt: skip
    return arg(*(() if required else (None,)), maxLength=REPO_MAX, description=description)


def user_arg() -> Any:
    return arg(None, maxLength=200, description="Memory owner (default: the OS user or NEXUS_USER).")


def wire_name(field_name: str) -> str:
    head, *rest = field_name.rstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# -- the schema --------------------------------------------------------------------------------------------


def schema_of(cls: type) -> dict[str, Any]:
    """The JSON Schema of a declared argument class (an object, closed unless `open_ended`)."""
    plan = _plan(cls)
    properties = {f.wire: f.schema for f in plan.fields if not (f.name == "rest" and plan.open)}
    out: dict[str, Any] = {"type": "object", "properties": properties,
                           "required": [f.wire for f in plan.fields if f.required]}  # fmt: skip
    if not plan.open:
        out["additionalProperties"] = False
    return out


def defaults(cls: type) -> dict[str, Any]:
    """Wire name -> declared default, for every argument that has one other than None."""
    return {f.wire: f.default for f in _plan(cls).fields if not f.required and f.default is not None}


def _type_schema(tp: Any, where: str) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is Any:
        return {}
    if origin is Literal:
        values = list(typing.get_args(tp))
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"{where}: Literal arguments are strings")
        return {"type": "string", "enum": values}
    if origin is list:
        (item,) = typing.get_args(tp)
        return {"type": "array", "items": _type_schema(item, where + "[]")}
    if origin is dict:
        key, _ = typing.get_args(tp)
        if key is not str:
            raise TypeError(f"{where}: object keys are strings")
        return {"type": "object"}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return schema_of(tp)
    raise TypeError(f"{where}: cannot declare an argument of type {tp!r}")


# -- building the typed value -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    wire: str
    required: bool
    default: Any
    schema: dict[str, Any]
    convert: Callable[[Any], Any] | None  # None: the validated wire value is already the typed value


@dataclasses.dataclass(frozen=True)
class _Plan:
    fields: tuple[_Field, ...]
    by_wire: dict[str, tuple[str, Callable[[Any], Any] | None]]
    open: bool


_PLANS: dict[type, _Plan] = {}


def from_wire(cls: type[A], args: dict[str, Any]) -> A:
    """The typed value of validated wire arguments (the registry validates against `schema_of(cls)` first)."""
    plan = _plan(cls)
    values: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in args.items():
        found = plan.by_wire.get(key)
        if found is None:
            if not plan.open:
                raise TypeError(f"{cls.__name__}: no argument {key!r}")  # the schema refuses it first
            rest[key] = value
            continue
        name, convert = found
        values[name] = value if convert is None else convert(value)
    if plan.open:
        values["rest"] = rest
    return cls(**values)


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _make_plan(cls)
    return plan


def _make_plan(cls: type) -> _Plan:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    is_open = bool(getattr(cls, "open_ended", False))
    fields = []
    for f in dataclasses.fields(cls):
        if f.name == "rest" and is_open:
            fields.append(_Field(f.name, f.name, False, None, {}, None))
            continue
        tp = hints[f.name]
        optional = False
        if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
            parts = [t for t in typing.get_args(tp) if t is not type(None)]
            optional = len(parts) < len(typing.get_args(tp))
            if len(parts) != 1:
                raise TypeError(f"{cls.__name__}.{f.name}: one type (or one type | None), not {tp!r}")
            tp = parts[0]
        where = f"{cls.__name__}.{f.name}"
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        default = f.default if f.default is not dataclasses.MISSING else None
        if default is None and has_default and not optional:
            raise TypeError(f"{where}: a None default needs an `X | None` annotation")
        meta = f.metadata.get(_META) or {"keywords": {}, "description": None, "items": {}}
        schema = _type_schema(tp, where)
        if meta["items"]:
            if schema.get("type") != "array":
                raise TypeError(f"{where}: `items` keywords on a value that is not a list")
            schema["items"] = {**schema["items"], **meta["items"]}
        schema.update(meta["keywords"])
        if meta["description"]:
            schema["description"] = meta["description"]
        if has_default and default is not None:
            schema["default"] = default
        fields.append(_Field(f.name, wire_name(f.name), not has_default, default, schema, _converter(tp)))
    by_wire = {f.wire: (f.name, f.convert) for f in fields if not (f.name == "rest" and is_open)}
    return _Plan(tuple(fields), by_wire, is_open)


def _converter(tp: Any) -> Callable[[Any], Any] | None:
    """How a validated wire value becomes the declared type, where it is not one already."""
    if tp is float:
        return float  # JSON numbers: 1 is a valid `number` and arrives as an int
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return lambda value: from_wire(typing.cast(Any, tp), value)
    if typing.get_origin(tp) is list:
        inner = _converter(typing.get_args(tp)[0])
        if inner is not None:
            convert = inner
            return lambda values: [convert(v) for v in values]
    return None


def _plain(value: Any) -> Any:
    if isinstance(value, Args):
        return value.as_wire()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
