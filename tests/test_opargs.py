"""Operation arguments are declared once (nexusd/opargs.py) and nothing else keeps a copy.

- Every handler takes its op's declared class, and no handler or answer builder (nexusd/ops/, nexusd/query/)
  reads arguments out of a dict (`args.get("budget", 1500)`, `args["symbol"]`, `req.args...`): a default
  written there would be a second default.
- The CLI sends only what the user gave (the daemon applies the declared default); where an option still
  carries a default value, a range, choices or a "(default N)" in its help, they match the declaration.
- The declaration's schema validates on the wire with the closed error codes, and the typed value carries the
  defaults.

The first tests of each kind feed the checks something wrong, to show they can fail.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import typing
from typing import Any, Literal

import click
import pytest
from nexus_client.cli import main as cli_main
from nexus_client.commands import COMMANDS

import nexusd.ops  # noqa: F401  (registers every operation)
from nexusd import registry
from nexusd.errors import BadRequest, TooLarge
from nexusd.opargs import Args, arg, defaults, schema_of, wire_name
from tests.helpers import REPO_ROOT

HANDLER_DIRS = [REPO_ROOT / "nexusd" / "ops", REPO_ROOT / "nexusd" / "query"]


# -- handlers read typed values --------------------------------------------------------------------------


def dict_reads(source: str, filename: str = "<src>") -> list[str]:
    """Places that treat an op's arguments as a mapping: `args.get(...)`, `args[...]`, `X.args.get(...)`,
    `X.args[...]`, and any `req.args` (an answer builder gets its arguments as parameters)."""
    found = []

    def is_args(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "args") or (
            isinstance(node, ast.Attribute) and node.attr == "args"
        )

    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Subscript) and is_args(node.value):
            found.append(f"{filename}:{node.lineno}: args[...]")
        elif isinstance(node, ast.Attribute) and node.attr in ("get", "items", "keys", "setdefault") and is_args(node.value):
            found.append(f"{filename}:{node.lineno}: args.{node.attr}(...)")
        elif isinstance(node, ast.Attribute) and node.attr == "args" and isinstance(node.value, ast.Name) and node.value.id == "req":
            found.append(f"{filename}:{node.lineno}: req.args")
    return found


def test_the_scan_finds_dict_reads() -> None:
    bad = '''
def context(ctx, args):
    budget = int(args.get("budget", 1500))
    return graphq.context(req, args["symbol"], req.args)
'''
    assert sorted(f.split(": ", 1)[1] for f in dict_reads(bad)) == ["args.get(...)", "args[...]", "req.args"]
    assert dict_reads("def ok(ctx, args):\n    return args.budget\n") == []


def test_no_handler_reads_arguments_from_a_dict() -> None:
    found = []
    for folder in HANDLER_DIRS:
        for path in sorted(folder.glob("*.py")):
            found += dict_reads(path.read_text(encoding="utf-8"), str(path.relative_to(REPO_ROOT)))
    assert not found, "read the typed value's fields instead:\n" + "\n".join(found)


def test_every_handler_takes_its_declared_class() -> None:
    assert len(registry.REGISTRY) > 30
    for name, spec in registry.REGISTRY.items():
        assert isinstance(spec.args, type) and issubclass(spec.args, Args), name
        params = spec.args.__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen, f"{name}: {spec.args.__name__} must be frozen (one value may serve many requests)"
        hints = typing.get_type_hints(spec.handler)
        assert hints["args"] is spec.args, f"{name}: the handler takes {hints['args']}, the op declares {spec.args}"


# -- the declaration gives the schema, the validation and the defaults ---------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Sample(Args):
    symbol: str = arg(description="A symbol.")
    depth: int = arg(1, minimum=1, maximum=3)
    min_confidence: float | None = arg(None, minimum=0, maximum=1)
    direction: Literal["in", "out"] = arg("in")
    tags: list[str] | None = arg(None, items={"minLength": 1}, maxItems=3)
    from_: str | None = arg(None)


def test_a_declaration_gives_schema_defaults_and_typed_values() -> None:
    schema = schema_of(_Sample)
    assert schema["required"] == ["symbol"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert set(props) == {"symbol", "depth", "minConfidence", "direction", "tags", "from"}
    assert props["depth"] == {"type": "integer", "minimum": 1, "maximum": 3, "default": 1}
    assert props["direction"] == {"type": "string", "enum": ["in", "out"], "default": "in"}
    assert props["tags"] == {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 3}
    assert defaults(_Sample) == {"depth": 1, "direction": "in"}
    value = _Sample.from_wire({"symbol": "run", "minConfidence": 1, "from": "a"})
    assert value == _Sample(symbol="run", min_confidence=1.0, from_="a")
    assert isinstance(value.min_confidence, float)
    assert value.as_wire() == {"symbol": "run", "depth": 1, "minConfidence": 1.0, "direction": "in", "from": "a"}
    assert wire_name("all_repos") == "allRepos" and wire_name("from_") == "from"


def test_a_mutable_default_or_an_unknown_type_is_refused() -> None:
    with pytest.raises(TypeError):
        arg([])

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Bad(Args):
        when: complex = arg()

    with pytest.raises(TypeError):
        schema_of(Bad)


def test_validation_keeps_the_closed_error_codes() -> None:
    spec = registry.lookup("context")
    with pytest.raises(BadRequest, match="context: budget: 10 is less than the minimum of 100"):
        registry.validate(spec, {"symbol": "x", "budget": 10})
    with pytest.raises(BadRequest, match="'symbol' is a required property"):
        registry.validate(spec, {})
    with pytest.raises(BadRequest, match="Additional properties"):
        registry.validate(spec, {"symbol": "x", "bogus": 1})
    with pytest.raises(TooLarge, match="more than 4096 characters"):
        registry.validate(spec, {"symbol": "x", "repo": "r" * 5000})
    with pytest.raises(TooLarge, match="more than 16384 characters"):
        registry.validate(spec, {"symbol": "x" * 20000})  # a string declared without a limit gets the default one
    value = registry.validate(spec, {"symbol": "x"})
    assert (value.depth, value.budget, value.min_confidence) == (1, 1500, None)  # type: ignore[attr-defined]


def test_the_catalogue_states_each_default() -> None:
    entries = {e["name"]: e for e in registry.catalogue()}
    assert entries["context"]["inputSchema"]["properties"]["budget"]["default"] == 1500
    assert entries["impact"]["inputSchema"]["properties"]["depth"]["default"] == 3
    for name, spec in registry.REGISTRY.items():
        props = entries[name]["inputSchema"]["properties"]
        for key, value in defaults(spec.args).items():
            assert props[key]["default"] == value, (name, key)


# -- the CLI keeps no second copy ----------------------------------------------------------------------------

# CLI commands whose op is not their path joined with dots.
CLI_OPS = {"history show": "history", "repos move": "repo.move"}
# Options whose argument is not the option's parameter name in camelCase.
CLI_ARGS = {("show", "node_id"): "id", ("turn", "tid"): "id", ("session start", "sid"): "id"}
_STATED = re.compile(r"\bdefault:?\s+([^\s,;)]+)")


def _leaves() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli_main)
    out = []

    def walk(path: str, cmd: click.Command) -> None:
        if isinstance(cmd, click.Group) and not isinstance(cmd, type(cli_main)):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None
                walk(f"{path} {name}", sub)
        if not isinstance(cmd, click.Group) or path == "repos":
            out.append((path, cmd))

    for name in sorted(COMMANDS):
        cmd = cli_main.get_command(ctx, name)
        assert cmd is not None, name
        walk(name, cmd)
    return out


def _render(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def cli_mismatches(command: str, cmd: click.Command, op: str) -> tuple[list[str], int]:
    """How the command's options differ from op's declaration, and how many options were compared."""
    schema = registry.lookup(op).schema["properties"]
    declared = defaults(registry.lookup(op).args)
    problems: list[str] = []
    compared = 0
    for param in cmd.params:
        if not isinstance(param, click.Option) or param.name is None:
            continue
        key = CLI_ARGS.get((command, param.name), wire_name(param.name))
        if key not in schema:
            continue
        compared += 1
        where = f"nexus {command} {param.opts[0]} ({op}.{key})"
        prop = schema[key]
        default = param.get_default(click.Context(cmd), call=False)
        unset = default is None or default == () or type(default).__name__ == "Sentinel"  # click < 8.2, >= 8.2
        if not param.is_flag and not unset:
            problems.append(f"{where}: the CLI sends a default ({default!r}); leave it to the declaration")
        stated = _STATED.search(param.help or "")
        if stated:
            text = stated.group(1).rstrip(".")
            if key in declared:
                if text != _render(declared[key]):
                    problems.append(f"{where}: help says default {text}, the declaration {declared[key]!r}")
            elif not re.search(rf"default:?\s+{re.escape(text)}", prop.get("description", "")):
                problems.append(f"{where}: help says default {text}, the declaration says none")
        if isinstance(param.type, (click.IntRange, click.FloatRange)):
            if (param.type.min, param.type.max) != (prop.get("minimum"), prop.get("maximum")):
                problems.append(f"{where}: range {param.type.min}-{param.type.max}, declared "
                                f"{prop.get('minimum')}-{prop.get('maximum')}")  # fmt: skip
        if isinstance(param.type, click.Choice):
            allowed = prop.get("enum") or prop.get("items", {}).get("enum")
            if allowed is not None and not set(param.type.choices) <= set(allowed):
                problems.append(f"{where}: choices {list(param.type.choices)}, declared {allowed}")
    return problems, compared


def test_the_cli_check_finds_a_second_default() -> None:
    @click.command()
    @click.option("--budget", type=int, default=1200, help="Token budget (default 1200).")
    @click.option("--depth", type=click.IntRange(1, 5), help="Call hops.")
    @click.option("--limit", type=int, help="unrelated to context")
    def context(budget: int, depth: int | None, limit: int | None) -> None: ...

    problems, compared = cli_mismatches("context", context, "context")
    assert compared == 2
    assert len(problems) == 3, problems  # the default sent, the default stated, the range


def test_cli_options_match_the_declarations() -> None:
    problems: list[str] = []
    compared = 0
    for command, cmd in _leaves():
        op = CLI_OPS.get(command, command.replace(" ", "."))
        if op not in registry.REGISTRY:
            continue
        found, n = cli_mismatches(command, cmd, op)
        problems += found
        compared += n
    assert compared >= 40, f"only {compared} CLI options were compared with a declaration"
    assert not problems, "\n".join(problems)
