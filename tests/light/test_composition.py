"""The composition root's rules, checked on the types: no op handler can reach the daemon or the server.

A handler gets `Ctx` (its connection, progress, and `Ctx.parts`, the typed parts app.py built). The walk below
follows every type a handler's parameters reach (dataclass fields, constructor parameters, protocol
attributes, the arguments of generics) through nexusd's own classes and fails on `Daemon` or `Server`, or on a
bare `Any` that could hide them. The first tests show the walk catches each way back in.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import sys
import types
import typing
from pathlib import Path
from typing import Any

import nexusd.app  # noqa: F401  (imports every op and every part)
import nexusd.writer  # noqa: F401  (typed only under TYPE_CHECKING elsewhere)
from nexusd import registry
from nexusd.daemon import Daemon
from nexusd.parts import Parts
from nexusd.registry import Ctx
from nexusd.server import Server

FORBIDDEN = (Daemon, Server)
# Fields that are Any on purpose: a request id is whatever msgpack value the client sent.
ALLOWED_ANY = {"Ctx.request_id"}


def _namespace() -> dict[str, Any]:
    """Every class and alias of every loaded nexusd module, by name: resolves names imported only under
    TYPE_CHECKING (the parts are typed without importing each other at run time)."""
    ns: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("nexusd") and module is not None:
            for key, value in vars(module).items():
                if isinstance(value, type) or key[:1].isupper():
                    ns.setdefault(key, value)
    return ns


NS = _namespace()


def _hints(obj: Any) -> dict[str, Any]:
    module = sys.modules.get(getattr(obj, "__module__", ""), None)
    globalns = {**NS, **(vars(module) if module else {})}
    return typing.get_type_hints(obj, globalns=globalns)


def _members(cls: type) -> dict[str, Any]:
    """What an instance of a nexusd class holds or is built from: its fields (dataclass, protocol or annotated
    attributes) and its constructor's parameters."""
    out: dict[str, Any] = dict(_hints(cls))
    init = cls.__dict__.get("__init__")
    if init is not None and not dataclasses.is_dataclass(cls):
        out.update({k: v for k, v in _hints(init).items() if k != "return"})
    return out


def reaches(start: dict[str, Any], owner: str = "handler") -> list[str]:
    """The ways from these parameter types to the daemon or the server (or through a bare Any)."""
    problems: list[str] = []
    seen: set[Any] = set()

    def walk(tp: Any, where: str) -> None:
        if tp is Any:
            if where not in ALLOWED_ANY:
                problems.append(f"{where}: Any")
            return
        if isinstance(tp, str):
            problems.append(f"{where}: unresolved {tp!r}")
            return
        origin = typing.get_origin(tp)
        if origin is typing.Literal:
            return  # values (an argument's allowed strings), not types
        if origin is not None or isinstance(tp, types.UnionType):
            args = typing.get_args(tp)
            if origin in (dict, collections.abc.Mapping) and args and args[-1] is Any:
                return  # data (a JSON-like map), not a part
            if origin is collections.abc.Callable and args and args[-1] is Any:
                args = args[:-1]  # a callable returning anything: its arguments still count
            for arg in args:
                if isinstance(arg, list):
                    for a in arg:
                        walk(a, where)
                elif arg is not Any and arg is not Ellipsis:
                    walk(arg, where)
            return
        if not isinstance(tp, type):
            return
        if tp in FORBIDDEN:
            problems.append(f"{where}: {tp.__name__}")
            return
        if not (tp.__module__.startswith("nexusd") or tp.__module__ == __name__) or tp in seen:
            return
        seen.add(tp)
        try:
            members = _members(tp)
        except Exception as exc:  # a type the walk cannot read is a failure, not a pass
            problems.append(f"{where}: {tp.__name__} unreadable ({exc})")
            return
        for name, member in members.items():
            walk(member, f"{tp.__name__}.{name}")

    for name, tp in start.items():
        walk(tp, f"{owner}({name})")
    return problems


def handler_params(fn: Any) -> dict[str, Any]:
    return {k: v for k, v in _hints(fn).items() if k != "return"}


# -- the walk can fail -------------------------------------------------------------------------------------


def test_the_walk_finds_a_handler_that_takes_the_daemon() -> None:
    def bad(daemon: Daemon, args: dict[str, Any]) -> None: ...

    assert reaches(handler_params(bad)) == ["handler(daemon): Daemon"]


@dataclasses.dataclass
class _Holder:
    server: Server | None


@dataclasses.dataclass
class _Ctx:
    parts: _Holder


class _Service:
    def __init__(self, daemon: Any, submit: collections.abc.Callable[[Daemon], None]) -> None: ...


def test_the_walk_finds_the_daemon_behind_a_part() -> None:
    assert reaches({"ctx": _Ctx}) == ["_Holder.server: Server"]


def test_the_walk_finds_a_bag_typed_any_and_a_callable_taking_the_daemon() -> None:
    assert reaches({"svc": _Service}) == ["_Service.daemon: Any", "_Service.submit: Daemon"]


# -- the real registry ---------------------------------------------------------------------------------------


def test_every_handler_takes_ctx_and_args_only() -> None:
    assert registry.REGISTRY, "no operation registered"
    for name, spec in registry.REGISTRY.items():
        params = list(inspect.signature(spec.handler).parameters)
        assert params == ["ctx", "args"], (name, params)
        hints = handler_params(spec.handler)
        assert hints["ctx"] is Ctx, name


def test_no_handler_reaches_the_daemon_or_the_server() -> None:
    problems: dict[str, list[str]] = {}
    for name, spec in sorted(registry.REGISTRY.items()):
        found = reaches(handler_params(spec.handler))
        if found:
            problems[name] = found
    assert not problems, problems


def test_parts_are_typed_fields_not_a_bag() -> None:
    hints = _hints(Parts)
    assert "services" not in hints
    for name, tp in hints.items():
        assert tp is not Any and typing.get_origin(tp) is not dict, (name, tp)


def test_the_daemon_types_what_it_holds() -> None:
    """Attributes set in Daemon.__init__ are not class annotations: read their declarations."""
    source = inspect.getsource(Daemon.__init__)
    declared = {ln.split(":")[0].strip(): ln for ln in source.splitlines() if ln.strip().startswith("self.") and ":" in ln.split("=")[0]}
    assert "self.services" not in declared
    for name in ("self.store", "self.server", "self.parts"):
        assert "Any" not in declared[name].split("=")[0], declared[name]


def test_no_cypher_in_op_handlers() -> None:
    """Cypher lives in the store layer and the per-area query modules (repos.py, memory/reads.py,
    history/reads.py, sync/graphwrite.py...), never in nexusd/ops/."""
    import ast
    import re
    from pathlib import Path

    cypher = re.compile(r"\b(MATCH|MERGE|DETACH DELETE|UNWIND|COPY|CREATE)\b.*\b(RETURN|SET|DELETE|FROM|\()")
    ops_dir = Path(nexusd.app.__file__).parent / "ops"
    found = []
    for path in sorted(ops_dir.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and cypher.search(node.value):
                found.append(f"{path.name}:{node.lineno}: {node.value[:60]}")
    assert not found, found


def _imports(source: str, package: str) -> set[str]:
    """Every module a file of `package` imports (at run time or under TYPE_CHECKING), as absolute names."""
    import ast

    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out |= {f"{mod}.{a.name}" for a in node.names}
    return out


def test_the_read_side_never_imports_the_write_side() -> None:
    query_dir = Path(nexusd.app.__file__).parent / "query"
    bad = {
        f"{p.name}: {m}"
        for p in sorted(query_dir.glob("*.py"))
        for m in _imports(p.read_text(), "nexusd.query")
        if m.startswith("nexusd.sync")
    }
    assert not bad, bad
    # and the query ops read snapshots, never the sync engine's fields
    source = (Path(nexusd.app.__file__).parent / "ops" / "query.py").read_text()
    for private in (".facts", ".resolutions", "engines", "engine("):
        assert private not in source, private


def test_the_import_walk_sees_a_relative_import_of_sync() -> None:
    source = "if TYPE_CHECKING:\n    from ..sync.walk import read_source\ndef f():\n    from ..sync import live\n"
    found = _imports(source, "nexusd.query")
    assert {"nexusd.sync.walk", "nexusd.sync.live"} <= found, found
