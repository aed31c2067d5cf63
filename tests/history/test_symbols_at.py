"""The definitions-only parse of old file versions names symbols exactly as the code graph does, and line
ranges are carried through a diff as `git log -L` carries them."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexusd.history import symbols_at
from nexusd.parse.extract import MODULE_QN, extract

ROOT = Path(__file__).resolve().parent.parent.parent
FILES = [
    "nexusd/history/ingest.py",
    "nexusd/retrieve/index.py",
    "nexusd/parse/extract.py",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests/fixtures/nav/ts_monorepo").rglob("*.ts")),
]


@pytest.mark.parametrize("rel", FILES)
def test_definitions_match_the_code_graph(rel: str) -> None:
    data = (ROOT / rel).read_bytes()
    full = [(s.start_line, s.end_line, s.qualified_name) for s in extract(rel, data).symbols if s.qualified_name != MODULE_QN]
    assert symbols_at.definitions(rel, data) == full


def test_old_line_maps_through_hunks() -> None:
    # as git prints them: two lines added after old line 3 (@@ -3,0 +4,2 @@), old lines 9-11 removed after new
    # line 10 (@@ -9,3 +10,0 @@)
    hunks = [(4, 2, 3, 0), (10, 0, 9, 3)]
    assert [symbols_at.old_line(n, hunks) for n in (1, 2, 3, 4, 5, 6, 10, 11, 12)] == [1, 2, 3, None, None, 4, 8, 12, 13]
    # a range covering an added hunk also takes the hunk's removed lines, as git log -L does
    assert symbols_at.old_range(9, 11, [(10, 1, 10, 2)]) == {9, 10, 11, 12}


def test_renames_pick_the_symbol_the_lines_came_from() -> None:
    old = [(1, 3, "other"), (5, 7, "keep")]
    new = [(1, 3, "greet"), (5, 7, "keep")]
    assert symbols_at.renames([(1, 1, 1, 1)], new, old) == {"greet": "other"}
    # a function added where nothing was removed is new, not a rename
    assert symbols_at.renames([(9, 3, 8, 0)], [(1, 3, "other"), (5, 7, "keep"), (9, 11, "fresh")], old) == {}
    # class renamed: each method maps to its own old method, not to the old class around it
    old_cls = [(1, 10, "A"), (2, 4, "A.m"), (6, 10, "A.n")]
    new_cls = [(1, 10, "B"), (2, 4, "B.m"), (6, 10, "B.n")]
    assert symbols_at.renames([(1, 1, 1, 1)], new_cls, old_cls) == {"B": "A", "B.m": "A.m", "B.n": "A.n"}
    # an old symbol goes to one new symbol only: the new class beside the renamed one is new
    old_one = [(1, 6, "_Loader"), (2, 6, "_Loader.get")]
    new_two = [(1, 4, "Env"), (2, 4, "Env.__init__"), (6, 11, "Loader"), (7, 11, "Loader.get")]
    got = symbols_at.renames([(1, 6, 1, 1)], new_two, old_one)  # "class _Loader" became Env and "class Loader"
    assert got == {"Loader": "_Loader", "Loader.get": "_Loader.get"}


def test_touched_uses_both_sides() -> None:
    new = [(1, 3, "a"), (5, 9, "b")]
    old = [(1, 3, "a"), (5, 12, "b"), (14, 16, "c")]
    assert symbols_at.touched([(9, 0, 10, 3)], new, old) == {"b"}  # lines removed from b's old body
    assert symbols_at.touched([(4, 1, 4, 1)], new, old) == set()  # the blank line between them
    assert symbols_at.touched([(9, 0, 14, 3)], new, old) == {"c"}  # c deleted


def test_a_method_that_became_a_function_keeps_its_name() -> None:
    # A test class turned into module functions: every line reindented, and the diff pairs lines across
    # functions (here b's lines with a's); the vanished holder of the same name wins.
    old = [(1, 9, "T"), (2, 4, "T.test_a"), (6, 9, "T.test_b")]
    new = [(1, 3, "test_b"), (5, 8, "test_a")]
    got = symbols_at.renames([(1, 8, 1, 9)], new, old)
    assert got == {"test_a": "T.test_a", "test_b": "T.test_b"}
