"""A `.gitignore` line git cannot parse (one ending in `\\`) is skipped as git skips it: `index` and
`history.sync` do not fail, the file's other lines still apply, and in a nested `.gitignore` it does not stop
new files from reaching the graph."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import DaemonProcess, make_repo, wait_for

FILES = {
    ".gitignore": "build\\\n*.log\n",
    "pkg/__init__.py": "",
    "pkg/mod.py": "def main():\n    return 1\n",
    "pkg/.gitignore": "trailing\\\nsecret_dir/\n",
    "pkg/sub/a.py": "def a():\n    return 2\n",
    "debug.log": "ignored\n",
    "README.md": "# Title\n\nSome text.\n",
}


def _paths(c: object) -> set[str]:
    rows = c.request("debug.cypher", {"query": "MATCH (f:File) RETURN f.path"})["rows"]  # type: ignore[attr-defined]
    return {r[0] for r in rows}


def test_an_unparsable_gitignore_line_is_skipped(daemon: DaemonProcess, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    (repo / "pkg" / "secret_dir").mkdir()
    (repo / "pkg" / "secret_dir" / "x.py").write_text("def hidden():\n    pass\n")
    scope = {"repo": str(repo), "user": "alice"}
    with daemon.client() as c:
        r = c.request("index", scope, timeout=120)
        assert r["mode"] == "cold"
        paths = _paths(c)
        assert {"pkg/mod.py", "pkg/sub/a.py", "README.md"} <= paths
        assert "debug.log" not in paths  # the line after the bad one still applies
        assert "pkg/secret_dir/x.py" not in paths  # and so does the nested file's other line
        h = c.request("history.sync", scope, timeout=120)
        assert h["counts"]["DocSection"] >= 1

        # Nested: new files under the directory with the bad line still arrive (watcher, then an explicit sync).
        (repo / "pkg" / "new.py").write_text("def fresh():\n    return 3\n")
        (repo / "pkg" / "sub" / "b.py").write_text("def b():\n    return 4\n")
        c.request("sync", scope, timeout=60)
        assert {"pkg/new.py", "pkg/sub/b.py"} <= _paths(c)
        (repo / "pkg" / "sub" / "c.py").write_text("def c():\n    return 5\n")
        wait_for(lambda: "pkg/sub/c.py" in _paths(c), 20, what="the watcher to index pkg/sub/c.py")
        status = c.request("status", scope)["repos"][0]
        assert status["lastBuild"]["outcome"] == "ok"
