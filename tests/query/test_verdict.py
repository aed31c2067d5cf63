"""The completeness verdict of `impact`, through a real daemon: untyped receivers are listed or counted.

A method whose callers reach it through an untyped receiver (`store.save()` with `store` a plain parameter)
is either found by the name-only guess (listed, with that provenance) or, where no guess is made, the answer
says `lower_bound` with the count and where the call sites are. Never `complete` over a missed call site.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import DaemonProcess, make_repo
from tests.query.conftest import Q

FILES = {
    # `archive` exists once in the repository: an untyped `x.archive()` is guessed (name-only)
    # `save` exists twice: no guess; `get` is a builtin-type method name: no guess either
    "app/store.py": (
        "class Store:\n"
        "    def save(self, item):\n        return item\n\n"
        "    def get(self, key):\n        return key\n\n"
        "    def archive(self):\n        return None\n"
    ),
    "app/cache.py": "class Cache:\n    def save(self, item):\n        return item\n",
    "app/jobs.py": (
        "def persist(store, item):\n    return store.save(item)\n\n\n"
        "def lookup(store, key):\n    return store.get(key)\n\n\n"
        "def sweep(store):\n    store.archive()\n\n\n"
        "def nightly(store):\n    sweep(store)\n"
    ),
    "app/web.py": "from app.jobs import persist\n\n\ndef handler(db, item):\n    return persist(db, item)\n",
    "app/direct.py": (
        "from app.store import Store\n\n\n"
        "def direct():\n    return Store().save(1)\n\n\n"
        "def resolve_me():\n    return direct()\n"
    ),
}


@pytest.fixture(scope="module")
def v(daemon: DaemonProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Q]:
    repo = make_repo(tmp_path_factory.mktemp("verdict") / "demo", FILES)
    client = daemon.client()
    qq = Q(client, repo, daemon)
    qq.index()
    yield qq
    client.close()


def test_untyped_callers_are_counted_with_their_sites(v: Q) -> None:
    r = v.op("impact", symbol="app/store.py:Store.save", depth=1)
    assert [c["key"] for c in r["callers"]] == ["py:function:app/direct.py:direct"]
    assert r["callers"][0]["resolution"] == "receiver"
    assert r["completeness"] == "lower_bound" and r["unresolvedInScope"] == 1
    assert r["unresolvedExamples"] == [
        {"in": "py:function:app/jobs.py:persist", "call": "store.save", "path": "app/jobs.py", "line": 2}
    ]


def test_a_common_method_name_is_never_guessed_but_still_counted(v: Q) -> None:
    r = v.op("impact", symbol="app/store.py:Store.get", depth=1)
    assert r["total"] == 0
    assert r["completeness"] == "lower_bound" and r["unresolvedInScope"] == 1
    assert r["unresolvedExamples"][0]["call"] == "store.get" and r["unresolvedExamples"][0]["line"] == 6


def test_a_guess_is_listed_with_its_provenance_and_min_confidence_drops_it(v: Q) -> None:
    r = v.op("impact", symbol="app/store.py:Store.archive", depth=2)
    rows = {c["key"]: c for c in r["callers"]}
    assert set(rows) == {"py:function:app/jobs.py:sweep", "py:function:app/jobs.py:nightly"}
    assert rows["py:function:app/jobs.py:sweep"]["resolution"] == "name-only"
    assert r["completeness"] == "complete"
    bound = v.op("impact", symbol="app/store.py:Store.archive", depth=2, minConfidence=0.9)
    assert bound["total"] == 0 and bound["minConfidence"] == 0.9
    assert bound["completeness"] == "lower_bound" and bound["belowMinConfidence"] == 1


def test_a_miss_at_depth_two_makes_a_lower_bound(v: Q) -> None:
    # direct() has a bound caller; persist() reaches save through an untyped receiver, and web.handler calls
    # persist: at depth 2 that whole branch may be missing, and the verdict says so
    r = v.op("impact", symbol="app/store.py:Store.save", depth=2)
    assert {c["key"] for c in r["callers"]} == {"py:function:app/direct.py:direct", "py:function:app/direct.py:resolve_me"}
    assert r["completeness"] == "lower_bound" and r["unresolvedInScope"] == 1
    # and a function whose callers are all bound is complete at every depth
    done = v.op("impact", symbol="py:function:app/direct.py:direct", depth=3)
    assert done["completeness"] == "complete" and done["total"] == 1


def test_cli_shows_provenance_sites_and_the_floor(v: Q) -> None:
    cli = v.daemon.cli
    r = cli("-C", str(v.repo), "impact", "app/store.py:Store.archive")
    assert r.returncode == 0, r.stderr
    assert "name-only" in r.stdout and "jobs.py:sweep" in r.stdout
    r = cli("-C", str(v.repo), "impact", "app/store.py:Store.get")
    assert r.returncode == 0, r.stderr
    assert "lower bound: 1 unresolved" in r.stdout and "app/jobs.py:6" in r.stdout
    r = cli("-C", str(v.repo), "impact", "app/store.py:Store.archive", "--min-confidence", "0.9")
    assert r.returncode == 0, r.stderr
    assert "0 callers" in r.stdout and "under the confidence floor" in r.stdout
    r = cli("-C", str(v.repo), "context", "app/store.py:Store.archive", "--min-confidence", "0.9")
    assert r.returncode == 0 and "sweep" not in r.stdout
    r = cli("-C", str(v.repo), "context", "app/store.py:Store.archive")
    assert r.returncode == 0 and "sweep" in r.stdout


DAMAGED = {
    "lib/core.py": "def compute(x):\n    return x\n\n\ndef unused():\n    return 0\n",
    "lib/good.py": "from lib.core import compute\n\n\ndef fine():\n    return compute(1)\n",
    # a syntax error before the call: the parser may credit `compute(2)` to the wrong definition or lose it
    "lib/bad.py": "from lib.core import compute\n\n\ndef broken(:\n    return compute(2)\n",
    "other/alone.py": "def island():\n    return 1\n\n\ndef shore():\n    return island()\n",
    "other/noise.py": "def oops(:\n    pass\n",  # damaged, but neither imports nor calls island
}


@pytest.fixture(scope="module")
def damaged(daemon: DaemonProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Q]:
    repo = make_repo(tmp_path_factory.mktemp("damaged") / "demo", DAMAGED)
    client = daemon.client()
    qq = Q(client, repo, daemon)
    qq.index()
    yield qq
    client.close()


def test_a_file_in_scope_that_did_not_parse_makes_a_lower_bound(damaged: Q) -> None:
    r = damaged.op("impact", symbol="lib/core.py:compute", depth=1)
    assert "py:function:lib/good.py:fine" in {c["key"] for c in r["callers"]}
    assert r["completeness"] == "lower_bound"
    assert r["parseErrorFiles"] == ["lib/bad.py"] and "parse-errors" in r["incompleteBecause"]
    # a broken file that neither imports the target's file nor holds a caller leaves the verdict alone
    ok = damaged.op("impact", symbol="other/alone.py:island", depth=2)
    assert ok["completeness"] == "complete" and "parseErrorFiles" not in ok
    text = damaged.daemon.cli("-C", str(damaged.repo), "impact", "lib/core.py:compute")
    assert text.returncode == 0, text.stderr
    assert "did not parse cleanly (lib/bad.py)" in text.stdout


BARREL = {
    "lib/core.ts": "export function compute(x: number): number {\n  return x;\n}\n",
    "lib/index.ts": 'export * from "./core";\n',
    "app/good.ts": 'import { compute } from "../lib/core";\n\nexport function fine(): number {\n  return compute(1);\n}\n',
    # reaches compute only through the barrel, and does not parse: the call may be lost or credited elsewhere
    "app/bad.ts": 'import { compute } from "../lib";\n\nexport function broken( {\n  return compute(2);\n}\n',
    "py/core.py": "def compute(x):\n    return x\n",
    "py/api.py": "from py.core import compute\n",  # a plain module re-exporting what it imports
    "py/good.py": "from py.core import compute\n\n\ndef fine():\n    return compute(1)\n",
    "py/bad.py": "from py.api import compute\n\n\ndef broken(:\n    return compute(2)\n",
}


@pytest.fixture(scope="module")
def barrel(daemon: DaemonProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Q]:
    repo = make_repo(tmp_path_factory.mktemp("barrel") / "demo", BARREL)
    client = daemon.client()
    qq = Q(client, repo, daemon)
    qq.index()
    yield qq
    client.close()


@pytest.mark.parametrize("target, bad", [("lib/core.ts:compute", "app/bad.ts"), ("py/core.py:compute", "py/bad.py")])
def test_a_broken_file_reaching_the_target_through_a_re_export_makes_a_lower_bound(barrel: Q, target: str, bad: str) -> None:
    r = barrel.op("impact", symbol=target, depth=1)
    assert r["completeness"] == "lower_bound", r
    assert bad in r["parseErrorFiles"] and "parse-errors" in r["incompleteBecause"]



REBOUND = {
    # `encode` is defined under two conditions: the graph keeps one binding per name and scope, the last, so
    # the calls of `encode` may be the first one's and its callers are not known
    "codec/enc.py": (
        "import os\n\n"
        "if os.environ.get('FAST'):\n"
        "    def encode(x):\n        return 1\nelse:\n"
        "    def encode(x):\n        return 2\n\n\n"
        "def use():\n    return encode(1)\n"
    ),
    # `count` declared at the top and again in a callback's block: each call binds to the one its block sees
    "spec/counter.test.tsx": (
        "let count: () => number = () => 0\n"  # 1
        "function outer() {\n  return count()\n}\n"  # 2-4
        "describe('b', () => {\n"  # 5
        "  let count: () => number = () => 1\n"  # 6
        "  const inner = () => count()\n"  # 7
        "  it('y', () => { expect(count()).toBe(1) })\n"  # 8
        "})\n"  # 9
        "it('z', () => { expect(count()).toBe(0) })\n"  # 10
    ),
}


@pytest.fixture(scope="module")
def rebound(daemon: DaemonProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Q]:
    repo = make_repo(tmp_path_factory.mktemp("rebound") / "demo", REBOUND)
    client = daemon.client()
    qq = Q(client, repo, daemon)
    qq.index()
    yield qq
    client.close()


def test_calls_bound_to_a_same_named_definition_make_a_lower_bound(rebound: Q) -> None:
    r = rebound.op("impact", symbol="py:function:codec/enc.py:encode", depth=1)
    # the call went to the last definition: the first has no caller the graph can show, and the verdict says
    # why instead of `complete`
    assert r["total"] == 0 and r["completeness"] == "lower_bound"
    assert "same-named-bindings" in r["incompleteBecause"] and r["boundToSameNamed"] == 1
    assert r["sameNamedExamples"] == [
        {"in": "py:function:codec/enc.py:use", "call": "encode", "path": "codec/enc.py", "line": 12,
         "boundTo": "py:function:codec/enc.py:encode#1"}
    ]  # fmt: skip
    out = rebound.daemon.cli("-C", str(rebound.repo), "impact", "py:function:codec/enc.py:encode")
    assert out.returncode == 0, out.stderr
    assert "lower bound: 1 callers were bound to another definition of the same name in its file" in out.stdout
    # the one the call went to lists it; nothing was bound to the other, so its answer is complete
    last = rebound.op("impact", symbol="py:function:codec/enc.py:encode#1", depth=1)
    assert [c["key"] for c in last["callers"]] == ["py:function:codec/enc.py:use"]
    assert last["completeness"] == "complete"


def test_a_block_scoped_binding_takes_the_calls_its_block_sees(rebound: Q) -> None:
    top = rebound.op("impact", symbol="tsx:function:spec/counter.test.tsx:count", depth=1)
    inner = rebound.op("impact", symbol="tsx:function:spec/counter.test.tsx:count#1", depth=1)
    assert {c["key"] for c in top["callers"]} == {
        "tsx:function:spec/counter.test.tsx:outer", "tsx:module:spec/counter.test.tsx:<module>"
    }
    assert {c["key"] for c in inner["callers"]} == {
        "tsx:function:spec/counter.test.tsx:inner", "tsx:module:spec/counter.test.tsx:<module>"
    }
    assert {c["resolution"] for c in top["callers"] + inner["callers"]} == {"block-scope"}
    # each call's block chose its binding alone, so neither answer can miss a caller to the other
    assert top["completeness"] == "complete" and inner["completeness"] == "complete"
