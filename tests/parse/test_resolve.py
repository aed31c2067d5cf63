"""Resolution on small repositories written to tmp_path: every edge is checked with its provenance."""

from __future__ import annotations

from pathlib import Path

from nexusd.parse.extract import extract
from nexusd.parse.facts import semantic_key
from nexusd.resolve import RepoIndex


class Repo:
    """A repository on disk plus its index; edges are reported as readable semantic keys."""

    def __init__(self, root: Path, files: dict[str, str]) -> None:
        self.root = root
        self.index = RepoIndex("test", root)
        self.keys: dict[str, str] = {}
        for path, text in files.items():
            self.write(path, text)

    def write(self, path: str, text: str) -> set[str]:
        full = self.root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
        facts = extract(path, text.encode())
        for sym in facts.symbols:
            self.keys[self.index.symbol_id(path, sym)] = semantic_key(
                facts.language, sym.kind, path, sym.qualified_name, sym.occurrence
            )
        return self.index.set_file(facts)

    def calls(self, path: str) -> set[tuple[str, str, str]]:
        res = self.index.resolve_file(path)
        return {(self.keys[e.src_id].split(":", 3)[3], self.keys[e.dst_id], e.resolution) for e in res.calls}

    def imports(self, path: str) -> set[tuple[str, str]]:
        return {(e.dst_path, e.resolution) for e in self.index.resolve_file(path).imports}

    def unresolved(self, path: str) -> list[str]:
        return sorted(s for raws in self.index.resolve_file(path).unresolved.values() for s in raws)


PY_FILES = {
    "app/__init__.py": "from .core import run\n",
    "app/core.py": (
        "import requests\n"
        "from .util import helper as h\n"
        "from . import util\n"
        "def run():\n"
        "    h()\n"
        "    util.helper()\n"
        "    local()\n"
        "    requests.get('x')\n"
        "    print(len([]))\n"
        "    mystery()\n"
        "def local():\n"
        "    pass\n"
    ),
    "app/util.py": "def helper():\n    pass\n",
    "app/shapes.py": (
        "class Base:\n"
        "    def area(self):\n"
        "        return self.scale()\n"
        "    def scale(self):\n"
        "        return 1\n"
        "class Square(Base):\n"
        "    def area(self):\n"
        "        return super().area() * self.scale()\n"
        "def make():\n"
        "    return Square()\n"
    ),
    "main.py": "from app import run\nrun()\n",
}


def test_python_resolution_order(tmp_path: Path) -> None:
    repo = Repo(tmp_path, PY_FILES)
    assert repo.calls("app/core.py") == {
        ("run", "py:function:app/util.py:helper", "import-bound"),  # h() through `import ... as h`
        ("run", "py:function:app/util.py:helper", "qualified"),  # util.helper() through a module
        ("run", "py:function:app/core.py:local", "same-scope"),
    }
    assert repo.unresolved("app/core.py") == ["mystery", "requests.get"]  # builtins dropped
    assert repo.imports("app/core.py") == {("app/util.py", "import-bound")}  # requests is external
    # a barrel (__init__ re-export) is followed, and marked as such by confidence < 1
    res = repo.index.resolve_file("main.py")
    (edge,) = res.calls
    assert repo.keys[edge.dst_id] == "py:function:app/core.py:run"
    assert edge.resolution == "import-bound" and edge.confidence == 0.95


def test_python_receivers_and_constructors(tmp_path: Path) -> None:
    repo = Repo(tmp_path, PY_FILES)
    assert repo.calls("app/shapes.py") == {
        ("Base.area", "py:method:app/shapes.py:Base.scale", "receiver"),
        ("Square.area", "py:method:app/shapes.py:Base.area", "receiver"),  # super() skips Square
        ("Square.area", "py:method:app/shapes.py:Base.scale", "receiver"),  # inherited via self
        ("make", "py:class:app/shapes.py:Square", "constructor"),
    }


def test_name_only_is_fenced(tmp_path: Path) -> None:
    files = {
        "a.py": "class A:\n    def save(self):\n        pass\n    def get(self):\n        pass\n",
        "b.py": "class B:\n    def save(self):\n        pass\n    def only_here(self):\n        pass\n",
        "c.py": "def use(x, y):\n    x.save()\n    y.only_here()\n    x.get()\n    undefined_name()\n",
    }
    repo = Repo(tmp_path, files)
    calls = repo.calls("c.py")
    # two `save` candidates: no guess; one `only_here`: a low-confidence name-only edge; `get`: builtin-like,
    # so no guess either, but still counted as unresolved
    assert calls == {("use", "py:method:b.py:B.only_here", "name-only")}
    (edge,) = repo.index.resolve_file("c.py").calls
    assert edge.confidence <= 0.5
    assert repo.unresolved("c.py") == ["undefined_name", "x.get", "x.save"]


TS_FILES = {
    "tsconfig.json": '{ // comment\n "compilerOptions": { "baseUrl": ".", "paths": { "@lib/*": ["src/lib/*"] } } }',
    "package.json": '{"name": "root", "workspaces": ["packages/*"]}',
    "packages/kit/package.json": '{"name": "@acme/kit", "exports": {".": "./dist/index.js", "./extra": "./src/extra.ts"}}',
    "packages/kit/src/index.ts": "export function kit(): void {}\n",
    "packages/kit/src/extra.ts": "export const extra = () => 1;\n",
    "src/lib/math.ts": "export function add(a: number, b: number) { return a + b; }\nexport default function mul() {}\n",
    "src/lib/index.ts": "export * from './math';\nexport { default as times } from './math';\n",
    "src/base.ts": "export class Base {\n  constructor() {}\n  hello() { return this.name(); }\n  name() { return 'b'; }\n}\n",
    "src/app.ts": (
        "import { add, times } from './lib';\n"
        "import * as m from '@lib/math';\n"
        "import { kit } from '@acme/kit';\n"
        "import { extra } from '@acme/kit/extra';\n"
        "import { Base } from './base';\n"
        "import React from 'react';\n"
        "class App extends Base {\n"
        "  constructor() { super(); }\n"
        "  name() { return super.name() + add(1, 2); }\n"
        "  run = () => { times(); m.add(1, 1); kit(); extra(); this.hello(); console.log(1); };\n"
        "}\n"
        "export const start = () => new App();\n"
    ),
}


def test_typescript_resolution(tmp_path: Path) -> None:
    repo = Repo(tmp_path, TS_FILES)
    assert repo.imports("src/app.ts") == {
        ("src/lib/index.ts", "import-bound"),
        ("src/lib/math.ts", "import-bound"),
        ("packages/kit/src/index.ts", "import-bound"),
        ("packages/kit/src/extra.ts", "import-bound"),
        ("src/base.ts", "import-bound"),
    }
    assert repo.calls("src/app.ts") == {
        ("App.constructor", "ts:method:src/base.ts:Base.constructor", "receiver"),
        ("App.name", "ts:method:src/base.ts:Base.name", "receiver"),
        ("App.name", "ts:function:src/lib/math.ts:add", "import-bound"),
        ("App.run", "ts:function:src/lib/math.ts:mul", "import-bound"),
        ("App.run", "ts:function:src/lib/math.ts:add", "qualified"),
        ("App.run", "ts:function:packages/kit/src/index.ts:kit", "import-bound"),
        ("App.run", "ts:function:packages/kit/src/extra.ts:extra", "import-bound"),
        ("App.run", "ts:method:src/base.ts:Base.hello", "receiver"),
        ("start", "ts:class:src/app.ts:App", "constructor"),
    }
    assert repo.unresolved("src/app.ts") == []


def test_incremental_rename(tmp_path: Path) -> None:
    files = {
        "lib.py": "def old_name():\n    pass\n",
        "user.py": "from lib import new_name\n\ndef go():\n    new_name()\n",
        "other.py": "def unrelated():\n    pass\n",
    }
    repo = Repo(tmp_path, files)
    assert repo.calls("user.py") == set()
    assert repo.unresolved("user.py") == ["new_name"]
    changed = repo.write("lib.py", "def new_name():\n    pass\n")
    assert {"old_name", "new_name"} <= changed
    assert repo.index.files_referencing(changed) == {"user.py"}
    assert repo.calls("user.py") == {("go", "py:function:lib.py:new_name", "import-bound")}
    # removing the file takes its names away again
    gone = repo.index.remove_file("lib.py")
    assert "new_name" in gone and repo.index.files_referencing(gone) == {"user.py"}
    assert repo.calls("user.py") == set()


def test_unchanged_rewrite_reports_no_names(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {"a.py": "def f():\n    pass\n"})
    assert repo.write("a.py", "def f():\n    print(1)\n    x = 2\n") == set()
    # what f returns is what its callers' receivers are typed by (resolve/types.py): that is a change of f
    assert repo.write("a.py", "def f():\n    return 1\n") == {"f"}


def test_import_cycles_terminate(tmp_path: Path) -> None:
    files = {
        "p/__init__.py": "from .a import *\nfrom .b import *\n",
        "p/a.py": "from .b import *\nfrom . import x\n",
        "p/b.py": "from .a import *\nfrom .a import y\n",
        "q.ts": "export * from './r';\nexport { z } from './r';\n",
        "r.ts": "export * from './q';\nexport { z } from './q';\n",
        "s.ts": "import { z } from './q';\nz();\n",
    }
    repo = Repo(tmp_path, files)
    for path in files:
        repo.index.resolve_file(path)
    assert repo.calls("s.ts") == set()


def test_python_module_level_aliases_name_what_they_alias(tmp_path: Path) -> None:
    files = {
        "lib/__init__.py": "from ._impl import define, Thing\ns = attributes = define\nT = Thing\nloop = again\nagain = loop\n",
        "lib/_impl.py": "def define():\n    pass\nclass Thing:\n    pass\n",
        "lib/local.py": "from ._impl import define\nshort = define\ndef use():\n    short()\n",
        "use.py": (
            "import lib\n"
            "from lib import attributes\n"
            "@lib.s\n"  # a bare decorator through the alias
            "def one():\n"
            "    attributes()\n"
            "    lib.T()\n"
            "    lib.loop()\n"  # an alias cycle names nothing
            "def two():\n"
            "    fast = lib.s\n"  # a function's own alias
            "    fast()\n"
            "def three(flag):\n"
            "    pick = lib.s\n"
            "    pick = lib.T\n"  # two bindings that disagree name nothing
            "    pick()\n"
            "def four(fast):\n"
            "    fast()\n"  # a parameter is not the alias of another scope
        ),
    }
    repo = Repo(tmp_path, files)
    assert repo.calls("use.py") == {
        ("<module>", "py:function:lib/_impl.py:define", "qualified"),
        ("one", "py:function:lib/_impl.py:define", "import-bound"),
        ("one", "py:class:lib/_impl.py:Thing", "constructor"),
        ("two", "py:function:lib/_impl.py:define", "import-bound"),
    }
    assert {"lib.loop", "pick", "fast"} <= set(repo.unresolved("use.py"))
    assert repo.calls("lib/local.py") == {("use", "py:function:lib/_impl.py:define", "import-bound")}


def test_python_class_attribute_alias_names_what_it_aliases(tmp_path: Path) -> None:
    files = {
        "pkg/sets.py": "class OrderedSet:\n    pass\ndef helper():\n    pass\n",
        "pkg/schema.py": (
            "from pkg.sets import OrderedSet, helper\n"
            "class Base:\n"
            "    set_class = OrderedSet\n"
            "    both = OrderedSet\n"
            "    both = helper\n"  # two bindings that disagree name nothing
            "class Schema(Base):\n"
            "    run = helper\n"
            "    def fields(self):\n"
            "        self.set_class([1])\n"  # the base's alias
            "        self.run()\n"
            "        self.both()\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert repo.calls("pkg/schema.py") == {
        ("Schema.fields", "py:class:pkg/sets.py:OrderedSet", "receiver"),
        ("Schema.fields", "py:function:pkg/sets.py:helper", "receiver"),
    }
    assert "self.both" in repo.unresolved("pkg/schema.py")
