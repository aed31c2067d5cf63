"""The reference agent (`nexus agent`): an outside MCP client of `nexus mcp` that runs a model's tool loop.

    loop.py        spawn `nexus mcp`, list tools, model -> calls -> results until done
    providers.py   Claude (anthropic SDK, optional extra) and the scripted stub model
    tools.py       provider-neutral tool specs; conversion to the model's format
    testrunner.py  the one way to run repository code: test files, fixed command, refusals, timeout
    report.py      the cited report built from the tool results

Only this package and `nexus_client.mcp_bridge` import the `mcp` SDK, and only when they run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .providers import ProviderError, make_provider
from .testrunner import TestRunner, tests_allowed

__all__ = ["AgentConfig", "ProviderError", "run_agent"]


@dataclass
class AgentConfig:
    symbol: str
    repo: str
    question: str | None = None
    provider: str = "claude"
    model: str | None = None
    max_steps: int = 12
    user: str | None = None
    env: dict[str, str] | None = None
    test_timeout: float = 120.0
    handoff: bool = False  # leave a handoff for the next session (opt-in: `nexus agent --handoff`)


def prompt_for(config: AgentConfig) -> str:
    question = config.question or f"What is affected if `{config.symbol}` changes?"
    return (
        f"Repository: {config.repo}\nSymbol: {config.symbol}\nQuestion: {question}\n"
        "Answer with a cited report: callers (path:line), files, hops, and how each edge was resolved."
        + ("\nBefore you finish, write a handoff for the next session (handoff_write)." if config.handoff else "")
    )


def run_agent(config: AgentConfig) -> dict[str, Any]:
    """Run the agent to its report. A provider that cannot start fails here, before any tool runs."""
    import os

    import anyio

    from .loop import run_with_mcp
    from .report import build_report

    allow = tests_allowed({**os.environ, **(config.env or {})})
    try:
        provider = make_provider(config.provider, symbol=config.symbol, question=config.question,
                                 model=config.model, allow_tests=allow, handoff=config.handoff)
    except ProviderError as exc:
        return {"symbol": config.symbol, "provider": config.provider, "error": str(exc), "toolCalls": []}
    local: dict[str, Any] = {}
    if allow:
        runner = TestRunner(config.repo, timeout=config.test_timeout, env=config.env)
        local[runner.spec.name] = runner

    async def main() -> Any:
        hidden = () if config.handoff else ("handoff_write",)  # a model cannot write one unless asked
        return await run_with_mcp(provider, prompt_for(config), config.repo, local, max_steps=config.max_steps,
                                  env=config.env, user=config.user, hidden=hidden)

    result = anyio.run(main)
    report = build_report(config, result.trace, result.answer)
    report["steps"] = result.steps
    report["tools"] = result.tools
    if result.usage:
        report["usage"] = result.usage
    return report
