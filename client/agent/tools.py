"""Tools as the loop sees them: MCP tools listed by the server, plus local tools the agent runs itself.

A `ToolSpec` is provider-neutral (name, description, JSON schema, read-only flag); each provider converts the
list to its model's format (`to_anthropic` for Claude). Local tools (the test runner, the benchmark's
filesystem tools) implement `LocalTool`: the loop calls them in-process instead of over MCP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool = False
    local: bool = False


@dataclass
class ToolOutcome:
    """What a tool call returned: text for the model, the structured result for the report."""

    text: str
    structured: dict[str, Any] | None = None
    is_error: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class LocalTool(Protocol):
    spec: ToolSpec

    def call(self, arguments: dict[str, Any]) -> ToolOutcome: ...


def from_mcp(tool: Any) -> ToolSpec:
    """An `mcp.types.Tool` (as listed by the server) as a neutral spec."""
    annotations = getattr(tool, "annotations", None)
    return ToolSpec(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema or {"type": "object", "properties": {}}),
        read_only=bool(annotations and annotations.read_only_hint),
    )


def to_anthropic(spec: ToolSpec) -> dict[str, Any]:
    """Anthropic Messages API tool definition: name, description, input_schema (a JSON Schema object)."""
    schema = dict(spec.input_schema)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    description = spec.description + (" (read-only)" if spec.read_only else "")
    return {"name": spec.name, "description": description, "input_schema": schema}


def pick_arg(spec: ToolSpec | None, *candidates: str) -> str | None:
    """The first of `candidates` that the tool's schema accepts (schemas name the same idea differently)."""
    if spec is None:
        return None
    props = spec.input_schema.get("properties", {})
    for name in candidates:
        if name in props:
            return name
    required = spec.input_schema.get("required") or []
    return required[0] if required else None
