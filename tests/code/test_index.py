"""Cold index and incremental sync on real temp git repositories, checked through the graph itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexusd.errors import NotIndexed
from tests.code.conftest import Graph
from tests.helpers import DaemonProcess, make_repo, pooled_modules

APP = {
    "pkg/__init__.py": "from .util import helper\n",
    "pkg/util.py": 'def helper(x):\n    """Help."""\n    return normalize(x)\n\n\ndef normalize(x):\n    return x\n',
    "pkg/app.py": (
        "from pkg.util import helper\n\n\n"
        "class Base:\n    def run(self):\n        return self.step()\n\n    def step(self):\n        return helper(1)\n\n\n"
        "class App(Base):\n    def go(self):\n        return self.run()\n\n\n"
        "def main():\n    App().go()\n"
    ),
    "README.md": "# demo\n\nSome docs.\n",
    "pyproject.toml": "[project]\nname = 'demo'\n",
    "web/index.ts": "import { fmt } from './fmt';\nexport function show(x: number) { return fmt(x); }\n",
    "web/fmt.ts": "export function fmt(x: number): string { return String(x); }\n",
}


@pytest.fixture
def g(graph_daemon: DaemonProcess, tmp_path: Path) -> Graph:
    repo = make_repo(tmp_path / "demo", APP)
    return Graph(graph_daemon.client(), repo)


def test_cold_index_builds_files_symbols_and_edges(g: Graph) -> None:
    r = g.index()
    assert r["mode"] == "cold" and r["graphVersion"] == 1
    roles = dict(g.q("MATCH (f:File) RETURN f.path, f.role"))
    assert roles["README.md"] == "document" and roles["pyproject.toml"] == "manifest"
    assert roles["pkg/app.py"] == "source"
    calls = g.calls()
    assert ("py:method:pkg/app.py:Base.step", "py:function:pkg/util.py:helper", "import-bound") in calls
    assert ("py:method:pkg/app.py:App.go", "py:method:pkg/app.py:Base.run", "receiver") in calls
    assert ("py:function:pkg/app.py:main", "py:class:pkg/app.py:App", "constructor") in calls
    assert ("ts:function:web/index.ts:show", "ts:function:web/fmt.ts:fmt", "import-bound") in calls
    imports = {tuple(r) for r in g.q("MATCH (a:File)-[e:IMPORTS]->(b:File) RETURN a.path, b.path")}
    assert ("pkg/app.py", "pkg/util.py") in imports and ("web/index.ts", "web/fmt.ts") in imports
    # every edge carries provenance
    for conf, res in g.q("MATCH ()-[e:POSSIBLY_CALLS]->() RETURN e.confidence, e.resolution"):
        assert 0 < conf <= 1 and res
    members = g.q(
        "MATCH (c:Symbol {key: 'py:class:pkg/app.py:Base'})-[:CONTAINS]->(m:Symbol) RETURN m.name ORDER BY m.name"
    )
    assert [m[0] for m in members] == ["run", "step"]


def test_second_sync_writes_nothing(g: Graph) -> None:
    g.index()
    r = g.sync()
    assert r["mode"] == "noop" and r["graphVersion"] == 1 and r["parsed"] == 0


def test_content_hashes_are_fixed_width_in_the_graph_and_hex_everywhere_else(g: Graph) -> None:
    """File.hash and Symbol.contentHash are stored as UUIDs (a string SET made every later checkpoint slower,
    `schema.stored_hash`); they read back as the 32 hex digits of `content_hash`, so a file whose mtime moved
    but whose bytes did not is recognised as unchanged, and `show` prints the same digest."""
    from nexusd.parse.extract import extract
    from nexusd.parse.facts import content_hash

    g.index()
    types = {table: {row[1]: row[2] for row in g.q(f"CALL table_info('{table}') RETURN *")} for table in ("File", "Symbol")}
    assert types["File"]["hash"] == "UUID" and types["Symbol"]["contentHash"] == "UUID"
    util = g.repo / "pkg/util.py"
    data = util.read_bytes()
    assert g.q("MATCH (f:File {path: 'pkg/util.py'}) RETURN f.hash") == [[content_hash(data)]]
    facts = extract("pkg/util.py", data)
    want = {s.qualified_name: facts.symbol_hash(i) for i, s in enumerate(facts.symbols)}
    got = dict(g.q("MATCH (s:Symbol) WHERE s.path = 'pkg/util.py' RETURN s.qualifiedName, s.contentHash"))
    assert got == want
    shown = g.c.request("show", {"repo": str(g.repo), "path": "pkg/util.py"})
    assert shown["node"]["hash"] == content_hash(data)
    util.write_bytes(data)  # same bytes, a new mtime
    r = g.sync()
    assert r["parsed"] == 0


def test_a_hash_the_graph_cannot_hold_is_stored_as_none() -> None:
    """Kuzu 0.11.3 keeps the all-zero UUID as INT128_MIN and then fails every later COPY into its table."""
    from nexusd.schema import hash_text, stored_hash

    digest = "0123456789abcdef0123456789abcdef"
    assert hash_text(stored_hash(digest)) == digest
    for bad in ("", None, "0" * 32, "xyz", "g" * 32, digest + "00"):
        assert stored_hash(bad) is None
    assert hash_text(None) == ""


def test_the_cold_writes_hash_text_is_the_uuid_a_statement_binds() -> None:
    """The cold write prints content hashes into its CSV itself (`stored_hash_csv`); the text must be what the
    UUID `stored_hash` makes would print, for every input, and empty where that is None."""
    from nexusd.schema import stored_hash, stored_hash_csv

    digest = "0123456789abcdef0123456789abcdef"
    for text in (digest, digest.upper(), "", None, "0" * 32, "xyz", "g" * 32, digest + "00", "skipped:binary",
                 "0123456789abcdef0123456789abcde ", "+123456789abcdef0123456789abcdef"):  # fmt: skip
        value = stored_hash(text)
        assert stored_hash_csv(text) == ("" if value is None else str(value)), text


def test_a_binary_file_is_not_read_again_after_a_restart(graph_daemon: DaemonProcess, tmp_path: Path) -> None:
    """A file skipped for good (binary, too large) keeps a marker hash, stored as a UUID like the digests
    (`schema.SKIP_MARKERS`): after a restart the graph's marker still lets a matching stat clear it, so the
    catch-up sync reads nothing and builds nothing."""
    from nexusd.schema import hash_text, stored_hash

    for marker in ("skipped:binary", "skipped:too-large"):
        assert hash_text(stored_hash(marker)) == marker
    repo = make_repo(tmp_path / "demo", APP)
    (repo / "pkg/blob.py").write_bytes(b"x = 1\n\x00\x01\x02" * 100)
    with graph_daemon.client() as c:
        c.request("index", {"repo": str(repo)}, timeout=120)
    graph_daemon.stop()
    again = DaemonProcess(home=graph_daemon.home).start()
    try:
        with again.client() as c:
            c.request("sync", {"repo": str(repo)}, timeout=120)
            status = c.request("status", {"repo": str(repo)})["repos"][0]
            assert status["graphVersion"] == 1, status["lastBuild"]
            rows = c.request("debug.cypher", {"query": "MATCH (f:File {path: 'pkg/blob.py'}) RETURN f.diagnostics"})
            assert "binary" in rows["rows"][0][0]
    finally:
        again.cleanup()


def test_insert_line_above_keeps_ids(g: Graph) -> None:
    g.index()
    before = g.symbols()
    path = g.repo / "pkg/util.py"
    path.write_text("# a new comment line\n\n" + path.read_text())
    r = g.sync()  # the watcher may have synced first: either way the change is in when sync returns
    assert r["graphVersion"] >= 2
    assert g.symbols() == before
    line = g.q("MATCH (s:Symbol {key: 'py:function:pkg/util.py:helper'}) RETURN s.startLine")[0][0]
    assert line == 3
    assert ("py:method:pkg/app.py:Base.step", "py:function:pkg/util.py:helper", "import-bound") in g.calls()


def test_lines_added_above_calls_move_their_edges_in_place(g: Graph) -> None:
    """A call or import whose line moved keeps its edge (`graphwrite._diff_edges`: set in place, not deleted and
    made again, so the edit needs no checkpoint before it): the same edges, by Kuzu's own ids, at the new lines.
    Symbols and calls that moved by the same lines move in one statement per group (`Diff.moved_symbols`,
    `Diff.moved_calls`), and end where the file's extraction puts them."""
    from nexusd.parse.extract import extract

    g.index()
    query = (
        "MATCH (a:Symbol)-[e:POSSIBLY_CALLS]->(b:Symbol) WHERE a.path = 'pkg/app.py' "
        "RETURN a.key, b.key, e.line, e.resolution, ID(e) ORDER BY a.key, b.key"
    )
    before = g.q(query)
    imports = "MATCH (a:File {path: 'pkg/app.py'})-[e:IMPORTS]->(b:File) RETURN b.path, e.line, ID(e)"
    imported = g.q(imports)
    lines = "MATCH (s:Symbol) WHERE s.path = 'pkg/app.py' RETURN s.key, s.startLine, s.endLine ORDER BY s.key"
    placed = g.q(lines)
    assert before and imported and any(k.endswith("Base.run") for k, _s, _e in placed)  # (a nested symbol too)
    app = g.repo / "pkg/app.py"
    app.write_text("# one\n# two\n" + app.read_text())
    g.sync()
    after = g.q(query)
    assert [[a, b, line + 2, how, eid] for a, b, line, how, eid in before] == after
    assert [[path, line + 2, eid] for path, line, eid in imported] == g.q(imports)
    assert [[k, start + 2, end + 2] for k, start, end in placed if ":<module>" not in k] == [
        row for row in g.q(lines) if ":<module>" not in row[0]]  # (the module still starts at line 1)
    # A line added inside a function moves its own end and what follows, not what comes before it.
    text = app.read_text().replace("    def step(self):", "    def step(self):\n        pass", 1)
    app.write_text(text)
    g.sync()
    facts = {s.qualified_name: (s.start_line, s.end_line) for s in extract("pkg/app.py", text.encode()).symbols}
    got = {k.rsplit(":", 1)[1]: (start, end) for k, start, end in g.q(lines)}
    assert got == facts
    edges = [row[:4] for row in g.q(query)]
    g.index(full=True)  # the graph a cold build makes of the same files: the moves left the same lines
    assert [row[:4] for row in g.q(query)] == edges


def test_lines_added_above_leave_the_stored_unresolved_sites_as_they_were(g: Graph) -> None:
    """The graph keeps an unresolved site's line relative to its symbol's start (`resolve.base.graph_entry`):
    an edit above the symbol sets only its integer line columns (Kuzu writes a string column's chunk again,
    with every value it held, at the checkpoint after a SET of one). Answers still give the absolute line."""
    mod = g.repo / "pkg/mod.py"
    mod.write_text("def launch(x):\n    y = x + 1\n    return mystery(y)\n")
    g.index()
    key = "py:function:pkg/mod.py:launch"
    stored = g.unresolved(key)
    assert stored == ["mystery@+2"]
    scope = {"repo": str(g.repo), "symbol": "launch"}
    assert g.c.request("show", scope)["unresolved"] == ["mystery@3"]
    mod.write_text("import os\n\n\n" + mod.read_text())
    g.sync()
    assert g.q("MATCH (s:Symbol {key: $k}) RETURN s.startLine", k=key) == [[4]]
    assert g.unresolved(key) == stored
    assert g.c.request("show", scope)["unresolved"] == ["mystery@6"]


def test_an_incremental_build_summary_reaches_the_graph_at_most_every_few_minutes(g: Graph) -> None:
    """`repos.record_build`: every build sets the graph version and time (numbers, in place); the summary, a
    string whose every value Kuzu keeps in the column's chunk, is written for a cold build and then at most every
    `SUMMARY_EVERY_S`. `status` shows the newest summary all the same."""
    g.index()

    def stored() -> tuple[str, int]:
        summary, version = g.q("MATCH (r:Repository) RETURN r.lastBuild, r.graphVersion")[0]
        return json.loads(summary)["mode"], version

    assert stored() == ("cold", 1)
    util = g.repo / "pkg/util.py"
    util.write_text(util.read_text() + "\n\ndef extra():\n    return 2\n")
    g.sync()
    status = g.c.request("status", {"repo": str(g.repo)})["repos"][0]
    assert status["lastBuild"]["mode"] == "incremental" and status["graphVersion"] == 2
    assert stored() == ("cold", 2)


def test_rename_function_re_resolves_callers(g: Graph) -> None:
    g.index()
    util = g.repo / "pkg/util.py"
    util.write_text(util.read_text().replace("def helper(", "def assist("))
    g.sync()
    assert not any(dst == "py:function:pkg/util.py:helper" for _, dst, _ in g.calls())
    assert "py:function:pkg/util.py:assist" in g.symbols()
    # the caller still says `helper`, which now resolves to nothing: a raw string, not a guessed edge
    assert any("helper" in u for u in g.unresolved("py:method:pkg/app.py:Base.step")), (
        g.q("MATCH (s:Symbol) RETURN s.key, s.unresolved"), g.calls())
    app = g.repo / "pkg/app.py"
    app.write_text(app.read_text().replace("helper", "assist"))
    g.sync()
    assert ("py:method:pkg/app.py:Base.step", "py:function:pkg/util.py:assist", "import-bound") in g.calls()


def test_delete_file_removes_symbols_and_edges(g: Graph) -> None:
    g.index()
    (g.repo / "pkg/util.py").unlink()
    g.sync()
    assert not g.q("MATCH (s:Symbol) WHERE s.path = 'pkg/util.py' RETURN s.id")
    assert not g.q("MATCH (f:File {path: 'pkg/util.py'}) RETURN f.id")
    assert not any("pkg/util.py" in dst for _, dst, _ in g.calls())
    assert any("helper" in u for u in g.unresolved("py:method:pkg/app.py:Base.step"))


def test_move_function_between_files(g: Graph) -> None:
    g.index()
    (g.repo / "pkg/util.py").write_text("from pkg.extra import helper\n")
    (g.repo / "pkg/extra.py").write_text('def helper(x):\n    """Moved."""\n    return x\n')
    g.sync()
    calls = g.calls()
    assert ("py:method:pkg/app.py:Base.step", "py:function:pkg/extra.py:helper", "import-bound") in calls
    assert "py:function:pkg/util.py:helper" not in g.symbols()


def test_syntax_error_file_is_indexed_with_diagnostic(g: Graph) -> None:
    g.index()
    (g.repo / "pkg/broken.py").write_text("def ok():\n    return 1\n\ndef broken(:\n    pass\n")
    g.sync()
    diags = g.q("MATCH (f:File {path: 'pkg/broken.py'}) RETURN f.diagnostics")[0][0]
    assert "syntax-error" in diags
    assert "py:function:pkg/broken.py:ok" in g.symbols()
    status = g.c.request("status", {"repo": str(g.repo)})
    assert any(d["path"] == "pkg/broken.py" for d in status["repos"][0]["diagnostics"])


def test_status_and_repos(g: Graph) -> None:
    g.index()
    s = g.c.request("status", {"repo": str(g.repo)})["repos"][0]
    assert s["availability"] == "ready" and s["lastBuild"]["outcome"] == "ok"
    assert s["files"] == len(APP) and s["symbols"] > 5
    assert set(s["edges"]["calls"]) >= {"import-bound", "receiver"}
    assert s["graphVersion"] == 1 and s["next"] == "none"
    repos = g.c.request("repos")["repos"]
    assert [r["root"] for r in repos] == [str(g.repo.resolve())]


def test_unregistered_repo_is_not_indexed(g: Graph, tmp_path: Path) -> None:
    with pytest.raises(NotIndexed):
        g.c.request("sync", {"repo": str(tmp_path)})


def test_forget_repository(g: Graph) -> None:
    g.index()
    g.c.request("repo.forget", {"repo": str(g.repo)})
    assert not g.q("MATCH (f:File) RETURN f.id")
    assert g.c.request("repos")["repos"] == []


def test_walk_rules_apply(g: Graph) -> None:
    (g.repo / ".gitignore").write_text("generated/\n")
    (g.repo / "generated").mkdir()
    (g.repo / "generated/out.py").write_text("def gen(): pass\n")
    (g.repo / ".env").write_text("SECRET=hunter2\n")
    (g.repo / "node_modules/x").mkdir(parents=True)
    (g.repo / "node_modules/x/index.js").write_text("function x() {}\n")
    (g.repo / ".github/workflows").mkdir(parents=True)
    (g.repo / ".github/workflows/ci.yml").write_text("on: push\n")
    (g.repo / "pkg/blob.py").write_bytes(b"\x00\x01binary\x00" * 100)
    g.index()
    paths = {p[0] for p in g.q("MATCH (f:File) RETURN f.path")}
    assert ".github/workflows/ci.yml" in paths
    assert not paths & {"generated/out.py", ".env", "node_modules/x/index.js"}
    assert "pkg/blob.py" not in paths or "binary" in g.q("MATCH (f:File {path: 'pkg/blob.py'}) RETURN f.diagnostics")[0][0]


def test_failed_extraction_is_isolated_and_retried(tmp_path: Path) -> None:
    files = {f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(12)}
    repo = make_repo(tmp_path / "r", files)
    d = DaemonProcess(env={"NEXUS_FAULT_EXTRACT": "pkg/m3.py"}).start()
    try:
        g = Graph(d.client(), repo)
        r = g.index()
        assert {"path": "pkg/m3.py", "reason": "extract-failed"} in r["skipped"]
        keys = g.symbols()
        assert "py:function:pkg/m4.py:f4" in keys and "py:function:pkg/m3.py:f3" not in keys
        diag = json.loads(g.q("MATCH (f:File {path: 'pkg/m3.py'}) RETURN f.diagnostics")[0][0])
        assert diag[0]["code"] == "extract-failed"
    finally:
        d.stop()
    # restart without the fault: the failed file is retried and now indexes
    d2 = DaemonProcess(home=d.home).start()
    try:
        g = Graph(d2.client(), repo)
        g.sync()
        assert "py:function:pkg/m3.py:f3" in g.symbols()
    finally:
        d2.cleanup()


def test_hanging_parse_is_killed_and_isolated(tmp_path: Path) -> None:
    files = pooled_modules()  # more than the daemon parses inline: the pool (which a hang cannot stall) runs them
    repo = make_repo(tmp_path / "r", files)
    d = DaemonProcess(env={"NEXUS_FAULT_HANG": "pkg/m5.py", "NEXUS_PARSE_TIMEOUT": "1"}).start()
    try:
        g = Graph(d.client(), repo)
        r = g.index()
        assert {"path": "pkg/m5.py", "reason": "timeout"} in r["skipped"]
        assert "py:function:pkg/m6.py:f6" in g.symbols()
    finally:
        d.cleanup()
