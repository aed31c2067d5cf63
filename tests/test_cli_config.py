"""`nexus config` and nexusd/config.py: every setting, its value, and where it came from."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from nexusd import config

ROOT = Path(__file__).resolve().parent.parent


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_")}
    return subprocess.run([sys.executable, "-m", "nexus_client.cli_main", *args], env={**base, **env},
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def test_every_setting_read_in_the_code_is_declared() -> None:
    used: set[str] = set()
    for folder in ("nexusd", "client"):
        for path in (ROOT / folder).rglob("*.py"):
            used |= set(re.findall(r"(?<![_A-Z])NEXUS_[A-Z][A-Z_]*[A-Z]", path.read_text()))
    declared = set(config.BY_NAME)
    assert used - declared == set(), f"undeclared settings: {sorted(used - declared)}"
    assert len(declared) >= 24


def test_every_setting_is_documented_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    missing = [name for name in config.BY_NAME if f"`{name}`" not in readme]
    assert not missing, missing


def test_default_file_env_precedence(tmp_path: Path) -> None:
    home = tmp_path / "nx"
    home.mkdir()
    (home / "config.toml").write_text('settle_ms = 75\nhistory_commits = 12\nno_watch = true\nbogus_key = 1\n')
    env = {"NEXUS_HOME": str(home), "NEXUS_HISTORY_COMMITS": "30", "NEXUS_PARSE_TIMEOUT": "not-a-number"}
    c = config.Config(env)
    assert c.file == home / "config.toml"
    assert (c.get("NEXUS_SETTLE_MS"), c.values["NEXUS_SETTLE_MS"].source) == (75.0, "file")
    assert (c.get("NEXUS_HISTORY_COMMITS"), c.values["NEXUS_HISTORY_COMMITS"].source) == (30, "env")
    assert c.get("NEXUS_NO_WATCH") is True
    assert (c.get("NEXUS_BUFFER_POOL_MB"), c.values["NEXUS_BUFFER_POOL_MB"].source) == (384, "default")
    bad = c.values["NEXUS_PARSE_TIMEOUT"]
    assert bad.value == 10.0 and bad.problem and "ignored" in bad.problem
    assert c.unknown_keys == ["bogus_key"]

    out = _cli(env, "config", "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    rows = {x["name"]: x for x in r["settings"]}
    assert set(rows) == set(config.BY_NAME)
    assert rows["NEXUS_SETTLE_MS"]["source"] == "file" and rows["NEXUS_SETTLE_MS"]["value"] == 75
    assert rows["NEXUS_HISTORY_COMMITS"]["source"] == "env" and rows["NEXUS_HISTORY_COMMITS"]["value"] == 30
    assert rows["NEXUS_HOME"]["source"] == "env"
    assert r["unknownKeys"] == ["bogus_key"]

    text = _cli({**env, "NO_COLOR": "1"}, "config")
    assert text.returncode == 0 and "\x1b[" not in text.stdout
    line = next(ln for ln in text.stdout.splitlines() if ln.startswith("NEXUS_SETTLE_MS"))
    assert re.search(r"\b75\s+file\b", line), line


def test_home_in_the_file_is_ignored(tmp_path: Path) -> None:
    """NEXUS_HOME decides where the file is, so the file cannot move it."""
    (tmp_path / "config.toml").write_text(f'home = "{tmp_path / "elsewhere"}"\n')
    c = config.Config({"NEXUS_CONFIG": str(tmp_path / "config.toml")})
    assert c.get("NEXUS_HOME") is None and c.values["NEXUS_HOME"].source == "default"


def test_a_broken_file_is_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("settle_ms = = 3\n")
    out = _cli({"NEXUS_HOME": str(tmp_path)}, "config", "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["fileError"] and all(x["source"] != "file" for x in r["settings"])
