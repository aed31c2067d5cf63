"""A repository's lifecycle: its directory deleted (`missing`, memory kept, `forget` still works), or moved
(`nexus repos move` keeps the id, so memory and its attachment to symbols carry over)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from nexusd.errors import NotFound
from tests.helpers import DaemonProcess, make_repo, wait_for

FILES = {"lib/calc.py": "def add(a, b):\n    return a + b\n\n\ndef twice(a):\n    return add(a, a)\n"}


def _json(out):  # type: ignore[no-untyped-def]
    assert out.returncode == 0, (out.returncode, out.stdout, out.stderr)
    return json.loads(out.stdout)


def test_deleted_repository_is_missing_keeps_memory_and_can_be_forgotten(daemon: DaemonProcess, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "gone", FILES)
    _json(daemon.cli("index", str(repo), "--json"))
    fact = _json(daemon.cli("remember", "add is the only arithmetic primitive", "--about", "add", "--json", cwd=repo))
    shutil.rmtree(repo)

    def missing() -> bool:
        rows = _json(daemon.cli("repos", "--json"))["repos"]
        return bool(rows) and rows[0]["freshness"] == "missing"

    wait_for(missing, 20, what="repos says missing")
    status = _json(daemon.cli("status", "--all", "--json"))["repos"][0]
    assert status["availability"] == "missing" and "repos move" in status["next"]
    assert status["symbols"] >= 2  # the graph was not synced away when the files vanished
    text = daemon.cli("repos").stdout
    assert "missing" in text and "nexus repos move" in text
    # Memory is kept while the repository is missing.
    recall = _json(daemon.cli("recall", "arithmetic primitive", "--all-repos", "--json", cwd=tmp_path))
    assert any(fact["id"] == (i.get("id")) for i in recall["items"]), recall
    # An explicit sync says why it cannot (and does not empty the graph).
    client = daemon.client()
    try:
        client.request("sync", {"repo": str(repo)})
        raise AssertionError("a sync of a missing repository succeeded")
    except NotFound as exc:
        assert "no longer exists" in exc.message and "repos move" in (exc.hint or "")
    finally:
        client.close()
    # forget accepts the registered root although the directory no longer exists.
    out = daemon.cli("forget", str(repo), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["forgotten"] == str(repo.resolve())
    assert _json(daemon.cli("repos", "--json"))["repos"] == []
    assert daemon.cli("forget", str(tmp_path / "never-registered")).returncode == 2


def test_moved_repository_keeps_its_memory(daemon: DaemonProcess, tmp_path: Path) -> None:
    old = make_repo(tmp_path / "old", FILES)
    before = _json(daemon.cli("index", str(old), "--json"))
    fact = _json(daemon.cli("remember", "twice doubles through add", "--about", "twice", "--json", cwd=old))
    key = _json(daemon.cli("show", "twice", "--json", cwd=old))["node"]["key"]
    new = tmp_path / "new"
    old.rename(new)
    wait_for(lambda: _json(daemon.cli("repos", "--json"))["repos"][0]["freshness"] == "missing", 20, what="missing")
    out = daemon.cli("repos", "move", str(old), str(new), "--json")
    moved = _json(out)
    assert moved["id"] == before["id"] and moved["repo"] == str(new.resolve()) and moved["movedFrom"] == str(old)
    rows = _json(daemon.cli("repos", "--json"))["repos"]
    assert [r["root"] for r in rows] == [str(new.resolve())] and rows[0]["freshness"] != "missing"
    shown = _json(daemon.cli("show", "twice", "--json", cwd=new))
    assert shown["node"]["key"] == key
    assert any(m.get("id") == fact["id"] for m in shown.get("memory") or []), shown.get("memory")
    recall = _json(daemon.cli("recall", "doubles", "--json", cwd=new))
    assert any(i.get("id") == fact["id"] for i in recall["items"])
    # Indexing the new path again finds the same registration, not a second one.
    again = _json(daemon.cli("index", str(new), "--json"))
    assert again["id"] == before["id"] and len(_json(daemon.cli("repos", "--json"))["repos"]) == 1
    # A move whose source still exists is a copy: refused.
    copy = make_repo(tmp_path / "copy", FILES)
    out = daemon.cli("repos", "move", str(new), str(copy))
    assert out.returncode == 2 and "copy" in out.stderr
