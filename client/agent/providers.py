"""Models the loop can drive: Claude (the default, through the `anthropic` SDK) and a scripted stub.

A provider sees a provider-neutral transcript and the tool specs and answers with a `Step`: some text and
zero or more tool calls; no calls means it is done. The transcript is a list of
    {"role": "user", "text": ...}
    {"role": "assistant", "text": ..., "calls": [ToolCall, ...]}
    {"role": "tool", "results": [{"id", "name", "text", "isError", "structured"}, ...]}

The stub is a scripted model: the same inputs give the same calls in the same order, offline, so a test can
assert the whole run. Its script adapts argument names to the schemas it is shown (a real model does too),
so it keeps working as the daemon's operations evolve.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Protocol

from nexusd import config

from .tools import ToolSpec, pick_arg, to_anthropic

DEFAULT_CLAUDE_MODEL = "claude-sonnet-4-5"
SYSTEM_PROMPT = (
    "You investigate a code repository through the NEXUS tools (a parsed code graph and a memory of earlier "
    "sessions). Use the tools rather than guessing: locate the symbol, then impact/context/paths for its "
    "neighbourhood. Before you finish, remember one fact about the symbol (pass `about`). "
    "End with a short report that cites every caller as path:line, the number of hops, and how each edge was "
    "resolved (resolution and confidence as the tools report them). Say so when an answer is a lower bound."
)


class ProviderError(Exception):
    """A provider cannot start (missing key or SDK): reported at start, never silently replaced."""


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class Step:
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)


class Provider(Protocol):
    name: str

    def step(self, transcript: list[dict[str, Any]], tools: list[ToolSpec]) -> Step: ...


# -- the stub ---------------------------------------------------------------------------------------------


def _first_item(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """The best hit of a locate-like result: the first dict in its first non-empty list."""
    if not result:
        return None
    for key in ("matches", "results", "items", "symbols", "candidates"):
        value = result.get(key)
        if isinstance(value, list) and value and isinstance(value[0], dict):
            return value[0]
    for value in result.values():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            return value[0]
    return result.get("symbol") if isinstance(result.get("symbol"), dict) else None


def symbol_ref(item: dict[str, Any] | None, fallback: str) -> str:
    if not item:
        return fallback
    for key in ("id", "key", "qualifiedName", "name"):
        if item.get(key):
            return str(item[key])
    return fallback


Script = Generator[Step, list[dict[str, Any]], None]


# Tokens the neighbourhood script gives `context` (the daemon's default, 1500, fits a symbol with a dozen
# neighbours); what still does not fit is fetched as plain lists, which cost less per item than ranked context.
CONTEXT_BUDGET = 4000


class StubProvider:
    """A scripted model. `plan` picks the script: impact (the agent's default), neighbourhood, recall."""

    name = "stub"

    def __init__(self, symbol: str, question: str | None = None, *, plan: str = "impact",
                 allow_tests: bool = False, depth: int = 3, handoff: bool = False):
        # plans: impact (the agent), impact_only, neighbourhood, recall (the token benchmark's tasks)
        self.symbol = symbol
        self.question = question
        self.plan = plan
        self.allow_tests = allow_tests
        self.handoff = handoff  # write a handoff at the end only when asked (`nexus agent --handoff`)
        self.depth = depth
        self._script: Script | None = None
        self._tools: dict[str, ToolSpec] = {}
        self._n = 0

    def step(self, transcript: list[dict[str, Any]], tools: list[ToolSpec]) -> Step:
        self._tools = {t.name: t for t in tools}
        last = transcript[-1] if transcript else {}
        results = last.get("results", []) if last.get("role") == "tool" else []
        try:
            if self._script is None:
                self._script = getattr(self, f"_plan_{self.plan}")()
                return next(self._script)
            return self._script.send(results)
        except StopIteration:
            return Step(text="done")

    # helpers ----------------------------------------------------------------------------------------

    def _call(self, name: str, **arguments: Any) -> Step:
        self._n += 1
        spec = self._tools.get(name)
        args = {k: v for k, v in arguments.items() if v is not None}
        if spec is not None:  # keep to the schema: drop what the tool does not take
            props = spec.input_schema.get("properties")
            if isinstance(props, dict) and spec.input_schema.get("additionalProperties") is False:
                args = {k: v for k, v in args.items() if k in props}
        return Step(calls=[ToolCall(id=f"stub-{self._n}", name=name, arguments=args)])

    def _has(self, name: str) -> bool:
        return name in self._tools

    def _named(self, tool: str, value: Any, *candidates: str, **extra: Any) -> Step:
        arg = pick_arg(self._tools.get(tool), *candidates) or candidates[0]
        return self._call(tool, **{arg: value}, **extra)

    @staticmethod
    def _ok(results: list[dict[str, Any]]) -> dict[str, Any] | None:
        if results and not results[0].get("isError"):
            return results[0].get("structured")
        return None

    def _locate(self) -> Generator[Step, list[dict[str, Any]], str]:
        target = self.symbol
        if self._has("locate"):
            found = self._ok((yield self._named("locate", self.symbol, "name", "query", "symbol", "text")))
            target = symbol_ref(_first_item(found), self.symbol)
        return target

    # scripts ----------------------------------------------------------------------------------------

    def _plan_impact(self) -> Script:
        """session -> recall -> locate -> impact -> [tests] -> remember -> handoff -> end; then the report."""
        session = None
        if self._has("session_start"):
            started = self._ok((yield self._call("session_start", title=f"agent: {self.symbol}", client="nexus-agent")))
            session = (started or {}).get("session") or (started or {}).get("id")
            if isinstance(session, dict):
                session = session.get("id")
        if self._has("recall"):
            yield self._named("recall", self.symbol, "query", "text")
        target = yield from self._locate()
        callers: list[dict[str, Any]] = []
        if self._has("impact"):
            impact = self._ok(
                (yield self._named("impact", target, "symbol", "id", "target", "name", depth=self.depth))
            )
            callers = caller_items(impact)
        files = sorted({str(c.get("path") or c.get("file")) for c in callers if c.get("path") or c.get("file")})
        tests = [f for f in files if os.path.basename(f).startswith("test_") or f.endswith("_test.py")]
        if self.allow_tests and tests and self._has("run_tests"):
            yield self._call("run_tests", paths=tests[:10])
        summary = (
            f"{self.symbol} has {len(callers)} caller(s) within {self.depth} hops"
            + (f" in {len(files)} file(s): {', '.join(files[:8])}" if files else "")
            + "."
        )
        if self._has("remember"):
            yield self._call("remember", text=summary, about=target, session=session)
        if self.handoff and self._has("handoff_write"):
            yield self._call(
                "handoff_write", done=f"Mapped the impact of changing {self.symbol}: {summary}",
                next=f"Review the callers of {self.symbol} before changing its signature.", session=session,
            )
        if session and self._has("session_end"):
            yield self._call("session_end", session=session, summary=summary)
        yield Step(text=summary)

    def _plan_impact_only(self) -> Script:
        """locate -> impact: the direct callers and nothing else (the token benchmark's task 1)."""
        target = yield from self._locate()
        if self._has("impact"):
            impact = self._tools["impact"]
            extra: dict[str, Any] = {}
            props = impact.input_schema.get("properties", {})
            for arg, value in (("depth", self.depth), ("limit", 1000)):
                if arg in props:  # as many callers per page as the tool allows
                    extra[arg] = min(value, props[arg].get("maximum", value))
            yield self._named("impact", target, "symbol", "id", "target", "name", **extra)
        yield Step(text=f"impact of {self.symbol}")

    def _plan_neighbourhood(self) -> Script:
        """locate -> context (depth 1, a budget for a whole neighbourhood) -> whatever context had to leave out:
        the remaining callers through impact (depth 1), the remaining callees through neighbors (calls, out)."""
        target = yield from self._locate()
        if not self._has("context"):
            yield Step(text=f"neighbourhood of {self.symbol}")
            return
        ctx = self._ok((yield self._named("context", target, "symbol", "id", "target", "name",
                                          **self._within("context", depth=1, budget=CONTEXT_BUDGET))))  # fmt: skip
        left = ((ctx or {}).get("truncated") or {}).get("remainingByRelation") or {}
        if left.get("caller") and self._has("impact"):
            yield self._named("impact", target, "symbol", "id", "target", "name", **self._within("impact", depth=1, limit=1000))
        if left.get("callee") and self._has("neighbors"):
            yield self._named("neighbors", target, "node", "symbol", "id",
                              **self._within("neighbors", direction="out", edgeKinds=["calls"], depth=1, limit=1000))  # fmt: skip
        yield Step(text=f"neighbourhood of {self.symbol}")

    def _within(self, tool: str, **wanted: Any) -> dict[str, Any]:
        """The arguments the tool takes, numbers capped at the schema's maximum."""
        spec = self._tools.get(tool)
        props = spec.input_schema.get("properties", {}) if spec is not None else {}
        out: dict[str, Any] = {}
        for arg, value in wanted.items():
            if arg in props:
                top = props[arg].get("maximum") if isinstance(props[arg], dict) else None
                out[arg] = min(value, top) if isinstance(value, int) and top is not None else value
        return out

    def _plan_recall(self) -> Script:
        """recall: what earlier sessions concluded."""
        if self._has("recall"):
            yield self._named("recall", self.symbol, "query", "text")
        yield Step(text=f"recalled {self.symbol}")


def caller_items(result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The caller entries of an impact-like result."""
    if not result:
        return []
    for key in ("callers", "impacted", "items", "results", "symbols"):
        value = result.get(key)
        if isinstance(value, list):
            return [v for v in value if isinstance(v, dict)]
    return []


# -- Claude -----------------------------------------------------------------------------------------------


class ClaudeProvider:
    """Claude through the Anthropic Messages API with tool use. Fails at construction without a key or SDK."""

    name = "claude"

    def __init__(self, model: str | None = None, *, max_tokens: int = 4096):
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise ProviderError(
                "the claude provider needs ANTHROPIC_API_KEY in the environment "
                "(or use --provider stub for the offline scripted model)"
            )
        try:
            import anthropic
        except ImportError as exc:
            raise ProviderError(
                "the claude provider needs the anthropic SDK: pip install 'nexusd[claude]'"
            ) from exc
        self.client = anthropic.Anthropic()
        self.model = model or config.get("NEXUS_AGENT_MODEL") or DEFAULT_CLAUDE_MODEL
        self.max_tokens = max_tokens

    @staticmethod
    def messages(transcript: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for entry in transcript:
            role = entry["role"]
            if role == "user":
                out.append({"role": "user", "content": entry["text"]})
            elif role == "assistant":
                blocks: list[dict[str, Any]] = []
                if entry.get("text"):
                    blocks.append({"type": "text", "text": entry["text"]})
                for call in entry.get("calls", []):
                    blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
                out.append({"role": "assistant", "content": blocks or [{"type": "text", "text": "..."}]})
            elif role == "tool":
                out.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": r["id"], "content": r["text"] or "(empty)",
                             "is_error": bool(r.get("isError"))}
                            for r in entry["results"]
                        ],
                    }
                )
        return out

    def step(self, transcript: list[dict[str, Any]], tools: list[ToolSpec]) -> Step:
        response = self.client.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            system=SYSTEM_PROMPT,
            tools=[to_anthropic(t) for t in tools],  # type: ignore[misc]
            messages=self.messages(transcript),  # type: ignore[arg-type]
        )
        text_parts: list[str] = []
        calls: list[ToolCall] = []
        for block in response.content:
            if block.type == "text":
                text_parts.append(block.text)
            elif block.type == "tool_use":
                calls.append(ToolCall(id=block.id, name=block.name, arguments=dict(block.input or {})))  # type: ignore[arg-type]
        usage = {"input": response.usage.input_tokens, "output": response.usage.output_tokens}
        return Step(text="\n".join(text_parts), calls=calls, usage=usage)


def make_provider(name: str, *, symbol: str, question: str | None, model: str | None = None,
                  allow_tests: bool = False, plan: str = "impact", handoff: bool = False) -> Provider:
    if name == "stub":
        return StubProvider(symbol, question, plan=plan, allow_tests=allow_tests, handoff=handoff)
    if name == "claude":
        return ClaudeProvider(model)
    raise ProviderError(f"unknown provider {name!r} (claude or stub)")
