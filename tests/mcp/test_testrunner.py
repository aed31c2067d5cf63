"""The agent's test runner: off unless NEXUS_ALLOW_TESTS=1, one fixed command, test files only, a hard timeout."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from nexus_client.agent.testrunner import TestRunner

ON = {"NEXUS_ALLOW_TESTS": "1"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    (root / "tests" / "test_slow.py").write_text(
        "import subprocess, sys, time\n\n"
        "def test_slow():\n"
        "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "    time.sleep(60)\n"
    )
    (root / "pkg.py").write_text("X = 1\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "test_evil.py").write_text("def test_evil():\n    pass\n")
    os.symlink(tmp_path / "outside" / "test_evil.py", root / "tests" / "test_link.py")
    return root


def refusal(runner: TestRunner, *paths: str) -> str:
    out = runner.call({"paths": list(paths)})
    assert out.is_error, out.text
    return out.text


def test_off_unless_the_flag_is_exactly_one(repo: Path) -> None:
    for value in (None, "0", "true", "yes", " 1"):
        env = {} if value is None else {"NEXUS_ALLOW_TESTS": value}
        runner = TestRunner(repo, env={**{k: v for k, v in os.environ.items() if k != "NEXUS_ALLOW_TESTS"}, **env})
        assert "NEXUS_ALLOW_TESTS=1" in refusal(runner, "tests/test_ok.py")


def test_runs_test_files_with_the_fixed_command(repo: Path) -> None:
    out = TestRunner(repo, env=ON).call({"paths": ["tests/test_ok.py"]})
    assert not out.is_error, out.text
    assert out.structured is not None
    assert out.structured["passed"] is True and out.structured["exitCode"] == 0
    assert out.structured["command"] == ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--", "tests/test_ok.py"]


@pytest.mark.parametrize(
    "path, why",
    [
        ("/etc/passwd", "absolute"),
        ("tests/../pkg.py", "'..'"),
        ("../outside/test_evil.py", "'..'"),
        ("pkg.py", "not a test file"),
        ("tests/test_ok.py\x00.txt", "NUL"),
        ("tests/test_link.py", "outside the repository"),
        ("tests/test_missing.py", "not a file"),
        ("-k", "option"),
    ],
)
def test_refusals(repo: Path, path: str, why: str) -> None:
    assert why in refusal(TestRunner(repo, env=ON), path)


def test_one_bad_path_refuses_the_whole_run(repo: Path) -> None:
    text = refusal(TestRunner(repo, env=ON), "tests/test_ok.py", "/tmp/test_x.py")
    assert "absolute" in text


def test_a_run_past_its_timeout_is_killed_with_its_children(repo: Path) -> None:
    started = time.monotonic()
    out = TestRunner(repo, env=ON, timeout=3).call({"paths": ["tests/test_slow.py"]})
    assert time.monotonic() - started < 30
    assert out.is_error and out.text.startswith("timeout: ")
    assert out.structured is not None and out.structured["timedOut"] is True and out.structured["exitCode"] is None
