"""Frames on the wire: one msgpack map per frame (docs/conventions.md point 5). Only this module knows msgpack.

    request   {v, id, op, args}
    progress  {v, id, event: "progress", data}     zero or more
    final     {v, id, ok: true, result} | {v, id, ok: false, error: {code, message, hint?, data?}}
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgpack

from . import WIRE_VERSION
from .errors import BadRequest, NexusError, TooLarge

# Frames above this are refused with `too_large` (the sender is known, so it gets a reply).
MAX_FRAME_BYTES = 8 * 1024 * 1024
# libzmq's own cap: above it the peer is disconnected before we see the frame (nobody to answer).
HARD_FRAME_BYTES = 64 * 1024 * 1024
MAX_ID_CHARS = 128
MAX_OP_CHARS = 64


class Request(NamedTuple):
    id: str | int
    op: str
    args: dict[str, Any]
    v: int = WIRE_VERSION


def _fallback(obj: Any) -> Any:
    """Types the graph hands back that msgpack does not know: Kuzu sums are Decimals, dates are datetimes."""
    import decimal

    if isinstance(obj, decimal.Decimal):
        return int(obj) if obj == obj.to_integral_value() else float(obj)
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"cannot serialize {type(obj).__name__}")


def pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True, default=_fallback)


def unpack(data: bytes) -> Any:
    # Bounds keep a hostile frame from allocating gigabytes inside the unpacker.
    return msgpack.unpackb(
        data,
        raw=False,
        strict_map_key=False,
        max_str_len=MAX_FRAME_BYTES,
        max_bin_len=MAX_FRAME_BYTES,
        max_array_len=1_000_000,
        max_map_len=1_000_000,
        max_ext_len=0,
    )


def pack_local(obj: Any) -> bytes:
    """msgpack for a pipe between the daemon and its own parser processes (nobody else writes it): the library's
    defaults, no fallback, so a value msgpack cannot carry raises and the caller sends that one another way."""
    return msgpack.packb(obj)


def unpack_local(data: bytes) -> Any:
    """The reverse of `pack_local` (arrays stay lists: msgpack has no tuples)."""
    return msgpack.unpackb(data)


def request_frame(req_id: str | int, op: str, args: dict[str, Any] | None = None) -> bytes:
    return pack({"v": WIRE_VERSION, "id": req_id, "op": op, "args": args or {}})


def ok_frame(req_id: Any, result: Any) -> bytes:
    return pack({"v": WIRE_VERSION, "id": req_id, "ok": True, "result": result})


def error_frame(req_id: Any, error: NexusError) -> bytes:
    return pack({"v": WIRE_VERSION, "id": req_id, "ok": False, "error": error.to_wire()})


def progress_frame(req_id: Any, data: Any) -> bytes:
    return pack({"v": WIRE_VERSION, "id": req_id, "event": "progress", "data": data})


def peek_id(obj: Any) -> str | int | None:
    """The request id of a frame, when one can be read: errors go back to it even if the rest is bad."""
    if isinstance(obj, dict):
        rid = obj.get("id")
        if isinstance(rid, (str, int)) and not isinstance(rid, bool):
            if isinstance(rid, str) and len(rid) > MAX_ID_CHARS:
                return None
            return rid
    return None


def decode_request(data: bytes) -> Request:
    """Parse and shape-check a request frame; raises BadRequest/TooLarge with what is wrong."""
    if len(data) > MAX_FRAME_BYTES:
        raise TooLarge(f"frame of {len(data)} bytes exceeds the limit of {MAX_FRAME_BYTES}")
    try:
        obj = unpack(data)
    except Exception as exc:  # any unpack failure is the sender's fault, never ours
        raise BadRequest(f"frame is not valid msgpack: {type(exc).__name__}") from None
    return validate_request(obj)


def validate_request(obj: Any) -> Request:
    if not isinstance(obj, dict):
        raise BadRequest(f"a request must be a msgpack map, got {type(obj).__name__}")
    rid = peek_id(obj)
    if rid is None:
        raise BadRequest(f"request needs an `id` (string of at most {MAX_ID_CHARS} chars, or integer)")
    v = obj.get("v", WIRE_VERSION)
    if not isinstance(v, int) or isinstance(v, bool):
        raise BadRequest("`v` must be an integer wire version")
    if v != WIRE_VERSION:
        raise BadRequest(
            f"wire version {v} is not supported (daemon speaks {WIRE_VERSION})",
            hint="upgrade the client and the daemon together, then `nexus daemon restart`",
        )
    op = obj.get("op")
    if not isinstance(op, str) or not op or len(op) > MAX_OP_CHARS:
        raise BadRequest("request needs an `op` (non-empty string)")
    args = obj.get("args", {})
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise BadRequest(f"`args` must be a map, got {type(args).__name__}")
    if any(not isinstance(k, str) for k in args):
        raise BadRequest("`args` keys must be strings")
    return Request(id=rid, op=op, args=args, v=v)
