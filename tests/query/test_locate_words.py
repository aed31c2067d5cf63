"""`locate`'s word tiers intersect posting lists by probing the long ones (`locate._all_words`): that needs every
posting list in ascending slot order, in the dict form, over a frozen base with edits on top, frozen again and
loaded from a file; and it must find what reading each list whole finds."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from nexusd.query import locate
from nexusd.query.snapshot import Snapshot
from tests.query.test_snapshot_build import Harness
from tests.query.test_snapshot_compact import EDITS, _built, _edit, _frozen_copy, through_file


def _postings(snap: Snapshot) -> dict[str, dict[str, list[int]]]:
    return {name: {tok: list(getattr(snap, name)[tok]) for tok in getattr(snap, name)}
            for name in ("name_tokens", "text_tokens")}  # fmt: skip


def _check(snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, index in _postings(snap).items():
        for tok, slots in index.items():
            assert slots == sorted(slots), (name, tok)
        tokens = sorted(index, key=lambda t: -len(index[t]))[:12]  # (the longest lists: the ones probed)
        for words in itertools.combinations(tokens, 2):
            probed: list[str] = []
            read: list[str] = []
            for ratio, out in ((0, probed), (10**9, read)):
                monkeypatch.setattr(locate, "PROBE_RATIO", ratio)
                out += [s.id for s in locate._all_words(snap, getattr(snap, name), list(words))]
            assert probed == read, (name, words)


def test_posting_lists_stay_ascending_and_probing_finds_what_reading_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = Harness(tmp_path)
    try:
        plain = _built(h)
        packed = _frozen_copy(plain)
        _check(plain, monkeypatch)
        _check(packed, monkeypatch)
        for edit in EDITS:
            files = _edit(h, edit)
            plain.apply_files(h.version, files)
            packed.apply_files(h.version, files)
            for snap in (plain, packed, _frozen_copy(packed)):
                _check(snap, monkeypatch)
            _check(through_file(packed, tmp_path / "s.snap", h.version), monkeypatch)  # (its slots renumbered)
    finally:
        h.close()
