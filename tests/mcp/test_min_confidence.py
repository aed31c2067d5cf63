"""`impact` and `context` take `minConfidence` as an MCP tool argument, from the daemon's catalogue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from tests.helpers import DaemonProcess
from tests.mcp.conftest import mcp_session


def test_impact_and_context_offer_and_honour_min_confidence(mcp_daemon: DaemonProcess, indexed_repo: Path) -> None:
    async def main() -> dict[str, Any]:
        async with mcp_session(mcp_daemon.env, indexed_repo) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            out: dict[str, Any] = {"schemas": {n: tools[n].input_schema["properties"] for n in ("impact", "context")}}
            out["all"] = await s.call_tool("impact", {"symbol": "normalize"})
            out["bound"] = await s.call_tool("impact", {"symbol": "normalize", "minConfidence": 0.99})
            out["bad"] = await s.call_tool("impact", {"symbol": "normalize", "minConfidence": 2})
            return out

    out = anyio.run(main)
    for name in ("impact", "context"):
        prop = out["schemas"][name]["minConfidence"]
        assert prop["type"] == "number" and prop["minimum"] == 0 and prop["maximum"] == 1
    full, bound = out["all"].structured_content, out["bound"].structured_content
    assert not out["all"].is_error and not out["bound"].is_error
    assert bound["minConfidence"] == 0.99
    # a floor of 0.99 keeps only edges of confidence 1.0: never more callers, and every shown edge is >= 0.99
    assert bound["total"] <= full["total"]
    assert all(c["confidence"] >= 0.99 for c in bound["callers"] if c["depth"] == 1)
    assert out["bad"].is_error  # outside [0, 1]: refused by the schema, with an error code
