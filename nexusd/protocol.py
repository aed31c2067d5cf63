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
# Bounds on a request's arguments, checked while the frame is decoded and before any schema walk, so one
# request can cost the socket loop only a bounded amount of time and memory (ARCHITECTURE.md, "Invariants").
MAX_ARG_ITEMS = 600_000  # list elements plus map entries, summed over the whole request
MAX_CONTAINER_LEN = 100_000  # elements of one list or entries of one map
MAX_ARG_DEPTH = 32  # lists and maps inside lists and maps


class Request(NamedTuple):
    id: str | int
    op: str
    args: dict[str, Any]
    v: int = WIRE_VERSION


def _fallback(obj: Any) -> Any:
    """Types the graph hands back that msgpack does not know: Kuzu sums are Decimals, dates are datetimes,
    content hashes are UUIDs (sent as the 32 hex digits the daemon speaks: `schema.hash_text`)."""
    import decimal
    import uuid

    if isinstance(obj, decimal.Decimal):
        return int(obj) if obj == obj.to_integral_value() else float(obj)
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if isinstance(obj, uuid.UUID):
        return obj.hex
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"cannot serialize {type(obj).__name__}")


def pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True, default=_fallback)


# Bounds every decode shares: they keep a hostile frame from allocating gigabytes inside the unpacker.
_UNPACK_BOUNDS: dict[str, Any] = {
    "raw": False, "strict_map_key": False, "max_str_len": MAX_FRAME_BYTES, "max_bin_len": MAX_FRAME_BYTES,
    "max_ext_len": 0,
}  # fmt: skip


def unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, max_array_len=1_000_000, max_map_len=1_000_000, **_UNPACK_BOUNDS)


def pack_local(obj: Any) -> bytes:
    """msgpack for a pipe between the daemon and its own parser processes (nobody else writes it): the library's
    defaults, no fallback, so a value msgpack cannot carry raises and the caller sends that one another way."""
    return msgpack.packb(obj)


def unpack_local(data: bytes) -> Any:
    """The reverse of `pack_local` (arrays stay lists: msgpack has no tuples)."""
    return msgpack.unpackb(data)


class _Budget:
    """Counts what the unpacker builds and stops it once a request holds more than MAX_ARG_ITEMS elements.
    msgpack calls the hooks as each list or map is complete, so decoding ends early, not after the fact."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_ARG_ITEMS

    def _spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise TooLarge(
                f"the request holds more than {MAX_ARG_ITEMS} list elements and map entries",
                hint="send smaller arguments, or several requests",
            )

    def list_hook(self, value: list[Any]) -> list[Any]:
        self._spend(len(value) + 1)
        return value

    def object_hook(self, value: dict[Any, Any]) -> dict[Any, Any]:
        self._spend(len(value) + 1)
        return value


def unpack_request(data: bytes) -> Any:
    """Decode a request frame within the request bounds; TooLarge or BadRequest when it is outside them."""
    budget = _Budget()
    try:
        obj = msgpack.unpackb(
            data,
            max_array_len=MAX_CONTAINER_LEN,
            max_map_len=MAX_CONTAINER_LEN,
            list_hook=budget.list_hook,
            object_hook=budget.object_hook,
            **_UNPACK_BOUNDS,
        )
    except NexusError:
        raise
    except ValueError as exc:
        if "exceeds max_" in str(exc):
            raise TooLarge(
                f"a list or map in the request holds more than {MAX_CONTAINER_LEN} items",
                hint="send smaller arguments, or several requests",
            ) from None
        raise BadRequest(f"frame is not valid msgpack: {type(exc).__name__}") from None
    except Exception as exc:  # any unpack failure is the sender's fault, never ours
        raise BadRequest(f"frame is not valid msgpack: {type(exc).__name__}") from None
    return obj


def peek_id_bytes(data: bytes) -> str | int | None:
    """The request id of a frame refused while decoding (too many items): read the envelope's keys one by
    one and skip every other value without building it (`skip` ignores the length bounds, `unpack` of a
    key or the id keeps them)."""
    unpacker = msgpack.Unpacker(
        raw=False, strict_map_key=False, max_buffer_size=len(data) + 1, max_array_len=16, max_map_len=16,
        max_str_len=MAX_FRAME_BYTES, max_bin_len=MAX_FRAME_BYTES, max_ext_len=0,
    )  # fmt: skip
    try:
        unpacker.feed(data)
        for _ in range(min(unpacker.read_map_header(), 16)):
            key = unpacker.unpack()
            if key == "id":
                return peek_id({"id": unpacker.unpack()})
            unpacker.skip()
    except Exception:  # whatever stops the walk, the id is unknown
        return None
    return None


def check_depth(args: dict[str, Any]) -> None:
    """Refuse argument values nested more than MAX_ARG_DEPTH lists and maps deep (the `args` map itself is
    level 0), without recursion: no RecursionError, whatever the depth."""
    stack: list[tuple[Any, int]] = [(args, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_ARG_DEPTH:
            raise TooLarge(
                f"the arguments are nested more than {MAX_ARG_DEPTH} levels deep",
                hint="flatten the arguments; no operation takes deeper values",
            )
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


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
    return validate_request(unpack_request(data))


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
    check_depth(args)
    return Request(id=rid, op=op, args=args, v=v)
