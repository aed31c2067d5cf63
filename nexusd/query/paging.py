"""Bounds and continuation cursors shared by every query answer.

Every answer is bounded (results, bytes/tokens, depth, time). When a bound cuts it the answer carries
`truncated: {bound, shown, remaining?, cursor}`; the cursor is opaque base64 of
{op, h: hash of the request's other arguments, v: graphVersion, o: offset}, so it only continues the request
it came from, and only on the graph it was computed on: the same request on the same graph gives the same
ordered list, so an offset is a faithful bookmark. A cursor from an older graphVersion is a bad_request that
says the graph changed (the caller repeats the request).

Sizes are counted in tokens, estimated as characters / 4 of the compact JSON (stated in every answer that
uses a token budget).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
from typing import Any

from ..errors import BadRequest
from ..retrieve import pack as retrieve_pack

# Arguments that do not change which list an answer pages through.
_NOT_HASHED = ("cursor", "limit", "budget", "user")
CHARS_PER_TOKEN = retrieve_pack.CHARS_PER_TOKEN
TOKEN_NOTE = "tokens ~= characters / 4 of the compact JSON"


def tokens(value: Any) -> int:
    return retrieve_pack.estimate_json(value)


def args_hash(op: str, wire: dict[str, Any]) -> str:
    """`wire`: the request's arguments by wire name (`Args.as_wire()`), defaults included."""
    kept = {k: v for k, v in wire.items() if k not in _NOT_HASHED}
    text = json.dumps([op, kept], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def make_cursor(op: str, wire: dict[str, Any], version: int, offset: int) -> str:
    raw = json.dumps({"op": op, "h": args_hash(op, wire), "v": version, "o": offset}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def read_cursor(op: str, wire: dict[str, Any], version: int) -> int:
    """The offset a request's cursor points at (0 without one); refuses a foreign or outdated cursor."""
    cursor = wire.get("cursor")
    if not cursor:
        return 0
    try:
        pad = "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(cursor + pad).decode())
        c_op, c_hash, c_version, offset = data["op"], data["h"], int(data["v"]), int(data["o"])
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise BadRequest("malformed cursor", hint="pass back the `cursor` of an earlier answer unchanged") from exc
    if c_op != op or c_hash != args_hash(op, wire):
        raise BadRequest(
            f"this cursor continues another request ({c_op})",
            hint="repeat the request with the same arguments as the one that returned the cursor",
        )
    if c_version != version:
        raise BadRequest(
            f"the graph changed since this cursor was made (graphVersion {c_version} -> {version})",
            hint="repeat the request without a cursor: the answer may differ now",
            data={"cursorVersion": c_version, "graphVersion": version},
        )
    if offset < 0:
        raise BadRequest("malformed cursor")
    return offset


def page(
    op: str, wire: dict[str, Any], version: int, items: list[Any], *, total: int | None, offset: int, limit: int,
    more: bool = False,
) -> tuple[list[Any], dict[str, Any] | None]:
    """Cut `items` (the whole ordered list from 0, or at least offset+limit+1 of it) to one page.

    Returns (the page, the `truncated` record or None). `total` None means the true total is unknown (a search
    stopped early); then `more` says whether anything follows.
    """
    shown = items[offset : offset + limit]
    end = offset + len(shown)
    has_more = end < len(items) or more or (total is not None and end < total)
    if not has_more:
        return shown, None
    cut: dict[str, Any] = {"bound": "limit", "limit": limit, "offset": offset, "shown": len(shown)}
    if total is not None:
        cut["remaining"] = total - end
    cut["cursor"] = make_cursor(op, wire, version, end)
    return shown, cut


def budget_cut(items: list[dict[str, Any]], offset: int, budget: int) -> tuple[list[dict[str, Any]], int]:
    """As many items from `offset` as fit in `budget` tokens (at least one); returns (items, tokens used)."""
    packed = retrieve_pack.pack(items[offset:], budget, cost=tokens, stop=True)
    return packed.items, packed.used


class Clock:
    """A wall-clock bound for one answer's search (walks stop and say so when it runs out)."""

    def __init__(self, limit_ms: float):
        self.start = time.perf_counter()
        self.limit = limit_ms / 1000.0

    def over(self) -> bool:
        return time.perf_counter() - self.start > self.limit

    def took_ms(self) -> float:
        return round((time.perf_counter() - self.start) * 1000, 3)
