"""Object-literal members and top-level values initialised by a call are symbols, callers and callees."""

from __future__ import annotations

from pathlib import Path

from nexusd.parse.extract import extract
from tests.parse.test_resolve import Repo

TS = (
    "import { z } from 'zod'\n"  # 1
    "import { factory, f, g, h } from './lib'\n"  # 2
    "export const X = factory(1, (inst) => {\n"  # 3
    "  g(inst)\n"  # 4
    "})\n"  # 5
    "export const api = {\n"  # 6
    "  fetch: async () => f(),\n"  # 7
    "  clone() { return h() },\n"  # 8
    "  'on-click'() { api.clone() },\n"  # 9
    "}\n"  # 10
    "const schema = z.string().nullable()\n"  # 11
    "let counter = factory(2)\n"  # 12
    "var legacy = new Map()\n"  # 13
    "const lib = require('./lib')\n"  # 14
    "const plain = 3\n"  # 15
    "export function use() {\n"  # 16
    "  const local = factory(3)\n"  # 17
    "  return X()\n"  # 18
    "}\n"  # 19
)
LIB = "export function factory(n, cb) { return cb }\nexport function f() {}\nexport function g(x) {}\nexport function h() {}\n"


def kinds(path: str, text: str) -> list[tuple[str, str, int, int]]:
    facts = extract(path, text.encode())
    return [(s.kind, s.qualified_name, s.start_line, s.end_line) for s in facts.symbols if s.kind != "module"]


def test_object_members_and_top_level_values_are_symbols_of_their_own_kinds() -> None:
    assert kinds("src/app.ts", TS) == [
        ("constant", "X", 3, 5),
        ("constant", "api", 6, 10),
        ("property_function", "api.fetch", 7, 7),
        ("property_function", "api.clone", 8, 8),
        ("property_function", "api.on-click", 9, 9),
        ("constant", "schema", 11, 11),
        ("variable", "counter", 12, 12),
        ("variable", "legacy", 13, 13),
        ("function", "use", 16, 19),
    ]  # `require` is an import binding, `plain` holds no call, `local` is not top-level


def test_calls_inside_them_are_credited_to_them(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {"src/app.ts": TS, "src/lib.ts": LIB})
    assert repo.calls("src/app.ts") == {
        ("X", "ts:function:src/lib.ts:factory", "import-bound"),
        ("X", "ts:function:src/lib.ts:g", "import-bound"),  # inside the callback: X's, not the module's
        ("api.fetch", "ts:function:src/lib.ts:f", "import-bound"),
        ("api.clone", "ts:function:src/lib.ts:h", "import-bound"),
        ("api.on-click", "ts:property_function:src/app.ts:api.clone", "qualified"),
        ("counter", "ts:function:src/lib.ts:factory", "import-bound"),
        ("use", "ts:function:src/lib.ts:factory", "import-bound"),
        ("use", "ts:constant:src/app.ts:X", "same-scope"),  # calling what factory returned
    }
    assert repo.unresolved("src/app.ts") == ["z.string", "z.string().nullable"]


def test_members_are_reached_across_files_and_ids_are_stable(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {
        "src/app.ts": TS, "src/lib.ts": LIB,
        "src/web.ts": "import { api, X } from './app'\nexport function page() {\n  api.fetch()\n  return X\n}\n",
    })  # fmt: skip
    assert repo.calls("src/web.ts") == {("page", "ts:property_function:src/app.ts:api.fetch", "qualified")}
    before = {k for k in repo.keys.items() if "src/app.ts" in k[1]}
    repo.write("src/app.ts", "// a line above everything\n" + TS)
    after = {k for k in repo.keys.items() if "src/app.ts" in k[1]}
    assert before <= after  # same ids for the same symbols: no line in them


def test_javascript_object_members_and_commonjs_exports(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {
        "lib/util.js": "function helper() {}\nmodule.exports = { helper }\n",
        "lib/routes.js": (
            "const { helper } = require('./util')\n"
            "module.exports = {\n"
            "  index(req) { return helper() },\n"
            "  show: function (req) { return this.index(req) },\n"
            "}\n"
        ),
    })  # fmt: skip
    assert kinds("lib/routes.js", (tmp_path / "lib/routes.js").read_text()) == [
        ("property_function", "index", 3, 3), ("property_function", "show", 4, 4),
    ]  # fmt: skip
    assert ("index", "js:function:lib/util.js:helper", "import-bound") in repo.calls("lib/routes.js")


def test_python_module_level_call_initialisers(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {
        "app/factory.py": "def make(name):\n    return name\n",
        "app/cli.py": (
            "from app.factory import make\n"
            "cli = make('cli')\n"
            "LIMIT = 3\n"
            "def main():\n"
            "    return cli()\n"
        ),
    })  # fmt: skip
    assert kinds("app/cli.py", (tmp_path / "app/cli.py").read_text()) == [
        ("variable", "cli", 2, 2), ("function", "main", 4, 5),
    ]  # fmt: skip
    assert repo.calls("app/cli.py") == {
        ("cli", "py:function:app/factory.py:make", "import-bound"),
        ("main", "py:variable:app/cli.py:cli", "same-scope"),
    }


def test_a_value_rebinding_a_definition_is_that_definition(tmp_path: Path) -> None:
    # `Point = total(Point)` decorates the class by hand: one symbol, the class, keeps its name and callers
    repo = Repo(tmp_path, {
        "app/deco.py": "def total(cls):\n    return cls\n",
        "app/point.py": (
            "from app.deco import total\n"
            "class Point:\n"
            "    def moved(self):\n"
            "        return Point()\n"
            "Point = total(Point)\n"
            "def helper():\n"
            "    return 1\n"
            "helper = total(helper)\n"
            "ORIGIN = Point()\n"  # a new name initialised by a call is still a value symbol
        ),
    })  # fmt: skip
    assert kinds("app/point.py", (tmp_path / "app/point.py").read_text()) == [
        ("class", "Point", 2, 4), ("method", "Point.moved", 3, 4), ("function", "helper", 6, 7),
        ("variable", "ORIGIN", 9, 9),
    ]  # fmt: skip
    assert repo.calls("app/point.py") == {
        ("Point.moved", "py:class:app/point.py:Point", "constructor"),
        ("<module>", "py:function:app/deco.py:total", "import-bound"),
        ("ORIGIN", "py:class:app/point.py:Point", "constructor"),
    }


def test_calls_belong_to_the_right_one_of_two_same_named_members(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {
        "src/lib.ts": "export function first() {}\nexport function second() {}\nexport function run(o: unknown) {}\n",
        "src/use.ts": (
            "import { first, second, run } from './lib'\n"
            "export function serve() {\n"
            "  run({\n"
            "    format() { return first() },\n"
            "  })\n"
            "  run({\n"
            "    format() { return second() },\n"
            "  })\n"
            "}\n"
        ),
    })  # fmt: skip
    assert repo.calls("src/use.ts") == {
        ("serve", "ts:function:src/lib.ts:run", "import-bound"),
        ("serve.format", "ts:function:src/lib.ts:first", "import-bound"),
        ("serve.format#1", "ts:function:src/lib.ts:second", "import-bound"),  # the second `format`
    }


def test_object_members_with_computed_keys_are_symbols(tmp_path: Path) -> None:
    text = (
        "import { f } from './lib'\n"
        "export function iterate() {\n"
        "  return {\n"
        "    async *[Symbol.asyncIterator]() { f() },\n"
        "    [KEY]: () => f(),\n"
        "  }\n"
        "}\n"
    )
    assert kinds("src/it.ts", text) == [
        ("function", "iterate", 2, 7),
        ("property_function", "iterate.[Symbol.asyncIterator]", 4, 4),
        ("property_function", "iterate.[KEY]", 5, 5),
    ]
    repo = Repo(tmp_path, {"src/it.ts": text, "src/lib.ts": LIB})
    assert {src for src, dst, _ in repo.calls("src/it.ts") if dst.endswith(":f")} == {
        "iterate.[Symbol.asyncIterator]", "iterate.[KEY]",
    }  # not `iterate`: the calls run when the members are called


def test_a_conditional_initialiser_makes_a_symbol_its_callers_reach(tmp_path: Path) -> None:
    # `export const compose = hasExtension ? extension : function () {...}`: callers of `compose` reach it
    src = (
        "import { base } from './lib'\n"
        "export const compose = typeof window !== 'undefined' && (window as any).ext\n"
        "  ? (window as any).ext\n"
        "  : function () { return base() }\n"
    )
    user = "import { compose } from './compose'\nexport function configure() {\n  return compose()\n}\n"
    assert [k for k in kinds("src/compose.ts", src)] == [("constant", "compose", 2, 4)]
    repo = Repo(tmp_path, {"src/compose.ts": src, "src/lib.ts": "export function base() {}\n", "src/user.ts": user})
    assert ("configure", "ts:constant:src/compose.ts:compose") in {(s, d) for s, d, _ in repo.calls("src/user.ts")}
    assert {s for s, d, _ in repo.calls("src/compose.ts") if d.endswith(":base")} == {"compose"}
