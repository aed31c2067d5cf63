"""Daemon-level operations: hello (versions + catalogue), ping, status, shutdown; debug ops for tests."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import WIRE_VERSION, __version__, config
from ..errors import BadRequest
from ..opargs import Args, NoArgs, arg, user_arg
from ..registry import Ctx, catalogue, op

if TYPE_CHECKING:
    from ..store import Store

CAPABILITIES = ["progress", "catalogue", "cursor"]


@dataclass(frozen=True, kw_only=True)
class HelloArgs(Args):
    client: str | None = arg(None)
    wire: int = arg(WIRE_VERSION)


@op(
    "hello",
    lane="inline",
    description="Handshake: daemon and wire versions, capabilities, and the catalogue of operations.",
    args=HelloArgs,
)
def hello(ctx: Ctx, args: HelloArgs) -> dict[str, Any]:
    wire = args.wire
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
def ping(ctx: Ctx, args: NoArgs) -> dict[str, Any]:
    return {"pong": True, "pid": ctx.parts.info.pid}


@dataclass(frozen=True, kw_only=True)
class StatusArgs(Args):
    repo: str | None = arg(None, description="Only the repository containing this path (default: all).")
    user: str | None = user_arg()


@op(
    "status",
    lane="read",
    description="Daemon health and, per repository, files, symbols, edges, freshness and the last build.",
    args=StatusArgs,
    tool=True,
)
def status(ctx: Ctx, args: StatusArgs) -> dict[str, Any]:
    assert ctx.conn is not None
    info = ctx.parts.info
    out: dict[str, Any] = {
        "daemon": {
            "version": __version__,
            "wire": WIRE_VERSION,
            "pid": info.pid,
            "uptimeS": round(time.time() - info.started_at, 3),  # since the last restart in place, if any
            "restartsInPlace": info.recycles,
            "socket": str(info.dirs.socket),
            "data": str(info.dirs.data),
            "log": str(info.dirs.log),
            "requests": ctx.parts.writer.handled,
            "recovery": info.recovery,
            # "closed" until something needs the graph: nothing registered yet; "resting" once no statement used it
            # for NEXUS_DB_IDLE_S, until the next one opens it again (ARCHITECTURE.md, "Memory at rest")
            "database": _database_state(ctx.parts.store),
            "databaseRests": ctx.parts.store.sleeps,
        }
    }
    for section in ctx.parts.status_sections:  # the areas' sections, listed by the composition root
        name, value = section(ctx.conn, args)
        out[name] = value
    return out


def _database_state(store: Store) -> str:
    if store.dormant:
        return "resting"
    return "open" if store.opened else "closed"


@op("shutdown", lane="control", description="Stop the daemon cleanly: finish the write in progress, close the graph.")
def shutdown(ctx: Ctx, args: NoArgs) -> dict[str, Any]:
    ctx.parts.request_stop()
    return {"stopping": True, "pid": ctx.parts.info.pid}


if config.get("NEXUS_DEBUG_OPS"):
    # Test-only operations, registered only when the daemon is started with NEXUS_DEBUG_OPS=1.

    @op("debug.recycle", lane="control", description="Restart the daemon in place now (tests the restart in place).")
    def debug_recycle(ctx: Ctx, args: NoArgs) -> dict[str, Any]:
        assert ctx.parts.request_recycle is not None
        ctx.parts.request_recycle("asked by debug.recycle")
        return {"restarting": True, "pid": ctx.parts.info.pid}

    @op("debug.raise", lane="read", description="Raise inside a handler (tests the crash barrier).")
    def debug_raise(ctx: Ctx, args: NoArgs) -> None:
        raise RuntimeError("boom (debug.raise)")

    @dataclass(frozen=True, kw_only=True)
    class SleepArgs(Args):
        seconds: float = arg(1.0, minimum=0, maximum=30)

    @op(
        "debug.sleep",
        lane="read",
        description="Sleep on a reader thread, sending progress (tests concurrency).",
        args=SleepArgs,
    )
    def debug_sleep(ctx: Ctx, args: SleepArgs) -> dict[str, Any]:
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            ctx.progress({"message": "sleeping", "left": round(end - time.monotonic(), 2)})
            time.sleep(0.01)
        return {"slept": args.seconds}

    @dataclass(frozen=True, kw_only=True)
    class StallArgs(SleepArgs):
        exclusive: bool = arg(False)

    @op(
        "debug.stall",
        lane="write",
        long=True,
        description="Hold the writer as a long job that reports one phase, then nothing (tests the heartbeat); "
        "with `exclusive`, in the store's exclusive window, as a COPY holds it (tests which reads wait for it).",
        args=StallArgs,
    )
    def debug_stall(ctx: Ctx, args: StallArgs) -> dict[str, Any]:
        ctx.progress({"phase": "stalling", "message": "then silent"})
        assert ctx.conn is not None
        with ctx.conn.store.exclusive() if args.exclusive else contextlib.nullcontext():
            time.sleep(args.seconds)
        return {"stalled": args.seconds}

    @dataclass(frozen=True, kw_only=True)
    class EchoArgs(Args):
        open_ended = True
        rest: dict[str, Any] = arg(None)

    @op(
        "debug.echo",
        lane="read",
        description="Echo the arguments back (tests routing).",
        args=EchoArgs,
    )
    def debug_echo(ctx: Ctx, args: EchoArgs) -> dict[str, Any]:
        return {"echo": args.rest}

    @dataclass(frozen=True, kw_only=True)
    class BigArgs(Args):
        bytes: int = arg(0, minimum=0)

    @op(
        "debug.big",
        lane="read",
        description="Return a result of the given size in bytes (tests the result size bound).",
        args=BigArgs,
    )
    def debug_big(ctx: Ctx, args: BigArgs) -> dict[str, Any]:
        return {"data": "x" * args.bytes}

    @dataclass(frozen=True, kw_only=True)
    class CypherArgs(Args):
        query: str = arg()
        params: dict[str, Any] | None = arg(None)

    @op(
        "debug.cypher",
        lane="read",
        description="Run a read-only Cypher query (tests inspect the graph with it).",
        args=CypherArgs,
    )
    def debug_cypher(ctx: Ctx, args: CypherArgs) -> dict[str, Any]:
        assert ctx.conn is not None
        return {"rows": ctx.conn.rows(args.query, args.params or {})}

