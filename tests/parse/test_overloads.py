"""Overload stubs (Python `@overload`, TypeScript signatures) are symbols of kind `overload`; calls land on the
implementation, whichever route binds them."""

from __future__ import annotations

from pathlib import Path

from nexusd.parse.extract import extract
from tests.parse.test_resolve import Repo

PY = (
    "import typing\n"
    "from typing import overload\n\n"
    "@overload\n"
    "def parse(x: int) -> int: ...\n"
    "@typing.overload\n"
    "def parse(x: str) -> str: ...\n"
    "def parse(x):\n"
    "    return x\n\n"
    "class Codec:\n"
    "    @overload\n"
    "    def pack(self, a: int) -> bytes: ...\n"
    "    @overload\n"
    "    def pack(self, a: str) -> bytes: ...\n"
    "    def pack(self, a):\n"
    "        return b''\n"
)
TS = (
    "export function parse(x: number): number;\n"
    "export function parse(x: string): string;\n"
    "export function parse(x: any): any { return x }\n"
    "export class Codec {\n"
    "  encode(a: number): string;\n"
    "  encode(a: string): string;\n"
    "  encode(a: any): string { return '' }\n"
    "}\n"
    "declare function ambient(x: number): void;\n"
)


def kinds(path: str, text: str) -> list[tuple[str, str, int, int]]:
    facts = extract(path, text.encode())
    return [(s.kind, s.qualified_name, s.start_line, s.occurrence) for s in facts.symbols if s.kind != "module"]


def test_stubs_are_overload_symbols_with_their_lines() -> None:
    assert kinds("lib/codec.py", PY) == [
        ("overload", "parse", 5, 0), ("overload", "parse", 7, 1), ("function", "parse", 8, 0),
        ("class", "Codec", 11, 0),
        ("overload", "Codec.pack", 13, 0), ("overload", "Codec.pack", 15, 1), ("method", "Codec.pack", 16, 0),
    ]  # fmt: skip
    assert kinds("src/codec.ts", TS) == [
        ("overload", "parse", 1, 0), ("overload", "parse", 2, 1), ("function", "parse", 3, 0),
        ("class", "Codec", 4, 0),
        ("overload", "Codec.encode", 5, 0), ("overload", "Codec.encode", 6, 1), ("method", "Codec.encode", 7, 0),
        ("function", "ambient", 9, 0),  # a declaration with no implementation is the callee itself
    ]  # fmt: skip
    # a .pyi holds only stubs: they are the declarations
    pyi = "from typing import overload\n@overload\ndef f(x: int) -> int: ...\n@overload\ndef f(x: str) -> str: ...\n"
    assert [k for k, *_ in kinds("lib/stub.pyi", pyi)] == ["function", "function"]


def test_calls_land_on_the_implementation(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {
        "lib/codec.py": PY,
        "lib/use.py": (
            "from lib.codec import parse, Codec\n\n"
            "def use(c):\n"
            "    parse(1)\n"
            "    Codec().pack(1)\n"
            "    c.pack(2)\n"  # untyped: the one implementation, by name only
        ),
        "src/codec.ts": TS,
        "src/use.ts": "import { parse, Codec } from './codec'\nexport function use() {\n  parse(1)\n  new Codec().encode(1)\n  ambient(2)\n}\n",
    })  # fmt: skip
    assert repo.calls("lib/use.py") == {
        ("use", "py:function:lib/codec.py:parse", "import-bound"),
        ("use", "py:class:lib/codec.py:Codec", "constructor"),
        ("use", "py:method:lib/codec.py:Codec.pack", "receiver"),
        ("use", "py:method:lib/codec.py:Codec.pack", "name-only"),
    }
    assert repo.calls("src/use.ts") == {
        ("use", "ts:function:src/codec.ts:parse", "import-bound"),
        ("use", "ts:class:src/codec.ts:Codec", "constructor"),
        ("use", "ts:method:src/codec.ts:Codec.encode", "receiver"),
    }
