"""Facts attached to code: current, stale, orphaned, renamed and moved (the fact follows), ambiguous names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nexusd.errors import Ambiguous
from tests.helpers import DaemonProcess, make_repo
from tests.memory.conftest import SOURCE, has_op


def _indexed(daemon: DaemonProcess, root: Path, files: dict[str, str]) -> tuple[Any, dict[str, str]]:
    repo = make_repo(root, files)
    c = daemon.client()
    if not (has_op(c, "index") and has_op(c, "sync")):
        c.close()
        pytest.skip("the daemon has no `index`/`sync` op yet")
    c.request("index", {"repo": str(repo), "user": "alice"}, timeout=120)
    return c, {"user": "alice", "repo": str(repo)}


def _fact(c: Any, scope: dict[str, str], fact_id: str, query: str) -> dict[str, Any]:
    items = c.request("recall", {**scope, "query": query})["items"]
    return next(i for i in items if i["id"] == fact_id)


def _edit(c: Any, scope: dict[str, str], rel: str, text: str | None) -> None:
    path = Path(scope["repo"]) / rel
    if text is None:
        path.unlink()
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    c.request("sync", {"repo": scope["repo"], "user": "alice"}, timeout=120)


def test_stale_then_orphaned(daemon: DaemonProcess, tmp_path: Path) -> None:
    c, scope = _indexed(daemon, tmp_path / "r", SOURCE)
    try:
        f = c.request("remember", {**scope, "text": "normalizeParams keeps falsy values", "about": "normalizeParams"})
        assert f["symbol"]["key"].endswith("normalizeParams")
        assert _fact(c, scope, f["id"], "falsy values")["status"] == "current"
        src = SOURCE["pkg/mod.py"].replace("if v is not None", "if v")
        _edit(c, scope, "pkg/mod.py", src)
        assert _fact(c, scope, f["id"], "falsy values")["status"] == "stale"
        _edit(c, scope, "pkg/mod.py", "def helper(x):\n    return x + 1\n")
        assert _fact(c, scope, f["id"], "falsy values")["status"] == "orphaned"
    finally:
        c.close()


def test_renamed_and_moved_facts_follow_their_symbol(daemon: DaemonProcess, tmp_path: Path) -> None:
    c, scope = _indexed(daemon, tmp_path / "r", SOURCE)
    try:
        r = c.request("remember", {**scope, "text": "helper is hot in the profiler", "about": "helper"})
        m = c.request("remember", {**scope, "text": "normalizeParams is called per request", "about": "normalizeParams"})
        # Rename helper -> bump in the same file, body unchanged.
        src = SOURCE["pkg/mod.py"].replace("def helper(x)", "def bump(x)")
        _edit(c, scope, "pkg/mod.py", src)
        got = _fact(c, scope, r["id"], "profiler hot")
        assert got["status"] == "renamed" and got["symbol"]["name"] == "bump"
        again = _fact(c, scope, r["id"], "profiler hot")
        assert again["status"] == "current" and again["symbol"]["name"] == "bump"
        # Move normalizeParams to another file, text unchanged.
        body = src.split("\n\n\n")[0] + "\n"
        _edit(c, scope, "pkg/other.py", body)
        _edit(c, scope, "pkg/mod.py", src.split("\n\n\n")[1])
        moved = _fact(c, scope, m["id"], "called per request")
        assert moved["status"] == "moved" and moved["symbol"]["path"] == "pkg/other.py"
        assert _fact(c, scope, m["id"], "called per request")["status"] == "current"
    finally:
        c.close()


def test_ambiguous_symbol_name_lists_candidates(daemon: DaemonProcess, tmp_path: Path) -> None:
    files = {**SOURCE, "pkg/b.py": "def helper(y):\n    return y\n"}
    c, scope = _indexed(daemon, tmp_path / "r", files)
    try:
        with pytest.raises(Ambiguous) as err:
            c.request("remember", {**scope, "text": "x", "about": "helper"})
        paths = [cand["path"] for cand in err.value.data["candidates"]]
        assert sorted(paths) == ["pkg/b.py", "pkg/mod.py"]
        key = err.value.data["candidates"][0]["key"]
        assert c.request("remember", {**scope, "text": "x", "about": key})["symbol"]["key"] == key
    finally:
        c.close()
