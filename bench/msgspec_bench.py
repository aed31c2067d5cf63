"""msgspec against msgpack + jsonschema for one operation's decode and validation (the decision in
ARCHITECTURE.md, "Design notes: msgspec").

    .venv/bin/pip install msgspec==0.23.0    # not a dependency of the project; this bench only
    .venv/bin/python bench/msgspec_bench.py [--n 20000] [--rounds 5]

One `context` request (six arguments, the op with the most numeric bounds among the questions) goes through:
- now: `protocol.decode_request` (msgpack with the request bounds, the shape and depth checks) then
  `registry.validate` (jsonschema's first error, then the frozen dataclass the handler takes);
- msgspec: the envelope decoded as a Struct whose `args` stays raw, then the args decoded straight into a
  Struct carrying the same bounds (`Meta(ge=..., le=..., max_length=...)`): typed decode and validation in
  one step, as the issue suggests.
Both are run in alternating rounds in this process; the figures are microseconds per request (min and median
of the rounds). A few invalid requests show each side's error text. -> bench/results/msgspec_bench.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Annotated, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgspec  # noqa: E402

from bench.harness import write_result  # noqa: E402
from nexusd import protocol, registry  # noqa: E402
from nexusd.errors import NexusError  # noqa: E402
from nexusd.ops import query  # noqa: E402,F401  (registers `context`)

Path4096 = Annotated[str, msgspec.Meta(max_length=4096)]
Text = Annotated[str, msgspec.Meta(max_length=16384)]


class ContextWire(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    repo: Path4096 | None = None
    user: Annotated[str, msgspec.Meta(max_length=200)] | None = None
    cursor: Text | None = None
    symbol: Text
    depth: Annotated[int, msgspec.Meta(ge=1, le=3)] = 1
    budget: Annotated[int, msgspec.Meta(ge=100, le=50_000)] = 1500
    min_confidence: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    time_ms: Annotated[int, msgspec.Meta(ge=10, le=30_000)] = 5000


class Envelope(msgspec.Struct):
    id: str | int
    op: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    args: msgspec.Raw = msgspec.Raw(b"\x80")
    v: int = protocol.WIRE_VERSION


ENVELOPE = msgspec.msgpack.Decoder(Envelope)
ARGS = {"context": msgspec.msgpack.Decoder(ContextWire)}
SPEC = registry.lookup("context")


def now(frame: bytes) -> Any:
    req = protocol.decode_request(frame)
    return registry.validate(registry.lookup(req.op), req.args)


def with_msgspec(frame: bytes) -> Any:
    env = ENVELOPE.decode(frame)
    return ARGS[env.op].decode(env.args)


def per_request_us(fn: Any, frames: list[bytes], n: int) -> float:
    t0 = time.perf_counter()
    for i in range(n):
        fn(frames[i % len(frames)])
    return (time.perf_counter() - t0) / n * 1e6


def error_text(fn: Any, frame: bytes) -> str:
    try:
        fn(frame)
    except NexusError as exc:
        return f"{exc.code}: {exc.message}"
    except msgspec.ValidationError as exc:
        return f"ValidationError: {exc}"
    return "accepted"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5)
    opts = ap.parse_args()
    args = {"repo": "/home/me/src/project", "user": "me", "symbol": "pkg.app:Engine.run", "depth": 2,
            "budget": 3000, "minConfidence": 0.9}  # fmt: skip
    frames = [protocol.request_frame(f"r{i}", "context", args) for i in range(64)]
    a, b = now(frames[0]), with_msgspec(frames[0])
    assert (a.symbol, a.depth, a.budget, a.min_confidence, a.time_ms) == (b.symbol, b.depth, b.budget,
                                                                            b.min_confidence, b.time_ms)  # fmt: skip
    runs: dict[str, list[float]] = {"msgpack_jsonschema": [], "msgspec": []}
    for _ in range(opts.rounds):
        runs["msgpack_jsonschema"].append(per_request_us(now, frames, opts.n))
        runs["msgspec"].append(per_request_us(with_msgspec, frames, opts.n))
    bad = {
        "depth -3": {**args, "depth": -3},
        "unknown argument": {**args, "colour": "red"},
        "symbol as a number": {**args, "symbol": 7},
        "repo of 5,000 characters": {**args, "repo": "x" * 5000},
    }
    errors = {name: {"now": error_text(now, protocol.request_frame("e", "context", a_)),
                     "msgspec": error_text(with_msgspec, protocol.request_frame("e", "context", a_))}
              for name, a_ in bad.items()}  # fmt: skip
    out = {
        "op": "context",
        "requests_per_round": opts.n,
        "rounds": opts.rounds,
        "us_per_request": {k: {"min": round(min(v), 2), "median": round(statistics.median(v), 2)} for k, v in runs.items()},
        "speedup_median": round(statistics.median(runs["msgpack_jsonschema"]) / statistics.median(runs["msgspec"]), 1),
        "errors": errors,
        "msgspec": msgspec.__version__,
    }
    for k, v in out["us_per_request"].items():
        print(f"{k}: {v} us per request")
    for name, e in errors.items():
        print(f"{name}:\n  now:     {e['now']}\n  msgspec: {e['msgspec']}")
    print(f"wrote {write_result('msgspec_bench', out)}")


if __name__ == "__main__":
    main()
