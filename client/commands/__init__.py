"""CLI command modules; each defines `register(main)`. Order is the order of `nexus --help`."""

from . import code, daemon, forget, history, hooks, mcp, memory, query, status

COMMAND_MODULES = [daemon, status, code, query, memory, history, hooks, forget, mcp]
