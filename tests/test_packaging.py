"""Packaging: every package folder is listed in pyproject.toml, and no bare `client` package is installed."""

from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_listed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = set()
    for init in list((ROOT / "nexusd").rglob("__init__.py")) + list((ROOT / "client").rglob("__init__.py")):
        rel = init.parent.relative_to(ROOT).parts
        name = ".".join(("nexus_client",) + rel[1:]) if rel[0] == "client" else ".".join(rel)
        found.add(name)
    assert found <= listed, f"not listed in pyproject.toml: {sorted(found - listed)}"
    assert "client" not in listed


def test_bare_client_is_not_importable_from_site() -> None:
    import importlib.util

    spec = importlib.util.find_spec("nexus_client")
    assert spec is not None and spec.origin is not None
    assert Path(spec.origin).parent.name == "client"  # maps to our folder, under a project-specific name
