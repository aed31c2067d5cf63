"""The engine keeps a file's calls and type facts packed (`facts.Packed`), and nothing it answers changes.

Calls and type facts are most of a repository's fact records; the engine keeps them as one blob per file and makes
the records again on each read (ARCHITECTURE.md, "Memory of the code graph"). Every way facts reach the engine
must leave them packed: the parser processes' pipe, an inline parse (`intern_facts`) and the facts cache
(`facts_from_plain`). Resolution over packed facts must equal resolution over the lists extraction made, for
every fixture application (one per language family).
"""

from __future__ import annotations

import copy
import json
import marshal
import shutil
from pathlib import Path

import pytest

from nexusd.parse.extract import extract
from nexusd.parse.facts import (
    CallFact,
    FileFacts,
    Packed,
    TypeFact,
    facts_from_plain,
    facts_to_plain,
    pack_facts,
)
from nexusd.resolve import RepoIndex
from nexusd.sync.indexer import intern_facts
from nexusd.sync.parsepool import ParseTask, decode_outcome, encode_outcome, process_one
from nexusd.sync.walk import WalkRules

NAV = Path(__file__).resolve().parent.parent / "fixtures" / "nav"
APPS = sorted(p.name for p in NAV.iterdir() if p.is_dir())
NO_BASES: tuple[str, ...] = tuple()

SOURCE = b'''
import os
from pkg.base import Base


class Service(Base):
    def __init__(self, client: Client) -> None:
        self.client = client

    def run(self, path: str) -> str:
        data = self.client.fetch(path)
        return os.path.join(helper(data), Builder().build().name)


def helper(x):
    y = x.strip()
    return y.lower()
'''


def _facts() -> FileFacts:
    facts = extract("pkg/service.py", SOURCE)
    assert len(facts.calls) >= 5 and len(facts.types) >= 3 and isinstance(facts.calls, list)
    return facts


def test_packed_records_read_back_field_for_field() -> None:
    facts = _facts()
    calls, types = Packed.of(CallFact, facts.calls), Packed.of(TypeFact, facts.types)
    assert list(calls) == facts.calls and list(types) == facts.types
    assert calls == facts.calls and facts.calls == calls  # either side of ==
    assert len(calls) == len(facts.calls) and bool(calls)
    assert calls[0] == facts.calls[0] and calls[-1] == facts.calls[-1] and calls[1:3] == facts.calls[1:3]
    first, again = next(iter(calls)), next(iter(calls))
    assert first == again and first is not again  # each read makes its records: changing one changes nothing kept
    first.name = "changed"
    assert calls[0] == facts.calls[0]
    assert Packed.of(CallFact, []) == [] and not Packed.of(CallFact, [])
    assert Packed.of(CallFact, calls) == calls  # packing packed records keeps them


def test_a_long_blob_is_deflated_and_a_short_one_is_not() -> None:
    many = [CallFact("f", f"callee_{i % 7}", "self", i) for i in range(300)]
    packed = Packed.of(CallFact, many)
    raw = len(marshal.dumps(packed.rows()))
    assert packed.blob[:1] == b"x" and len(packed.blob) < raw / 3  # repeated names deflate well
    assert list(packed) == many and packed.rows() == tuple((c.caller, c.name, c.receiver, c.line, c.is_new, c.chain)
                                                           for c in many)  # fmt: skip
    few = Packed.of(CallFact, many[:1])
    assert few.blob[:1] != b"x" and list(few) == many[:1]  # (a stream's header would cost more)


@pytest.mark.parametrize("way", ["pipe", "inline", "cache"])
def test_every_way_into_the_engine_leaves_calls_and_types_packed(way: str, tmp_path: Path) -> None:
    expected = _facts()
    if way == "pipe":
        (tmp_path / "pkg").mkdir()
        (tmp_path / "pkg" / "service.py").write_bytes(SOURCE)
        outcome = decode_outcome(encode_outcome(process_one(str(tmp_path), ParseTask("pkg/service.py"), 1 << 20)))
        assert outcome.facts is not None
        got = intern_facts(outcome.facts)
    elif way == "inline":
        got = intern_facts(_facts())
    else:
        got = intern_facts(facts_from_plain(json.loads(json.dumps(facts_to_plain(_facts())))))
    assert isinstance(got.calls, Packed) and isinstance(got.types, Packed)
    assert got == expected
    # the facts cache writes packed facts as it wrote the lists
    assert json.dumps(facts_to_plain(got)) == json.dumps(facts_to_plain(expected))
    # symbols without bases share the one empty tuple, whichever way they came
    assert all(s.bases is NO_BASES for s in got.symbols if not s.bases)


@pytest.mark.parametrize("app", APPS)
def test_resolution_over_packed_facts_equals_resolution_over_lists(app: str, tmp_path: Path) -> None:
    root = tmp_path / app
    shutil.copytree(NAV / app, root)
    plain, packed = RepoIndex("t", root), RepoIndex("t", root)
    for entry in WalkRules(str(root), 1 << 20).walk():
        facts = extract(entry.path, (root / entry.path).read_bytes())
        plain.set_file(facts)
        packed.set_file(pack_facts(copy.deepcopy(facts)))
    assert any(isinstance(t.facts.calls, Packed) and t.facts.calls for t in packed.tables.values())
    assert sum(len(t.facts.calls) for t in plain.tables.values()) > 0
    for path in sorted(plain.tables):
        assert packed.resolve_file(path) == plain.resolve_file(path), path


def test_intern_facts_shares_line_numbers_across_files_and_keeps_their_values() -> None:
    """Unpickled facts bring one int object per line number; the engine keeps one per value above 256 (Python
    caches those below), so two files' symbols on the same lines hold the same objects, with the same values."""
    import pickle

    from nexusd.sync.indexer import SHARED_LINES_BELOW

    body = b"\n" * 400 + b"def far():\n    return 1\n"
    a, b = (pickle.loads(pickle.dumps(extract(name, body))) for name in ("a.py", "b.py"))
    fa, fb = a.symbols[-1], b.symbols[-1]
    assert (fa.start_line, fa.end_line) == (401, 402) and fa.start_line is not fb.start_line  # private, as decoded
    intern_facts(a)
    intern_facts(b)
    fa, fb = a.symbols[-1], b.symbols[-1]
    assert (fa.start_line, fa.end_line) == (fb.start_line, fb.end_line) == (401, 402)
    assert fa.start_line is fb.start_line and fa.end_line is fb.end_line
    huge = pickle.loads(pickle.dumps(extract("c.py", b"\n" * (SHARED_LINES_BELOW + 5) + b"def g():\n    pass\n")))
    intern_facts(huge)
    assert huge.symbols[-1].start_line == SHARED_LINES_BELOW + 6  # beyond the map's bound: kept, not shared
