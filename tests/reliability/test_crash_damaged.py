"""Damaged or planted files under the home must never run code in the daemon nor fail a sync (item: facts cache).

The facts cache is JSON arrays decoded field by field (`parse.facts.facts_from_plain`); a pack that does not
decode is moved aside and its files are parsed again."""

from __future__ import annotations

import json
import pickle
import time
from pathlib import Path

import pytest

from nexusd.parse.extract import extract
from nexusd.parse.facts import facts_from_plain, facts_to_plain
from tests.helpers import DaemonProcess, make_repo
from tests.reliability.common import consistency_problems, make_py_repo, module_source


class _Planted:
    """Unpickling this creates the marker file: what any pickle in the cache directory could do."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.marker, "w"))


def test_facts_round_trip_through_the_plain_encoding() -> None:
    facts = extract("pkg/m.py", module_source(3, 1).encode())
    assert facts.symbols and facts.calls and facts.imports
    assert facts_from_plain(facts_to_plain(facts)) == facts


@pytest.mark.parametrize(
    ("field", "row"),
    [(7, [None, 3, None, 1, False, None]),  # a call's name not a string
     (7, [None, "f", None, True, False, None]),  # its line a boolean
     (7, [None, "f", None, 1, 0, None]),  # `new` not a boolean
     (7, [None, "f", ["self"], 1, False, None]),  # a receiver not a string
     (7, [None, "f", None, 1, False]),  # a field short
     (7, "abcdef"),  # a row not an array
     (8, ["var", None, "x", 7]),  # a type fact's expression not a string
     (8, ["var", 1, "x", "?"]),  # its scope not a string
     (5, ["function", "f", "f", "1", 2, "", "", None, [], True, 0, 0, 0]),  # a symbol's line a string
     (5, ["class", "C", "C", 1, 2, "", "", None, [3], True, 0, 0, 0]),  # a base not a string
     (5, ["function", "f", "f", 1, 2, "", "", None, [], 1, 0, 0, 0])],  # `exported` not a boolean
)  # fmt: skip
def test_a_forged_row_in_the_plain_encoding_is_refused(field: int, row: object) -> None:
    plain = json.loads(json.dumps(facts_to_plain(extract("pkg/m.py", module_source(3, 1).encode()))))
    plain[field] = [*plain[field], row]
    with pytest.raises(ValueError, match="not a facts record"):
        facts_from_plain(plain)


@pytest.mark.parametrize("hashes", ["zz", "00" * 15, 3])  # not hex; not 16 bytes a symbol; not a string
def test_forged_symbol_hashes_in_the_plain_encoding_are_refused(hashes: object) -> None:
    plain = json.loads(json.dumps(facts_to_plain(extract("pkg/m.py", module_source(3, 1).encode()))))
    assert len(plain[11]) == 32 * len(plain[5])  # (each symbol's own hash, as hex)
    plain[11] = hashes
    with pytest.raises(ValueError, match="not a facts record"):
        facts_from_plain(plain)


def test_planted_pickle_never_runs_and_a_damaged_pack_costs_a_reparse(tmp_path: Path) -> None:
    root = make_py_repo(tmp_path / "r", 80)  # over FactsCache.PACK_OVER: the cold index writes a pack
    make_repo(root, {})
    marker = tmp_path / "planted-code-ran"
    d = DaemonProcess(env={"NEXUS_NO_WATCH": "1"}).start()
    try:
        with d.client(timeout=120) as c:
            rid = c.request("index", {"repo": str(root)})["id"]
        cache = d.dirs.cache
        deadline = time.monotonic() + 30
        while not list(cache.rglob("pack-*.json")) and time.monotonic() < deadline:
            time.sleep(0.1)
        packs = list(cache.rglob("pack-*.json"))
        assert packs, sorted(p.name for p in cache.rglob("*"))[:10]
        d.stop()
        packs[0].write_bytes(packs[0].read_bytes()[: len(packs[0].read_bytes()) // 2])  # damaged
        for version in ("facts-v1", "facts-v2"):
            (cache / version).mkdir(parents=True, exist_ok=True)
            payload = pickle.dumps({"x": _Planted(str(marker))})
            (cache / version / "pack-0-0.pickle").write_bytes(payload)
            (cache / version / "pack-0-1.json").write_bytes(payload)
        (root / "pkg" / "m0003.py").write_text(module_source(3, 5))
        d.start()
        with d.client(timeout=120) as c:
            res = c.request("sync", {"repo": str(root)})  # the start-up catch-up may have synced it already
            assert res["mode"] in ("incremental", "noop"), res
            assert consistency_problems(c, rid, root) == []
            assert c.request("status", {"repo": str(root)})["repos"][0]["lastBuild"]["outcome"] == "ok"
        assert not marker.exists(), "a pickle planted in the facts cache ran code in the daemon"
        assert list(cache.rglob("*.bad")), "the damaged pack was not moved aside"
    finally:
        d.cleanup()
