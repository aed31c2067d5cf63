"""The facts cache's packs: written entry by entry, one line each, and read back an entry at a time.

A cold index writes every file's facts into one pack; a restarted daemon reads them back to rebuild its symbol
table. Neither side may hold every file's facts as nested arrays at once (ARCHITECTURE.md, "Memory of the code
graph"), so an entry is one line, indexed by offset and parsed when asked for. A pack written before entries had
a line each (one line, one JSON object) still reads; a pack that is not whole is moved aside, its files parsed
again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from nexusd.parse.extract import extract
from nexusd.parse.facts import FileFacts, facts_to_plain
from nexusd.sync.indexer import FactsCache, intern_facts
from tests.helpers import DaemonProcess, make_repo


def _facts(n: int) -> list[FileFacts]:
    out = []
    for i in range(n):
        source = f'"""Module {i}."""\nimport os\n\n\ndef f{i}(x: int) -> int:\n    """Doc {i}."""\n    return g{i}(os.sep, x)\n'
        out.append(extract(f"pkg/m{i}.py", source.encode()))
    return out


def test_a_pack_reads_back_every_entry_one_line_each(tmp_path: Path) -> None:
    items = _facts(70)
    cache = FactsCache(tmp_path)
    cache._write_pack(items)
    (pack,) = cache.root.glob("pack-*.json")
    lines = pack.read_bytes().splitlines()
    assert lines[0] == b"{" and lines[-1] == b"}" and len(lines) == len(items) + 2
    assert json.loads(pack.read_bytes()) == {f.hash: json.loads(json.dumps(facts_to_plain(f))) for f in items}
    reader = FactsCache(tmp_path)
    for f in items:
        got = reader.get(f.hash, f.path)
        assert got is not None and intern_facts(got) == f
    assert reader.get(items[0].hash, "elsewhere.py") is None  # same content under another path: re-extract
    reader.release()
    assert not reader.discarded


def test_a_pack_of_one_line_still_reads(tmp_path: Path) -> None:
    items = _facts(3)
    cache = FactsCache(tmp_path)
    cache.root.mkdir(parents=True)
    plain = {f.hash: facts_to_plain(f) for f in items}
    (cache.root / "pack-1-1.json").write_text(json.dumps(plain, separators=(",", ":")))
    for f in items:
        assert cache.get(f.hash, f.path) == f


def test_a_pack_cut_short_is_moved_aside(tmp_path: Path) -> None:
    items = _facts(70)
    cache = FactsCache(tmp_path)
    cache._write_pack(items)
    (pack,) = cache.root.glob("pack-*.json")
    data = pack.read_bytes()
    pack.write_bytes(data[: len(data) * 2 // 3])
    reader = FactsCache(tmp_path)
    assert reader.get(items[0].hash, items[0].path) is None
    assert reader.discarded == [pack.name] and pack.with_suffix(".bad").exists()


def test_flush_waits_for_a_pack_still_being_written(tmp_path: Path) -> None:
    items = _facts(400)
    cache = FactsCache(tmp_path)
    cache.put_many(items)  # written by a thread of its own, off the sync's path
    assert FactsCache.flush_packs(60.0)
    (pack,) = cache.root.glob("pack-*.json")
    assert not list(cache.root.glob("pack-*.tmp"))
    assert len(pack.read_bytes().splitlines()) == len(items) + 2
    assert FactsCache.flush_packs(0.0)  # nothing left to wait for


def test_a_pack_another_process_was_cut_off_writing_is_deleted(tmp_path: Path) -> None:
    items = _facts(70)
    cache = FactsCache(tmp_path)
    cache._write_pack(items)
    theirs = cache.root / "pack-1-999999999.tmp"
    ours = cache.root / f"pack-2-{os.getpid()}.tmp"  # this process may be writing it now
    theirs.write_text('{\n"abc":[')
    ours.write_text('{\n"abc":[')
    assert FactsCache(tmp_path).get(items[0].hash, items[0].path) == items[0]
    assert not theirs.exists() and ours.exists()


def test_a_stop_right_after_an_index_leaves_the_whole_pack(daemon: DaemonProcess, tmp_path: Path) -> None:
    # Before, the pack's thread died with the process: a stop soon after a cold index left a `.tmp` and the
    # restarted daemon parsed every file again (the standard library's first edit then took 52 s, not 2 s).
    files = {f"pkg/m{i}.py": f"import os\n\n\ndef f{i}(x):\n    return os.path.join(x, '{i}' * 40)\n" for i in range(300)}
    repo = make_repo(tmp_path / "repo", files)
    with daemon.client() as c:
        c.request("debug.slow_next_pack", {})  # as long to write as the standard library's
        c.request("index", {"repo": str(repo)}, timeout=120)
        c.request("shutdown", {})
    assert daemon.proc is not None
    daemon.proc.wait(60)
    root = daemon.dirs.cache
    packs = list(root.rglob("pack-*.json"))
    assert not list(root.rglob("pack-*.tmp"))
    assert len(packs) == 1
    assert len(packs[0].read_bytes().splitlines()) == len(files) + 2
