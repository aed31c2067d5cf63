"""Concurrent clients mixing queries and memory writes while another repository syncs (load.py).
8 clients x 5 s in the default run; 50 clients x 60 s under `-m slow` (bench/load.py writes the figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import DaemonProcess
from tests.reliability import load


@pytest.mark.parametrize(
    "clients, seconds",
    [pytest.param(8, 5.0, id="8x5s"), pytest.param(50, 60.0, id="50x60s", marks=pytest.mark.slow)],
)
def test_load_loses_no_write(daemon: DaemonProcess, tmp_path: Path, clients: int, seconds: float) -> None:
    result = load.run(daemon, tmp_path, clients, seconds)
    assert result["alive_after"]
    assert result["acknowledged_writes"] > 0
    assert result["lost_writes"] == 0
    assert result["errors"] == 0, result["errors_by_kind"]
    assert result["background_syncs"] >= 1
