"""A symbol table let go is freed at once, by reference counting, with no collection of the heap.

A table (`RepoIndex`) and its language rules refer to each other, and the daemon freezes its heap after a query
snapshot loads (`gc.freeze`), so such a cycle was freed only by `gcpause.reclaim`'s full collection, which reaches
every object of the heap and holds the interpreter meanwhile: 14-20 s on a daemon holding the Linux kernel's graph.
`RepoIndex.dismantle` breaks the cycles as the table goes (`RepoSync.let_go_index`)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from nexusd.parse.extract import extract
from nexusd.resolve.base import RepoIndex
from nexusd.sync.indexer import RepoSync

FILES = {
    "pkg/__init__.py": "",
    "pkg/a.py": "from pkg.b import B\n\n\ndef run():\n    return B().go()\n",
    "pkg/b.py": "class B:\n    def go(self):\n        return helper()\n\n\ndef helper():\n    return 1\n",
    "src/util.h": "int twice(int x);\n",
    "src/util.c": '#include "util.h"\n\nint twice(int x) { return x * 2; }\n',
    "src/main.c": '#include "util.h"\n\nint main(void) { return twice(2); }\n',
    "web/lib.ts": "export class Client { send(): number { return 1; } }\n",
    "web/app.ts": "import { Client } from './lib';\n\nexport function start() { return new Client().send(); }\n",
}


@pytest.fixture
def no_collection() -> Iterator[None]:
    """The daemon's state after a snapshot load: the heap frozen, and no collection runs meanwhile."""
    gc.collect()
    gc.disable()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.enable()
        gc.collect()


def _table(root: Path) -> RepoIndex:
    index = RepoIndex("r", root)
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
        index.set_file(extract(path, text.encode()))
    index.prepare()
    for path in FILES:
        index.resolve_file(path)
    return index


def test_a_dismantled_table_is_freed_without_a_collection(tmp_path: Path, no_collection: None) -> None:
    kept = _table(tmp_path)
    ref = weakref.ref(kept)
    del kept
    assert ref() is not None  # the control: without dismantle, its cycles keep it until a full collection
    index = _table(tmp_path)
    ref = weakref.ref(index)
    rules = [weakref.ref(r) for r in set(index.rules.values())]
    assert rules
    index.dismantle()
    del index
    assert ref() is None and all(r() is None for r in rules)


def test_an_engine_letting_its_table_go_frees_it_at_once(tmp_path: Path, no_collection: None) -> None:
    eng = RepoSync("r", tmp_path, tmp_path / "cache", lambda: None)  # type: ignore[arg-type,return-value]
    eng.index = _table(tmp_path)
    ref = weakref.ref(eng.index)
    assert eng.release()
    assert ref() is None and eng.index is None and eng.released
    eng.index = _table(tmp_path)
    ref = weakref.ref(eng.index)
    eng.reset()  # (after a failed batch)
    assert ref() is None
