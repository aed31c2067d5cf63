"""CLI command modules; each defines `register(main)` and is imported only when one of its commands runs.

`COMMANDS` maps each top-level command to its module, so `nexus status` imports the status module and not
the other eight (about 20 ms of a ~100 ms process). tests/test_client.py checks the map against what each
module registers.
"""

MODULES = ("daemon", "status", "code", "query", "memory", "history", "hooks", "forget", "mcp", "config", "help")

COMMANDS: dict[str, str] = {
    "daemon": "daemon",
    "status": "status",
    "index": "code",
    "sync": "code",
    "repos": "code",
    "locate": "query",
    "show": "query",
    "context": "query",
    "neighbors": "query",
    "impact": "query",
    "paths": "query",
    "imports": "query",
    "importers": "query",
    "session": "memory",
    "turn": "memory",
    "remember": "memory",
    "procedure": "memory",
    "recall": "memory",
    "handoff": "memory",
    "memory": "memory",
    "history": "history",
    "query": "history",
    "scan": "history",
    "hook": "hooks",
    "forget": "forget",
    "mcp": "mcp",
    "agent": "mcp",
    "config": "config",
    "help": "help",
    "completion": "help",
}
