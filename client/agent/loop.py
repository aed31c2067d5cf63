"""The tool loop: connect to `nexus mcp` as an outside MCP client, offer its tools to the model, run calls.

The agent uses nothing but what the MCP server lists (plus the local test runner when the user allows it):
it spawns `python -m nexus_client.cli_main mcp` over stdio with the official SDK client, answers `roots/list`
with the repository, converts the listed tools for the model, and loops model -> tool calls -> results until
the model stops calling tools or `max_steps` is reached. Every call is recorded in the trace the report and
the benchmark read (arguments, error flag, structured result, characters of text the model read).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .providers import Provider, Step
from .tools import LocalTool, ToolOutcome, ToolSpec, from_mcp

McpCall = Callable[[str, dict[str, Any]], Awaitable[ToolOutcome]]


@dataclass
class LoopResult:
    answer: str
    trace: list[dict[str, Any]]
    transcript: list[dict[str, Any]]
    steps: int
    tools: list[str] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)


def server_params(repo: str, env: dict[str, str] | None = None, user: str | None = None) -> Any:
    """How to start `nexus mcp`: this interpreter, the CLI module, the full environment (the SDK's default
    environment drops NEXUS_HOME and friends), the repository as the working directory."""
    from mcp import StdioServerParameters

    args = ["-m", "nexus_client.cli_main"]
    if user:
        args += ["--user", user]
    return StdioServerParameters(
        command=sys.executable, args=[*args, "mcp"], env={**os.environ, **(env or {})}, cwd=repo
    )


async def run_loop(provider: Provider, prompt: str, tools: list[ToolSpec], mcp_call: McpCall | None,
                   local: dict[str, LocalTool], *, max_steps: int = 12) -> LoopResult:
    import anyio

    transcript: list[dict[str, Any]] = [{"role": "user", "text": prompt}]
    trace: list[dict[str, Any]] = []
    usage: dict[str, int] = {}
    answer = ""
    steps = 0
    while steps < max_steps:
        steps += 1
        step: Step = await anyio.to_thread.run_sync(lambda: provider.step(transcript, tools))
        for k, v in step.usage.items():
            usage[k] = usage.get(k, 0) + v
        transcript.append({"role": "assistant", "text": step.text, "calls": step.calls})
        if not step.calls:
            answer = step.text
            break
        results = []
        for call in step.calls:
            if call.name in local:
                tool = local[call.name]
                outcome = await anyio.to_thread.run_sync(lambda t=tool, a=call.arguments: t.call(a))  # type: ignore[misc]
            elif mcp_call is not None and any(t.name == call.name for t in tools):
                outcome = await mcp_call(call.name, call.arguments)
            else:
                outcome = ToolOutcome(f"unknown_tool: no tool named {call.name!r}", None, is_error=True)
            trace.append(
                {"name": call.name, "arguments": call.arguments, "isError": outcome.is_error,
                 "structured": outcome.structured, "chars": len(outcome.text), **outcome.extra}
            )
            results.append(
                {"id": call.id, "name": call.name, "text": outcome.text, "isError": outcome.is_error,
                 "structured": outcome.structured}
            )
        transcript.append({"role": "tool", "results": results})
    else:
        answer = f"stopped after {max_steps} steps"
    return LoopResult(answer, trace, transcript, steps, [t.name for t in tools], usage)


async def run_with_mcp(provider: Provider, prompt: str, repo: str, local: dict[str, LocalTool], *,
                       max_steps: int = 12, env: dict[str, str] | None = None, user: str | None = None,
                       errlog: Any = None, hidden: tuple[str, ...] = ()) -> LoopResult:
    """Start `nexus mcp`, list its tools, and run the loop against them."""
    import mcp.types as mt
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    root_uri = Path(repo).absolute().as_uri()

    async def list_roots(context: Any) -> mt.ListRootsResult:
        return mt.ListRootsResult(roots=[mt.Root(uri=root_uri, name=Path(repo).name)])  # type: ignore[arg-type]

    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(
            stdio_client(server_params(repo, env, user), errlog=errlog or sys.stderr)
        )
        session = await stack.enter_async_context(ClientSession(read, write, list_roots_callback=list_roots))
        await session.initialize()
        listed = await session.list_tools()
        tools = [from_mcp(t) for t in listed.tools if t.name not in hidden] + [t.spec for t in local.values()]

        async def mcp_call(name: str, arguments: dict[str, Any]) -> ToolOutcome:
            result = await session.call_tool(name, arguments)
            text = "\n".join(c.text for c in result.content if isinstance(c, mt.TextContent))
            return ToolOutcome(text, result.structured_content, bool(result.is_error))

        return await run_loop(provider, prompt, tools, mcp_call, local, max_steps=max_steps)
    raise AssertionError("unreachable")
