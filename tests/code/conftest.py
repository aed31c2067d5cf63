from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from nexus_client.connection import Client

from tests.helpers import DaemonProcess


class Graph:
    """A client plus helpers to look at the graph the daemon built (through the debug.cypher op)."""

    def __init__(self, client: Client, repo: Path):
        self.c = client
        self.repo = repo

    def q(self, query: str, **params: Any) -> list[list[Any]]:
        return self.c.request("debug.cypher", {"query": query, "params": params})["rows"]

    def index(self, **kw: Any) -> dict[str, Any]:
        return self.c.request("index", {"repo": str(self.repo), **kw}, timeout=120)

    def sync(self) -> dict[str, Any]:
        return self.c.request("sync", {"repo": str(self.repo)}, timeout=120)

    def symbols(self) -> dict[str, str]:
        """semantic key -> id"""
        return dict(self.q("MATCH (s:Symbol) RETURN s.key, s.id"))

    def calls(self) -> set[tuple[str, str, str]]:
        rows = self.q("MATCH (a:Symbol)-[e:POSSIBLY_CALLS]->(b:Symbol) RETURN a.key, b.key, e.resolution")
        return {tuple(r) for r in rows}  # type: ignore[misc]

    def unresolved(self, key: str) -> list[str]:
        rows = self.q("MATCH (s:Symbol {key: $k}) RETURN s.unresolved", k=key)
        return (rows[0][0] or "").split("\n") if rows and rows[0][0] else []


@pytest.fixture
def graph_daemon(daemon: DaemonProcess) -> DaemonProcess:
    return daemon  # the shared fixture of tests/conftest.py
