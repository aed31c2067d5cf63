"""TypeScript bindings that used to lose calls: renamed re-exports, destructured namespaces, spread namespaces,
bare decorators."""

from __future__ import annotations

from pathlib import Path

from tests.parse.test_resolve import Repo

FILES = {
    "src/impl.ts": "function _impl() {}\nexport { _impl as impl }\n",
    "src/barrel.ts": "export { impl as renamed } from './impl'\n",
    "src/schemas.ts": "export function string() {}\nexport function number() {}\n",
    "src/checks.ts": "export function positive() {}\nexport function string() {}\n",
    "src/z.ts": (
        "import * as schemas from './schemas'\n"
        "import * as checks from './checks'\n"
        "export const z = { ...schemas, ...checks, coerce: () => 1 }\n"
        "export const loop = { ...loop2 }\n"
        "export const loop2 = { ...loop }\n"
    ),
    "src/deco.ts": "export function Injectable(t: any) { return t }\n",
    "src/use.ts": (
        "import { impl } from './impl'\n"  # 1
        "import { renamed } from './barrel'\n"  # 2
        "import * as ns from './schemas'\n"  # 3
        "import * as ext from 'external-lib'\n"  # 4
        "import { z, loop } from './z'\n"  # 5
        "import { Injectable } from './deco'\n"  # 6
        "const { number, string: str } = ns\n"  # 7
        "const { thing } = ext\n"  # 8
        "export function u() {\n"  # 9
        "  impl()\n"  # 10
        "  renamed()\n"  # 11
        "  number()\n"  # 12
        "  str()\n"  # 13
        "  thing()\n"  # 14
        "}\n"  # 15
        "export function v() {\n"  # 16
        "  z.positive()\n"  # 17
        "  z.string()\n"  # 18
        "  z.coerce()\n"  # 19
        "  loop.nothing()\n"  # 20
        "}\n"  # 21
        "@Injectable\n"  # 22
        "export class Service {}\n"  # 23
    ),
}


def test_renamed_exports_destructured_and_spread_namespaces(tmp_path: Path) -> None:
    repo = Repo(tmp_path, FILES)
    assert repo.calls("src/use.ts") == {
        ("u", "ts:function:src/impl.ts:_impl", "import-bound"),  # export { _impl as impl }
        ("u", "ts:function:src/impl.ts:_impl", "import-bound"),  # ... and re-exported again, renamed
        ("u", "ts:function:src/schemas.ts:number", "import-bound"),  # const { number } = ns
        ("u", "ts:function:src/schemas.ts:string", "import-bound"),  # const { string: str } = ns
        ("v", "ts:function:src/checks.ts:positive", "qualified"),  # z = {...schemas, ...checks}
        ("v", "ts:function:src/checks.ts:string", "qualified"),  # the later spread wins, as in JavaScript
        ("v", "ts:property_function:src/z.ts:z.coerce", "qualified"),
        ("<module>", "ts:function:src/deco.ts:Injectable", "import-bound"),  # a bare decorator
    }
    res = repo.index.resolve_file("src/use.ts")
    lines = {e.line for e in res.calls}
    assert lines == {10, 11, 12, 13, 17, 18, 19, 22}
    # `thing` comes out of an external namespace: counted, marked external; the spread cycle ends, counted
    sites = sorted((raw, line, ext) for sid, raws in res.unresolved.items() for raw, (line, ext) in zip(raws, res.sites[sid], strict=True))
    assert sites == [("loop.nothing", 20, False), ("thing", 14, True)]
