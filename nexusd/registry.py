"""The closed command registry: one handler per operation, looked up by name (docs/conventions.md point 2).

Each operation declares its lane, which decides where it runs:
    inline   on the socket loop itself; only for answers that touch nothing (hello, ping)
    read     on a reader thread with its own Kuzu connection; many at once
    write    on the single writer thread, in arrival order
    control  on the socket loop, for daemon lifecycle (shutdown)
and its arguments, declared once as a frozen dataclass (nexusd/opargs.py). Their JSON Schema is validated here
and published in the `hello` catalogue, which the CLI and the MCP bridge render, and the handler receives the
typed value, never the wire dict, so the schema, the handler and the tools can never drift.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import jsonschema

from .errors import BadRequest, TooLarge, UnknownOp
from .opargs import Args, NoArgs, schema_of

if TYPE_CHECKING:
    from .parts import Parts
    from .store import Conn

Handler = Callable[["Ctx", Any], Any]  # fn(ctx, args) where args is an instance of the op's declared `Args`
A = TypeVar("A", bound=Args)
R = TypeVar("R")
LANES = ("inline", "read", "write", "control")


@dataclass
class Ctx:
    """What a handler gets: the daemon's parts (typed, built once by app.py; never the daemon itself), a
    connection for its lane, and a way to report progress."""

    parts: Parts
    conn: Conn | None
    request_id: Any
    op: str
    progress: Callable[[dict[str, Any]], None] = lambda data: None
    deadline: float = field(default_factory=lambda: time.monotonic() + 60.0)

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


@dataclass
class OpSpec:
    name: str
    handler: Handler
    lane: str
    description: str
    args: type[Args]
    schema: dict[str, Any]
    tool: bool  # offered to agents as an MCP tool
    read_only: bool
    timeout_s: float
    long: bool = False  # a write that may take seconds (a sync): quick writes may run at its safe points
    validator: Any = None
    empty: Args | None = None  # the arguments of a request that sends none, when that is valid

    def catalogue_entry(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.schema,
            "lane": self.lane,
            "tool": self.tool,
            "readOnly": self.read_only,
        }


REGISTRY: dict[str, OpSpec] = {}

# Limits every argument schema gets where it declares none, so validation is bounded and clients see them
# in the catalogue (ARCHITECTURE.md, "Invariants").
DEFAULT_MAX_STRING = 16_384
DEFAULT_MAX_ITEMS = 10_000
_LIMIT_KEYS = ("maxLength", "maxItems", "maxProperties")


def bounded(node: Any) -> Any:
    """A copy of a JSON schema where every string has a maxLength and every array a maxItems, the limit
    keywords placed first: validation stops at the first error, and a limit checked first stops a huge value
    before its items are looked at."""
    if isinstance(node, list):
        return [bounded(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: bounded(v) for k, v in node.items()}
    types = out.get("type")
    kinds = {t for t in types if isinstance(t, str)} if isinstance(types, list) else {types}
    if not isinstance(types, (str, list)):  # a `properties` map (a property may be called "type")
        return out
    if "string" in kinds and "maxLength" not in out and "enum" not in out and "const" not in out:
        out["maxLength"] = DEFAULT_MAX_STRING
    if "array" in kinds and "maxItems" not in out:
        out["maxItems"] = DEFAULT_MAX_ITEMS
    first = {k: out[k] for k in ("type", *_LIMIT_KEYS) if k in out}
    return {**first, **{k: v for k, v in out.items() if k not in first}}


def op(
    name: str,
    *,
    lane: str,
    description: str,
    args: type[A] = NoArgs,  # type: ignore[assignment]
    tool: bool = False,
    read_only: bool | None = None,
    timeout_s: float = 60.0,
    long: bool = False,
) -> Callable[[Callable[[Ctx, A], R]], Callable[[Ctx, A], R]]:
    """Register `fn(ctx, args)` as operation `name`; `args` is the class its arguments are declared in
    (the handler's second parameter has that type, which mypy checks)."""
    if lane not in LANES:
        raise ValueError(f"unknown lane {lane}")
    args_schema = bounded(schema_of(args))
    jsonschema.Draft202012Validator.check_schema(args_schema)
    validator = jsonschema.Draft202012Validator(args_schema)
    empty = args.from_wire({}) if validator.is_valid({}) else None

    def register(fn: Callable[[Ctx, A], R]) -> Callable[[Ctx, A], R]:
        if name in REGISTRY:
            raise ValueError(f"operation {name} registered twice")
        REGISTRY[name] = OpSpec(
            name=name,
            handler=fn,
            lane=lane,
            description=description,
            args=args,
            schema=args_schema,
            tool=tool,
            read_only=(lane != "write") if read_only is None else read_only,
            timeout_s=timeout_s,
            long=long,
            validator=validator,
            empty=empty,
        )
        return fn

    return register


def lookup(name: str) -> OpSpec:
    spec = REGISTRY.get(name)
    if spec is None:
        raise UnknownOp(f"unknown op {name!r}", hint="send `hello` for the catalogue of operations")
    return spec


def validate(spec: OpSpec, args: dict[str, Any]) -> Args:
    """The request's arguments checked against the op's schema, as the typed value its handler takes."""
    if not args and spec.empty is not None:
        return spec.empty  # frozen, so one value serves every request that sends no arguments
    # The first error only: collecting (and sorting) every error of a 300,000-item list took seconds and
    # hundreds of MB on the socket loop.
    error = next(iter(spec.validator.iter_errors(args)), None)
    if error is not None:
        where = ".".join(str(p) for p in error.path) or "args"
        hint = f"`nexus help COMMAND` shows a command's options; the `hello` catalogue the arguments of {spec.name}"
        if error.validator in _LIMIT_KEYS:
            unit = "characters" if error.validator == "maxLength" else "items"
            raise TooLarge(f"{spec.name}: {where}: more than {error.validator_value} {unit}", hint=hint)
        message = error.message if len(error.message) <= 300 else error.message[:300] + "..."
        raise BadRequest(f"{spec.name}: {where}: {message}", hint=hint)
    return spec.args.from_wire(args)


def catalogue() -> list[dict[str, Any]]:
    return [REGISTRY[name].catalogue_entry() for name in sorted(REGISTRY)]
