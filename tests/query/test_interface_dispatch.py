"""TypeScript interfaces through a real daemon: method signatures are symbols, and `impact` on a class method
follows `implements`, listing the calls made through an interface-typed receiver as `dispatch` callers.

The type checker binds `g.greet()` with `g: Greeter` to the interface member `Greeter.greet`; that call reaches
`English.greet` or `French.greet` at run time, depending on the object. So those callers are listed for each
implementing class's method under their own provenance, `dispatch`, with a confidence below a bound edge's, and
`--min-confidence` above it leaves them out (and says so).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import DaemonProcess, make_repo
from tests.query.conftest import Q

FILES = {
    "src/greeter.ts": (
        "export interface Named {\n  name(): string;\n}\n\n"
        "export interface Greeter extends Named {\n  greet(who: string): string;\n  wave?(times: number): void;\n}\n\n"
        "export class English implements Greeter {\n"
        "  name() { return 'en'; }\n"
        "  greet(who: string) { return 'hi ' + who; }\n}\n\n"
        "export class French implements Greeter {\n"
        "  name() { return 'fr'; }\n"
        "  greet(who: string) { return 'salut ' + who; }\n}\n\n"
        "export class Loud extends English {\n  shout() { return this.greet('ALL'); }\n}\n\n"
        "export class Plain {\n  greet(who: string) { return who; }\n}\n"
    ),
    "src/use.ts": (
        "import { English, Greeter, Named } from './greeter';\n\n"
        "export function welcome(g: Greeter): string {\n  return g.greet('x');\n}\n\n"
        "export function label(n: Named): string {\n  return n.name();\n}\n\n"
        "export function main(): string {\n  return welcome(new English());\n}\n\n"
        "export function direct(): string {\n  return new English().greet('y');\n}\n"
    ),
}


@pytest.fixture(scope="module")
def q(daemon: DaemonProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Q]:
    repo = make_repo(tmp_path_factory.mktemp("dispatch") / "demo", FILES)
    client = daemon.client()
    qq = Q(client, repo, daemon)
    qq.index()
    yield qq
    client.close()


def _rows(r: dict) -> dict[str, dict]:
    return {c["key"]: c for c in r["callers"]}


def test_interface_method_signatures_are_symbols(q: Q) -> None:
    r = q.op("locate", query="greet")
    keys = [x["key"] for x in r["results"]]
    assert "ts:method:src/greeter.ts:Greeter.greet" in keys
    sym = q.op("show", symbol="src/greeter.ts:Greeter.wave")
    assert sym["node"]["kind"] == "method" and sym["node"]["line"] == 7


def test_a_call_through_an_interface_binds_to_the_interface_member(q: Q) -> None:
    r = q.op("impact", symbol="src/greeter.ts:Greeter.greet", depth=1)
    rows = _rows(r)
    assert set(rows) == {"ts:function:src/use.ts:welcome"}
    assert rows["ts:function:src/use.ts:welcome"]["resolution"] != "dispatch"


def test_impact_on_an_implementation_lists_the_interface_callers_as_dispatch(q: Q) -> None:
    r = q.op("impact", symbol="src/greeter.ts:English.greet", depth=2)
    rows = _rows(r)
    assert rows["ts:function:src/use.ts:direct"]["resolution"] != "dispatch"
    w = rows["ts:function:src/use.ts:welcome"]
    assert w["resolution"] == "dispatch" and w["depth"] == 1
    assert w["interface"] == "ts:method:src/greeter.ts:Greeter.greet"
    assert w["confidence"] < rows["ts:function:src/use.ts:direct"]["confidence"]
    assert rows["ts:function:src/use.ts:main"]["depth"] == 2  # main -> welcome -> (Greeter.greet) English.greet
    assert rows["ts:method:src/greeter.ts:Loud.shout"]["resolution"] != "dispatch"
    # the other implementation gets the same interface caller; a class that only shares the name does not
    french = _rows(q.op("impact", symbol="src/greeter.ts:French.greet", depth=1))
    assert french["ts:function:src/use.ts:welcome"]["resolution"] == "dispatch"
    assert "ts:function:src/use.ts:welcome" not in _rows(q.op("impact", symbol="src/greeter.ts:Plain.greet", depth=1))


def test_dispatch_follows_interfaces_extended_by_an_implemented_one(q: Q) -> None:
    rows = _rows(q.op("impact", symbol="src/greeter.ts:French.name", depth=1))
    assert rows["ts:function:src/use.ts:label"]["resolution"] == "dispatch"
    assert rows["ts:function:src/use.ts:label"]["interface"] == "ts:method:src/greeter.ts:Named.name"


def test_min_confidence_above_dispatch_leaves_them_out_and_says_so(q: Q) -> None:
    r = q.op("impact", symbol="src/greeter.ts:English.greet", depth=1, minConfidence=0.9)
    rows = _rows(r)
    assert "ts:function:src/use.ts:welcome" not in rows and "ts:function:src/use.ts:direct" in rows
    assert r["completeness"] == "lower_bound" and r["belowMinConfidence"] >= 1
