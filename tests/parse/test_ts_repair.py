"""A TypeScript grammar blind spot worked around (hooks.repair): generic call signatures on their own lines in
an interface. Unrepaired, the rest of the file is an ERROR node: the object literal's members are lost and their
calls land on the module."""

from __future__ import annotations

from pathlib import Path

from nexusd.parse.extract import extract
from tests.parse.test_resolve import Repo

SOURCE = (
    "export function box(v: number) { return v }\n"
    "export interface Factory {\n"
    "    <T>(value: T): Box<T>\n"
    "    <T>(value?: T,\n"
    "        other?: T): Box<T | undefined>\n"
    "\n"
    "    <K = any>(key: K): Box<K>\n"
    "    name: string\n"
    "}\n"
    "export const factories = {\n"
    "    one<T>(value: T) {\n"
    "        return box(1)\n"
    "    },\n"
    "}\n"
)


def test_generic_call_signatures_parse_and_positions_stay_true(tmp_path: Path) -> None:
    facts = extract("src/f.ts", SOURCE.encode())
    assert not [d for d in facts.diagnostics if d.code == "syntax-error"]
    one = next(s for s in facts.symbols if s.name == "one")
    assert (one.start_line, one.end_line) == (11, 13)
    factory = next(s for s in facts.symbols if s.name == "Factory")
    assert (factory.start_line, factory.end_line) == (2, 9)
    repo = Repo(tmp_path, {"src/f.ts": SOURCE})
    callers = {src for src, dst, _ in repo.calls("src/f.ts") if dst.endswith(":box")}
    assert callers == {"factories.one"}


def test_repair_is_typescript_only_and_kept_only_when_it_parses(tmp_path: Path) -> None:
    # TSX: a line opening with `<` is an element; the file must not be touched (it parses as it is).
    tsx = "export function A() {\n    return (\n        <div>\n            <span/>\n        </div>\n    )\n}\n"
    assert not [d for d in extract("src/a.tsx", tsx.encode()).diagnostics if d.code == "syntax-error"]
    # A real syntax error elsewhere: the repaired parse still fails, so the original is kept and reported.
    broken = SOURCE + "export function bad( {\n"
    facts = extract("src/b.ts", broken.encode())
    assert [d.code for d in facts.diagnostics if d.code == "syntax-error"] == ["syntax-error"]


# prettier's layout of a long type-parameter list: `<` alone on its line, the parameters below it
SPLIT = (
    "export function box(v: number) { return v }\n"
    "export interface Creator {\n"
    "  (config?: Config<\n"
    "    State\n"
    "  >): Definition<\n"
    "    State\n"
    "  >\n"
    "  <\n"
    "    Returned,\n"
    "    ThunkArg extends Base = {},\n"
    "  >(\n"
    "    payload: Payload<Returned>,\n"
    "  ): Definition<Returned>\n"
    "}\n"
    "export const made = /* @__PURE__ */ box(2)\n"
)


def test_a_signature_whose_type_parameters_open_on_their_own_line_parses(tmp_path: Path) -> None:
    facts = extract("src/s.ts", SPLIT.encode())
    assert not [d for d in facts.diagnostics if d.code == "syntax-error"]
    made = next(s for s in facts.symbols if s.name == "made")
    assert (made.kind, made.start_line, made.parent) == ("constant", 15, None)
    repo = Repo(tmp_path, {"src/s.ts": SPLIT})
    callers = {src for src, dst, _ in repo.calls("src/s.ts") if dst.endswith(":box")}
    assert callers == {"made"}
