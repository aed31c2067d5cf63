"""Hostile repositories (hostile.py): every entry is bounded, skipped with a reason, or indexed with a
diagnostic; the daemon keeps serving, nothing outside the root and no secret file reaches the graph."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import DaemonProcess
from tests.reliability import hostile
from tests.reliability.common import q


def _graph_text(c: Any) -> str:
    """Every string property of every node table, as one text to search for planted markers."""
    tables = [r[0] for r in q(c, "CALL SHOW_TABLES() RETURN name, type") if r[1] == "NODE"]
    out: list[str] = []
    for table in tables:
        page = 0
        while True:  # paged (the table is static meanwhile): a whole table can exceed the 8 MiB result bound
            rows = q(c, f"MATCH (n:{table}) RETURN n.* SKIP $s LIMIT 5000", s=page * 5000)
            out.extend(repr(row) for row in rows)
            if len(rows) < 5000:
                break
            page += 1
    return "\n".join(out)


def _index_and_check(daemon: DaemonProcess, root: Path) -> dict[str, Any]:
    with daemon.client(timeout=600) as c:
        result = c.request("index", {"repo": str(root)}, timeout=600)
        skipped = {s["path"]: s["reason"] for s in result["skipped"]}
        for path, reasons in hostile.EXPECT.items():
            if reasons:
                assert skipped.get(path) in reasons, f"{path}: {skipped.get(path)!r}, want one of {reasons}"
        assert skipped.get(repr("new\nline.py")) == "bad-path-name"
        assert any(r == "non-utf8-path" for r in skipped.values())
        files = {
            r[0]: r[1] for r in q(c, "MATCH (f:File) WHERE NOT f.path STARTS WITH 'many/' RETURN f.path, f.diagnostics")
        }
        paths = [r[0] for r in q(c, "MATCH (f:File) RETURN f.path")]
        for path, reasons in hostile.EXPECT.items():
            if not reasons:
                assert path in files, f"{path} was not indexed"
        assert "binary" in (files.get("binary.py") or ""), "the binary .py is recorded with a diagnostic"
        for path in paths:
            assert not path.startswith("/") and ".." not in path.split("/"), path
            assert not path.startswith(("etc/", "dirloop/", "passwd")), path
        names = {r[0] for r in q(c, "MATCH (s:Symbol) RETURN s.name")}
        assert {"good_function", "helper", "App", "run", "long_line", "deep_parens", "latin_one"} <= names
        text = _graph_text(c)
        assert hostile.SECRET_MARKER not in text, "a secret file's content reached the graph"
        assert hostile.OUTSIDE_MARKER not in text, "a file outside the root reached the graph"
        assert "root:x:0:0" not in text, "/etc/passwd reached the graph"
        assert c.request("ping")["pong"]
        again = c.request("sync", {"repo": str(root)}, timeout=600)
        assert again["mode"] in ("noop", "incremental")
    assert daemon.proc is not None and daemon.proc.poll() is None
    return result


def test_hostile_repository_is_contained(daemon: DaemonProcess, tmp_path: Path) -> None:
    root = hostile.build(tmp_path)
    t0 = time.monotonic()
    _index_and_check(daemon, root)
    assert time.monotonic() - t0 < 120


@pytest.mark.slow
def test_hostile_repository_with_100k_empty_files(daemon: DaemonProcess, tmp_path: Path) -> None:
    root = hostile.build(tmp_path, empty_files=100_000)
    result = _index_and_check(daemon, root)
    assert result["scanned"] >= 100_000
    with daemon.client(timeout=600) as c:
        count = q(c, "MATCH (f:File) WHERE f.path STARTS WITH 'many/' RETURN count(f)")[0][0]
    assert count == 100_000
    assert len(os.listdir(root / "many")) == 100
