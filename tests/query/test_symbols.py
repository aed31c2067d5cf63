"""Through a real daemon: locate ranks by how closely a name matches the words; the new symbol kinds
(object-literal members, top-level values, overload stubs) are found, and a bare name means the implementation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import DaemonProcess, make_repo
from tests.query.conftest import Q

FILES = {
    # a deeper, test-free path and a class would win on kind and path length: closeness must outrank both
    "http/cookies.py": "class Jar:\n    pass\n\n\ndef get_cookie_header(jar):\n    return jar\n",
    "http/deep/nested/headers.py": "def get_header(name):\n    return name\n\n\ndef header_get(name):\n    return name\n",
    "src/api.ts": (
        "import { create } from './store'\n"
        "export const useStore = create(() => ({ n: 1 }))\n"
        "export const api = {\n  fetchUser: async (id: string) => useStore(),\n  'on-click'() { return 1 },\n}\n"
    ),
    "tree/walker.py": "def walk(n):\n    return walk(n - 1) if n else 0\n\n\ndef top():\n    return walk(3)\n",
    "src/store.ts": "export function create(f: () => unknown) { return f }\n",
    # three `dispatch`: a shallow top-level function nobody calls, a method called twice, a closure called once
    "a.py": "def dispatch(event):\n    return event\n",
    "bus/queue/router.py": (
        "class Router:\n    def dispatch(self, event):\n        return event\n\n\n"
        "def route(r: Router):\n    r.dispatch(1)\n    return r.dispatch(2)\n"
    ),
    "bus/local.py": "def outer():\n    def dispatch(event):\n        return event\n    return dispatch(0)\n",
    "src/parse.ts": (
        "export function parseValue(x: number): number;\n"
        "export function parseValue(x: string): string;\n"
        "export function parseValue(x: any): any { return x }\n"
        "export function caller() { return parseValue(1) }\n"
    ),
}


@pytest.fixture(scope="module")
def s(daemon: DaemonProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Q]:
    repo = make_repo(tmp_path_factory.mktemp("symbols") / "demo", FILES)
    client = daemon.client()
    qq = Q(client, repo, daemon)
    qq.index()
    yield qq
    client.close()


def names(r: dict) -> list[str]:
    return [row["name"] for row in r["results"]]


def test_closeness_outranks_kind_and_path_length(s: Q) -> None:
    r = s.op("locate", query="get header")
    assert names(r) == ["get_header", "header_get", "get_cookie_header"]
    assert {row["match"] for row in r["results"]} == {"words"}


def test_value_symbols_and_object_members_are_located(s: Q) -> None:
    row = s.op("locate", query="useStore")["results"][0]
    assert row["kind"] == "constant" and row["key"] == "ts:constant:src/api.ts:useStore" and row["match"] == "exact"
    r = s.op("locate", query="fetch user")
    assert r["results"][0]["key"] == "ts:property_function:src/api.ts:api.fetchUser"
    assert s.op("locate", query="on-click")["results"][0]["qualifiedName"] == "api.on-click"
    # the member is a caller of its own: useStore() inside it is credited to it, and useStore's callers say so
    r = s.op("impact", symbol="useStore", depth=1)
    assert [c["key"] for c in r["callers"]] == ["ts:property_function:src/api.ts:api.fetchUser"]
    r = s.op("impact", symbol="create", depth=2)
    assert [c["key"] for c in r["callers"]] == [
        "ts:constant:src/api.ts:useStore", "ts:property_function:src/api.ts:api.fetchUser",
    ]  # fmt: skip


def test_an_overloaded_name_means_its_implementation(s: Q) -> None:
    r = s.op("locate", query="parseValue")
    assert [(row["kind"], row["line"]) for row in r["results"]] == [("function", 3), ("overload", 1), ("overload", 2)]
    r = s.op("impact", symbol="parseValue", depth=1)  # not `ambiguous`: the stubs stand behind it
    assert r["target"]["kind"] == "function" and r["target"]["line"] == 3
    assert [c["key"] for c in r["callers"]] == ["ts:function:src/parse.ts:caller"]


def test_a_recursive_function_is_its_own_caller(s: Q) -> None:
    r = s.op("impact", symbol="walk", depth=2)
    rows = {c["key"]: c for c in r["callers"]}
    assert set(rows) == {"py:function:tree/walker.py:walk", "py:function:tree/walker.py:top"}
    assert rows["py:function:tree/walker.py:walk"]["recursive"] is True
    assert rows["py:function:tree/walker.py:walk"]["depth"] == 1 and "recursive" not in rows["py:function:tree/walker.py:top"]


def test_among_same_named_definitions_the_most_called_comes_first_and_closures_last(s: Q) -> None:
    r = s.op("locate", query="dispatch")
    assert [row["qualifiedName"] for row in r["results"]] == ["Router.dispatch", "dispatch", "outer.dispatch"]
    assert [row["path"] for row in r["results"]][:2] == ["bus/queue/router.py", "a.py"]
