"""`gcpause.Windows`: a stage of many units freezes what survived it, so the first full collection after it does
not walk a heap that only grew (on the Linux kernel's cold index, 1.7-6.8 s holding the interpreter after each
stage, every query waiting); a short stage, an edit's, leaves the collector as it was."""

from __future__ import annotations

import gc

from nexusd.parse import gcpause


def _stage(units: int) -> list[list[int]]:
    kept = []
    with gcpause.Windows() as window:
        for i in range(units):
            kept.append([i])
            window.tick()
    return kept


def test_a_long_stage_freezes_its_survivors_and_a_short_one_does_not() -> None:
    was_enabled = gc.isenabled()
    gc.enable()
    gc.unfreeze()
    try:
        short = _stage(10)
        assert gc.get_freeze_count() == 0
        assert gc.is_tracked(short[0])
        long = _stage(gcpause.FREEZE_AFTER_UNITS)
        assert gc.get_freeze_count() >= len(long)
        assert gc.isenabled()
        collected = {id(o) for g in range(3) for o in gc.get_objects(g)}  # (not the frozen ones)
        assert id(long[-1]) not in collected and id(short[-1]) not in collected  # (what lived before goes too)
        fresh = [0]
        assert id(fresh) in {id(o) for o in gc.get_objects(0)}
    finally:
        gc.unfreeze()
        if not was_enabled:
            gc.disable()
