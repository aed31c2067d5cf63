"""The agent's one way to execute repository code: run test files with one fixed command, or refuse.

Running tests is off unless NEXUS_ALLOW_TESTS=1 exactly. When on, the model may choose only *which test
files* run, never the command: `python -m pytest -q <files>` with the repository root as cwd, no shell,
repository-relative paths that stay inside the root (no absolute paths, no `..`, no NUL bytes, no symlink out),
files named like tests (`test_*.py` or `*_test.py`), and a timeout after which the child's whole process group
is killed. Every refusal is a tool error that says why.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path, PurePosixPath
from typing import Any

from nexusd.errors import BadRequest, Forbidden, NexusError

from .tools import ToolOutcome, ToolSpec

ENV_FLAG = "NEXUS_ALLOW_TESTS"
DEFAULT_TIMEOUT_S = 120.0
MAX_FILES = 50
OUTPUT_TAIL = 4000


def tests_allowed(env: dict[str, str] | None = None) -> bool:
    return (env if env is not None else os.environ).get(ENV_FLAG) == "1"


def is_test_file(name: str) -> bool:
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def check_path(root: Path, raw: Any) -> str:
    """A validated repository-relative test file path, or BadRequest/Forbidden saying why not."""
    if not isinstance(raw, str) or not raw:
        raise BadRequest("a test path must be a non-empty string")
    if "\x00" in raw:
        raise BadRequest("refused: the path contains a NUL byte")
    if raw.startswith(("/", "\\")) or os.path.isabs(raw) or (len(raw) > 1 and raw[1] == ":"):
        raise Forbidden(f"refused: {raw!r} is absolute; give a path relative to the repository root")
    parts = PurePosixPath(raw.replace("\\", "/")).parts
    if ".." in parts:
        raise Forbidden(f"refused: {raw!r} contains '..'; paths must stay inside the repository")
    if raw.startswith("-"):
        raise BadRequest(f"refused: {raw!r} looks like an option, not a file")
    if not is_test_file(parts[-1] if parts else ""):
        raise Forbidden(f"refused: {raw!r} is not a test file (test_*.py or *_test.py)")
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, *parts))
    if not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise Forbidden(f"refused: {raw!r} resolves outside the repository")
    if not os.path.isfile(real):
        raise BadRequest(f"refused: {raw!r} is not a file in the repository")
    return "/".join(parts)


class TestRunner:
    """The `run_tests` local tool."""

    __test__ = False  # not a pytest test class, despite the name

    spec = ToolSpec(
        name="run_tests",
        description=(
            "Run test files with the repository's fixed test command (`python -m pytest -q FILES`, no shell). "
            "Give repository-relative paths of test files (test_*.py or *_test.py); anything else is refused. "
            "Returns the exit code and the end of the output."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "paths": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "maxItems": MAX_FILES,
                    "description": "Repository-relative test file paths.",
                }
            },
            "required": ["paths"],
            "additionalProperties": False,
        },
        local=True,
    )

    def __init__(self, root: str | Path, *, timeout: float = DEFAULT_TIMEOUT_S, env: dict[str, str] | None = None):
        self.root = Path(root)
        self.timeout = timeout
        self.env = env

    def command(self, paths: list[str]) -> list[str]:
        return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--", *paths]

    def call(self, arguments: dict[str, Any]) -> ToolOutcome:
        try:
            return self._run(arguments)
        except NexusError as exc:
            text = f"{exc.code}: {exc.message}"
            return ToolOutcome(text, {"error": exc.to_wire()}, is_error=True)

    def _run(self, arguments: dict[str, Any]) -> ToolOutcome:
        if not tests_allowed(self.env):
            raise Forbidden(f"running tests is off; the user enables it with {ENV_FLAG}=1")
        raw = arguments.get("paths")
        if not isinstance(raw, list) or not raw:
            raise BadRequest("`paths` must be a non-empty list of test files")
        if len(raw) > MAX_FILES:
            raise BadRequest(f"at most {MAX_FILES} test files per run")
        paths = [check_path(self.root, p) for p in raw]
        argv = self.command(paths)
        started = time.monotonic()
        proc = subprocess.Popen(
            argv, cwd=self.root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, env=None if self.env is None else {**os.environ, **self.env},
        )
        timed_out = False
        try:
            out, _ = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the whole group: pytest's own children too
            except ProcessLookupError:
                pass
            out, _ = proc.communicate()
        output = out.decode("utf-8", "replace")[-OUTPUT_TAIL:]
        result = {
            "command": ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--", *paths],
            "paths": paths,
            "exitCode": None if timed_out else proc.returncode,
            "passed": (not timed_out) and proc.returncode == 0,
            "timedOut": timed_out,
            "seconds": round(time.monotonic() - started, 3),
            "output": output,
        }
        if timed_out:
            text = f"timeout: the test run passed its {self.timeout:g}s limit and was killed\n{output}"
            return ToolOutcome(text, result, is_error=True)
        text = f"exit {proc.returncode} ({'passed' if result['passed'] else 'failed'}) in {result['seconds']}s\n{output}"
        return ToolOutcome(text, result)
