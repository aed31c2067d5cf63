"""kill -9 at random moments of a cold index, an incremental sync and a burst of memory writes (trials.py).
The default run does 3 trials of each kind; `-m slow` does 20 (bench/crash_trials.py writes the figures)."""

from __future__ import annotations

import random

import pytest

from tests.reliability import trials


def _check(results: list[trials.Trial]) -> None:
    failed = [t for t in results if not t.ok]
    assert not failed, trials.summary(results)["failures"]


@pytest.mark.parametrize("count", [pytest.param(3, id="3"), pytest.param(20, id="20", marks=pytest.mark.slow)])
def test_kill9_during_cold_index(count: int) -> None:
    rng = random.Random(101 + count)
    _check([trials.cold_trial(n, rng, files=200, window_s=1.5) for n in range(count)])


@pytest.mark.parametrize("count", [pytest.param(3, id="3"), pytest.param(20, id="20", marks=pytest.mark.slow)])
def test_kill9_during_incremental_sync(count: int) -> None:
    rng = random.Random(202 + count)
    rig = trials.IncrementalRig(files=300)
    try:
        _check([rig.trial(n, rng) for n in range(count)])
    finally:
        rig.close()


@pytest.mark.parametrize("count", [pytest.param(3, id="3"), pytest.param(20, id="20", marks=pytest.mark.slow)])
def test_kill9_during_memory_writes_loses_no_acknowledged_write(count: int) -> None:
    rng = random.Random(303 + count)
    rig = trials.MemoryRig()
    try:
        results = [rig.trial(n, rng) for n in range(count)]
        _check(results)
        assert sum(t.acked_writes for t in results) > 0, "the bursts acknowledged nothing: the trial tested nothing"
    finally:
        rig.close()
