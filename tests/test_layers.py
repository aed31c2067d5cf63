"""The layer rules in `.importlinter` hold, bite, and cover every module of the daemon.

`scripts/test.sh` runs `lint-imports` itself; these tests check the contract file: that an exception it lists
(`ignore_imports`) is load-bearing (without it the contract breaks, so the rule is really checked), and that no
top-level module of `nexusd` is left out of the layers and the kernel (a new module would otherwise be bound
by no rule).
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

CONTRACTS = REPO_ROOT / ".importlinter"


def _lint_imports() -> str:
    found = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(found).exists():
        pytest.fail("lint-imports is not installed: `pip install -e '.[test]'` installs import-linter")
    return found


def _read() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(inline_comment_prefixes=None, comment_prefixes=(";", "#"))
    parser.read(CONTRACTS, encoding="utf-8")
    return parser


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip()]


def _run(config: Path, contract: str | None = None) -> subprocess.CompletedProcess[str]:
    args = [_lint_imports(), "--no-cache", "--no-logo", str(config)]
    if contract:
        args += ["--contract", contract]
    return subprocess.run(args, capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)


def test_the_contracts_hold() -> None:
    out = _run(CONTRACTS)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_listed_exception_is_needed(tmp_path: Path) -> None:
    """Drop a contract's `ignore_imports` and it must break, naming one of the dropped imports."""
    parser = _read()
    with_ignores = [s for s in parser.sections() if s.startswith("importlinter:contract:") and "ignore_imports" in parser[s]]
    assert with_ignores, "the contract file lists no exceptions"
    for section in with_ignores:
        ignored = _lines(parser[section]["ignore_imports"])
        trimmed = _read()
        del trimmed[section]["ignore_imports"]
        config = tmp_path / f"{section.rsplit(':', 1)[1]}.ini"
        with config.open("w", encoding="utf-8") as fh:
            trimmed.write(fh)
        out = _run(config, contract=section.rsplit(":", 1)[1])
        assert out.returncode == 1, f"{section} still holds without its exceptions:\n{out.stdout}"
        # The report names the modules of each broken chain (a cycle's relative to its package, `.calls`): one
        # of the dropped exceptions' importers must be among them.
        importers = {line.split("->")[0].strip().rstrip("*").rstrip(".").rsplit(".", 1)[-1] for line in ignored}
        assert any(name in out.stdout for name in importers), out.stdout


def test_every_daemon_module_is_bound_by_a_rule() -> None:
    parser = _read()
    layered = {
        part.strip()
        for layer in _lines(parser["importlinter:contract:layers"]["layers"])
        for part in layer.replace("|", ":").split(":")
    }
    kernel = {m.removeprefix("nexusd.") for m in _lines(parser["importlinter:contract:kernel-imports-no-layer"]["source_modules"])}
    package = REPO_ROOT / "nexusd"
    modules = {p.stem for p in package.glob("*.py") if p.stem not in {"__init__", "__main__"}}
    modules |= {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert modules - layered - kernel == set(), "add these to a layer or to the kernel in .importlinter"
    assert not (layered & kernel)
