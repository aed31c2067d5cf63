"""Protocol fuzzing: random and mutated frames on raw DEALER sockets against a real daemon.

Frame kinds: random bytes; valid msgpack of the wrong shape (lists, scalars, maps without id); requests with a
wrong type in every field in turn (v, id, op, args, each argument); real operations from the catalogue with
mutated arguments (wrong types, huge strings, deep nesting, unknown keys); truncated frames; deeply nested
msgpack; multi-part messages; a few frames near and over the 8 MiB application limit.

Oracle: each message gets exactly one final reply (frames are sent in windows and counted), every reply's id is
the id the daemon could read from the frame (or null), every error code is one of `errors.ERROR_CODES`, the
daemon never exits, its RSS stays bounded, and it still answers `ping` at the end.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Any

import msgpack

from nexusd import protocol
from nexusd.errors import ERROR_CODES
from tests.reliability.common import Raw, rss_kb

# Operations that must not be fuzzed: they stop the daemon, register arbitrary directories, sleep on purpose,
# build results as big as asked, run arbitrary Cypher, raise on purpose, damage the graph so that the daemon
# stops to set its file aside, or restart it in place (a raw frame is not sent again: each tested on its own
# elsewhere).
NOT_FUZZED = {
    "shutdown", "index", "repo.forget", "debug.sleep", "debug.big", "debug.cypher", "debug.raise",
    "debug.register_repo", "history.sync", "forget.value", "memory.import", "memory.forget",
    "debug.damage_graph", "debug.damage_next_compaction", "debug.recycle",
}  # fmt: skip
_STRINGS = ["", "x", "../../etc/passwd", "/etc/shadow", "\x00", "é" * 50, "a\nb", "🙂", "%s%n", "' OR 1=1 --"]


def _scalar(rng: random.Random) -> Any:
    pick = rng.randrange(9)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.choice([0, -1, 1, 2**31, -(2**63), 2**64 - 1, rng.randint(-1000, 1000)])
    if pick == 3:
        return rng.choice([0.0, -1.5, float("inf"), float("nan"), 1e308])
    if pick == 4:
        return rng.randbytes(rng.randint(0, 64))
    if pick == 5:
        return "y" * rng.choice([1_000, 100_000, 1_000_000])
    return rng.choice(_STRINGS)


def _value(rng: random.Random, depth: int = 0) -> Any:
    if depth > 3 or rng.random() < 0.6:
        return _scalar(rng)
    if rng.random() < 0.5:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["a", "repo", "id", "", "query", 1]): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _nested(depth: int, leaf: Any) -> Any:
    out = leaf
    for i in range(depth):
        out = [out] if i % 2 else {"k": out}
    return out


def _packable(obj: Any) -> bytes | None:
    try:
        return msgpack.packb(obj, use_bin_type=True)
    except (ValueError, OverflowError, TypeError):
        return None


class FrameMaker:
    def __init__(self, rng: random.Random, catalogue: list[dict[str, Any]], repo: str):
        self.rng = rng
        self.ops = [e for e in catalogue if e["name"] not in NOT_FUZZED]
        self.repo = repo
        self.n = 0

    def _valid_args(self, entry: dict[str, Any]) -> dict[str, Any]:
        props = entry["inputSchema"].get("properties", {})
        args: dict[str, Any] = {}
        for name, spec in props.items():
            if name == "repo":
                args[name] = self.repo
            elif self.rng.random() < 0.5:
                kind = spec.get("type")
                args[name] = {
                    "string": self.rng.choice(["main", "helper", "pkg/mod.py", "x"]),
                    "integer": self.rng.choice([0, 1, 5, 100]),
                    "number": 0.5,
                    "boolean": True,
                    "array": ["a"],
                    "object": {},
                }.get(kind, "x")
        return args

    def make(self) -> list[bytes]:
        """One message (a list of frames)."""
        self.n += 1
        rng = self.rng
        rid: Any = f"f{self.n}"
        kind = rng.randrange(100)
        if kind < 8:
            return [rng.randbytes(rng.randint(0, 300))]
        if kind < 14:  # valid msgpack, wrong shape
            data = _packable(rng.choice([[1, 2], "str", 42, None, {"no": "id"}, {"id": None, "op": "ping"}]))
            return [data or b"\xc0"]
        entry = rng.choice(self.ops)
        frame: dict[Any, Any] = {"v": protocol.WIRE_VERSION, "id": rid, "op": entry["name"], "args": self._valid_args(entry)}
        if kind < 40:  # one field of the envelope gets a wrong value
            field = rng.choice(["v", "id", "op", "args"])
            frame[field] = _value(rng)
        elif kind < 75:  # one argument gets a wrong value, or an unknown argument appears
            target = frame["args"]
            key = rng.choice([*target, "bogus", 7]) if target else "bogus"
            target[key] = _value(rng)
        elif kind < 80:
            frame["args"] = {"query": _nested(rng.choice([50, 500, 5_000, 100_000]), "x"), "repo": self.repo}
        elif kind < 85:
            frame["op"] = rng.choice(["", "x" * 65, "no.such.op", "ping\x00", "../shutdown", "SHUTDOWN"])
        elif kind < 90:
            frame = {rng.choice(["v", "id", "op", "args", "extra"]): _value(rng) for _ in range(rng.randint(0, 5))}
        data = _packable(frame) or protocol.request_frame(rid, "ping")
        if kind >= 97:  # truncated
            return [data[: rng.randint(0, max(0, len(data) - 1))]]
        if kind >= 95:  # more than one frame in a message
            return [data, rng.randbytes(8)]
        return [data]


def expected_id(frames: list[bytes]) -> Any:
    """The id the daemon can read from a message: the documented reply goes to it (else null)."""
    if len(frames) != 1 or len(frames[0]) > protocol.MAX_FRAME_BYTES:
        return None
    try:
        obj = protocol.unpack(frames[0])
    except Exception:  # the daemon still reads the envelope's `id` when it can (skipping the rest)
        return protocol.peek_id_bytes(frames[0])
    return protocol.peek_id(obj)


def _key(rid: Any) -> Any:
    return ("n", None) if rid is None else (type(rid).__name__, rid)


def big_frames() -> list[list[bytes]]:
    """A few frames near and over the 8 MiB application limit (under libzmq's 64 MiB cap: all answered)."""
    out = []
    for i, size in enumerate([protocol.MAX_FRAME_BYTES - 4096, protocol.MAX_FRAME_BYTES + 1, 20 * 1024 * 1024]):
        out.append([protocol.pack({"v": 1, "id": f"big{i}", "op": "debug.echo", "args": {"x": "z" * size}})])
    return out


def run(endpoint: str, pid: int, frames: int, *, seed: int = 11, repo: str = "/nonexistent", window: int = 64,
        catalogue: list[dict[str, Any]], with_big: bool = True) -> dict[str, Any]:  # fmt: skip
    rng = random.Random(seed)
    maker = FrameMaker(rng, catalogue, repo)
    raw = Raw(endpoint)
    stats: Counter[str] = Counter()
    mismatches: list[str] = []
    rss: dict[str, int] = {"start_kb": rss_kb(pid)}
    t0 = time.monotonic()
    sent = generated = 0
    samples: list[tuple[int, int]] = []
    try:
        batches = [big_frames()] if with_big else []
        while generated < frames or batches:
            if batches:
                batch = batches.pop()
            else:
                batch = [maker.make() for _ in range(min(window, frames - generated))]
                generated += len(batch)
            want = Counter(_key(expected_id(m)) for m in batch)
            for message in batch:
                raw.send(*message)
            sent += len(batch)
            got: Counter[Any] = Counter()
            finals = 0
            deadline = time.monotonic() + 60
            while finals < len(batch) and time.monotonic() < deadline:
                reply = raw.recv(1000)
                if reply is None:
                    continue
                if not isinstance(reply, dict) or "ok" not in reply:
                    if isinstance(reply, dict) and reply.get("event") == "progress":
                        continue
                    mismatches.append(f"not a final reply: {str(reply)[:200]}")
                    finals += 1
                    continue
                finals += 1
                got[_key(reply.get("id"))] += 1
                if reply["ok"]:
                    stats["ok"] += 1
                else:
                    code = reply.get("error", {}).get("code")
                    stats[str(code)] += 1
                    if code not in ERROR_CODES:
                        mismatches.append(f"undocumented error code {code!r}")
            if finals < len(batch):
                mismatches.append(f"{len(batch) - finals} messages of a window got no reply within 60 s")
            if got != want:
                mismatches.append(f"reply ids differ from readable ids: want-got {dict(want - got)} got-want {dict(got - want)}")
            if generated >= min(2_000, frames // 2) and "warm_kb" not in rss:
                rss["warm_kb"] = rss_kb(pid)
            if generated % 10_000 < len(batch):
                samples.append((generated, rss_kb(pid)))
        raw.send(protocol.request_frame("final-ping", "ping"))
        final = raw.recv(10_000)
        alive = bool(final and final.get("ok"))
    finally:
        raw.close()
    rss["end_kb"] = rss_kb(pid)
    rss.setdefault("warm_kb", rss["start_kb"])
    return {
        "frames": sent,
        "seconds": round(time.monotonic() - t0, 2),
        "replies": dict(sorted(stats.items())),
        "mismatches": mismatches[:20],
        "mismatch_count": len(mismatches),
        "alive_after": alive,
        "rss": rss,
        "rss_samples_kb": samples,
        "rss_growth_after_warmup_mb": round((rss["end_kb"] - rss["warm_kb"]) / 1024, 1),
    }
