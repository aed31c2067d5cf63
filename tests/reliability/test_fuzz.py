"""Protocol fuzzing (fuzz.py): 5,000 frames in the default run, 100,000 under `-m slow`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import DaemonProcess, make_repo
from tests.reliability import fuzz


@pytest.mark.parametrize(
    "frames, rss_bound_mb",
    [pytest.param(5_000, 150, id="5k"), pytest.param(100_000, 600, id="100k", marks=pytest.mark.slow)],
)
def test_fuzzed_frames_get_documented_replies(daemon: DaemonProcess, tmp_path: Path, frames: int, rss_bound_mb: int) -> None:
    repo = make_repo(tmp_path / "repo", {"pkg/mod.py": "def main():\n    return helper()\n\n\ndef helper():\n    return 1\n"}, commit=False)
    with daemon.client() as c:
        c.request("index", {"repo": str(repo)}, timeout=120)
        catalogue = c.catalogue
    result = fuzz.run(daemon.dirs.endpoint, daemon.pid, frames, repo=str(repo), catalogue=catalogue)
    assert daemon.proc is not None and daemon.proc.poll() is None, "the daemon died"
    assert result["alive_after"]
    assert result["mismatches"] == []
    assert result["replies"].get("internal", 0) == 0, "a handler crashed on input that passed validation"
    assert result["rss_growth_after_warmup_mb"] < rss_bound_mb, result["rss"]
