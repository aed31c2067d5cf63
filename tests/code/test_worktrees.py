"""Many checkouts, one daemon: the worktrees of one git repository are views of one repository (real `git
worktree add` checkouts, a real daemon)."""

from __future__ import annotations

import getpass
import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from nexusd.repos import repo_id_for
from tests.helpers import DaemonProcess, git, make_repo, wait_for

USER = getpass.getuser()

APP = {
    "pkg/__init__.py": "",
    "pkg/util.py": "def helper(x):\n    return x + 1\n",
    "pkg/app.py": "from pkg.util import helper\n\n\ndef main():\n    return helper(1)\n\n\ndef other():\n    return main()\n",
}


@pytest.fixture
def checkouts(tmp_path: Path) -> tuple[Path, Path, Path]:
    main = make_repo(tmp_path / "main", APP)
    wt1, wt2 = tmp_path / "wt-feature", tmp_path / "wt-review"
    git(main, "worktree", "add", "-q", "-b", "feature", str(wt1))
    git(main, "worktree", "add", "-q", "-b", "review", str(wt2))
    return Path(os.path.realpath(main)), Path(os.path.realpath(wt1)), Path(os.path.realpath(wt2))



def _index_all(c: Any, *roots: Path) -> None:
    """Register and index each checkout, in order (the first is the repository, the others its views)."""
    for root in roots:
        c.request("index", {"repo": str(root), "user": USER}, timeout=120)


def test_worktrees_are_views_of_one_repository(daemon: DaemonProcess, checkouts: tuple[Path, Path, Path]) -> None:
    main, wt1, wt2 = checkouts
    (wt1 / "pkg" / "scratch.py").write_text("x = 1\n")  # untracked: one dirty file in that view only
    c = daemon.client()
    first = c.request("index", {"repo": str(main), "user": USER}, timeout=120)
    assert first["id"] == repo_id_for(main)  # a plain checkout keeps the id it always had
    assert first["mode"] == "cold"
    second = c.request("index", {"repo": str(wt1), "user": USER}, timeout=120)
    assert second["id"] == first["id"]
    assert second["mode"] == "view" and second["written"] == {}  # no second build: a scan against the baseline
    assert second["parsed"] == 1 and second["unchanged"] == 3 and second["overlay"]["files"] == ["pkg/scratch.py"]
    assert second["view"]["root"] == str(wt1) and second["view"]["branch"] == "feature"
    assert second["view"]["primary"] is False
    c.request("index", {"repo": str(wt2), "user": USER}, timeout=120)
    listing = c.request("repos", {"user": USER})["repos"]
    assert len(listing) == 1
    views = listing[0]["views"]
    assert [(v["root"], v["branch"], v["primary"]) for v in views] == [
        (str(main), "main", True), (str(wt1), "feature", False), (str(wt2), "review", False)]  # fmt: skip
    head = git(main, "rev-parse", "HEAD").strip()
    assert all(v["head"] == head for v in views)

    # The CLI picks the view it stands in, with no flag: `nexus repos` shows the views, answers name theirs.
    out = daemon.cli("repos", cwd=wt1)
    assert out.returncode == 0, out.stderr
    assert f"view {wt1}" in out.stdout and f"view {wt2}" in out.stdout
    located = json.loads(daemon.cli("--json", "locate", "helper", cwd=wt1 / "pkg").stdout)
    assert located["view"]["root"] == str(wt1) and located["view"]["dirty"] == 1
    assert "graphVersion" in located and "freshness" in located
    from_main = c.request("locate", {"repo": str(main), "user": USER, "query": "helper"})
    assert from_main["view"]["root"] == str(main) and from_main["view"]["primary"] is True
    assert from_main["view"]["dirty"] == 0


def test_memory_written_in_one_worktree_is_recalled_in_another(
    daemon: DaemonProcess, checkouts: tuple[Path, Path, Path]
) -> None:
    main, wt1, wt2 = checkouts
    c = daemon.client()
    _index_all(c, main, wt1, wt2)
    c.request("remember", {"repo": str(wt1), "user": USER, "text": "the frobnicator needs a warm cache"})
    hits = c.request("recall", {"repo": str(wt2), "user": USER, "query": "frobnicator"})["items"]
    assert [h["text"] for h in hits] == ["the frobnicator needs a warm cache"]
    hits = c.request("recall", {"repo": str(main), "user": USER, "query": "frobnicator"})["items"]
    assert len(hits) == 1
    c.request("handoff.write", {"repo": str(main), "user": USER, "done": "split the parser", "open": "tests"})
    handoff = c.request("handoff.read", {"repo": str(wt2), "user": USER, "peek": True})
    assert handoff["handoff"]["done"] == "split the parser"


def test_history_is_ingested_once_per_repository(daemon: DaemonProcess, checkouts: tuple[Path, Path, Path]) -> None:
    main, wt1, _ = checkouts
    c = daemon.client()
    _index_all(c, main, wt1)
    c.request("history.sync", {"repo": str(main), "user": USER}, timeout=120)
    c.request("history.sync", {"repo": str(wt1), "user": USER}, timeout=120)
    rows = c.request("debug.cypher", {"query": "MATCH (x:Commit) RETURN x.repoId, x.sha", "params": {}})["rows"]
    assert rows == [[repo_id_for(main), git(main, "rev-parse", "HEAD").strip()]]
    for root in (main, wt1):
        out = c.request("history", {"repo": str(root), "user": USER, "target": "pkg/util.py", "patch": False})
        assert [ch["sha"] for ch in out["changes"]] == [rows[0][1]]


def test_removing_a_worktree_drops_its_view_and_keeps_the_repository(
    daemon: DaemonProcess, checkouts: tuple[Path, Path, Path]
) -> None:
    main, wt1, wt2 = checkouts
    c = daemon.client()
    _index_all(c, main, wt1, wt2)
    c.request("remember", {"repo": str(wt1), "user": USER, "text": "kept after the worktree goes"})
    git(main, "worktree", "remove", "--force", str(wt1))
    listing = c.request("repos", {"user": USER})["repos"]
    assert len(listing) == 1
    assert [v["root"] for v in listing[0]["views"]] == [str(main), str(wt2)]
    assert c.request("recall", {"repo": str(main), "user": USER, "query": "worktree"})["items"]
    # `nexus forget` in a worktree drops that view only.
    forgot = c.request("repo.forget", {"repo": str(wt2), "user": USER})
    assert forgot["view"] is True and forgot["forgotten"] == str(wt2)
    listing = c.request("repos", {"user": USER})["repos"]
    assert len(listing) == 1 and [v["root"] for v in listing[0]["views"]] == [str(main)]
    # The views survive a restart (they are in the graph), and a gone one is not brought back.
    c.request("index", {"repo": str(wt2), "user": USER}, timeout=120)
    c.close()
    daemon.stop()
    daemon.start()
    c = daemon.client()
    listing = c.request("repos", {"user": USER})["repos"]
    assert [v["root"] for v in listing[0]["views"]] == [str(main), str(wt2)]
    assert c.request("locate", {"repo": str(wt2), "user": USER, "query": "helper"})["view"]["branch"] == "review"


def test_a_linked_worktree_registered_first_is_the_repository_root(daemon: DaemonProcess, tmp_path: Path) -> None:
    main = make_repo(tmp_path / "m", APP)
    wt = tmp_path / "w"
    git(main, "worktree", "add", "-q", "-b", "w", str(wt))
    c = daemon.client()
    r = c.request("index", {"repo": str(wt), "user": USER}, timeout=120)
    assert r["mode"] == "cold" and r["id"] == repo_id_for(main)  # the repository's id, whichever checkout came first
    r2 = c.request("index", {"repo": str(main), "user": USER}, timeout=120)
    assert r2["id"] == r["id"] and r2["view"]["root"] == os.path.realpath(main)
    # A directory that is not a worktree root (a subfolder, a non-git tree) registers by its path, as before.
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("def a():\n    pass\n")
    r3 = c.request("index", {"repo": str(plain), "user": USER}, timeout=120)
    assert r3["id"] == repo_id_for(plain) and "view" not in r3
    shutil.rmtree(plain)


def test_the_mcp_bridge_answers_from_the_worktree_it_stands_in(
    daemon: DaemonProcess, checkouts: tuple[Path, Path, Path]
) -> None:
    import anyio

    from tests.mcp.conftest import mcp_session

    main, wt1, wt2 = checkouts
    c = daemon.client()
    _index_all(c, main, wt1, wt2)
    c.request("remember", {"repo": str(main), "user": USER, "text": "helper is the hot path"})

    async def calls() -> tuple[Any, Any, Any]:
        async with mcp_session(daemon.env, wt1 / "pkg") as s:
            located = await s.call_tool("locate", {"query": "helper"})
            recalled = await s.call_tool("recall", {"query": "hot path"})
        async with mcp_session(daemon.env, "/", roots=[str(wt2)]) as s:
            via_root = await s.call_tool("locate", {"query": "helper"})
        return located, recalled, via_root

    located, recalled, via_root = anyio.run(calls)
    assert not located.is_error and located.structured_content["view"]["root"] == str(wt1)
    assert located.structured_content["view"]["branch"] == "feature"
    assert not recalled.is_error and recalled.structured_content["items"]
    assert recalled.structured_content["view"]["root"] == str(wt1)  # added by the bridge beside freshness
    assert via_root.structured_content["view"]["root"] == str(wt2)


# -- baseline + overlay: each worktree answers for its own files ----------------------------------------------

EXTRA = {"pkg/extra.py": "from pkg.util import helper\n\n\ndef extra():\n    return helper(2)\n"}


def _names(c: Any, root: Path, query: str) -> set[str]:
    out = c.request("locate", {"repo": str(root), "user": USER, "query": query})
    return {r["name"] for r in out["results"] if r["name"] == query}


def _callers(c: Any, root: Path, symbol: str) -> set[str]:
    out = c.request("impact", {"repo": str(root), "user": USER, "symbol": symbol})
    return {r["name"] for r in out["callers"]}


def test_a_change_in_one_worktree_is_seen_there_only(daemon: DaemonProcess, tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main", {**APP, **EXTRA})
    wt1, wt2 = tmp_path / "wt1", tmp_path / "wt2"
    git(main, "worktree", "add", "-q", "-b", "one", str(wt1))
    git(main, "worktree", "add", "-q", "-b", "two", str(wt2))
    c = daemon.client()
    _index_all(c, main, wt1, wt2)
    # An edit in wt1, with a caller in another file of wt1: visible in wt1, with the cross-file edge.
    (wt1 / "pkg" / "util.py").write_text("def helper(x):\n    return x + 1\n\n\ndef brand_new():\n    return 2\n")
    (wt1 / "pkg" / "app.py").write_text(APP["pkg/app.py"].replace("return helper(1)", "return helper(1) + brand_new()")
                                        .replace("import helper", "import brand_new, helper"))
    r = c.request("sync", {"repo": str(wt1), "user": USER}, timeout=120)
    assert r["view"]["root"] == os.path.realpath(wt1)
    assert r["overlay"]["files"] == ["pkg/app.py", "pkg/util.py"] and r["view"]["overlayFiles"] == 2, r
    assert _names(c, wt1, "brand_new") == {"brand_new"}
    assert _callers(c, wt1, "brand_new") == {"main", "other"}
    assert _callers(c, wt1, "helper") == {"main", "other", "extra"}  # baseline files still call into the overlay
    for root in (main, wt2):
        assert _names(c, root, "brand_new") == set()
    # The baseline's graph is untouched: no File or Symbol of the overlay was written.
    rows = c.request("debug.cypher", {"query": "MATCH (s:Symbol {name: 'brand_new'}) RETURN s.id", "params": {}})
    assert rows["rows"] == []
    # The watcher follows a view by itself (no sync call).
    (wt2 / "pkg" / "watched.py").write_text("def watched_fn():\n    return 3\n")
    wait_for(lambda: _names(c, wt2, "watched_fn") == {"watched_fn"}, what="the watcher's update of wt2's view")
    assert _names(c, wt1, "watched_fn") == set() and _names(c, main, "watched_fn") == set()
    # An edit in the baseline reaches the views whose files are the baseline's, not a view that changed it.
    (main / "pkg" / "extra.py").write_text(EXTRA["pkg/extra.py"] + "\n\ndef from_main():\n    return extra()\n")
    c.request("sync", {"repo": str(main), "user": USER}, timeout=120)
    assert _names(c, main, "from_main") == {"from_main"}
    assert _names(c, wt1, "from_main") == set()  # (wt1's extra.py is the old one: now a file that differs)
    assert _callers(c, wt1, "helper") == {"main", "other", "extra"}
    # A restart scans the views again (overlays live in memory).
    c.close()
    daemon.stop()
    daemon.start()
    c = daemon.client()
    wait_for(lambda: _names(c, wt1, "brand_new") == {"brand_new"} and _names(c, wt2, "watched_fn") == {"watched_fn"},
             what="the views' overlays after a restart (one catch-up job per view)")
    assert _names(c, main, "brand_new") == set()


def test_impact_in_a_worktree_whose_branch_renamed_a_function(daemon: DaemonProcess, tmp_path: Path) -> None:
    from nexus_client import githooks

    main = make_repo(tmp_path / "main", {**APP, **EXTRA})
    wt1, wt2 = tmp_path / "wt1", tmp_path / "wt2"
    git(main, "worktree", "add", "-q", "-b", "rename", str(wt1))
    git(main, "worktree", "add", "-q", "-b", "side", str(wt2))
    c = daemon.client()
    _index_all(c, main, wt1, wt2)
    # Hooks are installed once, in the common git dir, and serve every worktree.
    installed = githooks.install(wt1, c.dirs.hook_spool)
    assert Path(installed["hooksDir"]).resolve() == (main / ".git" / "hooks").resolve()
    (wt1 / "pkg" / "util.py").write_text("def assist(x):\n    return x + 1\n")
    (wt1 / "pkg" / "app.py").write_text(APP["pkg/app.py"].replace("helper", "assist"))
    git(wt1, "commit", "-qam", "rename helper to assist")  # post-commit in wt1: that view moves
    wait_for(lambda: _names(c, wt1, "assist") == {"assist"}, what="the post-commit hook moving wt1's view")
    assert _callers(c, wt1, "assist") == {"main", "other"}  # extra.py (unchanged) still imports the old name
    assert _names(c, wt1, "helper") == set()
    assert _callers(c, main, "helper") == {"main", "other", "extra"}
    assert _names(c, main, "assist") == set() and _names(c, wt2, "assist") == set()
    # post-checkout in wt2 moves wt2 only: it takes the rename branch's files.
    git(wt2, "checkout", "-q", "--detach", "rename")
    wait_for(lambda: _names(c, wt2, "assist") == {"assist"}, what="the post-checkout hook moving wt2's view")
    assert _callers(c, wt2, "assist") == {"main", "other"}
    assert _names(c, main, "assist") == set() and _callers(c, main, "helper") == {"main", "other", "extra"}
    # `git worktree remove` drops that view; the repository and the other views stay.
    git(main, "worktree", "remove", "--force", str(wt2))
    assert [v["root"] for v in c.request("repos", {"user": USER})["repos"][0]["views"]] == [
        os.path.realpath(main), os.path.realpath(wt1)]  # fmt: skip
    assert _names(c, wt1, "assist") == {"assist"}


def test_a_second_worktree_of_a_branch_takes_the_first_ones_facts(daemon: DaemonProcess, tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main", {**APP, **EXTRA})
    wt1, wt2 = tmp_path / "wt1", tmp_path / "wt2"
    git(main, "worktree", "add", "-q", "-b", "task", str(wt1))
    (wt1 / "pkg" / "util.py").write_text("def helper(x):\n    return x + 1\n\n\ndef on_task():\n    return 2\n")
    extra = EXTRA["pkg/extra.py"].replace("import helper", "import helper, on_task")
    (wt1 / "pkg" / "extra.py").write_text(extra + "\n\ndef extra_task():\n    return on_task()\n")
    git(wt1, "commit", "-qam", "task work")
    git(main, "worktree", "add", "-q", "--detach", str(wt2), "task")
    c = daemon.client()
    _index_all(c, main)
    first = c.request("index", {"repo": str(wt1), "user": USER}, timeout=120)
    assert first["parsed"] == 2 and first["shared"] == 0
    second = c.request("index", {"repo": str(wt2), "user": USER}, timeout=120)
    # The same two versions that differ from the baseline: their facts are wt1's, not parsed again.
    assert second["parsed"] == 2 and second["shared"] == 2, second
    assert second["overlay"]["files"] == ["pkg/extra.py", "pkg/util.py"]
    for root in (wt1, wt2):
        assert _callers(c, root, "on_task") == {"extra_task"}
    assert _names(c, main, "on_task") == set()
    # Shared facts are not shared edits: a change in wt1 stays in wt1.
    (wt1 / "pkg" / "util.py").write_text("def helper(x):\n    return x + 1\n\n\ndef on_task_renamed():\n    return 2\n")
    c.request("sync", {"repo": str(wt1), "user": USER}, timeout=120)
    assert _names(c, wt1, "on_task_renamed") == {"on_task_renamed"} and _names(c, wt1, "on_task") == set()
    assert _names(c, wt2, "on_task") == {"on_task"} and _names(c, wt2, "on_task_renamed") == set()


def test_show_context_and_status_answer_for_the_worktree_they_are_asked_from(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    main = make_repo(tmp_path / "main", {**APP, **EXTRA})
    wt = tmp_path / "wt"
    git(main, "worktree", "add", "-q", "-b", "docs", str(wt))
    wt = Path(os.path.realpath(wt))
    c = daemon.client()
    _index_all(c, main, wt)
    base = c.request("status", {"repo": str(main), "user": USER})["repos"][0]
    # The view's util.py: a new doc string, a new function, one more line; and a file that does not parse.
    (wt / "pkg" / "util.py").write_text(
        'def helper(x):\n    """Adds one, in the docs branch."""\n    return x + 1\n\n\ndef in_docs():\n    return 0\n'
    )
    (wt / "pkg" / "broken.py").write_text("def broken(:\n    pass\n")
    c.request("sync", {"repo": str(wt), "user": USER}, timeout=120)
    shown = c.request("show", {"repo": str(wt), "user": USER, "symbol": "helper", "snippet": True})
    assert shown["snippet"]["verified"] is True, shown["snippet"]  # the view's bytes, checked against the view's hash
    assert "in the docs branch" in shown["snippet"]["text"]
    assert shown["node"]["doc"] == "Adds one, in the docs branch."
    assert shown["view"]["root"] == str(wt)
    in_main = c.request("show", {"repo": str(main), "user": USER, "symbol": "helper", "snippet": True})
    assert in_main["snippet"]["verified"] is True and "docs branch" not in in_main["snippet"]["text"]
    assert in_main["node"]["doc"] == ""
    # A path inside the worktree (absolute) names the view's file; its row is the view's.
    as_file = c.request("show", {"repo": str(wt), "user": USER, "path": str(wt / "pkg" / "util.py"), "snippet": True})
    assert as_file["node"]["lineCount"] == 7 and as_file["snippet"]["verified"] is True
    ctx = c.request("context", {"repo": str(wt), "user": USER, "symbol": "helper"})
    assert ctx["symbol"]["doc"] == "Adds one, in the docs branch."
    # status asked from the worktree: the view's counts, diagnostics and dirty files; the baseline's stay.
    st = c.request("status", {"repo": str(wt), "user": USER})["repos"][0]
    assert st["root"] == str(wt) and st["repository"] == str(main)
    assert st["view"]["dirty"] == 2
    assert _names(c, wt, "broken") == {"broken"}
    assert st["files"] == base["files"] + 1
    assert st["symbols"] == base["symbols"] + 3  # in_docs; broken.py's module and its function
    assert st["filesWithDiagnostics"] == base["filesWithDiagnostics"] + 1
    assert "pkg/broken.py" in {d["path"] for d in st["diagnostics"]}
    again = c.request("status", {"repo": str(main), "user": USER})["repos"][0]
    assert (again["files"], again["symbols"], again["filesWithDiagnostics"]) == (
        base["files"], base["symbols"], base["filesWithDiagnostics"])  # fmt: skip
    out = daemon.cli("status", cwd=wt)
    assert out.returncode == 0 and f"worktree of {main}" in out.stdout, out.stdout + out.stderr


def _paths(c: Any) -> set[str]:
    rows = c.request("debug.cypher", {"query": "MATCH (f:File) RETURN f.path", "params": {}})["rows"]
    return {r[0] for r in rows}


def test_a_worktree_inside_the_root_is_not_walked_by_the_baseline(daemon: DaemonProcess, tmp_path: Path) -> None:
    main = Path(os.path.realpath(make_repo(tmp_path / "main", APP)))
    nested = main / ".worktrees" / "task"
    git(main, "worktree", "add", "-q", "-b", "task", str(nested))
    (nested / "pkg" / "util.py").write_text("def helper(x):\n    return x + 1\n\n\ndef nested_only():\n    return 0\n")
    c = daemon.client()
    first = c.request("index", {"repo": str(main), "user": USER}, timeout=120)
    assert first["mode"] == "cold"
    assert _paths(c) == set(APP)  # not .worktrees/task/...: that checkout is a view of its own
    assert {"path": ".worktrees/task", "reason": "worktree"} in first["skipped"]
    view = c.request("index", {"repo": str(nested), "user": USER}, timeout=120)
    assert view["mode"] == "view" and view["overlay"]["files"] == ["pkg/util.py"]
    assert _names(c, nested, "nested_only") == {"nested_only"} and _names(c, main, "nested_only") == set()
    # The watcher of the root leaves the nested checkout's edits to that view.
    (nested / "pkg" / "more.py").write_text("def more_nested():\n    return 1\n")
    wait_for(lambda: _names(c, nested, "more_nested") == {"more_nested"}, what="the nested view's watcher")
    c.request("sync", {"repo": str(main), "user": USER}, timeout=120)
    assert _paths(c) == set(APP) and _names(c, main, "more_nested") == set()


def test_a_worktrees_branch_commits_are_ingested_for_its_head(
    daemon: DaemonProcess, checkouts: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    main, wt1, _ = checkouts
    c = daemon.client()
    _index_all(c, main, wt1)
    (wt1 / "pkg" / "util.py").write_text("def helper(x):\n    return x + 2\n")
    # A minute after main's commit: made within the same second, the two would tie in the history's order.
    later = f"@{int(git(main, 'log', '-1', '--format=%ct').strip()) + 60} +0000"
    monkeypatch.setenv("GIT_COMMITTER_DATE", later)
    git(wt1, "commit", "-qam", "helper adds two on the feature branch", f"--date={later}")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    task_sha = git(wt1, "rev-parse", "HEAD").strip()
    main_sha = git(main, "rev-parse", "HEAD").strip()
    out = c.request("history.sync", {"repo": str(main), "user": USER}, timeout=120)
    assert out["git"]["views"] == {str(wt1): {"read": 1, "commits": 1}}
    rows = c.request("debug.cypher", {"query": "MATCH (x:Commit) RETURN x.sha", "params": {}})["rows"]
    assert sorted(r[0] for r in rows) == sorted([main_sha, task_sha])  # once each, the branch's not yet on main
    cursor = c.request("debug.cypher", {"query": "MATCH (r:Repository) RETURN r.historyCursor", "params": {}})["rows"]
    assert cursor == [[main_sha]]  # the cursor stays the root's
    changes = c.request("history", {"repo": str(wt1), "user": USER, "target": "pkg/util.py", "patch": False})
    assert [ch["sha"] for ch in changes["changes"]] == [task_sha, main_sha]
    again = c.request("history.sync", {"repo": str(wt1), "user": USER}, timeout=120)
    assert again["git"]["views"] == {str(wt1): {"read": 1, "commits": 0}}  # stored once
    # A new commit on main (a rewrite-free move of the root) keeps the branch's commit: its worktree reaches it.
    (main / "pkg" / "app.py").write_text(APP["pkg/app.py"] + "\n\ndef later():\n    return 0\n")
    git(main, "commit", "-qam", "later on main")
    c.request("history.sync", {"repo": str(main), "user": USER}, timeout=120)
    rows = c.request("debug.cypher", {"query": "MATCH (x:Commit) RETURN x.sha", "params": {}})["rows"]
    assert task_sha in {r[0] for r in rows} and len(rows) == 3


def _recalled(c: Any, root: Path, query: str) -> dict[str, Any]:
    items = c.request("recall", {"repo": str(root), "user": USER, "query": query, "peek": True})["items"]
    assert len(items) == 1, items
    return dict(items[0])


def _shown_memory(c: Any, root: Path, symbol: str) -> list[dict[str, Any]]:
    return list(c.request("show", {"repo": str(root), "user": USER, "symbol": symbol})["memory"])


def test_a_fact_about_a_symbol_only_one_worktree_has_says_so(daemon: DaemonProcess, tmp_path: Path) -> None:
    main = Path(os.path.realpath(make_repo(tmp_path / "main", APP)))
    wt = tmp_path / "wt"
    git(main, "worktree", "add", "-q", "-b", "task", str(wt))
    wt = Path(os.path.realpath(wt))
    c = daemon.client()
    _index_all(c, main, wt)
    util = APP["pkg/util.py"]
    (wt / "pkg" / "util.py").write_text(util + "\n\ndef only_here():\n    return 1\n")
    c.request("sync", {"repo": str(wt), "user": USER}, timeout=120)
    made = c.request("remember", {"repo": str(wt), "user": USER, "text": "only_here is the task's entry point",
                                  "about": "only_here"})  # fmt: skip
    assert made["created"] and made["symbol"]["name"] == "only_here"
    c.request("remember", {"repo": str(main), "user": USER, "text": "helper must stay pure", "about": "helper"})
    # Recalled anywhere (memory is the repository's), marked as that worktree's only.
    for root in (main, wt):
        fact = _recalled(c, root, "entry point")
        assert fact["status"] == "current" and fact["viewOnly"] == [str(wt)], fact
    [shown] = _shown_memory(c, wt, "only_here")
    assert shown["status"] == "current" and shown["viewOnly"] == [str(wt)]
    assert "viewOnly" not in _recalled(c, main, "pure")
    # Staleness is checked against the view: helper changed in the worktree only.
    (wt / "pkg" / "util.py").write_text(util.replace("x + 1", "x + 100") + "\n\ndef only_here():\n    return 2\n")
    c.request("sync", {"repo": str(wt), "user": USER}, timeout=120)
    assert [m["status"] for m in _shown_memory(c, wt, "helper")] == ["stale"]
    assert [m["status"] for m in _shown_memory(c, main, "helper")] == ["current"]
    assert _recalled(c, wt, "pure")["status"] == "stale" and _recalled(c, main, "pure")["status"] == "current"
    assert _recalled(c, wt, "entry point")["status"] == "stale"  # only_here's body changed in its view
    # The view drops the symbol: the fact is orphaned, no longer a view's.
    (wt / "pkg" / "util.py").write_text(util)
    c.request("sync", {"repo": str(wt), "user": USER}, timeout=120)
    fact = _recalled(c, main, "entry point")
    assert fact["status"] == "orphaned" and "viewOnly" not in fact, fact


# -- what a view's scan and a baseline batch cost ---------------------------------------------------------------


def test_a_baseline_batch_rebases_only_the_views_it_can_move(daemon: DaemonProcess, tmp_path: Path) -> None:
    main = Path(os.path.realpath(make_repo(tmp_path / "main", {**APP, **EXTRA})))
    wt1, wt2 = tmp_path / "wt1", tmp_path / "wt2"
    git(main, "worktree", "add", "-q", "-b", "own-util", str(wt1))
    git(main, "worktree", "add", "-q", "-b", "same", str(wt2))
    wt1, wt2 = Path(os.path.realpath(wt1)), Path(os.path.realpath(wt2))
    util = APP["pkg/util.py"]
    (wt1 / "pkg" / "util.py").write_text(util + "\n\ndef on_task():\n    return 2\n")
    git(wt1, "commit", "-qam", "on_task")
    c = daemon.client()
    _index_all(c, main, wt1, wt2)
    # main's util.py gains a function nobody calls: wt1 has its own util.py (the batch's only path), so its
    # overlay stays; wt2 had main's old util.py, which is now a file that differs there.
    (main / "pkg" / "util.py").write_text(util + "\n\ndef from_main():\n    return 3\n")
    r = c.request("sync", {"repo": str(main), "user": USER}, timeout=120)
    assert r["viewsRebased"] == [str(wt2)], r
    assert _names(c, main, "from_main") == {"from_main"}
    for root in (wt1, wt2):
        assert _names(c, root, "from_main") == set()
        assert _callers(c, root, "helper") == {"main", "other", "extra"}
    assert _names(c, wt1, "on_task") == {"on_task"} and _names(c, wt2, "on_task") == set()
    # A file wt1 holds main's version of: both views move, and both keep the version they have.
    app = APP["pkg/app.py"].replace("import helper", "import from_main, helper")
    (main / "pkg" / "app.py").write_text(app + "\n\ndef app_main_only():\n    return from_main()\n")
    r = c.request("sync", {"repo": str(main), "user": USER}, timeout=120)
    assert sorted(r["viewsRebased"]) == sorted([str(wt1), str(wt2)]), r
    assert _callers(c, main, "from_main") == {"app_main_only"}
    for root in (wt1, wt2):
        assert _names(c, root, "app_main_only") == set() and _callers(c, root, "main") == {"other"}
    # util.py is now both views' own: a change inside it that moves no other file's edges moves no view.
    (main / "pkg" / "util.py").write_text(util.replace("x + 1", "x + 10") + "\n\ndef from_main():\n    return 3\n")
    r = c.request("sync", {"repo": str(main), "user": USER}, timeout=120)
    assert r["viewsRebased"] == [], r
    # main renames helper: extra.py, which neither view holds, now resolves differently in main; both move,
    # and in both extra.py still calls the view's helper.
    (main / "pkg" / "util.py").write_text(util.replace("helper", "helper2") + "\n\ndef from_main():\n    return 3\n")
    r = c.request("sync", {"repo": str(main), "user": USER}, timeout=120)
    assert sorted(r["viewsRebased"]) == sorted([str(wt1), str(wt2)]), r
    assert _names(c, main, "helper") == set()
    for root in (wt1, wt2):
        assert _callers(c, root, "helper") == {"main", "other", "extra"}
    assert _names(c, wt1, "on_task") == {"on_task"}


def test_a_views_docs_and_data_files_take_no_parser(daemon: DaemonProcess, tmp_path: Path) -> None:
    main = Path(os.path.realpath(make_repo(tmp_path / "main", {**APP, "README.md": "# app\n", "conf.yaml": "a: 1\n"})))
    wt = tmp_path / "wt"
    git(main, "worktree", "add", "-q", "-b", "docs", str(wt))
    wt = Path(os.path.realpath(wt))
    (wt / "README.md").write_text("# app\n\nmore words\nand more\n")
    (wt / "conf.yaml").write_text("a: 2\nb: 3\n")
    (wt / "pkg" / "util.py").write_text(APP["pkg/util.py"] + "\n\ndef doc_helper():\n    return 0\n")
    c = daemon.client()
    _index_all(c, main)
    r = c.request("index", {"repo": str(wt), "user": USER}, timeout=120)
    assert r["parsed"] == 3 and r["extracted"] == 2, r  # README.md and conf.yaml: hash, role, lines, no parser
    assert r["overlay"]["files"] == ["README.md", "conf.yaml", "pkg/util.py"]
    shown = c.request("show", {"repo": str(wt), "user": USER, "path": "README.md"})
    assert shown["node"]["lineCount"] == 4
    assert c.request("show", {"repo": str(main), "user": USER, "path": "README.md"})["node"]["lineCount"] == 1
    assert _names(c, wt, "doc_helper") == {"doc_helper"} and _names(c, main, "doc_helper") == set()


def test_views_built_over_an_edited_baseline_leave_it_and_each_other_alone(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    main = Path(os.path.realpath(make_repo(tmp_path / "main", {**APP, **EXTRA})))
    wt1, wt2 = tmp_path / "wt1", tmp_path / "wt2"
    git(main, "worktree", "add", "-q", "-b", "own-util", str(wt1))
    git(main, "worktree", "add", "-q", "-b", "same", str(wt2))
    (wt1 / "pkg" / "util.py").write_text(APP["pkg/util.py"] + "\n\ndef on_task():\n    return 2\n")
    c = daemon.client()
    _index_all(c, main, wt1, wt2)
    # After a baseline batch the baseline's tables hold lists of their own; each view's overlay of util.py
    # works on copies of them, so neither the baseline nor the next view sees a symbol twice.
    (main / "pkg" / "util.py").write_text(APP["pkg/util.py"] + "\n\ndef from_main():\n    return 3\n")
    c.request("sync", {"repo": str(main), "user": USER}, timeout=120)
    for root in (main, wt1, wt2, main, wt2, wt1):
        hits = c.request("locate", {"repo": str(root), "user": USER, "query": "helper"})["results"]
        assert [h["name"] for h in hits if h["name"] == "helper"] == ["helper"], (root, hits)
    assert _names(c, wt1, "on_task") == {"on_task"} and _names(c, wt2, "on_task") == set()
    assert _names(c, main, "from_main") == {"from_main"} and _names(c, wt2, "from_main") == set()


def test_a_pool_run_of_files_no_grammar_parses_builds_no_parser_in_the_daemon() -> None:
    """The first worktree registered after an index paid ~2 CPU-s here: its pool run met `ini` and `text`
    files for the first time, and the in-process warm-up, given no parsed language, built every language."""
    from nexusd.parse import extract
    from nexusd.sync import parsepool

    parsepool._warmed.difference_update({"ini", "text"})
    before = set(threading.enumerate())
    built = extract._query.cache_info().currsize
    parsepool._warm_inline({"ini", "text", ""})
    started = [t for t in threading.enumerate() if t not in before and t.name == "parse-warm"]
    for t in started:
        t.join(60)
    assert started == [] and extract._query.cache_info().currsize == built
    assert {"ini", "text"} <= parsepool._warmed  # (and not looked at again)


def _index_state(index: Any) -> dict[str, Any]:
    return {
        "facts": {p: id(t.facts) for p, t in index.tables.items()},
        "definers": {n: sorted(p for p, _ in index.definers_of(n)) for n in index.definers},
        "referencers": {n: {v} if isinstance(v, str) else set(v) for n, v in index.referencers.items()},
        "type_users": {n: dict(v) for n, v in index.type_users.items() if v},
        "paths": set(index.paths),
    }


def test_an_overlay_put_in_and_taken_out_again_leaves_the_baseline_table_as_it_was(tmp_path: Path) -> None:
    """The tables a view puts in (its own, then the baseline's back) are made once and kept with what they
    provide and refer to; the baseline's table after each re-base is the one a fresh index of it builds."""
    from nexusd.resolve.base import RepoIndex
    from nexusd.store import Store
    from nexusd.sync.indexer import RepoSync
    from nexusd.sync.views import ViewSync

    typed = "from pkg.util import helper\n\n\nclass Box:\n    def get(self):\n        return helper(1)\n\n\ndef make():\n    return Box()\n"
    main = make_repo(tmp_path / "main", {**APP, **EXTRA, "pkg/box.py": typed})
    wt = tmp_path / "wt"
    git(main, "worktree", "add", "-q", "-b", "task", str(wt))
    (wt / "pkg" / "util.py").write_text("def helper(x):\n    return x\n\n\ndef more():\n    return helper(0)\n")
    (wt / "pkg" / "box.py").write_text(typed.replace("return Box()", "return Box().get()"))
    (wt / "pkg" / "extra.py").unlink()
    store = Store(tmp_path / "g.kuzu")
    store.ensure_schema()
    conn = store.connect()
    try:
        conn.execute("CREATE (:Repository {id: 'r', root: $root, name: 'm'})", {"root": str(main)})
        base = RepoSync("r", str(main), tmp_path / "cache", lambda: pytest.fail("no pool for a small repository"))
        base.sync(conn, lambda _: None)
        assert base.index is not None
        before = _index_state(base.index)
        vs = ViewSync("r", str(wt), tmp_path / "cache", lambda: pytest.fail("no pool for a few files"))
        first = vs.sync(conn, base, lambda _: None)
        assert first.changed_paths == ["pkg/box.py", "pkg/util.py"] and first.deleted_paths == ["pkg/extra.py"]
        assert set(vs.tables) == {"pkg/box.py", "pkg/util.py"}
        fresh = RepoIndex("r", main)
        for facts in base.facts.values():
            fresh.set_file(facts)
        for _ in range(3):
            assert _index_state(base.index) == before
            assert {k: v for k, v in _index_state(fresh).items() if k != "facts"} == {
                k: v for k, v in before.items() if k != "facts"}  # fmt: skip
            kept = dict(vs.tables)
            files = vs.rebase(conn, base, lambda _: None)
            assert all(vs.tables[p] is kept[p] for p in kept)  # the view's tables are made once
            assert files.keys() == vs.files.keys() and files["pkg/extra.py"] is None
            # Each file's resolution in the view is the one an index of the worktree alone gives.
            whole = RepoIndex("r", main)
            for path, facts in {**base.facts, **vs.facts}.items():
                if path != "pkg/extra.py":
                    whole.set_file(facts)
            for path, data in files.items():
                if data is not None:
                    assert data[1] == whole.resolve_file(path), path
            assert files["pkg/util.py"][1].calls and files["pkg/box.py"][1].calls
            # The view's tables keep their type environment across re-bases (`types.env_table`), grouped as
            # a fresh index of the worktree groups it.
            from nexusd.resolve.types import TypeTable

            for path, table in vs.tables.items():
                assert table.types is not None, path
                fresh_types = TypeTable(whole, path)
                assert {k: getattr(table.types, k) for k in TypeTable.__slots__} == {
                    k: getattr(fresh_types, k) for k in TypeTable.__slots__}, path  # fmt: skip
    finally:
        conn.close()
        store.close()


def test_files_git_says_are_the_baselines_are_not_read_and_uncommitted_changes_are(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    main = Path(os.path.realpath(make_repo(tmp_path / "main", {**APP, **EXTRA, "README.md": "# app\n"})))
    wt = tmp_path / "wt"
    git(main, "worktree", "add", "-q", "-b", "task", str(wt))
    wt = Path(os.path.realpath(wt))
    # Not committed: an edit of the same size (the same blob in the index, different bytes on disk), an edit
    # that adds a function, and a new untracked file.
    (wt / "pkg" / "util.py").write_text(APP["pkg/util.py"].replace("x + 1", "x + 2") + "\n\ndef fresh():\n    return 0\n")
    (wt / "pkg" / "extra.py").write_text(EXTRA["pkg/extra.py"].replace("helper(2)", "helper(3)"))
    (wt / "pkg" / "new.py").write_text("def untracked_fn():\n    return 1\n")
    c = daemon.client()
    _index_all(c, main)
    r = c.request("index", {"repo": str(wt), "user": USER}, timeout=120)
    # pkg/__init__.py, pkg/app.py and README.md have the baseline's blob and are clean: taken without a read.
    assert r["notRead"] == 3 and r["unchanged"] == 3, r
    assert r["parsed"] == 3 and r["overlay"]["files"] == ["pkg/extra.py", "pkg/new.py", "pkg/util.py"], r
    assert _names(c, wt, "fresh") == {"fresh"} and _names(c, wt, "untracked_fn") == {"untracked_fn"}
    assert _names(c, main, "fresh") == set()
    snippet = c.request("show", {"repo": str(wt), "user": USER, "path": "pkg/extra.py"})
    assert snippet["node"]["hash"] != c.request("show", {"repo": str(main), "user": USER, "path": "pkg/extra.py"})["node"]["hash"]


def test_a_baseline_moved_by_git_but_not_synced_yet_is_not_vouched_for(tmp_path: Path) -> None:
    """git says the two worktrees' files are the same blob, but the baseline's graph holds an older version of
    one (its checkout moved and the daemon has not synced it): that file is read in the view."""
    d = DaemonProcess(env={"NEXUS_NO_WATCH": "1"}).start()
    try:
        main = Path(os.path.realpath(make_repo(tmp_path / "main", APP)))
        c = d.client()
        _index_all(c, main)
        (main / "pkg" / "util.py").write_text(APP["pkg/util.py"] + "\n\ndef moved_on():\n    return 0\n")
        git(main, "commit", "-q", "-am", "more")  # the baseline's graph still holds the first util.py
        wt = tmp_path / "wt"
        git(main, "worktree", "add", "-q", "-b", "task", str(wt))
        r = c.request("index", {"repo": str(wt), "user": USER}, timeout=120)
        assert r["notRead"] == 2 and r["overlay"]["files"] == ["pkg/util.py"], r
        assert _names(c, wt, "moved_on") == {"moved_on"} and _names(c, main, "moved_on") == set()
        c.close()
    finally:
        d.cleanup()


def test_a_baseline_edit_synced_after_one_view_is_not_vouched_for_in_the_next(tmp_path: Path) -> None:
    """The baseline's clean index entries are asked of git for the first view and kept for the next ones while
    its index file is unchanged. An edit of a baseline file (not added: the index stays as it was) synced
    between two views makes the kept entry stale for that file: the second view, whose file still has the
    committed bytes, reads it and keeps its own version, and the files nobody touched still go unread."""
    d = DaemonProcess(env={"NEXUS_NO_WATCH": "1"}).start()
    try:
        main = Path(os.path.realpath(make_repo(tmp_path / "main", APP)))
        c = d.client()
        _index_all(c, main)
        wt1, wt2 = tmp_path / "wt1", tmp_path / "wt2"
        git(main, "worktree", "add", "-q", "-b", "one", str(wt1))
        first = c.request("index", {"repo": str(wt1), "user": USER}, timeout=120)
        assert first["notRead"] == 3 and first["overlay"]["files"] == [], first
        (main / "pkg" / "util.py").write_text(APP["pkg/util.py"] + "\n\ndef baseline_only():\n    return 0\n")
        c.request("index", {"repo": str(main), "user": USER}, timeout=120)  # the baseline syncs the edit
        assert _names(c, main, "baseline_only") == {"baseline_only"}
        git(main, "worktree", "add", "-q", "-b", "two", str(wt2))
        r = c.request("index", {"repo": str(wt2), "user": USER}, timeout=120)
        assert r["notRead"] == 2 and r["overlay"]["files"] == ["pkg/util.py"], r
        assert _names(c, wt2, "baseline_only") == set() and _names(c, wt1, "baseline_only") == set()
        assert _names(c, wt2, "helper") == {"helper"}
        c.close()
    finally:
        d.cleanup()


def test_a_views_unclean_files_from_git_status_are_those_diff_files_lists(tmp_path: Path) -> None:
    """The view's files that differ from their index entries are read from the `git status` its answers need
    (`repos.status_unclean`), not a `diff-files`: on a real worktree with a staged rename edited again, an
    unstaged edit, a deletion, a staged-only edit and an untracked file, they are the paths `diff-files` lists."""
    import subprocess

    from nexusd.repos import STATUS, status_unclean

    main = make_repo(tmp_path / "main", {**APP, "pkg/extra.py": "def extra():\n    return 1\n", "docs/a b.md": "# a\n"})
    git(main, "mv", "pkg/extra.py", "pkg/renamed.py")
    (main / "pkg" / "renamed.py").write_text("def extra():\n    return 2\n")
    (main / "pkg" / "util.py").write_text(APP["pkg/util.py"] + "\n# more\n")
    (main / "pkg" / "app.py").unlink()
    (main / "docs" / "a b.md").write_text("# b\n")
    git(main, "add", "docs/a b.md")
    (main / "new.py").write_text("x = 1\n")
    out = subprocess.run(["git", "-C", str(main), *STATUS], capture_output=True, text=True, check=True).stdout
    listed = subprocess.run(["git", "-C", str(main), "diff-files", "--name-only", "-z"], capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    assert status_unclean(out) == {p for p in listed.split("\0") if p} == {"pkg/renamed.py", "pkg/util.py", "pkg/app.py"}
