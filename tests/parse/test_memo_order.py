"""A file resolves the same whatever was resolved before it with the same memo.

`RepoIndex.memo` keeps derived lookups (type environments, the values names evaluate to) while nothing changes, so a
cold index resolves every file with what the files before it left there, and an edit later resolves a few of them
with a fresh memo. Both must give the same edges, confidences included. A memo key that left out what a value
depends on broke this once: on the standard library, `pathlib.py` got `self.parent.stat()` at confidence 0.85 or
0.9 by whether `importlib/resources/readers.py` had been resolved first (its `pathlib.Path(...).parent` evaluated
`parent` through an inferred instance, and the answer was kept for the declared `self`).
"""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

from nexusd.parse.extract import extract
from nexusd.resolve import RepoIndex
from nexusd.resolve.base import FileResolution
from nexusd.sync.walk import WalkRules

NAV = Path(__file__).resolve().parent.parent / "fixtures" / "nav"
APPS = sorted(p.name for p in NAV.iterdir() if p.is_dir())


def _edges(res: FileResolution) -> list[tuple[object, ...]]:
    return sorted((e.src_id, e.dst_id, e.line, e.resolution, e.confidence) for e in res.calls)


def _index(root: Path, paths: list[str]) -> RepoIndex:
    index = RepoIndex("t", root)
    for path in paths:
        index.set_file(extract(path, (root / path).read_bytes()))
    return index


def test_pathlib_resolves_the_same_after_a_file_that_reaches_it_through_an_inferred_instance(tmp_path: Path) -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    paths = ["pathlib.py", "importlib/resources/readers.py"]
    for path in paths:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(stdlib / path, tmp_path / path)
    index = _index(tmp_path, paths)
    fresh = index.resolve_file("pathlib.py")
    assert any(e.resolution == "inferred" for e in fresh.calls)
    index.release_memo()
    index.resolve_file("importlib/resources/readers.py")
    assert _edges(index.resolve_file("pathlib.py")) == _edges(fresh)


@pytest.mark.parametrize("app", APPS)
def test_every_file_resolves_as_in_a_cold_pass(app: str) -> None:
    root = NAV / app
    paths = [entry.path for entry in WalkRules(str(root), 1 << 20).walk()]
    index = _index(root, paths)
    cold = {path: index.resolve_file(path) for path in sorted(paths)}  # one memo for all, as a cold index has
    for path in sorted(paths):
        index.release_memo()
        assert _edges(index.resolve_file(path)) == _edges(cold[path]), path
