"""What is let go among frozen objects is collected once it is unreachable, even when that happens after the
collection its drop asked for (`gcpause.dropped` / `gcpause.reclaim`).

A symbol table and its language rules refer to each other, and the query side freezes the heap after a snapshot
load, so a table let go is freed only by the writer's idle `reclaim`. If something still held it for a moment at
that collection (a job finishing with it), it stayed for good: `test_forget_retention.py` failed so, under load.
"""

from __future__ import annotations

import gc
import weakref

import pytest

from nexusd.parse import gcpause


class _Table:
    def __init__(self) -> None:
        self.rules = {"python": self}  # a cycle, as RepoIndex <-> its rules


def test_a_drop_still_referred_to_at_its_collection_is_collected_once_unreachable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gcpause, "_retry", {"at": 0.0, "delay": gcpause.RETRY_S})
    table = _Table()
    gone = weakref.ref(table)
    gc.freeze()
    try:
        gcpause.dropped(table)
        assert gcpause.reclaim() is not None  # the drop asks for one collection: too early, still held
        assert gone() is not None
        del table  # now an unreachable cycle among frozen objects
        assert gone() is not None
        gcpause._retry["at"] = 0.0  # (the back-off has passed)
        assert gcpause.reclaim() is not None  # no new drop, but what was let go is still alive
        assert gone() is None
        assert gcpause.reclaim() is None  # nothing left to watch: no more collections
    finally:
        gc.unfreeze()


def test_what_stays_held_is_given_up_after_the_back_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gcpause, "_retry", {"at": 0.0, "delay": gcpause.RETRY_MAX_S})
    held = _Table()
    gcpause.dropped(held)
    assert gcpause.reclaim() is not None and gcpause._still_alive() == 0  # held on purpose: not watched any more
    assert gcpause.reclaim() is None
