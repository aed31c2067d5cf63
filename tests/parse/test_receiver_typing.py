"""Receiver typing (resolve/types.py): one small repository per cause, Python and TypeScript, with the exact
edges and provenance, and a negative case per cause where the type is unknown and must stay unknown.

Negative fixtures define the called method on two classes, so the name-only fallback (one candidate at
most) cannot hide a wrong or missing type behind a guess.
"""

from __future__ import annotations

from pathlib import Path

from nexusd.parse.extract import extract
from tests.parse.test_resolve import Repo

TWO_GOES = "class A:\n    def go(self):\n        pass\n\nclass B:\n    def go(self):\n        pass\n"
TS_TWO_GOES = "export class A {\n  go(): void {}\n}\nexport class B {\n  go(): void {}\n}\n"


def typed(repo: Repo, path: str) -> set[tuple[str, str, str]]:
    """Edges of `path` that go to methods (what receiver typing is about)."""
    return {e for e in repo.calls(path) if ":method:" in e[1]}


def confidences(repo: Repo, path: str) -> dict[tuple[str, int], float]:
    res = repo.index.resolve_file(path)
    return {(repo.keys[e.dst_id].split(":", 3)[3], e.line): e.confidence for e in res.calls if e.resolution == "inferred"}


# ---- cause 1: a local assigned from a constructor --------------------------------------------------------
def test_python_constructor_local(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/models.py": TWO_GOES + "\nclass C(A):\n    pass\n",
        "pkg/use.py": (
            "from .models import A, B, C\n"
            "def main():\n"
            "    a = A()\n"
            "    a.go()\n"
            "    b = B()\n"
            "    b.go()\n"
            "    c = C()\n"
            "    c.go()\n"  # inherited: lands on the base's method
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "pkg/use.py") == {
        ("main", "py:method:pkg/models.py:A.go", "inferred"),
        ("main", "py:method:pkg/models.py:B.go", "inferred"),
    }
    assert confidences(repo, "pkg/use.py") == {("A.go", 4): 0.85, ("B.go", 6): 0.85, ("A.go", 8): 0.85}


def test_python_constructor_local_unknown_stays_unknown(tmp_path: Path) -> None:
    files = {
        "models.py": TWO_GOES,
        "use.py": (
            "from models import A, B\n"
            "x = A()\n"
            "def shadowed(x):\n"  # an untyped parameter hides the module-level x
            "    x.go()\n"
            "def ambiguous(flag):\n"
            "    y = A()\n"
            "    y = B()\n"  # flow-insensitive: two classes, no type
            "    y.go()\n"
            "def opaque(items):\n"
            "    z = items[0]\n"
            "    z.go()\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "use.py") == set()
    assert repo.unresolved("use.py") == ["x.go", "y.go", "z.go"]


def test_python_mro_is_c3(tmp_path: Path) -> None:
    # D(B, C) with B(A): C3 gives D, B, A, C, so D().m() is A.m (breadth first would say C.m).
    files = {
        "m.py": (
            "class A:\n    def m(self):\n        pass\n"
            "class B(A):\n    pass\n"
            "class C:\n    def m(self):\n        pass\n"
            "class D(B, C):\n    pass\n"
            "def main():\n    d = D()\n    d.m()\n"
        )
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "m.py") == {("main", "py:method:m.py:A.m", "inferred")}


def test_ts_constructor_local(tmp_path: Path) -> None:
    files = {
        "src/models.ts": TS_TWO_GOES + "export class C extends A {}\n",
        "src/use.ts": (
            "import { A, B, C } from './models';\n"
            "export function main() {\n"
            "  const a = new A();\n"
            "  a.go();\n"
            "  let b = new B();\n"
            "  b.go();\n"
            "  const c = new C();\n"
            "  c.go();\n"
            "}\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "src/use.ts") == {
        ("main", "ts:method:src/models.ts:A.go", "inferred"),
        ("main", "ts:method:src/models.ts:B.go", "inferred"),
    }
    assert confidences(repo, "src/use.ts")[("A.go", 8)] == 0.85


def test_ts_constructor_local_unknown_stays_unknown(tmp_path: Path) -> None:
    files = {
        "src/models.ts": TS_TWO_GOES,
        "src/use.ts": (
            "import { A, B } from './models';\n"
            "const x = new A();\n"
            "export function shadowed(x) { x.go(); }\n"
            "export function ambiguous() { let y = new A(); y = new B(); y.go(); }\n"
            "export function opaque(items) { const z = items[0]; z.go(); }\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "src/use.ts") == set()
    assert repo.unresolved("src/use.ts") == ["x.go", "y.go", "z.go"]


# ---- cause 2: a call's result ----------------------------------------------------------------------------
def test_python_call_results_and_fluent_chains(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/models.py": (
            "from typing import Self\n"
            "class Session:\n"
            "    def get(self):\n        pass\n"
            "    def where(self) -> Self:\n        return self\n"
            "class Query(Session):\n"
            "    def order(self):\n        return self\n"
            "    def all(self):\n        pass\n"
        ),
        "pkg/api.py": (
            "from .models import Session, Query\n"
            "def session() -> Session:\n    return make()\n"
            "def make():\n    return Session()\n"
            "def query():\n    return Query()\n"
        ),
        "pkg/use.py": (
            "from .api import session, make, query\n"
            "def main():\n"
            "    s = session()\n"
            "    s.get()\n"
            "    make().get()\n"
            "    query().where().order().all()\n"  # `return self` keeps the subclass through the chain
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "pkg/use.py") == {
        ("main", "py:method:pkg/models.py:Session.get", "inferred"),
        ("main", "py:method:pkg/models.py:Session.where", "inferred"),
        ("main", "py:method:pkg/models.py:Query.order", "inferred"),
        ("main", "py:method:pkg/models.py:Query.all", "inferred"),
    }
    conf = confidences(repo, "pkg/use.py")
    assert conf[("Session.get", 4)] == 0.9  # an annotated return
    assert conf[("Session.get", 5)] == 0.85  # inferred from `return Session()`


def test_python_call_results_unknown_stay_unknown(tmp_path: Path) -> None:
    files = {
        "models.py": TWO_GOES,
        "api.py": (
            "from models import A, B\n"
            "def either(flag):\n"
            "    if flag:\n        return A()\n"
            "    return B()\n"
            "def untyped(x):\n    return x.thing\n"
            "def annotated_union() -> 'A | B':\n    pass\n"
        ),
        "use.py": (
            "from api import either, untyped, annotated_union\n"
            "def main():\n"
            "    either(1).go()\n"
            "    untyped(1).go()\n"
            "    annotated_union().go()\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "use.py") == set()
    assert repo.unresolved("use.py") == ["annotated_union().go", "either().go", "untyped().go"]


def test_ts_call_results_and_fluent_chains(tmp_path: Path) -> None:
    files = {
        "src/models.ts": (
            "export class Session {\n  get(): void {}\n  where(): this { return this; }\n}\n"
            "export class Query extends Session {\n  order() { return this; }\n  all(): void {}\n}\n"
        ),
        "src/api.ts": (
            "import { Session, Query } from './models';\n"
            "export function session(): Session { return make(); }\n"
            "export function make() { return new Session(); }\n"
            "export const query = () => new Query();\n"
            "export async function load(): Promise<Session> { return new Session(); }\n"
        ),
        "src/use.ts": (
            "import { session, make, query, load } from './api';\n"
            "export async function main() {\n"
            "  const t = session();\n"
            "  t.get();\n"
            "  make().get();\n"
            "  query().where().order().all();\n"
            "  (await load()).get();\n"
            "}\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "src/use.ts") == {
        ("main", "ts:method:src/models.ts:Session.get", "inferred"),
        ("main", "ts:method:src/models.ts:Session.where", "inferred"),
        ("main", "ts:method:src/models.ts:Query.order", "inferred"),
        ("main", "ts:method:src/models.ts:Query.all", "inferred"),
    }
    conf = confidences(repo, "src/use.ts")
    assert conf[("Session.get", 4)] == 0.9 and conf[("Session.get", 5)] == 0.85 and conf[("Session.get", 7)] == 0.9


def test_ts_call_results_unknown_stay_unknown(tmp_path: Path) -> None:
    files = {
        "src/models.ts": TS_TWO_GOES,
        "src/api.ts": (
            "import { A, B } from './models';\n"
            "export function either(f: boolean) { if (f) { return new A(); } return new B(); }\n"
            "export function callback() { run(() => { return new A(); }); }\n"  # a callback's return is not ours
            "export function union(): A | B { return new A(); }\n"
        ),
        "src/use.ts": (
            "import { either, callback, union } from './api';\n"
            "export function main() { either(true).go(); callback().go(); union().go(); }\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "src/use.ts") == set()
    assert repo.unresolved("src/use.ts") == ["callback().go", "either().go", "union().go"]


# ---- cause 4: annotated parameters, variables, casts, fields ---------------------------------------------
def test_python_annotations_casts_with_and_fields(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/models.py": (
            "class Response:\n    def close(self):\n        pass\n"
            "class Logger:\n    def info(self):\n        pass\n"
            "class Conn:\n    def __enter__(self):\n        return self\n    def send(self):\n        pass\n"
        ),
        "pkg/use.py": (
            "import typing\n"
            "from typing import Optional\n"
            "from dataclasses import dataclass\n"
            "from .models import Response, Logger, Conn\n"
            "def f(r: Response, o: Optional[Response], q: 'Response | None'):\n"
            "    r.close()\n"
            "    o.close()\n"
            "    q.close()\n"
            "    x: Logger = make_it()\n"
            "    x.info()\n"
            "    typing.cast(Logger, obj).info()\n"
            "    with Conn() as c:\n"
            "        c.send()\n"
            "class Service:\n"
            "    def __init__(self, lg: Logger):\n"
            "        self.logger = Logger()\n"
            "        self.lg = lg\n"
            "    def run(self):\n"
            "        self.logger.info()\n"
            "        self.lg.info()\n"
            "        self.current.close()\n"
            "    @property\n"
            "    def current(self) -> Response:\n"
            "        return self._r\n"
            "@dataclass\n"
            "class Holder:\n"
            "    conn: Conn\n"
            "    def use(self):\n"
            "        self.conn.send()\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "pkg/use.py") == {
        ("f", "py:method:pkg/models.py:Response.close", "inferred"),
        ("f", "py:method:pkg/models.py:Logger.info", "inferred"),
        ("f", "py:method:pkg/models.py:Conn.send", "inferred"),
        ("Service.run", "py:method:pkg/models.py:Logger.info", "inferred"),
        ("Service.run", "py:method:pkg/models.py:Response.close", "inferred"),
        ("Holder.use", "py:method:pkg/models.py:Conn.send", "inferred"),
    }
    lines = {line for (_, line) in confidences(repo, "pkg/use.py")}
    assert lines == {6, 7, 8, 10, 11, 13, 19, 20, 21, 29}
    conf = confidences(repo, "pkg/use.py")
    assert conf[("Response.close", 6)] == 0.9 and conf[("Logger.info", 19)] == 0.85


def test_python_external_and_container_types_are_never_guessed(tmp_path: Path) -> None:
    files = {
        "worker.py": "class Worker:\n    def start(self):\n        pass\n    def run_all(self):\n        pass\n",
        "use.py": (
            "import threading\n"
            "from typing import Union\n"
            "from worker import Worker\n"
            "def main(items: list[Worker], u: Union[Worker, int], name: str):\n"
            "    t = threading.Thread()\n"
            "    t.start()\n"  # a standard-library type: no guess onto Worker.start
            "    items.run_all()\n"  # the list, not its elements
            "    name.run_all()\n"
            "    u.run_all()\n"  # a real union: unknown, so the fallback may still guess
            "    unknown().run_all()\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert repo.calls("use.py") == {
        ("main", "py:method:worker.py:Worker.run_all", "name-only"),
    }
    assert {e.line for e in repo.index.resolve_file("use.py").calls} == {9, 10}
    assert "t.start" in repo.unresolved("use.py") and "items.run_all" in repo.unresolved("use.py")


def test_ts_annotations_casts_and_fields(tmp_path: Path) -> None:
    files = {
        "src/models.ts": (
            "export class Response {\n  close(): void {}\n}\n"
            "export class Logger {\n  info(): void {}\n}\n"
            "export class Db {\n  query(): void {}\n}\n"
        ),
        "src/use.ts": (
            "import { Response, Logger, Db } from './models';\n"
            "export function f(r: Response, o?: Response | null) {\n"
            "  r.close();\n"
            "  o.close();\n"
            "  let x: Logger;\n"
            "  x.info();\n"
            "  (v as Logger).info();\n"
            "  (<Logger>v).info();\n"
            "  items.forEach((it: Response) => it.close());\n"
            "}\n"
            "export class Service {\n"
            "  private logger: Logger;\n"
            "  private made = new Logger();\n"
            "  constructor(private readonly db: Db) {\n"
            "    this.logger = new Logger();\n"
            "  }\n"
            "  run() {\n"
            "    this.logger.info();\n"
            "    this.made.info();\n"
            "    this.db.query();\n"
            "    this.current.close();\n"
            "  }\n"
            "  get current(): Response { return this.r; }\n"
            "}\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "src/use.ts") == {
        ("f", "ts:method:src/models.ts:Response.close", "inferred"),
        ("f", "ts:method:src/models.ts:Logger.info", "inferred"),
        ("Service.run", "ts:method:src/models.ts:Logger.info", "inferred"),
        ("Service.run", "ts:method:src/models.ts:Db.query", "inferred"),
        ("Service.run", "ts:method:src/models.ts:Response.close", "inferred"),
    }
    lines = {line for (_, line) in confidences(repo, "src/use.ts")}
    assert lines == {3, 4, 6, 7, 8, 9, 18, 19, 20, 21}
    conf = confidences(repo, "src/use.ts")
    assert conf[("Logger.info", 18)] == 0.9  # the declared field wins over the constructor assignment
    assert conf[("Logger.info", 19)] == 0.85


def test_ts_interfaces_external_and_containers_are_not_guessed(tmp_path: Path) -> None:
    files = {
        "src/api.ts": (
            "export interface Api {\n  call(): void;\n}\n"
            "export class Impl implements Api {\n  call(): void {}\n  only(): void {}\n}\n"
        ),
        "src/use.ts": (
            "import { Api, Impl } from './api';\n"
            "import { Thread } from 'worker-lib';\n"
            "export function main(a: Api, xs: Impl[], s: string, t: Thread) {\n"
            "  a.call();\n"  # only the interface is known: its member, as the checker binds it; no edge to Impl.call
            "  xs.only();\n"
            "  s.only();\n"
            "  t.only();\n"
            "  new Impl().call();\n"
            "  const i = new Impl();\n"
            "  i.call();\n"
            "}\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "src/use.ts") == {
        ("main", "ts:method:src/api.ts:Api.call", "inferred"),
        ("main", "ts:method:src/api.ts:Impl.call", "receiver"),
        ("main", "ts:method:src/api.ts:Impl.call", "inferred"),
    }
    assert repo.unresolved("src/use.ts") == ["s.only", "t.only", "xs.only"]


# ---- cause 3: objects made by decorators -----------------------------------------------------------------
def test_python_decorator_makes_the_object(tmp_path: Path) -> None:
    files = {
        "cli/__init__.py": "",
        "cli/core.py": (
            "class Group:\n"
            "    def command(self):\n        pass\n"
            "    def main(self):\n        pass\n"
            "def group(name=None):\n"
            "    def decorator(f):\n"
            "        return Group()\n"
            "    return decorator\n"
            "def plain(f):\n    return f\n"
        ),
        "cli/app.py": (
            "from .core import group, plain\n"
            "@group()\n"
            "def cli():\n    pass\n"
            "@plain\n"
            "def other():\n    pass\n"
            "def run():\n"
            "    cli.command()\n"
            "    cli.main()\n"
            "    other()\n"
        ),
        "cli/main.py": "from .app import cli\ncli.main()\n",
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "cli/app.py") == {
        ("run", "py:method:cli/core.py:Group.command", "inferred"),
        ("run", "py:method:cli/core.py:Group.main", "inferred"),
    }
    assert ("run", "py:function:cli/app.py:other", "same-scope") in repo.calls("cli/app.py")
    assert typed(repo, "cli/main.py") == {("<module>", "py:method:cli/core.py:Group.main", "inferred")}


def test_python_decorator_unknown_stays_unknown(tmp_path: Path) -> None:
    files = {
        "core.py": "class G1:\n    def command(self):\n        pass\nclass G2:\n    def command(self):\n        pass\n",
        "app.py": (
            "import click\n"
            "from core import G1\n"
            "def either(f):\n    return G1() if f else f\n"
            "@click.group()\n"
            "def cli():\n    pass\n"
            "@either\n"
            "def other():\n    pass\n"
            "def run():\n"
            "    cli.command()\n"
            "    other.command()\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "app.py") == set()
    assert repo.unresolved("app.py") == ["cli.command", "click.group", "other.command"]


# ---- extraction details ------------------------------------------------------------------------------------
def test_type_facts_are_scoped_and_untyped_names_shadow() -> None:
    facts = extract(
        "m.py",
        b"x = A()\ndef f(a, b: 'Optional[B]', *rest):\n    for i in a:\n        pass\n    return b\n",
    )
    got = {(t.kind, t.scope, t.name, t.expr) for t in facts.types}
    assert got == {
        ("var", None, "x", "A()"),
        ("var", "f", "b", "{B}"),
        ("return", "f", "", "b"),
        ("shadow", "f", "a i rest", "?"),
    }
    ts = extract("m.ts", b"const c = <Foo>v;\nfunction g(p: Bar | undefined): Promise<Baz> { return new Q(); }\n")
    assert {(t.kind, t.scope, t.name, t.expr) for t in ts.types} == {
        ("var", None, "c", "{Foo}"),
        ("var", "g", "p", "{Bar}"),
        ("return", "g", "", "{Baz}"),
        ("return", "g", "", "Q()"),
    }
    chained = extract("m.ts", b"a.b().c().d();\n(v as T).m();\n")
    assert [(c.name, c.receiver, c.chain) for c in chained.calls if c.name in {"d", "m"}] == [
        ("d", "<expr>", "a.b().c()"),
        ("m", "<expr>", "{T}"),
    ]


def test_javascript_constructors_fields_and_returns(tmp_path: Path) -> None:
    files = {
        "lib/db.js": (
            "class Db {\n  query() {}\n  chain() { return this; }\n}\n"
            "class Other {\n  query() {}\n}\n"
            "function connect() { return new Db(); }\n"
            "module.exports = { Db, Other, connect };\n"
        ),
        "lib/app.js": (
            "const { Db, connect } = require('./db');\n"
            "const helpers = require('./db');\n"
            "class Service {\n"
            "  pool = new Db();\n"
            "  constructor() { this.db = connect(); }\n"
            "  run(q) {\n"
            "    this.db.query();\n"
            "    this.pool.chain().query();\n"
            "    q.query();\n"  # an untyped parameter: unknown, and two `query` methods: no guess
            "    helpers.connect();\n"  # a require() binding stays a module, not a value
            "  }\n"
            "}\n"
            "module.exports = Service;\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "lib/app.js") == {
        ("Service.run", "js:method:lib/db.js:Db.query", "inferred"),
        ("Service.run", "js:method:lib/db.js:Db.chain", "inferred"),
    }
    assert ("Service.run", "js:function:lib/db.js:connect", "qualified") in repo.calls("lib/app.js")
    assert repo.unresolved("lib/app.js") == ["q.query"]


# ---- a callback's untyped parameters, typed by what the callee declares (TS contextual typing) -----------
def test_ts_callback_parameters_take_the_callees_declared_types(tmp_path: Path) -> None:
    files = {
        "src/models.ts": TS_TWO_GOES,
        "src/run.ts": (
            "import { A, B } from './models';\n"
            "export function withA(init: (this: unknown, first: number, a: A) => void): void {}\n"
            "export function withMaybeB(init?: ((b: B) => void) | undefined): void {}\n"
            "export class Box {\n"
            "  constructor(make: (a: A) => void) {}\n"
            "  each(fn: (b: B, i: number) => void): void {}\n"
            "}\n"
        ),
        "src/use.ts": (
            "import { withA, withMaybeB, Box } from './run';\n"
            "export function viaFunction() {\n"
            "  withA((n, a) => { a.go(); });\n"  # `this` takes no argument: a is the second parameter
            "}\n"
            "export function viaBareArrow() {\n"
            "  withMaybeB(b => b.go());\n"
            "}\n"
            "export function viaConstructorAndMethod() {\n"
            "  const box = new Box(function (a) { a.go(); });\n"
            "  box.each((b) => b.go());\n"
            "}\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "src/use.ts") == {
        ("viaFunction", "ts:method:src/models.ts:A.go", "inferred"),
        ("viaBareArrow", "ts:method:src/models.ts:B.go", "inferred"),
        ("viaConstructorAndMethod", "ts:method:src/models.ts:A.go", "inferred"),
        ("viaConstructorAndMethod", "ts:method:src/models.ts:B.go", "inferred"),
        ("viaConstructorAndMethod", "ts:method:src/run.ts:Box.each", "inferred"),
    }


def test_ts_callback_parameters_unknown_stay_unknown(tmp_path: Path) -> None:
    files = {
        "src/models.ts": TS_TWO_GOES,
        "src/run.ts": (
            "import { A } from './models';\n"
            "export function untyped(init: (a) => void): void {}\n"  # declares no type for it
            "export function wrongPlace(x: number, init: (a: A) => void): void {}\n"
        ),
        "src/use.ts": (
            "import { untyped, wrongPlace } from './run';\n"
            "import { external } from 'elsewhere';\n"
            "export function one() { untyped((a) => a.go()); }\n"
            "export function two() { wrongPlace((a) => a.go(), () => {}); }\n"  # argument 0 is not the callback
            "export function three() { external((a) => a.go()); }\n"
            "export function four() { wrongPlace(1, (a: unknown) => a.go()); }\n"  # its own annotation wins
        ),
    }
    repo = Repo(tmp_path, files)
    assert typed(repo, "src/use.ts") == set()


def test_what_a_builtin_containers_method_returns_is_unknown_not_external(tmp_path: Path) -> None:
    files = {
        "models.py": TWO_GOES,
        "use.py": (
            "from models import A\n"
            "def run(items: list[A], names: str):\n"
            "    items.append(A())\n"  # a method of the container itself: external
            "    items.pop().go()\n"  # maybe an element, an object of the repository: unknown
            "    names.upper().go()\n"  # a str method returns a builtin: external
        ),
        "use.ts": (
            "import { A } from './models';\n"
            "export function run(queue: A[]) {\n"
            "  queue.push(new A());\n"
            "  queue.shift()!.go();\n"
            "}\n"
        ),
        "models.ts": TS_TWO_GOES,
    }
    repo = Repo(tmp_path, files)
    for path, unknown in (("use.py", ["items.pop().go"]), ("use.ts", ["<expr>.go"])):
        res = repo.index.resolve_file(path)
        marked = [
            (raw, ext) for src, raws in res.unresolved.items() for raw, (_, ext) in zip(raws, res.sites[src], strict=True)
        ]
        assert sorted(raw for raw, ext in marked if not ext) == unknown, path
        assert all(ext for raw, ext in marked if raw not in unknown), path


def _marked(repo: Repo, path: str) -> dict[str, bool]:
    """Unresolved raw call -> whether it is marked external (external sites never count against a verdict)."""
    res = repo.index.resolve_file(path)
    return {raw: ext for src, raws in res.unresolved.items() for raw, (_, ext) in zip(raws, res.sites[src], strict=True)}


def test_copy_of_a_typed_value_keeps_its_type(tmp_path: Path) -> None:
    files = {
        "models.py": TWO_GOES.replace("class A:\n", "class A:\n    def evolve(self):\n        new = copy.copy(self)\n"
                                      "        new.go()\n        copy.deepcopy(self).go()\n        return new\n"),
        "use.py": (
            "import copy\n"
            "import dataclasses\n"
            "from models import A\n"
            "def run(a: A):\n"
            "    b = copy.deepcopy(a)\n"
            "    b.go()\n"
            "    dataclasses.replace(a, x=1).go()\n"
            "    copy.copy(x=a).go()\n"  # no positional argument: not a copy of anything known
            "def copy_like(a: A):\n"
            "    def copy(v):\n"
            "        return B()\n"
            "    copy(a).go()\n"  # a bare `copy` is whatever this file defines, never taken for copy.copy
        ),
    }
    files["models.py"] = "import copy\n" + files["models.py"]
    repo = Repo(tmp_path, files)
    assert typed(repo, "models.py") == {("A.evolve", "py:method:models.py:A.go", "inferred")}
    assert [e.line for e in repo.index.resolve_file("models.py").calls if e.resolution == "inferred"] == [5, 6]
    assert typed(repo, "use.py") == {("run", "py:method:models.py:A.go", "inferred")}
    assert sorted(e.line for e in repo.index.resolve_file("use.py").calls if e.resolution == "inferred") == [6, 7]
    assert _marked(repo, "use.py")["copy.copy().go"] is False  # unknown, so it counts against a verdict


def test_what_an_outside_function_returns_is_unknown_and_never_guessed(tmp_path: Path) -> None:
    # One `go` in the repository: a name-only guess would bind it; the receivers are made outside the repository.
    files = {
        "models.py": "class A:\n    def go(self):\n        pass\n",
        "use.py": (
            "import functools\n"
            "import threading\n"
            "from somewhere import make, Thing\n"
            "def run(xs):\n"
            "    r = functools.reduce(max, xs)\n"
            "    r.go()\n"  # may be an A handed back: unknown, counted
            "    make().go()\n"  # likewise
            "    make().attr.go()\n"  # recorded as `<expr>.go`: unknown, counted
            "    t = threading.Thread()\n"
            "    t.go()\n"  # an outside class's instance: external, not counted
            "    Thing().go()\n"
        ),
        "use.ts": (
            "import { make, Thing } from 'somewhere';\n"
            "export function run() {\n"
            "  const r = make();\n"
            "  r.go();\n"
            "  new Thing().go();\n"
            "}\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert repo.calls("use.py") == set() and repo.calls("use.ts") == set()
    assert {raw: ext for raw, ext in _marked(repo, "use.py").items() if raw.endswith(".go")} == {
        "r.go": False, "make().go": False, "<expr>.go": False, "t.go": True, "Thing().go": True,
    }
    assert {raw: ext for raw, ext in _marked(repo, "use.ts").items() if raw.endswith(".go")} == {
        "r.go": False, "Thing().go": True,
    }
