"""`RepoIndex.release_caches` drops what resolution keeps between batches, and nothing it answers changes.

Sync releases these caches after every big batch, so that the memory the batch's resolution used can be handed
back (ARCHITECTURE.md, "Memory of the code graph"). Each fixture application (one per language family) is
resolved, its caches released, resolved again, then edited and resolved once more: every file's edges and
unresolved calls must be those of an index that never released anything.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nexusd.parse.extract import extract
from nexusd.resolve import RepoIndex
from nexusd.resolve.base import FileResolution
from nexusd.sync.walk import WalkRules

NAV = Path(__file__).resolve().parent.parent / "fixtures" / "nav"
APPS = sorted(p.name for p in NAV.iterdir() if p.is_dir())


def _index(root: Path) -> RepoIndex:
    index = RepoIndex("t", root)
    for entry in WalkRules(str(root), 1 << 20).walk():
        index.set_file(extract(entry.path, (root / entry.path).read_bytes()))
    return index


def _all(index: RepoIndex) -> dict[str, FileResolution]:
    return {path: index.resolve_file(path) for path in sorted(index.tables)}


# What each rules class releases (config read from manifests, such as go.mod's modules or package.json's
# workspaces, is kept: `config_changed` drops that).
RELEASED = {"PythonRules": ("_modules",), "EcmaRules": ("_spec_cache",), "GoRules": ("_packages",),
            "JavaRules": ("_packages",), "CSharpRules": ("_packages",), "RubyRules": ("_packages",),
            "RustRules": ("_mods", "_file_mod", "_impls"), "CFamilyRules": ("_kept", "_includes")}  # fmt: skip


def _kept(index: RepoIndex) -> int:
    """How much the caches `release_caches` drops hold (so the test knows there was something to drop)."""
    held = sum(t._local_imports is not None for t in index.tables.values())
    for rules in set(index.rules.values()):
        for name in RELEASED.get(type(rules).__name__, ()):
            value = getattr(rules, name)
            held += len(value) if value else 0
    return held


@pytest.mark.parametrize("app", APPS)
def test_released_caches_give_the_same_answers(app: str, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / app
    shutil.copytree(NAV / app, root)
    index = _index(root)
    first = _all(index)
    assert _kept(index) > 0
    index.release_caches()
    assert _kept(index) == 0
    assert _all(index) == first

    # An edit after a release is resolved as by an index that never released anything.
    path = next(p for p in sorted(index.tables) if index.tables[p].facts.calls)
    text = (root / path).read_text() + "\n"
    (root / path).write_text(text)
    index.release_caches()
    index.set_file(extract(path, text.encode()))
    assert _all(index) == _all(_index(root))
