"""The code-graph questions against a real daemon and a real indexed fixture repository (see conftest.py)."""

from __future__ import annotations

import json
import os

import pytest

from nexusd.errors import Ambiguous, BadRequest, Forbidden, NotFound
from tests.query.conftest import Q

HELPER = "py:function:pkg/util.py:helper"


def _strip(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "tookMs"}


# -- locate -------------------------------------------------------------------------------------------


def test_locate_tiers_say_how_they_matched(q: Q) -> None:
    r = q.op("locate", query="helper")
    assert r["results"][0]["key"] == HELPER and r["results"][0]["match"] == "exact"
    assert r["graphVersion"] == 1 and r["freshness"] in ("fresh", "unknown") and "indexedAt" in r and "tookMs" in r
    words = q.op("locate", query="normalize params")["results"]
    by_match = {(x["name"], x["match"]) for x in words}
    assert ("normalizeParams", "words") in by_match and ("normalize_params", "words") in by_match
    prefix = q.op("locate", query="normal")["results"]
    assert {x["name"] for x in prefix if x["match"] == "prefix"} >= {"normalize", "normalizeParams", "normalize_params"}
    qualified = q.op("locate", query="Base.run")["results"]
    assert qualified[0]["key"] == "py:method:pkg/app.py:Base.run" and qualified[0]["match"] == "qualified"
    text = q.op("locate", query="util helper")["results"]
    assert any(x["key"] == HELPER and x["match"] == "fulltext" for x in text)


def test_locate_filters_by_kind_and_path(q: Q) -> None:
    r = q.op("locate", query="run", kind="method")
    assert [x["key"] for x in r["results"]] == ["py:method:pkg/app.py:Base.run"]
    r = q.op("locate", query="run", path="pkg/cli.py")
    assert [x["key"] for x in r["results"]] == ["py:function:pkg/cli.py:run"]
    r = q.op("locate", query="normalize", path="pkg/*.py", kind="function")
    assert r["results"] and all(x["path"] == "pkg/util.py" for x in r["results"])


def test_locate_pages_with_a_cursor_and_refuses_a_foreign_one(q: Q) -> None:
    whole = q.op("locate", query="n", limit=50)
    assert "truncated" not in whole
    keys = [x["key"] for x in whole["results"]]
    assert len(keys) >= 3
    first = q.op("locate", query="n", limit=2)
    cut = first["truncated"]
    assert cut["bound"] == "limit" and cut["shown"] == 2
    got = [x["key"] for x in first["results"]]
    cursor = cut["cursor"]
    while cursor:
        page = q.op("locate", query="n", limit=2, cursor=cursor)
        got += [x["key"] for x in page["results"]]
        cursor = page.get("truncated", {}).get("cursor")
    assert got == keys
    with pytest.raises(BadRequest, match="another request"):
        q.op("locate", query="other", limit=2, cursor=cut["cursor"])
    with pytest.raises(BadRequest, match="malformed"):
        q.op("locate", query="n", cursor="!!!")


# -- symbol arguments ---------------------------------------------------------------------------------


def test_ambiguous_name_lists_ranked_candidates(q: Q) -> None:
    with pytest.raises(Ambiguous) as err:
        q.op("show", symbol="run")
    cands = err.value.data["candidates"]
    assert [c["key"] for c in cands] == ["py:function:pkg/cli.py:run", "py:method:pkg/app.py:Base.run"]
    assert err.value.data["total"] == 2 and all({"id", "key", "kind", "path", "line"} <= set(c) for c in cands)
    # any exact spelling picks one
    sid = cands[1]["id"]
    for arg in (sid, "py:method:pkg/app.py:Base.run", "Base.run", "pkg/app.py:Base.run"):
        assert q.op("show", symbol=arg)["node"]["id"] == sid
    with pytest.raises(NotFound):
        q.op("show", symbol="no_such_thing")


# -- show ---------------------------------------------------------------------------------------------


def test_show_symbol_file_and_id(q: Q) -> None:
    r = q.op("show", symbol="Base")
    assert r["node"]["kind"] == "class" and r["container"]["kind"] == "file"
    assert [m["name"] for m in r["members"]] == ["run", "step"]
    step = q.op("show", symbol="Base.step")
    assert step["container"]["key"] == "py:class:pkg/app.py:Base" and step["node"]["callees"] == 1
    f = q.op("show", path="pkg/util.py")
    assert f["node"]["kind"] == "file" and f["node"]["language"] == "python"
    assert [m["name"] for m in f["members"]] == ["helper", "normalize", "normalizeParams", "normalize_params"]
    assert f["importers"] >= 3
    assert q.op("show", id=f["node"]["id"])["node"]["path"] == "pkg/util.py"
    with pytest.raises(BadRequest):
        q.op("show", symbol="helper", path="pkg/util.py")


def test_snippet_is_verified_against_the_indexed_hash(fresh: Q) -> None:
    r = fresh.op("show", symbol="helper", snippet=True)
    snip = r["snippet"]
    assert snip["verified"] and snip["text"].startswith("def helper(x):") and snip["endLine"] == 3
    util = fresh.repo / "pkg/util.py"
    util.write_text("# edited\n" + util.read_text())  # not synced: the graph still has the old lines
    r = fresh.op("show", symbol="helper", snippet=True)
    assert r["snippet"]["verified"] is False and r["snippet"]["text"] is None
    assert "changed on disk" in r["snippet"]["reason"]
    fresh.c.request("sync", {"repo": str(fresh.repo)}, timeout=60)
    r = fresh.op("show", symbol="helper", snippet=True)
    assert r["snippet"]["verified"] and r["snippet"]["startLine"] == 2 and r["graphVersion"] == 2


def test_paths_outside_the_root_are_forbidden(fresh: Q) -> None:
    for bad in ("../outside.py", "/etc/passwd", "pkg/../../x.py"):
        with pytest.raises(Forbidden):
            fresh.op("show", path=bad)
    os.symlink("/etc", fresh.repo / "etc-link")
    try:
        with pytest.raises(Forbidden):
            fresh.op("show", path="etc-link/passwd")
        with pytest.raises(Forbidden):
            fresh.op("importers", path="../x.py")
    finally:
        (fresh.repo / "etc-link").unlink()
    with pytest.raises(NotFound):
        fresh.op("show", path="pkg/missing.py")


# -- impact -------------------------------------------------------------------------------------------


def test_impact_paths_via_confidence_and_completeness(q: Q) -> None:
    one = q.op("impact", symbol="normalize", depth=1)
    assert one["completeness"] == "complete" and one["unresolvedInScope"] == 0 and one["total"] == 1
    r = q.op("impact", symbol="normalize")
    # at depth 2 the walk asks for helper's callers, and `registry.lookup().helper(2)` may be one of them
    assert r["completeness"] == "lower_bound" and r["unresolvedInScope"] == 1
    assert r["unresolvedExamples"][0]["in"] == "py:function:pkg/plugins.py:call_through"
    assert r["total"] == len(r["callers"]) == 4 and r["byDepth"] == {"1": 1, "2": 2, "3": 1}
    assert [c["key"] for c in r["callers"]][0] == HELPER
    rows = {c["key"]: c for c in q.op("impact", symbol="normalize", depth=4)["callers"]}
    go = rows["py:method:pkg/app.py:App.go"]
    assert go["depth"] == 4 and go["via"] == "py:method:pkg/app.py:Base.run"
    assert go["callPath"] == [
        "py:method:pkg/app.py:App.go", "py:method:pkg/app.py:Base.run", "py:method:pkg/app.py:Base.step",
        HELPER, "py:function:pkg/util.py:normalize",
    ]  # fmt: skip
    assert go["confidence"] == pytest.approx(0.9 * 0.95 * 0.95 * 1.0, abs=1e-4)
    assert rows[HELPER]["depth"] == 1 and rows[HELPER]["via"] == "py:function:pkg/util.py:normalize"
    deeper = q.op("impact", symbol="normalize", depth=6)
    assert deeper["total"] == 7  # ... App.go (4), main (5), test_main (6)
    assert deeper["testCallers"] == 1


def test_impact_is_a_lower_bound_when_unresolved_calls_could_hide_callers(q: Q) -> None:
    r = q.op("impact", symbol="helper")
    # pkg/plugins.py imports pkg.util and calls `registry.lookup().helper(2)`, which nothing resolved
    assert r["completeness"] == "lower_bound" and r["unresolvedInScope"] == 1
    assert r["unresolvedExamples"] == [{"in": "py:function:pkg/plugins.py:call_through", "call": "registry.lookup().helper",
                                        "path": "pkg/plugins.py", "line": 5}]  # fmt: skip


def test_impact_total_beside_the_page(q: Q) -> None:
    r = q.op("impact", symbol="normalize", limit=2)
    assert r["total"] == 4 and len(r["callers"]) == 2
    assert r["truncated"]["remaining"] == 2
    nxt = q.op("impact", symbol="normalize", limit=2, cursor=r["truncated"]["cursor"])
    assert [c["key"] for c in nxt["callers"]] != [c["key"] for c in r["callers"]]


# -- context, neighbors, paths, imports -----------------------------------------------------------------


def test_context_items_say_why_and_fit_the_budget(q: Q) -> None:
    r = q.op("context", symbol="Base.step", depth=2)
    whys = [i["why"] for i in r["items"]]
    assert whys[0] == "container of this symbol"
    assert "caller at depth 1 (receiver, 0.95)" in whys and "callee at depth 1 (import-bound, 0.95)" in whys
    assert any(w.startswith("caller at depth 2") for w in whys)
    assert any(i["relation"] == "import" for i in r["items"])
    assert "characters / 4" in r["budget"]["note"] and r["budget"]["used"] <= r["budget"]["tokens"]
    small = q.op("context", symbol="Base.step", depth=2, budget=100)
    cut = small["truncated"]
    assert cut["bound"] == "budget" and cut["remaining"] == small["total"] - len(small["items"])
    rest = q.op("context", symbol="Base.step", depth=2, budget=100, cursor=cut["cursor"])
    assert rest["items"][0] == r["items"][len(small["items"])]


def test_neighbors_by_direction_and_kind(q: Q) -> None:
    r = q.op("neighbors", node="Base.step", direction="in", edgeKinds=["calls"])
    assert [(n["key"], n["edge"]["direction"]) for n in r["neighbors"]] == [("py:method:pkg/app.py:Base.run", "in")]
    r = q.op("neighbors", node="Base.step", direction="both", depth=1)
    kinds = {(n["edge"]["kind"], n["edge"]["direction"]) for n in r["neighbors"]}
    assert kinds == {("calls", "in"), ("calls", "out"), ("contains", "in")}
    f = q.op("neighbors", node="pkg/util.py", edgeKinds=["imports"], direction="in")
    assert {n["path"] for n in f["neighbors"]} == {"pkg/__init__.py", "pkg/app.py", "pkg/cli.py", "pkg/plugins.py"}


def test_paths_label_each_hop(q: Q) -> None:
    r = q.op("paths", **{"from": "App.go", "to": "helper"})
    p = r["paths"][0]
    assert p["length"] == 3 and [h["direction"] for h in p["hops"]] == ["out", "out", "out"]
    back = q.op("paths", **{"from": "helper", "to": "App.go"})["paths"][0]
    assert [h["direction"] for h in back["hops"]] == ["in", "in", "in"]
    mixed = q.op("paths", **{"from": "pkg/cli.py:run", "to": "Base.step"})["paths"][0]
    assert [h["direction"] for h in mixed["hops"]] == ["out", "in"]
    none = q.op("paths", **{"from": "normalizeParams", "to": "helper"})
    assert none["paths"] == [] and "no path" in none["none"]


def test_imports_and_importers(q: Q) -> None:
    r = q.op("imports", path="pkg/app.py")
    assert [f["path"] for f in r["files"]] == ["pkg/util.py"] and r["files"][0]["specifier"]
    r = q.op("importers", path="pkg/util.py")
    assert r["total"] == 4


# -- determinism, freshness of cursors, incremental upkeep ---------------------------------------------


@pytest.mark.parametrize(
    "op,args",
    [
        ("locate", {"query": "n"}),
        ("show", {"symbol": "Base"}),
        ("context", {"symbol": "Base.step", "depth": 3}),
        ("neighbors", {"node": "Base.run", "depth": 3}),
        ("impact", {"symbol": "normalize", "depth": 5}),
        ("paths", {"from": "main", "to": "normalize", "maxPaths": 10}),
        ("importers", {"path": "pkg/util.py"}),
    ],
)
def test_same_request_twenty_times_same_bytes(q: Q, op: str, args: dict) -> None:
    answers = {json.dumps(_strip(q.op(op, **args)), sort_keys=False) for _ in range(20)}
    assert len(answers) == 1


def test_cursor_from_an_older_graph_is_refused(fresh: Q) -> None:
    r = fresh.op("locate", query="n", limit=1)
    (fresh.repo / "pkg/extra.py").write_text("def nothing():\n    pass\n")
    fresh.c.request("sync", {"repo": str(fresh.repo)}, timeout=60)
    with pytest.raises(BadRequest, match="graph changed"):
        fresh.op("locate", query="n", limit=1, cursor=r["truncated"]["cursor"])


def test_answers_follow_incremental_syncs(fresh: Q) -> None:
    assert fresh.op("impact", symbol="normalize")["total"] == 4
    util = fresh.repo / "pkg/util.py"
    util.write_text(util.read_text().replace("return normalize(x)", "return x") + "\n\ndef brandNew():\n    return normalize(1)\n")
    fresh.c.request("sync", {"repo": str(fresh.repo)}, timeout=60)
    r = fresh.op("impact", symbol="normalize")
    assert [c["key"] for c in r["callers"]] == ["py:function:pkg/util.py:brandNew"] and r["graphVersion"] == 2
    assert fresh.op("locate", query="brand new")["results"][0]["match"] == "words"
    (fresh.repo / "pkg/plugins.py").unlink()
    fresh.c.request("sync", {"repo": str(fresh.repo)}, timeout=60)
    assert fresh.op("impact", symbol="helper")["completeness"] == "complete"
    assert not fresh.op("locate", query="call_through")["results"]


# -- the CLI ------------------------------------------------------------------------------------------


def test_cli_text_json_and_graph_formats(q: Q) -> None:
    cli = q.daemon.cli
    r = cli("-C", str(q.repo), "locate", "normalize", "params")
    assert r.returncode == 0 and "words" in r.stdout and "normalizeParams" in r.stdout
    r = cli("-C", str(q.repo), "impact", "helper")
    assert r.returncode == 0 and "lower bound: 1 unresolved" in r.stdout
    r = cli("-C", str(q.repo), "impact", "helper", "--json")
    assert json.loads(r.stdout)["total"] == 4
    r = cli("-C", str(q.repo), "impact", "normalize", "--format", "mermaid")
    assert r.stdout.startswith("graph LR") and "-->|same-scope 1.0|" in r.stdout
    r = cli("-C", str(q.repo), "paths", "App.go", "helper", "--format", "dot")
    assert r.stdout.startswith("digraph paths {") and "->" in r.stdout
    r = cli("-C", str(q.repo), "neighbors", "Base.step", "--format", "mermaid")
    assert r.returncode == 0 and '["run"]' in r.stdout and "-->|calls 0.95|" in r.stdout
    r = cli("-C", str(q.repo), "show", "run")
    assert r.returncode == 5 and "py:method:pkg/app.py:Base.run" in r.stderr
    r = cli("-C", str(q.repo), "locate", "n", "--limit", "1")
    cursor = r.stdout.rsplit("--cursor ", 1)[1].strip()
    r2 = cli("-C", str(q.repo), "locate", "n", "--limit", "1", "--cursor", cursor)
    assert r2.returncode == 0 and r2.stdout.splitlines()[0] != r.stdout.splitlines()[0]
    r = cli("-C", str(q.repo), "importers", "pkg/util.py")
    assert "imported by 4 files" in r.stdout
    r = cli("-C", str(q.repo / "pkg"), "show", "--path", "util.py")
    assert r.returncode == 0 and "file pkg/util.py" in r.stdout
