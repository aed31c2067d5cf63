"""Daemon-level operations: hello (versions + catalogue), ping, status, shutdown; debug ops for tests."""

from __future__ import annotations

import time
from typing import Any

from .. import WIRE_VERSION, __version__, config
from ..errors import BadRequest
from ..registry import USER_ARG, Ctx, catalogue, op, schema

REPO_ARG_ONLY = {"type": "string", "description": "Only the repository containing this path (default: all)."}

CAPABILITIES = ["progress", "catalogue", "cursor"]


@op(
    "hello",
    lane="inline",
    description="Handshake: daemon and wire versions, capabilities, and the catalogue of operations.",
    args=schema({"client": {"type": "string"}, "wire": {"type": "integer"}}),
)
def hello(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    wire = args.get("wire", WIRE_VERSION)
    if wire != WIRE_VERSION:
        raise BadRequest(
            f"client speaks wire version {wire}, daemon {WIRE_VERSION}",
            hint="restart the daemon after upgrading: `nexus daemon restart`",
        )
    return {
        "daemon": __version__,
        "wire": WIRE_VERSION,
        "pid": ctx.parts.info.pid,
        "capabilities": CAPABILITIES,
        "catalogue": catalogue(),
    }


@op("ping", lane="inline", description="Liveness check; answers on the socket loop without touching the graph.")
def ping(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    return {"pong": True, "pid": ctx.parts.info.pid}


@op(
    "status",
    lane="read",
    description="Daemon health and, per repository, files, symbols, edges, freshness and the last build.",
    args=schema({"repo": REPO_ARG_ONLY, "user": USER_ARG}),
    tool=True,
)
def status(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    assert ctx.conn is not None
    info = ctx.parts.info
    out: dict[str, Any] = {
        "daemon": {
            "version": __version__,
            "wire": WIRE_VERSION,
            "pid": info.pid,
            "uptimeS": round(time.time() - info.started_at, 3),
            "socket": str(info.dirs.socket),
            "data": str(info.dirs.data),
            "log": str(info.dirs.log),
            "requests": ctx.parts.writer.handled,
            "recovery": info.recovery,
            # "closed" until something needs the graph: nothing registered yet (ARCHITECTURE.md, "Memory at rest")
            "database": "open" if ctx.parts.store.opened else "closed",
        }
    }
    for section in ctx.parts.status_sections:  # the areas' sections, listed by the composition root
        name, value = section(ctx.conn, args)
        out[name] = value
    return out


@op("shutdown", lane="control", description="Stop the daemon cleanly: finish the write in progress, close the graph.")
def shutdown(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    ctx.parts.request_stop()
    return {"stopping": True, "pid": ctx.parts.info.pid}


if config.get("NEXUS_DEBUG_OPS"):
    # Test-only operations, registered only when the daemon is started with NEXUS_DEBUG_OPS=1.

    @op("debug.raise", lane="read", description="Raise inside a handler (tests the crash barrier).")
    def debug_raise(ctx: Ctx, args: dict[str, Any]) -> None:
        raise RuntimeError("boom (debug.raise)")

    @op(
        "debug.sleep",
        lane="read",
        description="Sleep on a reader thread, sending progress (tests concurrency).",
        args=schema({"seconds": {"type": "number", "minimum": 0, "maximum": 30}}),
    )
    def debug_sleep(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
        end = time.monotonic() + float(args.get("seconds", 1))
        while time.monotonic() < end:
            ctx.progress({"message": "sleeping", "left": round(end - time.monotonic(), 2)})
            time.sleep(0.01)
        return {"slept": args.get("seconds", 1)}

    @op(
        "debug.echo",
        lane="read",
        description="Echo the arguments back (tests routing).",
        args={"type": "object"},
    )
    def debug_echo(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
        return {"echo": args}

    @op(
        "debug.big",
        lane="read",
        description="Return a result of the given size in bytes (tests the result size bound).",
        args=schema({"bytes": {"type": "integer", "minimum": 0}}),
    )
    def debug_big(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
        return {"data": "x" * int(args.get("bytes", 0))}

    @op(
        "debug.cypher",
        lane="read",
        description="Run a read-only Cypher query (tests inspect the graph with it).",
        args=schema({"query": {"type": "string"}, "params": {"type": "object"}}, ["query"]),
    )
    def debug_cypher(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
        assert ctx.conn is not None
        return {"rows": ctx.conn.rows(args["query"], args.get("params") or {})}

