"""Docs are tested: every CLI command is in the README and every wire op is in ARCHITECTURE.md."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cli_commands() -> list[str]:
    from tests.test_client import all_commands

    return sorted(" ".join(path) for path, _cmd in all_commands())


def test_every_cli_command_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    missing = [c for c in cli_commands() if f"nexus {c}" not in readme]
    assert not missing, f"commands missing from README.md: {missing}"


def test_every_wire_op_is_in_architecture() -> None:
    code = "import json; from nexusd import ops; from nexusd.registry import REGISTRY; print(json.dumps(sorted(REGISTRY)))"
    env = {k: v for k, v in os.environ.items() if k != "NEXUS_DEBUG_OPS"}
    names = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    import json

    text = (ROOT / "ARCHITECTURE.md").read_text()
    missing = [op for op in json.loads(names) if f"`{op}`" not in text]
    assert not missing, f"ops missing from ARCHITECTURE.md (write them in backticks): {missing}"
