"""The user directories the client computes without platformdirs are the ones platformdirs gives."""

from __future__ import annotations

import sys
from pathlib import Path

import platformdirs
import pytest

from nexusd.paths import user_dir


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG rules are written out for Linux only")
@pytest.mark.parametrize(
    "env",
    [{}, {"XDG_DATA_HOME": "/x/data", "XDG_STATE_HOME": "/x/state", "XDG_CONFIG_HOME": "/x/config"},
     {"XDG_DATA_HOME": "relative/ignored", "XDG_STATE_HOME": "  ", "XDG_CONFIG_HOME": ""}],
)  # fmt: skip
def test_xdg_dirs_match_platformdirs(env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    for kind in ("data", "state", "config"):
        assert user_dir(kind, "nexus") == Path(getattr(platformdirs, f"user_{kind}_dir")("nexus")), kind


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG rules are written out for Linux only")
@pytest.mark.parametrize("base", [None, "/x/config", "relative/ignored"])
def test_config_file_follows_xdg_like_platformdirs(base: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from nexusd.config import config_file

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    if base is not None:
        monkeypatch.setenv("XDG_CONFIG_HOME", base)
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("NEXUS_CONFIG", "NEXUS_HOME")}
    assert config_file(env) == Path(platformdirs.user_config_dir("nexus")) / "config.toml"
