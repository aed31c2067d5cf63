"""File roles and language mapping are path conventions; these pin the conventions down."""

from __future__ import annotations

import pytest

from nexusd.parse.languages import classify_role, language_for, parsed_language


@pytest.mark.parametrize(
    "path,role",
    [
        ("src/pkg/mod.py", "source"),
        ("tests/test_mod.py", "test"),
        ("pkg/mod_test.py", "test"),
        ("test_x.py", "test"),
        ("web/src/app.test.ts", "test"),
        ("web/src/app.spec.js", "test"),
        ("web/src/__tests__/app.tsx", "test"),
        ("conftest.py", "test"),
        ("pyproject.toml", "manifest"),
        ("setup.py", "manifest"),
        ("packages/a/package.json", "manifest"),
        ("go.mod", "manifest"),
        ("Cargo.toml", "manifest"),
        ("pkg/__main__.py", "entry_point"),
        ("main.py", "entry_point"),
        ("pkg/cli.py", "entry_point"),
        ("bin/run", "entry_point"),
        ("index.ts", "entry_point"),
        ("README.md", "document"),
        ("docs/guide.rst", "document"),
        ("notes.txt", "document"),
        ("tsconfig.json", "configuration"),
        ("tsconfig.build.json", "configuration"),
        ("config/app.yaml", "configuration"),
        (".eslintrc", "configuration"),
        (".github/workflows/ci.yml", "configuration"),
        ("setup.cfg", "manifest"),
        ("image.png", "other"),
    ],
)
def test_classify_role(path: str, role: str) -> None:
    assert classify_role(path) == role


def test_languages() -> None:
    assert parsed_language("a/b.pyi") == "python"
    assert parsed_language("a/b.mjs") == "javascript"
    assert parsed_language("a/b.cts") == "typescript"
    assert parsed_language("a/b.tsx") == "tsx"
    assert parsed_language("a/b.go") == "go"
    assert parsed_language("a/b.kt") is None
    assert language_for("a/b.go") == "go"
    assert language_for("a/b.rs") == "rust"
    assert language_for("Dockerfile") == "dockerfile"
    assert language_for("a/b.unknown") == ""
